//! The durable run lifecycle in one process: failover around busy accounts, work held by a
//! sign-in failure made up once, the end time of a run settled late, and the notification outbox
//! (retries, "not delivered", one summary for stale runs). Process-level drills (kill -9 of the
//! daemon and the CLI, two processes sharing lanes, the wrapper's own timeout) are in
//! `crates/cli/tests/lifecycle.rs`.

use chrono::{DateTime, Duration, Utc};
use nightshift_core::notify::{Notice, Notifier};
use nightshift_core::run::{Reason, RunRecord, RunStatus, Trigger};
use nightshift_core::store::{NewRun, RunQuery};
use nightshift_core::{Engine, EngineOptions, ManualClock, RecoveryMode, Scheduler};
use nightshift_testkit::{secs, wait_for_async, TestHome};
use std::sync::{Arc, Mutex};
use std::time::Duration as Std;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-2.1.332");

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn engine(th: &TestHome, clock: Arc<ManualClock>, settings: &str, env: &[(&str, &str)]) -> Engine {
    let settings = if settings.contains("kill_grace_secs") { settings.to_string() } else { format!("kill_grace_secs = 1\n{settings}") };
    let opts = EngineOptions::for_test(th.path()).settings(&settings).clock(clock).path_first(&th.bin_dir());
    let mut opts = env.iter().fold(opts, |o, (k, v)| o.env(k, *v));
    opts.delivery_backoff = vec![Std::from_millis(100), Std::from_millis(100), Std::from_millis(100)];
    opts.open()
}

fn rows(engine: &Engine, routine: &str) -> Vec<RunRecord> {
    engine.store().list_runs(&RunQuery { routine: Some(routine.into()), limit: 100, ..Default::default() }).unwrap().runs
}

/// An engine with three Claude accounts, a@, b@ and c@x.dev, whose tokens are tok-a, tok-b, tok-c.
fn with_three_accounts(th: &TestHome) -> Engine {
    let accounts = "[[accounts]]\nemail = \"a@x.dev\"\n[[accounts]]\nemail = \"b@x.dev\"\n[[accounts]]\nemail = \"c@x.dev\"\n";
    let env = [
        ("CLAUDE_CODE_OAUTH_TOKEN_A_AT_X_DOT_DEV", "tok-a"),
        ("CLAUDE_CODE_OAUTH_TOKEN_B_AT_X_DOT_DEV", "tok-b"),
        ("CLAUDE_CODE_OAUTH_TOKEN_C_AT_X_DOT_DEV", "tok-c"),
    ];
    engine(th, Arc::new(ManualClock::new(Utc::now())), &format!("max_parallel = 4\n{accounts}"), &env)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_skips_an_account_busy_with_another_run() {
    let th = TestHome::new();
    th.script(
        "claude",
        &format!(
            "case \"$CLAUDE_CODE_OAUTH_TOKEN\" in\n tok-a) cat {f}/unified.jsonl; exit 1;;\n tok-b) sleep 30;;\n tok-c) cat {f}/success.jsonl;;\nesac\n",
            f = FIXTURES
        ),
    );
    th.routine("hold", "schedule: \"0 1 * * *\"\nagent: claude\nprompt: hold\naccount: b@x.dev\n");
    th.routine("pool", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: go\naccounts: [a@x.dev, b@x.dev, c@x.dev]\n");
    let engine = with_three_accounts(&th);

    let hold = engine.run_now("hold", Trigger::Manual).await.unwrap();
    assert_eq!(engine.store().get_run(&hold.id).unwrap().account.as_deref(), Some("b@x.dev"));
    let rec = engine.run_now("pool", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((rec.status, rec.account.as_deref()), (RunStatus::Completed, Some("c@x.dev")), "{rec:#?}");
    let tried: Vec<(Option<&str>, RunStatus)> = rec.attempts.iter().map(|a| (a.account.as_deref(), a.status)).collect();
    assert_eq!(tried, vec![(Some("a@x.dev"), RunStatus::Failed), (Some("c@x.dev"), RunStatus::Completed)], "B was busy: the retry went to C");
    assert_eq!(rec.attempts[0].reason, Some(Reason::RateLimited));
    assert_eq!(engine.store().get_run(&hold.id).unwrap().status, RunStatus::Running, "the run on B was never disturbed");
    assert!(engine.cancel(&hold.id).await);
    assert_eq!(hold.wait().await.unwrap().status, RunStatus::Cancelled);
}

/// A routine pinned to one account (`account:`) that meets a rate limit while the rest of the pool
/// is free stays with its account — it never fails over to another (the pin is the user's
/// choice of whose quota and history it uses) — and says when that account's limit resets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_account_meeting_a_limit_beside_a_free_pool_is_not_failed_over() {
    let th = TestHome::new();
    let calls = th.path().join("calls");
    th.script(
        "claude",
        &format!(
            "echo \"$CLAUDE_CODE_OAUTH_TOKEN\" >> {c}\ncase \"$CLAUDE_CODE_OAUTH_TOKEN\" in\n tok-a) cat {f}/unified.jsonl; exit 1;;\n *) cat {f}/success.jsonl;;\nesac\n",
            c = calls.display(),
            f = FIXTURES
        ),
    );
    th.routine("pinned", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: go\naccount: a@x.dev\n");
    let engine = with_three_accounts(&th);
    let rec = engine.run_now("pinned", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((rec.status, rec.reason, rec.account.as_deref()), (RunStatus::Failed, Some(Reason::RateLimited), Some("a@x.dev")), "{rec:#?}");
    assert!(rec.attempts.iter().all(|a| a.account.as_deref() == Some("a@x.dev")), "never another account: {rec:#?}");
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().collect::<Vec<_>>(), ["tok-a"], "only its own account was started");
    assert!(rec.resets_at.is_some() && rec.message.as_deref().is_some_and(|m| m.contains("resets")), "says when it resets: {rec:#?}");
}

/// `[agents.claude] account`: a routine that names no account uses that one (as if it said
/// `account:`); one that names its own keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_default_account_is_used_where_a_routine_names_none() {
    let th = TestHome::new();
    th.script("claude", &format!("cat {f}/success.jsonl", f = FIXTURES));
    th.routine("any", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: go\n");
    th.routine("own", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: go\naccount: a@x.dev\n");
    let accounts = "[[accounts]]\nemail = \"a@x.dev\"\n[[accounts]]\nemail = \"b@x.dev\"\n[agents.claude]\naccount = \"b@x.dev\"\n";
    let env = [("CLAUDE_CODE_OAUTH_TOKEN_A_AT_X_DOT_DEV", "tok-a"), ("CLAUDE_CODE_OAUTH_TOKEN_B_AT_X_DOT_DEV", "tok-b")];
    let engine = engine(&th, Arc::new(ManualClock::new(Utc::now())), accounts, &env);
    let any = engine.run_now("any", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((any.status, any.account.as_deref()), (RunStatus::Completed, Some("b@x.dev")), "{any:#?}");
    let own = engine.run_now("own", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((own.status, own.account.as_deref()), (RunStatus::Completed, Some("a@x.dev")), "{own:#?}");
}

/// Every numeric setting and routine limit at its documented maximum: nothing overflows — a rate
/// limit without a reset time cools down for the longest allowed time, a 7-day timeout arms, a
/// cancel with an hour of grace ends as soon as the run's processes are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_setting_at_its_maximum_works() {
    let th = TestHome::new();
    // A rate limit with no reset time in it: the cooldown setting decides.
    th.script("claude", "echo '{\"type\":\"result\",\"subtype\":\"error\",\"is_error\":true,\"result\":\"API Error: 429 rate_limit_error\"}'; exit 1");
    th.routine("limited", "schedule: \"0 1 * * *\"\nagent: claude\nprompt: go\naccount: a@x.dev\ntimeout: 7d\n");
    th.routine("long", "schedule: \"0 2 * * *\"\ncommand: sleep 600\ntimeout: 7d\n");
    let settings = "max_parallel = 64\nkill_grace_secs = 3600\nauto_pause_after = 10000\nrate_limit_cooldown_mins = 10080\n[[accounts]]\nemail = \"a@x.dev\"\n";
    let now = Utc::now();
    let engine = engine(&th, Arc::new(ManualClock::new(now)), settings, &[("CLAUDE_CODE_OAUTH_TOKEN_A_AT_X_DOT_DEV", "tok-a")]);

    let rec = engine.run_now("limited", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((rec.status, rec.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{rec:#?}");
    let health = &engine.accounts_health()[0];
    let off = health.resets_at.map(|r| (r - (now + Duration::minutes(10_080))).num_milliseconds().abs());
    assert!(off.is_some_and(|ms| ms <= 1), "a week from now (stored to the millisecond): {health:#?}");

    let long = engine.run_now("long", Trigger::Manual).await.unwrap();
    let started = std::time::Instant::now();
    assert!(engine.cancel(&long.id).await);
    assert_eq!(long.wait().await.unwrap().status, RunStatus::Cancelled);
    assert!(started.elapsed() < Std::from_secs(30), "the hour of grace ended with the run: {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_that_failed_sign_in_is_made_up_once_after_a_new_login() {
    let th = TestHome::new();
    let state = th.path().join("logged-in");
    // Logged out until the "login" below writes the marker (a faithful replay of the real CLI's
    // streams for both cases).
    th.script(
        "claude",
        &format!("if [ -e {s} ]; then cat {f}/success.jsonl; else cat {f}/logged-out.jsonl; exit 1; fi", s = state.display(), f = FIXTURES),
    );
    th.routine("nightly", "schedule: \"0 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: go\naccount: c@x.dev\n");
    th.routine("adhoc", "schedule: \"0 3 * * *\"\ntimezone: UTC\nagent: claude\nprompt: go\naccount: c@x.dev\n");
    let start = at("2026-11-30T09:59:00Z");
    let clock = Arc::new(ManualClock::new(start));
    let engine = engine(&th, clock.clone(), "[[accounts]]\nemail = \"c@x.dev\"\n", &[("CLAUDE_CODE_OAUTH_TOKEN_C_AT_X_DOT_DEV", "tok-c")]);
    let sched = Scheduler::new(engine.clone());
    sched.tick().await.unwrap();
    clock.set(start + Duration::minutes(1));
    sched.tick().await.unwrap();
    let failed = wait_for_async("the scheduled run to end", secs(10), || rows(&engine, "nightly").into_iter().find(|r| r.status.is_final())).await;
    assert_eq!((failed.status, failed.reason, failed.trigger), (RunStatus::Failed, Some(Reason::AuthFailed), Trigger::Schedule));
    assert_eq!(engine.accounts_health()[0].verdict.as_str(), "revoked");
    // A manual run stopped by the same account (now at preflight) is the person's to repeat,
    // not owed.
    let manual = engine.run_now("adhoc", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((manual.status, manual.reason), (RunStatus::Blocked, Some(Reason::AuthPreflight)));

    // Nothing is owed while the account still cannot sign in.
    clock.set(start + Duration::minutes(5));
    assert!(sched.tick().await.unwrap().fired.is_empty());

    // `claude /login` writes the account's credentials file: the held run is made up, once.
    std::fs::write(&state, "").unwrap();
    let dir = th.path().join("accounts/claude/c-at-x.dev");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(".credentials.json"),
        r#"{"claudeAiOauth":{"accessToken":"fresh-login-0010","refreshToken":"r","expiresAt":99999999999999,"scopes":["user:inference"]}}"#,
    )
    .unwrap();
    clock.set(start + Duration::minutes(6));
    let report = sched.tick().await.unwrap();
    assert_eq!(report.fired.iter().map(|f| (f.0.as_str(), f.2)).collect::<Vec<_>>(), vec![("nightly", Trigger::Catchup)]);
    let made_up = wait_for_async("the make-up run to end", secs(10), || rows(&engine, "nightly").into_iter().find(|r| r.trigger == Trigger::Catchup && r.status.is_final())).await;
    assert_eq!(made_up.status, RunStatus::Completed, "{made_up:#?}");
    assert_eq!(engine.store().get_run(&failed.id).unwrap().made_up_by.as_deref(), Some(made_up.id.as_str()));
    assert_eq!(rows(&engine, "adhoc").len(), 1, "no make-up for a manual run");
    clock.set(start + Duration::minutes(7));
    assert!(sched.tick().await.unwrap().fired.is_empty(), "owed once, not again");
}

#[tokio::test]
async fn a_run_settled_hours_later_keeps_the_end_time_of_its_process() {
    let th = TestHome::new();
    th.routine("job", "schedule: \"0 * * * *\"\ncommand: echo\n");
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let engine = engine(&th, clock.clone(), "", &[]);
    let run_dir = th.path().join("runs/job/late1");
    let mut p = nightshift_core::runner::process::spawn(&nightshift_core::runner::process::SpawnSpec {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), "sleep 0.3; echo done".into()],
        env: [("PATH".to_string(), "/usr/bin:/bin".to_string())].into(),
        cwd: None,
        run_dir: run_dir.clone(),
        timeout: None,
        kill_grace: Std::from_secs(1),
        scrubber: None,
    })
    .unwrap();
    let started = Utc::now();
    engine
        .store()
        .insert_run(&NewRun {
            id: "late1".into(),
            routine: "job".into(),
            trigger: Trigger::Cli,
            agent: nightshift_core::words::Agent::Command,
            status: RunStatus::Running,
            reason: None,
            message: None,
            scheduled_for: None,
            started_at: Some(started),
            finished_at: None,
            account: None,
            run_dir: run_dir.display().to_string(),
            owner: Some((999_999, "gone".into())),
            sort_at: started,
        })
        .unwrap();
    engine.store().set_process("late1", p.pid, p.start_time.as_deref()).unwrap();
    p.child.wait().await.unwrap();
    // Nobody watched; the next engine looks ten hours later.
    clock.set(started + Duration::hours(10));
    engine.recover(RecoveryMode::SettleFinished).await.unwrap();
    let rec = engine.store().get_run("late1").unwrap();
    assert_eq!(rec.status, RunStatus::Completed);
    let took = rec.duration_ms.unwrap();
    assert!((250..5_000).contains(&took), "the process's own duration, not the ten hours until settling: {took} ms");
    assert!(rec.finished_at.unwrap() < started + Duration::seconds(5), "{rec:#?}");
}

/// A notifier that answers like a server told to refuse `refuse` times, then shows everything.
struct Flaky {
    refuse: Mutex<usize>,
    shown: Mutex<Vec<Notice>>,
    tries: Mutex<usize>,
}

impl Notifier for Flaky {
    fn send(&self, n: &Notice) -> Result<(), String> {
        *self.tries.lock().unwrap() += 1;
        let mut left = self.refuse.lock().unwrap();
        if *left > 0 {
            *left -= 1;
            return Err("org.freedesktop.Notifications.Error: refused".into());
        }
        self.shown.lock().unwrap().push(n.clone());
        Ok(())
    }
}

fn flaky(refuse: usize) -> Arc<Flaky> {
    Arc::new(Flaky { refuse: Mutex::new(refuse), shown: Mutex::new(Vec::new()), tries: Mutex::new(0) })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_notification_is_retried_and_shown_once() {
    let th = TestHome::new();
    th.routine("report", "schedule: \"0 * * * *\"\nnotify: always\ncommand: echo all green\n");
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let engine = engine(&th, clock.clone(), "", &[]);
    let notifier = flaky(2);
    engine.enable_notifications(notifier.clone());
    let rec = engine.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let id = rec.id.clone();
    // A retry is due by the engine's clock: it moves on while the test looks.
    wait_for_async("the notification to be delivered", secs(10), || {
        clock.advance(chrono::Duration::milliseconds(200));
        (engine.store().get_run(&id).unwrap().notified.map(|d| d.as_str()) == Some("delivered")).then_some(())
    })
    .await;
    let shown = notifier.shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(shown[0].summary.starts_with("✓ report · "));
    assert_eq!(*notifier.tries.lock().unwrap(), 3, "refused twice, accepted on the third try");
    // Exactly once: nothing is owed any more, so no later pass can send it again.
    assert_eq!(engine.store().next_delivery_due(&nightshift_core::run::Channel::Notify).unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_that_never_gets_through_is_recorded_as_not_delivered() {
    let th = TestHome::new();
    th.routine("report", "schedule: \"0 * * * *\"\nnotify: always\ncommand: echo all green\n");
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let engine = engine(&th, clock.clone(), "", &[]);
    engine.enable_notifications(flaky(usize::MAX));
    let t0 = std::time::Instant::now();
    let rec = engine.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert!(t0.elapsed() < Std::from_secs(3), "settling never waits for notifications");
    assert_eq!(rec.notified.map(|d| d.as_str()), Some("pending"));
    let id = rec.id.clone();
    wait_for_async("the last try", secs(10), || {
        clock.advance(chrono::Duration::milliseconds(200));
        (engine.store().get_run(&id).unwrap().notified.map(|d| d.as_str()) == Some("not_delivered")).then_some(())
    })
    .await;
    assert_eq!(engine.store().delivery_error(&id, &nightshift_core::run::Channel::Notify).unwrap().as_deref(), Some("the notification server refused: org.freedesktop.Notifications.Error: refused"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_settled_without_a_notifier_are_notified_by_the_next_one_and_old_ones_summarised() {
    let th = TestHome::new();
    th.routine("report", "schedule: \"0 * * * *\"\nnotify: always\ncommand: echo all green\n");
    th.routine("broken", "schedule: \"0 * * * *\"\ncommand: exit 3\n");
    let clock = Arc::new(ManualClock::new(Utc::now() - Duration::days(3)));
    // A plain CLI-like engine settles runs with no notifier: three days ago, and now.
    let cli = engine(&th, clock.clone(), "", &[]);
    let old_a = cli.run_now("report", Trigger::Cli).await.unwrap().wait().await.unwrap();
    let old_b = cli.run_now("broken", Trigger::Cli).await.unwrap().wait().await.unwrap();
    clock.set(Utc::now());
    let fresh = cli.run_now("report", Trigger::Cli).await.unwrap().wait().await.unwrap();
    for r in [&old_a, &old_b, &fresh] {
        assert_eq!(r.notified.map(|d| d.as_str()), Some("pending"), "owed to the next notifier: {r:#?}");
    }
    drop(cli);
    // The app (or `daemon --notify`) starts: one notification for the fresh run, one summary.
    let app = engine(&th, clock.clone(), "", &[]);
    let notifier = flaky(0);
    app.enable_notifications(notifier.clone());
    // Everything owed settled (a notice is recorded after it is sent): all that will be shown was.
    wait_for_async("nothing owed", secs(10), || app.store().next_delivery_due(&nightshift_core::run::Channel::Notify).unwrap().is_none().then_some(())).await;
    let shown = notifier.shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 2, "{shown:#?}");
    let summary = shown.iter().find(|n| n.run_id.is_none()).expect("a summary");
    assert_eq!(summary.summary, "Nightshift · 2 runs finished while you were away");
    assert!(summary.body.starts_with("1 completed, 1 did not"), "{summary:?}");
    assert!(shown.iter().any(|n| n.run_id.as_deref() == Some(fresh.id.as_str())));
    assert_eq!(app.store().get_run(&old_a.id).unwrap().notified.map(|d| d.as_str()), Some("summarized"));
    assert_eq!(app.store().get_run(&fresh.id).unwrap().notified.map(|d| d.as_str()), Some("delivered"));
    // A second notifier later sends nothing again: a new run's notification (shown by whichever
    // of the two takes it first) is the only one that follows.
    let again = engine(&th, clock, "", &[]);
    let second = flaky(0);
    again.enable_notifications(second.clone());
    let newer = again.run_now("report", Trigger::Cli).await.unwrap().wait().await.unwrap();
    wait_for_async("the new run's notification", secs(10), || (again.store().get_run(&newer.id).unwrap().notified.map(|d| d.as_str()) == Some("delivered")).then_some(())).await;
    let later: Vec<Option<String>> = notifier.shown.lock().unwrap().iter().skip(2).chain(second.shown.lock().unwrap().iter()).map(|n| n.run_id.clone()).collect();
    assert_eq!(later, vec![Some(newer.id.clone())], "only the new run, nothing sent again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notifier_hears_of_runs_other_engines_settle() {
    // The app as a viewer (a daemon without --notify schedules): runs the daemon settles are
    // still notified, through the home's wake file, not by polling.
    let th = TestHome::new();
    th.routine("report", "schedule: \"0 * * * *\"\nnotify: always\ncommand: echo all green\n");
    let viewer = engine(&th, Arc::new(ManualClock::new(Utc::now())), "", &[]);
    let notifier = flaky(0);
    viewer.enable_notifications(notifier.clone());
    tokio::time::sleep(Std::from_millis(200)).await;
    let daemon = engine(&th, Arc::new(ManualClock::new(Utc::now())), "", &[]);
    let rec = daemon.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let id = rec.id.clone();
    wait_for_async("the viewer to notify", secs(10), || notifier.shown.lock().unwrap().iter().any(|n| n.run_id.as_deref() == Some(id.as_str())).then_some(())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_listener_of_one_engine_hears_other_engines_settle_and_a_dropped_one_stops_nothing() {
    // The viewer's notifier and webhook deliverer share one watch on the wake file: each hears
    // every run the daemon settles, and a scheduler started and dropped in between (its own
    // listener gone) leaves the others listening.
    let th = TestHome::new();
    let receiver = nightshift_testkit::WebhookReceiver::start(vec![nightshift_testkit::Answer::Accept; 2], None).await;
    th.routine("report", "schedule: \"0 * * * *\"\nnotify: always\ncommand: echo all green\nwebhooks: [team]\n");
    let settings = format!("[[webhooks]]\nname = \"team\"\nurl = \"{}\"\n", receiver.url());
    let viewer = engine(&th, Arc::new(ManualClock::new(Utc::now())), &settings, &[]);
    let notifier = flaky(0);
    viewer.enable_notifications(notifier.clone());
    viewer.enable_webhooks();
    let daemon = engine(&th, Arc::new(ManualClock::new(Utc::now())), &settings, &[]);
    for round in 1..=2 {
        if round == 2 {
            let shutdown = Arc::new(tokio::sync::Notify::new());
            let task = tokio::spawn(Scheduler::new(viewer.clone()).run(Arc::clone(&shutdown)));
            tokio::time::sleep(Std::from_millis(100)).await;
            shutdown.notify_one();
            task.await.unwrap();
        }
        tokio::time::sleep(Std::from_millis(200)).await;
        let id = daemon.run_now("report", Trigger::Manual).await.unwrap().wait().await.unwrap().id;
        wait_for_async("the viewer's notifier to hear of the run", secs(10), || notifier.shown.lock().unwrap().iter().any(|n| n.run_id.as_deref() == Some(id.as_str())).then_some(())).await;
        wait_for_async("the viewer's webhook deliverer to hear of the run", secs(10), || receiver.received().iter().any(|r| r.body.contains(&id)).then_some(())).await;
    }
}

/// Usage windows from the runs' own streams: a's run reports five hours at 85 % (Claude Code's
/// `unifiedWindows`, replayed from the real CLI's stream) and they are the account's figures;
/// the pool's next run goes to b, which has more headroom; a scheduled run pinned to a waits for
/// the five-hour reset instead of eating a's `reserve = 20`, while a manual one may use it; past
/// the reset the window shows reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn windows_are_recorded_and_scheduled_work_keeps_the_reserve() {
    let th = TestHome::new();
    th.script(
        "claude",
        &format!("case \"$CLAUDE_CODE_OAUTH_TOKEN\" in\n tok-a) cat {f}/windows.jsonl;;\n *) cat {f}/success.jsonl;;\nesac\n", f = FIXTURES),
    );
    th.routine("pooled", "schedule: \"0 3 * * *\"\ntimezone: UTC\nagent: claude\nprompt: go\naccounts: [a@x.dev, b@x.dev]\n");
    th.routine("pinned", "schedule: \"0 16 * * *\"\ntimezone: UTC\nagent: claude\nprompt: go\naccount: a@x.dev\n");
    // The recorded stream's five-hour window resets at 17:43:32 UTC on 3 Dec 2026.
    let start = at("2026-12-03T15:00:00Z");
    let clock = Arc::new(ManualClock::new(start));
    let settings = "[[accounts]]\nemail = \"a@x.dev\"\nreserve = 20\n[[accounts]]\nemail = \"b@x.dev\"\n";
    let engine = engine(&th, clock.clone(), settings, &[("CLAUDE_CODE_OAUTH_TOKEN_A_AT_X_DOT_DEV", "tok-a"), ("CLAUDE_CODE_OAUTH_TOKEN_B_AT_X_DOT_DEV", "tok-b")]);
    let notifier = flaky(0);
    engine.enable_notifications(notifier.clone());

    let first = engine.run_now("pooled", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((first.status, first.account.as_deref()), (RunStatus::Completed, Some("a@x.dev")), "no windows known: the listed order");
    let a = engine.accounts_health().into_iter().find(|h| h.account == "a@x.dev").unwrap();
    let seen: Vec<(&str, f64, &str, Option<&str>)> = a.windows.iter().map(|w| (w.window.as_str(), w.used_percent, w.status.as_str(), w.run_id.as_deref())).collect();
    assert_eq!(seen, [("five_hour", 85.0, "allowed_warning", Some(first.id.as_str())), ("seven_day", 40.0, "allowed", Some(first.id.as_str()))]);
    let reset = a.windows[0].resets_at.unwrap();

    let second = engine.run_now("pooled", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(second.account.as_deref(), Some("b@x.dev"), "the most headroom first");

    let manual = engine.run_now("pinned", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((manual.status, manual.account.as_deref()), (RunStatus::Completed, Some("a@x.dev")), "a person's run may use the reserve");

    let sched = Scheduler::new(engine.clone());
    sched.tick().await.unwrap();
    clock.set(at("2026-12-03T16:00:30Z"));
    sched.tick().await.unwrap();
    let held = wait_for_async("the scheduled run", secs(10), || rows(&engine, "pinned").into_iter().find(|r| r.trigger == Trigger::Schedule && r.status != RunStatus::Running)).await;
    assert_eq!(held.status, RunStatus::Queued, "{held:#?}");
    let said = held.message.clone().unwrap_or_default();
    assert!(said.contains("keeping a@x.dev's reserve: its 5h window is 85 % used, and `reserve = 20` keeps the last 20 % for your own work; it resets Thu 3 Dec 17:43 UTC; it waits until then"), "{said}");
    let due = held.due_at.unwrap();
    assert!(due >= reset && due < reset + Duration::seconds(2), "it waits for the window's reset: {held:?}");

    clock.set(reset + Duration::minutes(1));
    let a = engine.accounts_health().into_iter().find(|h| h.account == "a@x.dev").unwrap();
    assert_eq!((a.windows[0].status.as_str(), a.windows[0].used_percent), ("reset", 0.0), "past its reset a window is shown reset");
    assert_eq!(a.windows[1].used_percent, 40.0, "the week has not reset");

    // The held run starts once the window reset, and that is told once.
    sched.tick().await.unwrap();
    let started = wait_for_async("the held run to run", secs(10), || engine.store().get_run(&held.id).ok().filter(|r| r.status.is_final())).await;
    assert_eq!((started.status, started.account.as_deref()), (RunStatus::Completed, Some("a@x.dev")), "{started:#?}");
    let reset_told = wait_for_async("the reset notice", secs(10), || notifier.shown.lock().unwrap().iter().find(|n| n.summary.starts_with("↻")).cloned()).await;
    assert_eq!((reset_told.summary.as_str(), reset_told.run_id.as_deref()), ("↻ a@x.dev's limit reset · held work starts", Some(held.id.as_str())));
    assert_eq!(reset_told.body, "pinned starts now (it waited since 16:00)");
    // The first report of the period past 80 % was told in its run's notification, once.
    let shown = notifier.shown.lock().unwrap().clone();
    let told: Vec<&str> = shown.iter().filter(|n| n.body.contains("past 80 %")).map(|n| n.run_id.as_deref().unwrap_or("")).collect();
    assert_eq!(told, [first.id.as_str()], "{shown:#?}");
}

/// The opt-in usage probe against the fake Anthropic API's OAuth usage endpoint: an account with
/// `usage_probe = true` is asked with its Claude login's access token (and the beta flag) — at
/// most every 10 minutes — and its windows are the account's; a first pass of 80 % is told once;
/// an account without it is never asked; a setup token the endpoint refuses (403) is told in
/// words that say what to do; no token rests anywhere under the home.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_usage_probe_asks_only_opted_in_accounts_at_most_every_ten_minutes() {
    use nightshift_testkit::{FakeAnthropic, Reply};
    const OAUTH: &str = "sk-ant-oat01-probe-login-token-000000000001";
    const SETUP: &str = "sk-ant-oat01-probe-setup-token-000000000002";
    const OTHER: &str = "sk-ant-oat01-probe-unasked-token-00000000003";
    let fake = FakeAnthropic::start(None).await;
    let five_hours = at("2026-12-03T17:00:00Z").timestamp();
    let windows = Reply::Windows { five_hour: 0.85, five_hour_reset: five_hours, seven_day: 0.4, seven_day_reset: five_hours + 3 * 86_400, text: String::new() };
    fake.set(OAUTH, windows.clone());
    fake.set(OTHER, windows);
    fake.set(SETUP, Reply::Success { text: String::new() }); // a token without user:profile: 403 there
    let th = TestHome::new();
    let login = th.path().join("accounts/claude/a-at-x.dev");
    std::fs::create_dir_all(&login).unwrap();
    let expires = at("2026-12-04T15:00:00Z").timestamp_millis();
    std::fs::write(login.join(".credentials.json"), format!("{{\"claudeAiOauth\":{{\"accessToken\":\"{OAUTH}\",\"refreshToken\":\"r\",\"expiresAt\":{expires},\"scopes\":[\"user:inference\",\"user:profile\"]}}}}")).unwrap();
    let clock = Arc::new(ManualClock::new(at("2026-12-03T15:00:00Z")));
    let settings = format!(
        "usage_probe_url = \"{}/api/oauth/usage\"\n[[accounts]]\nemail = \"a@x.dev\"\nusage_probe = true\n[[accounts]]\nemail = \"s@x.dev\"\nusage_probe = true\n[[accounts]]\nemail = \"b@x.dev\"\n",
        fake.url()
    );
    let engine = engine(&th, clock.clone(), &settings, &[("CLAUDE_CODE_OAUTH_TOKEN_S_AT_X_DOT_DEV", SETUP), ("CLAUDE_CODE_OAUTH_TOKEN_B_AT_X_DOT_DEV", OTHER)]);
    let notifier = flaky(0);
    engine.enable_live_notices(notifier.clone());

    let e = engine.clone();
    let asked = tokio::task::spawn_blocking(move || e.probe_usage_now()).await.unwrap();
    assert_eq!(asked, ["a@x.dev", "s@x.dev"]);
    let calls: Vec<(String, Option<String>)> = fake.requests().into_iter().map(|r| (format!("{} {}", r.method, r.path), r.credential)).collect();
    assert_eq!(calls, [("GET /api/oauth/usage".to_string(), Some(OAUTH.to_string())), ("GET /api/oauth/usage".to_string(), Some(SETUP.to_string()))], "b has no usage_probe: never asked");
    let a = engine.accounts_health().into_iter().find(|h| h.account == "a@x.dev").unwrap();
    let seen: Vec<(&str, f64, &str, Option<&str>)> = a.windows.iter().map(|w| (w.window.as_str(), w.used_percent, w.status.as_str(), w.run_id.as_deref())).collect();
    assert_eq!(seen, [("five_hour", 85.0, "allowed_warning", None), ("seven_day", 40.0, "allowed", None)]);
    assert_eq!(a.windows[0].resets_at.map(|t| t.timestamp()), Some(five_hours));
    let told = wait_for_async("the probe's notices", secs(10), || {
        let shown = notifier.shown.lock().unwrap().clone();
        (shown.len() >= 2).then_some(shown)
    })
    .await;
    let passed = told.iter().find(|n| n.summary == "◔ a@x.dev · 5h 85 %").unwrap_or_else(|| panic!("{told:#?}"));
    let resets = at("2026-12-03T17:00:00Z").with_timezone(&nightshift_core::schedule::local_tz()).format("%a %-d %b %H:%M %Z");
    assert_eq!(passed.body, format!("a@x.dev's 5h window is 85 % used (past 80 %); it resets {resets}"));
    let refused = told.iter().find(|n| n.summary == "✗ usage probe of s@x.dev").unwrap_or_else(|| panic!("{told:#?}"));
    assert!(refused.body.starts_with("the usage endpoint answered HTTP 403: ") && refused.body.contains("a `claude setup-token` token cannot: it lacks the user:profile scope"), "{}", refused.body);

    // Asked again within 10 minutes: nobody is asked; past them: asked again, and the 80 % mark,
    // passed already in this period, is not told twice.
    clock.set(at("2026-12-03T15:09:00Z"));
    let e = engine.clone();
    assert!(tokio::task::spawn_blocking(move || e.probe_usage_now()).await.unwrap().is_empty());
    clock.set(at("2026-12-03T15:10:30Z"));
    let e = engine.clone();
    assert_eq!(tokio::task::spawn_blocking(move || e.probe_usage_now()).await.unwrap(), ["a@x.dev", "s@x.dev"]);
    assert_eq!(fake.requests().len(), 4);
    tokio::time::sleep(Std::from_millis(300)).await;
    let shown = notifier.shown.lock().unwrap().clone();
    assert_eq!(shown.iter().filter(|n| n.summary.starts_with("◔")).count(), 1, "{shown:#?}");
    assert_eq!(shown.iter().filter(|n| n.summary.starts_with("✗ usage probe")).count(), 1, "a refusal is told once until the probe works again: {shown:#?}");

    // No token in the store or anywhere else Nightshift writes (the login file is Claude's own).
    for token in [OAUTH, SETUP, OTHER] {
        let mut found = Vec::new();
        let mut dirs = vec![th.path().to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p != login.join(".credentials.json") && std::fs::read(&p).unwrap_or_default().windows(token.len()).any(|w| w == token.as_bytes()) {
                    found.push(p);
                }
            }
        }
        assert!(found.is_empty(), "{token} found in {found:?}");
    }
}

/// Off by default: with no `usage_probe`, nothing is ever asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_usage_probe_the_usage_endpoint_is_never_asked() {
    use nightshift_testkit::{FakeAnthropic, Reply};
    let fake = FakeAnthropic::start(Some(Reply::Success { text: String::new() })).await;
    let th = TestHome::new();
    let settings = format!("usage_probe_url = \"{}/api/oauth/usage\"\n[[accounts]]\nemail = \"a@x.dev\"\n", fake.url());
    let engine = engine(&th, Arc::new(ManualClock::new(Utc::now())), &settings, &[("CLAUDE_CODE_OAUTH_TOKEN_A_AT_X_DOT_DEV", "sk-ant-oat01-never-asked")]);
    let e = engine.clone();
    assert!(tokio::task::spawn_blocking(move || e.probe_usage_now()).await.unwrap().is_empty());
    assert!(fake.requests().is_empty());
}
