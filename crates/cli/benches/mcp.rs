//! Nightshift's MCP server on a home with 100 000 runs (20 routines), beside its baselines in the
//! same run:
//! - whole process: a client's whole session with `nightshiftctl mcp` over stdio (initialize,
//!   `tools/call runs_list`, end of input) against `nightshiftctl runs --json` — the same page
//!   of history as the CLI gives it — and the process floor (`--version`); medians of 7, with
//!   peak memory;
//! - in-process: one `runs_list` tool call answered by the server (`McpServer::answer`: the
//!   tool's checks, the engine's page, the JSON an agent reads) against the engine's page alone
//!   (`api::list_runs`, what the window's History asks); medians of 200;
//! - the server's resident memory while a client keeps it open and idle.
//! `NIGHTSHIFT_BENCH_QUICK=1`: 20 000 runs.

#[path = "support/seed.rs"]
mod seed;

use nightshift_testkit::bench::{fmt, measure, memory_kb};
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FRAMES: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n",
    r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"runs_list","arguments":{"limit":20}}}"#,
    "\n"
);

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let rows = if quick { 20_000 } else { 100_000 };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    seed::seed(&home, rows);
    let frames = tmp.path().join("frames.jsonl");
    std::fs::write(&frames, FRAMES).unwrap();
    check_the_session_answers(&home, &frames);

    println!("MCP on {rows} runs — whole process (median of 7)");
    println!("{:<58} {:>12} {:>10}", "what", "time", "peak");
    let ctl = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_nightshiftctl"));
        c.args(args).env("NIGHTSHIFT_HOME", &home).env("NIGHTSHIFT_SKIP_KEYCHAIN", "1");
        c
    };
    let cases: Vec<(&str, Box<dyn Fn() -> Command>)> = vec![
        ("process start (--version): the floor", Box::new(|| ctl(&["--version"]))),
        ("baseline: nightshiftctl runs --json --limit 20", Box::new(|| ctl(&["runs", "--json", "--limit", "20"]))),
        (
            "nightshiftctl mcp: initialize + tools/call runs_list",
            Box::new(|| {
                let mut c = ctl(&["mcp"]);
                c.stdin(std::fs::File::open(&frames).unwrap());
                c
            }),
        ),
    ];
    for (name, make) in &cases {
        let (time, peak) = median(7, || measure(&mut make()));
        println!("{name:<58} {:>12} {:>6} MiB", fmt(time), peak / 1024);
    }

    in_process(&home);
    idle_memory(&home);
}

/// The session measured does what it says: the tool's answer comes back, with 20 runs.
fn check_the_session_answers(home: &Path, frames: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_nightshiftctl")).arg("mcp").env("NIGHTSHIFT_HOME", home).env("NIGHTSHIFT_SKIP_KEYCHAIN", "1").stdin(std::fs::File::open(frames).unwrap()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let answer: serde_json::Value = text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).find(|v| v["id"] == 2).unwrap_or_else(|| panic!("no answer to runs_list: {text}"));
    assert_eq!(answer["result"]["structuredContent"]["runs"].as_array().map(Vec::len), Some(20), "{answer}");
}

fn in_process(home: &Path) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let engine = nightshift_core::Engine::open(nightshift_core::EngineOptions::new(nightshift_core::Home::at(home))).unwrap();
    let server = nightshift_core::mcp::McpServer::new(engine.clone(), nightshift_core::mcp::Caller { run: None, may_act: true });
    let caller = nightshift_core::mcp::Caller::default();
    let args = serde_json::json!({ "limit": 20 });
    let per_call = |f: &dyn Fn()| {
        let mut times: Vec<Duration> = (0..200)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect();
        times.sort();
        times[100]
    };
    let engine_page = per_call(&|| {
        let page = rt.block_on(nightshift_core::api::list_runs(&engine, None, None, None, Some(20))).unwrap();
        assert_eq!(page.runs.len(), 20);
    });
    let tool_call = per_call(&|| {
        let result = rt.block_on(server.answer(&caller, "runs_list", args.clone()));
        assert_eq!(result.is_error, Some(false));
    });
    println!();
    println!("MCP — in-process (median of 200)");
    let us = |d: Duration| format!("{:.0} µs", d.as_secs_f64() * 1e6);
    println!("{:<58} {:>12}", "baseline: the engine's page (api::list_runs, 20 runs)", us(engine_page));
    println!("{:<58} {:>12}", "tools/call runs_list answered (McpServer::answer)", us(tool_call));
}

/// A session kept open and idle: what the server holds while an agent works.
fn idle_memory(home: &Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nightshiftctl"))
        .arg("mcp")
        .env("NIGHTSHIFT_HOME", home)
        .env("NIGHTSHIFT_SKIP_KEYCHAIN", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(FRAMES.as_bytes()).unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let answered = lines.by_ref().take(2).count();
    assert_eq!(answered, 2, "initialize and runs_list answered");
    std::thread::sleep(Duration::from_secs(2));
    let (rss, peak) = memory_kb(child.id());
    let pss = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", child.id()))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Pss:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok()))
        .unwrap_or(0);
    drop(stdin);
    let _ = child.wait();
    println!();
    println!("MCP — the server idle, a session open after one runs_list");
    println!("{:<58} {:>9} KiB", "resident (VmRSS)", rss);
    println!("{:<58} {:>9} KiB", "proportional (Pss)", pss);
    println!("{:<58} {:>9} KiB", "peak so far (VmHWM)", peak);
}

fn median(n: usize, mut run: impl FnMut() -> nightshift_testkit::bench::Measured) -> (Duration, u64) {
    let mut all: Vec<_> = (0..n).map(|_| run()).collect();
    assert!(all.iter().all(|m| m.code == Some(0)), "a measured command failed");
    all.sort_by_key(|m| m.time);
    (all[n / 2].time, all[n / 2].peak_kib)
}
