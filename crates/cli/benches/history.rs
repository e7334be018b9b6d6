//! History pages as a whole process: `nightshiftctl runs …` and `show PREFIX` on a home with
//! 1 000 000 runs (20 routines, a quarter failed), every filter combination, against the peer's
//! way in the same run — Node walking the runs directory and parsing every run's metadata file
//! (`benches/baseline/history.mjs`) — on 100 000 run directories (a million small files takes
//! minutes to create; the baseline's cost grows linearly with them). Medians of 7; the first
//! row is the floor: starting the process (`--version`).
//! `NIGHTSHIFT_BENCH_QUICK=1`: 100 000 runs and 10 000 directories.

use nightshift_testkit::bench::{fmt, measure};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[path = "support/seed.rs"]
mod seed;
use seed::{seed, t0_ms, ROUTINES};

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let (rows, dirs) = if quick { (100_000, 10_000) } else { (1_000_000, 100_000) };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    seed(&home, rows);
    let runs_dir = tmp.path().join("baseline-runs");
    seed_dirs(&runs_dir, dirs);

    println!("History pages, whole process: nightshift on {rows} runs, node on {dirs} run directories");
    println!("{:<52} {:>12} {:>10}", "query", "time", "peak");
    let deep = format!("{}:{:026}", t0_ms() + (rows as i64 / 2) * 60_000, rows / 2);
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("process start (--version): the floor", vec!["--version".into()]),
        ("runs (newest 50)", vec!["runs".into()]),
        ("runs --routine R", vec!["runs".into(), "--routine".into(), "routine-7".into()]),
        ("runs --status failed", vec!["runs".into(), "--status".into(), "failed".into()]),
        ("runs --routine R --status failed", vec!["runs".into(), "--routine".into(), "routine-7".into(), "--status".into(), "failed".into()]),
        ("runs --routine R --status cancelled (none)", vec!["runs".into(), "--routine".into(), "routine-7".into(), "--status".into(), "cancelled".into()]),
        ("runs --cursor (a page halfway back)", vec!["runs".into(), "--cursor".into(), deep]),
        ("show ID-PREFIX (8 characters)", vec!["show".into(), format!("{:026}", rows / 3)[..8].to_string()]),
        ("show ID-PREFIX (unique, 24 characters)", vec!["show".into(), format!("{:026}", rows / 3)[..24].to_string()]),
    ];
    for (name, args) in cases {
        let (time, peak) = median(7, || {
            let m = measure(Command::new(env!("CARGO_BIN_EXE_nightshiftctl")).args(&args).env("NIGHTSHIFT_HOME", &home).env("NIGHTSHIFT_SKIP_KEYCHAIN", "1"));
            // An ambiguous prefix is a clear error (exit 2), never a scan.
            assert!(matches!(m.code, Some(0) | Some(2)), "{name}: exit {:?}", m.code);
            m
        });
        println!("{:<52} {:>12} {:>6} MiB", format!("nightshift: {name}"), fmt(time), peak / 1024);
    }
    let node = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/baseline/history.mjs");
    for (name, filter) in [("all (newest 50)", vec![]), ("--routine R --status failed", vec!["routine-7", "failed"])] {
        let (time, peak) = median(3, || measure(Command::new("node").arg(&node).arg(&runs_dir).args(&filter)));
        println!("{:<52} {:>12} {:>6} MiB", format!("node ({dirs} dirs): {name}"), fmt(time), peak / 1024);
    }
}

fn median(n: usize, mut run: impl FnMut() -> nightshift_testkit::bench::Measured) -> (Duration, u64) {
    let mut all: Vec<_> = (0..n).map(|_| run()).collect();
    all.sort_by_key(|m| m.time);
    (all[n / 2].time, all[n / 2].peak_kib)
}

/// The peer's layout: one directory per run with its metadata file.
fn seed_dirs(dir: &Path, n: usize) {
    for i in 0..n {
        let routine = format!("routine-{}", i % ROUTINES);
        let d = dir.join(&routine).join(format!("{i:026}"));
        std::fs::create_dir_all(&d).unwrap();
        let at = chrono::DateTime::from_timestamp_millis(t0_ms() + i as i64 * 60_000).unwrap();
        let status = if (i / ROUTINES) % 4 == 3 { "failed" } else { "completed" };
        let meta = format!(r#"{{"id":"{i:026}","routine":"{routine}","status":"{status}","started_at":"{}","trigger":"schedule","exit_code":0}}"#, nightshift_core::words::fmt_time(&at));
        std::fs::write(d.join("meta.json"), meta).unwrap();
    }
}
