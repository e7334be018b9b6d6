//! The real Gemini CLI (npm `@google/gemini-cli`, pinned in tests/agents-cli), driven by
//! `nightshiftctl run --wait --json` against the fake Gemini API on loopback: every mode's flags
//! are accepted by the pinned CLI (in a folder nobody trusted), and every outcome is judged right.
//!
//! `NIGHTSHIFT_RECORD_FIXTURES=1` copies each run's streams into
//! `crates/core/tests/fixtures/gemini-<version>/` (how the fixtures there were made).

mod common;

use common::{record_fixture, run_wait};
use nightshift_testkit::fake_gemini::{gemini_settings, FakeGemini, Reply};
use nightshift_testkit::home::require_agent_cli;
use nightshift_testkit::TestHome;

const REPORT: &str = "## Nightly triage\n\n2 new issues labelled; nothing urgent.";

/// A gemini routine in `mode` whose settings send the CLI to `fake` with `key`.
fn routine(th: &TestHome, fake: &FakeGemini, key: &str, mode: &str, attempts: u32) {
    let gemini_home = th.path().join("gemini-home");
    std::fs::create_dir_all(gemini_home.join(".gemini")).unwrap();
    std::fs::write(gemini_home.join(".gemini/settings.json"), gemini_settings(attempts)).unwrap();
    th.routine(
        "triage",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: gemini\nmode: {mode}\nmodel: gemini-2.5-flash\nprompt: Triage new issues\ntimeout: 2m\ncwd: {}\nenv:\n  GEMINI_CLI_HOME: {}\n  GEMINI_API_KEY: {key}\n  GOOGLE_GEMINI_BASE_URL: {}\n",
            th.user_home().display(),
            gemini_home.display(),
            fake.url()
        ),
    );
}

async fn run(th: &TestHome, record_as: &str) -> (serde_json::Value, i32) {
    let (rec, code) = run_wait(th, "triage").await;
    record_fixture(&rec, "gemini-0.61.0", record_as);
    (rec, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_starts_in_an_untrusted_folder_and_a_success_is_completed() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    fake.set("AIza-good", Reply::Success { text: REPORT.into() });
    for mode in ["auto", "edit", "plan", "skip"] {
        let th = TestHome::new();
        routine(&th, &fake, "AIza-good", mode, 1);
        let (rec, code) = run(&th, "success").await;
        assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "mode {mode}: {rec:#}");
        // The fake API's usageMetadata (100 prompt, 7 candidates tokens); no cache-write figure.
        assert_eq!((&rec["usage"]["input_tokens"], &rec["usage"]["output_tokens"], &rec["usage"]["cache_write_tokens"]), (&serde_json::json!(100), &serde_json::json!(7), &serde_json::Value::Null), "{rec:#}");
        assert!(rec["session_id"].as_str().is_some(), "{rec:#}");
        assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT, "mode {mode}");
    }
    assert_eq!(fake.generate_keys(), vec!["AIza-good"; 4], "one API call per run, with the routine's key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_or_expired_key_is_auth_failed() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    fake.set("AIza-expired", Reply::Unauthenticated);
    for (key, name, exit) in [("AIza-unknown", "invalid-key", 144), ("AIza-expired", "unauthenticated", 145)] {
        let th = TestHome::new();
        routine(&th, &fake, key, "auto", 1);
        let (rec, code) = run(&th, name).await;
        assert_eq!(code, 1);
        assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{name}: {rec:#}");
        assert_eq!(rec["exit_code"], exit, "the HTTP status cut to 8 bits: {rec:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_daily_quota_is_rate_limited_until_pacific_midnight() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    fake.set("AIza-quota", Reply::QuotaExhausted);
    let th = TestHome::new();
    routine(&th, &fake, "AIza-quota", "auto", 1);
    let (rec, _) = run(&th, "quota").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("rate_limited")), "{rec:#}");
    // The CLI reports a per-day quota in its own words (its stderr dump holds the API's).
    // … and a manual run says when the quota resets, without waiting for it.
    let message = rec["message"].as_str().unwrap();
    assert!(message.starts_with("[API Error: You have exhausted your daily quota on this model.]; the limit resets at "), "{rec:#}");
    assert!(message.ends_with("`--wait-for-limit` waits for it"), "{rec:#}");
    // Daily quotas reset at midnight Pacific time.
    use chrono::TimeZone;
    let pacific: chrono_tz::Tz = "America/Los_Angeles".parse().unwrap();
    let midnight = chrono::Utc::now().with_timezone(&pacific).date_naive().succ_opt().unwrap().and_hms_opt(0, 0, 0).unwrap();
    let expected = pacific.from_local_datetime(&midnight).earliest().unwrap().with_timezone(&chrono::Utc);
    let resets = chrono::DateTime::parse_from_rfc3339(rec["resets_at"].as_str().expect("resets_at")).unwrap();
    assert_eq!(resets, expected, "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_api_unavailable_and_a_retried_one_completes() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    fake.set("AIza-500", Reply::ServerError);
    fake.set("AIza-flaky", Reply::Flaky { failures: 1, text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, &fake, "AIza-500", "auto", 1);
    let (rec, _) = run(&th, "500").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("api_unavailable")), "{rec:#}");
    assert!(!rec["message"].as_str().unwrap().contains('\u{1b}'), "no ANSI codes in messages: {rec:#}");
    let th = TestHome::new();
    routine(&th, &fake, "AIza-flaky", "auto", 3);
    let (rec, code) = run(&th, "retried-success").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
}

/// `allow.dirs` reaches Gemini CLI as `--include-directories`: the pinned CLI takes it and tells
/// the model the folder is in its workspace. (`allow.tools` and `deny.tools` are refused for Gemini
/// by the loader: its policy engine is not wired yet.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_dirs_reach_gemini() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    fake.set("AIza-dirs", Reply::Success { text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, &fake, "AIza-dirs", "edit", 1);
    let docs = common::allow_a_folder(&th, "triage");
    let (rec, code) = run_wait(&th, "triage").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    let said = fake.requests().into_iter().filter(|r| r.path.contains("enerateContent")).map(|r| r.body.to_string()).collect::<String>();
    assert!(said.contains(&docs.display().to_string()), "the folder is not in what Gemini CLI told the model");
}
