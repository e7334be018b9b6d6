//! Codex: `codex exec --json --skip-git-repo-check --color never --sandbox <s> [--model m] <prompt>`.
//!
//! Modes (checked against the pinned real CLI by the tests): plan → `--sandbox read-only`; edit and
//! auto → `--sandbox workspace-write` (Codex 0.171 dropped `--full-auto`; in `exec` nothing can be
//! approved interactively, so the sandbox is the whole policy); skip →
//! `--dangerously-bypass-approvals-and-sandbox`. Inside Nightshift's machine sandbox, where
//! Codex's own cannot be built, `--sandbox danger-full-access` and the machine's keeps the mode. `--color never` keeps ANSI codes out of stderr;
//! `--disable shell_snapshot` keeps the injected key out of files Codex writes.
//!
//! JSONL events: `thread.started {thread_id}`, `turn.started`, `item.started|updated|completed
//! {item: {type: agent_message|reasoning|command_execution|…}}`, `turn.completed {usage}`,
//! `turn.failed {error: {message}}`, `error {message}`. A run completed when its last turn
//! completed and the process exited 0; the report is the last `agent_message`.

use super::patterns::failure_from_text;
use super::rules::instead;
use super::tail::json_if;
use super::transcript::not_json;
use crate::words::first_line;
use super::driver::{AgentDriver, Outcome, RunOutput};
use super::transcript::{LogEntry, LogKind};
use super::tail::LogTail;
use super::auth::AgentAuth;
use super::driver::Controlled;
use super::call::Mode;
use crate::words::Agent;

pub struct Codex;

impl AgentDriver for Codex {
    fn npm_package(&self) -> Option<&'static str> {
        Some("@openai/codex@0.171.0")
    }

    fn agent(&self) -> Agent {
        Agent::Codex
    }

    fn controlled_args(&self) -> Controlled {
        &[
            ("exec", "Nightshift runs `codex exec` itself"),
            ("resume", instead::SESSION),
            ("--ephemeral", "Nightshift keeps a try's thread so a retry can continue it"),
            ("--json", instead::OUTPUT),
            ("--color", instead::OUTPUT),
            ("-s", instead::MODE),
            ("--sandbox", instead::MODE),
            ("--full-auto", instead::MODE),
            ("--dangerously-bypass-approvals-and-sandbox", "use `mode: skip`"),
            ("-m", instead::MODEL),
            ("--model", instead::MODEL),
        ]
    }

    /// Codex takes settings as `-c key=value`: its reasoning effort is `effort:`'s.
    fn refused_arg(&self, arg: &str) -> Option<String> {
        arg.trim_start_matches("-c").trim_start_matches("--config").trim_start_matches('=').trim().starts_with("model_reasoning_effort").then(|| format!("`{arg}` sets Codex's reasoning effort: use `effort:`"))
    }

    fn no_tool_rules(&self) -> Option<&'static str> {
        Some("Codex CLI has no tool list — its sandbox is its limit (`mode: plan` runs it read-only)")
    }

    fn controlled_config(&self) -> Controlled {
        &[
            ("model_reasoning_effort", "use `effort:`"),
            ("approval_policy", "use `mode:`"),
            ("sandbox_mode", "use `mode:`"),
            ("sandbox_workspace_write", "use `mode:` and `allow.dirs`"),
            ("model_provider", "the account's credential is Nightshift's to pass: use `account:`"),
        ]
    }

    /// `config.<key>` as `-c key=value`: any key of its config.toml.
    /// Codex's `model_auto_compact_token_limit` (config.toml), as `-c`.
    fn auto_compact_setting(&self) -> Option<&'static str> {
        Some("model_auto_compact_token_limit")
    }

    fn config_args(&self, config: &[(String, serde_json::Value)]) -> Vec<String> {
        config.iter().flat_map(|(k, v)| ["-c".to_string(), format!("{k}={}", toml_value(v))]).collect()
    }

    /// Inside the sandbox: the vendor's API and sign-in hosts, and the folders Codex writes.
    fn sandbox_needs(&self) -> &'static crate::sandbox::Needs {
        &crate::sandbox::Needs {
            api_hosts: &["api.openai.com", "chatgpt.com", "auth.openai.com"],
            background_hosts: &["github.com", "api.github.com", "ab.chatgpt.com"],
            home_state: &[".codex"],
            state_vars: &[],
            config_files: &[("CODEX_HOME", ".codex", "config.toml")],
        }
    }

    fn auth(&self) -> Option<&'static AgentAuth> {
        Some(&AgentAuth {
            config_dir_var: "CODEX_HOME",
            secret_var: "OPENAI_API_KEY",
            secret_name: "OpenAI API key",
            secret_how: "https://platform.openai.com/api-keys",
            login_file: "auth.json",
            login_command: "codex login",
            inherited: &["OPENAI_API_KEY"],
            more_dirs: &[],
        })
    }

    fn program(&self) -> &'static str {
        "codex"
    }

    fn args(&self, call: &super::call::Call<'_>) -> Vec<String> {
        let (prompt, mode, model) = (call.prompt, call.mode, call.model);
        // `--disable shell_snapshot`: Codex would otherwise save the shell's environment — the
        // account's injected OPENAI_API_KEY included — under CODEX_HOME/shell_snapshots.
        let mut args = vec![
            "exec".to_string(),
            "--json".into(),
            "--skip-git-repo-check".into(),
            "--color".into(),
            "never".into(),
            "--disable".into(),
            "shell_snapshot".into(),
        ];
        match mode {
            // Codex's own sandbox is bubblewrap, which cannot be built inside Nightshift's (as root
            // it may not map users there: every command fails "bwrap: setting up uid map", and its
            // Landlock fallback refuses to restrict files without bubblewrap). In there, the
            // machine's sandbox keeps the mode: the working folder writable in edit and auto,
            // read-only in plan, the network only through Nightshift's proxy.
            Mode::Plan | Mode::Edit | Mode::Auto if call.sandboxed => args.extend(["--sandbox".into(), "danger-full-access".into()]),
            Mode::Plan => args.extend(["--sandbox".into(), "read-only".into()]),
            Mode::Edit | Mode::Auto => args.extend(["--sandbox".into(), "workspace-write".into()]),
            Mode::Skip => args.push("--dangerously-bypass-approvals-and-sandbox".into()),
        }
        if let Some(model) = model {
            args.extend(["--model".to_string(), model.to_string()]);
        }
        // Codex's `model_reasoning_effort` (0.171 takes low, medium, high, xhigh and max).
        if let Some(level) = call.effort.and_then(super::call::Effort::level) {
            args.extend(["-c".to_string(), format!("model_reasoning_effort=\"{}\"", level.as_str())]);
        }
        // `allow.dirs`: writable beside the working folder (tool rules are refused by the loader:
        // Codex has none).
        for d in &call.guard.allow_dirs {
            args.extend(["--add-dir".to_string(), d.display().to_string()]);
        }
        // The routine's own arguments go before the prompt, a positional argument.
        args.extend(call.extra.iter().cloned());
        // A retry that continues the earlier try's thread (its rollout is in CODEX_HOME):
        // `exec <options> resume <thread> <prompt>` — `exec`'s options before the subcommand,
        // where `resume` takes them too (checked against the pinned CLI).
        if let Some(thread) = call.resume {
            args.extend(["resume".to_string(), thread.to_string()]);
        }
        args.push(prompt.to_string());
        args
    }

    fn resumes(&self) -> bool {
        true
    }

    fn install_hint(&self) -> &'static str {
        "install Codex with `npm install -g @openai/codex`, or set `[agents.codex] path = \"/path/to/codex\"` in nightshift.toml"
    }

    fn progress(&self, line: &str) -> Option<String> {
        let v = json_if(line, "\"type\"")?;
        match v["type"].as_str()? {
            "thread.started" => Some("session started".into()),
            "error" => v["message"].as_str().map(|m| format!("error: {}", first_line(m, 160))),
            "item.started" if v["item"]["type"] == "command_execution" => {
                v["item"]["command"].as_str().map(|c| format!("running: {}", first_line(c, 120)))
            }
            _ => None,
        }
    }

    fn transcript(&self, line: &str) -> Vec<LogEntry> {
        let Some(v) = json_if(line, "\"type\"") else { return not_json(line) };
        let item = &v["item"];
        let entry = |kind, text: String| vec![LogEntry::new(kind, text)];
        match (v["type"].as_str().unwrap_or(""), item["type"].as_str().unwrap_or("")) {
            ("thread.started", _) => entry(LogKind::Info, format!("Session started · thread {}", v["thread_id"].as_str().unwrap_or("?"))),
            ("item.completed", "agent_message") => entry(LogKind::Text, item["text"].as_str().unwrap_or("").to_string()),
            ("item.completed", "reasoning") => entry(LogKind::Info, item["text"].as_str().unwrap_or("").to_string()),
            ("item.started", "command_execution") => entry(LogKind::Tool, format!("$ {}", item["command"].as_str().unwrap_or(""))),
            ("item.completed", "command_execution") => {
                let code = item["exit_code"].as_i64().map(|c| format!("exit {c}")).unwrap_or_default();
                let output = item["aggregated_output"].as_str().unwrap_or("").trim_end();
                let kind = if item["exit_code"].as_i64().is_some_and(|c| c != 0) { LogKind::Error } else { LogKind::ToolResult };
                entry(kind, if output.is_empty() { code } else { format!("{output}\n({code})") })
            }
            ("item.completed", "error") | ("error", _) => {
                entry(LogKind::Error, item["message"].as_str().or(v["message"].as_str()).unwrap_or("error").to_string())
            }
            ("turn.failed", _) => entry(LogKind::Error, format!("Turn failed: {}", v["error"]["message"].as_str().unwrap_or("error"))),
            ("turn.completed", _) => {
                let u = &v["usage"];
                entry(LogKind::Result, format!("Finished · {} tokens in, {} out", u["input_tokens"].as_u64().unwrap_or(0), u["output_tokens"].as_u64().unwrap_or(0)))
            }
            _ => Vec::new(),
        }
    }

    fn classify(&self, out: &RunOutput<'_>) -> Outcome {
        let tail = LogTail::read_until(&out.stdout_path(), |lines| {
            lines.iter().any(|l| l.contains("\"turn.completed\"") || l.contains("\"turn.failed\""))
        });
        let mut session_id = None;
        let mut report = None;
        // The last turn's end decides; `error` events before it are notices (a retry
        // "Reconnecting... 2/5", a model-metadata warning) that a completed turn overrides.
        let mut completed = false;
        let mut turn_failure: Option<String> = None;
        let mut last_error: Option<String> = None;
        let mut usage = None;
        let mut work = 0;
        let sandboxed = out.sandboxed();
        let mut denials = Vec::new();
        for line in &tail.lines {
            let Some(v) = json_if(line, "\"type\"") else { continue };
            match v["type"].as_str() {
                Some("thread.started") => session_id = v["thread_id"].as_str().map(str::to_string),
                Some("turn.started") => {
                    completed = false;
                    turn_failure = None;
                    last_error = None;
                }
                Some("item.completed") if v["item"]["type"] == "agent_message" => {
                    report = v["item"]["text"].as_str().map(str::to_string)
                }
                Some("item.completed") if changed_things(&v["item"]) => {
                    work += 1;
                    if let Some(denial) = refused_by_machine(&v["item"]).filter(|_| sandboxed) {
                        denials.push(denial);
                    }
                }
                Some("turn.completed") => {
                    completed = true;
                    turn_failure = None;
                    let u = &v["usage"];
                    usage = crate::run::Usage {
                        input_tokens: u["input_tokens"].as_u64(),
                        output_tokens: u["output_tokens"].as_u64(),
                        cache_read_tokens: u["cached_input_tokens"].as_u64(),
                        cache_write_tokens: u["cache_write_input_tokens"].as_u64(),
                        model: None,
                        ..crate::run::Usage::default()
                    }
                    .or_none();
                }
                Some("turn.failed") => {
                    completed = false;
                    turn_failure = v["error"]["message"].as_str().map(str::to_string).or(Some("the turn failed".into()));
                }
                Some("error") => last_error = v["message"].as_str().map(str::to_string).or(last_error),
                _ => {}
            }
        }
        let mut outcome = if completed && out.exit_code == Some(0) {
            Outcome::completed(report)
        } else {
            let stderr = out.stderr_tail();
            let structured = turn_failure.is_some() || last_error.is_some();
            let text = turn_failure
                .clone()
                .or(last_error)
                .or_else(|| stderr.last_line().map(str::to_string))
                .unwrap_or_else(|| match out.exit_code {
                    Some(c) => format!("Codex exited with code {c} without finishing its turn"),
                    None => "Codex ended without finishing its turn (the process was interrupted)".into(),
                });
            failure_from_text(&text, &stderr, structured, false, out.now)
        };
        outcome.session_id = session_id;
        outcome.usage = usage;
        outcome.work = work;
        outcome.denials = denials;
        outcome.from_final_event = completed || turn_failure.is_some();
        outcome
    }

    /// Codex 0.171 does not put a plan's windows in `exec --json`; it records them, from the
    /// backend's `x-codex-primary-*` / `x-codex-secondary-*` headers, in the session's rollout file
    /// (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl`) as `token_count`
    /// events' `rate_limits`. The last such event of the session counts.
    fn windows_kept_in(&self, config_dir: &std::path::Path, session_id: &str, now: chrono::DateTime<chrono::Utc>) -> Vec<crate::run::LimitWindow> {
        let Some(file) = rollout_file(config_dir, session_id, now) else { return Vec::new() };
        let tail = LogTail::read_until(&file, |lines| lines.iter().any(|l| l.contains("\"rate_limits\"")));
        tail.lines.iter().rev().filter(|l| l.contains("\"rate_limits\"")).find_map(|l| windows_of(json_if(l, "\"token_count\"")?.get("payload")?.get("rate_limits")?, now)).unwrap_or_default()
    }
}

/// Whether a finished item of Codex's stream is work a retry must not do again: a command that
/// ran (whatever its exit code: it may have done half its work), a change to files that was
/// applied, an MCP tool that was called (Nightshift cannot know what it does). A command the
/// sandbox or policy declined ran nothing.
fn changed_things(item: &serde_json::Value) -> bool {
    match item["type"].as_str() {
        Some("command_execution") => item["status"] != "declined" && !item["exit_code"].is_null(),
        Some("file_change") => item["status"] == "completed",
        Some("mcp_tool_call") => item["status"] != "declined",
        _ => false,
    }
}

/// A command that failed saying the machine refused it (a write to the read-only machine, a read
/// of what the sandbox hides): in a sandboxed run, the sandbox's refusal.
fn refused_by_machine(item: &serde_json::Value) -> Option<crate::run::Denial> {
    let failed = item["type"] == "command_execution" && item["exit_code"].as_i64().is_some_and(|c| c != 0);
    let said = item["aggregated_output"].as_str().unwrap_or("");
    (failed && crate::sandbox::refused_by_machine(said)).then(|| crate::run::Denial { tool: "command_execution".into(), input: item["command"].as_str().unwrap_or("").to_string() })
}

/// The rollout file of `session_id`: Codex files it under the day it started (its local day;
/// the day before and the UTC days are looked in too, for a run across midnight).
fn rollout_file(config_dir: &std::path::Path, session_id: &str, now: chrono::DateTime<chrono::Utc>) -> Option<std::path::PathBuf> {
    if session_id.is_empty() || session_id.contains(['/', '\\', '.']) {
        return None;
    }
    let suffix = format!("-{session_id}.jsonl");
    let days = [now, now - chrono::Duration::days(1)].into_iter().flat_map(|t| [t.with_timezone(&chrono::Local).date_naive(), t.date_naive()]);
    days.map(|d| config_dir.join("sessions").join(d.format("%Y/%m/%d").to_string())).find_map(|dir| {
        std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix)))
    })
}

/// `rate_limits {primary, secondary}` as windows: a 300-minute window is the five-hour one, a
/// 10080-minute window the weekly one (ChatGPT plans put either in either slot); other lengths are
/// not windows Nightshift has words for, and are left out.
fn windows_of(limits: &serde_json::Value, now: chrono::DateTime<chrono::Utc>) -> Option<Vec<crate::run::LimitWindow>> {
    let windows: Vec<_> = ["primary", "secondary"]
        .into_iter()
        .filter_map(|slot| {
            let w = limits.get(slot)?;
            let window = match w["window_minutes"].as_u64()? {
                300 => "five_hour",
                10080 => "seven_day",
                _ => return None,
            };
            let used = w["used_percent"].as_f64()?.clamp(0.0, 100.0);
            Some(crate::run::LimitWindow {
                window: window.into(),
                used_percent: used,
                resets_at: w["resets_at"].as_i64().and_then(|t| chrono::DateTime::from_timestamp(t, 0)),
                // Codex reports no status word: the share says it.
                status: crate::run::LimitWindow::status_for_share(used).into(),
                seen_at: now,
                run_id: None,
            })
        })
        .collect();
    (!windows.is_empty()).then_some(windows)
}

/// A JSON value as a TOML value, for Codex's `-c key=value` (which parses the value as TOML).
fn toml_value(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        // TOML has no null; an empty string is the nearest "nothing".
        Value::Null => "\"\"".to_string(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        // A JSON string is a valid TOML basic string (the same escapes).
        Value::String(_) => v.to_string(),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!("{{{}}}", map.iter().map(|(k, v)| format!("{}={}", Value::String(k.clone()), toml_value(v))).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod work_tests {
    use super::changed_things;
    use serde_json::json;

    /// What a retry must not do again, item by item as Codex 0.171 reports them.
    #[test]
    fn commands_that_ran_and_applied_changes_are_work() {
        let ran = json!({"type": "command_execution", "command": "npm install", "exit_code": 0, "status": "completed"});
        let failed = json!({"type": "command_execution", "command": "make", "exit_code": 2, "status": "failed"});
        let declined = json!({"type": "command_execution", "command": "rm -rf /", "exit_code": null, "status": "declined"});
        let edit = json!({"type": "file_change", "changes": [{"path": "a.rs", "kind": "update"}], "status": "completed"});
        let edit_failed = json!({"type": "file_change", "changes": [], "status": "failed"});
        let mcp = json!({"type": "mcp_tool_call", "server": "gh", "tool": "comment", "status": "completed"});
        let message = json!({"type": "agent_message", "text": "done"});
        let work: Vec<bool> = [&ran, &failed, &declined, &edit, &edit_failed, &mcp, &message].iter().map(|i| changed_things(i)).collect();
        assert_eq!(work, [true, true, false, true, false, true, false]);
    }
}
