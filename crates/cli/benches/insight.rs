//! `why` and `usage` on a big history, in-process and as a whole process, each against the naive
//! way in the same run (read every run of the history and work it out in memory).
//!
//! The home: a per-minute routine with 90 days of slots on record (129 600 runs, every fate a
//! slot can have: ran, failed, missed, skipped; presence with nights asleep), plus runs of 20 other
//! routines over two years to 1 000 000 runs in all, usage figures on each. Medians of 7.
//! Whole-process rows show time only: this bench's own process holds the seeded home, and a
//! child's peak memory as the kernel reports it starts from its parent's.
//! `NIGHTSHIFT_BENCH_QUICK=1`: 7 days of the per-minute routine and 100 000 runs.

use chrono::{DateTime, Duration as Span, Utc};
use nightshift_core::store::UsageBy;
use nightshift_core::words::fmt_time;
use nightshift_core::{Engine, EngineOptions, Home};
use nightshift_testkit::bench::{fmt, measure};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let (days, total) = if quick { (7i64, 100_000usize) } else { (90, 1_000_000) };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let now = Utc::now();
    seed(&home, now, days, total);
    let mut opts = EngineOptions::new(Home::at(&home));
    opts.env = vec![("NIGHTSHIFT_SKIP_KEYCHAIN".into(), "1".into())];
    let engine = Engine::open(opts).unwrap();
    let db = home.join("nightshift.db");

    println!("why over {days} days of a per-minute routine, usage over {total} runs (medians of 7)");
    println!("{:<62} {:>10}", "", "time");
    let why = nightshift_core::view::why::why(&engine, "minutely", days as u32).unwrap();
    assert!(why.lines.len() > days as usize * 1000, "{} lines", why.lines.len());
    let t = median_in(7, || {
        nightshift_core::view::why::why(&engine, "minutely", days as u32).unwrap();
    });
    println!("{:<62} {:>10}", "in-process: Engine::why (index range + presence + events)", fmt(t));
    let t = median_in(3, || {
        naive_why(&db, "minutely", now - Span::days(days));
    });
    println!("{:<62} {:>10}", "in-process: naive why (every run read, filtered in memory)", fmt(t));
    let t = median_in(7, || {
        engine.usage(UsageBy::Day, now - Span::days(30)).unwrap();
    });
    println!("{:<62} {:>10}", "in-process: Engine::usage by day, 30 days (index range)", fmt(t));
    let t = median_in(3, || {
        naive_usage(&db, now - Span::days(30));
    });
    println!("{:<62} {:>10}", "in-process: naive usage (every run read, summed in memory)", fmt(t));

    let ctl = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_nightshiftctl"));
        c.args(args).env("NIGHTSHIFT_HOME", &home).env("NIGHTSHIFT_SKIP_KEYCHAIN", "1");
        c
    };
    let d = days.to_string();
    for (name, args) in [
        ("whole process: --version (the floor)", vec!["--version"]),
        ("whole process: why minutely --days N --json", vec!["why", "minutely", "--days", &d, "--json"]),
        ("whole process: why minutely (7 days, text)", vec!["why", "minutely"]),
        ("whole process: usage --by day --since 30d", vec!["usage", "--by", "day", "--since", "30d"]),
        ("whole process: usage --by routine --since 90d", vec!["usage", "--by", "routine", "--since", "90d"]),
        ("whole process: prune --dry-run (retention's candidates)", vec!["prune", "--dry-run"]),
    ] {
        let (time, _) = median_out(7, || {
            let m = measure(&mut ctl(&args));
            assert_eq!(m.code, Some(0), "{name}");
            m
        });
        println!("{:<62} {:>10}", name, fmt(time));
    }
}

fn median_in(n: usize, mut f: impl FnMut()) -> Duration {
    let mut all: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    all.sort();
    all[n / 2]
}

fn median_out(n: usize, mut run: impl FnMut() -> nightshift_testkit::bench::Measured) -> (Duration, u64) {
    let mut all: Vec<_> = (0..n).map(|_| run()).collect();
    all.sort_by_key(|m| m.time);
    (all[n / 2].time, all[n / 2].peak_kib)
}

/// The naive why: read every run, keep the routine's slots in the window, match them by time.
fn naive_why(db: &Path, routine: &str, from: DateTime<Utc>) -> usize {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT routine, scheduled_for, id, status, message FROM runs").unwrap();
    let mut slots = std::collections::BTreeMap::new();
    let from = fmt_time(&from);
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?, r.get::<_, Option<String>>(4)?)))
        .unwrap();
    for row in rows {
        let (r, slot, id, status, message) = row.unwrap();
        if r == routine && slot.as_deref().is_some_and(|s| s >= from.as_str()) {
            slots.insert(slot.unwrap(), (id, status, message));
        }
    }
    slots.len()
}

/// The naive usage: read every run, sum the window's per day.
fn naive_usage(db: &Path, since: DateTime<Utc>) -> usize {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT sort_ms, status, input_tokens, output_tokens, cost_usd FROM runs").unwrap();
    let mut days: std::collections::BTreeMap<i64, (u64, i64, i64, f64)> = Default::default();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, Option<i64>>(2)?, r.get::<_, Option<i64>>(3)?, r.get::<_, Option<f64>>(4)?))).unwrap();
    for row in rows {
        let (ms, status, i, o, c) = row.unwrap();
        if ms >= since.timestamp_millis() && matches!(status.as_str(), "completed" | "failed" | "timed_out" | "cancelled") {
            let e = days.entry(ms / 86_400_000).or_default();
            *e = (e.0 + 1, e.1 + i.unwrap_or(0), e.2 + o.unwrap_or(0), e.3 + c.unwrap_or(0.0));
        }
    }
    days.len()
}

/// The home (setup, not measured): the routine, its scheduler state and presence, its slots'
/// rows, and other routines' runs up to `total`.
fn seed(home: &Path, now: DateTime<Utc>, days: i64, total: usize) {
    std::fs::create_dir_all(home.join("routines")).unwrap();
    std::fs::write(home.join("routines/minutely.yaml"), "schedule: \"* * * * *\"\ntimezone: UTC\ncommand: \"true\"\n").unwrap();
    let db = home.join("nightshift.db");
    drop(nightshift_core::store::Store::open(&db).unwrap());
    let mut conn = rusqlite::Connection::open(&db).unwrap();
    let tx = conn.transaction().unwrap();
    let start = (now - Span::days(days + 1)).timestamp() / 60 * 60;
    let at = |minute: i64| DateTime::<Utc>::from_timestamp(start + minute * 60, 0).unwrap();
    tx.execute("INSERT INTO routine_state (routine, first_seen, checked_until) VALUES ('minutely', ?1, ?2)", rusqlite::params![fmt_time(&at(0)), fmt_time(&now)]).unwrap();
    {
        // Awake 07:00–01:00 each day, asleep at night (whose slots are recorded missed).
        let mut p = tx.prepare("INSERT INTO presence (device, who, pid, started_at, last_seen, ended) VALUES (?1, 'nightshiftctl daemon (pid 1)', 1, ?2, ?3, 'asleep')").unwrap();
        let device = nightshift_core::Engine::open(EngineOptions::new(Home::at(home))).unwrap().device_name();
        for d in 0..=days + 1 {
            p.execute(rusqlite::params![device, fmt_time(&at(d * 1440 - 17 * 60)), fmt_time(&at(d * 1440))]).unwrap();
        }
        let mut stmt = tx
            .prepare(
                "INSERT INTO runs (id, routine, trigger, agent, sort_ms, scheduled_for, started_at, finished_at, status, reason, message, run_dir, duration_ms, input_tokens, output_tokens, cost_usd)
                 VALUES (?1, ?2, 'schedule', 'command', ?3, ?4, ?5, ?5, ?6, ?7, ?8, '/nonexistent', 800, ?9, ?10, ?11)",
            )
            .unwrap();
        let minutes = (days + 1) * 1440;
        let mut n = 0usize;
        for m in 0..minutes {
            let t = at(m);
            let night = (m % 1440) < 6 * 60;
            let (status, reason, message) = match m % 97 {
                _ if night => ("missed", Some("superseded"), Some("missed while Nightshift was not running; superseded by the run for later")),
                0 => ("failed", None, Some("exited with code 1")),
                1 => ("skipped", Some("active_run"), Some("skipped: the previous run (x) was still running")),
                _ => ("completed", None, None),
            };
            stmt.execute(rusqlite::params![format!("m{m:025}"), "minutely", t.timestamp_millis(), fmt_time(&t), fmt_time(&t), status, reason, message, 1000, 200, 0.002]).unwrap();
            n += 1;
        }
        // The rest of a million runs over two years, one every ~70 s, up to now.
        let rest = total.saturating_sub(n);
        let span_ms = Span::days(730).num_milliseconds();
        let step = span_ms / rest.max(1) as i64;
        for i in 0..rest {
            let ms = now.timestamp_millis() - span_ms + i as i64 * step;
            let t = DateTime::<Utc>::from_timestamp_millis(ms).unwrap();
            stmt.execute(rusqlite::params![format!("o{i:025}"), format!("routine-{}", i % 20), ms, None::<String>, fmt_time(&t), "completed", None::<String>, None::<String>, 5000, 900, 0.03]).unwrap();
        }
    }
    tx.commit().unwrap();
    let _ = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
}
