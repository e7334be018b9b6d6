//! Codex, Gemini CLI, OpenCode and Copilot CLI streams recorded from the real CLIs (the pinned
//! versions, against the loopback fakes — `crates/cli/tests/real_{codex,gemini,opencode,copilot}.rs` with
//! NIGHTSHIFT_RECORD_FIXTURES=1):
//! every outcome judged right, and classifiers that cannot be fooled by damaged streams.

use chrono::{TimeZone, Utc};
use nightshift_core::agents::{driver, Call, Outcome, RunOutput};
use nightshift_core::routine::{Effort, Guard, Mode};
use nightshift_core::run::{Reason, RunStatus};
use nightshift_core::words::Agent;
use proptest::prelude::*;
use std::path::Path;

const REPORT: &str = "## Nightly triage\n\n2 new issues labelled; nothing urgent.";

fn fixture(dir: &str, name: &str) -> (Vec<u8>, Vec<u8>, Option<i32>) {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(dir);
    let out = std::fs::read(fx.join(format!("{name}.jsonl"))).unwrap();
    let err = std::fs::read(fx.join(format!("{name}.stderr"))).unwrap_or_default();
    let exit = std::fs::read_to_string(fx.join(format!("{name}.exit"))).unwrap().trim().parse().ok();
    (out, err, exit)
}

fn classify_bytes(agent: Agent, stdout: &[u8], stderr: &[u8], exit: Option<i32>) -> Outcome {
    let run = tempfile::tempdir().unwrap();
    std::fs::write(run.path().join("stdout.log"), stdout).unwrap();
    std::fs::write(run.path().join("stderr.log"), stderr).unwrap();
    let now = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
    driver(agent).classify(&RunOutput { run_dir: run.path(), exit_code: exit, now })
}

fn classify(agent: Agent, dir: &str, name: &str) -> Outcome {
    let (out, err, exit) = fixture(dir, name);
    classify_bytes(agent, &out, &err, exit)
}

/// A Copilot fixture with the usage file its run wrote beside the streams.
fn copilot(name: &str) -> Outcome {
    let (out, err, exit) = fixture("copilot-1.0.102", name);
    let run = tempfile::tempdir().unwrap();
    std::fs::write(run.path().join("stdout.log"), out).unwrap();
    std::fs::write(run.path().join("stderr.log"), err).unwrap();
    let usage = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/copilot-1.0.102/{name}.copilot-usage.json"));
    if usage.is_file() {
        std::fs::copy(usage, run.path().join("copilot-usage.json")).unwrap();
    }
    let now = Utc.with_ymd_and_hms(2026, 12, 4, 21, 30, 0).unwrap();
    driver(Agent::Copilot).classify(&RunOutput { run_dir: run.path(), exit_code: exit, now })
}

fn codex(name: &str) -> Outcome {
    classify(Agent::Codex, "codex-0.171.0", name)
}

fn gemini(name: &str) -> Outcome {
    classify(Agent::Gemini, "gemini-0.61.0", name)
}

#[test]
fn codex_success_reports_the_last_agent_message() {
    let o = codex("success");
    let u = o.usage.clone().expect("usage from turn.completed");
    assert_eq!((u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.model.as_deref()), (Some(120), Some(9), Some(20), Some(0), None));
    assert_eq!((o.status(), o.report.as_deref()), (RunStatus::Completed, Some(REPORT)), "{o:?}");
    assert!(o.session_id.is_some());
    assert!(o.from_final_event);
}

#[test]
fn codex_retries_before_a_completed_turn_are_completed() {
    // "Reconnecting... 1/3" and "2/3" are `error` events; the turn then completes.
    let o = codex("reconnected-success");
    assert_eq!((o.status(), o.reason), (RunStatus::Completed, None), "{o:?}");
    assert_eq!(o.report.as_deref(), Some(REPORT));
    assert_eq!(codex("retried-success").status(), RunStatus::Completed);
}

#[test]
fn codex_401_is_auth_failed() {
    let o = codex("401");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::AuthFailed)), "{o:?}");
    assert!(o.message.unwrap().starts_with("unexpected status 401 Unauthorized"));
    assert!(o.session_id.is_some());
}

#[test]
fn codex_usage_limit_is_rate_limited_until_the_time_it_names() {
    let o = codex("usage-limit");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{o:?}");
    let message = o.message.unwrap();
    assert!(message.starts_with("You’ve hit your usage limit"), "{message}");
    // The recorded text says "try again at H:MM PM" (local time of the recording, UTC).
    assert!(message.contains("try again at "), "{message}");
    assert!(o.resets_at.is_some_and(|t| t > Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap()), "{:?}", o.resets_at);
}

/// Codex keeps a plan's windows in its session's rollout file, not in its output: found by the
/// session id under the account's CODEX_HOME, the last `token_count` event's `rate_limits`.
#[test]
fn codex_windows_come_from_the_sessions_rollout_file() {
    let home = tempfile::tempdir().unwrap();
    let now = Utc.with_ymd_and_hms(2026, 12, 3, 21, 34, 0).unwrap();
    let day = home.path().join("sessions").join(now.with_timezone(&chrono::Local).format("%Y/%m/%d").to_string());
    std::fs::create_dir_all(&day).unwrap();
    let line = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-0.171.0/rollout-windows.jsonl")).unwrap();
    let session = "01a23dd4-01ef-79f3-b5e5-43b1f1fbb0f3";
    std::fs::write(day.join(format!("rollout-2026-12-03T21-33-54-{session}.jsonl")), format!("{{\"type\":\"session_meta\"}}\n{line}")).unwrap();
    let codex = nightshift_core::agents::driver(Agent::Codex);
    let got: Vec<(String, f64, Option<i64>, String)> = codex.windows_kept_in(home.path(), session, now).into_iter().map(|w| (w.window, w.used_percent, w.resets_at.map(|t| t.timestamp()), w.status)).collect();
    assert_eq!(got, [("five_hour".to_string(), 85.0, Some(1796340833), "allowed_warning".to_string()), ("seven_day".to_string(), 40.0, Some(1796600033), "allowed".to_string())]);
    assert!(codex.windows_kept_in(home.path(), "another-session", now).is_empty(), "another session's file is not this run's");
    assert!(codex.windows_kept_in(home.path(), "../x", now).is_empty());
    assert!(nightshift_core::agents::driver(Agent::Claude).windows_kept_in(home.path(), session, now).is_empty(), "Claude reports its windows in its stream");
}

#[test]
fn codex_server_error_is_api_unavailable_without_ansi() {
    let o = codex("500");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::ApiUnavailable)), "{o:?}");
    assert!(!o.message.unwrap().contains('\u{1b}'));
}

#[test]
fn gemini_success_joins_the_streamed_reply() {
    let o = gemini("success");
    let u = o.usage.clone().expect("usage from result.stats");
    // Gemini gives no cache-write figure: it stays empty, not 0.
    assert_eq!((u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens), (Some(100), Some(7), Some(0), None));
    assert_eq!(u.model.as_deref(), Some("gemini-2.5-flash"));
    assert_eq!((o.status(), o.report.as_deref()), (RunStatus::Completed, Some(REPORT)), "{o:?}");
    assert!(o.session_id.is_some());
    assert_eq!(gemini("retried-success").status(), RunStatus::Completed);
}

#[test]
fn gemini_key_failures_are_auth_failed() {
    for name in ["invalid-key", "unauthenticated", "no-auth"] {
        let o = gemini(name);
        assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::AuthFailed)), "{name}: {o:?}");
    }
    assert!(gemini("no-auth").message.unwrap().contains("GEMINI_API_KEY"));
}

#[test]
fn gemini_daily_quota_is_rate_limited_by_its_final_error() {
    let (out, _, exit) = fixture("gemini-0.61.0", "quota");
    // Judged from the result event alone: the stderr dump is not needed.
    let o = classify_bytes(Agent::Gemini, &out, b"", exit);
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{o:?}");
    assert_eq!(o.message.as_deref(), Some("[API Error: You have exhausted your daily quota on this model.]"));
    assert_eq!(o.resets_at, Some(Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap()), "midnight Pacific");
}

#[test]
fn gemini_server_error_is_api_unavailable() {
    let o = gemini("500");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::ApiUnavailable)), "{o:?}");
}

#[test]
fn arguments_per_mode() {
    static OPEN: std::sync::LazyLock<Guard> = std::sync::LazyLock::new(Guard::default);
    let call = |mode, model, effort, extra: &'static [String]| Call { prompt: "do it", mode, model, effort, extra, guard: &OPEN, max_budget_usd: None, run_dir: None, config: &[], resume: None, sandboxed: false, bridge: None };
    let codex = |m| driver(Agent::Codex).args(&call(m, Some("gpt-5"), None, &[]));
    let base = ["exec", "--json", "--skip-git-repo-check", "--color", "never", "--disable", "shell_snapshot"];
    let with = |extra: &[&str]| base.iter().chain(extra).chain(["--model", "gpt-5", "do it"].iter()).map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(codex(Mode::Plan), with(&["--sandbox", "read-only"]));
    assert_eq!(codex(Mode::Edit), with(&["--sandbox", "workspace-write"]));
    assert_eq!(codex(Mode::Auto), with(&["--sandbox", "workspace-write"]));
    assert_eq!(codex(Mode::Skip), with(&["--dangerously-bypass-approvals-and-sandbox"]));
    // In Nightshift's sandbox the machine keeps Codex's mode (its own bubblewrap cannot nest
    // there); a retry continues the thread: `exec`'s options, then `resume <thread> <prompt>`.
    let inside = driver(Agent::Codex).args(&Call { sandboxed: true, resume: Some("thread-1"), ..call(Mode::Edit, None, None, &[]) });
    let expected: Vec<&str> = base.iter().copied().chain(["--sandbox", "danger-full-access", "resume", "thread-1", "do it"]).collect();
    assert_eq!(inside, expected);
    let skip = driver(Agent::Codex).args(&Call { sandboxed: true, ..call(Mode::Skip, None, None, &[]) });
    assert!(skip.contains(&"--dangerously-bypass-approvals-and-sandbox".to_string()));
    // Each of the others continues its own session its own way.
    let resumed = |agent| driver(agent).args(&Call { resume: Some("s-1"), ..call(Mode::Auto, None, None, &[]) });
    assert!(resumed(Agent::Claude).windows(2).any(|w| w == ["--resume", "s-1"]));
    assert!(resumed(Agent::Gemini).windows(2).any(|w| w == ["--resume", "s-1"]));
    assert!(resumed(Agent::OpenCode).windows(2).any(|w| w == ["--session", "s-1"]));
    assert!(resumed(Agent::Copilot).contains(&"--resume=s-1".to_string()));
    assert!([Agent::Claude, Agent::Codex, Agent::Gemini, Agent::OpenCode, Agent::Copilot].iter().all(|a| driver(*a).resumes()));
    let gemini = |m| driver(Agent::Gemini).args(&call(m, None, None, &[]));
    for (mode, approval) in [(Mode::Plan, "plan"), (Mode::Edit, "auto_edit"), (Mode::Auto, "yolo"), (Mode::Skip, "yolo")] {
        assert_eq!(gemini(mode), vec!["-p", "do it", "--output-format", "stream-json", "--approval-mode", approval, "--skip-trust"]);
    }
    // `effort:` as each CLI's own setting, and `args:` where each takes options (before Codex's
    // positional prompt).
    static EXTRA: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| vec!["--add-dir".into(), "/srv/docs".into()]);
    let claude = driver(Agent::Claude).args(&call(Mode::Plan, None, Some(Effort::Detailed), &EXTRA));
    assert_eq!(claude[7..], ["--effort", "high", "--add-dir", "/srv/docs"]);
    let codex = driver(Agent::Codex).args(&call(Mode::Plan, None, Some(Effort::Max), &EXTRA));
    assert_eq!(codex[codex.len() - 5..], ["-c", "model_reasoning_effort=\"max\"", "--add-dir", "/srv/docs", "do it"]);
    let default = driver(Agent::Claude).args(&call(Mode::Plan, None, Some(Effort::Auto), &[]));
    assert!(!default.contains(&"--effort".to_string()), "the agent's own default: nothing passed");
    let gemini = driver(Agent::Gemini).args(&call(Mode::Plan, None, Some(Effort::High), &EXTRA));
    assert_eq!(gemini[gemini.len() - 2..], ["--add-dir", "/srv/docs"]);
    // `allow:`/`deny:` in Claude Code's own terms: the tool set, the approved rules, the refused
    // ones, the folders — and with a rule narrower than a tool, only what it approves runs.
    let guard = Guard {
        allow_tools: Some(vec!["Read".into(), "Bash(git status)".into()]),
        allow_dirs: vec!["/srv/docs".into()],
        deny_tools: vec!["WebFetch".into()],
        ..Guard::default()
    };
    let guarded = |mode| driver(Agent::Claude).args(&Call { prompt: "do it", mode, model: None, effort: None, extra: &[], guard: &guard, max_budget_usd: None, run_dir: None, config: &[], resume: None, sandboxed: false, bridge: None });
    let auto = guarded(Mode::Auto);
    assert_eq!(auto[5..7], ["--permission-mode", "dontAsk"]);
    assert_eq!(auto[7..], ["--tools", "Read,Bash", "--allowedTools", "Read", "--allowedTools", "Bash(git status)", "--disallowedTools", "WebFetch", "--add-dir", "/srv/docs"]);
    assert_eq!(guarded(Mode::Plan)[5..7], ["--permission-mode", "plan"], "plan stays plan");
    // `on_denial: ask`: what the rules do not allow goes to Nightshift's prompt tool (the run's
    // own approvals server, through the bridge) — so the mode asks instead of refusing.
    let asking = Guard { ask: Some(Guard::DEFAULT_ASK), ..guard.clone() };
    let bridge = std::path::Path::new("/usr/bin/nightshiftctl");
    let asks = |mode| driver(Agent::Claude).args(&Call { prompt: "do it", mode, model: None, effort: None, extra: &[], guard: &asking, max_budget_usd: None, run_dir: None, config: &[], resume: None, sandboxed: false, bridge: Some(bridge) });
    let auto = asks(Mode::Auto);
    assert_eq!(auto[5..7], ["--permission-mode", "default"], "{auto:?}");
    let at = auto.iter().position(|a| a == "--permission-prompt-tool").expect("the prompt tool");
    assert_eq!(auto[at + 1..at + 4], ["mcp__nightshift_approvals__approval_prompt", "--allowedTools", "mcp__nightshift_approvals__approval_prompt"]);
    let config: serde_json::Value = serde_json::from_str(&auto[at - 1]).unwrap();
    assert_eq!(config["mcpServers"]["nightshift_approvals"], serde_json::json!({ "type": "stdio", "command": "/usr/bin/nightshiftctl", "args": ["nightshift-mcp-bridge", "ask"] }));
    assert_eq!(asks(Mode::Edit)[5..7], ["--permission-mode", "acceptEdits"]);
    assert_eq!(asks(Mode::Plan)[5..7], ["--permission-mode", "plan"]);
    let elsewhere = driver(Agent::Claude).args(&Call { prompt: "do it", mode: Mode::Auto, model: None, effort: None, extra: &[], guard: &asking, max_budget_usd: None, run_dir: None, config: &[], resume: None, sandboxed: false, bridge: None });
    assert!(!elsewhere.contains(&"--permission-prompt-tool".to_string()), "no bridge (a run on another machine): nothing to ask through");
    let codex = driver(Agent::Codex).args(&Call { prompt: "do it", mode: Mode::Plan, model: None, effort: None, extra: &[], guard: &guard, max_budget_usd: None, run_dir: None, config: &[], resume: None, sandboxed: false, bridge: None });
    assert_eq!(codex[codex.len() - 3..], ["--add-dir", "/srv/docs", "do it"]);
}

/// `allow:`/`deny:` for Gemini CLI: a policy of its policy engine in the run's directory — the
/// rest denied, the entries allowed (in plan mode only the read-only ones), `deny.tools` over all.
#[test]
fn gemini_tool_rules_are_a_policy_file_in_the_run_directory() {
    use nightshift_core::agents::gemini::{policy, POLICY_FILE};
    let guard = Guard {
        allow_tools: Some(vec!["read_file".into(), "run_shell_command(git status)".into(), "write_file".into()]),
        allow_dirs: vec![],
        deny_tools: vec!["run_shell_command(git push *)".into()],
        ..Guard::default()
    };
    let rules = |mode| -> Vec<(String, Option<String>, String, i64)> {
        let text = policy(&guard, mode).unwrap();
        let doc: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        doc["rule"].as_array().unwrap().iter().map(|r| (r["toolName"].as_str().unwrap().to_string(), r.get("commandPrefix").map(|p| p.as_str().unwrap().to_string()), r["decision"].as_str().unwrap().to_string(), r["priority"].as_integer().unwrap())).collect()
    };
    let rule = |tool: &str, prefix: Option<&str>, decision: &str, priority| (tool.to_string(), prefix.map(str::to_string), decision.to_string(), priority);
    assert_eq!(
        rules(Mode::Auto),
        [rule("*", None, "deny", 100), rule("read_file", None, "allow", 200), rule("run_shell_command", Some("git status"), "allow", 200), rule("write_file", None, "allow", 200), rule("run_shell_command", Some("git push"), "deny", 300)]
    );
    assert_eq!(rules(Mode::Plan), [rule("*", None, "deny", 100), rule("read_file", None, "allow", 200), rule("run_shell_command", Some("git push"), "deny", 300)], "plan stays read-only");
    let only_deny = Guard { deny_tools: vec!["web_fetch".into()], ..Guard::default() };
    assert_eq!(policy(&only_deny, Mode::Skip).unwrap().matches("[[rule]]").count(), 1, "deny.tools alone leaves the rest to the mode");
    assert_eq!(policy(&Guard::default(), Mode::Auto), None);
    let dir = std::path::Path::new("/home/me/.local/share/nightshift/runs/r/01");
    let args = driver(Agent::Gemini).args(&Call { prompt: "do it", mode: Mode::Auto, model: None, effort: None, extra: &[], guard: &guard, max_budget_usd: None, run_dir: Some(dir), config: &[], resume: None, sandboxed: false, bridge: None });
    let at = args.iter().position(|a| a == "--policy").expect("--policy");
    assert_eq!(args[at + 1], dir.join(POLICY_FILE).display().to_string());
    let open = driver(Agent::Gemini).args(&Call { prompt: "do it", mode: Mode::Auto, model: None, effort: None, extra: &[], guard: &Guard::default(), max_budget_usd: None, run_dir: Some(dir), config: &[], resume: None, sandboxed: false, bridge: None });
    assert!(!open.contains(&"--policy".to_string()), "no rules, no policy");
}

/// Each agent's recorded streams, and whether each is the agent's own success.
fn streams() -> Vec<(Agent, Vec<u8>, Option<i32>, bool)> {
    let mut all = Vec::new();
    for (agent, dir, names) in [
        (Agent::Codex, "codex-0.171.0", &["success", "reconnected-success", "401", "usage-limit", "500"][..]),
        (Agent::Gemini, "gemini-0.61.0", &["success", "retried-success", "invalid-key", "quota", "500"][..]),
        (Agent::Claude, "claude-2.1.332", &["success", "401", "429", "unified", "500-retries", "logged-out"][..]),
        (Agent::OpenCode, "opencode-1.18.33", &["success", "short-limit-success", "401", "long-limit", "500-retries", "denied-tool"][..]),
        (Agent::Copilot, "copilot-1.0.102", &["success", "bad-token", "long-limit", "short-limit", "500-retries", "denied-tool"][..]),
    ] {
        for name in names {
            let (out, _, exit) = fixture(dir, name);
            let success = name.contains("success");
            all.push((agent, out, exit, success));
        }
    }
    all
}

/// The agent's own completion event, as each CLI writes it.
fn has_completion_event(agent: Agent, stdout: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stdout);
    match agent {
        Agent::Codex => text.contains("\"turn.completed\""),
        Agent::Gemini => text.contains("\"status\":\"success\""),
        Agent::Claude => text.contains("\"subtype\":\"success\""),
        Agent::OpenCode => text.contains("\"reason\":\"stop\""),
        Agent::Copilot => text.contains("\"exitCode\":0"),
        Agent::Command => false,
    }
}

/// Ways a stream gets damaged: cut anywhere, bytes that are not UTF-8, a huge line, lines out of
/// order, another stream's lines interleaved.
#[derive(Debug, Clone)]
enum Damage {
    Truncate(usize),
    Garbage(usize, Vec<u8>),
    HugeLine(usize),
    Shuffle(u64),
    Interleave(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<usize>().prop_map(Damage::Truncate),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..64)).prop_map(|(at, b)| Damage::Garbage(at, b)),
        (1usize..3_000_000).prop_map(Damage::HugeLine),
        any::<u64>().prop_map(Damage::Shuffle),
        any::<usize>().prop_map(Damage::Interleave),
    ]
}

fn apply(d: &Damage, stream: &[u8], other: &[u8]) -> Vec<u8> {
    let lines = |s: &[u8]| s.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect::<Vec<_>>();
    match d {
        Damage::Truncate(at) => stream[..at % (stream.len() + 1)].to_vec(),
        Damage::Garbage(at, bytes) => {
            let at = at % (stream.len() + 1);
            [&stream[..at], bytes.as_slice(), &stream[at..]].concat()
        }
        Damage::HugeLine(n) => [stream, &vec![b'x'; *n], b"\n"].concat(),
        Damage::Shuffle(seed) => {
            let mut l = lines(stream);
            let mut s = *seed;
            for i in (1..l.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                l.swap(i, (s >> 33) as usize % (i + 1));
            }
            l.join(&b'\n')
        }
        Damage::Interleave(k) => {
            let (a, b) = (lines(stream), lines(other));
            let mut out = Vec::new();
            for (i, line) in a.iter().enumerate() {
                out.push(line.clone());
                if let Some(x) = b.get((i + k) % b.len().max(1)) {
                    out.push(x.clone());
                }
            }
            out.join(&b'\n')
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    /// Never a panic; never `completed` without the agent's own completion event, nor with a
    /// known non-zero exit. (An unknown exit — the process vanished with the engine — may complete
    /// on the agent's own success event: crash recovery trusts exactly that.)
    #[test]
    fn classifiers_cannot_be_fooled(i in 0usize..100, j in 0usize..100, d in damage(), exit in prop::option::of(-1i32..256)) {
        let all = streams();
        let (agent, stream, _, _) = &all[i % all.len()];
        let other = &all[j % all.len()].1;
        let damaged = apply(&d, stream, other);
        let o = classify_bytes(*agent, &damaged, b"", exit);
        if o.status() == RunStatus::Completed {
            prop_assert!(exit == Some(0) || exit.is_none(), "completed with exit {exit:?}");
            prop_assert!(has_completion_event(*agent, &damaged), "completed without a completion event: {d:?}");
        }
    }

    /// Notices before a final success (retries, warnings, errors the CLI recovered from) do not
    /// make a success anything else.
    #[test]
    fn a_final_success_after_retry_notices_is_completed(n in 0usize..20, which in 0usize..3) {
        let notice: &[u8] = match which {
            0 => b"{\"type\":\"error\",\"message\":\"Reconnecting... 1/5 (stream disconnected before completion)\"}\n",
            1 => b"{\"type\":\"error\",\"message\":\"unexpected status 429 Too Many Requests, retrying\"}\n",
            _ => b"{\"type\":\"item.completed\",\"item\":{\"id\":\"item_9\",\"type\":\"error\",\"message\":\"Model metadata not found\"}}\n",
        };
        let (success, _, _) = fixture("codex-0.171.0", "success");
        let text = String::from_utf8_lossy(&success).into_owned();
        // Insert the notices after `turn.started`, before the turn completes.
        let at = text.find("{\"type\":\"turn.started\"}").map(|i| i + "{\"type\":\"turn.started\"}\n".len()).unwrap_or(0);
        let stream = [&text.as_bytes()[..at], &notice.repeat(n), &text.as_bytes()[at..]].concat();
        let o = classify_bytes(Agent::Codex, &stream, b"", Some(0));
        prop_assert_eq!(o.status(), RunStatus::Completed);
    }
}

/// A failure whose output shows both a rate limit and an authentication error is a rate limit, as
/// agents-cli judges it — so the account fails over (or the run waits for the reset) instead of
/// being marked revoked. Each agent's recorded failures, put together.
#[test]
fn a_limit_beside_an_auth_error_is_a_rate_limit_for_every_agent() {
    let both = |agent: Agent, dir: &str, limited: &str, unauthorised: &str| {
        let (limit_out, limit_err, _) = fixture(dir, limited);
        let (auth_out, auth_err, auth_exit) = fixture(dir, unauthorised);
        let out = [auth_out, limit_out].concat();
        let err = [auth_err, limit_err].concat();
        classify_bytes(agent, &out, &err, auth_exit)
    };
    let claude = both(Agent::Claude, "claude-2.1.332", "429", "logged-out");
    assert_eq!((claude.status(), claude.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{claude:?}");
    let codex = both(Agent::Codex, "codex-0.171.0", "usage-limit", "401");
    assert_eq!((codex.status(), codex.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{codex:?}");
    let gemini = both(Agent::Gemini, "gemini-0.61.0", "quota", "unauthenticated");
    assert_eq!((gemini.status(), gemini.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{gemini:?}");
    let opencode = both(Agent::OpenCode, "opencode-1.18.33", "long-limit", "401");
    assert_eq!((opencode.status(), opencode.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{opencode:?}");
    let copilot = both(Agent::Copilot, "copilot-1.0.102", "long-limit", "bad-token");
    assert_eq!((copilot.status(), copilot.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{copilot:?}");
}

fn opencode(name: &str) -> Outcome {
    classify(Agent::OpenCode, "opencode-1.18.33", name)
}

#[test]
fn opencode_success_reports_its_answer_with_tokens_and_cost() {
    let o = opencode("success");
    assert_eq!((o.status(), o.report.as_deref()), (RunStatus::Completed, Some("## Dependency check\n\nAll 14 packages are current.")), "{o:?}");
    let u = o.usage.clone().expect("usage from step_finish");
    assert!(u.input_tokens.unwrap() > 0 && u.output_tokens.unwrap() > 0, "{u:?}");
    assert!(o.cost_usd.unwrap() > 0.0);
    assert!(o.session_id.as_deref().unwrap().starts_with("ses_") && o.from_final_event);
    // A 429 OpenCode retried by itself (its retry status in the stream), then the answer.
    let o = opencode("short-limit-success");
    assert_eq!((o.status(), o.reason), (RunStatus::Completed, None), "{o:?}");
}

#[test]
fn opencode_failures_are_judged_by_the_apis_status() {
    let o = opencode("401");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::AuthFailed)), "{o:?}");
    assert_eq!(o.message.as_deref(), Some("Invalid bearer token (HTTP 401)"));
    let o = opencode("500-retries");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::ApiUnavailable)), "{o:?}");
}

/// The long-wait trap: the retry status that waits an hour is a rate limit until that time, and
/// it is the line that ends the run (`settles`); a short retry is OpenCode's own business.
#[test]
fn opencode_sleeping_out_a_long_limit_is_rate_limited_until_it_would_retry() {
    let o = opencode("long-limit");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{o:?}");
    let (out, _, _) = fixture("opencode-1.18.33", "long-limit");
    let text = String::from_utf8(out).unwrap();
    let status = text.lines().find(|l| l.contains("nightshift_status")).expect("the plugin's line");
    let v: serde_json::Value = serde_json::from_str(status).unwrap();
    assert_eq!(o.resets_at.unwrap().timestamp(), v["status"]["next"].as_i64().unwrap() / 1000);
    assert!(driver(Agent::OpenCode).ends_run_at(status), "an hour's wait ends the run");
    let (short, _, _) = fixture("opencode-1.18.33", "short-limit-success");
    let short = String::from_utf8(short).unwrap();
    let retry = short.lines().find(|l| l.contains("nightshift_status")).expect("the short retry's line");
    assert!(!driver(Agent::OpenCode).ends_run_at(retry), "a 2 s retry is left to OpenCode");
    assert!(text.lines().filter(|l| !l.contains("nightshift_status")).all(|l| !driver(Agent::OpenCode).ends_run_at(l)));
}

#[test]
fn opencode_refused_calls_are_denials_of_a_completed_run() {
    let o = opencode("denied-tool");
    assert_eq!(o.status(), RunStatus::Completed, "{o:?}");
    assert_eq!(o.denials.iter().map(|d| (d.tool.as_str(), d.input.as_str())).collect::<Vec<_>>(), [("bash", "rm -rf build")]);
    assert_eq!(o.work, 0, "a refused call changed nothing");
    assert!(o.report.unwrap().contains("rate limit"), "a success that mentions a limit is still a success");
}

/// Mode, rules and Nightshift's own settings reach OpenCode in `OPENCODE_CONFIG_CONTENT`; the
/// command line carries only the mode's agent, the model, the effort and the prompt.
#[test]
fn opencode_modes_and_rules_are_its_permissions() {
    use nightshift_core::agents::opencode::config_content;
    let open = Guard::default();
    let dir = Path::new("/runs/r1");
    let call = |mode, guard| Call { prompt: "-do it", mode, model: Some("anthropic/claude-sonnet-4-5"), effort: Some(Effort::High), extra: &[], guard, max_budget_usd: None, run_dir: Some(dir), config: &[], resume: None, sandboxed: false, bridge: None };
    let args = driver(Agent::OpenCode).args(&call(Mode::Plan, &open));
    assert_eq!(args, ["run", "--format", "json", "--agent", "plan", "--model", "anthropic/claude-sonnet-4-5", "--variant", "high", "--", "-do it"]);
    assert!(driver(Agent::OpenCode).args(&call(Mode::Skip, &open)).contains(&"--auto".to_string()));
    assert!(!driver(Agent::OpenCode).args(&call(Mode::Auto, &open)).contains(&"--auto".to_string()));
    let perms = |mode, guard| serde_json::from_str::<serde_json::Value>(&config_content(&call(mode, guard))).unwrap();
    for (mode, edit, bash, outside) in [(Mode::Plan, "deny", "ask", "ask"), (Mode::Edit, "allow", "ask", "ask"), (Mode::Auto, "allow", "allow", "ask"), (Mode::Skip, "allow", "allow", "allow")] {
        let c = perms(mode, &open);
        assert_eq!((c["permission"]["edit"].as_str(), c["permission"]["bash"].as_str(), c["permission"]["external_directory"].as_str()), (Some(edit), Some(bash), Some(outside)), "{mode:?}");
        assert_eq!((c["share"].as_str(), c["autoupdate"].as_bool(), c["experimental"]["continue_loop_on_deny"].as_bool()), (Some("disabled"), Some(false), Some(true)));
        assert_eq!(c["plugin"][0], "file:///runs/r1/nightshift-opencode-plugin.js");
    }
    let guard = Guard { allow_tools: Some(vec!["read".into(), "bash(git status)".into(), "bash(npm test)".into(), "edit".into()]), allow_dirs: vec![], allow_hosts: vec![], deny_tools: vec!["webfetch".into(), "bash(git push)".into()], fail_on_denial: false, ask: None, approved: vec![] };
    let c = perms(Mode::Plan, &guard);
    let p = &c["permission"];
    assert_eq!((p["read"].as_str(), p["grep"].as_str(), p["webfetch"].as_str()), (Some("allow"), Some("deny"), Some("deny")), "{p}");
    assert_eq!(p["edit"], "deny", "plan mode keeps edits denied, allow.tools or not");
    assert_eq!(p["bash"], serde_json::json!({"*": "deny", "git status*": "allow", "npm test*": "allow", "git push*": "deny"}), "every command prefix allowed, none lost to the next");
    // A call approved for one run (`on_denial: ask`): allowed on top, `deny.tools` still wins.
    let approved = Guard { approved: vec!["bash(npm install)".into(), "bash(git push)".into()], ..guard.clone() };
    let c = perms(Mode::Plan, &approved);
    assert_eq!(c["permission"]["bash"], serde_json::json!({"*": "deny", "git status*": "allow", "npm test*": "allow", "npm install*": "allow", "git push*": "deny"}));
    // No run directory (a run on a host): no plugin to name.
    let remote = Call { run_dir: None, ..call(Mode::Auto, &open) };
    assert!(serde_json::from_str::<serde_json::Value>(&config_content(&remote)).unwrap()["plugin"].is_null());
}

#[test]
fn copilot_success_reports_its_answer_with_tokens_from_its_usage_file() {
    let o = copilot("success");
    assert_eq!((o.status(), o.report.as_deref()), (RunStatus::Completed, Some("## Pull requests\n\n3 open; #41 needs a rebase, the others look good.")), "{o:?}");
    let u = o.usage.clone().expect("usage from the usage file");
    assert_eq!((u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.model.as_deref()), (Some(120), Some(9), Some(20), Some(0), Some("gpt-5-mini")));
    assert_eq!((o.cost_usd, u.premium_requests), (None, Some(1.0)), "Copilot counts premium requests, not dollars");
    assert!(o.session_id.is_some() && o.from_final_event && o.denials.is_empty());
    // The same stream without its usage file (a run on a host): no tokens, its premium requests.
    let (out, err, exit) = fixture("copilot-1.0.102", "success");
    let o = classify_bytes(Agent::Copilot, &out, &err, exit);
    assert_eq!((o.status(), o.usage.map(|u| (u.input_tokens, u.premium_requests))), (RunStatus::Completed, Some((None, Some(1.0)))));
}

#[test]
fn copilot_failures_are_judged_by_its_own_words_and_statuses() {
    let o = copilot("bad-token");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::AuthFailed)), "{o:?}");
    assert_eq!(o.message.as_deref(), Some("Authentication token found but could not be validated. — Failed to fetch PAT user login (401): GitHub returned: Bad credentials"));
    assert!(!o.from_final_event, "no JSON at all: nothing of Copilot's own to trust after a crash");
    let o = copilot("500-retries");
    assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::ApiUnavailable)), "{o:?}");
    assert!(o.message.unwrap().contains("retried 5 times"));
}

/// The hang: `session.error rate_limit` is the line that ends the run (`settles`), judged
/// rate-limited until the reset its words name, counted from when it said them.
#[test]
fn copilot_reporting_a_limit_is_settled_and_rate_limited_until_its_reset() {
    for (name, after) in [("long-limit", chrono::Duration::hours(1)), ("short-limit", chrono::Duration::minutes(1))] {
        let o = copilot(name);
        assert_eq!((o.status(), o.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{name}: {o:?}");
        let (out, _, exit) = fixture("copilot-1.0.102", name);
        assert_eq!(exit, Some(143), "{name}: ended by Nightshift, not by Copilot");
        let text = String::from_utf8(out).unwrap();
        let error = text.lines().find(|l| l.contains("\"session.error\"")).expect("Copilot's rate_limit line");
        assert!(driver(Agent::Copilot).ends_run_at(error), "{name}: the line ends the run");
        let said_at: chrono::DateTime<Utc> = serde_json::from_str::<serde_json::Value>(error).unwrap()["timestamp"].as_str().unwrap().parse().unwrap();
        assert_eq!(o.resets_at, Some(said_at + after), "{name}: {o:?}");
        // Its own retries before giving up are no reason to end it.
        for retry in text.lines().filter(|l| l.contains("assistant.turn_retry")) {
            assert!(!driver(Agent::Copilot).ends_run_at(retry));
        }
    }
}

#[test]
fn copilot_refused_calls_are_denials_of_a_completed_run() {
    for (name, tool) in [("denied-tool", "bash"), ("denied-by-rule", "bash"), ("denied-write", "create")] {
        let o = copilot(name);
        assert_eq!(o.status(), RunStatus::Completed, "{name}: {o:?}");
        assert_eq!(o.denials.iter().map(|d| d.tool.as_str()).collect::<Vec<_>>(), [tool], "{name}");
        // A refused call changed nothing: a retry would not repeat work.
        assert_eq!(o.work, 0, "{name}");
        assert!(o.report.unwrap().contains("rate limit"), "a success that mentions a limit is still a success");
    }
    assert_eq!(copilot("denied-tool").denials[0].input, "touch made-by-shell");
    // A command that ran and a file written are work a retry must not do again.
    for name in ["ran-tool", "ran-write"] {
        let o = copilot(name);
        assert_eq!((o.status(), o.denials.len(), o.work), (RunStatus::Completed, 0, 1), "{name}: {o:?}");
        assert!(o.session_id.is_some(), "{name}: a retry needs the session to continue");
    }
}

/// What each mode and rule puts on Copilot's command line.
#[test]
fn copilot_modes_and_rules_are_its_permission_flags() {
    let open = Guard::default();
    let dir = Path::new("/runs/r1");
    fn call<'a>(mode: Mode, guard: &'a Guard, dir: &'a Path) -> Call<'a> {
        Call { prompt: "-do it", mode, model: Some("gpt-5-mini"), effort: Some(Effort::Detailed), extra: &[], guard, max_budget_usd: None, run_dir: Some(dir), config: &[], resume: None, sandboxed: false, bridge: None }
    }
    let args = driver(Agent::Copilot).args(&call(Mode::Plan, &open, dir));
    assert_eq!(
        args,
        ["--output-format", "json", "--no-auto-update", "--no-ask-user", "--no-color", "--plan", "--model", "gpt-5-mini", "--reasoning-effort", "high", "--usage-output-file", "/runs/r1/copilot-usage.json", "--prompt=-do it"]
    );
    let permissions = |mode, guard: &Guard| -> Vec<String> { driver(Agent::Copilot).args(&call(mode, guard, dir)).into_iter().filter(|a| a.starts_with("--allow") || a.starts_with("--deny")).collect() };
    assert_eq!(permissions(Mode::Plan, &open), Vec::<String>::new());
    assert_eq!(permissions(Mode::Edit, &open), ["--allow-tool=write"]);
    assert_eq!(permissions(Mode::Auto, &open), ["--allow-all-tools"]);
    assert_eq!(permissions(Mode::Skip, &open), ["--allow-all"]);
    let guard = Guard { allow_tools: Some(vec!["shell(git:*)".into(), "write".into()]), allow_dirs: vec![], allow_hosts: vec![], deny_tools: vec!["shell(git push)".into()], fail_on_denial: false, ask: None, approved: vec![] };
    assert_eq!(permissions(Mode::Skip, &guard), ["--allow-tool=shell(git:*)", "--allow-tool=write", "--deny-tool=shell(git push)"], "allow.tools instead of the mode's blanket");
    assert_eq!(permissions(Mode::Plan, &guard), ["--allow-tool=shell(git:*)", "--deny-tool=shell(git push)"], "plan keeps writes refused");
    // A call approved for one run (`on_denial: ask`): one more allow, whatever the mode.
    let approved = Guard { approved: vec!["shell(npm install)".into()], ..guard.clone() };
    assert_eq!(permissions(Mode::Plan, &approved), ["--allow-tool=shell(git:*)", "--allow-tool=shell(npm install)", "--deny-tool=shell(git push)"]);
    // A run on a host: no usage file to name there.
    let remote = Call { run_dir: None, ..call(Mode::Auto, &open, dir) };
    assert!(!driver(Agent::Copilot).args(&remote).iter().any(|a| a == "--usage-output-file"));
}
