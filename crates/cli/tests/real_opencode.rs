//! The real OpenCode CLI (npm `opencode-ai`, pinned in tests/agents-cli), driven by
//! `nightshiftctl run --wait --json` against the fake Anthropic Messages API on loopback (OpenCode's
//! built-in Anthropic provider with its `baseURL` set in the account's own opencode.json): every
//! mode's flags and permissions are accepted by the pinned CLI, every outcome is judged right, and
//! the long-wait trap (OpenCode sleeping out a `Retry-After` with nothing on stdout) is settled as
//! `rate_limited` within seconds.
//!
//! `NIGHTSHIFT_RECORD_FIXTURES=1` copies each run's streams into
//! `crates/core/tests/fixtures/opencode-<version>/` (how the fixtures there were made).

mod common;

use common::{files_containing, home_with_accounts, keychain_available, record_fixture, run_wait, set_token};
use nightshift_testkit::home::require_agent_cli;
use nightshift_testkit::{FakeAnthropic, Reply, TestHome};
use std::path::Path;

const REPORT: &str = "## Dependency check\n\nAll 14 packages are current.";
const FIXTURES: &str = "opencode-1.18.33";

/// OpenCode's own config in `xdg` (its XDG base directories): the built-in Anthropic provider
/// sent to `fake`, and the model every run uses.
fn opencode_config(xdg: &Path, fake: &FakeAnthropic) {
    let dir = xdg.join("config/opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let config = serde_json::json!({
        "provider": {"anthropic": {"options": {"baseURL": format!("{}/v1", fake.url())}}},
        "model": "anthropic/claude-sonnet-4-5",
    });
    std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
}

/// An opencode routine in `mode` whose XDG dirs send the CLI to `fake` with `key`.
fn routine(th: &TestHome, fake: &FakeAnthropic, key: &str, mode: &str, more: &str) {
    let xdg = th.path().join("opencode-xdg");
    opencode_config(&xdg, fake);
    let dirs: String = ["CONFIG", "DATA", "STATE", "CACHE"].iter().map(|d| format!("  XDG_{d}_HOME: {}\n", xdg.join(d.to_lowercase()).display())).collect();
    th.routine(
        "deps",
        &format!("schedule: \"0 2 * * *\"\nagent: opencode\nmode: {mode}\nprompt: Check the dependencies\ntimeout: 3m\ncwd: {}\n{more}env:\n{dirs}  ANTHROPIC_API_KEY: {key}\n", th.user_home().display()),
    );
}

async fn run(th: &TestHome, record_as: &str) -> (serde_json::Value, i32) {
    let (rec, code) = run_wait(th, "deps").await;
    record_fixture(&rec, FIXTURES, record_as);
    (rec, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_starts_and_a_success_is_completed_with_its_report_usage_and_cost() {
    if require_agent_cli("opencode").is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    let key = "sk-ant-api03-opencode-good-key-0001";
    fake.set(key, Reply::Success { text: REPORT.into() });
    for mode in ["auto", "edit", "plan", "skip"] {
        let th = TestHome::new();
        routine(&th, &fake, key, mode, "");
        let (rec, code) = run(&th, "success").await;
        assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "mode {mode}: {rec:#}");
        // Inside the machine's sandbox, with nothing it needed refused.
        common::assert_sandboxed(&rec);
        assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT, "mode {mode}");
        assert!(rec["usage"]["input_tokens"].as_u64().unwrap() > 0 && rec["usage"]["output_tokens"].as_u64().unwrap() > 0, "{rec:#}");
        assert!(rec["cost_usd"].as_f64().unwrap() > 0.0, "OpenCode prices the step: {rec:#}");
        assert!(rec["session_id"].as_str().unwrap().starts_with("ses_"), "{rec:#}");
        // The plugin that reports OpenCode's retries was written beside the run's logs.
        assert!(Path::new(rec["run_dir"].as_str().unwrap()).join("nightshift-opencode-plugin.js").is_file());
    }
    let main: Vec<_> = fake.requests().into_iter().filter(|r| r.body["tools"].as_array().is_some_and(|t| !t.is_empty())).collect();
    assert_eq!(main.len(), 4, "one turn per run");
    assert!(main.iter().all(|r| r.credential.as_deref() == Some(key)), "the routine's key");
    // `mode: plan` is OpenCode's plan agent: its system prompt says so.
    assert!(main.iter().any(|r| r.body.to_string().contains("Plan Mode") || r.body.to_string().contains("plan mode")), "one run was OpenCode's plan agent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_key_is_auth_failed() {
    if require_agent_cli("opencode").is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    let th = TestHome::new();
    routine(&th, &fake, "sk-ant-api03-revoked-key-000000000", "auto", "");
    let (rec, code) = run(&th, "401").await;
    assert_eq!(code, 1);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("(HTTP 401)"), "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_rate_limit_is_settled_at_once_with_its_reset() {
    if require_agent_cli("opencode").is_none() {
        return;
    }
    // A five-hour window that resets in an hour: OpenCode would sleep the hour (Retry-After 3600).
    let fake = FakeAnthropic::start(None).await;
    let reset = chrono::Utc::now().timestamp() + 3600;
    let key = "sk-ant-api03-limited-key-000000000";
    fake.set(key, Reply::UnifiedLimit { reset_epoch: reset });
    let th = TestHome::new();
    routine(&th, &fake, key, "auto", "");
    let started = std::time::Instant::now();
    let (rec, _) = run(&th, "long-limit").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "settled in {:?}, not at the 3m timeout", started.elapsed());
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("rate_limited")), "{rec:#}");
    let resets = chrono::DateTime::parse_from_rfc3339(rec["resets_at"].as_str().expect("resets_at")).unwrap().timestamp();
    // Its Retry-After (an hour) counted from OpenCode's request, made after it started up.
    assert!((reset..reset + 90).contains(&resets), "the reset OpenCode was waiting for: {resets} vs {reset}: {rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("OpenCode was waiting until"), "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_rate_limit_is_opencodes_to_retry_and_the_run_completes() {
    if require_agent_cli("opencode").is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    let key = "sk-ant-api03-briefly-limited-0000";
    fake.set(key, Reply::LimitedFor { times: 1, retry_after_secs: 2, text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, &fake, key, "auto", "");
    let (rec, code) = run(&th, "short-limit-success").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    let stdout = std::fs::read_to_string(Path::new(rec["run_dir"].as_str().unwrap()).join("stdout.log")).unwrap();
    assert!(stdout.contains("\"nightshift_status\""), "the retry was seen in the stream: {stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_after_opencodes_own_retries_are_api_unavailable() {
    if require_agent_cli("opencode").is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    let key = "sk-ant-api03-server-errors-00000";
    fake.set(key, Reply::ServerError);
    let th = TestHome::new();
    routine(&th, &fake, key, "auto", "");
    let (rec, _) = run(&th, "500-retries").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("api_unavailable")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("(HTTP 500)"), "{rec:#}");
    let turns = fake.requests().into_iter().filter(|r| r.body["tools"].as_array().is_some_and(|t| !t.is_empty())).count();
    assert!(turns >= 5, "OpenCode retried by itself first ({turns} requests)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_tool_call_is_a_denial_and_words_about_limits_in_a_success_stay_completed() {
    if require_agent_cli("opencode").is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    let key = "sk-ant-api03-tool-calling-00000";
    // The answer mentions a rate limit and a 401: words in a success are not a failure.
    let text = "Done. Note: the registry answered 401 once and mentioned a rate limit; both are fine now.";
    fake.set(key, Reply::ToolCall { tool: "bash".into(), input: serde_json::json!({"command": "rm -rf build", "description": "Clean the build"}), text: text.into() });
    let th = TestHome::new();
    // `mode: edit` lets OpenCode edit but asks before a command — and nobody can answer.
    routine(&th, &fake, key, "edit", "");
    let (rec, code) = run(&th, "denied-tool").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    assert_eq!(rec["denials"].as_array().map(Vec::len), Some(1), "{rec:#}");
    assert_eq!(rec["denials"][0]["tool"], "bash", "{rec:#}");
    assert!(rec["denials"][0]["input"].as_str().unwrap().contains("rm -rf build"), "{rec:#}");
    assert!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap().contains("rate limit"));

    // `deny.tools` refuses it in any mode, `mode: skip` included.
    let th = TestHome::new();
    routine(&th, &fake, key, "skip", "deny: {tools: [\"bash(rm )\"]}\n");
    let (rec, _) = run(&th, "denied-by-rule").await;
    assert_eq!(rec["status"].as_str(), Some("completed"), "{rec:#}");
    assert_eq!(rec["denials"][0]["tool"], "bash", "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accounts_key_from_the_keychain_reaches_opencode_and_rests_nowhere() {
    if require_agent_cli("opencode").is_none() || !keychain_available() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    let key = "sk-ant-api03-kept-in-the-keychain-0042";
    fake.set(key, Reply::Success { text: REPORT.into() });
    let (th, _service) = home_with_accounts(&["opencode:me@oc.dev"]);
    assert!(set_token(&th, "me@oc.dev", key).status.success());
    // The account's own OpenCode config (its XDG config home inside the account's dir).
    let account_dir = th.path().join("accounts/opencode/me-at-oc.dev");
    opencode_config(&account_dir, &fake);
    th.routine("deps", &format!("schedule: \"0 2 * * *\"\nagent: opencode\naccount: me@oc.dev\nprompt: Check the dependencies\ntimeout: 3m\ncwd: {}\n", th.user_home().display()));
    // While it runs, no process's command line holds the key.
    let argv = common::ArgvWatch::start(key);
    let out = common::tokio_ctl(&th).args(["run", "deps", "--wait", "--json"]).envs(common::bus_env()).output().await.unwrap();
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!((rec["status"].as_str(), rec["account"].as_str()), (Some("completed"), Some("me@oc.dev")), "{rec:#}");
    assert!(fake.requests().iter().any(|r| r.credential.as_deref() == Some(key)), "the keychain's key reached the API");
    assert!(!argv.seen(), "the key was in a process's command line");
    assert_eq!(files_containing(th.path(), key), Vec::<String>::new(), "the key rests nowhere in the home (OpenCode's own data dir included)");
}


/// An account sleeping out a long limit is no lane held for an hour: the run ends on the plugin's
/// line as `rate_limited`, the account is marked so until the reset, and the next account of the
/// pool does the work — each with its own key, as `<PROVIDER>_API_KEY` (`provider = "openai"` on
/// neither: Anthropic's variable).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_fails_over_from_an_account_opencode_would_sleep_on() {
    if require_agent_cli("opencode").is_none() {
        return;
    }
    const KEY_A: &str = "sk-ant-api03-pool-alpha-limited-01";
    const KEY_B: &str = "sk-ant-api03-pool-bravo-working-02";
    let fake = FakeAnthropic::start(None).await;
    let reset = chrono::Utc::now().timestamp() + 2 * 3600;
    fake.set(KEY_A, Reply::UnifiedLimit { reset_epoch: reset });
    fake.set(KEY_B, Reply::Success { text: REPORT.into() });
    let (th, _) = home_with_accounts(&["opencode:a@oc.dev", "opencode:b@oc.dev"]);
    for slug in ["a-at-oc.dev", "b-at-oc.dev"] {
        opencode_config(&th.path().join("accounts/opencode").join(slug), &fake);
    }
    th.routine("deps", &format!("schedule: \"0 2 * * *\"\nagent: opencode\nprompt: Check the dependencies\naccounts: [a@oc.dev, b@oc.dev]\ntimeout: 3m\ncwd: {}\n", th.user_home().display()));
    let started = std::time::Instant::now();
    let out = common::tokio_ctl(&th)
        .args(["run", "deps", "--wait", "--json"])
        .env("ANTHROPIC_API_KEY_A_AT_OC_DOT_DEV", KEY_A)
        .env("ANTHROPIC_API_KEY_B_AT_OC_DOT_DEV", KEY_B)
        .output()
        .await
        .unwrap();
    let rec = common::json(&out);
    assert_eq!((rec["status"].as_str(), rec["account"].as_str()), (Some("completed"), Some("b@oc.dev")), "{rec:#}");
    assert!(started.elapsed() < std::time::Duration::from_secs(120), "no hour slept on a@oc.dev: {:?}", started.elapsed());
    let tried: Vec<(&str, &str)> = rec["attempts"].as_array().unwrap().iter().map(|a| (a["account"].as_str().unwrap(), a["reason"].as_str().unwrap_or("-"))).collect();
    assert_eq!(tried, [("a@oc.dev", "rate_limited"), ("b@oc.dev", "-")], "{rec:#}");
    let list = common::json(&common::ctl(&th).args(["accounts", "list", "--json"]).env("ANTHROPIC_API_KEY_A_AT_OC_DOT_DEV", KEY_A).output().unwrap());
    let a = list.as_array().unwrap().iter().find(|x| x["account"] == "a@oc.dev").unwrap().clone();
    assert_eq!((a["verdict"].as_str(), a["agent"].as_str()), (Some("rate_limited"), Some("opencode")), "{a:#}");
    let resets = chrono::DateTime::parse_from_rfc3339(a["resets_at"].as_str().unwrap()).unwrap().timestamp();
    assert!((reset - 3600..reset + 90).contains(&resets), "until the hour OpenCode would have slept: {resets} vs {reset}");
    for key in [KEY_A, KEY_B] {
        assert_eq!(files_containing(th.path(), key), Vec::<String>::new(), "{key} rests somewhere in the home");
    }
}

/// Retries that resume: the first try ran a `bash` command, then the API stayed overloaded (529
/// until OpenCode's own retries were spent); the next try is `opencode run --session <id>` with
/// the words to check what was done — the fake sees the session's earlier turns (the call and its
/// result) followed by those words, the command ran once, one record with both tries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_work_resumes_the_session_and_never_repeats_the_command() {
    if require_agent_cli("opencode").is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    let th = TestHome::new();
    let counter = th.user_home().join("commands-run");
    let key = "sk-ant-api03-opencode-resume-0001";
    let input = serde_json::json!({"command": format!("echo ran >> {}", counter.display()), "description": "Record a run"});
    fake.set(key, Reply::DropsAfterTool { tool: "bash".into(), input, text: REPORT.into() });
    routine(&th, &fake, key, "auto", "retries: 1\nretry_backoff: 1s\n");
    let (rec, _) = run_wait(&th, "deps").await;
    common::assert_resumed_once(&th, &rec, &counter);
    let turns: Vec<serde_json::Value> = fake.requests().into_iter().filter(|r| r.path.starts_with("/v1/messages") && r.body["tools"].as_array().is_some_and(|t| !t.is_empty())).map(|r| r.body).collect();
    let said = turns.last().unwrap()["messages"].to_string();
    assert!(said.contains("tool_result") && said.contains(common::RESUME_WORDS), "{said}");
}

/// In the machine's sandbox (`mode: skip`: OpenCode allows everything itself), a command that
/// writes outside the run's folders fails, nothing is written, and the refusal is one of the run's
/// denials, read from the command's output in OpenCode's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_outside_its_folders_is_refused_by_the_sandbox_and_is_a_denial() {
    if require_agent_cli("opencode").is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    let th = TestHome::new();
    let outside_dir = common::outside_dir();
    let outside = outside_dir.path().join("outside.txt");
    let key = "sk-ant-api03-opencode-outside-0001";
    let input = serde_json::json!({"command": format!("echo changed > {}", outside.display()), "description": "Write outside"});
    fake.set(key, Reply::ToolCall { tool: "bash".into(), input, text: REPORT.into() });
    routine(&th, &fake, key, "skip", "");
    let (rec, _) = run_wait(&th, "deps").await;
    common::assert_write_refused(&rec, &outside, "bash");
}
