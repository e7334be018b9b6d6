//! The real GitHub Copilot CLI (npm `@github/copilot`, pinned in tests/agents-cli), driven by
//! `nightshiftctl run --wait --json` against the fake Copilot services on loopback
//! (`COPILOT_DEBUG_GITHUB_API_URL`, a `github_pat_…` token): every mode's flags are accepted by the
//! pinned CLI and do what they say, every outcome is judged right, and the hang (Copilot reporting
//! a rate limit and never exiting) is settled as `rate_limited` within seconds.
//!
//! `NIGHTSHIFT_RECORD_FIXTURES=1` copies each run's streams into
//! `crates/core/tests/fixtures/copilot-<version>/` (how the fixtures there were made).

mod common;

use common::{files_containing, home_with_accounts, keychain_available, record_fixture, run_wait, set_token};
use nightshift_testkit::home::require_agent_cli;
use nightshift_testkit::{CopilotReply, FakeCopilot, TestHome};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const REPORT: &str = "## Pull requests\n\n3 open; #41 needs a rebase, the others look good.";
const FIXTURES: &str = "copilot-1.0.102";

/// A token of the shape Copilot accepts, unique to this test process: Copilot caches what
/// `/copilot_internal/user` answered per token, and a token of an earlier run would find the
/// endpoints of that run's (gone) fake.
fn token(what: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("github_pat_11NIGHTSHIFT{what}_{}x{nanos:09}x0123456789abcdef0123456789", std::process::id())
}

/// Where Copilot unpacks itself (~235 MB on first start): shared by every test, not per home.
fn shared_cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("copilot-cache")
}

/// The variables that send Copilot to `fake` (its cache shared).
fn fake_env(fake: &FakeCopilot) -> String {
    format!("  COPILOT_DEBUG_GITHUB_API_URL: {}\n  COPILOT_CACHE_HOME: {}\n", fake.url(), shared_cache().display())
}

/// A copilot routine in `mode`, signed in with `token`, its own COPILOT_HOME in the test's home.
fn routine(th: &TestHome, fake: &FakeCopilot, token: &str, mode: &str, more: &str) {
    routine_with(th, fake, Some(token), mode, more);
}

/// [`routine`], with the token in its `env:` — or none (whatever the engine gives it).
fn routine_with(th: &TestHome, fake: &FakeCopilot, token: Option<&str>, mode: &str, more: &str) {
    let token = token.map(|t| format!("  COPILOT_GITHUB_TOKEN: {t}\n")).unwrap_or_default();
    th.routine(
        "review",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: copilot\nmode: {mode}\nmodel: gpt-5-mini\nprompt: Review the open pull requests\ntimeout: 3m\ncwd: {}\n{more}env:\n{}  COPILOT_HOME: {}\n{token}",
            th.user_home().display(),
            fake_env(fake),
            th.path().join("copilot-home").display()
        ),
    );
}

async fn run(th: &TestHome, record_as: &str) -> (serde_json::Value, i32) {
    let (rec, code) = run_wait(th, "review").await;
    record_fixture(&rec, FIXTURES, record_as);
    (rec, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_starts_and_a_success_is_completed_with_its_report_and_usage() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    let t = token("MODES");
    fake.set(&t, CopilotReply::Success { text: REPORT.into() });
    for mode in ["auto", "edit", "plan", "skip"] {
        let th = TestHome::new();
        routine(&th, &fake, &t, mode, "");
        let (rec, code) = run(&th, "success").await;
        assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "mode {mode}: {rec:#}");
        // Inside the machine's sandbox, with nothing it needed refused.
        common::assert_sandboxed(&rec);
        assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT, "mode {mode}");
        // Tokens from the file `--usage-output-file` wrote into the run's directory.
        let u = &rec["usage"];
        assert_eq!((u["input_tokens"].as_u64(), u["output_tokens"].as_u64(), u["cache_read_tokens"].as_u64(), u["model"].as_str()), (Some(120), Some(9), Some(20), Some("gpt-5-mini")), "{rec:#}");
        assert!(rec["session_id"].as_str().is_some_and(|s| s.len() == 36), "Copilot's session id: {rec:#}");
        assert_eq!(u["premium_requests"].as_f64(), Some(1.0), "one premium request, as Copilot counted it: {rec:#}");
        let shown = common::stdout(&common::ctl(&th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
        assert!(shown.contains("in 120 · out 9 · cache read 20 · cache write 0 · gpt-5-mini · 1 premium request"), "{shown}");
    }
    let turns = fake.turns();
    assert_eq!(turns.len(), 4, "one turn per run");
    assert!(turns.iter().all(|r| r.credential.as_deref() == Some(t.as_str())), "the routine's token");
    // `mode: plan` is Copilot's own plan mode: its prompt says so.
    assert_eq!(turns.iter().filter(|r| r.body.to_string().contains("plan mode")).count(), 1, "one run was in Copilot's plan mode");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_is_auth_failed() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    let th = TestHome::new();
    routine(&th, &fake, &token("REVOKED"), "auto", "");
    let (rec, code) = run(&th, "bad-token").await;
    assert_eq!(code, 1);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{rec:#}");
    assert_eq!(
        rec["message"].as_str().unwrap(),
        "Authentication token found but could not be validated. — Failed to fetch PAT user login (401): GitHub returned: Bad credentials",
        "Copilot's own words, without its advice: {rec:#}"
    );
}

/// Signed in, Copilot answers a limit it will not retry with `session.error rate_limit` and then
/// never exits: the run is ended on that line, not at its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_rate_limit_is_settled_at_once_with_its_reset() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    let t = token("LIMITED");
    fake.set(&t, CopilotReply::RateLimited { retry_after_secs: 3600 });
    let th = TestHome::new();
    routine(&th, &fake, &t, "auto", "");
    let before = chrono::Utc::now().timestamp();
    let started = Instant::now();
    let (rec, _) = run(&th, "long-limit").await;
    assert!(started.elapsed() < Duration::from_secs(60), "settled in {:?}, not at the 3m timeout", started.elapsed());
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("rate_limited")), "{rec:#}");
    let resets = chrono::DateTime::parse_from_rfc3339(rec["resets_at"].as_str().expect("resets_at")).unwrap().timestamp();
    assert!((before + 3600..before + 3600 + 90).contains(&resets), "an hour from the 429 (\"reset in 1 hour\"): {resets} vs {before}: {rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("rate limit"), "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_rate_limit_copilot_gave_up_on_is_settled_too() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    // Retry-After 2 s: Copilot sleeps it out and retries five times itself, then reports the limit
    // ("reset in under a minute") — and hangs as after a long one.
    let fake = FakeCopilot::start(None).await;
    let t = token("BRIEFLY");
    fake.set(&t, CopilotReply::RateLimited { retry_after_secs: 2 });
    let th = TestHome::new();
    routine(&th, &fake, &t, "auto", "");
    let started = Instant::now();
    let (rec, _) = run(&th, "short-limit").await;
    assert!(started.elapsed() < Duration::from_secs(90), "settled in {:?}, not at the 3m timeout", started.elapsed());
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("rate_limited")), "{rec:#}");
    assert!(fake.turns().len() >= 5, "Copilot retried by itself first ({} turns)", fake.turns().len());
    let resets = chrono::DateTime::parse_from_rfc3339(rec["resets_at"].as_str().expect("resets_at")).unwrap();
    assert!(resets > chrono::Utc::now() - chrono::Duration::seconds(30) && resets < chrono::Utc::now() + chrono::Duration::minutes(2), "within the minute it said: {rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_after_copilots_own_retries_are_api_unavailable() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    let t = token("FIVEHUNDRED");
    fake.set(&t, CopilotReply::ServerError);
    let th = TestHome::new();
    routine(&th, &fake, &t, "auto", "");
    let (rec, _) = run(&th, "500-retries").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("api_unavailable")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("retried 5 times"), "{rec:#}");
    assert_eq!(fake.turns().len(), 6, "Copilot retried by itself first");
}

/// What each mode lets run without asking, checked by what the real CLI did with one tool call:
/// a refused call is one of the run's `denials` and the run goes on to its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_and_rules_decide_what_runs_and_refusals_are_denials() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    // The answer mentions a rate limit and a 401: words in a success are not a failure.
    let text = "Done. Note: the registry answered 401 once and mentioned a rate limit; both are fine now.";
    let shell = |command: &str| serde_json::json!({"command": command, "description": "Run it"});
    let cases: [(&str, &str, serde_json::Value, &str, bool, &str); 5] = [
        // (mode, more, tool call, file it makes, runs?, fixture)
        ("edit", "", shell("touch made-by-shell"), "made-by-shell", false, "denied-tool"),
        ("auto", "", shell("touch made-by-shell"), "made-by-shell", true, "ran-tool"),
        ("skip", "deny: {tools: [\"shell(touch)\"]}\n", shell("touch made-by-shell"), "made-by-shell", false, "denied-by-rule"),
        ("plan", "", serde_json::json!({"path": "PLACEHOLDER", "file_text": "x"}), "made-by-create", false, "denied-write"),
        ("edit", "", serde_json::json!({"path": "PLACEHOLDER", "file_text": "x"}), "made-by-create", true, "ran-write"),
    ];
    for (mode, more, mut arguments, file, runs, record_as) in cases {
        let th = TestHome::new();
        let target = th.user_home().join(file);
        if arguments.get("path").is_some() {
            arguments["path"] = target.display().to_string().into();
        }
        let tool = if arguments.get("command").is_some() { "bash" } else { "create" };
        let t = token(&record_as.replace('-', "").to_uppercase());
        fake.set(&t, CopilotReply::ToolCall { tool: tool.into(), arguments, text: text.into() });
        routine(&th, &fake, &t, mode, more);
        let (rec, code) = run(&th, record_as).await;
        assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{mode} {more}: {rec:#}");
        assert_eq!(target.exists(), runs, "{mode} {more}: {tool} {}", if runs { "ran" } else { "was refused" });
        let denials = rec["denials"].as_array().map(Vec::len).unwrap_or(0);
        assert_eq!(denials, usize::from(!runs), "{mode} {more}: {rec:#}");
        if !runs {
            assert_eq!(rec["denials"][0]["tool"], tool, "{rec:#}");
        }
        assert!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap().contains("rate limit"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accounts_token_from_the_keychain_reaches_copilot_and_rests_nowhere() {
    if require_agent_cli("copilot").is_none() || !keychain_available() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    let t = token("KEPTINTHEKEYCHAIN");
    fake.set(&t, CopilotReply::Success { text: REPORT.into() });
    let (th, _service) = home_with_accounts(&["copilot:me@gh.dev"]);
    assert!(set_token(&th, "me@gh.dev", &t).status.success());
    th.routine("review", &format!("schedule: \"0 2 * * *\"\nagent: copilot\naccount: me@gh.dev\nmodel: gpt-5-mini\nprompt: Review the open pull requests\ntimeout: 3m\ncwd: {}\nenv:\n{}", th.user_home().display(), fake_env(&fake)));
    // While it runs, no process's command line holds the token.
    let argv = common::ArgvWatch::start(&t);
    let out = common::tokio_ctl(&th).args(["run", "review", "--wait", "--json"]).envs(common::bus_env()).output().await.unwrap();
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!((rec["status"].as_str(), rec["account"].as_str()), (Some("completed"), Some("me@gh.dev")), "{rec:#}");
    assert!(fake.turns().iter().all(|r| r.credential.as_deref() == Some(t.as_str())) && !fake.turns().is_empty(), "the keychain's token reached Copilot");
    // The account's dir is its COPILOT_HOME: Copilot's session store landed there.
    assert!(th.path().join("accounts/copilot/me-at-gh.dev/session-state").is_dir(), "COPILOT_HOME is the account's dir");
    assert!(!argv.seen(), "the token was in a process's command line");
    assert_eq!(files_containing(th.path(), &t), Vec::<String>::new(), "the token rests nowhere in the home (Copilot's own home included)");
}


/// `provider = "openai"`: bring your own key. The account's key reaches Copilot as
/// `COPILOT_PROVIDER_API_KEY` with `COPILOT_PROVIDER_TYPE`, the routine names the endpoint, and no
/// GitHub sign-in is asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bring_your_own_key_account_sends_its_key_to_its_provider() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    let key = "sk-proj-nightshift-byok-0123456789abcdef0123456789";
    fake.set(key, CopilotReply::Success { text: REPORT.into() });
    let (th, _) = home_with_accounts(&["copilot:me@byok.dev"]);
    let toml = th.path().join("nightshift.toml");
    std::fs::write(&toml, std::fs::read_to_string(&toml).unwrap() + "provider = \"openai\"\n").unwrap();
    th.routine(
        "review",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: copilot\naccount: me@byok.dev\nmodel: gpt-5-mini\nprompt: Review the open pull requests\ntimeout: 3m\ncwd: {}\nenv:\n  COPILOT_PROVIDER_BASE_URL: {}/v1\n  COPILOT_PROVIDER_WIRE_API: responses\n  COPILOT_CACHE_HOME: {}\n",
            th.user_home().display(),
            fake.url(),
            shared_cache().display()
        ),
    );
    let out = common::tokio_ctl(&th).args(["run", "review", "--wait", "--json"]).env("COPILOT_PROVIDER_API_KEY_ME_AT_BYOK_DOT_DEV", key).output().await.unwrap();
    let rec = common::json(&out);
    assert_eq!((rec["status"].as_str(), rec["account"].as_str()), (Some("completed"), Some("me@byok.dev")), "{rec:#}");
    let turns = fake.turns();
    assert!(!turns.is_empty() && turns.iter().all(|r| r.path == "/v1/responses" && r.credential.as_deref() == Some(key)), "{turns:?}");
    assert!(!fake.requests().iter().any(|r| r.path.starts_with("/copilot_internal")), "no GitHub sign-in on the provider's path");
}

/// An account Copilot would hang on is no lane held until the timeout: the run ends on the
/// limit, the account is marked until its reset, and the next account of the pool does the work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_fails_over_from_an_account_copilot_would_hang_on() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let (a, b) = (token("POOLALPHA"), token("POOLBRAVO"));
    let fake = FakeCopilot::start(None).await;
    fake.set(&a, CopilotReply::RateLimited { retry_after_secs: 7200 });
    fake.set(&b, CopilotReply::Success { text: REPORT.into() });
    let (th, _) = home_with_accounts(&["copilot:a@gh.dev", "copilot:b@gh.dev"]);
    th.routine(
        "review",
        &format!("schedule: \"0 2 * * *\"\nagent: copilot\naccounts: [a@gh.dev, b@gh.dev]\nmodel: gpt-5-mini\nprompt: Review the open pull requests\ntimeout: 3m\ncwd: {}\nenv:\n{}", th.user_home().display(), fake_env(&fake)),
    );
    let started = Instant::now();
    let out = common::tokio_ctl(&th)
        .args(["run", "review", "--wait", "--json"])
        .env("COPILOT_GITHUB_TOKEN_A_AT_GH_DOT_DEV", &a)
        .env("COPILOT_GITHUB_TOKEN_B_AT_GH_DOT_DEV", &b)
        .output()
        .await
        .unwrap();
    let rec = common::json(&out);
    assert_eq!((rec["status"].as_str(), rec["account"].as_str()), (Some("completed"), Some("b@gh.dev")), "{rec:#}");
    assert!(started.elapsed() < Duration::from_secs(120), "no timeout waited on a@gh.dev: {:?}", started.elapsed());
    let tried: Vec<(&str, &str)> = rec["attempts"].as_array().unwrap().iter().map(|x| (x["account"].as_str().unwrap(), x["reason"].as_str().unwrap_or("-"))).collect();
    assert_eq!(tried, [("a@gh.dev", "rate_limited"), ("b@gh.dev", "-")], "{rec:#}");
    let list = common::json(&common::ctl(&th).args(["accounts", "list", "--json"]).env("COPILOT_GITHUB_TOKEN_A_AT_GH_DOT_DEV", &a).output().unwrap());
    let acc = list.as_array().unwrap().iter().find(|x| x["account"] == "a@gh.dev").unwrap().clone();
    assert_eq!((acc["verdict"].as_str(), acc["agent"].as_str()), (Some("rate_limited"), Some("copilot")), "{acc:#}");
}

/// With no Copilot account configured, a run signs in the way Copilot documents for a headless
/// machine: `GH_TOKEN` (or `COPILOT_GITHUB_TOKEN`, `GITHUB_TOKEN`) in the engine's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_account_the_engines_gh_token_signs_copilot_in() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    let t = token("INHERITED");
    fake.set(&t, CopilotReply::Success { text: REPORT.into() });
    let th = TestHome::new();
    routine_with(&th, &fake, None, "auto", "");
    let out = common::tokio_ctl(&th).args(["run", "review", "--wait", "--json"]).env("GH_TOKEN", &t).output().await.unwrap();
    let rec = common::json(&out);
    assert_eq!(rec["status"].as_str(), Some("completed"), "{rec:#}");
    assert!(!fake.turns().is_empty() && fake.turns().iter().all(|r| r.credential.as_deref() == Some(t.as_str())), "the engine's GH_TOKEN reached Copilot");
}

/// No token and no login at all: Copilot says so on stderr (no JSON) — auth_failed, in its words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_at_all_is_auth_failed() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    let th = TestHome::new();
    routine_with(&th, &fake, None, "auto", "");
    let out = common::tokio_ctl(&th).args(["run", "review", "--wait", "--json"]).env_remove("GH_TOKEN").env_remove("GITHUB_TOKEN").env_remove("COPILOT_GITHUB_TOKEN").output().await.unwrap();
    let rec = common::json(&out);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str(), rec["message"].as_str()), (Some("failed"), Some("auth_failed"), Some("No authentication information found.")), "{rec:#}");
    assert!(fake.turns().is_empty(), "no model call without a sign-in");
}

/// Retries that resume: the first try ran a shell command, then the API failed (500 on every
/// turn until Copilot's own retries were spent); the next try is `copilot --resume=<session>`
/// with the words to check what was done — the fake sees the session's earlier items (the call and
/// its output) followed by those words, the command ran once, one record with both tries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_work_resumes_the_session_and_never_repeats_the_command() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    let th = TestHome::new();
    let counter = th.user_home().join("commands-run");
    let t = token("RESUME");
    let arguments = serde_json::json!({"command": format!("echo ran >> {}", counter.display()), "description": "Record a run"});
    fake.set(&t, CopilotReply::DropsAfterTool { tool: "bash".into(), arguments, text: REPORT.into() });
    routine(&th, &fake, &t, "auto", "retries: 1\nretry_backoff: 1s\n");
    let (rec, _) = run_wait(&th, "review").await;
    common::assert_resumed_once(&th, &rec, &counter);
    let input = fake.turns().last().unwrap().body["input"].to_string();
    assert!(input.contains("call_fake_1") && input.contains(common::RESUME_WORDS), "{input}");
}

/// In the machine's sandbox (`mode: skip`: Copilot CLI allows everything itself), a command that
/// writes outside the run's folders fails, nothing is written, and the refusal is one of the run's
/// denials, read from the command's result in Copilot CLI's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_outside_its_folders_is_refused_by_the_sandbox_and_is_a_denial() {
    if require_agent_cli("copilot").is_none() {
        return;
    }
    let fake = FakeCopilot::start(None).await;
    let th = TestHome::new();
    let outside_dir = common::outside_dir();
    let outside = outside_dir.path().join("outside.txt");
    let t = token("OUTSIDE");
    let arguments = serde_json::json!({"command": format!("echo changed > {}", outside.display()), "description": "Write outside"});
    fake.set(&t, CopilotReply::ToolCall { tool: "bash".into(), arguments, text: REPORT.into() });
    routine(&th, &fake, &t, "skip", "");
    let (rec, _) = run_wait(&th, "review").await;
    common::assert_write_refused(&rec, &outside, "bash");
}
