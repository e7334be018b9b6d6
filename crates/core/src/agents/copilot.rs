//! GitHub Copilot CLI (`@github/copilot`): `copilot --output-format json --no-auto-update
//! --no-ask-user [--plan | --allow-tool=write | --allow-all-tools | --allow-all] [--allow-tool=…]
//! [--deny-tool=…] [--model m] [--reasoning-effort e] --usage-output-file FILE --prompt=PROMPT`.
//!
//! JSON lines: `user.message`, `assistant.message {content, toolRequests}`,
//! `tool.execution_start {toolCallId, toolName, arguments}`, `tool.execution_complete {toolCallId,
//! success, error {code}}`, `assistant.turn_retry`, `session.error {errorType, statusCode,
//! message}`, and last `result {exitCode, sessionId, usage {premiumRequests}}`. A bad or missing
//! GitHub token prints no JSON at all (words on stderr, exit 1). Tokens are not on stdout: the
//! file `--usage-output-file` names has them per model.
//!
//! **Permissions.** In a run nobody watches, every tool call that would ask is refused by the CLI
//! (`error.code: "denied"`) and told to the model, which goes on; refusals are the run's
//! `denials`. A mode is what may run without asking: plan = Copilot's plan mode with nothing
//! allowed (it reads and answers), edit = file writes, auto = every tool (paths outside the
//! folder and URLs still refused), skip = everything (`--allow-all`).
//!
//! **The hang.** Signed in, Copilot answers a 429 it will not retry (a long reset, or its own
//! retries spent) with `session.error {errorType: "rate_limit"}` and then never exits;
//! [`settles`](Copilot::settles) ends the run on that line and [`classify`](Copilot::classify)
//! judges it `rate_limited` until the reset its message names ("reset in 1 hour").

use super::patterns::failure_from_text;
use super::tail::json_if;
use super::transcript::{not_json, tool_input};
use super::{first_line, AgentDriver, Call, LogEntry, LogKind, LogTail, Outcome, RunOutput};
use crate::routine::Mode;
use crate::run::Reason;
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use std::path::Path;

pub struct Copilot;

/// The usage file's name in the run's directory (`--usage-output-file`).
pub const USAGE_FILE: &str = "copilot-usage.json";

/// Whether a permission rule names file writes (`write`, `write(PATH)`): what plan mode keeps
/// refused even when `allow.tools` lists it.
fn is_write_rule(entry: &str) -> bool {
    let kind = entry.split('(').next().unwrap_or(entry).trim();
    kind == "write"
}

/// The flags that say what may run without asking: the mode's, or with `allow.tools` each entry
/// instead (plan keeps writes refused); `deny.tools` wins over both, as Copilot's denial rules
/// always do. Entries are Copilot's own patterns (`shell(git:*)`, `write(src/)`, `url(github.com)`,
/// an MCP server), checked by the loader (`routine::tool_rules`).
fn permission_args(call: &Call<'_>) -> Vec<String> {
    let mut args = Vec::new();
    match &call.guard.allow_tools {
        Some(allowed) => {
            for entry in allowed.iter().filter(|e| call.mode != Mode::Plan || !is_write_rule(e)) {
                args.push(format!("--allow-tool={entry}"));
            }
        }
        None => match call.mode {
            Mode::Plan => {}
            Mode::Edit => args.push("--allow-tool=write".into()),
            Mode::Auto => args.push("--allow-all-tools".into()),
            Mode::Skip => args.push("--allow-all".into()),
        },
    }
    for entry in &call.guard.deny_tools {
        args.push(format!("--deny-tool={entry}"));
    }
    args
}

impl AgentDriver for Copilot {
    fn program(&self) -> &'static str {
        "copilot"
    }

    fn args(&self, call: &Call<'_>) -> Vec<String> {
        // Never updates itself under a night's run; never stops to ask a question nobody answers.
        let mut args = vec!["--output-format".to_string(), "json".into(), "--no-auto-update".into(), "--no-ask-user".into(), "--no-color".into()];
        if call.mode == Mode::Plan {
            args.push("--plan".into());
        }
        args.extend(permission_args(call));
        if let Some(model) = call.model {
            args.extend(["--model".to_string(), model.to_string()]);
        }
        if let Some(level) = call.effort.and_then(crate::routine::Effort::level) {
            args.extend(["--reasoning-effort".to_string(), level.as_str().to_string()]);
        }
        if let Some(dir) = call.run_dir {
            args.extend(["--usage-output-file".to_string(), dir.join(USAGE_FILE).display().to_string()]);
        }
        args.extend(call.extra.iter().cloned());
        // `--prompt=` keeps a prompt that starts with a dash a prompt.
        args.push(format!("--prompt={}", call.prompt));
        args
    }

    fn install_hint(&self) -> &'static str {
        "install Copilot CLI with `npm install -g @github/copilot`, or set `[agents.copilot] path = \"/path/to/copilot\"` in nightshift.toml"
    }

    fn progress(&self, line: &str) -> Option<String> {
        let v = json_if(line, "\"type\"")?;
        let data = &v["data"];
        match v["type"].as_str()? {
            "tool.execution_start" => data["toolName"].as_str().map(|t| format!("tool: {t}")),
            "assistant.turn_retry" => Some(format!("Copilot retries ({})", data["reason"].as_str().unwrap_or("error"))),
            "session.error" => Some(format!("error: {}", first_line(data["message"].as_str().unwrap_or("error"), 160))),
            _ => None,
        }
    }

    fn settles(&self, line: &str) -> bool {
        json_if(line, "session.error").is_some_and(|v| v["type"] == "session.error" && v["data"]["errorType"] == "rate_limit")
    }

    fn transcript(&self, line: &str) -> Vec<LogEntry> {
        let Some(v) = json_if(line, "\"type\"") else { return not_json(line) };
        let data = &v["data"];
        let entry = |kind, text: String| vec![LogEntry::new(kind, text)];
        match v["type"].as_str().unwrap_or("") {
            "assistant.message" => {
                let mut out = Vec::new();
                if let Some(text) = data["content"].as_str().filter(|t| !t.trim().is_empty()) {
                    out.push(LogEntry::new(LogKind::Text, text));
                }
                for request in data["toolRequests"].as_array().into_iter().flatten() {
                    out.push(LogEntry::new(LogKind::Tool, format!("{}: {}", request["name"].as_str().unwrap_or("tool"), tool_input(&request["arguments"]))));
                }
                out
            }
            "tool.execution_complete" if data["success"] == true => entry(LogKind::ToolResult, data["result"]["content"].as_str().unwrap_or("").to_string()),
            "tool.execution_complete" => entry(LogKind::Error, data["error"]["message"].as_str().unwrap_or("the tool failed").to_string()),
            "session.error" => entry(LogKind::Error, data["message"].as_str().unwrap_or("error").to_string()),
            "result" => {
                let premium = v["usage"]["premiumRequests"].as_f64().unwrap_or(0.0);
                entry(LogKind::Result, format!("Finished · exit {} · {} premium request{}", v["exitCode"], premium, if premium == 1.0 { "" } else { "s" }))
            }
            _ => Vec::new(),
        }
    }

    fn classify(&self, out: &RunOutput<'_>) -> Outcome {
        let tail = LogTail::read(&out.stdout_path(), 4 << 20);
        let mut reply = String::new();
        let mut error: Option<Value> = None;
        let mut result: Option<Value> = None;
        let mut denials = Vec::new();
        let mut started: std::collections::HashMap<String, (String, String)> = Default::default();
        for line in &tail.lines {
            let Some(v) = json_if(line, "\"type\"") else { continue };
            let data = &v["data"];
            match v["type"].as_str() {
                // The report is what it said after its last tool call.
                Some("assistant.message") => {
                    if data["toolRequests"].as_array().is_some_and(|r| !r.is_empty()) {
                        reply.clear();
                    } else if let Some(text) = data["content"].as_str().filter(|t| !t.trim().is_empty()) {
                        if !reply.is_empty() {
                            reply.push_str("\n\n");
                        }
                        reply.push_str(text);
                    }
                }
                Some("tool.execution_start") => {
                    let id = data["toolCallId"].as_str().unwrap_or("").to_string();
                    started.insert(id, (data["toolName"].as_str().unwrap_or("?").to_string(), tool_input(&data["arguments"])));
                }
                Some("tool.execution_complete") if data["success"] == false && data["error"]["code"] == "denied" => {
                    let (tool, input) = started.get(data["toolCallId"].as_str().unwrap_or("")).cloned().unwrap_or_else(|| ("?".into(), String::new()));
                    denials.push(crate::run::Denial { tool, input });
                }
                Some("session.error") => error = Some(v.clone()),
                Some("result") => result = Some(v.clone()),
                _ => {}
            }
        }
        let exit_said = result.as_ref().and_then(|r| r["exitCode"].as_i64());
        let completed = error.is_none() && exit_said == Some(0) && out.exit_code == Some(0);
        let mut outcome = if completed {
            Outcome::completed((!reply.trim().is_empty()).then_some(reply))
        } else if let Some(e) = &error {
            session_error(e, &out.stderr_tail(), out.now)
        } else {
            let stderr = out.stderr_tail();
            let text = said_on_stderr(&stderr).unwrap_or_else(|| match (exit_said, out.exit_code) {
                (Some(0), _) | (_, Some(0)) => "Copilot CLI ended without finishing its answer".into(),
                (_, Some(c)) => format!("Copilot CLI exited with code {c} without a result"),
                (_, None) => "Copilot CLI ended without a result (the process was interrupted)".into(),
            });
            failure_from_text(&text, &stderr, result.is_some(), signed_out(&text), out.now)
        };
        outcome.from_final_event = result.is_some() || error.is_some();
        outcome.session_id = result.as_ref().and_then(|r| r["sessionId"].as_str()).map(str::to_string);
        let mut usage = usage_file(out.run_dir).unwrap_or_default();
        usage.premium_requests = result.as_ref().and_then(|r| r["usage"]["premiumRequests"].as_f64());
        outcome.usage = usage.or_none();
        outcome.denials = denials;
        outcome
    }
}

/// Copilot's own words on stderr, where it says what stopped it before any JSON (a token it
/// could not use): the lines before its advice ("Your token may…", "To authenticate…", "• …").
fn said_on_stderr(stderr: &LogTail) -> Option<String> {
    let advice = |l: &str| l.starts_with("Your ") || l.starts_with("To ") || l.starts_with('•') || l.starts_with("Copilot can be");
    let lines: Vec<&str> = stderr.lines.iter().map(|l| l.trim()).filter(|l| !l.is_empty()).take_while(|l| !advice(l)).collect();
    (!lines.is_empty()).then(|| first_line(lines.join(" — ").trim_start_matches("Error:").trim(), 300))
}

/// Whether Copilot's words say its GitHub sign-in is missing or refused — a 401 or 403 from
/// GitHub, "Bad credentials", no token at all — rather than GitHub being unreachable.
fn signed_out(text: &str) -> bool {
    ["(401)", "(403)", "Bad credentials", "No authentication information", "Authentication failed", "Classic Personal Access Tokens"].iter().any(|w| text.contains(w))
}

/// A `session.error` event as a failed outcome: its status and type first, its words after.
fn session_error(event: &Value, stderr: &LogTail, now: DateTime<Utc>) -> Outcome {
    let data = &event["data"];
    let message = data["message"].as_str().unwrap_or("Copilot CLI reported an error").to_string();
    let status = data["statusCode"].as_u64();
    let kind = data["errorType"].as_str().unwrap_or("");
    let mut o = failure_from_text(&message, stderr, true, matches!(status, Some(401 | 403)) || kind == "authentication", now);
    if kind == "rate_limit" || status == Some(429) {
        o.reason = Some(Reason::RateLimited);
        // "reset in 1 hour" counts from when Copilot said it, not from when the run was judged.
        let said_at = event["timestamp"].as_str().and_then(crate::words::parse_time).unwrap_or(now);
        o.resets_at = reset_after(&message).map(|d| said_at + d).or(o.resets_at);
    } else if status.is_some_and(|s| s >= 500) {
        o.reason = Some(Reason::ApiUnavailable);
    }
    o
}

/// How long until a limit resets, from Copilot's words: "reset in 1 hour", "in 45 minutes", "in
/// 2 days", "in under a minute" (a minute).
pub fn reset_after(message: &str) -> Option<Duration> {
    let lower = message.to_lowercase();
    let rest = &lower[lower.find("reset in ")? + "reset in ".len()..];
    let words: Vec<&str> = rest.split_whitespace().take(3).collect();
    let (n, unit) = match words.as_slice() {
        ["under", "a", unit, ..] | ["less", "than", unit, ..] => (1, *unit),
        ["a" | "an", unit, ..] => (1, *unit),
        [n, unit, ..] => (n.parse::<i64>().ok()?, *unit),
        _ => return None,
    };
    let unit = unit.trim_end_matches(|c: char| !c.is_ascii_alphabetic());
    match unit.trim_end_matches('s') {
        "second" => Some(Duration::seconds(n)),
        "minute" => Some(Duration::minutes(n)),
        "hour" => Some(Duration::hours(n)),
        "day" => Some(Duration::days(n)),
        _ => None,
    }
}

/// Tokens per model from the file `--usage-output-file` wrote (`modelMetrics`), the most asked
/// model first; `None` without one (a run on a host, or one killed before Copilot wrote it). The
/// premium requests come from the stream's `result`, which a run on a host has too.
fn usage_file(run_dir: &Path) -> Option<super::Usage> {
    let text = std::fs::read_to_string(run_dir.join(USAGE_FILE)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let metrics = v["modelMetrics"].as_object()?;
    let mut u = super::Usage::default();
    let add = |sum: &mut Option<u64>, n: &Value| *sum = Some(sum.unwrap_or(0) + n.as_u64().unwrap_or(0));
    let mut models: Vec<(&String, u64)> = Vec::new();
    for (name, m) in metrics {
        let t = &m["usage"];
        add(&mut u.input_tokens, &t["inputTokens"]);
        add(&mut u.output_tokens, &t["outputTokens"]);
        add(&mut u.cache_read_tokens, &t["cacheReadTokens"]);
        add(&mut u.cache_write_tokens, &t["cacheWriteTokens"]);
        models.push((name, m["requests"]["count"].as_u64().unwrap_or(0)));
    }
    models.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    u.model = (!models.is_empty()).then(|| models.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "));
    u.or_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_from_copilots_words() {
        assert_eq!(reset_after("Please wait for your limit to reset in 1 hour or switch"), Some(Duration::hours(1)));
        assert_eq!(reset_after("reset in 45 minutes."), Some(Duration::minutes(45)));
        assert_eq!(reset_after("reset in under a minute or switch"), Some(Duration::minutes(1)));
        assert_eq!(reset_after("reset in 2 days"), Some(Duration::days(2)));
        assert_eq!(reset_after("reset in an hour"), Some(Duration::hours(1)));
        assert_eq!(reset_after("You've hit your rate limit."), None);
        assert_eq!(reset_after("reset in soon"), None);
    }
}
