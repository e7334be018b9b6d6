//! A worktree run whose push fails after every try tells the user: its own notification through
//! the real notify-rust client and a real D-Bus notification server, a `push_failed` post to the
//! routine's webhook (a loopback receiver), attention in the overview the tray reads, and a line
//! in `why` — against a real bare remote whose pre-receive hook refuses. Once the remote takes
//! pushes again, `push RUN` pushes it and every one of them stops telling it.

use nightshift_core::run::{PushState, RunStatus, Trigger};
use nightshift_core::EngineOptions;
use nightshift_desktop::DesktopNotifier;
use nightshift_testkit::dbus::NotificationBus;
use nightshift_testkit::git::{accept_pushes, git, init_bare, init_repo, refuse_pushes};
use nightshift_testkit::{secs, wait_until_async, Answer, TestHome, WebhookReceiver};
use std::sync::Arc;

// One test function: the bus address is process-wide environment for notify-rust.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_that_fails_after_every_try_is_told_everywhere_until_it_is_pushed() {
    let th = TestHome::new();
    let repo = th.path().join("repo");
    init_repo(&repo, &[("README.md", "hello\n")]);
    let remote = th.path().join("remote.git");
    init_bare(&remote);
    git(&repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
    refuse_pushes(&remote, "frozen for the release");
    let bus = NotificationBus::start(th.path(), "record");
    let hook = WebhookReceiver::start(vec![Answer::Accept; 4], None).await;
    th.routine(
        "deps",
        &format!("schedule: \"0 3 * * *\"\ncommand: \"echo bumped > deps.txt\"\ncwd: {}\nworkspace: worktree\npush: origin\nnotify: always\nwebhooks: [team]\n", repo.display()),
    );
    let mut opts = EngineOptions::for_test(th.path()).settings(&format!("[[webhooks]]\nname = \"team\"\nurl = \"{}\"\n", hook.url()));
    opts.push_backoff = vec![std::time::Duration::from_millis(20); 2];
    let engine = opts.open();
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", &bus.address);
    engine.enable_notifications(Arc::new(DesktopNotifier::new(None, None)));
    engine.enable_webhooks();

    let run = engine.run_now("deps", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    let push_state = || engine.run(&run.id).unwrap().changes.unwrap().push.unwrap();
    // (Its three tries are 20 ms apart here; a busy machine only makes them later.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while push_state().state != PushState::Failed {
        engine.push_branches_now().await;
        assert!(std::time::Instant::now() < deadline, "the push never gave up: {:?}", push_state());
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let branch = format!("nightshift/deps/{}", run.id);

    // Its own notification, after the run's finish notification.
    wait_until_async("the push-failed notification", secs(10), || bus.notifications().len() >= 2).await;
    let shown = bus.notifications();
    assert_eq!(shown.len(), 2, "{shown:#?}");
    assert!(shown[0]["summary"].as_str().unwrap().starts_with("✓ deps"), "{shown:#?}");
    let summary = shown[1]["summary"].as_str().unwrap();
    assert!(summary.starts_with("✗ deps · push failed: git push to origin was refused"), "{summary}");
    assert_eq!(shown[1]["body"].as_str().unwrap(), format!("{branch} was not pushed to origin after 3 tries; the branch is kept here — `nightshiftctl push {}` tries again", run.id));
    assert_eq!(shown[1]["hints"]["urgency"], 2);

    // A `push_failed` post to the routine's webhook, beside the run's own.
    wait_until_async("the push_failed post", secs(10), || hook.received().len() >= 2).await;
    let posts: Vec<serde_json::Value> = hook.received().iter().map(|r| serde_json::from_str(&r.body).unwrap()).collect();
    let events: Vec<&str> = posts.iter().map(|p| p["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["run_finished", "push_failed"], "{posts:#?}");
    let failed = &posts[1];
    assert_eq!((failed["run_id"].as_str(), failed["push"]["remote"].as_str(), failed["push"]["branch"].as_str(), failed["push"]["tries"].as_u64()), (Some(run.id.as_str()), Some("origin"), Some(branch.as_str()), Some(3)));
    assert!(failed["push"]["error"].as_str().unwrap().contains("frozen for the release"), "{failed:#}");
    assert_eq!(hook.received()[1].headers.get("idempotency-key").map(String::as_str), Some(format!("{}-push_failed", run.id).as_str()));

    // Attention where the tray reads it, and `why` names it.
    let overview = |e: &nightshift_core::Engine| nightshift_core::view::routines::overview(e, chrono::Utc::now()).unwrap().into_iter().find(|r| r.name == "deps").unwrap();
    let trouble = overview(&engine).push_failed.expect("attention while the branch is not pushed");
    assert!(trouble.starts_with("push to origin failed: git push to origin was refused"), "{trouble}");
    let why = nightshift_core::view::why::why(&engine, "deps", 1).unwrap();
    assert!(why.notes.iter().any(|n| n.starts_with(&format!("Run {}'s branch was not pushed to origin: git push to origin was refused", run.id))), "{:#?}", why.notes);

    // The remote takes pushes again: pushed, and nothing tells of the failure any more.
    accept_pushes(&remote);
    let pushed = engine.retry_push(&run.id).await.unwrap();
    assert_eq!(pushed.changes.unwrap().push.unwrap().state, PushState::Pushed);
    assert_eq!(git(&remote, &["rev-parse", &branch]), git(&repo, &["rev-parse", &branch]));
    assert_eq!(overview(&engine).push_failed, None);
    assert!(nightshift_core::view::why::why(&engine, "deps", 1).unwrap().notes.iter().all(|n| !n.contains("was not pushed")));
    assert_eq!(bus.notifications().len(), 2, "nothing more was told");
}
