//! The receiver of GitHub's deliveries (`trigger:`), as a whole process and in-process, each beside
//! its baseline in the same run.
//!
//! Whole process: `nightshiftctl daemon` with `[hooks] listen` takes N signed `pull_request`
//! deliveries over loopback HTTP, one connection each, one after another — once for a routine
//! whose trigger filters them out (believed, read, matched: nothing written but the delivery's
//! row) and once for one that fires on each (a run claimed per delivery; `overlap: skip` keeps
//! the burst to one run going, the rest recorded `skipped`). Baseline: a bare HTTP echo server on
//! the same loopback, the same client. In-process: `Engine::receive` called directly, beside the
//! floor it cannot go under — the same signature check and JSON read alone.
//! Deliveries per second and p50 / p99 accept latency. `NIGHTSHIFT_BENCH_QUICK=1`: 200 deliveries.

use nightshift_core::engine::incoming::Delivery;
use nightshift_core::incoming::{signature, Source};
use nightshift_testkit::bench::fmt;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SECRET: &str = "bench-secret-0001";

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let n = if quick { 200 } else { 2000 };
    let bodies: Vec<Vec<u8>> = (0..n).map(|i| payload(i as u64).into_bytes()).collect();

    let echo = echo_server();
    let baseline = send_all(echo, &bodies, "d-echo");

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("routines")).unwrap();
    std::fs::write(home.path().join("nightshift.toml"), format!("auto_pause_after = 0\n[hooks]\nlisten = \"127.0.0.1:{port}\"\n")).unwrap();
    std::fs::write(home.path().join("routines/other.yaml"), "trigger: {type: github_event, event: pull_request, repo: acme/other}\ncommand: \"true\"\n").unwrap();
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_nightshiftctl"))
        .arg("daemon")
        .env("NIGHTSHIFT_HOME", home.path())
        .env("NIGHTSHIFT_HOOK_SECRET_GITHUB", SECRET)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    nightshift_testkit::wait_until("the receiver", Duration::from_secs(15), || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    let filtered = send_all(port, &bodies, "d-filtered");
    std::fs::write(home.path().join("routines/review.yaml"), "trigger: {type: github_event, event: pull_request, repo: acme/app}\noverlap: skip\ncommand: \"true\"\n").unwrap();
    // The daemon reads the new file (its watch); a delivery before that would fire nothing.
    std::thread::sleep(Duration::from_secs(2));
    let fired = send_all(port, &bodies, "d-fired");
    // SAFETY: plain signal to our own child.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    let _ = daemon.wait();
    let conn = rusqlite::Connection::open_with_flags(home.path().join("nightshift.db"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap_or(-1);
    let rows = count("SELECT COUNT(*) FROM runs WHERE routine = 'review'");
    let distinct = count("SELECT COUNT(DISTINCT json_extract(event, '$.delivery')) FROM runs WHERE routine = 'review'");

    // In-process: the engine's own receive, and the floor under it.
    let home2 = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home2.path().join("routines")).unwrap();
    let engine = nightshift_core::EngineOptions::for_test(home2.path()).env("NIGHTSHIFT_HOOK_SECRET_GITHUB", SECRET).open();
    std::fs::write(home2.path().join("routines/other.yaml"), "trigger: {type: github_event, event: pull_request, repo: acme/other}\ncommand: \"true\"\n").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let signed: Vec<(String, String)> = bodies.iter().enumerate().map(|(i, b)| (format!("d-in-{i}"), format!("sha256={}", signature::sign(SECRET, b)))).collect();
    let floor = time_each(&bodies, |i, b| {
        signature::github(SECRET, Some(&signed[i].1), b).unwrap();
        let v: serde_json::Value = serde_json::from_slice(b).unwrap();
        std::hint::black_box(v);
    });
    let inproc = time_each(&bodies, |i, b| {
        let receipt = rt.block_on(engine.receive(Delivery { source: Source::GitHub, event: Some("pull_request"), id: Some(&signed[i].0), signature: Some(&signed[i].1), body: b }));
        assert_eq!(receipt.status, 202, "{}", receipt.message);
    });

    println!("Receiver: {n} signed pull_request deliveries, one after another ({})", if quick { "quick" } else { "full" });
    println!("{:<62} {:>12} {:>10} {:>10}", "", "per second", "p50", "p99");
    for (label, lat) in [
        ("baseline: a bare HTTP echo on loopback, whole process", &baseline),
        ("nightshiftctl daemon, [hooks] listen: filtered out", &filtered),
        ("nightshiftctl daemon, [hooks] listen: each fires its routine", &fired),
        ("baseline: signature check + JSON read alone, in-process", &floor),
        ("Engine::receive, filtered out, in-process", &inproc),
    ] {
        row(label, lat);
    }
    println!("runs of the firing routine: {rows} rows for {distinct} distinct deliveries of {n} (fired or skipped: one each)");
    assert_eq!((rows, distinct), (n as i64, n as i64), "one row per delivery, none lost or doubled");
}

/// A GitHub `pull_request` delivery's body (its documented shape, trimmed).
fn payload(i: u64) -> String {
    serde_json::json!({
        "action": "synchronize", "number": i,
        "pull_request": {"number": i, "title": format!("Change {i}"), "html_url": format!("https://github.com/acme/app/pull/{i}"), "base": {"ref": "main"}, "labels": []},
        "repository": {"full_name": "acme/app"}, "sender": {"login": "octocat"}
    })
    .to_string()
}

/// Send every body as a signed delivery to `port`, one connection each; each request's latency.
fn send_all(port: u16, bodies: &[Vec<u8>], prefix: &str) -> Vec<Duration> {
    bodies
        .iter()
        .enumerate()
        .map(|(i, body)| {
            let head = format!(
                "POST /hooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\nX-GitHub-Event: pull_request\r\nX-GitHub-Delivery: {prefix}-{i}\r\nX-Hub-Signature-256: sha256={}\r\n\r\n",
                body.len(),
                signature::sign(SECRET, body)
            );
            let started = Instant::now();
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(head.as_bytes()).unwrap();
            s.write_all(body).unwrap();
            let mut out = Vec::new();
            s.read_to_end(&mut out).unwrap();
            let took = started.elapsed();
            assert!(out.starts_with(b"HTTP/1.1 20"), "{}", String::from_utf8_lossy(&out));
            took
        })
        .collect()
}

/// A bare HTTP server on loopback that answers every request 200 with its body: the least any
/// receiver over HTTP costs. Returns its port.
fn echo_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 16 * 1024];
            let body = loop {
                let got = s.read(&mut chunk).unwrap_or(0);
                if got == 0 {
                    break Vec::new();
                }
                buf.extend_from_slice(&chunk[..got]);
                if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                    let len: usize = head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
                    while buf.len() < end + 4 + len {
                        let got = s.read(&mut chunk).unwrap_or(0);
                        if got == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..got]);
                    }
                    break buf[end + 4..].to_vec();
                }
            };
            let _ = s.write_all(format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).as_bytes());
            let _ = s.write_all(&body);
        }
    });
    port
}

fn time_each(bodies: &[Vec<u8>], mut f: impl FnMut(usize, &[u8])) -> Vec<Duration> {
    bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let started = Instant::now();
            f(i, b);
            started.elapsed()
        })
        .collect()
}

fn row(label: &str, lat: &[Duration]) {
    let mut sorted = lat.to_vec();
    sorted.sort();
    let total: Duration = lat.iter().sum();
    let per_second = lat.len() as f64 / total.as_secs_f64().max(1e-9);
    let at = |q: f64| sorted[((sorted.len() as f64 - 1.0) * q).round() as usize];
    println!("{label:<62} {per_second:>12.0} {:>10} {:>10}", fmt(at(0.5)), fmt(at(0.99)));
}
