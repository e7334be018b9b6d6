//! Dependable nights: a try that meets an overloaded API is tried again, a rate limit that resets
//! is waited out — each as further attempts of one run — with the real `nightshiftctl`, the real
//! Claude Code CLI against the fake Anthropic API on loopback, and a real SQLite home.

mod common;

use common::{ctl, json, runs, start_daemon, stderr, stop, tokio_ctl};
use nightshift_testkit::home::require_claude_cli;
use nightshift_testkit::{FakeAnthropic, Reply, TestHome};
use std::time::Duration;

const REPORT: &str = "## Nightly triage\n\nNothing urgent.";

/// A Claude routine against `fake` with `token`, and `extra` routine lines. Its daily slot is
/// about twelve hours away whenever the test runs: the engine never waits for a limit or retries
/// past the next slot, so a fixed slot ("0 2 * * *") made the hour-long waits below fail when the
/// suite ran in the hour before it.
fn claude_routine(th: &TestHome, fake: &FakeAnthropic, token: &str, extra: &str) {
    use chrono::Timelike;
    let hour = (chrono::Local::now() + chrono::Duration::hours(12)).hour();
    th.routine(
        "triage",
        &format!(
            "schedule: \"0 {hour} * * *\"\nagent: claude\nmode: plan\nprompt: Triage new issues\ntimeout: 2m\ncwd: {}\n{extra}env:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_OAUTH_TOKEN: {token}\n",
            th.user_home().display(),
            fake.url()
        ),
    );
}

async fn run_json(th: &TestHome, args: &[&str]) -> (serde_json::Value, i32) {
    let out = tokio_ctl(th).args(["run", "triage", "--wait", "--json"]).args(args).output().await.unwrap();
    assert!(!stderr(&out).contains("error:"), "{}", stderr(&out));
    (json(&out), out.status.code().unwrap_or(-1))
}

fn message_requests(fake: &FakeAnthropic) -> usize {
    fake.requests().iter().filter(|r| r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens")).count()
}

fn time(v: &serde_json::Value) -> chrono::DateTime<chrono::Utc> {
    nightshift_core::words::parse_time(v.as_str().unwrap_or_else(|| panic!("not a time: {v}"))).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_api_is_tried_again_and_the_run_completes_as_one_record() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok", Reply::OverloadedTimes { times: 1, text: REPORT.into() });
    let th = TestHome::new();
    claude_routine(&th, &fake, "tok", "retries: 2\nretry_backoff: 1s\n");
    let (rec, code) = run_json(&th, &[]).await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    let attempts = rec["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{rec:#}");
    assert_eq!((attempts[0]["status"].as_str(), attempts[0]["reason"].as_str()), (Some("failed"), Some("api_unavailable")), "{rec:#}");
    assert!(attempts[0]["message"].as_str().unwrap().starts_with("API Error: 529 Overloaded"), "{rec:#}");
    // The second try started when the first said it would (a 1 s backoff, ±20 %), not before.
    let (ended, due, second) = (time(&attempts[0]["finished_at"]), time(&attempts[0]["next_at"]), time(&attempts[1]["started_at"]));
    assert!(due - ended >= chrono::Duration::milliseconds(800) && due - ended <= chrono::Duration::milliseconds(1200), "{rec:#}");
    assert!(second >= due, "{rec:#}");
    assert_eq!(attempts[1]["status"], "completed");
    assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT);
    // One record; the first try's output kept beside the second's.
    assert_eq!(runs(&th).len(), 1);
    assert!(std::path::Path::new(rec["run_dir"].as_str().unwrap()).join("stdout.attempt-1.log").is_file());
    assert_eq!(message_requests(&fake), 2, "{:?}", fake.requests());
    // `show` tells the story.
    let shown = String::from_utf8(ctl(&th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap().stdout).unwrap();
    assert!(shown.contains("attempt 1") && shown.contains("api_unavailable") && shown.contains("next try at"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_failure_is_never_tried_again() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok-revoked", Reply::Unauthorized);
    let th = TestHome::new();
    // What one try of the CLI sends on a 401 (it asks twice by itself)…
    claude_routine(&th, &fake, "tok-revoked", "retries: 0\n");
    let (rec, _) = run_json(&th, &[]).await;
    assert_eq!(rec["reason"], "auth_failed", "{rec:#}");
    let one_try = message_requests(&fake);
    assert!(one_try >= 1);
    // … is all a routine that asks for retries sends too.
    claude_routine(&th, &fake, "tok-revoked", "retries: 3\nretry_backoff: 1s\n");
    let (rec, code) = run_json(&th, &[]).await;
    assert_eq!((code, rec["status"].as_str(), rec["reason"].as_str()), (1, Some("failed"), Some("auth_failed")), "{rec:#}");
    assert_eq!(rec["attempts"], serde_json::json!([]), "one try: {rec:#}");
    assert_eq!(message_requests(&fake), 2 * one_try, "one try's requests: {:?}", fake.requests());
    assert!(!std::path::Path::new(rec["run_dir"].as_str().unwrap()).join("stdout.attempt-1.log").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_own_exit_is_tried_again_only_when_the_routine_asks() {
    let th = TestHome::new();
    // Exits 3 the first time it runs, 0 after.
    let counter = th.path().join("tries");
    let command = format!("n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; [ $n -ge 1 ] || exit 3", c = counter.display());
    th.routine("flaky", &format!("schedule: \"0 2 * * *\"\ncommand: '{command}'\n"));
    let out = tokio_ctl(&th).args(["run", "flaky", "--wait", "--json"]).output().await.unwrap();
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str(), rec["exit_code"].as_i64()), (Some("failed"), Some("exit_nonzero"), Some(3)), "{rec:#}");
    assert_eq!(std::fs::read_to_string(&counter).unwrap().trim(), "1", "not retried");

    std::fs::remove_file(&counter).unwrap();
    th.routine("flaky", &format!("schedule: \"0 2 * * *\"\ncommand: '{command}'\nretries: 1\nretry_backoff: 1s\n"));
    let out = tokio_ctl(&th).args(["run", "flaky", "--wait", "--json"]).output().await.unwrap();
    let rec = json(&out);
    assert_eq!(rec["status"], "completed", "{rec:#}");
    // The wait for the second try is said (also when stderr is not a terminal), once.
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(said.matches("exit nonzero on try 1; try 2 of 2 at ").count(), 1, "{said}");
    assert!(said.contains("— this command waits and starts it then (Ctrl-C cancels the run)"), "{said}");
    let attempts = rec["attempts"].as_array().unwrap();
    assert_eq!((attempts.len(), attempts[0]["reason"].as_str()), (2, Some("exit_nonzero")), "{rec:#}");
    assert_eq!(std::fs::read_to_string(&counter).unwrap().trim(), "2");
}

/// A reset a few seconds from now, in whole seconds as the API sends it.
fn reset_in(secs: i64) -> i64 {
    chrono::Utc::now().timestamp() + secs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_that_resets_is_waited_out_and_the_run_completes_once() {
    if require_claude_cli().is_none() {
        return;
    }
    let reset = reset_in(4);
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok", Reply::LimitedUntil { reset_epoch: reset, text: REPORT.into() });
    let th = TestHome::new();
    claude_routine(&th, &fake, "tok", "");
    // Told through a real D-Bus notification server: the wait, then the run that got there.
    let bus = nightshift_testkit::dbus::NotificationBus::start(th.path(), "record");
    let out = tokio_ctl(&th).args(["run", "triage", "--wait", "--json", "--wait-for-limit", "--notify"]).env("DBUS_SESSION_BUS_ADDRESS", &bus.address).output().await.unwrap();
    let (rec, code) = (json(&out), out.status.code().unwrap_or(-1));
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    let shown: Vec<String> = bus.notifications().iter().map(|n| n["summary"].as_str().unwrap_or_default().to_string()).collect();
    let at = chrono::DateTime::from_timestamp(reset, 0).unwrap().with_timezone(&chrono::Local);
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(shown[0].starts_with("⏳ triage waits for the limit · at ") && shown[0].ends_with(&at.format("%H:%M").to_string()), "{shown:?}");
    assert!(shown[1].starts_with("✓ triage · ") && shown[1].ends_with(" · after waiting for the limit"), "{shown:?}");
    let attempts = rec["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{rec:#}");
    assert_eq!(attempts[0]["reason"], "rate_limited");
    let reset_at = chrono::DateTime::from_timestamp(reset, 0).unwrap();
    assert_eq!(time(&attempts[0]["resets_at"]), reset_at, "{rec:#}");
    assert!(time(&attempts[0]["next_at"]) > reset_at, "due after the reset: {rec:#}");
    assert!(time(&attempts[1]["started_at"]) >= time(&attempts[0]["next_at"]), "{rec:#}");
    assert_eq!(runs(&th).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_run_says_when_the_limit_resets_and_does_not_wait_unless_asked() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok", Reply::LimitedUntil { reset_epoch: reset_in(3600), text: REPORT.into() });
    let th = TestHome::new();
    claude_routine(&th, &fake, "tok", "");
    let (rec, code) = run_json(&th, &[]).await;
    assert_eq!((code, rec["status"].as_str(), rec["reason"].as_str()), (1, Some("failed"), Some("rate_limited")), "{rec:#}");
    let message = rec["message"].as_str().unwrap();
    assert!(message.contains("the limit resets at ") && message.contains("`--wait-for-limit` waits for it"), "{message}");
    assert_eq!(message_requests(&fake), 1);
}

/// The run that waits is a row: the engine holding the wait is killed, the next one (a daemon)
/// starts it at the reset, once. And a waiting run is cancelled like a queued one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_survives_its_engine_being_killed_and_can_be_cancelled() {
    if require_claude_cli().is_none() {
        return;
    }
    let reset = reset_in(8);
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok", Reply::LimitedUntil { reset_epoch: reset, text: REPORT.into() });
    let th = TestHome::new();
    claude_routine(&th, &fake, "tok", "");
    let mut waiting = ctl(&th).args(["run", "triage", "--wait", "--wait-for-limit", "--json"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let queued = || runs(&th).into_iter().find(|r| r["status"] == "queued" && !r["due_at"].is_null());
    nightshift_testkit::wait_until("the run to wait for the limit", Duration::from_secs(60), || queued().is_some());
    let rec = queued().unwrap();
    assert!(rec["message"].as_str().unwrap().starts_with("waiting for the rate limit to reset at "), "{rec:#}");
    // kill -9 of the engine that holds the wait.
    let _ = waiting.kill();
    let _ = waiting.wait();
    let daemon = start_daemon(&th);
    daemon.wait_scheduling();
    let id = rec["id"].as_str().unwrap().to_string();
    let done = || runs(&th).into_iter().find(|r| r["id"] == id.as_str() && r["status"] == "completed");
    nightshift_testkit::wait_until("the daemon to run it at the reset", Duration::from_secs(60), || done().is_some());
    let rec = done().unwrap();
    assert!(time(&rec["attempts"][1]["started_at"]) >= chrono::DateTime::from_timestamp(reset, 0).unwrap(), "{rec:#}");
    assert_eq!(runs(&th).len(), 1, "once");
    stop(daemon);

    // Cancelled while it waits.
    let fake2 = FakeAnthropic::start(None).await;
    fake2.set("tok", Reply::LimitedUntil { reset_epoch: reset_in(3600), text: REPORT.into() });
    claude_routine(&th, &fake2, "tok", "");
    let waiting = ctl(&th).args(["run", "triage", "--wait", "--wait-for-limit", "--json"]).stderr(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    nightshift_testkit::wait_until("the second run to wait", Duration::from_secs(60), || queued().is_some());
    let id = queued().unwrap()["id"].as_str().unwrap().to_string();
    let cancelled = ctl(&th).args(["cancel", &id]).output().unwrap();
    assert!(cancelled.status.success(), "{}", stderr(&cancelled));
    let out = waiting.wait_with_output().unwrap();
    let rec = json(&out);
    assert_eq!((rec["id"].as_str(), rec["status"].as_str()), (Some(id.as_str()), Some("cancelled")), "{rec:#}");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(rec["attempts"][0]["reason"], "rate_limited", "the try it made is kept: {rec:#}");
}

/// Run now on a routine whose run waits for a limit starts that run at once — one run, not a
/// second beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_now_starts_the_waiting_run_instead_of_a_second_one() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok", Reply::LimitedUntil { reset_epoch: reset_in(3600), text: REPORT.into() });
    let th = TestHome::new();
    claude_routine(&th, &fake, "tok", "");
    let mut waiting = ctl(&th).args(["run", "triage", "--wait", "--wait-for-limit", "--json"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let queued = || runs(&th).into_iter().find(|r| r["status"] == "queued" && !r["due_at"].is_null());
    nightshift_testkit::wait_until("the run to wait for the limit", Duration::from_secs(60), || queued().is_some());
    let id = queued().unwrap()["id"].as_str().unwrap().to_string();
    // The limit is gone sooner than it said (a new plan, say): Run now.
    fake.set("tok", Reply::Success { text: REPORT.into() });
    let (rec, code) = run_json(&th, &[]).await;
    assert_eq!((code, rec["id"].as_str(), rec["status"].as_str()), (0, Some(id.as_str()), Some("completed")), "{rec:#}");
    assert_eq!(rec["attempts"].as_array().unwrap().len(), 2, "{rec:#}");
    assert_eq!(runs(&th).len(), 1, "one run");
    let _ = waiting.kill();
    let _ = waiting.wait();
}
