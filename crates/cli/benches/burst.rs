//! A burst as a whole process: `nightshiftctl daemon` on a home where N routines, each running
//! `true`, are due in the same minute (`max_parallel = 4`: scheduled runs get 3 lanes); the time
//! from that minute until every run is final (read from the database as the daemon writes it),
//! with runs lost and duplicated; against a baseline that spawns the same N processes 3 at a time
//! with no engine, in the same run. The in-process figure is `engine`'s burst table.
//! The bench waits for the next minute boundary (up to a minute) before it measures.
//! `NIGHTSHIFT_BENCH_QUICK=1`: 100 routines.

use chrono::{Timelike, Utc};
use nightshift_testkit::bench::fmt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let n = if quick { 100 } else { 500 };
    let home = tempfile::tempdir().unwrap();
    // The minute the routines are due: at least 8 s away, so the daemon is up and idle by then.
    let now = Utc::now();
    let mut due = now.with_second(0).unwrap().with_nanosecond(0).unwrap() + chrono::Duration::minutes(1);
    if due - now < chrono::Duration::seconds(8) {
        due += chrono::Duration::minutes(1);
    }
    std::fs::create_dir_all(home.path().join("routines")).unwrap();
    std::fs::write(home.path().join("nightshift.toml"), "max_parallel = 4\nauto_pause_after = 0\n").unwrap();
    for i in 0..n {
        let routine = format!("schedule: \"{} {} * * *\"\ntimezone: UTC\ncommand: \"true\"\n", due.minute(), due.hour());
        std::fs::write(home.path().join(format!("routines/r{i:04}.yaml")), routine).unwrap();
    }
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_nightshiftctl"))
        .arg("daemon")
        .env("NIGHTSHIFT_HOME", home.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let db = home.path().join("nightshift.db");
    nightshift_testkit::wait_until("the daemon's database", Duration::from_secs(8), || db.exists());
    std::thread::sleep((due - Utc::now()).to_std().unwrap_or_default());
    let start = Instant::now();
    let conn = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let count = |sql: &str| -> usize { conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap_or(0) as usize };
    let limit = Duration::from_secs(120);
    while count("SELECT COUNT(*) FROM runs WHERE status NOT IN ('queued', 'running')") < n && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = start.elapsed();
    // SAFETY: plain signal to our own child.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    let _ = daemon.wait();
    let rows = count("SELECT COUNT(*) FROM runs");
    let first_start: String = conn.query_row("SELECT MIN(started_at) FROM runs", [], |r| r.get(0)).unwrap_or_default();
    let last_end: String = conn.query_row("SELECT MAX(finished_at) FROM runs", [], |r| r.get(0)).unwrap_or_default();
    let since_due = |t: &str| chrono::DateTime::parse_from_rfc3339(t).map(|t| (t.with_timezone(&Utc) - due).num_milliseconds()).unwrap_or(-1);
    println!("first run started {} ms after the minute; the last one finished {} ms after it", since_due(&first_start), since_due(&last_end));
    let completed = count("SELECT COUNT(*) FROM runs WHERE status = 'completed'");
    let slots = count("SELECT COUNT(DISTINCT routine) FROM runs");
    let (lost, duplicated) = (n - slots, rows - slots);

    // Baseline: the same processes, 3 at a time (the lanes scheduled runs get), no engine.
    let base = nightshift_testkit::bench::spawn_in_lanes(n, 3);
    println!("Burst, whole process: {n} routines due in one minute under `nightshiftctl daemon`, max_parallel = 4, command `true` each ({})", if quick { "quick" } else { "full" });
    println!("{:>8} {:>10} {:>8} {:>11} {:>12} {:>14} {:>16}", "runs", "completed", "lost", "duplicated", "baseline", "nightshift", "overhead per run");
    let per_run = took.saturating_sub(base) / n as u32;
    println!("{:>8} {:>10} {:>8} {:>11} {:>12} {:>14} {:>16}", n, completed, lost, duplicated, fmt(base), fmt(took), fmt(per_run));
    assert_eq!((lost, duplicated), (0, 0), "no run lost or duplicated");
}
