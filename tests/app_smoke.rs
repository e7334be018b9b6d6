//! The real tray app binary under a (virtual) display: first launch creates a home with the
//! example routines and opens the window; "Run now" (sent to the running instance by a second
//! launch, `nightshift --run-now NAME`, through the single-instance plugin) runs the routine in the
//! app's in-process engine, and the finish notification reaches a real D-Bus notification server.
//! Keeps a screenshot in tests/artifacts.

use nightshift_testkit::dbus::NotificationBus;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

fn display_available() -> bool {
    if std::env::var_os("DISPLAY").is_some() {
        return true;
    }
    if std::env::var("NIGHTSHIFT_SKIP_GUI").as_deref() == Ok("1") {
        eprintln!("skipping: no DISPLAY and NIGHTSHIFT_SKIP_GUI=1");
        return false;
    }
    panic!("no X display: run the suite through scripts/test.sh (it starts Xvfb), or set NIGHTSHIFT_SKIP_GUI=1 to skip GUI tests");
}

fn window_titles() -> String {
    Command::new("xwininfo")
        .args(["-root", "-tree"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

fn artifacts() -> PathBuf {
    let dir = std::env::var_os("NIGHTSHIFT_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/artifacts"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn app(home: &std::path::Path, bus: &NotificationBus, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nightshift"));
    c.args(args)
        .env("NIGHTSHIFT_HOME", home)
        .env("NIGHTSHIFT_LOG", "info")
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .env("NO_AT_BRIDGE", "1");
    c
}

fn stop(mut app: Child) {
    unsafe { libc::kill(app.id() as i32, libc::SIGTERM) };
    let start = Instant::now();
    while app.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            app.kill().unwrap();
            panic!("the app did not exit on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn first_launch_run_now_and_a_real_finish_notification() {
    if !display_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let bus = NotificationBus::start(tmp.path(), "record");
    let first = app(&home, &bus, &[]).spawn().expect("start the app");

    let start = Instant::now();
    while !window_titles().contains("\"Nightshift\"") || !home.join("nightshift.db").exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "no Nightshift window appeared:\n{}", window_titles());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(home.join("routines/hello.yaml").exists(), "example routine created");
    assert!(home.join("routines/pr-review.yaml").exists());
    assert!(home.join("nightshift.db").exists(), "the in-process engine opened its database");

    // A second launch hands "run hello now" to the running app and exits.
    let second = app(&home, &bus, &["--run-now", "hello"]).status().unwrap();
    assert!(second.success());
    let got = bus.wait_for(1, Duration::from_secs(30));
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0]["app_name"], "Nightshift");
    assert!(got[0]["summary"].as_str().unwrap().starts_with("✓ hello · "), "{got:#?}");
    assert!(got[0]["body"].as_str().unwrap().starts_with("Hello from Nightshift on "), "{got:#?}");
    assert!(got[0]["icon"].as_str().unwrap().ends_with("notification.png"));

    std::thread::sleep(Duration::from_secs(1));
    let shot = artifacts().join("app-first-launch.png");
    let _ = Command::new("import").args(["-window", "root"]).arg(&shot).status();
    stop(first);
}
