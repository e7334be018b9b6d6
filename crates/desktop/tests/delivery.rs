//! Finish notifications from the engine's outbox through the real notify-rust client and a real
//! D-Bus notification server (tests/support/notification_server.py): a server that refuses and
//! then accepts shows the run once; one that never answers delays nothing and the run says
//! "not delivered".

use nightshift_core::run::Trigger;
use nightshift_core::{Engine, EngineOptions};
use nightshift_desktop::DesktopNotifier;
use nightshift_testkit::dbus::NotificationBus;
use nightshift_testkit::TestHome;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn engine(th: &TestHome, bus: &NotificationBus) -> Engine {
    th.routine("report", "schedule: \"0 3 * * *\"\nnotify: always\ncommand: echo all green\n");
    let mut opts = EngineOptions::for_test(th.path());
    opts.delivery_backoff = vec![Duration::from_millis(200); 3];
    let engine = opts.open();
    // notify-rust talks to the session bus named in the environment.
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", &bus.address);
    engine.enable_notifications(Arc::new(DesktopNotifier::new(None, None)));
    engine
}

async fn notified(engine: &Engine, id: &str, want: &str, limit: Duration) {
    nightshift_testkit::wait_until_async(&format!("the run's notification to be {want}"), limit, || engine.store().get_run(id).unwrap().notified.map(|d| d.as_str()) == Some(want)).await;
}

// One test function: the bus address is process-wide environment for notify-rust.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_then_shown_once_and_a_hung_server_is_not_delivered() {
    let th = TestHome::new();
    let bus = NotificationBus::start(th.path(), "refuse:2");
    let e = engine(&th, &bus);
    let rec = e.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap();
    notified(&e, &rec.id, "delivered", Duration::from_secs(10)).await;
    let shown = bus.notifications();
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(shown[0]["summary"].as_str().unwrap().starts_with("✓ report · "));
    drop(e);
    drop(bus);

    let th = TestHome::new();
    let bus = NotificationBus::start(th.path(), "hang");
    let e = engine(&th, &bus);
    let t0 = Instant::now();
    let rec = e.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert!(t0.elapsed() < Duration::from_secs(2), "settling never waits for the server");
    notified(&e, &rec.id, "not_delivered", Duration::from_secs(15)).await;
    let why = e.store().delivery_error(&rec.id, &nightshift_core::run::Channel::Notify).unwrap().unwrap();
    assert!(why.contains("did not answer") || why.contains("has not answered"), "{why}");
}
