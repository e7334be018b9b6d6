//! The real Codex CLI (npm `@openai/codex`, pinned in tests/agents-cli), driven by
//! `nightshiftctl run --wait --json` against the fake OpenAI Responses API on loopback: every mode's
//! flags are accepted by the pinned CLI, and every outcome is judged right.
//!
//! `NIGHTSHIFT_RECORD_FIXTURES=1` copies each run's streams into
//! `crates/core/tests/fixtures/codex-<version>/` (how the fixtures there were made).

mod common;

use common::{record_fixture, run_wait};
use nightshift_testkit::fake_openai::{FakeOpenAi, Reply};
use nightshift_testkit::home::require_agent_cli;
use nightshift_testkit::TestHome;

const REPORT: &str = "## Nightly triage\n\n2 new issues labelled; nothing urgent.";

/// A codex routine in `mode` whose CODEX_HOME sends the CLI to `fake` with `key`.
fn routine(th: &TestHome, fake: &FakeOpenAi, key: &str, mode: &str, retries: u32) {
    let codex_home = th.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(codex_home.join("config.toml"), fake.codex_config(retries)).unwrap();
    th.routine(
        "triage",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: codex\nmode: {mode}\nprompt: Triage new issues\ntimeout: 2m\ncwd: {}\nenv:\n  CODEX_HOME: {}\n  OPENAI_API_KEY: {key}\n",
            th.user_home().display(),
            codex_home.display()
        ),
    );
}

async fn run(th: &TestHome, record_as: &str) -> (serde_json::Value, i32) {
    let (rec, code) = run_wait(th, "triage").await;
    record_fixture(&rec, "codex-0.171.0", record_as);
    (rec, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_starts_and_a_success_is_completed_with_its_report() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    fake.set("sk-good", Reply::Success { text: REPORT.into() });
    for mode in ["auto", "edit", "plan", "skip"] {
        let th = TestHome::new();
        routine(&th, &fake, "sk-good", mode, 0);
        let (rec, code) = run(&th, "success").await;
        assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "mode {mode}: {rec:#}");
        // Inside the machine's sandbox, with nothing it needed refused.
        common::assert_sandboxed(&rec);
        assert_eq!(rec["exit_code"], 0);
        // The fake API's usage (120 in, 20 of them cached, 9 out), as Codex reports the turn.
        assert_eq!(
            (&rec["usage"]["input_tokens"], &rec["usage"]["cache_read_tokens"], &rec["usage"]["output_tokens"], &rec["usage"]["model"]),
            (&serde_json::json!(120), &serde_json::json!(20), &serde_json::json!(9), &serde_json::Value::Null),
            "{rec:#}"
        );
        assert!(rec["session_id"].as_str().is_some(), "{rec:#}");
        assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT, "mode {mode}");
    }
    assert_eq!(fake.response_keys(), vec!["sk-good"; 4], "one API call per run, with the routine's key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_key_is_auth_failed() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    let th = TestHome::new();
    routine(&th, &fake, "sk-revoked", "auto", 0);
    let (rec, code) = run(&th, "401").await;
    assert_eq!(code, 1);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("401 Unauthorized"), "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_limit_is_rate_limited_until_the_reset_codex_names() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    // Three hours and a bit ahead, on a whole minute (Codex prints minutes).
    let now = chrono::Utc::now().timestamp();
    let reset = (now / 60 + 3 * 60 + 7) * 60;
    fake.set("sk-limited", Reply::UsageLimit { resets_at: reset });
    let th = TestHome::new();
    routine(&th, &fake, "sk-limited", "auto", 0);
    let (rec, _) = run(&th, "usage-limit").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("rate_limited")), "{rec:#}");
    let resets = chrono::DateTime::parse_from_rfc3339(rec["resets_at"].as_str().expect("resets_at")).unwrap().timestamp();
    assert_eq!(resets, reset, "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_api_unavailable() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    fake.set("sk-500", Reply::ServerError);
    let th = TestHome::new();
    routine(&th, &fake, "sk-500", "auto", 0);
    let (rec, _) = run(&th, "500").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("api_unavailable")), "{rec:#}");
    assert!(!rec["message"].as_str().unwrap().contains('\u{1b}'), "no ANSI codes in messages: {rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_that_end_in_a_completed_turn_are_completed() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    // Streams cut twice: Codex reports "Reconnecting... n/3" as `error` events, then completes.
    let fake = FakeOpenAi::start(None).await;
    fake.set("sk-flaky", Reply::Disconnects { times: 2, text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, &fake, "sk-flaky", "auto", 3);
    let (rec, code) = run(&th, "reconnected-success").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    assert_eq!(rec["reason"], serde_json::Value::Null);
    assert_eq!(fake.response_keys().len(), 3, "two cut streams, then the answer");
    let log = std::fs::read_to_string(std::path::Path::new(rec["run_dir"].as_str().unwrap()).join("stdout.log")).unwrap();
    assert!(log.contains("Reconnecting... 2/3"), "the CLI reported its retries: {log}");
    assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT);

    // A request that fails with 500 twice is retried by the CLI without a word, then completes.
    let fake = FakeOpenAi::start(None).await;
    fake.set("sk-500-twice", Reply::Flaky { failures: 2, text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, &fake, "sk-500-twice", "auto", 3);
    let (rec, code) = run(&th, "retried-success").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_api_is_timed_out() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    fake.set("sk-slow", Reply::Slow { secs: 60, text: REPORT.into() });
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "kill_grace_secs = 1\n").unwrap();
    routine(&th, &fake, "sk-slow", "auto", 0);
    let yaml = std::fs::read_to_string(th.path().join("routines/triage.yaml")).unwrap().replace("timeout: 2m", "timeout: 3s");
    std::fs::write(th.path().join("routines/triage.yaml"), yaml).unwrap();
    let started = std::time::Instant::now();
    let (rec, code) = run(&th, "timed-out").await;
    assert_eq!((code, rec["status"].as_str()), (1, Some("timed_out")), "{rec:#}");
    assert_eq!(rec["message"], "timed out after 3s");
    assert!(started.elapsed() < std::time::Duration::from_secs(3 + 1 + 5), "ended on time: {:?}", started.elapsed());
}

/// `effort:` reaches Codex as its reasoning effort and `args:` go in where Codex takes options:
/// the fake API sees both in the request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effort_and_args_reach_codex() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    fake.set("sk-effort", Reply::Success { text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, &fake, "sk-effort", "plan", 0);
    let file = th.path().join("routines/triage.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}effort: max\nargs: [-c, 'model_reasoning_summary=\"detailed\"']\n")).unwrap();
    let (rec, code) = run_wait(&th, "triage").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    let call = fake.requests().into_iter().find(|r| r.path.starts_with("/v1/responses")).expect("a responses call");
    assert_eq!(call.body["reasoning"]["effort"], "max", "{:#}", call.body["reasoning"]);
    assert_eq!(call.body["reasoning"]["summary"], "detailed", "the routine's own -c reached Codex: {:#}", call.body["reasoning"]);
}

/// `allow.dirs` reaches Codex as `--add-dir`: the pinned CLI takes it, and the folder is among
/// the writable roots it tells the model of. (`allow.tools` and `deny.tools` are refused for Codex
/// by the loader: it has no tool list.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_dirs_reach_codex() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    fake.set("sk-dirs", Reply::Success { text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, &fake, "sk-dirs", "edit", 0);
    let docs = common::allow_a_folder(&th, "triage");
    let (rec, code) = run_wait(&th, "triage").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    let call = fake.requests().into_iter().find(|r| r.path.starts_with("/v1/responses")).expect("a responses call");
    assert!(call.body.to_string().contains(&docs.display().to_string()), "the folder is not in what Codex told the model: {:#}", call.body);
}


/// Retries that resume: the first try ran a command (`exec_command`), then the API failed (500,
/// Codex's own retries off); the next try is `codex exec resume <thread>` with the words to check
/// what was done — the fake sees the thread's earlier items (the call and its output) followed by
/// those words, the command ran once, one record with both tries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_work_resumes_the_thread_and_never_repeats_the_command() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    let th = TestHome::new();
    let counter = th.user_home().join("commands-run");
    fake.set("sk-resume", Reply::DropsAfterCommand { cmd: format!("echo ran >> {}", counter.display()), text: REPORT.into() });
    let codex_home = th.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(codex_home.join("config.toml"), fake.codex_config(0)).unwrap();
    th.routine(
        "bump",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: codex\nmode: auto\nprompt: Bump the dependencies\nretries: 1\nretry_backoff: 1s\ntimeout: 2m\ncwd: {}\nenv:\n  CODEX_HOME: {}\n  OPENAI_API_KEY: sk-resume\n",
            th.user_home().display(),
            codex_home.display()
        ),
    );
    let (rec, _) = run_wait(&th, "bump").await;
    common::assert_resumed_once(&th, &rec, &counter);
    let turns: Vec<serde_json::Value> = fake.requests().into_iter().filter(|r| r.path.starts_with("/v1/responses")).map(|r| r.body).collect();
    let input = turns.last().unwrap()["input"].to_string();
    assert!(input.contains("call_fake_1") && input.contains(common::RESUME_WORDS), "{input}");
}

/// In the machine's sandbox (`mode: skip`: Codex's own sandbox is off, so the machine is what
/// refuses), a command that writes outside the run's folders fails, nothing is written, and the
/// refusal is one of the run's denials, read from the command's output in Codex's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_outside_its_folders_is_refused_by_the_sandbox_and_is_a_denial() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    let th = TestHome::new();
    let outside_dir = common::outside_dir();
    let outside = outside_dir.path().join("outside.txt");
    fake.set("sk-outside", Reply::Command { cmd: format!("echo changed > {}", outside.display()), text: REPORT.into() });
    routine(&th, &fake, "sk-outside", "skip", 0);
    let (rec, _) = run_wait(&th, "triage").await;
    common::assert_write_refused(&rec, &outside, "command_execution");
}

/// `mode: plan` only looks: in the machine's sandbox (where Codex's own cannot be built) its
/// working folder is read-only, so a command that writes there fails and is a denial.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_plan_mode_the_sandbox_keeps_the_folder_read_only() {
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    let th = TestHome::new();
    fake.set("sk-plan", Reply::Command { cmd: "echo changed > planned.txt".into(), text: REPORT.into() });
    routine(&th, &fake, "sk-plan", "plan", 0);
    let (rec, _) = run_wait(&th, "triage").await;
    assert_eq!(rec["status"], "completed", "{rec:#}");
    common::assert_sandboxed(&rec);
    assert!(!th.user_home().join("planned.txt").exists(), "plan mode wrote its folder: {rec:#}");
    assert!(rec["denials"].as_array().unwrap().iter().any(|d| d["input"].as_str().unwrap().contains("planned.txt")), "{rec:#}");
}
