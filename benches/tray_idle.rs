//! Memory of the tray app idle in the tray, side by side with the same app keeping its window:
//! RSS of all the app's processes (the app and its WebKit web/network processes) after the window
//! was opened once and closed (target < 60 MB), against the window left open — what a hidden
//! webview would keep alive. Also the time to reopen the window (a second launch asks the running
//! app to show it). Needs an X display (Xvfb) and python3-xlib; run with
//! `xvfb-run -a cargo bench -p nightshift --bench tray_idle`.

use nightshift_testkit::dbus::NotificationBus;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("tray_idle needs an X display: xvfb-run -a cargo bench -p nightshift --bench tray_idle");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let bus = NotificationBus::start(tmp.path(), "record");
    let app_bin = env!("CARGO_BIN_EXE_nightshift");
    let launch = |home: &std::path::Path| -> Command {
        let mut c = Command::new(app_bin);
        c.env("NIGHTSHIFT_HOME", home).env("DBUS_SESSION_BUS_ADDRESS", &bus.address).env("NO_AT_BRIDGE", "1").env("NIGHTSHIFT_LOG", "error");
        c
    };

    // Window left open.
    let home_a = tmp.path().join("a");
    let open_app = launch(&home_a).spawn().unwrap();
    wait_window(true);
    std::thread::sleep(Duration::from_secs(8));
    let open_rss = tree_rss_kb(open_app.id());
    stop(open_app);
    wait_window(false);

    // Window opened once, then closed: the app lives on in the tray.
    let home_b = tmp.path().join("b");
    let tray_app = launch(&home_b).spawn().unwrap();
    wait_window(true);
    std::thread::sleep(Duration::from_secs(3));
    let closed = Command::new("/usr/bin/python3").arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/close_window.py")).arg("Nightshift").status().unwrap();
    assert!(closed.success(), "could not close the window");
    wait_window(false);
    // The app restarts tray-only once the window is gone and no run is going (same pid, fresh
    // image), then trims clean pages after its startup work; measure once that has settled.
    let start = Instant::now();
    while !std::fs::read_to_string(format!("/proc/{}/cmdline", tray_app.id())).unwrap_or_default().contains("--minimized") {
        assert!(start.elapsed() < Duration::from_secs(30), "the app did not restart in the tray");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(15));
    let tray_rss = tree_rss_kb(tray_app.id());
    let tray_pss = tree_kb(tray_app.id(), "/smaps_rollup", "Pss:");
    let tray_anon = tree_kb(tray_app.id(), "/smaps_rollup", "Anonymous:");

    // Reopen: a second launch asks the running app to show its window.
    let t = Instant::now();
    assert!(launch(&home_b).status().unwrap().success());
    wait_window(true);
    let reopen = t.elapsed();
    stop(tray_app);

    println!("Tray app memory (RSS of the app and its WebKit processes), idle");
    println!("{:<44} {:>10}", "", "RSS");
    println!("{:<44} {:>7} MB", "baseline: window kept open", open_rss / 1024);
    println!("{:<44} {:>7} MB  (PSS {} MB, anonymous {} MB)", "nightshift: in the tray, window closed", tray_rss / 1024, tray_pss / 1024, tray_anon / 1024);
    println!("time to reopen the window: {} ms", reopen.as_millis());
}

fn window_open() -> bool {
    let out = Command::new("xwininfo").args(["-root", "-tree"]).output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    out.lines().any(|l| l.contains("\"Nightshift\": (") && !l.contains(" 10x10+"))
}

fn wait_window(open: bool) {
    let start = Instant::now();
    while window_open() != open {
        assert!(start.elapsed() < Duration::from_secs(60), "window never became {}", if open { "open" } else { "closed" });
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn stop(mut c: Child) {
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let _ = c.wait();
}

/// RSS of `pid` and all its descendants, in KiB.
fn tree_rss_kb(pid: u32) -> u64 {
    tree_kb(pid, "/status", "VmRSS:")
}

/// A `key: N kB` figure from /proc/PID/`file`, summed over `pid` and all its descendants.
fn tree_kb(pid: u32, file: &str, key: &str) -> u64 {
    let mut tree = nightshift_core::runner::process::descendants(pid);
    tree.push(pid);
    tree.iter()
        .map(|p| {
            std::fs::read_to_string(format!("/proc/{p}{file}"))
                .ok()
                .and_then(|s| s.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok()))
                .unwrap_or(0)
        })
        .sum()
}
