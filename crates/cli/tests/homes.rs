//! Homes: another machine's Nightshift, looked at and controlled from this one. Two homes on one
//! machine — "box", a second `NIGHTSHIFT_HOME` whose real `nightshiftctl serve` schedules it on
//! loopback, and "laptop", which adds it with `homes add` (its token through stdin into the real
//! keychain) — reached straight on loopback and through the real `sshd` the host tests use
//! (`ssh -W` to the box's loopback). Finish notifications of the box's runs reach the laptop's
//! real D-Bus notification server exactly once, also across a restart of the laptop's daemon.

mod common;

use common::{ctl, ctl_bus, files_containing, json, keychain_available, serve, start_daemon_with, stderr, stdout, ArgvWatch, Served};
use nightshift_testkit::dbus::NotificationBus;
use nightshift_testkit::tls_proxy::{self, TlsProxy};
use nightshift_testkit::{SshServer, TestHome};
use std::io::Write;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// A box home with routines to run, served on loopback.
fn a_box() -> (TestHome, Served) {
    let th = TestHome::new();
    th.routine("nightly", "schedule: \"0 3 * * *\"\nnotify: always\ncommand: echo hello from the box\n");
    th.routine("long", "schedule: \"0 3 * * *\"\ncommand: sleep 60\n");
    std::fs::write(th.path().join("nightshift.toml"), "kill_grace_secs = 1\ndevice_name = \"the-box\"\n[[accounts]]\nemail = \"box@home.dev\"\n").unwrap();
    let served = serve(&th, "127.0.0.1:0", &[]);
    (th, served)
}

/// A laptop home with its own keychain service (and `extra` settings).
fn a_laptop(extra: &str) -> TestHome {
    let th = TestHome::new();
    let service = format!("nightshift-test-{}", th.path().file_name().unwrap().to_string_lossy());
    std::fs::write(th.path().join("nightshift.toml"), format!("keychain_service = \"{service}\"\nkill_grace_secs = 1\n{extra}")).unwrap();
    th
}

/// `homes add NAME URL` with the token on stdin, as a person pastes it.
fn add_home(laptop: &TestHome, name: &str, url: &str, token: &str, replace: bool) -> Output {
    let mut c = ctl_bus(laptop);
    c.args(["homes", "add", name, url]);
    if replace {
        c.arg("--replace");
    }
    let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(format!("{token}\n").as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// The laptop's `daemon --notify`: its notifications and keychain on the test's session bus.
fn start_viewer(laptop: &TestHome) -> common::Daemon {
    let env = common::bus_env();
    let daemon = start_daemon_with(laptop, &["--notify"], &env.iter().map(|(k, v)| (*k, v.as_str())).collect::<Vec<_>>());
    daemon.wait_scheduling();
    daemon
}

/// Wait until the laptop's viewer has reached `home` once (its place there is set).
fn connected(laptop: &TestHome, home: &str) {
    let start = Instant::now();
    let placed = || {
        let db = rusqlite::Connection::open(laptop.path().join("nightshift.db")).ok()?;
        db.query_row("SELECT told_from FROM home_views WHERE home = ?1", [home], |r| r.get::<_, Option<String>>(0)).ok().flatten()
    };
    while placed().is_none() {
        assert!(start.elapsed() < Duration::from_secs(20), "the viewer never reached {home}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn on(laptop: &TestHome, home: &str, args: &[&str]) -> Output {
    ctl_bus(laptop).args(args).args(["--home", home]).output().unwrap()
}

#[test]
fn another_home_answers_the_cli_and_a_read_only_token_only_looks() {
    if !keychain_available() {
        return;
    }
    let (boxed, served) = a_box();
    let laptop = a_laptop("");
    let url = format!("http://127.0.0.1:{}", served.port);

    // Nothing in argv ever carries the token (`ps` shows every user's argv).
    let watch = ArgvWatch::start(&served.token);
    let added = add_home(&laptop, "box", &url, &served.token, false);
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(stdout(&added).contains("added box (http://127.0.0.1:") && stdout(&added).contains("reachable, the-box there"), "{}", stdout(&added));
    assert!(std::fs::read_to_string(laptop.path().join("nightshift.toml")).unwrap().contains("[[homes]]\nname = \"box\"\nurl = \"http://127.0.0.1:"));

    // What it schedules, and that it answers.
    let listed = json(&ctl_bus(&laptop).args(["homes", "list", "--json"]).output().unwrap());
    assert_eq!(listed[0]["name"], "box");
    assert_eq!(listed[0]["reachable"], true, "{listed:#}");
    assert_eq!(listed[0]["device"], "the-box");
    assert_eq!(listed[0]["scheduling"], true, "the box's serve schedules it");
    let routines: Vec<&str> = listed[0]["routines"].as_array().unwrap().iter().filter_map(|r| r.as_str()).collect();
    assert!(routines.contains(&"nightly") && routines.contains(&"long"), "{listed:#}");

    // Run there and wait: the box's engine runs it; the output says which home answered.
    let ran = on(&laptop, "box", &["run", "nightly", "--wait", "--json"]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    assert!(stderr(&ran).starts_with("(home box)"), "{}", stderr(&ran));
    let run = json(&ran);
    assert_eq!(run["status"], "completed");
    let id = run["id"].as_str().unwrap().to_string();
    // It is the box's run: its own CLI lists it; the laptop has none.
    let there = json(&ctl(&boxed).args(["runs", "--json"]).output().unwrap());
    assert!(there.as_array().unwrap().iter().any(|r| r["id"] == id.as_str()), "{there:#}");
    assert_eq!(json(&ctl(&laptop).args(["runs", "--json"]).output().unwrap()).as_array().unwrap().len(), 0);

    // History, one run and its log, from the laptop.
    let runs = on(&laptop, "box", &["runs"]);
    assert!(stdout(&runs).contains(&id) && stdout(&runs).contains("nightly"), "{}", stdout(&runs));
    let shown = on(&laptop, "box", &["show", &id[..10]]);
    assert!(stdout(&shown).contains("✓ nightly · completed") && stdout(&shown).contains(&format!("id           {id}")), "{}\n{}", stdout(&shown), stderr(&shown));
    let logs = on(&laptop, "box", &["logs", &id]);
    assert_eq!(stdout(&logs), "hello from the box\n", "{}", stderr(&logs));
    let listed = on(&laptop, "box", &["routines", "list"]);
    assert!(stdout(&listed).contains("nightly") && stdout(&listed).contains("long"), "{}", stdout(&listed));

    // Pause there (its own CLI sees it), resume.
    assert!(on(&laptop, "box", &["pause", "nightly"]).status.success());
    let theirs = json(&ctl(&boxed).args(["routines", "list", "--json"]).output().unwrap());
    let nightly = theirs.as_array().unwrap().iter().find(|r| r["name"] == "nightly").unwrap().clone();
    assert_eq!(nightly["paused"], true, "{nightly:#}");
    assert!(on(&laptop, "box", &["resume", "nightly"]).status.success());

    // Start one there, follow it, cancel it.
    let started = on(&laptop, "box", &["run", "long"]);
    assert!(started.status.success(), "{}", stderr(&started));
    let long_id = stdout(&started).trim().to_string();
    let cancelled = on(&laptop, "box", &["cancel", &long_id]);
    assert!(cancelled.status.success(), "{}", stderr(&cancelled));
    let start = Instant::now();
    while json(&on(&laptop, "box", &["show", &long_id, "--json"]))["status"] != "cancelled" {
        assert!(start.elapsed() < Duration::from_secs(20), "the run there was not cancelled");
        std::thread::sleep(Duration::from_millis(200));
    }

    // Its report and `why`, as the box's own CLI says them.
    let report = on(&laptop, "box", &["report", &id]);
    assert_eq!(stdout(&report), stdout(&ctl(&boxed).args(["report", &id]).output().unwrap()), "{}", stderr(&report));
    let why = json(&on(&laptop, "box", &["why", "nightly", "--json"]));
    let why_there = json(&ctl(&boxed).args(["why", "nightly", "--json"]).output().unwrap());
    assert_eq!((why["routine"].clone(), why["lines"].clone()), (why_there["routine"].clone(), why_there["lines"].clone()));
    // Its accounts, read there (the box's, not the laptop's).
    let accounts = json(&on(&laptop, "box", &["accounts", "list", "--json"]));
    assert_eq!(accounts[0]["account"], "box@home.dev", "{accounts:#}");

    // Routines written there: made, checked by the box's own settings, edited, removed.
    let made = on(&laptop, "box", &["routines", "new", "tidy", "--command", "echo tidy", "--schedule", "0 4 * * *"]);
    assert!(made.status.success(), "{}", stderr(&made));
    assert!(boxed.path().join("routines/tidy.yaml").is_file(), "written on the box");
    assert!(!laptop.path().join("routines/tidy.yaml").exists());
    let draft = laptop.path().join("draft.yaml");
    std::fs::write(&draft, "schedule: \"0 4 * * *\"\nagent: claude\nprompt: hi\nwebhooks: [nope]\n").unwrap();
    let checked = on(&laptop, "box", &["routines", "validate", draft.to_str().unwrap()]);
    assert_eq!(checked.status.code(), Some(2), "{}", stderr(&checked));
    assert!(stderr(&checked).contains(&format!("error: {}:4:12: no webhook named \"nope\"", draft.display())), "{}", stderr(&checked));
    let edited = ctl_bus(&laptop).args(["routines", "edit", "tidy", "--home", "box"]).env("EDITOR", "sed -i '/^command/s/tidy/tidier/'").output().unwrap();
    assert!(edited.status.success(), "{}", stderr(&edited));
    assert!(std::fs::read_to_string(boxed.path().join("routines/tidy.yaml")).unwrap().contains("echo tidier"));
    assert!(on(&laptop, "box", &["routines", "remove", "tidy"]).status.success());
    assert!(!boxed.path().join("routines/tidy.yaml").exists());

    // Its usage, as its own CLI sums it.
    let usage = on(&laptop, "box", &["usage", "--json"]);
    assert_eq!(json(&usage), json(&ctl(&boxed).args(["usage", "--json"]).output().unwrap()), "{}", stderr(&usage));
    // A command of this machine only says so.
    let prune = on(&laptop, "box", &["prune"]);
    assert_eq!(prune.status.code(), Some(2));
    assert!(stderr(&prune).contains("--home box: this command works on this machine only"), "{}", stderr(&prune));

    // The read-only token: looks, never changes.
    let read_only = std::fs::read_to_string(boxed.path().join("serve-token-read-only")).unwrap();
    let added = add_home(&laptop, "box-ro", &url, read_only.trim(), false);
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(on(&laptop, "box-ro", &["runs"]).status.success());
    let refused = on(&laptop, "box-ro", &["run", "nightly"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("this token is read-only: \"run_now\" would change the home"), "{}", stderr(&refused));

    // The token is in no file of the laptop's home (it is in the keychain) and was in no argv.
    assert!(!watch.seen(), "the token appeared in a process's argv");
    assert_eq!(files_containing(laptop.path(), &served.token), Vec::<String>::new());

    // The box's serve restarts: its token stays, the laptop still reaches it.
    drop(served);
    let again = serve(&boxed, &format!("127.0.0.1:{}", url.rsplit(':').next().unwrap()), &[]);
    let runs = on(&laptop, "box", &["runs", "--json"]);
    assert!(runs.status.success(), "{}", stderr(&runs));
    drop(again);

    // Stopped: one clear error, no hang.
    let gone = on(&laptop, "box", &["runs"]);
    assert_eq!(gone.status.code(), Some(2));
    assert!(stderr(&gone).contains("home \"box\" cannot be reached: nothing answers on 127.0.0.1:"), "{}", stderr(&gone));
    let listed = json(&ctl_bus(&laptop).args(["homes", "list", "--json"]).output().unwrap());
    assert_eq!(listed[0]["reachable"], false);
    assert!(listed[0]["last_seen"].is_string(), "it was seen before: {listed:#}");

    // Removed: its entry and token go.
    assert!(ctl_bus(&laptop).args(["homes", "remove", "box"]).output().unwrap().status.success());
    let unknown = on(&laptop, "box", &["runs"]);
    assert!(stderr(&unknown).contains("no home named \"box\" (listed: box-ro)"), "{}", stderr(&unknown));
}

#[test]
fn a_server_started_read_only_refuses_every_change() {
    if !keychain_available() {
        return;
    }
    let boxed = TestHome::new();
    boxed.routine("nightly", "schedule: \"0 3 * * *\"\ncommand: echo hi\n");
    let served = serve(&boxed, "127.0.0.1:0", &["--read-only"]);
    let laptop = a_laptop("");
    assert!(add_home(&laptop, "box", &format!("http://127.0.0.1:{}", served.port), &served.token, false).status.success());
    assert!(on(&laptop, "box", &["routines", "list"]).status.success());
    let refused = on(&laptop, "box", &["pause"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("this server is read-only (serve --read-only): \"set_paused\" would change the home"), "{}", stderr(&refused));
}

#[test]
fn a_home_through_ssh_answers_and_a_stopped_sshd_is_one_clear_error() {
    if !keychain_available() {
        return;
    }
    let Some(mut sshd) = SshServer::start() else { return };
    let (_boxed, served) = a_box();
    let laptop = a_laptop(&format!("ssh_config = \"{}\"\n", sshd.ssh_config().display()));
    let url = format!("ssh://{}/{}", SshServer::ALIAS, served.port);
    let added = add_home(&laptop, "box", &url, &served.token, false);
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(stdout(&added).contains("reachable, the-box there"), "{}\n{}", stdout(&added), stderr(&added));

    let ran = on(&laptop, "box", &["run", "nightly", "--wait", "--json"]);
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let id = json(&ran)["id"].as_str().unwrap().to_string();
    let logs = on(&laptop, "box", &["logs", &id]);
    assert_eq!(stdout(&logs), "hello from the box\n", "{}", stderr(&logs));

    // The ssh client ran with -W and no token in its argv; the token is in no laptop file.
    assert_eq!(files_containing(laptop.path(), &served.token), Vec::<String>::new());

    // With sshd's listener gone, the shared connection still carries calls (the first one
    // opened it; later ones ride on it); once it is cut too, the home is one clear error.
    sshd.stop();
    assert!(on(&laptop, "box", &["runs"]).status.success(), "the shared connection carries the call");
    let cut = std::process::Command::new("ssh")
        .arg("-F")
        .arg(sshd.ssh_config())
        .arg("-o")
        .arg(format!("ControlPath={}/ssh/%C", laptop.path().display()))
        .args(["-O", "exit", SshServer::ALIAS])
        .output()
        .unwrap();
    assert!(cut.status.success(), "no shared connection to cut: {}", stderr(&cut));
    let started = Instant::now();
    let gone = on(&laptop, "box", &["runs"]);
    assert!(started.elapsed() < Duration::from_secs(20), "an unreachable home must not hang the CLI");
    assert_eq!(gone.status.code(), Some(2));
    assert!(stderr(&gone).contains("home \"box\" cannot be reached"), "{}", stderr(&gone));
    sshd.resume();
    assert!(on(&laptop, "box", &["runs"]).status.success());
}

#[test]
fn the_boxs_finishes_are_told_on_the_laptop_once_also_across_a_restart_and_a_storm_is_one() {
    if !keychain_available() {
        return;
    }
    let (boxed, served) = a_box();
    let laptop = a_laptop("");
    assert!(add_home(&laptop, "box", &format!("http://127.0.0.1:{}", served.port), &served.token, false).status.success());
    let address = std::env::var("DBUS_SESSION_BUS_ADDRESS").unwrap();
    let bus = NotificationBus::join(&address, laptop.path(), "record");
    let from_box = |bus: &NotificationBus, n: usize| -> Vec<serde_json::Value> {
        let start = Instant::now();
        loop {
            let got: Vec<serde_json::Value> = bus.notifications().into_iter().filter(|v| v["summary"].as_str().is_some_and(|s| s.starts_with("box · "))).collect();
            if got.len() >= n || start.elapsed() > Duration::from_secs(20) {
                return got;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };

    // A run that ended before the laptop first looked is history, not news (also within the few
    // minutes a later catch-up reaches back over for clocks that differ).
    assert!(on(&laptop, "box", &["run", "nightly", "--wait"]).status.success());
    let viewer = start_viewer(&laptop);
    // Its first connection sets its place in the box's history.
    connected(&laptop, "box");
    assert!(on(&laptop, "box", &["run", "nightly", "--wait"]).status.success());
    let told = from_box(&bus, 1);
    assert_eq!(told.len(), 1, "{told:#?}");
    assert!(told[0]["summary"].as_str().unwrap().starts_with("box · ✓ nightly · "), "{told:#?}");
    assert_eq!(told[0]["body"], "hello from the box");

    // A run another process settles there (the box's own CLI, as its daemon would): its serve
    // hears of it through the home's wake file, and the viewer reads what ended.
    assert!(ctl(&boxed).args(["run", "nightly", "--wait"]).output().unwrap().status.success());
    let told = from_box(&bus, 2);
    assert_eq!(told.len(), 2, "a run settled by another process there is told too: {told:#?}");

    // The viewer is stopped while a run ends there; started again, it tells that run once.
    viewer.kill9();
    assert!(on(&laptop, "box", &["run", "nightly", "--wait"]).status.success());
    let viewer = start_viewer(&laptop);
    let told = from_box(&bus, 3);
    assert_eq!(told.len(), 3, "{told:#?}");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(from_box(&bus, 4).len(), 3, "told twice");

    // A night of runs while it was away: one summary.
    viewer.kill9();
    for _ in 0..5 {
        assert!(on(&laptop, "box", &["run", "nightly", "--wait"]).status.success());
    }
    let viewer = start_viewer(&laptop);
    let told = from_box(&bus, 4);
    assert_eq!(told.len(), 4, "{told:#?}");
    assert_eq!(told[3]["summary"], "box · Nightshift · 5 runs finished while you were away", "{told:#?}");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(from_box(&bus, 5).len(), 4, "told twice");
    drop(viewer);
}

#[test]
fn a_routine_moves_to_the_box_and_a_move_that_cannot_reach_it_leaves_it_here() {
    if !keychain_available() {
        return;
    }
    let (boxed, served) = a_box();
    let laptop = a_laptop("");
    laptop.routine("backup", "schedule: \"30 2 * * *\"\ncommand: echo backing up\n");
    assert!(ctl(&laptop).args(["run", "backup", "--wait"]).output().unwrap().status.success());
    // A home that is down: nothing is written anywhere, the routine stays enabled here.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    assert!(add_home(&laptop, "asleep", &format!("http://127.0.0.1:{dead}"), &served.token, false).status.success());
    let failed = ctl_bus(&laptop).args(["routines", "move", "backup", "--to", "asleep"]).output().unwrap();
    assert_eq!(failed.status.code(), Some(2));
    assert!(stderr(&failed).contains("backup was not moved: \"asleep\" did not take it — it stays enabled here, on this machine only."), "{}", stderr(&failed));
    assert!(laptop.path().join("routines/backup.yaml").is_file());

    // To the box: written there, then retired here with a note; the history stays here.
    assert!(add_home(&laptop, "box", &format!("http://127.0.0.1:{}", served.port), &served.token, false).status.success());
    let moved = ctl_bus(&laptop).args(["routines", "move", "backup", "--to", "box"]).output().unwrap();
    assert!(moved.status.success(), "{}", stderr(&moved));
    assert!(stdout(&moved).contains("✓ moved backup to box"), "{}", stdout(&moved));
    assert_eq!(std::fs::read_to_string(boxed.path().join("routines/backup.yaml")).unwrap(), "schedule: \"30 2 * * *\"\ncommand: echo backing up\n");
    assert!(!laptop.path().join("routines/backup.yaml").exists());
    let trashed: Vec<_> = std::fs::read_dir(laptop.path().join("routines/.trash")).unwrap().flatten().collect();
    assert_eq!(trashed.len(), 1);
    assert!(std::fs::read_to_string(trashed[0].path()).unwrap().starts_with("# Moved to home \"box\" at "));
    let here = json(&ctl(&laptop).args(["runs", "--json"]).output().unwrap());
    assert_eq!(here[0]["routine"], "backup", "its history stays where it was made");
    let there = json(&ctl(&boxed).args(["routines", "list", "--json"]).output().unwrap());
    assert!(there.as_array().unwrap().iter().any(|r| r["name"] == "backup" && r["valid"] == true), "{there:#}");

    // Moving it again: the box has one of that name — refused, nothing changes.
    laptop.routine("backup", "schedule: \"30 2 * * *\"\ncommand: echo again\n");
    let twice = ctl_bus(&laptop).args(["routines", "move", "backup", "--to", "box"]).output().unwrap();
    assert_eq!(twice.status.code(), Some(2));
    assert!(stderr(&twice).contains("it stays enabled here") && stderr(&twice).contains("already exists"), "{}", stderr(&twice));
    assert!(laptop.path().join("routines/backup.yaml").is_file());
}

/// A box behind a real TLS proxy (nginx on `port`, with `cert`), its `serve` told the proxy's
/// public address.
fn a_box_behind_tls(port: u16, cert: &nightshift_testkit::tls_proxy::Cert) -> (TestHome, Served, TlsProxy) {
    let th = TestHome::new();
    th.routine("nightly", "schedule: \"0 3 * * *\"\ncommand: echo hello over tls\n");
    std::fs::write(th.path().join("nightshift.toml"), "kill_grace_secs = 1\ndevice_name = \"the-box\"\n").unwrap();
    let served = serve(&th, "127.0.0.1:0", &["--public-url", &format!("https://localhost:{port}")]);
    let proxy = TlsProxy::start(port, cert, served.port);
    (th, served, proxy)
}

#[test]
fn an_https_home_with_its_own_certificate_is_pinned_on_first_use_and_a_changed_one_is_refused() {
    if !keychain_available() {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    let (first, second) = (tls_proxy::self_signed(certs.path(), "first"), tls_proxy::self_signed(certs.path(), "second"));
    let port = tls_proxy::free_port();
    let (boxed, served, proxy) = a_box_behind_tls(port, &first);
    let laptop = a_laptop("");
    let url = format!("https://localhost:{port}");

    // Added: no authority vouches for it, so its certificate is pinned, its fingerprint shown —
    // the one OpenSSL prints for the file on the box.
    let added = add_home(&laptop, "box", &url, &served.token, false);
    assert!(added.status.success(), "{}\n{}", stderr(&added), proxy.log());
    let said = stdout(&added);
    assert!(said.contains(&format!("pinned the certificate of {url} on first use — no authority this machine trusts vouches for it (it is signed by itself)")), "{said}");
    assert!(said.contains(&format!("SHA-256 {}", first.fingerprint())), "{said}");
    assert!(said.contains("reachable, the-box there"), "{said}");
    let settings = std::fs::read_to_string(laptop.path().join("nightshift.toml")).unwrap();
    assert!(settings.contains(&format!("pin = \"sha256:{}\"", first.fingerprint().replace(':', "").to_lowercase())), "{settings}");

    // Through the proxy, as on loopback: a run there, its history and log.
    let ran = on(&laptop, "box", &["run", "nightly", "--wait", "--json"]);
    assert_eq!(ran.status.code(), Some(0), "{}\n{}", stderr(&ran), proxy.log());
    let id = json(&ran)["id"].as_str().unwrap().to_string();
    assert_eq!(stdout(&on(&laptop, "box", &["logs", &id])), "hello over tls\n");
    assert!(stdout(&on(&laptop, "box", &["runs"])).contains(&id));
    assert_eq!(files_containing(laptop.path(), &served.token), Vec::<String>::new());

    // The proxy now shows another certificate: refused before the token is sent, saying both
    // fingerprints and what to do.
    drop(proxy);
    let _proxy = TlsProxy::start(port, &second, served.port);
    let refused = on(&laptop, "box", &["runs"]);
    assert_eq!(refused.status.code(), Some(2));
    let why = stderr(&refused);
    assert!(why.contains("home \"box\" cannot be reached: the certificate of localhost is not the one pinned"), "{why}");
    assert!(why.contains(&first.fingerprint()) && why.contains(&second.fingerprint()) && why.contains("--replace"), "{why}");
    // Pinned again on purpose, it answers.
    let again = add_home(&laptop, "box", &url, &served.token, true);
    assert!(stdout(&again).contains(&format!("SHA-256 {}", second.fingerprint())), "{}", stdout(&again));
    assert!(on(&laptop, "box", &["runs"]).status.success());
    drop(boxed);
}

#[test]
fn an_https_home_an_authority_vouches_for_is_verified_not_pinned() {
    if !keychain_available() {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    let (authority, cert) = tls_proxy::authority_signed(certs.path(), "box");
    let port = tls_proxy::free_port();
    let (_boxed, served, proxy) = a_box_behind_tls(port, &cert);
    let laptop = a_laptop("");
    let url = format!("https://localhost:{port}");
    // The authority is one this machine trusts (as OpenSSL reads it: `SSL_CERT_FILE`).
    let trusting = |args: &[&str]| ctl_bus(&laptop).args(args).env("SSL_CERT_FILE", &authority).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut adding = trusting(&["homes", "add", "box", &url]);
    adding.stdin.take().unwrap().write_all(format!("{}\n", served.token).as_bytes()).unwrap();
    let added = adding.wait_with_output().unwrap();
    assert!(added.status.success(), "{}\n{}", stderr(&added), proxy.log());
    assert!(!stdout(&added).contains("pinned") && stdout(&added).contains("reachable, the-box there"), "{}", stdout(&added));
    assert!(!std::fs::read_to_string(laptop.path().join("nightshift.toml")).unwrap().contains("pin ="));
    let runs = trusting(&["runs", "--home", "box"]).wait_with_output().unwrap();
    assert!(runs.status.success(), "{}", stderr(&runs));

    // Without that authority, the same certificate is not trusted: one clear error, its
    // fingerprint and the way to pin it.
    let untrusted = on(&laptop, "box", &["runs"]);
    assert_eq!(untrusted.status.code(), Some(2));
    let why = stderr(&untrusted);
    assert!(why.contains("the certificate of localhost is not one this machine trusts (no authority this machine trusts signed it)") && why.contains(&cert.fingerprint()) && why.contains("pins it"), "{why}");
}

#[test]
fn a_daemon_with_serve_listen_is_a_home_as_serve_is() {
    if !keychain_available() {
        return;
    }
    let boxed = TestHome::new();
    boxed.routine("nightly", "schedule: \"0 3 * * *\"\ncommand: echo served by the daemon\n");
    let port = tls_proxy::free_port();
    std::fs::write(boxed.path().join("nightshift.toml"), format!("device_name = \"the-box\"\n[serve]\nlisten = \"127.0.0.1:{port}\"\n")).unwrap();
    let daemon = start_daemon_with(&boxed, &[], &[]);
    daemon.wait_scheduling();
    let token = std::fs::read_to_string(boxed.path().join("serve-token")).unwrap();
    let laptop = a_laptop("");
    let added = add_home(&laptop, "box", &format!("http://127.0.0.1:{port}"), token.trim(), false);
    assert!(added.status.success(), "{}\n{}", stderr(&added), daemon.output());
    let listed = json(&ctl_bus(&laptop).args(["homes", "list", "--json"]).output().unwrap());
    assert_eq!((listed[0]["reachable"].clone(), listed[0]["scheduling"].clone()), (serde_json::json!(true), serde_json::json!(true)), "{listed:#}");
    let ran = on(&laptop, "box", &["run", "nightly", "--wait", "--json"]);
    assert_eq!(json(&ran)["status"], "completed", "{}", stderr(&ran));
    let id = json(&ran)["id"].as_str().unwrap().to_string();
    assert_eq!(stdout(&on(&laptop, "box", &["logs", &id])), "served by the daemon\n");
    common::stop(daemon);

    // Beyond loopback it is refused where it is written, with the way to do it.
    std::fs::write(boxed.path().join("nightshift.toml"), "[serve]\nlisten = \"0.0.0.0:7878\"\n").unwrap();
    let refused = ctl(&boxed).args(["routines", "list"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("nightshift.toml:2:11: `[serve] listen = \"0.0.0.0:7878\"` is not a loopback address"), "{}", stderr(&refused));
}
