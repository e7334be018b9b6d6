//! Memory of the tray app idle in the tray, side by side with the same app keeping its window:
//! RSS of all the app's processes (the app and its WebKit web/network processes) after the window
//! was opened once and closed (target < 60 MB), against the window left open — what a hidden
//! webview would keep alive. Also the time to reopen the window (a second launch asks the running
//! app to show it), and the cold start to the tray icon: from starting `nightshift --minimized` on
//! an existing home to its StatusNotifier item registering on the session bus (a real host,
//! tests/support/status_notifier_host.py), median of 5. Needs an X display (Xvfb) and
//! python3-xlib; run with `xvfb-run -a cargo bench -p nightshift --bench tray_idle`.
//! `NIGHTSHIFT_APP_BIN=/path/to/nightshift` measures that binary instead of the bench build — the
//! README's numbers are of the release build that goes into the packages (`scripts/package.sh`).

use nightshift_testkit::dbus::{NotificationBus, TrayHost};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("tray_idle needs an X display: xvfb-run -a cargo bench -p nightshift --bench tray_idle");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let bus = NotificationBus::start(tmp.path(), "record");
    let tray = TrayHost::start(tmp.path(), &bus.address);
    let app_bin = std::env::var("NIGHTSHIFT_APP_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_nightshift").to_string());
    let app_bin = app_bin.as_str();
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

    // Cold start to the tray icon, on an existing home, started as at login (no window).
    let home_c = tmp.path().join("c");
    nightshift_core::Home::at(&home_c).bootstrap().unwrap();
    let mut starts = Vec::new();
    for _ in 0..5 {
        std::thread::sleep(Duration::from_secs(1)); // the previous app's item is gone
        let t0 = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        let app = launch(&home_c).arg("--minimized").spawn().unwrap();
        let start = Instant::now();
        let registered = loop {
            if let Some(t) = tray.registrations().into_iter().find(|t| *t >= t0) {
                break t;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "the tray icon never registered");
            std::thread::sleep(Duration::from_millis(5));
        };
        starts.push(((registered - t0) * 1000.0) as u64);
        stop(app);
    }
    starts.sort();

    println!("{app_bin} ({} MB)", std::fs::metadata(app_bin).map(|m| m.len() / 1_000_000).unwrap_or(0));
    println!("cold start to the tray icon: {} ms (median of 5; {:?})", starts[2], starts);
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
