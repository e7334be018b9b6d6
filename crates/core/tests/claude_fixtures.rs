//! Classification of real Claude Code streams (recorded from the real CLI, see fixtures/README).

use chrono::{TimeZone, Utc};
use nightshift_core::agents::{driver, AgentDriver, Outcome, RunOutput};
use nightshift_core::run::{Reason, RunStatus};
use nightshift_core::words::Agent;
use std::path::Path;

const VERSION_DIR: &str = "tests/fixtures/claude-2.1.332";

fn claude() -> &'static dyn AgentDriver {
    driver(Agent::Claude)
}

fn fixture(name: &str) -> (String, Option<i32>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(VERSION_DIR);
    let stream = std::fs::read_to_string(dir.join(format!("{name}.jsonl"))).unwrap();
    let exit = std::fs::read_to_string(dir.join(format!("{name}.exit"))).ok().and_then(|s| s.trim().parse().ok());
    (stream, exit)
}

/// Classify a stream as the engine does: from a run directory holding stdout.log.
fn classify(stream: &str, exit_code: Option<i32>, stderr: &str) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("stdout.log"), stream).unwrap();
    std::fs::write(dir.path().join("stderr.log"), stderr).unwrap();
    let now = Utc.with_ymd_and_hms(2026, 11, 29, 23, 40, 0).unwrap();
    claude().classify(&RunOutput { run_dir: dir.path(), exit_code, now })
}

fn fixture_outcome(name: &str) -> Outcome {
    let (stream, exit) = fixture(name);
    classify(&stream, exit, "")
}

#[test]
fn success_is_completed_with_report_cost_and_session() {
    let o = fixture_outcome("success");
    assert_eq!(o.status(), RunStatus::Completed);
    assert_eq!(o.reason, None);
    assert_eq!(o.report.as_deref(), Some("## PR review\n\nAll 3 open PRs look good. No action needed."));
    assert!(o.cost_usd.unwrap() > 0.0);
    assert!(o.session_id.is_some());
    // Tokens and model from the result event, as the recorded CLI wrote them.
    let u = o.usage.expect("usage");
    assert_eq!((u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens), (Some(25), Some(12), Some(0), Some(0)), "{u:?}");
    assert_eq!(u.model.as_deref(), Some("claude-sonnet-5-5"));
    assert!(o.from_final_event);
}

#[test]
fn a_success_that_mentions_login_stays_completed() {
    let o = fixture_outcome("success-mentions-login");
    assert_eq!(o.status(), RunStatus::Completed, "{o:?}");
    assert!(o.report.unwrap().contains("Please run /login"));
}

#[test]
fn logged_out_is_auth_failed_and_never_a_report() {
    let o = fixture_outcome("logged-out");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::AuthFailed)));
    assert_eq!(o.message.as_deref(), Some("Not logged in · Please run /login"));
    assert_eq!(o.report, None);
}

#[test]
fn logged_out_is_failed_even_when_the_cli_exits_zero() {
    let (stream, _) = fixture("logged-out");
    let o = classify(&stream, Some(0), "");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::AuthFailed)));
    assert_eq!(o.report, None);
}

#[test]
fn unauthorized_401_is_auth_failed() {
    let o = fixture_outcome("401");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::AuthFailed)));
    assert_eq!(o.message.as_deref(), Some("Failed to authenticate. API Error: 401 Invalid bearer token"));
    assert_eq!(o.report, None);
}

#[test]
fn plain_429_is_rate_limited_without_a_reset() {
    let o = fixture_outcome("429");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::RateLimited)));
    assert_eq!(o.resets_at, None);
}

#[test]
fn unified_limit_is_rate_limited_with_the_exact_reset() {
    let o = fixture_outcome("unified");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::RateLimited)));
    assert_eq!(o.resets_at, Utc.timestamp_opt(1796004000, 0).single());
    assert!(o.message.unwrap().starts_with("You've hit your 5-hour limit"));
}

#[test]
fn an_overloaded_failing_or_unreachable_api_is_api_unavailable() {
    // What a retry is for: nothing about the work, the provider was not there.
    let o = fixture_outcome("500-retries");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::ApiUnavailable)));
    assert!(o.message.unwrap().contains("API Error: 500"));
    let o = fixture_outcome("529");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::ApiUnavailable)), "{o:?}");
    assert!(o.message.unwrap().starts_with("API Error: 529 Overloaded"));
    let o = fixture_outcome("connection-refused");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::ApiUnavailable)), "{o:?}");
    assert!(o.message.unwrap().contains("ECONNREFUSED"));
}

#[test]
fn a_truncated_stream_is_not_success_and_not_final() {
    let (stream, _) = fixture("truncated");
    let o = classify(&stream, Some(137), "");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::ExitNonzero)));
    assert!(!o.from_final_event);
    assert!(o.message.unwrap().contains("137"));
    let lost = classify(&stream, None, "");
    assert_eq!(lost.status(), RunStatus::Failed);
    assert!(!lost.from_final_event);
}

#[test]
fn text_fallback_only_when_the_process_failed() {
    // No structured stream at all (e.g. an old CLI or a wrapper script): stderr decides.
    let o = classify("", Some(1), "Error: OAuth token has expired. Please run /login\n");
    assert_eq!(o.reason, Some(Reason::AuthFailed));
    let o = classify("", Some(1), "Claude AI usage limit reached|1796004000\n");
    assert_eq!(o.reason, Some(Reason::RateLimited));
    assert_eq!(o.resets_at, Utc.timestamp_opt(1796004000, 0).single());
    // Exit 0 without a result is never success, but also not an auth failure by guesswork.
    let o = classify("", Some(0), "Please run /login\n");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::AgentError)));
}

#[test]
fn progress_lines_from_real_events() {
    let (stream, _) = fixture("500-retries");
    let msgs: Vec<String> = stream.lines().filter_map(|l| claude().progress(l)).collect();
    assert!(msgs.iter().any(|m| m.starts_with("session started")), "{msgs:?}");
    assert!(msgs.contains(&"API retry 1/2: server_error (HTTP 500)".to_string()), "{msgs:?}");
    let (stream, _) = fixture("401");
    let msgs: Vec<String> = stream.lines().filter_map(|l| claude().progress(l)).collect();
    assert!(msgs.contains(&"API error: authentication_failed (HTTP 401)".to_string()), "{msgs:?}");
}

#[test]
fn the_outcome_is_found_behind_a_huge_stream() {
    // 40 MB of tool output before the result: the tail window grows until it finds the result.
    let (success, _) = fixture("success");
    let mut lines: Vec<&str> = success.lines().collect();
    let result = lines.pop().unwrap().to_string();
    let filler = format!("{{\"type\":\"user\",\"message\":{{\"content\":\"{}\"}}}}\n", "x".repeat(1000));
    let mut big = lines.join("\n");
    big.push('\n');
    for _ in 0..40_000 {
        big.push_str(&filler);
    }
    big.push_str(&result);
    big.push('\n');
    let o = classify(&big, Some(0), "");
    assert_eq!(o.status(), RunStatus::Completed);
}

/// A subscription's windows ride on a successful answer (Anthropic's unified headers): the run is
/// completed, and its outcome carries each window's used share, reset and status.
#[test]
fn a_success_reports_the_accounts_windows() {
    let o = fixture_outcome("windows");
    assert_eq!(o.status(), RunStatus::Completed, "{o:?}");
    let seen: Vec<(&str, f64, &str)> = o.windows.iter().map(|w| (w.window.as_str(), w.used_percent, w.status.as_str())).collect();
    assert_eq!(seen, [("five_hour", 85.0, "allowed_warning"), ("seven_day", 40.0, "allowed")]);
    assert!(o.windows.iter().all(|w| w.resets_at.is_some()), "{:?}", o.windows);
    assert!(o.windows[1].resets_at > o.windows[0].resets_at, "the week resets after the five hours");
    // Streams without them report none.
    assert!(fixture_outcome("success").windows.is_empty());
}
