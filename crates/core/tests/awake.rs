//! `keep_awake`: while a run of this engine goes the machine is kept awake — one logind sleep
//! inhibitor for any number of runs, released when the last ends — against a stand-in logind on
//! a private D-Bus session bus (tests/support/logind.py, which records each `Inhibit` call and
//! when its descriptor is closed). No logind, or `keep_awake = false`: runs go on as ever.

use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::{Engine, EngineOptions};
use nightshift_testkit::dbus::{Logind, NotificationBus};
use nightshift_testkit::{secs, wait_until_async, TestHome};
use serde_json::json;

fn engine(th: &TestHome, settings: &str, bus: &str) -> Engine {
    let mut opts = EngineOptions::for_test(th.path()).settings(settings);
    opts.logind_bus = Some(bus.to_string());
    opts.open()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_inhibitor_while_runs_go_released_when_the_last_ends() {
    let th = TestHome::new();
    let bus = NotificationBus::start(th.path(), "record");
    let logind = Logind::start(th.path(), &bus.address);
    th.routine("long", "schedule: \"0 3 * * *\"\ncommand: \"sleep 2\"\n");
    th.routine("short", "schedule: \"0 3 * * *\"\ncommand: \"sleep 1\"\n");
    let e = engine(&th, "max_parallel = 4\n", &bus.address);
    let long = e.run_now("long", Trigger::Manual).await.unwrap();
    let short = e.run_now("short", Trigger::Manual).await.unwrap();
    wait_until_async("the inhibitor taken", secs(10), || logind.inhibits().len() == 1).await;
    assert_eq!(logind.inhibits()[0], json!({"what": "sleep", "who": "Nightshift", "why": "a routine is running", "mode": "block"}));
    assert_eq!(short.wait().await.unwrap().status, RunStatus::Completed);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(logind.released(), 0, "held while a run still goes");
    assert_eq!(long.wait().await.unwrap().status, RunStatus::Completed);
    wait_until_async("the inhibitor released", secs(10), || logind.released() == 1).await;
    assert_eq!(logind.inhibits().len(), 1, "one inhibitor for both runs");
    // The next run takes a new one.
    e.run_now("short", Trigger::Manual).await.unwrap().wait().await.unwrap();
    wait_until_async("a second inhibitor, released", secs(10), || logind.inhibits().len() == 2 && logind.released() == 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_logind_or_with_keep_awake_off_runs_go_on() {
    let th = TestHome::new();
    let bus = NotificationBus::start(th.path(), "record");
    th.routine("quick", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    // No logind on this bus: the inhibitor cannot be taken; the run is not held up.
    let e = engine(&th, "", &bus.address);
    assert_eq!(e.run_now("quick", Trigger::Manual).await.unwrap().wait().await.unwrap().status, RunStatus::Completed);
    drop(e);
    let logind = Logind::start(th.path(), &bus.address);
    let e = engine(&th, "keep_awake = false\n", &bus.address);
    assert_eq!(e.run_now("quick", Trigger::Manual).await.unwrap().wait().await.unwrap().status, RunStatus::Completed);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(logind.inhibits().is_empty(), "keep_awake = false asks for nothing");
}

/// The machine goes to sleep and wakes, as logind says (`PrepareForSleep`, sent by the stand-in
/// on its bus): the scheduler's stretch of presence ends `asleep` at that moment — it no longer
/// passes every 30 s, so its last pass may be minutes earlier — no slot fires while it sleeps, and
/// on waking the slots of the sleep are caught up once, `why` naming the gap "machine asleep".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loginds_sleep_and_wake_are_what_why_says_of_the_gap() {
    use nightshift_core::Scheduler;
    let th = TestHome::new();
    let bus = NotificationBus::start(th.path(), "record");
    let logind = Logind::start(th.path(), &bus.address);
    // Every two seconds (cron with seconds): slots fall inside a few seconds of sleep.
    th.routine("tick", "schedule: \"*/2 * * * * *\"\ntimezone: UTC\ncommand: \"true\"\n");
    let e = engine(&th, "", &bus.address);
    let shutdown = std::sync::Arc::new(tokio::sync::Notify::new());
    let task = tokio::spawn(Scheduler::new(e.clone()).run(std::sync::Arc::clone(&shutdown)));
    let runs = |e: &Engine| e.runs(&nightshift_core::store::RunQuery { routine: Some("tick".into()), limit: 1000, ..Default::default() }).unwrap().runs;
    wait_until_async("two slots fired", secs(20), || runs(&e).iter().filter(|r| r.status == RunStatus::Completed).count() >= 2).await;

    logind.prepare_for_sleep(true);
    let went = chrono::Utc::now();
    let fired_before = runs(&e).len();
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert_eq!(runs(&e).len(), fired_before, "nothing fires while the machine sleeps");
    logind.prepare_for_sleep(false);
    // The newest of them runs (on time: less than 90 s late), the others are recorded missed.
    wait_until_async("the sleep's slots caught up", secs(20), || runs(&e).iter().any(|r| r.status == RunStatus::Missed)).await;

    let db = rusqlite::Connection::open(th.path().join("nightshift.db")).unwrap();
    let stretches: Vec<(String, String, Option<String>)> =
        db.prepare("SELECT started_at, last_seen, ended FROM presence ORDER BY id").unwrap().query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
    assert_eq!(stretches.len(), 2, "{stretches:?}");
    assert_eq!(stretches[0].2.as_deref(), Some("asleep"), "{stretches:?}");
    let ended_at = nightshift_core::words::parse_time(&stretches[0].1).unwrap();
    assert!((ended_at - went).num_milliseconds().abs() < 1500, "the stretch ends when logind said the machine went ({went}), not at a pass: {stretches:?}");
    let why = nightshift_core::view::why::why(&e, "tick", 1).unwrap();
    let asleep: Vec<_> = why.lines.iter().filter(|l| l.sentence.contains("machine asleep")).collect();
    assert!(!asleep.is_empty(), "{:#?}", why.lines.iter().take(6).collect::<Vec<_>>());
    shutdown.notify_one();
    let _ = task.await;
}
