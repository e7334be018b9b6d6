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
    th.script("claude", &format!("cat {}/logged-out.jsonl; exit 1", fx.display()));
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
