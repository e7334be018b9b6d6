//! Claude Code: `claude -p <prompt> --verbose --output-format stream-json --permission-mode <m>`.
//!
//! The outcome comes from the structured stream first — the `result` event (`is_error`,
//! `subtype`, `result`, `total_cost_usd`, `session_id`, `api_error_status`), assistant messages
//! carrying an `error` (`authentication_failed`, `rate_limit`, `billing_error`…),
//! `rate_limit_event`s and `system/api_retry` events. A logged-out CLI can exit 0 with
//! `is_error: true`; that is a failed run, never a success. Text patterns are only a fallback for
//! a process that failed without saying why in the stream.

use super::patterns::{epoch_to_time, looks_like_auth_failure, looks_like_rate_limit, reset_time};
use super::rules::instead;
use super::tail::json_if;
use super::transcript::{not_json, result_text, tool_input};
use crate::words::first_line;
use super::driver::{AgentDriver, Outcome, RunOutput};
use super::transcript::{LogEntry, LogKind};
use super::tail::LogTail;
use super::auth::{AgentAuth, LoginFacts};
use super::driver::Controlled;
use super::call::Mode;
use super::usage_endpoint::{LoginToken, UsageEndpoint};
use crate::run::LimitWindow;
use crate::run::{Reason, RunStatus};
use crate::words::Agent;
use chrono::{DateTime, Utc};
use serde_json::Value;

pub struct Claude;

/// The MCP server Nightshift gives a run with `on_denial: ask`, and its prompt tool as Claude Code
/// names it.
pub const ASK_SERVER: &str = "nightshift_approvals";
pub const ASK_TOOL: &str = "mcp__nightshift_approvals__approval_prompt";

pub fn permission_mode(mode: Mode) -> &'static str {
    match mode {
        Mode::Plan => "plan",
        Mode::Edit => "acceptEdits",
        Mode::Auto => "auto",
        Mode::Skip => "bypassPermissions",
    }
}

impl AgentDriver for Claude {
    fn npm_package(&self) -> Option<&'static str> {
        Some("@anthropic-ai/claude-code@2.1.332")
    }

    fn agent(&self) -> Agent {
        Agent::Claude
    }

    fn controlled_args(&self) -> Controlled {
        &[
            ("-p", instead::PROMPT),
            ("--print", instead::PROMPT),
            ("--output-format", instead::OUTPUT),
            ("--input-format", instead::OUTPUT),
            ("--verbose", instead::OUTPUT),
            ("--permission-mode", instead::MODE),
            ("--dangerously-skip-permissions", "use `mode: skip`"),
            ("--model", instead::MODEL),
            ("--effort", instead::EFFORT),
            ("-r", instead::SESSION),
            ("--resume", instead::SESSION),
            ("-c", instead::SESSION),
            ("--continue", instead::SESSION),
            ("--session-id", instead::SESSION),
            ("--tools", "use `allow.tools`"),
            ("--allowedTools", "use `allow.tools`"),
            ("--allowed-tools", "use `allow.tools`"),
            ("--disallowedTools", "use `deny.tools`"),
            ("--disallowed-tools", "use `deny.tools`"),
        ]
    }

    fn controlled_config(&self) -> Controlled {
        &[("permissions", "use `mode:`, `allow:` and `deny:`"), ("env", "use `env:`"), ("apiKeyHelper", "the account's credential is Nightshift's to pass: use `account:`"), ("effortLevel", "use `effort:`")]
    }

    /// Claude Code's settings.json `autoCompactWindow` (tokens).
    fn auto_compact_setting(&self) -> Option<&'static str> {
        Some("autoCompactWindow")
    }

    /// Claude Code's settings.json `fastMode`.
    fn fast_mode_setting(&self) -> Option<&'static str> {
        Some("fastMode")
    }

    /// `config.<key>` as `--settings '{json}'`: any key of Claude Code's settings.json.
    fn config_args(&self, config: &[(String, Value)]) -> Vec<String> {
        if config.is_empty() {
            return Vec::new();
        }
        let settings: serde_json::Map<String, Value> = config.iter().cloned().collect();
        vec!["--settings".to_string(), Value::Object(settings).to_string()]
    }

    fn reports_cost(&self) -> bool {
        true
    }

    /// `--max-budget-usd`.
    fn caps_run_cost(&self) -> bool {
        true
    }

    /// Inside the sandbox: the vendor's API and sign-in hosts, and the folders Claude Code writes.
    fn sandbox_needs(&self) -> &'static crate::sandbox::Needs {
        &crate::sandbox::Needs {
            api_hosts: &["api.anthropic.com", "console.anthropic.com", "claude.ai", "platform.claude.com", "statsig.anthropic.com"],
            background_hosts: &[],
            home_state: &[".claude", ".claude.json"],
            state_vars: &[],
            config_files: &[("CLAUDE_CONFIG_DIR", ".claude", "settings.json")],
        }
    }

    fn auth(&self) -> Option<&'static AgentAuth> {
        Some(&AgentAuth {
            config_dir_var: "CLAUDE_CONFIG_DIR",
            secret_var: "CLAUDE_CODE_OAUTH_TOKEN",
            secret_name: "setup token",
            secret_how: "`claude setup-token`",
            login_file: ".credentials.json",
            login_command: "claude /login",
            inherited: &["CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
            more_dirs: &[],
        })
    }

    /// Its login says its expiry, scopes and identity ([`super::claude_login`]).
    fn login(&self, config_dir: &std::path::Path) -> LoginFacts {
        super::claude_login::read(config_dir)
    }

    /// Its login says whom it is signed in as; without `CLAUDE_CONFIG_DIR` it lives in `~/.claude`.
    fn own_config_dir(&self) -> Option<&'static str> {
        Some(".claude")
    }

    /// Anthropic's OAuth usage endpoint (see [`UsageEndpoint for Claude`](#impl-UsageEndpoint-for-Claude)).
    fn usage_endpoint(&self) -> Option<&'static dyn UsageEndpoint> {
        Some(&Claude)
    }

    fn program(&self) -> &'static str {
        "claude"
    }

    fn args(&self, call: &super::call::Call<'_>) -> Vec<String> {
        let g = call.guard;
        // With `allow.tools`, every tool the model has is pre-approved (below), so `auto` and
        // `skip` add nothing but danger: a rule narrower than a tool (`Bash(git *)`) would let the
        // rest of that tool run. `dontAsk` runs exactly what the rules approve and refuses the
        // rest without asking — and, unlike `bypassPermissions`, Claude Code starts it as root.
        // `on_denial: ask`: what the rules do not allow goes to Nightshift's prompt tool instead
        // of being refused — Claude Code's `default` mode asks, `dontAsk` and `auto` would not.
        let asks = g.ask.is_some() && call.bridge.is_some();
        let mode = match call.mode {
            Mode::Auto if asks => "default",
            Mode::Skip if asks && g.allow_tools.is_some() => "default",
            Mode::Auto | Mode::Skip if g.allow_tools.is_some() => "dontAsk",
            mode => permission_mode(mode),
        };
        let mut args = vec![
            "-p".to_string(),
            call.prompt.to_string(),
            "--verbose".into(),
            "--output-format".into(),
            "stream-json".into(),
            "--permission-mode".into(),
            mode.into(),
        ];
        // `allow.tools`: the tool set itself (a tool outside it does not exist for the model),
        // and its entries pre-approved; `deny.tools`: refused whatever the mode.
        if let Some(tools) = &g.allow_tools {
            args.extend(["--tools".to_string(), g.allowed_tool_names().join(",")]);
            for t in tools {
                args.extend(["--allowedTools".to_string(), t.clone()]);
            }
        }
        // What the user approved for this run: pre-approved too, on top of the mode.
        for t in &g.approved {
            args.extend(["--allowedTools".to_string(), t.clone()]);
        }
        for t in &g.deny_tools {
            args.extend(["--disallowedTools".to_string(), t.clone()]);
        }
        for d in &g.allow_dirs {
            args.extend(["--add-dir".to_string(), d.display().to_string()]);
        }
        // `budget.run`: Claude Code stops the run itself when its cost crosses the cap.
        if let Some(cap) = call.max_budget_usd {
            args.extend(["--max-budget-usd".to_string(), format!("{cap}")]);
        }
        if let Some(model) = call.model {
            args.extend(["--model".to_string(), model.to_string()]);
        }
        // `--effort low|medium|high|xhigh|max` (Claude Code 2.1.332's own words).
        if let Some(level) = call.effort.and_then(super::call::Effort::level) {
            args.extend(["--effort".to_string(), level.as_str().to_string()]);
        }
        // `on_denial: ask`: Nightshift's MCP server (the run's own socket, through the bridge)
        // answers the permission prompts; its one tool is allowed, whatever `allow.tools` says.
        if let (true, Some(bridge)) = (asks, call.bridge) {
            let config = serde_json::json!({ "mcpServers": { ASK_SERVER: { "type": "stdio", "command": bridge, "args": [crate::agents::BRIDGE_ARG, "ask"] } } });
            args.extend(["--mcp-config".to_string(), config.to_string(), "--permission-prompt-tool".into(), ASK_TOOL.into(), "--allowedTools".into(), ASK_TOOL.into()]);
        }
        // A retry that continues the earlier try's session (its transcript is in the config dir).
        if let Some(session) = call.resume {
            args.extend(["--resume".to_string(), session.to_string()]);
        }
        args.extend(call.extra.iter().cloned());
        args
    }

    fn resumes(&self) -> bool {
        true
    }

    fn asks_live(&self) -> bool {
        true
    }

    fn install_hint(&self) -> &'static str {
        "install Claude Code with `npm install -g @anthropic-ai/claude-code`, or set `[agents.claude] path = \"/path/to/claude\"` in nightshift.toml"
    }

    fn progress(&self, line: &str) -> Option<String> {
        if let Some(v) = json_if(line, "\"api_retry\"") {
            if v["type"] == "system" && v["subtype"] == "api_retry" {
                let why = match (v["error"].as_str(), v["error_status"].as_u64()) {
                    (Some(e), Some(s)) => format!("{e} (HTTP {s})"),
                    (Some(e), None) => e.to_string(),
                    (None, Some(s)) => format!("HTTP {s}"),
                    (None, None) => "API error".to_string(),
                };
                return Some(match (v["attempt"].as_u64(), v["max_retries"].as_u64()) {
                    (Some(a), Some(m)) if m > 0 => format!("API retry {a}/{m}: {why}"),
                    _ => format!("API error: {why}"),
                });
            }
        }
        if let Some(v) = json_if(line, "\"rate_limit_event\"") {
            let info = &v["rate_limit_info"];
            if info["status"] == "rejected" {
                let kind = info["rateLimitType"].as_str().unwrap_or("usage");
                return Some(format!("rate limited ({kind})"));
            }
        }
        if let Some(v) = json_if(line, "\"init\"") {
            if v["type"] == "system" && v["subtype"] == "init" {
                let model = v["model"].as_str().unwrap_or("?");
                return Some(format!("session started (model {model})"));
            }
        }
        None
    }

    fn classify(&self, out: &RunOutput<'_>) -> Outcome {
        let tail = LogTail::read_until(&out.stdout_path(), |lines| lines.iter().any(|l| is_result(l)));
        classify_stream_in(&tail.lines, out.exit_code, &out.stderr_tail(), out.now, out.sandboxed())
    }

    fn transcript(&self, line: &str) -> Vec<LogEntry> {
        let Some(v) = json_if(line, "\"type\"") else { return not_json(line) };
        let entry = |kind, text: String| vec![LogEntry::new(kind, text)];
        match v["type"].as_str().unwrap_or("") {
            "system" if v["subtype"] == "init" => entry(
                LogKind::Info,
                format!("Session started · model {} · in {}", v["model"].as_str().unwrap_or("?"), v["cwd"].as_str().unwrap_or("?")),
            ),
            "system" if v["subtype"] == "api_retry" => self.progress(line).map(|m| entry(LogKind::Retry, m)).unwrap_or_default(),
            "rate_limit_event" => self.progress(line).map(|m| entry(LogKind::Retry, m)).unwrap_or_default(),
            "assistant" | "user" => {
                let mut out = Vec::new();
                for block in v["message"]["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str().unwrap_or("") {
                        "text" => out.push(LogEntry::new(LogKind::Text, block["text"].as_str().unwrap_or(""))),
                        "tool_use" => out.push(LogEntry::new(
                            LogKind::Tool,
                            format!("{}: {}", block["name"].as_str().unwrap_or("tool"), tool_input(&block["input"])).trim_end_matches(": "),
                        )),
                        "tool_result" => {
                            let kind = if block["is_error"] == true { LogKind::Error } else { LogKind::ToolResult };
                            out.push(LogEntry::new(kind, result_text(&block["content"])));
                        }
                        _ => {}
                    }
                }
                if let Some(e) = v["error"].as_str() {
                    out.push(LogEntry::new(LogKind::Error, format!("API error: {e}")));
                }
                out
            }
            "result" => {
                let turns = v["num_turns"].as_u64().map(|n| format!(" · {n} turn{}", if n == 1 { "" } else { "s" })).unwrap_or_default();
                let cost = v["total_cost_usd"].as_f64().map(|c| format!(" · ${c:.4}")).unwrap_or_default();
                if v["is_error"] == true {
                    let why = v["result"].as_str().or(v["subtype"].as_str()).unwrap_or("error");
                    entry(LogKind::Error, format!("Finished with an error{turns}: {why}"))
                } else {
                    entry(LogKind::Result, format!("Finished{turns}{cost}"))
                }
            }
            _ => Vec::new(),
        }
    }
}

fn is_result(line: &str) -> bool {
    json_if(line, "\"result\"").is_some_and(|v| v["type"] == "result")
}

/// What the stream says, gathered from its tail.
#[derive(Default)]
struct Facts {
    result: Option<Value>,
    /// The last assistant `error` code, e.g. `authentication_failed`.
    assistant_error: Option<String>,
    assistant_text: Option<String>,
    rate_limit_reset: Option<DateTime<Utc>>,
    rate_limit_rejected: bool,
    last_retry_error: Option<String>,
    session_id: Option<String>,
    /// Tool calls the model made (id → tool and input), to name a call that came back as
    /// "No such tool available" (a tool `allow.tools` left out).
    tool_calls: std::collections::HashMap<String, (String, String)>,
    /// Such calls: tools the routine did not make available.
    unavailable: Vec<crate::run::Denial>,
    /// Calls whose result says the machine refused them (a read-only file system, a hidden
    /// folder): in a sandboxed run, what the sandbox refused.
    refused_by_machine: Vec<crate::run::Denial>,
    /// The last `rate_limit_event`'s `unifiedWindows`: window → (utilization 0–1, resetsAt, status).
    windows: Vec<(String, f64, Option<DateTime<Utc>>, String)>,
    /// Calls of tools that change things (commands, edits, MCP calls) that ran: their results
    /// came back without an error.
    work: u32,
}

/// Claude Code's tools that change something when they run (what a retry must not repeat
/// blindly); MCP tools (`mcp__…`) are counted too — Nightshift cannot know what they do.
const CHANGING_TOOLS: &[&str] = &["Bash", "Edit", "MultiEdit", "Write", "NotebookEdit", "Task"];

fn changes_things(tool: &str) -> bool {
    CHANGING_TOOLS.contains(&tool) || tool.starts_with("mcp__")
}

fn gather(lines: &[String]) -> Facts {
    let mut f = Facts::default();
    for line in lines {
        let Some(v) = json_if(line, "\"type\"") else { continue };
        if let Some(s) = v["session_id"].as_str() {
            f.session_id = Some(s.to_string());
        }
        match v["type"].as_str() {
            Some("result") => f.result = Some(v),
            Some("assistant") => {
                if let Some(e) = v["error"].as_str() {
                    f.assistant_error = Some(e.to_string());
                }
                // A usage-limit rejection carries its window and reset time on the error message.
                let info = &v["api_error_params"]["rate_limit_info"];
                if info["status"] == "rejected" {
                    f.rate_limit_rejected = true;
                    if let Some(t) = info["resetsAt"].as_i64().and_then(epoch_to_time) {
                        f.rate_limit_reset = Some(t);
                    }
                }
                let text: Vec<&str> = v["message"]["content"]
                    .as_array()
                    .map(|c| c.iter().filter_map(|b| (b["type"] == "text").then(|| b["text"].as_str()).flatten()).collect())
                    .unwrap_or_default();
                if !text.is_empty() {
                    f.assistant_text = Some(text.join("\n"));
                }
                for call in v["message"]["content"].as_array().into_iter().flatten().filter(|b| b["type"] == "tool_use") {
                    if let (Some(id), Some(name)) = (call["id"].as_str(), call["name"].as_str()) {
                        f.tool_calls.insert(id.to_string(), (name.to_string(), tool_input_words(&call["input"])));
                    }
                }
            }
            // A call to a tool the model does not have comes back as an error result.
            Some("user") => {
                let ran = |r: &&Value| r["type"] == "tool_result" && r["is_error"] != true;
                f.work += v["message"]["content"].as_array().into_iter().flatten().filter(ran).filter(|r| r["tool_use_id"].as_str().and_then(|id| f.tool_calls.get(id)).is_some_and(|(tool, _)| changes_things(tool))).count() as u32;
                for r in v["message"]["content"].as_array().into_iter().flatten().filter(|b| b["type"] == "tool_result" && b["is_error"] == true) {
                    let said = match &r["content"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    if crate::sandbox::refused_by_machine(&said) {
                        if let Some((tool, input)) = r["tool_use_id"].as_str().and_then(|id| f.tool_calls.get(id).cloned()) {
                            f.refused_by_machine.push(crate::run::Denial { tool, input });
                        }
                    }
                    if said.contains("No such tool available") {
                        let (tool, input) = r["tool_use_id"].as_str().and_then(|id| f.tool_calls.get(id).cloned()).unwrap_or_else(|| (said.trim_start_matches("<tool_use_error>").split(':').nth(1).unwrap_or("?").trim().trim_end_matches("</tool_use_error>").to_string(), String::new()));
                        f.unavailable.push(crate::run::Denial { tool, input });
                    }
                }
            }
            Some("rate_limit_event") => {
                let info = &v["rate_limit_info"];
                // A subscription's windows ride on every answer: the latest report wins.
                if let Some(windows) = info["unifiedWindows"].as_object().filter(|w| !w.is_empty()) {
                    f.windows = windows
                        .iter()
                        .filter_map(|(name, w)| {
                            let used = w["utilization"].as_f64()?;
                            Some((name.clone(), used, w["resetsAt"].as_i64().and_then(epoch_to_time), w["status"].as_str().unwrap_or("allowed").to_string()))
                        })
                        .collect();
                }
                if info["status"] == "rejected" {
                    f.rate_limit_rejected = true;
                    if let Some(t) = info["resetsAt"].as_i64().and_then(epoch_to_time) {
                        f.rate_limit_reset = Some(t);
                    }
                }
            }
            Some("system") if v["subtype"] == "api_retry" => {
                f.last_retry_error = v["error"].as_str().map(str::to_string);
            }
            _ => {}
        }
    }
    f
}

/// Classify a Claude stream (its tail lines), the exit code and stderr.
pub fn classify_stream(lines: &[String], exit_code: Option<i32>, stderr: &LogTail, now: DateTime<Utc>) -> Outcome {
    classify_stream_in(lines, exit_code, stderr, now, false)
}

/// [`classify_stream`] for a run that was `sandboxed` or not: in the sandbox, a tool call the
/// machine refused (a read-only file system, a hidden folder) is one of the run's denials.
pub fn classify_stream_in(lines: &[String], exit_code: Option<i32>, stderr: &LogTail, now: DateTime<Utc>, sandboxed: bool) -> Outcome {
    let facts = gather(lines);
    let mut outcome = match &facts.result {
        Some(result) => from_result(result, &facts, now),
        None => without_result(&facts, lines, exit_code, stderr, now),
    };
    // A success event followed by a known non-zero exit is not a success (the CLI died after
    // writing it, or a hook failed); an unknown exit (the process vanished with the engine)
    // leaves the event's word standing.
    if let (RunStatus::Completed, Some(code)) = (outcome.status(), exit_code.filter(|c| *c != 0)) {
        let mut failed = Outcome::failed(Reason::ExitNonzero, format!("Claude Code reported success but exited with code {code}"));
        failed.cost_usd = outcome.cost_usd;
        failed.usage = outcome.usage.take();
        failed.from_final_event = true;
        outcome = Outcome { session_id: outcome.session_id.take(), ..failed };
    }
    if outcome.session_id.is_none() {
        outcome.session_id = facts.session_id.clone();
    }
    outcome.work = facts.work;
    // What the run was refused: the result's `permission_denials`, and calls to tools it did not have.
    let denied = facts.result.as_ref().and_then(|r| r["permission_denials"].as_array().cloned()).unwrap_or_default();
    outcome.denials = denied
        .iter()
        .map(|d| crate::run::Denial { tool: d["tool_name"].as_str().unwrap_or("?").to_string(), input: tool_input_words(&d["tool_input"]) })
        .chain(facts.unavailable.iter().cloned())
        .chain(facts.refused_by_machine.iter().filter(|_| sandboxed).cloned())
        .collect();
    if outcome.reason == Some(Reason::RateLimited) && outcome.resets_at.is_none() {
        outcome.resets_at = facts.rate_limit_reset.or_else(|| outcome.message.as_deref().and_then(|m| reset_time(m, now)));
    }
    outcome.windows = facts
        .windows
        .iter()
        .map(|(window, used, resets_at, status)| crate::run::LimitWindow {
            window: window.clone(),
            used_percent: (used * 100.0).clamp(0.0, 100.0),
            resets_at: *resets_at,
            status: status.clone(),
            seen_at: now,
            run_id: None,
        })
        .collect();
    outcome
}

/// A tool call's input as a person reads it: a Bash command or a file path as itself, anything
/// else as compact JSON.
fn tool_input_words(input: &Value) -> String {
    ["command", "file_path", "path", "pattern", "url"]
        .iter()
        .find_map(|k| input[*k].as_str().map(str::to_string))
        .unwrap_or_else(|| if input.is_null() { String::new() } else { input.to_string() })
}

fn from_result(result: &Value, facts: &Facts, now: DateTime<Utc>) -> Outcome {
    let text = result["result"].as_str().unwrap_or("").to_string();
    let is_error = result["is_error"].as_bool().unwrap_or(false);
    let subtype = result["subtype"].as_str().unwrap_or("");
    let mut outcome = if !is_error && subtype == "success" {
        Outcome::completed((!text.trim().is_empty()).then(|| text.clone()))
    } else {
        let errors: Vec<String> = result["errors"]
            .as_array()
            .map(|e| e.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let message = if !text.trim().is_empty() {
            first_line(&text, 300)
        } else if !errors.is_empty() {
            first_line(&errors.join("; "), 300)
        } else {
            match subtype {
                "error_max_turns" => "stopped: the maximum number of turns was reached".into(),
                "error_during_execution" => "Claude Code reported an error during execution".into(),
                other => format!("Claude Code ended with an error ({other})"),
            }
        };
        // `--max-budget-usd` (`budget.run`): the CLI stopped the run at its cap.
        let budget_spent = subtype == "error_max_budget_usd" || result["terminal_reason"] == "budget_exhausted";
        let status_code = result["api_error_status"].as_u64();
        let reason = budget_spent.then_some(Reason::Budget).or_else(|| reason_from(facts.assistant_error.as_deref(), status_code, facts.rate_limit_rejected)
            .or_else(|| {
                let all = format!("{text} {}", errors.join(" "));
                if looks_like_rate_limit(&all) {
                    Some(Reason::RateLimited)
                } else if looks_like_auth_failure(&all) {
                    Some(Reason::AuthFailed)
                } else {
                    None
                }
            }))
            .unwrap_or(Reason::AgentError);
        let message = match budget_spent {
            true => format!("spent {} — {message} (`budget.run`)", crate::budget::dollars(result["total_cost_usd"].as_f64().unwrap_or(0.0))),
            false => message,
        };
        let mut o = Outcome::failed(reason, message);
        if reason == Reason::RateLimited {
            o.resets_at = facts.rate_limit_reset.or_else(|| reset_time(&text, now));
        }
        o
    };
    outcome.from_final_event = true;
    outcome.cost_usd = result["total_cost_usd"].as_f64();
    outcome.usage = usage(result);
    outcome.session_id = result["session_id"].as_str().map(str::to_string);
    outcome
}

/// Tokens and model from the `result` event (`usage`, `modelUsage`).
fn usage(result: &Value) -> Option<crate::run::Usage> {
    let u = &result["usage"];
    crate::run::Usage {
        input_tokens: u["input_tokens"].as_u64(),
        output_tokens: u["output_tokens"].as_u64(),
        cache_read_tokens: u["cache_read_input_tokens"].as_u64(),
        cache_write_tokens: u["cache_creation_input_tokens"].as_u64(),
        model: crate::run::Usage::models(&result["modelUsage"], "outputTokens"),
        ..crate::run::Usage::default()
    }
    .or_none()
}

/// The structured signals, strongest first. A rate limit comes before an authentication error
/// when a run shows both (as agents-cli judges): the account fails over, or the run waits for the
/// reset, instead of the account being marked revoked.
fn reason_from(assistant_error: Option<&str>, status: Option<u64>, rate_rejected: bool) -> Option<Reason> {
    if rate_rejected || status == Some(429) || matches!(assistant_error, Some("rate_limit" | "rate_limited")) {
        return Some(Reason::RateLimited);
    }
    match assistant_error {
        Some("authentication_failed" | "oauth_org_not_allowed" | "invalid_api_key" | "token_revoked") => {
            return Some(Reason::AuthFailed)
        }
        // 529 overloaded, 5xx, and a connection refused or dropped (`api_error:
        // "connection_failed"`) all arrive as `server_error`, after the CLI's own retries.
        Some("server_error") => return Some(Reason::ApiUnavailable),
        _ => {}
    }
    match status {
        Some(401 | 403) => Some(Reason::AuthFailed),
        Some(500..=599) => Some(Reason::ApiUnavailable),
        _ => None,
    }
}

fn without_result(facts: &Facts, lines: &[String], exit_code: Option<i32>, stderr: &LogTail, now: DateTime<Utc>) -> Outcome {
    let stderr_text = stderr.lines.join("\n");
    if let Some(reason) = reason_from(facts.assistant_error.as_deref(), None, facts.rate_limit_rejected) {
        let message = facts.assistant_text.clone().unwrap_or_else(|| facts.assistant_error.clone().unwrap_or_default());
        let mut o = Outcome::failed(reason, first_line(&message, 300));
        o.resets_at = facts.rate_limit_reset;
        return o;
    }
    // No structured signal: fall back to the text the process printed.
    let recent = format!("{}\n{}", lines.iter().rev().take(20).cloned().collect::<Vec<_>>().join("\n"), stderr_text);
    let detail = stderr.last_line().map(|l| first_line(l, 300));
    // A limit first, then authentication (as agents-cli judges a failure that shows both).
    if exit_code != Some(0) && looks_like_rate_limit(&recent) {
        let mut o = Outcome::failed(Reason::RateLimited, detail.unwrap_or_else(|| "rate limited".into()));
        o.resets_at = reset_time(&recent, now);
        return o;
    }
    if exit_code != Some(0) && looks_like_auth_failure(&recent) {
        return Outcome::failed(Reason::AuthFailed, detail.unwrap_or_else(|| "Claude Code is not logged in".into()));
    }
    let message = match (exit_code, detail) {
        (Some(0), _) => "Claude Code exited without reporting a result (the stream ended early)".to_string(),
        (Some(c), Some(d)) if !d.is_empty() => format!("Claude Code exited with code {c}: {d}"),
        (Some(c), _) => format!("Claude Code exited with code {c} without reporting a result"),
        (None, _) => "Claude Code ended without reporting a result (the process was interrupted)".to_string(),
    };
    let reason = if facts.last_retry_error.is_some() || exit_code == Some(0) { Reason::AgentError } else { Reason::ExitNonzero };
    let mut o = Outcome::failed(reason, message);
    if let Some(retry) = &facts.last_retry_error {
        o.message = Some(format!("{} (last API error: {retry})", o.message.unwrap_or_default()));
    }
    o
}

/// Anthropic's OAuth usage endpoint (`GET /api/oauth/usage` with `anthropic-beta:
/// oauth-2025-04-20`, the request CodexBar makes), asked with the access token of the account's
/// Claude login, else its stored setup token.
impl UsageEndpoint for Claude {
    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-beta", "oauth-2025-04-20")]
    }

    fn login_token(&self, login: &Value, now: DateTime<Utc>) -> Option<LoginToken> {
        let oauth = &login["claudeAiOauth"];
        let token = oauth["accessToken"].as_str().filter(|t| !t.is_empty())?;
        let expired = oauth["expiresAt"].as_i64().and_then(DateTime::from_timestamp_millis).is_some_and(|t| t <= now);
        // Anthropic's usage endpoint wants `user:profile` (a `claude setup-token` token lacks it).
        let reads_usage = oauth["scopes"].as_array().is_some_and(|s| s.iter().any(|s| s == "user:profile"));
        Some(LoginToken { token: token.to_string(), expired, reads_usage })
    }

    /// `five_hour`, `seven_day` and each model's weekly one (`seven_day_opus`, …) that is not
    /// null; `utilization` is a percent, `resets_at` a time.
    fn windows(&self, answer: &Value, now: DateTime<Utc>) -> Vec<LimitWindow> {
        let Some(all) = answer.as_object() else { return Vec::new() };
        let mut out: Vec<LimitWindow> = all
            .iter()
            .filter(|(k, _)| *k == "five_hour" || k.starts_with("seven_day"))
            .filter_map(|(k, w)| {
                let used = w["utilization"].as_f64()?.clamp(0.0, 100.0);
                Some(LimitWindow {
                    window: k.clone(),
                    used_percent: used,
                    resets_at: w["resets_at"].as_str().and_then(crate::words::parse_time),
                    // The endpoint gives no status word: the share says it.
                    status: LimitWindow::status_for_share(used).into(),
                    seen_at: now,
                    run_id: None,
                })
            })
            .collect();
        out.sort_by_key(|w| (w.window != "five_hour", w.window != "seven_day", w.window.clone()));
        out
    }

    fn refusal_hint(&self, status: u16) -> &'static str {
        match status {
            401 => " — the sign-in was refused; sign in again (`claude /login` in the account's config dir)",
            403 => " — the token may not read usage (a `claude setup-token` token cannot: it lacks the user:profile scope; sign in with `claude /login` in the account's config dir)",
            _ => "",
        }
    }

    fn no_token(&self, email: &str, config_dir: &std::path::Path, expired: bool) -> String {
        if expired {
            format!("the Claude login in {} has expired (Claude Code refreshes it on its next run; Nightshift refreshes nothing)", config_dir.display())
        } else {
            format!("{email} has no sign-in to ask with: sign in with `claude /login` in {}", config_dir.display())
        }
    }
}

#[cfg(test)]
mod usage_endpoint_tests {
    use super::*;

    #[test]
    fn the_endpoints_windows_are_read_as_percent_with_their_resets() {
        let v = serde_json::json!({
            "five_hour": {"utilization": 61.0, "resets_at": "2026-12-03T23:59:59.571404+00:00"},
            "seven_day": {"utilization": 22.0, "resets_at": "2026-12-08T09:59:59.571468+00:00"},
            "seven_day_opus": null,
            "seven_day_sonnet": {"utilization": 101.0, "resets_at": null},
            "extra_usage": {"is_enabled": false, "utilization": null}
        });
        let got: Vec<(String, f64, Option<String>, String)> = Claude.windows(&v, Utc::now()).into_iter().map(|w| (w.window, w.used_percent, w.resets_at.map(|t| crate::words::fmt_time(&t)), w.status)).collect();
        assert_eq!(
            got,
            [
                ("five_hour".to_string(), 61.0, Some("2026-12-03T23:59:59.571Z".to_string()), "allowed".to_string()),
                ("seven_day".to_string(), 22.0, Some("2026-12-08T09:59:59.571Z".to_string()), "allowed".to_string()),
                ("seven_day_sonnet".to_string(), 100.0, None, "rejected".to_string()),
            ]
        );
        assert!(Claude.windows(&serde_json::json!({"error": "x"}), Utc::now()).is_empty());
    }

    #[test]
    fn the_login_token_says_when_it_has_expired() {
        let now = Utc::now();
        let login = |ms: i64| serde_json::json!({"claudeAiOauth": {"accessToken": "sk-ant-oat01-x", "expiresAt": ms}});
        let fresh = Claude.login_token(&login(now.timestamp_millis() + 60_000), now).unwrap();
        assert!(!fresh.expired && fresh.token == "sk-ant-oat01-x" && !fresh.reads_usage);
        let profile = serde_json::json!({"claudeAiOauth": {"accessToken": "sk-ant-oat01-x", "scopes": ["user:inference", "user:profile"]}});
        assert!(Claude.login_token(&profile, now).unwrap().reads_usage);
        assert!(Claude.login_token(&login(now.timestamp_millis() - 1), now).unwrap().expired);
        assert!(Claude.login_token(&serde_json::json!({"claudeAiOauth": {"accessToken": ""}}), now).is_none());
    }
}

#[cfg(test)]
mod work_tests {
    use super::*;

    /// What a try changed is counted from the stream: a command, an edit and an MCP call that ran
    /// count; a read, and a command refused (its result an error), do not.
    #[test]
    fn the_tool_calls_that_change_things_and_ran_are_counted() {
        let call = |id: &str, name: &str| serde_json::json!({"type": "assistant", "session_id": "s-9", "message": {"content": [{"type": "tool_use", "id": id, "name": name, "input": {}}]}}).to_string();
        let result = |id: &str, error: bool| serde_json::json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": id, "is_error": error, "content": "ok"}]}}).to_string();
        let lines = [
            call("1", "Read"), result("1", false),
            call("2", "Bash"), result("2", false),
            call("3", "Edit"), result("3", false),
            call("4", "mcp__github__create_comment"), result("4", false),
            call("5", "Bash"), result("5", true),
        ];
        let out = classify_stream(&lines, Some(1), &LogTail::default(), Utc::now());
        assert_eq!((out.work, out.session_id.as_deref()), (3, Some("s-9")));
    }
}
