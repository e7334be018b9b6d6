//! `nightshift.toml` edited while an engine runs: an account added, a webhook added, a broken edit.
//! Each takes effect without a restart (within a second — the settings file is looked at at most
//! once a second), and a broken file keeps the last good settings in force, said as a problem. The
//! faces are told by the scheduler's file watch (reading the settings never announces).

use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::{Engine, EngineOptions, Scheduler};
use nightshift_testkit::{secs, wait_until_async, Answer, TestHome, WebhookReceiver};
use std::time::Duration;

fn engine(th: &TestHome) -> Engine {
    let mut opts = EngineOptions::for_test(th.path());
    opts.webhook_backoff = vec![Duration::from_millis(100); 3];
    opts.open()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_added_while_running_is_seen_and_a_broken_edit_keeps_the_last_good_settings() {
    let th = TestHome::new();
    let settings = th.path().join("nightshift.toml");
    std::fs::write(&settings, "max_parallel = 2\n").unwrap();
    let engine = engine(&th);
    assert!(engine.accounts().is_empty());
    let mut events = engine.subscribe();
    // The scheduler's loop, as the app and the daemon run it: it watches the file.
    let shutdown = std::sync::Arc::new(tokio::sync::Notify::new());
    let scheduling = {
        let (engine, shutdown) = (engine.clone(), shutdown.clone());
        tokio::spawn(async move { nightshift_core::daemon::run(&engine, Scheduler::new(engine.clone()), shutdown).await })
    };
    // It says the engine's state once its watches are set up.
    let watching = tokio::time::timeout(secs(10), async {
        while !matches!(events.recv().await, Ok(nightshift_core::EngineEvent::EngineState { .. })) {}
    });
    watching.await.expect("the scheduler's loop started");

    std::fs::write(&settings, "max_parallel = 2\n\n[[accounts]]\nemail = \"new@acme.dev\"\n").unwrap();
    wait_until_async("the new account", secs(5), || engine.accounts().iter().any(|a| a.email == "new@acme.dev")).await;
    let mut told = false;
    let deadline = tokio::time::Instant::now() + secs(5);
    while !told && tokio::time::Instant::now() < deadline {
        if let Ok(Ok(ev)) = tokio::time::timeout(Duration::from_millis(200), events.recv()).await {
            told |= matches!(ev, nightshift_core::EngineEvent::AccountsChanged);
        }
    }
    assert!(told, "the faces are told the accounts changed");

    // A broken edit: the last good settings stay; the problem says where and what still applies.
    std::fs::write(&settings, "max_parallel = 0\n\n[[accounts]]\nemail = \"new@acme.dev\"\n").unwrap();
    wait_until_async("the problem", secs(5), || engine.problems().iter().any(|p| p.contains("nightshift.toml:1:16: `max_parallel` must be between 1 and 64"))).await;
    let problem = engine.problems().into_iter().find(|p| p.contains("max_parallel")).unwrap();
    assert!(problem.ends_with("the previous settings stay in effect until it is fixed"), "{problem}");
    assert_eq!(engine.settings().max_parallel, 2);
    assert_eq!(engine.accounts().len(), 1);
    // Fixed: the problem goes.
    std::fs::write(&settings, "max_parallel = 3\n").unwrap();
    wait_until_async("the fix", secs(5), || engine.problems().is_empty() && engine.settings().max_parallel == 3).await;
    assert!(engine.accounts().is_empty(), "the account was removed from the file");
    shutdown.notify_one();
    scheduling.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_added_while_running_makes_its_routine_valid_and_gets_deliveries() {
    let th = TestHome::new();
    let receiver = WebhookReceiver::start(vec![Answer::Accept], None).await;
    th.routine("report", "schedule: \"0 3 * * *\"\ncommand: echo posted\nwebhooks: [team]\n");
    let engine = engine(&th);
    engine.enable_webhooks();
    let err = engine.routine("report").unwrap_err();
    assert!(err.message.contains("no webhook named \"team\""), "{}", err.message);

    std::fs::write(th.path().join("nightshift.toml"), format!("[[webhooks]]\nname = \"team\"\nurl = \"{}\"\n", receiver.url())).unwrap();
    wait_until_async("the routine to become valid", secs(5), || engine.routine("report").is_ok()).await;
    let rec = engine.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(rec.status, RunStatus::Completed);
    wait_until_async("the delivery to the new webhook", secs(15), || receiver.received().len() == 1).await;
    assert!(receiver.received()[0].body.contains(&rec.id), "the run it posted");
}

/// `[[accounts]] reserve` is a percent: past 100 is an error at its account.
#[test]
fn an_accounts_reserve_is_a_percent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nightshift.toml");
    std::fs::write(&path, "[[accounts]]\nemail = \"a@x.dev\"\nreserve = 20\n").unwrap();
    assert_eq!(nightshift_core::settings::Settings::load(&path).unwrap().accounts[0].reserve, Some(20));
    std::fs::write(&path, "[[accounts]]\nemail = \"a@x.dev\"\nreserve = 120\n").unwrap();
    let err = nightshift_core::settings::Settings::load(&path).unwrap_err().to_string();
    assert!(err.contains("`reserve` of a@x.dev is a percent of its windows: 0 to 100") && err.contains(":2:"), "{err}");
}

/// `usage_probe` is off unless asked for, and only Claude has the endpoint it reads.
#[test]
fn usage_probe_is_off_by_default_and_for_claude_accounts_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nightshift.toml");
    std::fs::write(&path, "[[accounts]]\nemail = \"a@x.dev\"\n[[accounts]]\nemail = \"b@x.dev\"\nusage_probe = true\n").unwrap();
    let s = nightshift_core::settings::Settings::load(&path).unwrap();
    assert_eq!((s.accounts[0].usage_probe, s.accounts[1].usage_probe), (false, true));
    assert_eq!(s.usage_probe_url, "https://api.anthropic.com/api/oauth/usage");
    std::fs::write(&path, "[[accounts]]\nagent = \"codex\"\nemail = \"c@x.dev\"\nusage_probe = true\n").unwrap();
    let err = nightshift_core::settings::Settings::load(&path).unwrap_err().to_string();
    assert!(err.contains("`usage_probe` of c@x.dev reads Claude's OAuth usage endpoint; codex has none (its windows come from its runs)") && err.contains(":3:"), "{err}");
}
