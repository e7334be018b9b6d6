//! Finish notifications through a real D-Bus notification server (tests/support/
//! notification_server.py) on a private session bus: branding, texts, policy, and a hung server
//! that must not delay settling.

mod common;

use common::{ctl, json, stderr};
use nightshift_testkit::TestHome;
use std::time::{Duration, Instant};

use nightshift_testkit::dbus::NotificationBus as Bus;

fn bus(th: &TestHome, mode: &str) -> Bus {
    Bus::start(th.path(), mode)
}

fn run_notify(th: &TestHome, bus: &Bus, name: &str) -> (serde_json::Value, Duration) {
    let start = Instant::now();
    let out = ctl(th).args(["run", name, "--wait", "--json", "--notify"]).env("DBUS_SESSION_BUS_ADDRESS", &bus.address).output().unwrap();
    let took = start.elapsed();
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1), "{}", stderr(&out));
    (json(&out), took)
}

#[test]
fn finish_notifications_are_branded_and_follow_the_policy() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "kill_grace_secs = 1\n").unwrap();
    th.routine("report", "schedule: \"0 * * * *\"\nnotify: always\ncommand: 'echo \"All 3 PRs are green\"; echo more'\n");
    th.routine("quiet", "schedule: \"0 * * * *\"\ncommand: echo fine\n");
    th.routine("broken", "schedule: \"0 * * * *\"\ncommand: 'echo disk full >&2; exit 3'\n");
    th.routine("slow", "schedule: \"0 * * * *\"\ntimeout: 1s\ncommand: sleep 30\n");
    th.routine("never", "schedule: \"0 * * * *\"\nnotify: never\ncommand: 'exit 1'\n");
    let bus = bus(&th, "record");

    run_notify(&th, &bus, "report");
    let n = bus.notifications();
    assert_eq!(n.len(), 1, "{n:#?}");
    assert_eq!(n[0]["app_name"], "Nightshift");
    assert!(n[0]["summary"].as_str().unwrap().starts_with("✓ report · "), "{n:#?}");
    assert_eq!(n[0]["body"], "All 3 PRs are green");
    assert!(n[0]["icon"].as_str().unwrap().ends_with("icons/notification.png"), "{n:#?}");
    assert_eq!(n[0]["actions"], serde_json::json!(["default", "Open", "open", "Open"]));

    // Commands notify on failures only by default; `never` means never.
    run_notify(&th, &bus, "quiet");
    run_notify(&th, &bus, "never");
    assert_eq!(bus.notifications().len(), 1);

    run_notify(&th, &bus, "broken");
    let n = bus.notifications();
    assert_eq!(n.len(), 2);
    assert_eq!(n[1]["summary"], "✗ broken · exit_nonzero");
    assert_eq!(n[1]["body"], "exited with code 3: disk full");
    assert_eq!(n[1]["hints"]["urgency"], 2, "failures are critical");

    run_notify(&th, &bus, "slow");
    let n = bus.notifications();
    assert_eq!(n[2]["summary"], "⏱ slow timed out after 1s");
}

#[test]
fn a_login_failure_says_which_account_needs_login() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "[[accounts]]\nemail = \"work@acme.dev\"\n").unwrap();
    let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/fixtures/claude-2.1.332");
    // The stream beside the script: a sandboxed run sees the program's folder, and a checkout
    // under /tmp (CI's clean clone) is not in its sandbox.
    let stream = th.bin_dir().join("logged-out.jsonl");
    std::fs::copy(fx.join("logged-out.jsonl"), &stream).unwrap();
    th.script("claude", &format!("cat {}; exit 1", stream.display()));
    th.routine("review", "schedule: \"0 9 * * *\"\nagent: claude\nprompt: go\naccount: work@acme.dev\n");
    let bus = bus(&th, "record");
    let out = ctl(&th)
        .args(["run", "review", "--wait", "--json", "--notify"])
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .env("CLAUDE_CODE_OAUTH_TOKEN_WORK_AT_ACME_DOT_DEV", "nightshift-test-token-work-0009")
        .output()
        .unwrap();
    assert_eq!(json(&out)["reason"], "auth_failed");
    let start = Instant::now();
    while bus.notifications().len() < 2 && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let n = bus.notifications();
    let summaries: Vec<&str> = n.iter().map(|x| x["summary"].as_str().unwrap()).collect();
    assert!(summaries.contains(&"✗ review · login needed for work@acme.dev"), "{summaries:?}");
    let finish = n.iter().find(|x| x["summary"] == "✗ review · login needed for work@acme.dev").unwrap();
    assert_eq!(finish["body"], "Not logged in · Please run /login");
}

#[test]
fn a_hung_notification_server_does_not_delay_settling() {
    let th = TestHome::new();
    th.routine("report", "schedule: \"0 * * * *\"\nnotify: always\ncommand: echo done\n");
    let bus = bus(&th, "hang");
    let (rec, took) = run_notify(&th, &bus, "report");
    assert_eq!(rec["status"], "completed");
    // The record was final long before the bounded notification attempt gave up.
    let started = chrono::DateTime::parse_from_rfc3339(rec["started_at"].as_str().unwrap()).unwrap();
    let finished = chrono::DateTime::parse_from_rfc3339(rec["finished_at"].as_str().unwrap()).unwrap();
    assert!((finished - started).num_milliseconds() < 2000, "{rec:#}");
    assert!(took < Duration::from_secs(15), "run --wait returned after {took:?}");
    assert_eq!(bus.notifications().len(), 1, "the server did receive the call");
}

/// A run that carries a budget past 80 % says so in its notification — also under `notify:
/// failures`, where a completed run is otherwise quiet — and only that run: the next one, already
/// past the mark, stays quiet.
#[test]
fn crossing_80_percent_of_a_budget_is_told_once() {
    let th = TestHome::new();
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"Reviewed 2 PRs","session_id":"s","total_cost_usd":3.0}"#;
    th.script("claude", &format!("echo '{result}'"));
    th.routine("review", "schedule: \"0 3 * * *\"\ntimezone: UTC\nnotify: failures\nagent: claude\nprompt: review\nbudget: {day: 10}\n");
    let bus = bus(&th, "record");
    run_notify(&th, &bus, "review");
    run_notify(&th, &bus, "review");
    assert_eq!(bus.notifications().len(), 0, "$6 of $10: below the mark, and `notify: failures`");
    run_notify(&th, &bus, "review");
    let n = bus.notifications();
    assert_eq!(n.len(), 1, "{n:#?}");
    assert!(n[0]["summary"].as_str().unwrap().starts_with("✓ review · "), "{n:#?}");
    assert_eq!(n[0]["body"], "Reviewed 2 PRs\n90 % of a budget: spent $9 of $10 today (routine review); frees at midnight UTC");
    // The next run is past the mark already (and the one after is blocked: not a crossing).
    run_notify(&th, &bus, "review");
    assert_eq!(bus.notifications().len(), 1, "{:#?}", bus.notifications());
}

/// The real Claude CLI reports its account's windows on every answer (the fake API sends
/// Anthropic's unified headers). The run whose report first carries a window past 80 % — and
/// then past 95 %, here a 429 that rejects — says so in its notification, also under `notify:
/// failures`; runs in between stay quiet; a new period (another reset) is told again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_passing_80_and_95_percent_is_told_once_per_reset() {
    use nightshift_testkit::{FakeAnthropic, Reply};
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    const TOKEN: &str = "nightshift-test-token-windows-0042";
    let fake = FakeAnthropic::start(None).await;
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "[[accounts]]\nemail = \"a@x.dev\"\n").unwrap();
    th.routine(
        "review",
        &format!(
            "schedule: \"0 2 * * *\"\ntimezone: UTC\nnotify: failures\nagent: claude\nprompt: Review\naccount: a@x.dev\ncwd: {}\nenv:\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n",
            th.user_home().display(),
            fake.url()
        ),
    );
    let bus = bus(&th, "record");
    let reset = (chrono::Utc::now().timestamp() / 3600 + 3) * 3600;
    let run_on = |reply: Reply| {
        fake.set(TOKEN, reply);
        let out = ctl(&th)
            .args(["run", "review", "--wait", "--json", "--notify"])
            .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
            .env("CLAUDE_CODE_OAUTH_TOKEN_A_AT_X_DOT_DEV", TOKEN)
            .output()
            .unwrap();
        json(&out)
    };
    let run = |five_hour: f64, five_hour_reset: i64| {
        run_on(Reply::Windows { five_hour, five_hour_reset, seven_day: 0.4, seven_day_reset: reset + 4 * 86_400, text: "Reviewed.".into() })
    };
    let resets_words = chrono::DateTime::from_timestamp(reset, 0).unwrap().format("%a %-d %b %H:%M UTC").to_string();

    assert_eq!(run(0.70, reset)["status"], "completed");
    assert_eq!(bus.notifications().len(), 0, "70 %: below the marks, and `notify: failures`");
    run(0.85, reset);
    let n = bus.notifications();
    assert_eq!(n.len(), 1, "{n:#?}");
    assert!(n[0]["summary"].as_str().unwrap().starts_with("✓ review · "), "{n:#?}");
    assert_eq!(n[0]["body"], format!("Reviewed.\na@x.dev's 5h window is 85 % used (past 80 %); it resets {resets_words}"));
    run(0.90, reset);
    assert_eq!(bus.notifications().len(), 1, "past 80 % already in this period: {:#?}", bus.notifications());

    // The limit itself: a 429 whose unified headers say the five hours are used up.
    assert_eq!(run_on(Reply::UnifiedLimit { reset_epoch: reset })["reason"], "rate_limited");
    let n = bus.notifications();
    assert_eq!(n.len(), 2, "{n:#?}");
    assert!(n[1]["body"].as_str().unwrap().ends_with(&format!("\na@x.dev's 5h window is 100 % used (past 95 %); it resets {resets_words}")), "{n:#?}");
    assert!(n.iter().all(|x| !x.to_string().contains(TOKEN)), "no token in a notification");

    // The next period is told again.
    run(0.82, reset + 5 * 3600);
    let n = bus.notifications();
    assert_eq!(n.len(), 3, "{n:#?}");
    assert!(n[2]["body"].as_str().unwrap().contains("a@x.dev's 5h window is 82 % used (past 80 %)"), "{n:#?}");
}
