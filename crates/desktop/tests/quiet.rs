//! A routine that goes quiet is told: slots that ended with nothing done (missed and not made up)
//! are one notice for a stretch of them — through the real notify-rust client and a real D-Bus
//! notification server (tests/support/notification_server.py), and to the routine's webhook (a
//! loopback receiver) — with `why`'s evidence; the routine is "quiet" in the overview (the tray's
//! attention) until it runs again; a routine without `notify_missed` says nothing.

use chrono::{DateTime, Utc};
use nightshift_core::run::{Channel, RunStatus};
use nightshift_core::store::Delivery;
use nightshift_core::store::RunQuery;
use nightshift_core::{Clock, EngineOptions, ManualClock, Scheduler};
use nightshift_desktop::DesktopNotifier;
use nightshift_testkit::dbus::NotificationBus;
use nightshift_testkit::{secs, wait_until_async, Answer, TestHome, WebhookReceiver};
use std::sync::Arc;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

// One test function: the bus address is process-wide environment for notify-rust.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_missed_slots_are_one_notice_until_the_routine_runs_again() {
    let th = TestHome::new();
    let bus = NotificationBus::start(th.path(), "record");
    let hook = WebhookReceiver::start(vec![Answer::Accept], None).await;
    th.routine("nightly", "schedule: \"0 * * * *\"\ntimezone: UTC\ncommand: \"true\"\ncatchup: false\nnotify_missed: true\nwebhooks: [team]\n");
    th.routine("chores", "schedule: \"0 * * * *\"\ntimezone: UTC\ncommand: \"true\"\ncatchup: false\n");
    let clock = Arc::new(ManualClock::new(at("2026-11-30T00:00:30Z")));
    let engine = EngineOptions::for_test(th.path()).settings(&format!("[[webhooks]]\nname = \"team\"\nurl = \"{}\"\n", hook.url())).clock(clock.clone()).open();
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", &bus.address);
    engine.enable_notifications(Arc::new(DesktopNotifier::new(None, None)));
    engine.enable_webhooks();
    let sched = Scheduler::new(engine.clone());
    let tick = |t: &str| {
        clock.set(at(t));
        let sched = Arc::clone(&sched);
        async move { sched.tick().await.unwrap() }
    };
    tick("2026-11-30T00:00:30Z").await;

    // The machine sleeps through 01:00, 02:00 and 03:00 (`catchup: false`: none is made up).
    let report = tick("2026-11-30T03:30:00Z").await;
    assert_eq!(report.missed, 6, "three slots of each routine");
    wait_until_async("one notice and one webhook", secs(10), || !bus.notifications().is_empty() && !hook.received().is_empty()).await;
    let missed: Vec<_> = engine.store().list_runs(&RunQuery { limit: 100, ..Default::default() }).unwrap().runs.into_iter().filter(|r| r.routine == "nightly").collect();
    assert_eq!(missed.len(), 3);
    wait_until_async("every missed slot's deliveries settled", secs(10), || {
        missed.iter().all(|r| engine.store().deliveries_of(&r.id).unwrap().iter().all(|d| d.state != Delivery::Pending))
    })
    .await;
    let shown = bus.notifications();
    assert_eq!(shown.len(), 1, "one notice for three missed slots: {shown:#?}");
    assert_eq!(shown[0]["app_name"], "Nightshift");
    assert_eq!(shown[0]["summary"], "⚠ nightly has not run yet");
    assert_eq!(shown[0]["body"], "Mon 30 Nov 01:00 missed — machine asleep 00:00–03:30; the routine has `catchup: false`");
    assert_eq!(shown[0]["hints"]["urgency"], 2);
    let posted = hook.received();
    assert_eq!(posted.len(), 1, "{posted:#?}");
    let body: serde_json::Value = serde_json::from_str(&posted[0].body).unwrap();
    assert_eq!((body["routine"].as_str(), body["status"].as_str(), body["scheduled_for"].as_str()), (Some("nightly"), Some("missed"), Some("2026-11-30T01:00:00.000Z")));
    // The two later slots say which run told of them.
    let first = missed.iter().find(|r| r.scheduled_for == Some(at("2026-11-30T01:00:00Z"))).unwrap();
    for r in missed.iter().filter(|r| r.id != first.id) {
        for d in engine.store().deliveries_of(&r.id).unwrap() {
            assert_eq!(d.state, Delivery::NotNeeded, "{d:?}");
            assert!(d.last_error.as_deref().unwrap().starts_with(&format!("told with run {}", first.id)), "{d:?}");
        }
    }
    assert_eq!(engine.store().deliveries_of(&first.id).unwrap().iter().map(|d| (d.channel.clone(), d.state)).collect::<Vec<_>>(), [(Channel::Notify, Delivery::Delivered), (Channel::Webhook("team".into()), Delivery::Delivered)]);
    let quiet = |name: &str| nightshift_core::view::routines::overview(&engine, clock.now()).unwrap().into_iter().find(|r| r.name == name).unwrap().quiet;
    assert_eq!(quiet("nightly").as_deref(), Some("missed Mon 30 Nov 03:00"), "quiet until it runs again");
    assert_eq!(quiet("chores"), None, "commands do not tell of missed slots unless they ask");

    // It runs at 04:00: no longer quiet. Then two more slots are missed: a second notice, from
    // when it last ran.
    tick("2026-11-30T04:00:05Z").await;
    engine.until_idle(std::time::Duration::from_secs(10)).await;
    let ran = engine.store().list_runs(&RunQuery { limit: 100, ..Default::default() }).unwrap().runs.into_iter().find(|r| r.routine == "nightly" && r.status == RunStatus::Completed);
    assert!(ran.is_some());
    assert_eq!(quiet("nightly"), None);
    tick("2026-11-30T06:30:00Z").await;
    // (Its webhook also got the 04:00 run, as every finished run of it.)
    wait_until_async("the second notice", secs(10), || bus.notifications().len() == 2 && hook.received().len() == 3).await;
    let shown = bus.notifications();
    assert_eq!(shown[1]["summary"], "⚠ nightly has not run since Mon 30 Nov 04:00");
    assert!(shown[1]["body"].as_str().unwrap().starts_with("Mon 30 Nov 05:00 missed — machine asleep 04:00–06:30"), "{shown:#?}");
    // Nothing more arrives for the 06:00 slot.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!((bus.notifications().len(), hook.received().len()), (2, 3));
    // The webhook's posts: the 04:00 run's and the second notice may arrive in either order.
    let bodies: Vec<serde_json::Value> = hook.received().iter().map(|r| serde_json::from_str(&r.body).unwrap()).collect();
    let told: Vec<_> = bodies.iter().filter(|b| b["status"] == "missed").map(|b| b["scheduled_for"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(told, ["2026-11-30T01:00:00.000Z", "2026-11-30T05:00:00.000Z"], "{bodies:#?}");
}
