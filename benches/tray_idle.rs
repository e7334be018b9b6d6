//! Memory, CPU and open time of the tray app — one Tauri process that hosts the engine and opens
//! its window as a webview of its own.
//!
//! Measured here, median of 5 runs, each on a fresh home:
//! - at rest with the window never opened (started as at login, `--minimized`, 10 s quiet): the
//!   app's private memory (USS: its pages no other process maps, clean or dirty — what a system
//!   monitor shows as the app's memory), RSS, PSS and anonymous memory; its CPU and wake-ups
//!   (context switches, all threads) over a quiet minute, twice;
//! - after the window was opened and closed (10 s quiet): the same;
//! - with the window open: the whole tree (the app and WebKit's processes);
//! - from closing the window to WebKit's web process being gone.
//!
//! Open time: from "Open" (the tray's "Open Nightshift" clicked over D-Bus, a second launch, the
//! first launch) to the window's first paint — WebKit's first contentful paint of the page, whose
//! wall-clock time the app logs (`nightshift_app::first_paint`) — and, in-process, from the app
//! beginning to make the window to it. Its baseline, in the same run: a bare GTK window with a
//! WebKitGTK webview showing one line (this bench binary started again with
//! `TRAY_IDLE_BARE_WEBVIEW=1`), timed the same two ways — what any webview costs here. And the
//! cold start to the tray icon: from starting `nightshift --minimized` on an existing home to its
//! StatusNotifier item registering on the session bus (a real host,
//! tests/support/status_notifier_host.py).
//!
//! Needs an X display (Xvfb) and python3-xlib; run with
//! `xvfb-run -a cargo bench -p nightshift --bench tray_idle`. `NIGHTSHIFT_APP_BIN=/path/to/nightshift`
//! measures that binary instead of the bench build; `scripts/bench-tray.sh` measures the release
//! build beside an earlier design's own bench in one run (docs/performance.md's numbers).

use nightshift_testkit::dbus::{NotificationBus, TrayHost};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use nightshift_app::first_paint::epoch_ms;
use std::time::{Duration, Instant, SystemTime};

fn main() {
    if std::env::var_os(BARE).is_some() {
        return bare_webview();
    }
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("tray_idle needs an X display: xvfb-run -a cargo bench -p nightshift --bench tray_idle");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let bus = NotificationBus::start(tmp.path(), "record");
    let tray = TrayHost::start(tmp.path(), &bus.address);
    let app_bin = std::env::var("NIGHTSHIFT_APP_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_nightshift").to_string());
    let app_bin = app_bin.as_str();
    let launch = |home: &Path| -> Command {
        let mut c = Command::new(app_bin);
        c.env("NIGHTSHIFT_HOME", home)
            .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
            .env("NO_AT_BRIDGE", "1")
            .env("NIGHTSHIFT_LOG", "error,nightshift_app::window=debug");
        c
    };
    let wait_registered = |since: f64| {
        let start = Instant::now();
        loop {
            if let Some(t) = tray.registrations().into_iter().find(|t| *t >= since) {
                return t;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "the tray icon never registered");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let now_s = || SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();

    // At rest with the window never opened, started as at login on an existing home; the cold
    // start to the tray icon.
    let (mut never, mut cold_tray, mut cpu_never) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..5 {
        let home = tmp.path().join(format!("never-{i}"));
        nightshift_core::Home::at(&home).bootstrap().unwrap();
        quiet(&home);
        std::thread::sleep(Duration::from_secs(1)); // the previous app's item is gone
        let t0 = now_s();
        let app = launch(&home).arg("--minimized").stderr(Stdio::null()).spawn().unwrap();
        cold_tray.push(((wait_registered(t0) - t0) * 1000.0) as u64);
        std::thread::sleep(Duration::from_secs(10));
        never.push(memory(app.id()));
        if i >= 3 {
            cpu_never.push(quiet_minute(app.id()));
        }
        stop(app);
    }

    let (mut rest, mut open_tree, mut gone_ms, mut cpu_after) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut first_ms, mut tray_open_ms, mut reopen_ms, mut in_app_ms) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..5 {
        let home = tmp.path().join(format!("rest-{i}"));
        let log = tmp.path().join(format!("rest-{i}.log"));
        let t0 = now_s();
        let (app, first) = start(&launch(&home), &log);
        first_ms.push(first);
        wait_registered(t0);
        quiet(&home);
        std::thread::sleep(Duration::from_secs(5));
        open_tree.push(tree_kb(app.id(), "/status", "VmRSS:"));
        let web = web_processes(app.id());
        assert!(!web.is_empty(), "no WebKit web process under the app");
        let t = Instant::now();
        close_window();
        while web.iter().any(|p| alive(*p)) {
            assert!(t.elapsed() < Duration::from_secs(30), "WebKit's web process did not end with the window");
            std::thread::sleep(Duration::from_millis(5));
        }
        gone_ms.push(t.elapsed().as_millis() as u64);
        wait_closed(&log, 1);
        std::thread::sleep(Duration::from_secs(10));
        rest.push(memory(app.id()));
        if i >= 3 {
            cpu_after.push(quiet_minute(app.id()));
        }
        // Reopen from the tray's "Open Nightshift" (this app's item), then close it again and
        // reopen with a second launch.
        let start = Instant::now();
        while !tray.menu().unwrap_or_default().iter().any(|e| e.label == "Open Nightshift") {
            assert!(start.elapsed() < Duration::from_secs(30), "the tray item has no menu");
            std::thread::sleep(Duration::from_millis(20));
        }
        let painted = first_paints(&log).len();
        let t = SystemTime::now();
        tray.click(&bus.address, "Open Nightshift");
        tray_open_ms.push(wait_first_paint(&log, painted, t));
        close_window();
        wait_closed(&log, 2);
        let painted = first_paints(&log).len();
        let t = SystemTime::now();
        assert!(launch(&home).stderr(Stdio::null()).status().unwrap().success());
        reopen_ms.push(wait_first_paint(&log, painted, t));
        in_app_ms.extend(first_paints(&log).iter().map(|p| p.1));
        stop(app);
    }

    // The baseline of the open time: a bare webview, started 5 times.
    let bare: Vec<(u64, u64)> = (0..5).map(|_| bare_run()).collect();

    let mb = |kb: u64| format!("{:.1} MB", kb as f64 / 1024.0);
    let median = |mut v: Vec<u64>| {
        v.sort();
        (v[v.len() / 2], v)
    };
    println!("{app_bin} ({} MB)", std::fs::metadata(app_bin).map(|m| m.len() / 1_000_000).unwrap_or(0));
    println!("Tray app memory, median of 5 (each run a fresh home; 10 s quiet before reading)");
    println!("{:<54} {:>13} {:>9} {:>9} {:>11}", "", "private (USS)", "RSS", "PSS", "anonymous");
    for (what, runs) in [("at rest, the window never opened", &never), ("at rest, after the window was opened and closed", &rest)] {
        let (uss, uss_all) = median(runs.iter().map(|r| r.uss).collect());
        let (rss, _) = median(runs.iter().map(|r| r.rss).collect());
        let (pss, _) = median(runs.iter().map(|r| r.pss).collect());
        let (anon, _) = median(runs.iter().map(|r| r.anonymous).collect());
        println!("{what:<54} {:>13} {:>9} {:>9} {:>11}   (USS of all 5: {uss_all:?} kB)", mb(uss), mb(rss), mb(pss), mb(anon));
    }
    let (open, open_all) = median(open_tree);
    println!("{:<54} {:>9}   ({open_all:?} kB)", "the window open (the app and WebKit's processes)", mb(open));
    let minutes = |v: &[nightshift_testkit::bench::Activity]| v.iter().map(|a| format!("{:.2} ms / {} wake-ups", a.cpu_ns as f64 / 1e6, a.switches)).collect::<Vec<_>>().join(", ");
    println!("A quiet minute (CPU / wake-ups, all threads; two minutes each): window never opened {}; after it was closed {}", minutes(&cpu_never), minutes(&cpu_after));
    let (gone, gone_all) = median(gone_ms);
    println!("window closed (the close request sent) → WebKit's web process gone: {gone} ms (median of 5; {gone_all:?})");
    let (first, first_all) = median(first_ms);
    let (reopen, reopen_all) = median(reopen_ms);
    let (tray_open, tray_open_all) = median(tray_open_ms);
    let (in_app, in_app_all) = median(in_app_ms);
    let (bare_in, bare_in_all) = median(bare.iter().map(|b| b.1).collect());
    let (bare, bare_all) = median(bare.iter().map(|b| b.0).collect());
    println!("Open → first paint (whole process, median of 5; the baseline is a bare WebKitGTK webview showing one line)");
    println!("  baseline: bare webview started → first paint: {bare} ms ({bare_all:?})");
    println!("  tray \"Open Nightshift\" → window first paint: {tray_open} ms ({tray_open_all:?})");
    println!("  second launch → window first paint: {reopen} ms ({reopen_all:?})");
    println!("  first launch → window first paint: {first} ms ({first_all:?})");
    println!("In-process: baseline, the process's start → its first paint {bare_in} ms ({bare_in_all:?}); the app making the window → its first paint {in_app} ms (median of 15: {in_app_all:?})");
    let (cold, cold_all) = median(cold_tray);
    println!("cold start to the tray icon: {cold} ms (median of 5; {cold_all:?})");
}

/// The app's memory, in kB, each figure named as the kernel names it.
struct Memory {
    /// Pages only this process maps (`Private_Clean` + `Private_Dirty`): what it would give back
    /// if it ended — the figure a system monitor shows as a process's memory.
    uss: u64,
    rss: u64,
    pss: u64,
    anonymous: u64,
}

fn memory(pid: u32) -> Memory {
    let rollup = |key| kb(pid, "/smaps_rollup", key);
    Memory { uss: rollup("Private_Clean:") + rollup("Private_Dirty:"), rss: kb(pid, "/status", "VmRSS:"), pss: rollup("Pss:"), anonymous: rollup("Anonymous:") }
}

/// The example routine `hello` runs every hour on the hour: off, so no quiet minute holds a run.
fn quiet(home: &Path) {
    let file = home.join("routines").join("hello.yaml");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    std::fs::write(&file, format!("enabled: false\n{text}")).unwrap();
}

/// The app's CPU and wake-ups over a quiet minute, every thread counted (`/proc/PID/task`).
fn quiet_minute(pid: u32) -> nightshift_testkit::bench::Activity {
    nightshift_testkit::bench::activity_over(pid, Duration::from_secs(60))
}

/// WebKit's web processes under the app (the window's page).
fn web_processes(app: u32) -> Vec<u32> {
    use nightshift_core::runner::process::{descendants, process_name};
    descendants(app).into_iter().filter(|p| process_name(*p).is_some_and(|n| n.starts_with("WebKitWebProces")) && alive(*p)).collect()
}

/// Start the app with its window; returns once the window has painted, and how many ms after the start.
fn start(command: &Command, log: &Path) -> (Child, u64) {
    let mut command = clone(command);
    let t = SystemTime::now();
    let child = command.stderr(std::fs::File::create(log).unwrap()).stdout(Stdio::null()).spawn().unwrap();
    let took = wait_first_paint(log, 0, t);
    (child, took)
}

/// Wait for the app to log a window's first paint after the `before` ones already in `log`;
/// returns ms from `since` to the paint.
fn wait_first_paint(log: &Path, before: usize, since: SystemTime) -> u64 {
    loop {
        if let Some((at_ms, _)) = first_paints(log).get(before) {
            return at_ms.saturating_sub(epoch_ms(since));
        }
        assert!(since.elapsed().unwrap_or_default() < Duration::from_secs(60), "the window did not paint within 60 s (paint {} awaited); X lists {:?}; the app's log ends:\n{}", before + 1, nightshift_windows(), tail(log));
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The first paints the app logged: (wall-clock ms, ms since it began making that window).
fn first_paints(log: &Path) -> Vec<(u64, u64)> {
    nightshift_testkit::window_first_paints(&std::fs::read_to_string(log).unwrap_or_default())
}

const BARE: &str = "TRAY_IDLE_BARE_WEBVIEW";

/// Start this binary as a bare webview; returns (ms from the spawn to its first paint, ms from
/// its own start to it).
fn bare_run() -> (u64, u64) {
    let t = SystemTime::now();
    let out = Command::new(std::env::current_exe().unwrap()).env(BARE, "1").env("NO_AT_BRIDGE", "1").stderr(Stdio::inherit()).output().unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    let (at, since_start) = out.trim().split_once(' ').unwrap_or_else(|| panic!("the bare webview did not report its paint: {out:?}"));
    (at.parse::<u64>().unwrap().saturating_sub(epoch_ms(t)), since_start.parse().unwrap())
}

/// The baseline: a GTK window holding a WebKitGTK webview (the same WebKitGTK and GTK the window
/// uses, no Tauri, no app) showing one line; prints "<paint wall-clock ms> <ms since start>" and exits.
fn bare_webview() {
    use gtk::prelude::*;
    use webkit2gtk::WebViewExt;
    let started = SystemTime::now();
    gtk::init().expect("GTK (needs a display)");
    let window = gtk::Window::new(gtk::WindowType::Toplevel);
    window.set_title("bare webview");
    window.set_default_size(920, 640);
    let view = webkit2gtk::WebView::new();
    window.add(&view);
    // As the window does: the paint is read once the page has loaded.
    view.connect_load_changed(move |view, event| {
        if event == webkit2gtk::LoadEvent::Finished {
            nightshift_app::first_paint::watch(view, move |painted| {
                let at = painted.expect("the bare webview's paint");
                println!("{} {}", epoch_ms(at), at.duration_since(started).unwrap_or_default().as_millis());
                gtk::main_quit();
            });
        }
    });
    view.load_html("<!doctype html><title>bare</title><h1>Nightshift</h1>", None);
    window.show_all();
    gtk::main();
}

fn clone(c: &Command) -> Command {
    let mut n = Command::new(c.get_program());
    n.args(c.get_args());
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            n.env(k, v);
        }
    }
    n
}

fn alive(pid: u32) -> bool {
    PathBuf::from(format!("/proc/{pid}")).exists() && !nightshift_core::runner::process::is_zombie(pid)
}

fn close_window() {
    assert!(ask_to_close(), "could not close the window: no X window titled Nightshift (X lists {:?})", nightshift_windows());
}

/// Send the window titled Nightshift a close request; false when there is no such window.
fn ask_to_close() -> bool {
    Command::new("/usr/bin/python3").arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/close_window.py")).arg("Nightshift").status().unwrap().success()
}

/// Wait until the app has logged its window closed `n` times — the app's own word (its window was
/// destroyed), not a listing of X's windows, which may keep an unmapped one of the same title and
/// took a process per look (the wait that failed one bench in two). Under Xvfb, with no window
/// manager, a close request that comes right after the window was shown is now and then left
/// unanswered (tests/app_smoke.rs saw it too): as a person clicks again, the request is sent again
/// every 5 s, said on stderr, for at most 60 s; then the wait says what it saw.
fn wait_closed(log: &Path, n: usize) {
    let start = Instant::now();
    let mut asked = Instant::now();
    loop {
        let said = std::fs::read_to_string(log).unwrap_or_default().matches("the window closed").count();
        if said >= n {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "the app logged its window closed {said} time(s) within 60 s, not {n}; X lists {:?}; the app's log ends:\n{}", nightshift_windows(), tail(log));
        if asked.elapsed() > Duration::from_secs(5) {
            eprintln!("the window did not answer a close request within 5 s; asking again");
            ask_to_close();
            asked = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// X's windows titled Nightshift, as `xwininfo` lists them (for a wait's words).
fn nightshift_windows() -> Vec<String> {
    let out = Command::new("xwininfo").args(["-root", "-tree"]).output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    out.lines().filter(|l| l.contains("\"Nightshift\"")).map(|l| l.trim().to_string()).collect()
}

/// The last 30 lines of the app's log.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

fn stop(mut c: Child) {
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let _ = c.wait();
}

/// A `key: N kB` figure from /proc/PID/`file`.
fn kb(pid: u32, file: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}{file}"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok()))
        .unwrap_or(0)
}

/// The same figure summed over `pid` and all its descendants.
fn tree_kb(pid: u32, file: &str, key: &str) -> u64 {
    let mut tree = nightshift_core::runner::process::descendants(pid);
    tree.push(pid);
    tree.iter().map(|p| kb(*p, file, key)).sum()
}
