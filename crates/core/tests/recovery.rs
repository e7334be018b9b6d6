//! Crash recovery: runs left `running` by an engine that died are settled from their files or
//! re-adopted while still alive — never lost, never settled twice.

use chrono::Utc;
use nightshift_core::events::EngineEvent;
use nightshift_core::run::{Reason, RunStatus, Trigger};
use nightshift_core::runner::process::{self, SpawnSpec};
use nightshift_core::store::NewRun;
use nightshift_core::{Engine, EngineOptions, RecoveryMode};
use nightshift_testkit::TestHome;
use std::collections::BTreeMap;
use std::time::Duration;

/// The identity of a process that has exited: an owner engine that is gone.
fn dead_owner() -> (u32, String) {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    (pid, "0".into())
}

fn engine(th: &TestHome) -> Engine {
    EngineOptions::for_test(th.path()).open()
}

/// Insert a `running` row as a crashed engine would have left it.
fn orphan_row(engine: &Engine, th: &TestHome, id: &str, agent: &str, pid: Option<(u32, Option<String>)>) -> std::path::PathBuf {
    owned_row(engine, th, id, agent, pid, dead_owner())
}

/// Insert a `running` row supervised by `owner`.
fn owned_row(engine: &Engine, th: &TestHome, id: &str, agent: &str, pid: Option<(u32, Option<String>)>, owner: (u32, String)) -> std::path::PathBuf {
    row_on(engine, th, id, agent, pid, owner, None)
}

/// Insert a `running` row supervised by `owner`, on `account`.
fn row_on(engine: &Engine, th: &TestHome, id: &str, agent: &str, pid: Option<(u32, Option<String>)>, owner: (u32, String), account: Option<&str>) -> std::path::PathBuf {
    let run_dir = th.path().join("runs/job").join(id);
    std::fs::create_dir_all(&run_dir).unwrap();
    engine
        .store()
        .insert_run(&NewRun {
            id: id.into(),
            routine: "job".into(),
            trigger: Trigger::Schedule,
            agent: nightshift_core::words::Agent::parse(agent).unwrap(),
            status: RunStatus::Running,
            reason: None,
            message: None,
            finished_at: None,
            scheduled_for: None,
            started_at: Some(Utc::now()),
            account: account.map(str::to_string),
            run_dir: run_dir.display().to_string(),
            owner: Some(owner),
            sort_at: Utc::now(),
        })
        .unwrap();
    if let Some((pid, start)) = pid {
        engine.store().set_process(id, pid, start.as_deref()).unwrap();
    }
    run_dir
}

async fn spawn_sh(run_dir: &std::path::Path, script: &str) -> process::RunProcess {
    let spec = SpawnSpec {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
        cwd: None,
        run_dir: run_dir.to_path_buf(),
        timeout: None,
        kill_grace: Duration::from_secs(1),
        scrubber: None,
    };
    process::spawn(&spec).unwrap()
}

#[tokio::test]
async fn a_finished_orphan_is_settled_from_its_exit_code_file_and_log() {
    let th = TestHome::new();
    th.routine("job", "schedule: \"0 * * * *\"\ncommand: echo\n");
    let engine = engine(&th);
    let run_dir = th.path().join("runs/job/r1");
    let mut p = spawn_sh(&run_dir, "echo finished while nobody watched").await;
    p.child.wait().await.unwrap();
    orphan_row(&engine, &th, "r1", "command", Some((p.pid, p.start_time.clone())));

    let settled = engine.recover(RecoveryMode::SettleFinished).await.unwrap();
    assert_eq!(settled, vec!["r1"]);
    let rec = engine.store().get_run("r1").unwrap();
    assert_eq!((rec.status, rec.exit_code), (RunStatus::Completed, Some(0)));
    assert_eq!(std::fs::read_to_string(rec.report_path.unwrap()).unwrap(), "finished while nobody watched");
    // Idempotent: nothing left to do, nothing settled twice.
    assert!(engine.recover(RecoveryMode::Adopt).await.unwrap().is_empty());
}

/// A run whose process began but whose pid could not be written (a full disk refused the write
/// while the run filled it) is settled from its files — its own exit code — never queued to run a
/// second time; one whose spawn never happened still goes back to the queue.
#[tokio::test]
async fn a_run_that_began_without_its_pid_on_record_is_settled_not_run_again() {
    let th = TestHome::new();
    th.routine("job", "schedule: \"0 * * * *\"\ncommand: echo\n");
    let engine = engine(&th);
    let run_dir = th.path().join("runs/job/r9");
    let mut p = spawn_sh(&run_dir, "echo ran; exit 7").await;
    p.child.wait().await.unwrap();
    orphan_row(&engine, &th, "r9", "command", None);
    let settled = engine.recover(RecoveryMode::SettleFinished).await.unwrap();
    assert_eq!(settled, vec!["r9"]);
    let rec = engine.store().get_run("r9").unwrap();
    assert_eq!((rec.status, rec.exit_code), (RunStatus::Failed, Some(7)), "{rec:?}");
    // No run directory at all: its engine died before the spawn — back to the queue.
    orphan_row(&engine, &th, "r10", "command", None);
    std::fs::remove_dir_all(th.path().join("runs/job/r10")).unwrap();
    engine.recover(RecoveryMode::SettleFinished).await.unwrap();
    assert_eq!(engine.store().get_run("r10").unwrap().status, RunStatus::Queued);
}

#[tokio::test]
async fn a_vanished_process_without_a_result_is_interrupted() {
    let th = TestHome::new();
    let engine = engine(&th);
    let run_dir = orphan_row(&engine, &th, "r2", "claude", Some((dead_owner().0, Some("1".into()))));
    let truncated = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-2.1.332/truncated.jsonl")).unwrap();
    std::fs::write(run_dir.join("stdout.log"), truncated).unwrap();
    engine.recover(RecoveryMode::SettleFinished).await.unwrap();
    let rec = engine.store().get_run("r2").unwrap();
    assert_eq!((rec.status, rec.reason), (RunStatus::Failed, Some(Reason::Interrupted)));
    assert!(rec.message.unwrap().starts_with("interrupted"));
}

#[tokio::test]
async fn a_vanished_process_whose_log_has_a_result_keeps_that_outcome() {
    let th = TestHome::new();
    let engine = engine(&th);
    let run_dir = orphan_row(&engine, &th, "r3", "claude", Some((dead_owner().0, Some("1".into()))));
    let success = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-2.1.332/success.jsonl")).unwrap();
    std::fs::write(run_dir.join("stdout.log"), success).unwrap();
    engine.recover(RecoveryMode::SettleFinished).await.unwrap();
    let rec = engine.store().get_run("r3").unwrap();
    assert_eq!(rec.status, RunStatus::Completed);
    assert!(rec.cost_usd.unwrap() > 0.0);
}

#[tokio::test]
async fn a_row_whose_process_never_started_goes_back_to_the_queue_and_runs() {
    let th = TestHome::new();
    th.routine("job", "schedule: \"0 * * * *\"\ncommand: echo ran after all\n");
    let engine = engine(&th);
    orphan_row(&engine, &th, "r4", "command", None);
    // A short-lived command only says who will start it.
    engine.recover(RecoveryMode::SettleFinished).await.unwrap();
    let rec = engine.store().get_run("r4").unwrap();
    assert_eq!(rec.status, RunStatus::Queued);
    assert!(rec.message.as_deref().unwrap().contains("starts when the Nightshift app or `nightshiftctl daemon` runs"), "{rec:?}");
    // A long-running engine adopts it and its queue starts it: nothing was lost.
    let mut events = engine.subscribe();
    let other = EngineOptions::for_test(th.path()).open();
    drop(engine);
    assert_eq!(other.recover(RecoveryMode::Adopt).await.unwrap(), Vec::<String>::new(), "queued, not running: nothing to adopt as running");
    other.until_idle(Duration::from_secs(10)).await;
    let done = other.store().get_run("r4").unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(std::fs::read_to_string(done.report_path.unwrap()).unwrap(), "ran after all");
    let _ = events.try_recv();
}

#[tokio::test]
async fn a_live_orphan_is_left_to_long_running_engines_and_then_adopted() {
    let th = TestHome::new();
    th.routine("job", "schedule: \"0 * * * *\"\ncommand: echo\n");
    let engine = engine(&th);
    let run_dir = th.path().join("runs/job/r5");
    let p = spawn_sh(&run_dir, "sleep 1; echo adopted and finished").await;
    orphan_row(&engine, &th, "r5", "command", Some((p.pid, p.start_time.clone())));

    assert!(engine.recover(RecoveryMode::SettleFinished).await.unwrap().is_empty());
    assert_eq!(engine.store().get_run("r5").unwrap().status, RunStatus::Running);

    let mut events = engine.subscribe();
    assert_eq!(engine.recover(RecoveryMode::Adopt).await.unwrap(), vec!["r5"]);
    let finished = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(EngineEvent::RunFinished { run }) = events.recv().await {
                return run;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(finished.id, "r5");
    assert_eq!(finished.status, RunStatus::Completed);
    assert_eq!(std::fs::read_to_string(finished.report_path.unwrap()).unwrap(), "adopted and finished");
    drop(p);
}

#[tokio::test]
async fn runs_supervised_by_a_live_engine_are_not_touched() {
    let th = TestHome::new();
    let engine = engine(&th);
    // Another live process (standing in for a daemon) owns the run.
    let mut owner = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let run_dir = th.path().join("runs/job/r6");
    std::fs::create_dir_all(&run_dir).unwrap();
    engine
        .store()
        .insert_run(&NewRun {
            id: "r6".into(),
            routine: "job".into(),
            trigger: Trigger::Manual,
            agent: nightshift_core::words::Agent::Command,
            status: RunStatus::Running,
            reason: None,
            message: None,
            finished_at: None,
            scheduled_for: None,
            started_at: Some(Utc::now()),
            account: None,
            run_dir: run_dir.display().to_string(),
            owner: Some((owner.id(), process::process_start_time(owner.id()).unwrap())),
            sort_at: Utc::now(),
        })
        .unwrap();
    assert!(engine.recover(RecoveryMode::Adopt).await.unwrap().is_empty());
    assert_eq!(engine.store().get_run("r6").unwrap().status, RunStatus::Running);
    owner.kill().unwrap();
    owner.wait().unwrap();
    // Its owner is gone now, and so is its (never started) process: recovery settles it.
    assert_eq!(engine.recover(RecoveryMode::SettleFinished).await.unwrap(), vec!["r6"]);
}

#[tokio::test]
async fn runs_of_an_earlier_process_with_this_pid_are_recovered() {
    // The row's owner had this engine's pid but another identity: an earlier process, gone.
    let th = TestHome::new();
    th.routine("job", "schedule: \"0 * * * *\"\ncommand: echo\n");
    let (pid, start) = process::self_identity();
    let earlier = (pid, start.clone());
    let mut opts = EngineOptions::for_test(th.path());
    opts.identity = (pid, format!("{start}#1"));
    let engine = opts.open();
    let run_dir = th.path().join("runs/job/r8");
    let mut p = spawn_sh(&run_dir, "echo done before this engine").await;
    p.child.wait().await.unwrap();
    owned_row(&engine, &th, "r8", "command", Some((p.pid, p.start_time.clone())), earlier);
    // A run of this very image is left alone.
    owned_row(&engine, &th, "r9", "command", None, (pid, format!("{start}#1")));

    assert_eq!(engine.recover(RecoveryMode::Adopt).await.unwrap(), vec!["r8"]);
    let rec = engine.store().get_run("r8").unwrap();
    assert_eq!((rec.status, rec.exit_code), (RunStatus::Completed, Some(0)));
    assert_eq!(engine.store().get_run("r9").unwrap().status, RunStatus::Running);
}

/// A run on a host whose engine died after bringing its end home but before removing its files
/// there: the next engine settles it from the local files and removes what it left on the host.
#[tokio::test]
async fn a_remote_run_whose_end_is_home_is_settled_and_its_host_files_removed() {
    let Some(server) = nightshift_testkit::SshServer::start() else { return };
    let th = TestHome::new();
    th.routine_sent_from_here("job", "schedule: \"0 * * * *\"\nhost: box\ncommand: echo\n");
    let engine = EngineOptions::for_test(th.path()).settings(&format!("ssh_config = \"{}\"\nreuse_ssh_connections = false\n", server.ssh_config().display())).open();
    let run_dir = orphan_row(&engine, &th, "r1", "command", None);
    std::fs::write(run_dir.join("stdout.log"), "done there\n").unwrap();
    std::fs::write(run_dir.join("exit_code"), "0\n").unwrap();
    let remote = server.remote_home().join(".nightshift/runs/r1");
    std::fs::create_dir_all(&remote).unwrap();
    std::fs::write(remote.join("stdout.log"), "done there\n").unwrap();
    engine.store().set_host("r1", "box").unwrap();
    engine.store().set_remote("r1", &format!("{{\"dir\":\"{}\",\"pid\":1,\"pgid\":1,\"deadline\":0}}", remote.display())).unwrap();
    engine.recover(RecoveryMode::Adopt).await.unwrap();
    let rec = engine.run("r1").unwrap();
    assert_eq!((rec.status, rec.exit_code, rec.host.as_deref()), (RunStatus::Completed, Some(0), Some("box")), "{rec:#?}");
    nightshift_testkit::wait_until_async("its files on the host to be removed", Duration::from_secs(10), || !remote.exists()).await;
    // Settled once: another pass finds nothing.
    assert!(engine.recover(RecoveryMode::Adopt).await.unwrap().is_empty());
}

/// A run on an account that a killed engine left is settled by the next one — and the account's
/// health hears how it ended, as its own engine's would have: a logged-out CLI makes the account
/// revoked, so the next run on it is blocked before it starts. (It was not: the next run started on
/// the revoked login again — found by the simulation.)
#[tokio::test]
async fn an_adopted_run_that_found_its_login_revoked_marks_the_account_revoked() {
    let th = TestHome::new();
    th.routine("job", "schedule: \"0 * * * *\"\nagent: claude\nprompt: go\naccount: me@x.dev\n");
    let engine = EngineOptions::for_test(th.path()).settings("[[accounts]]\nemail = \"me@x.dev\"\n").env("CLAUDE_CODE_OAUTH_TOKEN_ME_AT_X_DOT_DEV", "tok-me").open();
    let run_dir = th.path().join("runs/job/r9");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-2.1.332/logged-out.jsonl");
    let mut p = spawn_sh(&run_dir, &format!("cat {fixture}; exit 1")).await;
    p.child.wait().await.unwrap();
    row_on(&engine, &th, "r9", "claude", Some((p.pid, p.start_time.clone())), dead_owner(), Some("me@x.dev"));
    engine.recover(RecoveryMode::Adopt).await.unwrap();
    let rec = engine.store().get_run("r9").unwrap();
    assert_eq!((rec.status, rec.reason), (RunStatus::Failed, Some(Reason::AuthFailed)), "{rec:?}");
    let health = engine.store().account_health("me@x.dev").unwrap().expect("a verdict");
    assert_eq!(health.verdict.as_str(), "revoked", "{health:?}");
    assert_eq!(health.run_id.as_deref(), Some("r9"));
    let next = engine.run_now("job", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((next.status, next.reason), (RunStatus::Blocked, Some(Reason::AuthPreflight)), "{next:?}");
}
