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
