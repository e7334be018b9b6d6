//! Webhooks delivered from the outbox, in one engine, against a loopback receiver that fails on
//! purpose (testkit's `WebhookReceiver`): exactly one accepted delivery per run and webhook through
//! errors, dropped connections and `Retry-After`; signatures the receiver verifies; a 400 never
//! retried and said in the engine's problems; a hanging receiver that delays no other webhook.
//! (Short backoffs here; the process-level drill — kill -9 of the daemon — is in the CLI's tests.)

use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::{Engine, EngineOptions};
use nightshift_testkit::{secs, wait_until_async, Answer, TestHome, WebhookReceiver};
use nightshift_core::notify::{Notice, Notifier};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Records every desktop notice.
#[derive(Default)]
struct Shown(Mutex<Vec<Notice>>);

impl Notifier for Shown {
    fn send(&self, n: &Notice) -> Result<(), String> {
        self.0.lock().unwrap().push(n.clone());
        Ok(())
    }
}

fn engine(th: &TestHome, settings: &str, env: &[(&str, &str)]) -> Engine {
    let mut opts = env.iter().fold(EngineOptions::for_test(th.path()).settings(settings), |o, (k, v)| o.env(k, *v));
    opts.webhook_backoff = vec![Duration::from_millis(100); 5];
    let engine = opts.open();
    engine.enable_webhooks();
    engine
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_run_is_accepted_exactly_once_through_errors_drops_and_retry_after() {
    let th = TestHome::new();
    let flaky = WebhookReceiver::start(vec![Answer::Status(500), Answer::Close, Answer::RetryAfter(1), Answer::Accept], Some("s3cret")).await;
    let chat = WebhookReceiver::start(vec![Answer::Accept], None).await;
    th.routine("review", "schedule: \"0 3 * * *\"\ncommand: \"printf '## Review\\\\n\\\\nSee [the PR](https://x.example/pr/1) https://evil.example\\\\n'\"\nwebhooks: [flaky]\n");
    th.routine("other", "schedule: \"0 3 * * *\"\ncommand: \"exit 3\"\n");
    let settings = format!(
        "[[webhooks]]\nname = \"flaky\"\nurl = \"{}\"\n[[webhooks]]\nname = \"chat\"\nurl = \"{}\"\nformat = \"slack\"\non = \"failures\"\n",
        flaky.url(),
        chat.url()
    );
    let engine = engine(&th, &settings, &[("NIGHTSHIFT_WEBHOOK_SECRET_FLAKY", "s3cret")]);

    let mut ids = Vec::new();
    for _ in 0..3 {
        let rec = engine.run_now("review", Trigger::Manual).await.unwrap().wait().await.unwrap();
        assert_eq!(rec.status, RunStatus::Completed);
        ids.push(rec.id);
    }
    let failed = engine.run_now("other", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(failed.status, RunStatus::Failed);

    wait_until_async("every run accepted by the flaky receiver", secs(30), || flaky.accepted().len() == 3).await;
    wait_until_async("the failed run posted to chat", secs(10), || chat.accepted().len() == 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await; // nothing more may come
    let accepted = flaky.accepted();
    for id in &ids {
        assert_eq!(accepted.get(id), Some(&1), "exactly once: {accepted:?}");
    }
    let seen = flaky.received();
    assert!(seen.iter().all(|r| r.signature_ok == Some(true)), "every request signed with the secret");
    assert!(seen.iter().all(|r| !r.duplicate));
    assert_eq!(seen.len(), 3 * 4, "four tries per run: 500, dropped, 429, accepted");
    let body: serde_json::Value = serde_json::from_str(&seen.iter().find(|r| r.answer == Answer::Accept).unwrap().body).unwrap();
    assert_eq!(body["routine"], "review");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["remote_host"], serde_json::Value::Null, "a run on this machine: {body}");
    assert_eq!(body["excerpt"], "## Review\n\nSee the PR", "link text kept, URLs dropped: {body}");
    assert!(ids.contains(&body["run_id"].as_str().unwrap().to_string()));
    // Only the failure went to chat (on = failures), as a Slack message.
    let chat_body: serde_json::Value = serde_json::from_str(&chat.received()[0].body).unwrap();
    assert!(chat_body["text"].as_str().unwrap().starts_with("*✗ other · failed (exit_nonzero)*"), "{chat_body}");
    assert_eq!(chat.received()[0].key, failed.id);

    // What the faces show: each delivery, its tries.
    let d = engine.deliveries_of(&ids[0]).unwrap();
    let hook = d.iter().find(|d| d.channel.to_string() == "webhook:flaky").unwrap();
    assert_eq!((hook.state.as_str(), hook.attempts), ("delivered", 3));
    assert!(hook.delivered_at.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_delivery_is_not_retried_and_is_said_until_retried_by_hand() {
    let th = TestHome::new();
    let picky = WebhookReceiver::start(vec![Answer::Status(400), Answer::Accept], None).await;
    th.routine("job", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    let engine = engine(&th, &format!("[[webhooks]]\nname = \"picky\"\nurl = \"{}\"\non = \"all\"\nformat = \"ntfy\"\n", picky.url()), &[]);
    let shown = Arc::new(Shown::default());
    engine.enable_notifications(shown.clone());
    let rec = engine.run_now("job", Trigger::Manual).await.unwrap().wait().await.unwrap();
    wait_until_async("the refusal recorded", secs(10), || engine.webhook_deliveries(true, 10).unwrap().len() == 1).await;
    // Recorded as given up (a final state): no retry is scheduled, so the count is final.
    assert_eq!(picky.received().len(), 1, "a 400 is not retried");
    let failed = &engine.webhook_deliveries(true, 10).unwrap()[0];
    assert_eq!((failed.state.as_str(), failed.last_error.as_deref()), ("not_delivered", Some("HTTP 400")));
    assert!(engine.problems().iter().any(|p| p.starts_with("webhook \"picky\" could not deliver run") && p.contains("HTTP 400")), "{:?}", engine.problems());
    // ntfy: a title header and a plain body.
    let r = &picky.received()[0];
    assert_eq!(r.headers.get("title").map(String::as_str), Some("job: completed"));

    // Said on the desktop once, however many runs it refuses while it stays broken: the second
    // refusal is not announced (an announcement comes before its row is final).
    let mut events = engine.subscribe();
    let second = engine.run_now("job", Trigger::Manual).await.unwrap().wait().await.unwrap();
    wait_until_async("the second refusal recorded", secs(10), || engine.webhook_deliveries(true, 10).unwrap().len() == 2).await;
    let mut announced = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let nightshift_core::events::EngineEvent::WebhookFailed { run_id, .. } = event {
            announced.push(run_id);
        }
    }
    assert!(announced.is_empty(), "the second refusal ({}) was announced again: {announced:?}", second.id);
    let told: Vec<String> = shown.0.lock().unwrap().iter().map(|n| n.summary.clone()).filter(|s| s.contains("webhook")).collect();
    assert_eq!(told, vec!["✗ webhook picky could not post job".to_string()], "once");

    assert_eq!(engine.retry_deliveries(&rec.id, None).unwrap(), 1);
    wait_until_async("the retried delivery accepted", secs(10), || picky.accepted().get(&rec.id) == Some(&1)).await;
    wait_until_async("the problem cleared", secs(5), || engine.problems().is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_receiver_delays_no_other_webhook() {
    let th = TestHome::new();
    let stuck = WebhookReceiver::start(vec![Answer::Hang(Duration::from_secs(30))], None).await;
    let quick = WebhookReceiver::start(vec![Answer::Accept], None).await;
    th.routine("job", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    let settings = format!("[[webhooks]]\nname = \"stuck\"\nurl = \"{}\"\non = \"all\"\n[[webhooks]]\nname = \"quick\"\nurl = \"{}\"\non = \"all\"\n", stuck.url(), quick.url());
    let engine = engine(&th, &settings, &[]);
    let started = Instant::now();
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(engine.run_now("job", Trigger::Manual).await.unwrap().wait().await.unwrap().id);
    }
    wait_until_async("the quick webhook to get every run", secs(5), || quick.accepted().len() == 3).await;
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // The stuck one is still being tried (its request hangs), not lost.
    let stuck_row = engine.deliveries_of(&ids[0]).unwrap().into_iter().find(|d| d.channel.to_string() == "webhook:stuck").unwrap();
    assert_eq!(stuck_row.state.as_str(), "pending");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routine_naming_an_unknown_webhook_is_a_located_error() {
    let th = TestHome::new();
    th.routine("job", "schedule: \"0 3 * * *\"\ncommand: \"true\"\nwebhooks: [team, tema]\n");
    let engine = engine(&th, "[[webhooks]]\nname = \"team\"\nurl = \"http://127.0.0.1:9/hook\"\n", &[]);
    let Err(err) = engine.run_now("job", Trigger::Manual).await else { panic!("a routine naming an unknown webhook must not run") };
    assert_eq!(err.message, "routines/job.yaml:3:18: no webhook named \"tema\" in nightshift.toml (defined: team)");
}

/// A receiver that answers 409 ("I have it already") has the delivery: delivered, no problem. One
/// that answers 429 with `Retry-After` gets none of that webhook's other deliveries before then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_is_a_delivery_and_a_retry_after_holds_the_webhooks_other_deliveries() {
    let th = TestHome::new();
    let has_it = WebhookReceiver::start(vec![Answer::Status(409)], None).await;
    let busy = WebhookReceiver::start(vec![Answer::RetryAfter(1), Answer::Accept], None).await;
    th.routine("report", "schedule: \"0 3 * * *\"\ncommand: echo done\nwebhooks: [has_it, busy]\n");
    let settings = format!("[[webhooks]]\nname = \"has_it\"\nurl = \"{}\"\n[[webhooks]]\nname = \"busy\"\nurl = \"{}\"\n", has_it.url(), busy.url());
    let engine = engine(&th, &settings, &[]);
    let first = engine.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap();
    wait_until_async("the first 429", secs(10), || !busy.received().is_empty()).await;
    // Two more runs settle while the receiver asked for a pause.
    let mut ids = vec![first.id.clone()];
    for _ in 0..2 {
        ids.push(engine.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap().id);
    }
    wait_until_async("every run accepted by the busy receiver", secs(30), || busy.accepted().len() == 3).await;
    let seen = busy.received();
    let paused_at = seen[0].at;
    for r in seen.iter().filter(|r| r.key != first.id) {
        assert!(r.at.duration_since(paused_at) >= Duration::from_millis(950), "{} came {:?} after the 429 that asked for 1 s", r.key, r.at.duration_since(paused_at));
    }
    let rows = engine.deliveries_of(&first.id).unwrap();
    let row = rows.iter().find(|d| d.webhook.as_deref() == Some("has_it")).expect("the has_it delivery");
    assert_eq!(row.state, nightshift_core::store::Delivery::Delivered, "{row:?}");
    assert!(engine.problems().is_empty(), "{:?}", engine.problems());
    assert_eq!(has_it.received().len(), 3, "one try each, no retry: {:?}", has_it.received().len());
}

/// The clock steps forward (or the machine sleeps) while a post is in flight: its lease runs out
/// by the clock, and the next pass — kicked by another run's end — must not post it a second
/// time. It did: the same deliverer leased and sent it again while the first send still waited
/// for its answer (found by the simulation's clock jumps, with `crates/desktop/tests/quiet.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_in_flight_when_the_clock_steps_past_its_lease_is_sent_once() {
    let th = TestHome::new();
    // A run's first post is answered after 2 s; any later one at once.
    let hook = WebhookReceiver::start(vec![Answer::Hang(Duration::from_secs(2)), Answer::Accept], None).await;
    th.routine("report", "schedule: \"0 3 * * *\"\ncommand: \"true\"\nwebhooks: [team]\n");
    let clock = Arc::new(nightshift_core::ManualClock::new(chrono::Utc::now()));
    let mut opts = EngineOptions::for_test(th.path()).settings(&format!("[[webhooks]]\nname = \"team\"\nurl = \"{}\"\n", hook.url())).clock(clock.clone());
    opts.webhook_backoff = vec![Duration::from_millis(100); 5];
    let engine = opts.open();
    engine.enable_webhooks();
    let first = engine.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap();
    // (The receiver records a request when it answers: in flight is its outbox entry leased.)
    let db = rusqlite::Connection::open(nightshift_core::Home::at(th.path()).db_path()).unwrap();
    let leased = || db.query_row("SELECT lease_until_ms IS NOT NULL FROM outbox WHERE run_id = ?1 AND channel = 'webhook:team'", [&first.id], |r| r.get::<_, bool>(0)).unwrap_or(false);
    wait_until_async("the first post to be in flight", secs(10), leased).await;
    assert!(hook.received().is_empty(), "not answered yet");
    // An hour passes by the clock mid-send; another run ends and wakes the deliverer.
    clock.advance(chrono::Duration::hours(1));
    let second = engine.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap();
    wait_until_async("both runs accepted", secs(10), || hook.accepted().len() == 2).await;
    tokio::time::sleep(Duration::from_millis(2500)).await; // the first send's answer, and anything after it
    let posts = |id: &str| hook.received().iter().filter(|r| r.key == id).count();
    assert_eq!((posts(&first.id), posts(&second.id)), (1, 1), "{:#?}", hook.received());
}
