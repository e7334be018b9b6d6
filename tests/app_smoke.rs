//! The real tray app binary starts on a (virtual) display, creates a home with the example
//! routines on first launch, opens its window, and quits cleanly on SIGTERM.
//! Needs an X display (scripts/test.sh starts Xvfb); keeps a screenshot in tests/artifacts.

use std::path::PathBuf;
use std::process::Command;
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

#[test]
fn first_launch_creates_a_home_and_opens_the_window() {
    if !display_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let mut app = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .env("NIGHTSHIFT_HOME", home.path())
        .env("NIGHTSHIFT_LOG", "info")
        .spawn()
        .expect("start the app");

    let start = Instant::now();
    while !window_titles().contains("\"Nightshift\"") {
        if let Some(status) = app.try_wait().unwrap() {
            panic!("the app exited early with {status}");
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no Nightshift window appeared:\n{}", window_titles());
        std::thread::sleep(Duration::from_millis(200));
    }
    // Let the page render, then keep a picture of it.
    std::thread::sleep(Duration::from_secs(2));
    let shot = artifacts().join("app-first-launch.png");
    let _ = Command::new("import").args(["-window", "root"]).arg(&shot).status();

    assert!(home.path().join("routines/hello.yaml").exists(), "example routine created");
    assert!(home.path().join("routines/pr-review.yaml").exists());
    assert!(home.path().join("nightshift.db").exists(), "the in-process engine opened its database");

    unsafe { libc::kill(app.id() as i32, libc::SIGTERM) };
    let start = Instant::now();
    loop {
        if app.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(10) {
            app.kill().unwrap();
            panic!("the app did not exit on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
