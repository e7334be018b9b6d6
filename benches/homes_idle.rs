//! The app at rest viewing other homes: started as at login (`--minimized`), with no other home
//! against with three (`[[homes]]`, each a box home served by the real `nightshiftctl serve` on
//! loopback, its token in the keychain of the D-Bus session this runs in), one after the other
//! in the same run. After 10 s quiet: the app's RSS, PSS and anonymous memory; then the CPU it
//! used over a quiet minute (`NIGHTSHIFT_BENCH_QUICK=1`: 10 s). What three homes add is their
//! event streams (one `ssh -W`/TCP connection each, idle but for serve's keep-alive comment every
//! 15 s) and their glance, read once — nothing polls.
//!
//! Needs an X display (Xvfb), a D-Bus session with gnome-keyring, and `nightshiftctl` built beside
//! the app (`cargo bench -p nightshiftctl` builds it): `scripts/with-keyring.sh xvfb-run -a cargo
//! bench -p nightshift --bench homes_idle`.

use nightshift_testkit::bench::cpu_ns_over;
use nightshift_testkit::dbus::TrayHost;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("error: homes_idle needs an X display: scripts/with-keyring.sh xvfb-run -a cargo bench -p nightshift --bench homes_idle");
        std::process::exit(1);
    }
    let Ok(session) = std::env::var("DBUS_SESSION_BUS_ADDRESS") else {
        eprintln!("error: the homes' tokens live in the keychain: run in a D-Bus session with gnome-keyring (scripts/with-keyring.sh)");
        std::process::exit(1);
    };
    let app = std::env::var("NIGHTSHIFT_APP_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_nightshift").to_string());
    let ctl = Path::new(&app).with_file_name("nightshiftctl");
    if !ctl.is_file() {
        eprintln!("error: {} is missing: build it first (cargo bench -p nightshiftctl --no-run, or cargo build --release -p nightshiftctl)", ctl.display());
        std::process::exit(1);
    }
    let quiet = if std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1") { Duration::from_secs(10) } else { Duration::from_secs(60) };
    let tmp = tempfile::tempdir().unwrap();
    let _tray = TrayHost::start(tmp.path(), &session);

    // Three boxes, each served on loopback.
    let mut boxes: Vec<(Child, String, String)> = Vec::new();
    for i in 0..3 {
        let home = tmp.path().join(format!("box{i}"));
        std::fs::create_dir_all(home.join("routines")).unwrap();
        std::fs::write(home.join("routines/nightly.yaml"), "schedule: \"0 3 * * *\"\ncommand: \"true\"\n").unwrap();
        let mut child = Command::new(&ctl).env("NIGHTSHIFT_HOME", &home).args(["serve", "--addr", "127.0.0.1:0"]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap().to_string();
        let (base, token) = url.split_once("/?token=").unwrap();
        boxes.push((child, base.to_string(), token.to_string()));
    }

    let mut rows = Vec::new();
    for homes in [0usize, 3] {
        let home = tmp.path().join(format!("laptop-{homes}"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("nightshift.toml"), format!("keychain_service = \"nightshift-bench-idle-{}-{homes}\"\n", std::process::id())).unwrap();
        for (i, (_, base, token)) in boxes.iter().take(homes).enumerate() {
            let mut add = Command::new(&ctl).env("NIGHTSHIFT_HOME", &home).args(["homes", "add", &format!("box{i}"), base]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
            add.stdin.take().unwrap().write_all(format!("{token}\n").as_bytes()).unwrap();
            let out = add.wait_with_output().unwrap();
            assert!(out.status.success(), "homes add: {}", String::from_utf8_lossy(&out.stderr));
        }
        let mut running = Command::new(&app)
            .arg("--minimized")
            .env("NIGHTSHIFT_HOME", &home)
            .env("DBUS_SESSION_BUS_ADDRESS", &session)
            .env("NO_AT_BRIDGE", "1")
            .env("NIGHTSHIFT_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(10));
        let memory = memory(running.id());
        let cpu_ms = cpu_ns_over(running.id(), quiet) / 1_000_000;
        let connections = established(running.id());
        let _ = running.kill();
        let _ = running.wait();
        rows.push((homes, memory, cpu_ms, connections));
    }
    for (child, _, _) in &mut boxes {
        let _ = child.kill();
        let _ = child.wait();
    }

    println!("The app at rest (--minimized, 10 s quiet), viewing other homes over loopback");
    println!("{:<32} {:>9} {:>9} {:>11} {:>14} {:>12}", "", "RSS", "PSS", "anonymous", format!("CPU / {} s", quiet.as_secs()), "connections");
    for (homes, (rss, pss, anon), cpu, conns) in rows {
        let what = if homes == 0 { "no other home (the baseline)".to_string() } else { format!("{homes} other homes") };
        println!("{what:<32} {:>9} {:>9} {:>11} {:>11} ms {:>12}", mb(rss), mb(pss), mb(anon), cpu, conns);
    }
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

/// The app's (RSS, PSS, anonymous) in kB.
fn memory(pid: u32) -> (u64, u64, u64) {
    (kb(pid, "/status", "VmRSS:"), kb(pid, "/smaps_rollup", "Pss:"), kb(pid, "/smaps_rollup", "Anonymous:"))
}

fn kb(pid: u32, file: &str, key: &str) -> u64 {
    let text = std::fs::read_to_string(PathBuf::from(format!("/proc/{pid}{file}"))).unwrap_or_default();
    text.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// TCP connections the app holds open (its event streams to the homes, and nothing else).
fn established(pid: u32) -> usize {
    let sockets: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| l.to_str().and_then(|s| s.strip_prefix("socket:[")).map(|s| s.trim_end_matches(']').to_string()))
        .collect();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    table.lines().skip(1).filter(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(3) == Some(&"01") && f.get(9).is_some_and(|inode| sockets.contains(*inode))
    }).count()
}
