//! Another home, as a user meets it: a box home served by the real `nightshiftctl serve` on
//! loopback, reached from a laptop home as `ssh://box/PORT` through a real `sshd` (started here,
//! as the tests do: needs root) — the token in the real keychain of the D-Bus session this runs in
//! (`scripts/test.sh` runs it in one with gnome-keyring).
//!
//! 1. `nightshiftctl runs --home box` against its baseline, `ssh box nightshiftctl runs` (the box's
//!    own CLI over the same shared connection): the first call, which opens the shared connection,
//!    then the median of `NIGHTSHIFT_BENCH_RUNS` (default 9) warm calls; in-process, one
//!    `list_runs` through the home client against the box's engine reading its own history.
//! 2. A run's end on the box → the laptop's finish notification (the real notification server's
//!    clock against the run's `finished_at`, one machine): the laptop's `nightshiftctl daemon
//!    --notify` as a whole process, then its viewer in-process; each the worst of the runs (p99 of
//!    fewer than 100 runs is their maximum).

use nightshift_testkit::bench::{fmt, measure, median};
use nightshift_testkit::dbus::NotificationBus;
use nightshift_testkit::SshServer;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CTL: &str = env!("CARGO_BIN_EXE_nightshiftctl");

fn ctl(home: &Path) -> Command {
    let mut c = Command::new(CTL);
    c.env("NIGHTSHIFT_HOME", home);
    c
}

fn main() {
    let Some(server) = SshServer::start() else { return };
    let Ok(session) = std::env::var("DBUS_SESSION_BUS_ADDRESS") else {
        eprintln!("error: this benchmark keeps the home's token in the keychain: run it in a D-Bus session with gnome-keyring (scripts/test.sh does)");
        std::process::exit(1);
    };
    let runs: usize = std::env::var("NIGHTSHIFT_BENCH_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(9);

    // The box: a routine with some history, served on loopback.
    let box_home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(box_home.path().join("routines")).unwrap();
    std::fs::write(box_home.path().join("routines/tick.yaml"), "schedule: \"0 3 * * *\"\nnotify: always\ncommand: \"true\"\n").unwrap();
    for _ in 0..20 {
        assert!(ctl(box_home.path()).args(["run", "tick", "--wait"]).output().unwrap().status.success());
    }
    let mut served = ctl(box_home.path()).args(["serve", "--addr", "127.0.0.1:0"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(served.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap().to_string();
    let (base, token) = url.split_once("/?token=").unwrap();
    let port = base.rsplit(':').next().unwrap().to_string();

    // The laptop: the box added as a home over SSH.
    let laptop = tempfile::Builder::new().prefix("ns-bench").tempdir_in("/tmp").unwrap();
    std::fs::write(laptop.path().join("nightshift.toml"), format!("ssh_config = \"{}\"\nkeychain_service = \"nightshift-bench-homes-{}\"\n", server.ssh_config().display(), std::process::id())).unwrap();
    let mut add = ctl(laptop.path()).args(["homes", "add", "box", &format!("ssh://{}/{port}", SshServer::ALIAS)]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    add.stdin.take().unwrap().write_all(format!("{token}\n").as_bytes()).unwrap();
    let added = add.wait_with_output().unwrap();
    assert!(added.status.success(), "homes add: {}", String::from_utf8_lossy(&added.stderr));
    let close_shared = |dir: &Path| {
        let _ = Command::new("ssh").arg("-F").arg(server.ssh_config()).arg("-o").arg(format!("ControlPath={}/%C", dir.display())).args(["-O", "exit", SshServer::ALIAS]).output();
    };

    // 1. Listing runs there.
    close_shared(&laptop.path().join("ssh"));
    let first = measure(ctl(laptop.path()).args(["runs", "--home", "box"]));
    assert_eq!(first.code, Some(0));
    let ours = median(runs, || {
        let mut c = ctl(laptop.path());
        c.args(["runs", "--home", "box"]);
        c
    });
    let control = tempfile::Builder::new().prefix("ns-bench").tempdir_in("/tmp").unwrap();
    let baseline = || {
        let mut c = Command::new("ssh");
        c.arg("-F").arg(server.ssh_config()).args(["-o", "ControlMaster=auto", "-o", "ControlPersist=60"]).arg("-o").arg(format!("ControlPath={}/%C", control.path().display()));
        c.args([SshServer::ALIAS, "env"]).arg(format!("NIGHTSHIFT_HOME={}", box_home.path().display())).args([CTL, "runs"]);
        c
    };
    let baseline_first = measure(&mut baseline());
    assert_eq!(baseline_first.code, Some(0));
    let theirs = median(runs, baseline);
    let (client_in_process, local_in_process) = in_process_listing(runs, laptop.path(), box_home.path());
    println!("Runs of another home (20 in its history), over loopback SSH");
    println!("{:<48} {:>12} {:>12}", "", "first call", "then, median");
    println!("{:<48} {:>12} {:>12}", "ssh box nightshiftctl runs (the baseline)", fmt(baseline_first.time), fmt(theirs));
    println!("{:<48} {:>12} {:>12}", "nightshiftctl runs --home box", fmt(first.time), fmt(ours));
    println!("{:<48} {:>12} {:>12}", "in-process: list_runs through the home client", "", fmt(client_in_process));
    println!("{:<48} {:>12} {:>12}", "in-process: the box's engine, its own history", "", fmt(local_in_process));

    // 2. A run's end there → the finish notification here.
    let bus = NotificationBus::join(&session, laptop.path(), "record");
    let mut daemon = ctl(laptop.path()).args(["daemon", "--notify"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // Its viewer's first connection sets its place in the box's history.
    let start = Instant::now();
    let placed = || {
        let db = rusqlite::Connection::open(laptop.path().join("nightshift.db")).ok()?;
        db.query_row("SELECT told_from FROM home_views WHERE home = 'box'", [], |r| r.get::<_, Option<String>>(0)).ok().flatten()
    };
    while placed().is_none() {
        assert!(start.elapsed() < Duration::from_secs(30), "the daemon's viewer never reached the box");
        std::thread::sleep(Duration::from_millis(50));
    }
    let whole = end_to_notice(runs, laptop.path(), box_home.path(), || bus.notifications().iter().filter(|n| n["summary"].as_str().is_some_and(|s| s.starts_with("box · "))).filter_map(|n| n["t"].as_f64()).collect());
    let _ = daemon.kill();
    let _ = daemon.wait();
    let seen: Arc<Mutex<Vec<f64>>> = Arc::default();
    let in_process = {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let engine = nightshift_core::Engine::open(nightshift_core::EngineOptions::new(nightshift_core::Home::at(laptop.path()))).unwrap();
        let viewers = {
            let _inside = runtime.enter();
            nightshift_core::homes::viewer::start(&engine, Arc::new(Recorder(Arc::clone(&seen))))
        };
        // (Its place is the daemon's, in the same database: it only has to connect.)
        let mut news = viewers.subscribe();
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(30), async {
                while !matches!(news.recv().await, Ok(nightshift_core::homes::viewer::HomeNews::Up { .. })) {}
            })
            .await
            .expect("the viewer never reached the box")
        });
        end_to_notice(runs, laptop.path(), box_home.path(), || seen.lock().unwrap().clone())
    };
    println!();
    println!("A run's end on the box → its finish notification on the laptop (worst of {runs} = p99)");
    println!("{:<48} {:>12}", "nightshiftctl daemon --notify (whole process)", fmt(whole));
    println!("{:<48} {:>12}", "in-process: the homes' viewer", fmt(in_process));

    close_shared(&laptop.path().join("ssh"));
    close_shared(control.path());
    let _ = served.kill();
    let _ = served.wait();
}

/// A notifier that writes down when each notice came (seconds since the epoch).
struct Recorder(Arc<Mutex<Vec<f64>>>);

impl nightshift_core::notify::Notifier for Recorder {
    fn send(&self, _notice: &nightshift_core::notify::Notice) -> Result<(), String> {
        self.0.lock().unwrap().push(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64());
        Ok(())
    }
}

/// `n` runs started there one after another; for each, the time from its `finished_at` to the
/// notice that `told` (the times of every notice so far) gained. Returns the worst.
fn end_to_notice(n: usize, laptop: &Path, box_home: &Path, told: impl Fn() -> Vec<f64>) -> Duration {
    let mut worst = Duration::ZERO;
    for _ in 0..n {
        let before = told().len();
        let started = ctl(laptop).args(["run", "tick", "--home", "box"]).output().unwrap();
        assert!(started.status.success(), "{}", String::from_utf8_lossy(&started.stderr));
        let id = String::from_utf8_lossy(&started.stdout).trim().to_string();
        let start = Instant::now();
        let at = loop {
            if let Some(t) = told().get(before) {
                break *t;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "no notification for run {id}");
            std::thread::sleep(Duration::from_millis(5));
        };
        let shown: serde_json::Value = serde_json::from_slice(&ctl(box_home).args(["show", &id, "--json"]).output().unwrap().stdout).unwrap();
        let ended = chrono::DateTime::parse_from_rfc3339(shown["finished_at"].as_str().unwrap()).unwrap();
        let took = at - ended.timestamp_millis() as f64 / 1e3;
        worst = worst.max(Duration::from_secs_f64(took.max(0.0)));
    }
    worst
}

/// In-process: one `list_runs` through the home client (over the same SSH route), and the box's
/// engine reading its own first page — median of `n` each.
fn in_process_listing(n: usize, laptop: &Path, box_home: &Path) -> (Duration, Duration) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let engine = nightshift_core::Engine::open(nightshift_core::EngineOptions::new(nightshift_core::Home::at(laptop))).unwrap();
        let client = nightshift_core::homes::client(&engine, "box").unwrap();
        let there = nightshift_core::Engine::open(nightshift_core::EngineOptions::new(nightshift_core::Home::at(box_home))).unwrap();
        let mut through = Vec::with_capacity(n);
        let mut local = Vec::with_capacity(n);
        let _: serde_json::Value = client.call("list_runs", serde_json::json!({ "limit": 20 })).await.unwrap();
        for _ in 0..n {
            let start = Instant::now();
            let _: serde_json::Value = client.call("list_runs", serde_json::json!({ "limit": 20 })).await.unwrap();
            through.push(start.elapsed());
            let start = Instant::now();
            there.runs(&nightshift_core::records::RunQuery { routine: None, status: None, cursor: None, limit: 20 }).unwrap();
            local.push(start.elapsed());
        }
        through.sort();
        local.sort();
        (through[n / 2], local[n / 2])
    })
}
