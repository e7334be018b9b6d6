//! Benchmarks, side by side with a baseline in the same run (not tests: nothing here asserts a
//! time). `cargo bench -p nightshift-core` prints a table; `NIGHTSHIFT_BENCH_QUICK=1` uses small
//! sizes (a smoke run for CI).
//!
//! 1. Settling a run: outcome + report extraction from a Claude stream-json log of 16–256 MB,
//!    Nightshift's tail reader vs a baseline that parses every line (what agents-cli does).
//! 2. History: one page of 50 filtered rows among 100k runs, SQLite keyset query vs a baseline
//!    that scans run directories and reads every run's metadata file.
//! 3. Burst: 500 routines due in the same minute, `max_parallel = 4`, a fast command each:
//!    lost and duplicated runs (must be 0) and the engine's overhead per run, against a baseline
//!    that spawns the same 500 processes 3 at a time (the lanes scheduled runs get) with no engine.
//! 4. Latency over 1000 runs, p50/p99: a slot firing → the run's process running, and the process
//!    exiting → its final row and notification outbox entry written; against a baseline that
//!    spawns and waits for the same command directly.
//! 5. Two engines on one home dispatching one durable queue (500 runs submitted to both):
//!    throughput and duplicates, against one engine doing the same 500.

use chrono::{Duration as ChronoDuration, Utc};
use nightshift_core::agents::{driver, RunOutput};
use nightshift_core::run::RunStatus;
use nightshift_core::store::{RunQuery, Store};
use nightshift_core::words::Agent;
use std::io::BufRead;
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    // NIGHTSHIFT_BENCH_ONLY=burst (settle, history, burst, latency, engines) runs one table.
    let only = std::env::var("NIGHTSHIFT_BENCH_ONLY").ok();
    let want = |name: &str| only.as_deref().is_none_or(|o| o == name);
    println!("Nightshift benchmarks ({}) on {}", if quick { "quick" } else { "full" }, machine());
    if want("settle") {
        println!();
        settle_bench(if quick { &[4, 16] } else { &[16, 64, 256] });
    }
    if want("history") {
        println!();
        history_bench(if quick { 10_000 } else { 100_000 });
    }
    if want("burst") {
        println!();
        burst_bench(if quick { 100 } else { 500 });
    }
    if want("latency") {
        println!();
        latency_bench(if quick { 100 } else { 1000 });
    }
    if want("engines") {
        println!();
        two_engines_bench(if quick { 100 } else { 500 });
    }
    if want("webhooks") {
        println!();
        webhooks_bench(if quick { 100 } else { 1000 });
    }
}

/// (p50, p99) of a set of durations.
fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

fn wall_ns() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

/// The two `date +%s%N` lines a latency run prints (process started, about to exit).
fn stamps(text: &str) -> (u128, u128) {
    let mut l = text.lines().map(|l| l.trim().parse::<u128>().unwrap());
    (l.next().unwrap(), l.next().unwrap())
}

/// Records when each run's final row is visible to settle hooks (after its outbox entry).
struct SettledAt(tokio::sync::mpsc::UnboundedSender<(String, u128)>);
impl nightshift_core::runner::SettleHook for SettledAt {
    fn name(&self) -> &str {
        "bench-settled-at"
    }
    fn on_settled(&self, run: &nightshift_core::RunRecord) -> Result<(), String> {
        let _ = self.0.send((run.id.clone(), wall_ns()));
        Ok(())
    }
}

fn latency_bench(n: usize) {
    use nightshift_core::{Engine, EngineOptions, Home, ManualClock, Scheduler};
    use std::sync::Arc;
    println!("Latency over {n} runs: slot fires → process running, process exits → final row + notification queued");
    let cmd = "date +%s%N; date +%s%N";
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("routines")).unwrap();
    std::fs::write(dir.path().join("nightshift.toml"), "auto_pause_after = 0
").unwrap();
    std::fs::write(dir.path().join("routines/lat.yaml"), format!("schedule: \"* * * * *\"\ntimezone: UTC\nnotify: always\ncommand: \"{cmd}\"\n")).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (fire, exit) = rt.block_on(async {
        let start = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 11, 30, 9, 59, 30).unwrap();
        let clock = Arc::new(ManualClock::new(start));
        let mut opts = EngineOptions::new(Home::at(dir.path()));
        opts.clock = clock.clone();
        let engine = Engine::open(opts).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        engine.add_settle_hook(Arc::new(SettledAt(tx)));
        let sched = Scheduler::new(engine.clone());
        sched.tick().await.unwrap();
        let (mut fire, mut exit) = (Vec::new(), Vec::new());
        for i in 0..n {
            clock.set(start + ChronoDuration::minutes(i as i64 + 1) - ChronoDuration::seconds(30));
            let fired_at = wall_ns();
            let report = sched.tick().await.unwrap();
            assert_eq!(report.fired.len(), 1);
            let (id, settled_at) = rx.recv().await.unwrap();
            assert_eq!(id, report.fired[0].1);
            let out = std::fs::read_to_string(Path::new(&engine.store().get_run(&id).unwrap().run_dir).join("stdout.log")).unwrap();
            let (began, ending) = stamps(&out);
            fire.push(Duration::from_nanos((began.saturating_sub(fired_at)) as u64));
            exit.push(Duration::from_nanos((settled_at.saturating_sub(ending)) as u64));
        }
        (fire, exit)
    });
    // Baseline: the same command spawned and waited for directly, no engine.
    let (mut bfire, mut bexit) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let t0 = wall_ns();
        let out = std::process::Command::new("/bin/sh").args(["-c", cmd]).output().unwrap();
        let waited = wall_ns();
        let (began, ending) = stamps(&String::from_utf8_lossy(&out.stdout));
        bfire.push(Duration::from_nanos(began.saturating_sub(t0) as u64));
        bexit.push(Duration::from_nanos(waited.saturating_sub(ending) as u64));
    }
    let (f50, f99) = percentiles(fire);
    let (e50, e99) = percentiles(exit);
    let (bf50, bf99) = percentiles(bfire);
    let (be50, be99) = percentiles(bexit);
    println!("{:<38} {:>12} {:>12} {:>12} {:>12}", "", "baseline p50", "baseline p99", "nightshift p50", "nightshift p99");
    println!("{:<38} {:>12} {:>12} {:>14} {:>14}", "fire → process running", fmt(bf50), fmt(bf99), fmt(f50), fmt(f99));
    println!("{:<38} {:>12} {:>12} {:>14} {:>14}", "exit → final row + notification queued", fmt(be50), fmt(be99), fmt(e50), fmt(e99));
}

fn two_engines_bench(n: usize) {
    use nightshift_core::run::Trigger;
    use nightshift_core::{Engine, EngineOptions, Home};
    println!("Two engines on one home, one durable queue: {n} runs of `true` submitted to both, max_parallel = 4");
    let run = |engines: usize| -> (Duration, usize, usize) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("routines")).unwrap();
        std::fs::write(dir.path().join("nightshift.toml"), "max_parallel = 4\nauto_pause_after = 0\n").unwrap();
        let log = dir.path().join("ran.log");
        for i in 0..n {
            std::fs::write(
                dir.path().join(format!("routines/r{i:04}.yaml")),
                format!("schedule: \"0 3 * * *\"\ncommand: 'echo $NIGHTSHIFT_RUN_ID >> {}'\n", log.display()),
            )
            .unwrap();
        }
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let all: Vec<Engine> = (0..engines).map(|_| Engine::open(EngineOptions::new(Home::at(dir.path()))).unwrap()).collect();
            let t = Instant::now();
            let mut handles = Vec::new();
            for i in 0..n {
                let e = all[i % engines].clone();
                handles.push(tokio::spawn(async move { e.run_now(&format!("r{i:04}"), Trigger::Manual).await.unwrap().wait().await.unwrap() }));
            }
            let mut completed = 0;
            for h in handles {
                if h.await.unwrap().status == RunStatus::Completed {
                    completed += 1;
                }
            }
            let took = t.elapsed();
            let lines: Vec<String> = std::fs::read_to_string(&log).unwrap_or_default().lines().map(str::to_string).collect();
            let mut unique = lines.clone();
            unique.sort();
            unique.dedup();
            (took, completed, lines.len() - unique.len())
        })
    };
    let (one, one_done, one_dup) = run(1);
    let (two, two_done, two_dup) = run(2);
    println!("{:<12} {:>10} {:>11} {:>12} {:>10}", "engines", "completed", "duplicated", "time", "runs/s");
    println!("{:<12} {:>10} {:>11} {:>12} {:>10.0}", "1 (baseline)", one_done, one_dup, fmt(one), n as f64 / one.as_secs_f64());
    println!("{:<12} {:>10} {:>11} {:>12} {:>10.0}", "2", two_done, two_dup, fmt(two), n as f64 / two.as_secs_f64());
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| c.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    format!("{cpu}, {cores} cores")
}

/// Median wall time of `runs` calls.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn fmt(d: Duration) -> String {
    if d.as_secs_f64() >= 1.0 {
        format!("{:.2} s", d.as_secs_f64())
    } else if d.as_micros() >= 1000 {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{} µs", d.as_micros())
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Settling: outcome + report from the log.

/// Write a realistic stream: the real init event, then assistant/tool turns (~2 KB lines), then
/// the real result event, until `mb` megabytes.
fn write_stream(path: &Path, mb: usize) {
    nightshift_testkit::streams::write_claude_stream(path, mb, None);
}

/// The baseline: parse every line as JSON, keep the last `result` event.
fn baseline_outcome(path: &Path) -> (bool, Option<String>) {
    let f = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut last = None;
    for line in f.lines() {
        let v: serde_json::Value = match serde_json::from_str(&line.unwrap()) {
            Ok(v) => v,
            Err(_) => continue,
        };
        if v["type"] == "result" {
            last = Some(v);
        }
    }
    let r = last.expect("result");
    (r["is_error"] == false, r["result"].as_str().map(str::to_string))
}

fn settle_bench(sizes_mb: &[usize]) {
    println!("Settling a run: outcome + report from a Claude stream-json log");
    println!("{:>8}  {:>14}  {:>14}  {:>9}", "log", "baseline", "nightshift", "speed-up");
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    for &mb in sizes_mb {
        let run_dir = dir.path().join(format!("run{mb}"));
        std::fs::create_dir_all(&run_dir).unwrap();
        let log = run_dir.join("stdout.log");
        write_stream(&log, mb);
        let ours = median(21, || {
            let o = driver(Agent::Claude).classify(&RunOutput { run_dir: &run_dir, exit_code: Some(0), now });
            assert_eq!(o.status(), RunStatus::Completed);
            assert!(o.report.is_some());
        });
        let base = median(3, || {
            let (ok, report) = baseline_outcome(&log);
            assert!(ok && report.is_some());
        });
        println!("{:>5} MB  {:>14}  {:>14}  {:>8.0}×", mb, fmt(base), fmt(ours), base.as_secs_f64() / ours.as_secs_f64());
        std::fs::remove_file(&log).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// 2. History page.

const ROUTINES: usize = 20;
const STATUSES: [&str; 4] = ["completed", "completed", "completed", "failed"];

fn history_bench(n: usize) {
    println!("History: newest 50 runs of one routine with status=failed, among {n} runs");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nightshift.db");
    let store = Store::open(&db).unwrap();
    drop(store);
    let t0 = Utc::now() - ChronoDuration::days(365);
    {
        // Bulk-load with one transaction (setup, not measured).
        let mut conn = rusqlite::Connection::open(&db).unwrap();
        let tx = conn.transaction().unwrap();
        {
            let mut stmt = tx
                .prepare("INSERT INTO runs (id, routine, trigger, agent, sort_ms, started_at, status, run_dir) VALUES (?1, ?2, 'schedule', 'claude', ?3, ?4, ?5, ?6)")
                .unwrap();
            for i in 0..n {
                let at = t0 + ChronoDuration::minutes(i as i64);
                let routine = format!("routine-{}", i % ROUTINES);
                stmt.execute(rusqlite::params![
                    format!("{i:026}"),
                    routine,
                    at.timestamp_millis(),
                    nightshift_core::words::fmt_time(&at),
                    STATUSES[(i / ROUTINES) % STATUSES.len()],
                    format!("/runs/{routine}/{i}"),
                ])
                .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    // The baseline's layout: one directory per run holding its metadata file.
    let runs_dir = dir.path().join("runs");
    for i in 0..n {
        let at = t0 + ChronoDuration::minutes(i as i64);
        let routine = format!("routine-{}", i % ROUTINES);
        let d = runs_dir.join(&routine).join(format!("{i:026}"));
        std::fs::create_dir_all(&d).unwrap();
        let meta = serde_json::json!({"id": format!("{i:026}"), "routine": routine, "status": STATUSES[(i / ROUTINES) % STATUSES.len()],
            "started_at": nightshift_core::words::fmt_time(&at), "trigger": "schedule", "exit_code": 0, "duration_ms": 1234});
        std::fs::write(d.join("meta.json"), meta.to_string()).unwrap();
    }

    let store = Store::open(&db).unwrap();
    let query = RunQuery { routine: Some("routine-7".into()), status: Some(RunStatus::Failed), cursor: None, limit: 50 };
    let ours = median(51, || {
        let page = store.list_runs(&query).unwrap();
        assert_eq!(page.runs.len(), 50);
    });
    let base = median(3, || {
        let mut found: Vec<serde_json::Value> = Vec::new();
        for routine in std::fs::read_dir(&runs_dir).unwrap() {
            for run in std::fs::read_dir(routine.unwrap().path()).unwrap() {
                let text = std::fs::read_to_string(run.unwrap().path().join("meta.json")).unwrap();
                let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                if v["routine"] == "routine-7" && v["status"] == "failed" {
                    found.push(v);
                }
            }
        }
        found.sort_by(|a, b| b["started_at"].as_str().cmp(&a["started_at"].as_str()));
        found.truncate(50);
        assert_eq!(found.len(), 50);
    });
    println!("{:>14}  {:>14}  {:>9}", "baseline", "nightshift", "speed-up");
    println!("{:>14}  {:>14}  {:>8.0}×", fmt(base), fmt(ours), base.as_secs_f64() / ours.as_secs_f64());
}

// ---------------------------------------------------------------------------------------------
// 3. Burst of due routines.

fn burst_bench(n: usize) {
    println!("Burst: {n} routines due in the same minute, max_parallel = 4 (scheduled runs use 3 lanes, one stays free for Run now), command `true` each");
    let (engine_time, rows, _) = burst(n, "", None);
    let completed = rows.iter().filter(|r| r.status == RunStatus::Completed).count();
    let mut slots: Vec<(String, Option<chrono::DateTime<Utc>>)> = rows.iter().map(|r| (r.routine.clone(), r.scheduled_for)).collect();
    slots.sort();
    slots.dedup();
    let duplicated = rows.len() - slots.len();
    let lost = n - slots.len();

    // Baseline: the same processes, 3 at a time (the lanes scheduled runs get), no engine.
    let base = nightshift_testkit::bench::spawn_in_lanes(n, 3);
    let per_run = engine_time.saturating_sub(base) / n as u32;
    println!("{:>10} {:>10} {:>10} {:>14} {:>14} {:>16}", "runs", "completed", "lost", "duplicated", "baseline", "nightshift");
    println!("{:>10} {:>10} {:>10} {:>14} {:>14} {:>16}", n, completed, lost, duplicated, fmt(base), fmt(engine_time));
    println!("engine overhead per run: {} (record, lanes, settle, report; on top of spawning the process)", fmt(per_run));
}

/// `n` routines of `true` due in one minute, scheduled by an in-process engine with `settings`
/// added; returns the time until the queue is empty and every run final, the rows, and — with
/// `until_done` — the time until that also holds (webhooks delivered, say).
fn burst(n: usize, settings: &str, until_done: Option<&dyn Fn() -> bool>) -> (Duration, Vec<nightshift_core::RunRecord>, Option<Duration>) {
    use nightshift_core::{Engine, EngineOptions, Home, ManualClock, Scheduler};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("routines")).unwrap();
    std::fs::write(dir.path().join("nightshift.toml"), format!("max_parallel = 4\nauto_pause_after = 0\n{settings}")).unwrap();
    for i in 0..n {
        std::fs::write(dir.path().join(format!("routines/r{i:04}.yaml")), "schedule: \"0 10 * * *\"\ntimezone: UTC\ncommand: \"true\"\n").unwrap();
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let start = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 11, 30, 9, 59, 0).unwrap();
        let clock = Arc::new(ManualClock::new(start));
        let mut opts = EngineOptions::new(Home::at(dir.path()));
        opts.clock = clock.clone();
        let engine = Engine::open(opts).unwrap();
        engine.enable_webhooks();
        let sched = Scheduler::new(engine.clone());
        sched.tick().await.unwrap();
        clock.set(start + ChronoDuration::minutes(1));
        let t = Instant::now();
        sched.tick().await.unwrap();
        loop {
            if engine.queued().await == 0 && engine.store().running_count().unwrap() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let took = t.elapsed();
        let done = match until_done {
            Some(done) => {
                while !done() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Some(t.elapsed())
            }
            None => None,
        };
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = engine.store().list_runs(&RunQuery { limit: 1000, cursor, ..Default::default() }).unwrap();
            all.extend(page.runs);
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        (took, all, done)
    })
}

/// Settling is unaffected by webhooks: the same burst with and without three webhooks on every run,
/// whose receiver takes 200 ms per request; then every delivery done, none twice.
fn webhooks_bench(n: usize) {
    use nightshift_testkit::{Answer, WebhookReceiver};
    println!("Webhooks: {n} runs settling at once (burst as above), 3 webhooks on every run, receiver latency 200 ms");
    let recv_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let receivers: Vec<WebhookReceiver> = (0..3).map(|_| recv_rt.block_on(WebhookReceiver::start(vec![Answer::Hang(Duration::from_millis(200))], None))).collect();
    let settings: String = receivers.iter().enumerate().map(|(i, r)| format!("[[webhooks]]\nname = \"w{i}\"\nurl = \"{}\"\non = \"all\"\n", r.url())).collect();
    let (without, _, _) = burst(n, "", None);
    let delivered = || receivers.iter().map(|r| r.accepted().len()).sum::<usize>() == 3 * n;
    let (with, rows, all_delivered) = burst(n, &settings, Some(&delivered));
    let duplicated: usize = receivers.iter().map(|r| r.received().iter().filter(|x| x.duplicate).count()).sum();
    println!("{:>10} {:>22} {:>22} {:>22} {:>12} {:>12}", "runs", "settled, no webhooks", "settled, 3 webhooks", "all 3×runs delivered", "delivered", "duplicated");
    println!(
        "{:>10} {:>22} {:>22} {:>22} {:>12} {:>12}",
        rows.len(),
        fmt(without),
        fmt(with),
        fmt(all_delivered.unwrap_or_default()),
        receivers.iter().map(|r| r.accepted().len()).sum::<usize>(),
        duplicated
    );
}
