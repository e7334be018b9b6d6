//! Polling GitHub (`[github] poll`) for 100 repositories whose feeds have not changed: what one
//! pass costs on the CPU, as a whole process and in-process, each beside its baseline in the
//! same run. Every answer is a 304 (the ETag matched): the common case, all night long.
//!
//! Whole process: `nightshiftctl daemon` polling every second against a loopback fake of GitHub's
//! REST API (`nightshift-testkit`'s), its CPU over a window divided by the passes it made in it,
//! beside the same daemon on the same home with polling off (what it costs idle). In-process:
//! `Engine::poll_github` (one pass), beside the floor under it — the same 100 conditional GETs
//! from a bare HTTP client. The fake's own threads are left out of the in-process sums.
//! `NIGHTSHIFT_BENCH_QUICK=1`: a shorter window and fewer passes.

use nightshift_testkit::bench::{cpu_ns_over, fmt};
use nightshift_testkit::FakeGithub;
use std::process::{Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "github_pat_bench_0000000000000000000000";
const REPOS: usize = 100;

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let (window, passes) = if quick { (Duration::from_secs(6), 10) } else { (Duration::from_secs(20), 40) };
    // The fake's runtime threads carry its name, to be left out of this process's sums.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).thread_name("fake-github").enable_all().build().unwrap();
    let fake = rt.block_on(FakeGithub::start(TOKEN));
    let repos: Vec<String> = (0..REPOS).map(|i| format!("acme/repo-{i:03}")).collect();
    for r in &repos {
        fake.add_event(r, "WatchEvent", "octocat", serde_json::json!({"action": "started"}), chrono::Utc::now());
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("routines")).unwrap();
    for (i, r) in repos.iter().enumerate() {
        std::fs::write(home.path().join(format!("routines/review-{i:03}.yaml")), format!("trigger: {{type: github_event, event: pull_request, repo: {r}}}\ncommand: \"true\"\n")).unwrap();
    }
    let settings = |poll: bool| {
        let poll = if poll { "poll = \"1s\"\n" } else { "" };
        std::fs::write(home.path().join("nightshift.toml"), format!("[github]\n{poll}api_url = \"{}\"\n", fake.url())).unwrap();
    };

    // Whole process: idle first, then polling (the first pass sets each repository's place).
    settings(false);
    let idle = daemon_cpu(home.path(), window, &fake, false);
    settings(true);
    let polling = daemon_cpu(home.path(), window, &fake, true);

    // In-process: the engine's pass, and the bare client's 100 conditional GETs.
    let engine_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let engine = nightshift_core::EngineOptions::for_test(home.path()).env("GH_TOKEN", TOKEN).open();
    let first = engine_rt.block_on(engine.poll_github());
    assert!(first.problems.is_empty(), "{:?}", first.problems);
    let mut pass_ns = Vec::new();
    for _ in 0..passes {
        let before = own_cpu_ns();
        let pass = engine_rt.block_on(engine.poll_github());
        pass_ns.push(own_cpu_ns().saturating_sub(before));
        assert_eq!((pass.asked, pass.unchanged), (REPOS, REPOS), "every answer a 304: {pass:?}");
    }
    let http = ureq::AgentBuilder::new().timeout(Duration::from_secs(10)).build();
    let etags: Vec<String> = repos.iter().map(|r| get(&http, &fake.url(), r, None).header("etag").unwrap().to_string()).collect();
    let mut floor_ns = Vec::new();
    for _ in 0..passes {
        let before = own_cpu_ns();
        for (r, tag) in repos.iter().zip(&etags) {
            assert_eq!(get(&http, &fake.url(), r, Some(tag)).status(), 304);
        }
        floor_ns.push(own_cpu_ns().saturating_sub(before));
    }

    println!("Polling {REPOS} repositories, every answer 304 Not Modified ({})", if quick { "quick" } else { "full" });
    println!("{:<66} {:>14}", "", "CPU per pass");
    let per_pass = |(ns, n): (u64, usize)| Duration::from_nanos(ns / n.max(1) as u64);
    let idle_share = idle.0 as f64 / window.as_nanos() as f64 * 100.0;
    println!("{:<66} {:>14}", format!("baseline: nightshiftctl daemon, polling off ({idle_share:.2} % of a core)"), "—");
    println!("{:<66} {:>14}", format!("nightshiftctl daemon, [github] poll = \"1s\" ({} passes in {}s)", polling.1, window.as_secs()), fmt(per_pass((polling.0.saturating_sub(idle.0), polling.1))));
    println!("{:<66} {:>14}", "baseline: 100 conditional GETs from a bare HTTP client, in-process", fmt(median(&floor_ns)));
    println!("{:<66} {:>14}", "Engine::poll_github, in-process", fmt(median(&pass_ns)));
    assert!(polling.1 >= 2, "the daemon made {} passes in the window", polling.1);
}

/// The daemon's CPU (ns) over `window` once it is up, and the passes it made in it (asks / 100).
fn daemon_cpu(home: &std::path::Path, window: Duration, fake: &FakeGithub, polling: bool) -> (u64, usize) {
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_nightshiftctl")).arg("daemon").env("NIGHTSHIFT_HOME", home).env("GH_TOKEN", TOKEN).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    if polling {
        // Past the first pass (200s that set each place) into the 304s.
        nightshift_testkit::wait_until("the first pass", Duration::from_secs(30), || fake.asks().iter().filter(|a| a.status == 304).count() >= REPOS);
    } else {
        std::thread::sleep(Duration::from_secs(3));
    }
    fake.clear_asks();
    let ns = cpu_ns_over(daemon.id(), window);
    let passes = fake.asks().len() / REPOS;
    // SAFETY: plain signal to our own child.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    let _ = daemon.wait();
    (ns, passes)
}

fn get(http: &ureq::Agent, api: &str, repo: &str, etag: Option<&str>) -> ureq::Response {
    let mut req = http.get(&format!("{api}/repos/{repo}/events?per_page=100")).set("Authorization", &format!("Bearer {TOKEN}")).set("Accept", "application/vnd.github+json");
    if let Some(tag) = etag {
        req = req.set("If-None-Match", tag);
    }
    req.call().unwrap()
}

/// CPU time (ns) of this process's threads but the fake's (`/proc/self/task/*/schedstat`).
fn own_cpu_ns() -> u64 {
    let mut sum = 0;
    for t in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.starts_with("fake-github") {
            continue;
        }
        let ns: u64 = std::fs::read_to_string(t.path().join("schedstat")).ok().and_then(|s| s.split_whitespace().next()?.parse().ok()).unwrap_or(0);
        sum += ns;
    }
    sum
}

fn median(ns: &[u64]) -> Duration {
    let mut sorted = ns.to_vec();
    sorted.sort();
    Duration::from_nanos(sorted[sorted.len() / 2])
}
