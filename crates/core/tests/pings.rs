//! Heartbeat pings (`ping:`) from the outbox against loopback receivers (testkit's
//! `WebhookReceiver`): `/start` when a run starts and, after it, the ending — the URL itself for
//! completed, `/<code>` for a command's own exit code, `/fail` for anything else — once per run
//! and event through refusals, never before its start ping, and never holding up settling.

use nightshift_core::run::{Channel, PingEvent, RunStatus, Trigger};
use nightshift_core::store::Delivery;
use nightshift_core::{Engine, EngineOptions};
use nightshift_testkit::{secs, wait_until_async, Answer, TestHome, WebhookReceiver};
use std::time::{Duration, Instant};

fn engine(th: &TestHome) -> Engine {
    let mut opts = EngineOptions::for_test(th.path()).settings("kill_grace_secs = 1\n");
    opts.webhook_backoff = vec![Duration::from_millis(100); 5];
    let engine = opts.open();
    engine.enable_webhooks();
    engine
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_say_start_and_how_each_run_ended() {
    let th = TestHome::new();
    let monitor = WebhookReceiver::start(vec![Answer::Accept], None).await;
    let url = monitor.url();
    th.routine("ok", &format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\nping: {url}/ok/\n"));
    th.routine("exits", &format!("schedule: \"0 3 * * *\"\ncommand: \"exit 3\"\nping: {url}/exits\n"));
    th.routine("slow", &format!("schedule: \"0 3 * * *\"\ncommand: \"sleep 30\"\ntimeout: 1s\nping: {url}/slow\n"));
    th.routine("silent", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    let e = engine(&th);
    let mut ids = Vec::new();
    for name in ["ok", "exits", "slow", "silent"] {
        ids.push(e.run_now(name, Trigger::Manual).await.unwrap().wait().await.unwrap());
    }
    assert_eq!(ids.iter().map(|r| r.status).collect::<Vec<_>>(), [RunStatus::Completed, RunStatus::Failed, RunStatus::TimedOut, RunStatus::Completed]);
    wait_until_async("six pings", secs(10), || monitor.received().len() >= 6).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got = monitor.received();
    let lines = |routine: &str| got.iter().filter(|r| r.line.starts_with(&format!("POST /hook/{routine}"))).map(|r| r.line.clone()).collect::<Vec<_>>();
    assert_eq!(lines("ok"), ["POST /hook/ok/start", "POST /hook/ok"], "a trailing / is not doubled; the start comes first");
    assert_eq!(lines("exits"), ["POST /hook/exits/start", "POST /hook/exits/3"], "a command's own exit code");
    assert_eq!(lines("slow"), ["POST /hook/slow/start", "POST /hook/slow/fail"]);
    assert_eq!(got.len(), 6, "a routine without `ping:` pings nothing");
    let end = got.iter().find(|r| r.line == "POST /hook/exits/3").unwrap();
    assert_eq!(end.body, format!("Nightshift: exits run {} failed (exit_nonzero) — exited with code 3", ids[1].id));
    // Shown on the run.
    let d = e.store().deliveries_of(&ids[0].id).unwrap();
    let pings: Vec<_> = d.iter().filter(|d| d.ping.is_some()).map(|d| (d.channel.clone(), d.state)).collect();
    assert_eq!(pings, [(Channel::Ping(PingEvent::End), Delivery::Delivered), (Channel::Ping(PingEvent::Start), Delivery::Delivered)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_monitor_gets_each_ping_once_and_a_hanging_one_delays_nothing() {
    let th = TestHome::new();
    let refusing = WebhookReceiver::start(vec![Answer::Status(503), Answer::Status(503), Answer::Accept], None).await;
    let hanging = WebhookReceiver::start(vec![Answer::Hang(Duration::from_secs(60))], None).await;
    th.routine("flaky", &format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\nping: {}/flaky\n", refusing.url()));
    th.routine("stuck", &format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\nping: {}/stuck\n", hanging.url()));
    let e = engine(&th);
    let flaky = e.run_now("flaky", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let t0 = Instant::now();
    let stuck = e.run_now("stuck", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3), "settling never waits for a monitor: {:?}", t0.elapsed());
    assert_eq!(stuck.status, RunStatus::Completed);
    let delivered = |id: &str, event| e.store().delivery_state(id, &Channel::Ping(event)).unwrap() == Some(Delivery::Delivered);
    // Within 8 s, less than the 10 s a request may take (`webhook::REQUEST_TIMEOUT`): flaky's
    // retries go while stuck's ping still hangs in its slot, not after it gave up.
    wait_until_async("both of flaky's pings delivered while stuck's start ping still hangs", secs(8), || delivered(&flaky.id, PingEvent::Start) && delivered(&flaky.id, PingEvent::End)).await;
    let accepted = refusing.accepted();
    assert_eq!(accepted.len(), 2, "{accepted:?}");
    assert!(accepted.values().all(|n| *n == 1), "each ping accepted once: {accepted:?}");
    let lines: Vec<String> = refusing.received().into_iter().map(|r| r.line).collect();
    assert_eq!(lines.iter().filter(|l| l.ends_with("/start")).count(), 3, "two refusals, then the one accepted: {lines:?}");
    let first_end = lines.iter().position(|l| l == "POST /hook/flaky").unwrap();
    let last_start = lines.iter().rposition(|l| l.ends_with("/start")).unwrap();
    assert!(first_end > last_start, "the end is not sent before the start got through: {lines:?}");
}
