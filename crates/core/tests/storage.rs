//! What the engine tells the faces (tray attention, the window's header) about the home itself:
//! a full disk — asked of the real file system each time, so it clears once space is freed —
//! and a damaged database found before scheduling.

use nightshift_core::EngineOptions;
use nightshift_testkit::{TestHome, Tmpfs};

#[test]
fn a_full_disk_is_a_problem_until_space_is_freed() {
    let Some(fs) = Tmpfs::mount(4 * 1024) else { return };
    let home = fs.path().join("home");
    let engine = EngineOptions::for_test(&home).open();
    assert_eq!(engine.problems(), Vec::<String>::new());
    let filler = fs.fill(100);
    let problems = engine.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with(&format!("the disk holding {} is full (", home.display())), "{problems:?}");
    std::fs::remove_file(filler).unwrap();
    assert_eq!(engine.problems(), Vec::<String>::new());
}

#[test]
fn a_damaged_database_is_a_problem_named_with_its_file() {
    let th = TestHome::new();
    let db = th.path().join("nightshift.db");
    {
        let engine = EngineOptions::for_test(th.path()).open();
        assert!(engine.check_database().is_ok());
        assert!(engine.problems().is_empty());
    }
    // Grow the file past a few pages, checkpoint it, then overwrite a page in the middle.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE filler(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 2000) INSERT INTO filler SELECT randomblob(100) FROM n;").unwrap();
    let _ = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
    drop(conn);
    use std::os::unix::fs::FileExt;
    std::fs::OpenOptions::new().write(true).open(&db).unwrap().write_all_at(&[0xAB; 4096], 8 * 4096).unwrap();

    let engine = EngineOptions::for_test(th.path()).open();
    let err = engine.check_database().unwrap_err();
    let problems = engine.problems();
    assert_eq!(problems, vec![err.message.clone()]);
    assert!(problems[0].contains(&format!("the database {} is damaged", db.display())), "{problems:?}");
}

/// A long-lived engine (the app, the daemon) whose run ended on a full disk tells the waiter at
/// once, shows the problem, and records the run by itself once space is freed — with the exit
/// code it saw, announced like any other run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_could_not_be_recorded_is_recorded_once_space_is_freed() {
    let Some(fs) = Tmpfs::mount(3 * 1024) else { return };
    let home = fs.path().join("home");
    std::fs::create_dir_all(home.join("routines")).unwrap();
    std::fs::write(home.join("routines/job.yaml"), "name: job\nschedule: \"0 3 * * *\"\ncommand: \"head -c 8000000 /dev/zero || exit 7\"\n").unwrap();
    let engine = EngineOptions::for_test(&home).open();
    let mut events = engine.subscribe();

    let handle = engine.run_now("job", nightshift_core::run::Trigger::Manual).await.unwrap();
    let id = handle.id.clone();
    let err = handle.wait().await.unwrap_err();
    assert!(err.message.contains("ended failed (exit code 7) but could not be recorded"), "{}", err.message);
    assert!(engine.problems().iter().any(|p| p == &err.message), "{:?}", engine.problems());

    std::fs::remove_file(home.join("runs/job").join(&id).join("stdout.log")).unwrap();
    let finished = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            if let Ok(nightshift_core::events::EngineEvent::RunFinished { run }) = events.recv().await {
                return run;
            }
        }
    })
    .await
    .expect("the run is recorded and announced within the retry interval");
    assert_eq!((finished.id.as_str(), finished.status, finished.exit_code), (id.as_str(), nightshift_core::run::RunStatus::Failed, Some(7)));
    assert!(engine.problems().is_empty(), "{:?}", engine.problems());
}
