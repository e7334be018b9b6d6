//! Dependable nights, what they cost and how punctual they are, whole process (`nightshiftctl
//! daemon`) and in-process (an engine and its scheduler in this process), each beside its
//! baseline in the same run:
//!
//! 1. Idle: the daemon with 1000 routines, a tenth of them with `jitter: 30m`, and 100 runs held
//!    for a limit's reset hours away — CPU over a quiet window and memory — beside the daemon with
//!    the same 1000 routines, no jitter and nothing held (today's idle figures).
//! 2. Held runs start on time: 100 runs (one per routine) held until staggered reset times a few
//!    seconds ahead, in real time; how late each started after its due time (p50, p99, max) —
//!    beside 100 runs queued to start at once (the same path without a wait).
//!
//! `NIGHTSHIFT_BENCH_QUICK=1` measures 5 s of idle instead of 60 s and holds 20 runs.

use chrono::{DateTime, Duration as Span, Utc};
use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::store::{NewRun, Store};
use nightshift_core::Home;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let window = Duration::from_secs(if quick { 5 } else { 60 });
    let holds = if quick { 20 } else { 100 };

    println!("Idle daemon with 1000 routines over {} s, whole process", window.as_secs());
    println!("{:<52} {:>12} {:>10} {:>10}", "", "CPU time", "RSS now", "RSS peak");
    for (name, jittered, held) in [("baseline: 1000 routines, nothing held", 0, 0), ("1000 routines, 100 jittered, 100 held for a reset", 100, 100)] {
        let home = tempfile::tempdir().unwrap();
        write_routines(home.path(), 1000, jittered);
        let far = Utc::now() + Span::hours(6);
        hold(home.path(), (0..held).map(|i| (format!("r{i:04}"), far)).collect());
        let m = idle(home.path(), window);
        println!("{name:<52} {:>9.2} ms {:>7.1} MB {:>7.1} MB", m.0 as f64 / 1e6, m.1 as f64 / 1024.0, m.2 as f64 / 1024.0);
    }

    println!("\nHow late a run starts after its due time ({holds} runs, real time)");
    println!("{:<52} {:>9} {:>9} {:>9}", "", "p50", "p99", "max");
    for (label, delay) in [("baseline: queued to start now", None), ("held until a reset (staggered over 5 s)", Some(Duration::from_secs(3)))] {
        let whole = lateness(holds, delay, Face::Daemon);
        print_row(&format!("{label}, whole process"), &whole);
        let inproc = lateness(holds, delay, Face::InProcess);
        print_row(&format!("{label}, in-process"), &inproc);
    }
}

fn print_row(label: &str, lates: &[i64]) {
    let pick = |q: f64| lates[((lates.len() as f64 - 1.0) * q).round() as usize];
    println!("{label:<52} {:>6} ms {:>6} ms {:>6} ms", pick(0.5), pick(0.99), lates[lates.len() - 1]);
}

/// `n` daily routines, none due in the next hours (the window is pure idle); the first
/// `jittered` with `jitter: 30m`.
fn write_routines(home: &Path, n: usize, jittered: usize) {
    let dir = home.join("routines");
    std::fs::create_dir_all(&dir).unwrap();
    let hour = Utc::now().format("%H").to_string().parse::<u32>().unwrap();
    for i in 0..n {
        let h = (hour + 3 + (i as u32 % 18)) % 24;
        let jitter = if i < jittered { "jitter: 30m\n" } else { "" };
        std::fs::write(dir.join(format!("r{i:04}.yaml")), format!("schedule: \"{} {h} * * *\"\ntimezone: UTC\ncommand: \"true\"\n{jitter}", i % 60)).unwrap();
    }
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Queue one run of each routine, held until its time (a run that met a limit and waits for its
/// reset is such a row: `queued` with a due time, owned by no live engine), and wake the home's
/// engines as a process that queues does.
fn hold(home: &Path, runs: Vec<(String, DateTime<Utc>)>) -> Vec<String> {
    let h = Home::at(home);
    let store = Store::open(&h.db_path()).unwrap();
    let now = Utc::now();
    let mut ids = Vec::new();
    let batch = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    for (i, (routine, due)) in runs.into_iter().enumerate() {
        let id = format!("01held{batch:04}{i:016}");
        store
            .insert_run(&NewRun {
                id: id.clone(),
                routine: routine.clone(),
                trigger: Trigger::Schedule,
                agent: nightshift_core::words::Agent::Command,
                status: RunStatus::Queued,
                reason: None,
                message: Some("waiting for the rate limit to reset".into()),
                scheduled_for: Some(now),
                started_at: None,
                finished_at: None,
                account: None,
                run_dir: h.run_dir(&routine, &id).display().to_string(),
                owner: None,
                sort_at: now,
            })
            .unwrap();
        let conn = rusqlite::Connection::open(h.db_path()).unwrap();
        conn.execute("UPDATE runs SET not_before_ms = ?2 WHERE id = ?1", rusqlite::params![id, due.timestamp_millis()]).unwrap();
        ids.push(id);
    }
    let wake = h.wake_path();
    std::fs::create_dir_all(wake.parent().unwrap()).unwrap();
    std::fs::write(&wake, format!("{:>10}\n", std::process::id())).unwrap();
    ids
}

/// The daemon's CPU (ns, all threads) over `window` after 3 s to settle in, and its RSS now and
/// at peak (KiB).
fn idle(home: &Path, window: Duration) -> (u64, u64, u64) {
    let mut child = daemon(home);
    std::thread::sleep(Duration::from_secs(3));
    let cpu = nightshift_testkit::bench::cpu_ns_over(child.id(), window);
    let (rss, hwm) = nightshift_testkit::bench::memory_kb(child.id());
    stop(&mut child);
    (cpu, rss, hwm)
}

fn daemon(home: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_nightshiftctl")).arg("daemon").env("NIGHTSHIFT_HOME", home).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
}

fn stop(child: &mut std::process::Child) {
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
}

#[derive(Clone, Copy)]
enum Face {
    Daemon,
    InProcess,
}

/// `n` runs of `n` routines due `delay` from now (staggered over 5 s; `None`: due now), each
/// started by the face; how late each started after its due time, in ms, sorted.
fn lateness(n: usize, delay: Option<Duration>, face: Face) -> Vec<i64> {
    let home = tempfile::tempdir().unwrap();
    write_routines(home.path(), n, 0);
    std::fs::write(home.path().join("nightshift.toml"), "max_parallel = 64\n").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (engine, shutdown, mut child) = match face {
        Face::Daemon => {
            let child = daemon(home.path());
            wait_for(home.path(), "the daemon to schedule", |h| h.join("scheduler.lock").exists());
            std::thread::sleep(Duration::from_millis(500));
            (None, None, Some(child))
        }
        Face::InProcess => {
            let engine = nightshift_core::Engine::open(nightshift_core::EngineOptions::new(Home::at(home.path()))).unwrap();
            let shutdown = std::sync::Arc::new(tokio::sync::Notify::new());
            let sched = nightshift_core::Scheduler::new(engine.clone());
            let (e, stop) = (engine.clone(), shutdown.clone());
            // What the daemon keeps running, in this process.
            rt.spawn(async move { nightshift_core::daemon::run(&e, sched, stop).await });
            std::thread::sleep(Duration::from_millis(500));
            (Some(engine), Some(shutdown), None)
        }
    };
    let start = Utc::now() + delay.map(|d| Span::from_std(d).unwrap()).unwrap_or_default();
    let step = Span::milliseconds(5000 / n as i64);
    let dues: Vec<(String, DateTime<Utc>)> = (0..n).map(|i| (format!("r{i:04}"), if delay.is_some() { start + step * i as i32 } else { start })).collect();
    let ids = hold(home.path(), dues.clone());
    let store = Store::open(&Home::at(home.path()).db_path()).unwrap();
    wait_for(home.path(), "every run to finish", |_| ids.iter().all(|id| store.get_run(id).map(|r| r.status.is_final()).unwrap_or(false)));
    let mut lates: Vec<i64> = ids
        .iter()
        .zip(&dues)
        .map(|(id, (_, due))| {
            let r = store.get_run(id).unwrap();
            assert_eq!(r.status, RunStatus::Completed, "{r:?}");
            (r.started_at.unwrap() - *due).num_milliseconds()
        })
        .collect();
    lates.sort();
    if let Some(child) = child.as_mut() {
        stop(child);
    }
    if let Some(s) = shutdown {
        s.notify_one();
    }
    drop(engine);
    drop(rt);
    lates
}

fn wait_for(home: &Path, what: &str, done: impl Fn(&Path) -> bool) {
    let start = std::time::Instant::now();
    while !done(home) {
        assert!(start.elapsed() < Duration::from_secs(120), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
