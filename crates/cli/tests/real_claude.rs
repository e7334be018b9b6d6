//! The real Claude Code CLI (npm), driven by `nightshiftctl run --wait --json`, against the fake
//! Anthropic Messages API on loopback. Asserts what a user would see: status, reason, message,
//! reset time, report and cost.

mod common;

use common::{json, stderr, tokio_ctl};
use nightshift_testkit::home::require_claude_cli;
use nightshift_testkit::{FakeAnthropic, Reply, TestHome};

const REPORT: &str = "## Nightly triage\n\n2 new issues labelled; nothing urgent.";

/// A claude routine whose env points the CLI at the fake API with `token`.
fn routine(th: &TestHome, fake: Option<&FakeAnthropic>, token: Option<&str>) {
    let mut env = String::from("  CLAUDE_CODE_MAX_RETRIES: \"0\"\n");
    if let Some(f) = fake {
        env += &format!("  ANTHROPIC_BASE_URL: {}\n", f.url());
    }
    if let Some(t) = token {
        env += &format!("  CLAUDE_CODE_OAUTH_TOKEN: {t}\n");
    }
    th.routine(
        "triage",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: claude\nmode: plan\nprompt: Triage new issues\ntimeout: 2m\ncwd: {}\nenv:\n{env}",
            th.user_home().display()
        ),
    );
    // Claude Code keeps its config under CLAUDE_CONFIG_DIR or ~/.claude; HOME is the test's own.
}

async fn run(th: &TestHome) -> (serde_json::Value, i32) {
    let out = tokio_ctl(th).args(["run", "triage", "--wait", "--json"]).output().await.unwrap();
    let code = out.status.code().unwrap_or(-1);
    let v = json(&out);
    assert!(stderr(&out).is_empty() || !stderr(&out).contains("error:"), "{}", stderr(&out));
    (v, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn success_is_completed_with_report_and_cost() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok-good", Reply::Success { text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, Some(&fake), Some("tok-good"));
    let (rec, code) = run(&th).await;
    assert_eq!(code, 0, "{rec:#}");
    assert_eq!(rec["status"], "completed");
    assert_eq!(rec["reason"], serde_json::Value::Null);
    assert_eq!(rec["exit_code"], 0);
    assert!(rec["cost_usd"].as_f64().unwrap() > 0.0, "{rec:#}");
    // Tokens as the CLI's result event adds them up from the API's answers.
    assert!(rec["usage"]["input_tokens"].as_u64().unwrap() > 0 && rec["usage"]["output_tokens"].as_u64().unwrap() > 0, "{rec:#}");
    assert!(rec["usage"]["model"].as_str().is_some_and(|m| m.starts_with("claude-")), "{rec:#}");
    assert!(rec["session_id"].as_str().is_some());
    let report = std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap();
    assert_eq!(report, REPORT);
    assert_eq!(fake.message_credentials(), vec!["tok-good"], "the CLI used the routine's token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_is_auth_failed() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok-revoked", Reply::Unauthorized);
    let th = TestHome::new();
    routine(&th, Some(&fake), Some("tok-revoked"));
    let (rec, code) = run(&th).await;
    assert_eq!(code, 1);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{rec:#}");
    assert_eq!(rec["message"], "Failed to authenticate. API Error: 401 Invalid bearer token");
    // Its report explains the verdict and the fix (never the agent's own text as a report).
    let report = std::fs::read_to_string(rec["report_path"].as_str().expect("a report")).unwrap();
    assert!(report.starts_with("# triage · failed · auth_failed\n\nThe agent's own sign-in is logged out or its login was refused.\n\nFailed to authenticate. API Error: 401 Invalid bearer token\n\n**What to do:** Sign the agent in (claude /login)"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_429_is_rate_limited() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok-busy", Reply::RateLimited);
    let th = TestHome::new();
    routine(&th, Some(&fake), Some("tok-busy"));
    let (rec, code) = run(&th).await;
    assert_eq!(code, 1);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("rate_limited")), "{rec:#}");
    assert_eq!(rec["resets_at"], serde_json::Value::Null, "a plain 429 says nothing about a reset");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unified_limit_is_rate_limited_until_the_reset_the_api_sent() {
    if require_claude_cli().is_none() {
        return;
    }
    let reset = (chrono::Utc::now().timestamp() / 3600 + 4) * 3600;
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok-limited", Reply::UnifiedLimit { reset_epoch: reset });
    let th = TestHome::new();
    routine(&th, Some(&fake), Some("tok-limited"));
    let (rec, code) = run(&th).await;
    assert_eq!(code, 1);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("rate_limited")), "{rec:#}");
    let expected = chrono::DateTime::from_timestamp(reset, 0).unwrap();
    assert_eq!(rec["resets_at"].as_str(), Some(nightshift_core::words::fmt_time(&expected).as_str()));
    assert!(rec["message"].as_str().unwrap().starts_with("You've hit your 5-hour limit"), "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logged_out_cli_is_auth_failed() {
    if require_claude_cli().is_none() {
        return;
    }
    let th = TestHome::new();
    routine(&th, None, None);
    let (rec, code) = run(&th).await;
    assert_eq!(code, 1);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{rec:#}");
    assert_eq!(rec["message"], "Not logged in · Please run /login");
}

/// An agents-cli routine file as its users have it — in `~/.agents/routines/`, with keys
/// Nightshift does not use — runs end to end with the real CLI through `import_agents_cli`, on the
/// Claude token a headless box keeps in the daemon's own environment (no account configured).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_cli_routine_runs_as_it_is_with_the_inherited_token() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok-inherited-from-the-environment", Reply::Success { text: REPORT.into() });
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "import_agents_cli = true\n").unwrap();
    let dir = th.user_home().join(".agents/routines");
    std::fs::create_dir_all(&dir).unwrap();
    let file = format!(
        "name: nightly-notes\nschedule: 0 2 * * *\ntimezone: UTC\nagent: claude\nmode: plan\neffort: low\nsandbox: false\ntimeout: 120\n\
         createdAt: \"2026-11-30T12:00:00Z\"\nsource:\n  project: app\nprompt: Triage new issues\nenv:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n",
        fake.url()
    );
    std::fs::write(dir.join("nightly-notes.yml"), file).unwrap();
    let out = tokio_ctl(&th).args(["run", "nightly-notes", "--wait", "--json"]).env("CLAUDE_CODE_OAUTH_TOKEN", "tok-inherited-from-the-environment").output().await.unwrap();
    let rec = json(&out);
    assert_eq!((out.status.code(), rec["status"].as_str()), (Some(0), Some("completed")), "{rec:#}\n{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT);
    assert_eq!(fake.message_credentials(), vec!["tok-inherited-from-the-environment"], "the inherited token reached the CLI");
}

/// `effort:` reaches Claude Code as `--effort` (the API sees it) and `args:` are passed on —
/// here a system prompt of the user's own; an argument Nightshift sets itself is refused with the
/// field to use instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effort_and_args_reach_claude_and_controlled_args_are_refused() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok-effort", Reply::Success { text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, Some(&fake), Some("tok-effort"));
    let file = th.path().join("routines/triage.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}effort: high\nargs: [--append-system-prompt, Answer in one short paragraph.]\n")).unwrap();
    let (rec, code) = run(&th).await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    let call = fake.requests().into_iter().find(|r| r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens") && r.body["system"].to_string().contains("Answer in one short paragraph.")).expect("the routine's system prompt reached the API");
    assert_eq!(call.body["output_config"]["effort"], "high", "{:#}", call.body);

    std::fs::write(&file, format!("{text}args: [--output-format, text]\n")).unwrap();
    let out = common::ctl(&th).args(["routines", "validate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`args`: `--output-format` is Nightshift's to set for claude: Nightshift reads the agent's own event stream and sets its format"), "{}", stderr(&out));
}

/// agents-cli's `[agents.claude] auto_compact_tokens` and `fast_mode_models` reach the real CLI as
/// its own settings (`--settings`), which it takes: the run completes with the model asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_cli_compaction_and_fast_mode_settings_are_taken_by_the_real_cli() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok-fast", Reply::Success { text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, Some(&fake), Some("tok-fast"));
    let file = th.path().join("routines/triage.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}model: claude-opus-4-6\n")).unwrap();
    std::fs::write(th.path().join("nightshift.toml"), "[agents.claude]\nauto_compact_tokens = 120000\nfast_mode_models = [\"claude-opus-4-6\"]\n").unwrap();
    let out = common::ctl(&th).args(["routines", "validate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (rec, code) = run(&th).await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    let calls: Vec<_> = fake.requests().into_iter().filter(|r| r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens")).collect();
    assert!(calls.iter().any(|c| c.body["model"].as_str().is_some_and(|m| m.starts_with("claude-opus-4-6"))), "{:#?}", calls.iter().map(|c| &c.body["model"]).collect::<Vec<_>>());
}

/// Guardrails with the real CLI: the fake API's model asks for a Bash call. With `allow.tools:
/// [Read, Grep]` Bash does not exist for it — the command never runs, in every mode, as root too
/// (`skip` with `allow.tools` runs as Claude Code's `dontAsk`, which it starts as root) — and the
/// run lists the call under `denials`; `on_denial: fail` makes it a
/// failure; with `Bash(touch *)` allowed, the command runs; `deny.tools: [Bash]` refuses it in
/// `auto` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_and_deny_decide_which_tool_calls_run_and_refusals_are_recorded() {
    if require_claude_cli().is_none() {
        return;
    }
    let th = TestHome::new();
    // Inside the run's folder: Claude Code also checks the paths of file commands against its
    // working folders (`cwd` and `allow.dirs`).
    let marker = th.user_home().join("touched-by-the-agent");
    let fake = FakeAnthropic::start(None).await;
    let call = serde_json::json!({"command": format!("touch {}", marker.display()), "description": "touch a file"});
    fake.set("tok-tools", Reply::ToolCall { tool: "Bash".into(), input: call, text: REPORT.into() });
    let attempt = |name: &str, extra: &str| {
        th.routine(
            name,
            &format!(
                "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Touch the file\ntimeout: 2m\ncwd: {}\n{extra}env:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_OAUTH_TOKEN: tok-tools\n",
                th.user_home().display(),
                fake.url()
            ),
        );
    };
    let run = |name: &str| {
        let th = &th;
        let name = name.to_string();
        async move {
            let out = tokio_ctl(th).args(["run", &name, "--wait", "--json"]).output().await.unwrap();
            json(&out)
        }
    };
    for mode in ["edit", "auto", "plan", "skip"] {
        attempt("readonly", &format!("mode: {mode}\nallow: {{tools: [Read, Grep]}}\n"));
        let rec = run("readonly").await;
        assert!(!marker.exists(), "mode {mode}: a tool outside allow.tools ran: {rec:#}");
        assert_eq!(rec["status"], "completed", "mode {mode}: {rec:#}");
        let denials = rec["denials"].as_array().unwrap();
        assert!(denials.iter().any(|d| d["tool"] == "Bash" && d["input"].as_str().unwrap().starts_with("touch ")), "mode {mode}: {rec:#}");
    }
    attempt("strict", "mode: edit\nallow: {tools: [Read]}\non_denial: fail\n");
    let rec = run("strict").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("permission_denied")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().starts_with("1 tool call refused: Bash(touch "), "{rec:#}");
    let shown = common::stdout(&common::ctl(&th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.lines().any(|l| l.starts_with("refused      Bash(touch ")), "{shown}");

    attempt("denied", "mode: auto\ndeny: {tools: [Bash]}\n");
    let rec = run("denied").await;
    assert!(!marker.exists(), "deny.tools refuses in auto mode: {rec:#}");
    assert!(rec["denials"].as_array().unwrap().iter().any(|d| d["tool"] == "Bash"), "{rec:#}");

    attempt("toucher", "mode: edit\nallow: {tools: [\"Bash(touch *)\"]}\n");
    let rec = run("toucher").await;
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert!(marker.exists(), "the allowed rule ran: {rec:#}");
    assert_eq!(rec["denials"], serde_json::json!([]), "{rec:#}");
}

/// A retry after the connection dropped mid-work continues the agent's own session: the real CLI
/// ran a command, then the API went away (529, its own retries off); the next try is
/// `claude --resume <session>` with words saying to check what was done — the fake API sees the
/// earlier turns, the command ran once, one record with both tries. (Where a session cannot be
/// continued, the decision not to start again is `retry.rs`'s unit tests'.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_work_continues_the_session_and_never_repeats_the_work() {
    if require_claude_cli().is_none() {
        return;
    }
    let th = TestHome::new();
    let counter = th.user_home().join("commands-run");
    let fake = FakeAnthropic::start(None).await;
    let call = serde_json::json!({"command": format!("echo ran >> {}", counter.display()), "description": "record a run"});
    fake.set("tok-resume", Reply::DropsAfterTool { tool: "Bash".into(), input: call, text: REPORT.into() });
    let routine = |extra: &str| {
        th.routine(
            "bump",
            &format!(
                "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Bump the dependencies\nmode: edit\nallow: {{tools: [\"Bash(echo *)\"]}}\nretries: 1\nretry_backoff: 1s\ntimeout: 2m\ncwd: {}\n{extra}env:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_OAUTH_TOKEN: tok-resume\n",
                th.user_home().display(),
                fake.url()
            ),
        );
    };
    routine("");
    let out = tokio_ctl(&th).args(["run", "bump", "--wait", "--json"]).output().await.unwrap();
    let rec = json(&out);
    assert_eq!(rec["status"], "completed", "{rec:#}\n{}", stderr(&out));
    common::assert_resumed_once(&th, &rec, &counter);
    // The resumed try sent the earlier turns (the command and its result) and the words to check.
    let turns: Vec<_> = fake.requests().into_iter().filter(|r| r.path.starts_with("/v1/messages") && r.body["tools"].as_array().is_some_and(|t| !t.is_empty())).collect();
    let said = turns.last().unwrap().body["messages"].to_string();
    assert!(said.contains("toolu_fake_0001") && said.contains(common::RESUME_WORDS), "{said}");
}

/// `budget.run` reaches Claude Code as `--max-budget-usd`: a run that keeps spending (the fake
/// API's model asks for a tool, so there is a second turn) is stopped by the CLI itself and
/// settles `failed · budget`, saying what it spent of what.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cap_stops_a_run_that_keeps_spending() {
    if require_claude_cli().is_none() {
        return;
    }
    let th = TestHome::new();
    let fake = FakeAnthropic::start(None).await;
    let call = serde_json::json!({"command": "echo one more turn", "description": "keep going"});
    fake.set("tok-budget", Reply::ToolCall { tool: "Bash".into(), input: call, text: REPORT.into() });
    th.routine(
        "spender",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Keep going\nmode: auto\nbudget: {{run: 0.0001}}\ntimeout: 2m\ncwd: {}\nenv:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_OAUTH_TOKEN: tok-budget\n",
            th.user_home().display(),
            fake.url()
        ),
    );
    let out = tokio_ctl(&th).args(["run", "spender", "--wait", "--json"]).output().await.unwrap();
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("budget")), "{rec:#}");
    let message = rec["message"].as_str().unwrap();
    assert_eq!(message, "spent $0.0003 — Reached maximum budget ($0.0001) (`budget.run`)");
    assert!(rec["cost_usd"].as_f64().unwrap() > 0.0001, "{rec:#}");
    // The CLI was given the cap; a second turn never reached the API.
    let turns = fake.requests().into_iter().filter(|r| r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens") && r.body["tools"].as_array().is_some_and(|t| !t.is_empty())).count();
    assert_eq!(turns, 1, "one turn, then the cap");
}
