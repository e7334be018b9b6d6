//! What the sandbox costs, each beside its baseline in the same run.
//!
//! Start-up: a `true` command routine with `sandbox: on` and `off` — as a whole process
//! (`nightshiftctl run --wait`) and in-process (`Engine::run_now`, the wait for the final record) —
//! and a one-turn run of the real Claude Code CLI against the fake API on loopback, sandboxed and
//! not, as a whole process (when the CLI is installed). Throughput: the sandbox's proxy against a
//! direct connection on loopback — in-process (a CONNECT tunnel through a loopback port whose
//! connections are handed to the proxy on its Unix socket, as inside the sandbox; the bytes read) and as a whole process (a routine that downloads the same bytes with `curl`, through
//! the sandbox and without it). Medians. `NIGHTSHIFT_BENCH_QUICK=1`: fewer runs, fewer bytes.

use nightshift_core::run::Trigger;
use nightshift_testkit::bench::{fmt, median};
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let (runs, mib) = if quick { (5, 64) } else { (21, 512) };
    let exe = env!("CARGO_BIN_EXE_nightshiftctl");
    if nightshift_core::runner::sandbox::probe(std::env::var("PATH").ok().as_deref()).is_err() {
        println!("Sandbox: bubblewrap cannot make a sandbox here; nothing to measure");
        return;
    }
    let origin = origin_server(mib, None);
    let url = format!("http://127.0.0.1:{origin}/");
    // The same bytes at a gigabit link's pace (119 MiB/s): what a run's downloads meet outside
    // this machine.
    let paced_mib = if quick { 32 } else { 128 };
    let paced = origin_server(paced_mib, Some(GIGABIT_MIB_S));
    let paced_url = format!("http://127.0.0.1:{paced}/");
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(home.path().join("routines")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    for (name, sandbox) in [("boxed", "on"), ("plain", "off")] {
        std::fs::write(home.path().join(format!("routines/{name}.yaml")), format!("schedule: \"0 3 1 1 *\"\ncommand: \"true\"\nsandbox: {sandbox}\nnotify: never\ncwd: {}\n", work.display())).unwrap();
        // `allow.hosts` is an agent's field: a command's sandbox reaches the origin as the run's
        // env names it.
        for (fetch, at) in [("fetch", &url), ("fetch-paced", &paced_url)] {
            std::fs::write(
                home.path().join(format!("routines/{fetch}-{name}.yaml")),
                format!("schedule: \"0 3 1 1 *\"\ncommand: curl -fsS -o /dev/null {at}\nsandbox: {sandbox}\nnotify: never\ncwd: {}\nenv: {{ ORIGIN_URL: \"{at}\" }}\n", work.display()),
            )
            .unwrap();
        }
    }
    let ctl = |name: &str| {
        let mut c = Command::new(exe);
        c.args(["run", name, "--wait"]).env("NIGHTSHIFT_HOME", home.path());
        c
    };
    let whole_off = median(runs, || ctl("plain"));
    let whole_on = median(runs, || ctl("boxed"));
    let fetch_off = median(runs.min(5), || ctl("fetch-plain"));
    let fetch_on = median(runs.min(5), || ctl("fetch-boxed"));
    let paced_fetch_off = median(runs.min(5), || ctl("fetch-paced-plain"));
    let paced_fetch_on = median(runs.min(5), || ctl("fetch-paced-boxed"));

    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut opts = nightshift_core::EngineOptions::for_test(home.path());
    opts.scrubber = Some(exe.into());
    let engine = opts.open();
    let in_process = |name: &str| {
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                let rec = rt.block_on(async { engine.run_now(name, Trigger::Manual).await.unwrap().wait().await.unwrap() });
                assert_eq!(rec.status.as_str(), "completed", "{rec:?}");
                start.elapsed()
            })
            .collect();
        times.sort();
        times[times.len() / 2]
    };
    let inproc_off = in_process("plain");
    let inproc_on = in_process("boxed");
    let direct = tunnel_throughput(origin, None, mib);
    let proxied = tunnel_throughput(origin, Some(home.path()), mib);
    let paced_direct = tunnel_throughput(paced, None, paced_mib);
    let paced_proxied = tunnel_throughput(paced, Some(home.path()), paced_mib);

    println!("Sandbox ({}; medians of {runs})", if quick { "quick" } else { "full" });
    println!("{:<72} {:>10} {:>10} {:>10}", "start-up: a `true` command routine", "off", "on", "added");
    println!("{:<72} {:>10} {:>10} {:>10}", "whole process: nightshiftctl run --wait", fmt(whole_off), fmt(whole_on), fmt(whole_on.saturating_sub(whole_off)));
    println!("{:<72} {:>10} {:>10} {:>10}", "in-process: Engine::run_now → final record", fmt(inproc_off), fmt(inproc_on), fmt(inproc_on.saturating_sub(inproc_off)));
    if let Some((off, on)) = claude_turns(exe, runs.min(5)) {
        println!("{:<72} {:>10} {:>10} {:>10}", "whole process: a one-turn Claude Code run (real CLI, fake API)", fmt(off), fmt(on), fmt(on.saturating_sub(off)));
    }
    let rate = |d: Duration| format!("{:.0} MiB/s", mib as f64 / d.as_secs_f64());
    println!("{:<72} {:>10} {:>10} {:>10}", format!("throughput: {mib} MiB from a loopback origin"), "direct", "proxy", "ratio");
    println!("{:<72} {:>10} {:>10} {:>9.2}x", "in-process: TCP direct / CONNECT tunnel handed to the proxy", rate(direct), rate(proxied), proxied.as_secs_f64() / direct.as_secs_f64());
    println!("{:<72} {:>10} {:>10} {:>9.2}x", "whole process: a routine's curl, sandbox off / on", rate(fetch_off), rate(fetch_on), fetch_on.as_secs_f64() / fetch_off.as_secs_f64());
    let rate = |d: Duration| format!("{:.0} MiB/s", paced_mib as f64 / d.as_secs_f64());
    println!("{:<72} {:>10} {:>10} {:>10}", format!("throughput: {paced_mib} MiB from an origin paced at a gigabit link's 119 MiB/s"), "direct", "proxy", "ratio");
    println!("{:<72} {:>10} {:>10} {:>9.2}x", "in-process: TCP direct / CONNECT tunnel handed to the proxy", rate(paced_direct), rate(paced_proxied), paced_proxied.as_secs_f64() / paced_direct.as_secs_f64());
    println!("{:<72} {:>10} {:>10} {:>9.2}x", "whole process: a routine's curl, sandbox off / on", rate(paced_fetch_off), rate(paced_fetch_on), paced_fetch_on.as_secs_f64() / paced_fetch_off.as_secs_f64());
}

/// A gigabit link's payload rate, MiB/s (1000 Mbit/s, less Ethernet and TCP/IP overhead).
const GIGABIT_MIB_S: f64 = 119.0;

/// A loopback HTTP server that answers each request with `mib` MiB, as fast as it can or at `pace`
/// MiB/s.
fn origin_server(mib: usize, pace: Option<f64>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let chunk = vec![b'x'; 1 << 20];
        for c in listener.incoming().flatten() {
            let chunk = chunk.clone();
            std::thread::spawn(move || {
                let mut c = c;
                let mut buf = [0u8; 4096];
                let _ = c.read(&mut buf);
                let _ = c.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", mib << 20).as_bytes());
                let start = Instant::now();
                for i in 0..mib {
                    if c.write_all(&chunk).is_err() {
                        return;
                    }
                    if let Some(pace) = pace {
                        let due = Duration::from_secs_f64((i + 1) as f64 / pace);
                        std::thread::sleep(due.saturating_sub(start.elapsed()));
                    }
                }
            });
        }
    });
    port
}

/// Read the origin's answer directly (`None`) or as a sandboxed client does: a CONNECT tunnel
/// through the loopback port inside, whose connection is handed to the sandbox's proxy serving a
/// Unix socket in `dir`; the median time of three.
fn tunnel_throughput(origin: u16, dir: Option<&Path>, mib: usize) -> Duration {
    use nightshift_core::runner::sandbox::{helper, proxy};
    let inside = dir.map(|d| {
        let path = d.join(format!("bench-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let rules = proxy::Rules { hosts: vec![format!("127.0.0.1:{origin}")], background: Vec::new(), refused_log: d.join("refused.jsonl") };
        std::thread::spawn(move || proxy::serve(listener, rules));
        let port_inside = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = port_inside.local_addr().unwrap().port();
        std::thread::spawn(move || helper::hand_over_each(port_inside, path, None));
        at
    });
    let mut times: Vec<Duration> = (0..3)
        .map(|_| {
            let start = Instant::now();
            let read = match inside {
                Some(at) => {
                    let mut s = std::net::TcpStream::connect(("127.0.0.1", at)).unwrap();
                    s.write_all(format!("CONNECT 127.0.0.1:{origin} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n").as_bytes()).unwrap();
                    std::io::copy(&mut s, &mut std::io::sink()).unwrap()
                }
                None => {
                    let mut s = std::net::TcpStream::connect(("127.0.0.1", origin)).unwrap();
                    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
                    std::io::copy(&mut s, &mut std::io::sink()).unwrap()
                }
            };
            assert!(read as usize >= mib << 20, "read {read} bytes");
            start.elapsed()
        })
        .collect();
    times.sort();
    times[1]
}

/// A one-turn run of the real Claude Code CLI against the fake API, sandbox off and on (medians
/// of `n`, whole process); `None` when the CLI is not installed.
fn claude_turns(exe: &str, n: usize) -> Option<(Duration, Duration)> {
    let claude = nightshift_testkit::home::require_claude_cli()?;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(nightshift_testkit::FakeAnthropic::start(None));
    fake.set("tok-bench", nightshift_testkit::Reply::Success { text: "## Done\n\nNothing to do.".into() });
    let home = tempfile::tempdir().unwrap();
    let user_home = home.path().join("user-home");
    std::fs::create_dir_all(home.path().join("routines")).unwrap();
    std::fs::create_dir_all(&user_home).unwrap();
    for (name, sandbox) in [("turn-on", "on"), ("turn-off", "off")] {
        std::fs::write(
            home.path().join(format!("routines/{name}.yaml")),
            format!(
                "schedule: \"0 3 1 1 *\"\nagent: claude\nmode: plan\nprompt: Check\nsandbox: {sandbox}\nnotify: never\ntimeout: 2m\ncwd: {}\nenv:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_OAUTH_TOKEN: tok-bench\n",
                user_home.display(),
                fake.url()
            ),
        )
        .unwrap();
    }
    let path = format!("{}:{}", claude.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let ctl = |name: &str| {
        let mut c = Command::new(exe);
        c.args(["run", name, "--wait"]).env("NIGHTSHIFT_HOME", home.path()).env("HOME", &user_home).env("PATH", &path);
        c
    };
    // One of each first: Claude Code's first start in a new home writes its config.
    for name in ["turn-off", "turn-on"] {
        assert_eq!(nightshift_testkit::bench::measure(&mut ctl(name)).code, Some(0), "{name}");
    }
    let off = median(n, || ctl("turn-off"));
    let on = median(n, || ctl("turn-on"));
    drop(fake);
    Some((off, on))
}
