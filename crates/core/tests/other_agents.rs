//! Codex and Gemini CLI streams: real recorded failures plus documented-format successes.

use chrono::Utc;
use nightshift_core::agents::{driver, Outcome, RunOutput};
use nightshift_core::routine::AgentKind;
use nightshift_core::run::{Reason, RunStatus};
use std::path::Path;

fn classify(agent: AgentKind, dir: &str, name: &str) -> Outcome {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(dir);
    let run = tempfile::tempdir().unwrap();
    std::fs::copy(fx.join(format!("{name}.jsonl")), run.path().join("stdout.log")).unwrap();
    let _ = std::fs::copy(fx.join(format!("{name}.stderr")), run.path().join("stderr.log"));
    let exit = std::fs::read_to_string(fx.join(format!("{name}.exit"))).unwrap().trim().parse().ok();
    driver(Some(agent)).classify(&RunOutput { run_dir: run.path(), exit_code: exit, now: Utc::now() })
}

#[test]
fn codex_401_is_auth_failed() {
    let o = classify(AgentKind::Codex, "codex-0.171.0", "401");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::AuthFailed)), "{o:?}");
    assert!(o.message.unwrap().starts_with("unexpected status 401 Unauthorized"));
    assert!(o.session_id.is_some());
}

#[test]
fn codex_usage_limit_is_rate_limited() {
    let o = classify(AgentKind::Codex, "codex-0.171.0", "usage-limit");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{o:?}");
    assert!(o.message.unwrap().starts_with("You’ve hit your usage limit"));
}

#[test]
fn codex_success_reports_the_last_agent_message() {
    let o = classify(AgentKind::Codex, "codex-0.171.0", "success.documented");
    assert_eq!(o.status(), RunStatus::Completed);
    assert_eq!(o.report.as_deref(), Some("One open PR (#12) — looks good to merge."));
    assert_eq!(o.session_id.as_deref(), Some("0199a213-81c0-7800-8aa1-bbab2a035a53"));
}

#[test]
fn gemini_without_credentials_is_auth_failed() {
    let o = classify(AgentKind::Gemini, "gemini-0.61.0", "no-auth");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::AuthFailed)), "{o:?}");
    assert!(o.message.unwrap().contains("GEMINI_API_KEY"));
}

#[test]
fn gemini_success_joins_the_streamed_reply() {
    let o = classify(AgentKind::Gemini, "gemini-0.61.0", "success.documented");
    assert_eq!(o.status(), RunStatus::Completed);
    assert_eq!(o.report.as_deref(), Some("One open PR (#12) — looks good to merge."));
    assert_eq!(o.session_id.as_deref(), Some("c25acda3-b4b4-4bb7-9c77-2a4ea3c3a1b2"));
}

#[test]
fn codex_and_gemini_arguments() {
    use nightshift_core::routine::Mode;
    let codex = driver(Some(AgentKind::Codex)).args("do it", Mode::Plan, Some("gpt-5"));
    assert_eq!(codex, vec!["exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only", "--model", "gpt-5", "do it"]);
    let gemini = driver(Some(AgentKind::Gemini)).args("do it", Mode::Edit, None);
    assert_eq!(gemini, vec!["-p", "do it", "--output-format", "stream-json", "--approval-mode", "auto_edit"]);
}
