//! Another home in the real app (WebKitGTK through tauri-driver, under Xvfb): a second
//! `NIGHTSHIFT_HOME` ("box") served by the real `nightshiftctl serve` on loopback, added to the
//! app's home with `nightshiftctl homes add` (its token into the real keychain of the test's
//! session bus). The tray lists the box's routines (Run now ▸ box ▸ nightly) and runs one there;
//! the window's home switcher shows the box's routines and runs one there; each of those runs'
//! finish is a notification on the real D-Bus notification server, told once; a routine of this
//! machine moves to the box from its menu. Screenshot:
//! tests/artifacts/ui-homes.png.

mod common;

use common::*;
use nightshift_testkit::dbus::{MenuEntry, NotificationBus, TrayHost};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `nightshiftctl`, built beside the app by the workspace's build (`scripts/test.sh` builds both).
fn ctl_binary() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_nightshift")).with_file_name("nightshiftctl");
    assert!(path.is_file(), "{} is missing: build the workspace (cargo build --workspace; scripts/test.sh does)", path.display());
    path
}

fn ctl(home: &Path) -> Command {
    let mut c = Command::new(ctl_binary());
    c.env("NIGHTSHIFT_HOME", home);
    c
}

/// The box's completed runs of `routine`, as its own CLI lists them.
fn completed_on_box(home: &Path, routine: &str) -> usize {
    let out = ctl(home).args(["runs", "--json", "--routine", routine]).output().unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    runs.as_array().map(|a| a.iter().filter(|r| r["status"] == "completed").count()).unwrap_or(0)
}

fn wait_until(what: &str, limit: Duration, ok: impl Fn() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < limit, "{what} did not happen within {limit:?}{}", app_log_tail());
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The test session's bus (its keychain and notification server), when a display and the
/// keychain are here (`scripts/test.sh` provides both).
fn session_with_keychain() -> Option<String> {
    if !gui_available() {
        return None;
    }
    let Ok(session) = std::env::var("DBUS_SESSION_BUS_ADDRESS") else {
        assert_eq!(std::env::var("NIGHTSHIFT_SKIP_KEYCHAIN").as_deref(), Ok("1"), "no D-Bus session (the keychain): run through scripts/test.sh");
        return None;
    };
    Some(session)
}

/// The box's entries under the tray's Run now.
fn box_entries(menu: &[MenuEntry]) -> Vec<String> {
    let run_now = menu.iter().find(|e| e.label == "Run now").map(|e| e.children.clone()).unwrap_or_default();
    run_now.iter().find(|e| e.label == "box").map(|e| e.children.iter().map(|c| c.label.clone()).collect()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_shows_another_homes_routines_and_runs_them_there_from_the_window_and_the_tray() {
    let Some(session) = session_with_keychain() else { return };
    let _one = ONE_APP_AT_A_TIME.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let box_home = tmp.path().join("box");
    std::fs::create_dir_all(box_home.join("routines")).unwrap();
    std::fs::write(box_home.join("routines/nightly.yaml"), "schedule: \"0 3 * * *\"\nnotify: always\ncommand: echo hello from the box\n").unwrap();
    // An account there that has never signed in: the tray offers its re-login, on the box.
    std::fs::write(box_home.join("nightshift.toml"), format!("device_name = \"the-box\"\nkeychain_service = \"nightshift-test-ui-box-{}\"\n[[accounts]]\nemail = \"box@home.dev\"\n", std::process::id())).unwrap();
    let mut served = ctl(&box_home).args(["serve", "--addr", "127.0.0.1:0"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(served.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap().to_string();
    let (base, token) = url.split_once("/?token=").unwrap();

    let home = tmp.path().join("home");
    nightshift_core::Home::at(&home).bootstrap().unwrap();
    std::fs::write(home.join("nightshift.toml"), format!("keychain_service = \"nightshift-test-ui-homes-{}\"\n", std::process::id())).unwrap();
    let mut add = ctl(&home).args(["homes", "add", "box", base]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    add.stdin.take().unwrap().write_all(format!("{token}\n").as_bytes()).unwrap();
    let added = add.wait_with_output().unwrap();
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));

    let bus = NotificationBus::join(&session, tmp.path(), "record");
    let tray = TrayHost::start(tmp.path(), &session);
    let Some((driver, c)) = launch(&home, &session).await else { return };

    // The tray: Run now ▸ box ▸ nightly, beside this machine's own routines.
    tray.wait_for("the box's routines under Run now", Duration::from_secs(30), |m| box_entries(m).iter().any(|l| l.ends_with("nightly")));

    // The window: the switcher offers the box; choosing it shows the box's routines.
    let offered = until(&c, "the home switcher", "const l = document.getElementById('home-switch-label'); return !l.hidden && [...document.querySelectorAll('#home-switch option')].map(o => o.value).includes('box')", 20).await;
    assert_eq!(offered, true);
    js(&c, "const s = document.getElementById('home-switch'); s.value = 'box'; s.dispatchEvent(new Event('change')); return true").await;
    text(&c, "#routines tr[data-routine='nightly']").await;
    let header = until(&c, "the header naming the box", "const t = document.getElementById('engine-state').textContent; return t.includes('box (the-box)') && t", 15).await;
    assert!(header.as_str().unwrap().contains("Scheduling"), "{header}");
    assert_eq!(js(&c, "return document.querySelectorAll(\"#routines tr[data-routine='hello']\").length").await, 0, "this machine's example routine is not the box's");
    screenshot(&c, "ui-homes.png").await;

    // Run now in the box's row: the box's engine runs it; its finish is told here once.
    click(&c, "#routines tr[data-routine='nightly'] button.primary").await;
    wait_until("a completed run on the box", Duration::from_secs(30), || completed_on_box(&box_home, "nightly") == 1);
    let told = bus.wait_for(1, Duration::from_secs(20));
    let from_box: Vec<&serde_json::Value> = told.iter().filter(|n| n["summary"].as_str().is_some_and(|s| s.starts_with("box · ✓ nightly · "))).collect();
    assert_eq!(from_box.len(), 1, "{told:#?}");
    assert_eq!(from_box[0]["body"], "hello from the box");

    // The tray's Run now ▸ box ▸ ✓ nightly runs it there again.
    tray.wait_for("the box's last run marked", Duration::from_secs(20), |m| box_entries(m).contains(&"✓ nightly".to_string()));
    tray.click_path(&session, &["Run now", "box", "✓ nightly"]);
    wait_until("a second completed run on the box", Duration::from_secs(30), || completed_on_box(&box_home, "nightly") == 2);
    let start = Instant::now();
    let count = || bus.notifications().iter().filter(|n| n["summary"].as_str().is_some_and(|s| s.starts_with("box · ✓ nightly · "))).count();
    while count() < 2 {
        assert!(start.elapsed() < Duration::from_secs(20), "the second finish was not told{}", app_log_tail());
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(count(), 2, "each finish told once");
    // Nothing of the box was run here.
    assert_eq!(nightshift_core::Engine::open(nightshift_core::EngineOptions::new(nightshift_core::Home::at(&home))).unwrap().runs(&nightshift_core::records::RunQuery { routine: Some("nightly".into()), status: None, cursor: None, limit: 10 }).unwrap().runs.len(), 0);

    // Re-login ▸ box@home.dev on box: the window shows the box, and the command to run there.
    tray.wait_for("the box's account under Re-login", Duration::from_secs(20), |m| {
        m.iter().any(|e| e.label == "Re-login" && e.children.iter().any(|c| c.label.starts_with("box@home.dev on box (")))
    });
    let label = tray.menu().unwrap().into_iter().find(|e| e.label == "Re-login").unwrap().children.into_iter().find(|c| c.label.starts_with("box@home.dev on box (")).unwrap().label;
    tray.click_path(&session, &["Re-login", &label]);
    let shown = until(&c, "the re-login panel for the box's account", "const p = document.getElementById('relogin'); return !p.hidden && document.getElementById('relogin-command').textContent.includes('claude') && [document.getElementById('relogin-account').textContent, document.getElementById('home-switch').value, document.getElementById('relogin-opened').textContent]", 20).await;
    assert_eq!(shown[0], "box@home.dev");
    assert_eq!(shown[1], "box", "the window shows the box");
    assert!(shown[2].as_str().unwrap().starts_with("No terminal could be opened"), "{shown}");
    js(&c, "document.getElementById('relogin-close').click(); return true").await;

    // Back to this machine: its routine menu moves `hello` to the box (written there first, then
    // disabled here).
    js(&c, "const s = document.getElementById('home-switch'); s.value = ''; s.dispatchEvent(new Event('change')); return true").await;
    until(&c, "History of this machine (a run of the box means nothing here)", "return location.hash === '#/history'", 10).await;
    go(&c, "#/routines").await;
    text(&c, "#routines tr[data-routine='hello']").await;
    until(&c, "the Move entry in hello's menu", "return !!document.querySelector(\"#routines tr[data-routine='hello'] button[data-action='move:box']\")", 15).await;
    js(&c, "document.querySelector(\"#routines tr[data-routine='hello'] details.more\").open = true; document.querySelector(\"#routines tr[data-routine='hello'] button[data-action='move:box']\").click(); return true").await;
    click(&c, "#inline-confirm").await;
    let said = until(&c, "the move said", "const t = document.getElementById('routines-status').textContent; return t.startsWith('Moved hello to box') && t", 20).await;
    assert!(said.as_str().unwrap().contains("it runs there now"), "{said}");
    assert!(box_home.join("routines/hello.yaml").is_file(), "written on the box");
    assert!(!home.join("routines/hello.yaml").exists(), "disabled here");

    close(c).await;
    drop(driver);
    let _ = served.kill();
    let _ = served.wait();
}

/// The app itself as another machine's home (`[serve] listen`): a laptop's CLI adds it with the
/// token the app kept, and runs one of the app's routines there — the app's engine runs it, and
/// its window shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_with_serve_listen_is_a_home_another_machine_reaches() {
    let Some(session) = session_with_keychain() else { return };
    let _one = ONE_APP_AT_A_TIME.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    nightshift_core::Home::at(&home).bootstrap().unwrap();
    std::fs::write(home.join("routines/nightly.yaml"), "schedule: \"0 3 * * *\"\ncommand: echo run by the app\n").unwrap();
    let port = free_port();
    std::fs::write(home.join("nightshift.toml"), format!("device_name = \"the-app\"\n[serve]\nlisten = \"127.0.0.1:{port}\"\n")).unwrap();
    let Some((driver, c)) = launch(&home, &session).await else { return };
    wait_until("the app's server", Duration::from_secs(30), || home.join("serve-token").is_file() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    let token = std::fs::read_to_string(home.join("serve-token")).unwrap();

    let laptop = tmp.path().join("laptop");
    std::fs::create_dir_all(&laptop).unwrap();
    std::fs::write(laptop.join("nightshift.toml"), format!("keychain_service = \"nightshift-test-ui-serve-{}\"\n", std::process::id())).unwrap();
    let mut add = ctl(&laptop).args(["homes", "add", "app", &format!("http://127.0.0.1:{port}")]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    add.stdin.take().unwrap().write_all(format!("{}\n", token.trim()).as_bytes()).unwrap();
    let added = add.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&added.stdout).contains("reachable, the-app there"), "{}{}", String::from_utf8_lossy(&added.stderr), app_log_tail());

    // Run there: the app's engine runs it (the app schedules its home), the window shows it.
    let ran = ctl(&laptop).args(["run", "nightly", "--wait", "--json", "--home", "app"]).output().unwrap();
    let run: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap_or_default();
    assert_eq!(run["status"], "completed", "{}{}", String::from_utf8_lossy(&ran.stderr), app_log_tail());
    let listed = ctl(&laptop).args(["homes", "list", "--json"]).output().unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["scheduling"], true, "{listed:#}");
    assert_eq!(latest_run_id(&home), run["id"].as_str().unwrap(), "the run is the app's");
    go(&c, "#/history").await;
    let row = until(&c, "the run in the app's history", &format!("return !!document.querySelector(\"#history-rows tr[data-id='{}']\")", run["id"].as_str().unwrap()), 20).await;
    assert_eq!(row, true);

    close(c).await;
    drop(driver);
}
