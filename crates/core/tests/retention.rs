//! Retention with real runs, files and a fake clock: old runs lose their files and keep their
//! records; the newest completed run of a routine, running runs and runs that still owe a
//! notification within its day are never touched; a prune killed mid-way leaves no half-deleted
//! run behind.

use chrono::{Duration, TimeZone, Utc};
use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::{Engine, EngineOptions, ManualClock};
use nightshift_testkit::TestHome;
use std::path::Path;
use std::sync::Arc;

fn engine(th: &TestHome, clock: &Arc<ManualClock>) -> Engine {
    EngineOptions::for_test(th.path()).clock(Arc::clone(clock) as _).open()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_runs_lose_their_files_and_keep_their_records() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "keep_runs_days = 30\nkeep_runs_per_routine = 3\n").unwrap();
    th.routine("job", "schedule: \"0 3 * * *\"\ncommand: \"echo report line\"\n");
    th.routine("slow", "schedule: \"0 3 * * *\"\ncommand: \"sleep 30\"\ntimeout: 1h\n");
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 1, 9, 0, 0).unwrap()));
    let engine = engine(&th, &clock);
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(engine.run_now("job", Trigger::Manual).await.unwrap().wait().await.unwrap().id);
        clock.advance(Duration::minutes(1));
    }
    let dir = |id: &str| th.path().join("runs/job").join(id);
    // Within the day their notifications are owed (nobody delivered them here): nothing goes.
    assert!(engine.prune_runs(false).await.is_empty());

    // Two days on: only the count rule applies — the two oldest go, the newest three stay.
    clock.advance(Duration::days(2));
    let dry = engine.prune_runs(true).await;
    assert_eq!(dry.iter().map(|p| p.run_id.as_str()).collect::<Vec<_>>(), [ids[0].as_str(), ids[1].as_str()]);
    assert!(dry.iter().all(|p| !p.removed && p.bytes > 0) && dir(&ids[0]).is_dir());
    let pruned = engine.prune_runs(false).await;
    assert_eq!(pruned.iter().map(|p| (p.run_id.as_str(), p.removed)).collect::<Vec<_>>(), [(ids[0].as_str(), true), (ids[1].as_str(), true)]);
    for id in &ids[..2] {
        assert!(!dir(id).exists() && !Path::new(&format!("{}.pruning", dir(id).display())).exists());
        let rec = engine.run(id).unwrap();
        assert_eq!((rec.status, rec.exit_code, rec.report_path.as_deref()), (RunStatus::Completed, Some(0), None));
        assert_eq!(rec.pruned_at, Some(nightshift_core::Clock::now(&*clock)));
        let log = nightshift_core::view::log::run_log(&engine, id, nightshift_core::view::log::LogStream::Stdout, 0, true).unwrap_err();
        assert!(log.message.contains("was removed") && log.message.contains("by retention"), "{}", log.message);
    }
    assert!(ids[2..].iter().all(|id| dir(id).is_dir()));

    // Forty days on, with a run going: everything old goes but the newest completed run (the
    // next run's {last_report}) and the running one.
    let slow = engine.run_now("slow", Trigger::Manual).await.unwrap();
    clock.advance(Duration::days(40));
    let pruned = engine.prune_runs(false).await;
    assert_eq!(pruned.iter().map(|p| p.run_id.as_str()).collect::<Vec<_>>(), [ids[2].as_str(), ids[3].as_str()]);
    assert!(dir(&ids[4]).is_dir(), "the newest completed run lost its report");
    assert!(th.path().join("runs/slow").join(&slow.id).is_dir(), "a running run was pruned");
    assert!(engine.cancel(&slow.id).await);
    slow.wait().await.unwrap();

    // Killed mid-prune, between renaming two runs' directories and marking them: the next prune
    // marks both and deletes what is left; the newest completed run stays whole.
    let a = engine.run_now("job", Trigger::Manual).await.unwrap().wait().await.unwrap().id;
    let b = engine.run_now("job", Trigger::Manual).await.unwrap().wait().await.unwrap().id;
    for id in [&ids[4], &a] {
        std::fs::rename(dir(id), format!("{}.pruning", dir(id).display())).unwrap();
    }
    engine.prune_runs(false).await;
    for id in [&ids[4], &a] {
        assert!(engine.run(id).unwrap().pruned_at.is_some(), "a renamed run was not marked");
        assert!(!Path::new(&format!("{}.pruning", dir(id).display())).exists());
    }
    assert!(dir(&b).is_dir() && engine.run(&b).unwrap().pruned_at.is_none());
    let leftovers = std::fs::read_dir(th.path().join("runs/job")).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().ends_with(".pruning")).count();
    assert_eq!(leftovers, 0);
}

/// At scale: a home with 100 000 runs of 10 routines over 200 days and 2 GB of logs (sparse
/// files: the size is real to every reader, the disk is spared) is pruned to the policy, batch
/// after batch as the hourly pass does, without touching a running or a queued run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_home_of_100k_runs_and_2_gb_of_logs_is_pruned_to_the_policy() {
    const RUNS: usize = 100_000;
    const LOG: u64 = 20 * 1024; // × 100 000 = 2 GB
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "keep_runs_days = 30\nkeep_runs_per_routine = 1000\n").unwrap();
    let now = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let engine = engine(&th, &clock);
    let db = rusqlite::Connection::open(th.path().join("nightshift.db")).unwrap();
    let runs_dir = th.path().join("runs");
    {
        let tx = db.unchecked_transaction().unwrap();
        let mut stmt = tx
            .prepare("INSERT INTO runs (id, routine, trigger, agent, sort_ms, started_at, finished_at, status, run_dir) VALUES (?1, ?2, 'schedule', 'command', ?3, ?4, ?4, ?5, ?6)")
            .unwrap();
        let span = Duration::days(200).num_milliseconds() / RUNS as i64;
        for i in 0..RUNS + 2 {
            let routine = format!("r{}", i % 10);
            let at = now - Duration::days(200) + Duration::milliseconds(span * i as i64);
            // The last two: a run still going and one waiting, both started long ago.
            let (status, at) = match i {
                i if i == RUNS => ("running", now - Duration::days(100)),
                i if i == RUNS + 1 => ("queued", now - Duration::days(100)),
                i if i % 5 == 0 => ("failed", at),
                _ => ("completed", at),
            };
            let id = format!("{i:026}");
            let dir = runs_dir.join(&routine).join(&id);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::File::create(dir.join("stdout.log")).unwrap().set_len(LOG).unwrap();
            stmt.execute(rusqlite::params![id, routine, at.timestamp_millis(), nightshift_core::words::fmt_time(&at), status, dir.to_string_lossy()]).unwrap();
        }
        drop(stmt);
        tx.commit().unwrap();
    }
    // What one run's directory takes on the disk (allocated blocks: the logs here are sparse);
    // every run's is the same.
    let per_run = nightshift_core::fsutil::disk_usage(&runs_dir.join("r0").join(format!("{:026}", 0)));
    let mut removed = Vec::new();
    loop {
        let batch = engine.prune_runs(false).await;
        if batch.is_empty() {
            break;
        }
        assert!(batch.len() <= 10_000, "one pass removes at most a batch");
        removed.extend(batch);
    }
    // Each routine keeps its newest 1000 (all within the 30 days); the rest lost their files.
    assert_eq!(removed.len(), RUNS - 10 * 1000);
    assert_eq!(removed.iter().map(|p| p.bytes).sum::<u64>(), (RUNS as u64 - 10_000) * per_run);
    assert!(removed.iter().all(|p| p.removed));
    let kept: Vec<(String, i64)> = db
        .prepare("SELECT routine, COUNT(*) FROM runs WHERE pruned_at IS NULL AND status NOT IN ('running', 'queued') GROUP BY routine")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(kept.len(), 10);
    assert!(kept.iter().all(|(_, n)| *n == 1000), "{kept:?}");
    let records: i64 = db.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0)).unwrap();
    assert_eq!(records, RUNS as i64 + 2, "every record stays");
    // Files and records agree, run by run; the live runs are untouched.
    let mut stmt = db.prepare("SELECT run_dir, pruned_at IS NOT NULL FROM runs").unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?))).unwrap();
    for row in rows {
        let (dir, pruned) = row.unwrap();
        assert_eq!(Path::new(&dir).exists(), !pruned, "{dir}");
    }
    for id in [RUNS, RUNS + 1] {
        assert!(runs_dir.join(format!("r{}", id % 10)).join(format!("{id:026}/stdout.log")).exists());
    }
}
