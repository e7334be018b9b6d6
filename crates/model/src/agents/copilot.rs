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
use super::rules::instead;
use super::tail::json_if;
use super::transcript::{not_json, tool_input};
use crate::words::first_line;
use super::driver::{AgentDriver, Outcome, RunOutput};
use super::call::Call;
use super::transcript::{LogEntry, LogKind};
use super::tail::LogTail;
use super::auth::{AgentAuth, LoginFacts};
use super::driver::Controlled;
use super::call::Mode;
use crate::run::Reason;
use crate::words::Agent;
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use std::path::Path;

pub struct Copilot;

/// Copilot CLI's providers: `github` (its own model routing, a GitHub token) and its
/// bring-your-own-key types (`COPILOT_PROVIDER_TYPE`).
pub const PROVIDERS: [&str; 4] = ["github", "openai", "azure", "anthropic"];

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
    // Approved for this run by the user, whatever the mode.
    for entry in &call.guard.approved {
        args.push(format!("--allow-tool={entry}"));
    }
    for entry in &call.guard.deny_tools {
        args.push(format!("--deny-tool={entry}"));
    }
    args
}

impl AgentDriver for Copilot {
    fn npm_package(&self) -> Option<&'static str> {
        Some("@github/copilot@1.0.102")
    }

    fn agent(&self) -> Agent {
        Agent::Copilot
    }

    fn controlled_args(&self) -> Controlled {
        &[
            ("-p", instead::PROMPT),
            ("--prompt", instead::PROMPT),
            ("-i", instead::NOT_INTERACTIVE),
            ("--interactive", instead::NOT_INTERACTIVE),
            ("--acp", instead::NOT_INTERACTIVE),
            ("--output-format", instead::OUTPUT),
            ("-s", instead::OUTPUT),
            ("--silent", instead::OUTPUT),
            ("--usage-output-file", instead::OUTPUT),
            ("--mode", instead::MODE),
            ("--plan", instead::MODE),
            ("--autopilot", instead::MODE),
            ("--allow-all-tools", instead::MODE),
            ("--allow-all-paths", "use `mode: skip`"),
            ("--allow-all", "use `mode: skip`"),
            ("--yolo", "use `mode: skip`"),
            ("--allow-tool", "use `allow.tools`"),
            ("--deny-tool", "use `deny.tools`"),
            ("--model", instead::MODEL),
            ("--reasoning-effort", instead::EFFORT),
            ("-r", instead::SESSION),
            ("--resume", instead::SESSION),
            ("--continue", instead::SESSION),
            ("--session-id", instead::SESSION),
            ("--connect", instead::SESSION),
            ("--share", instead::NOT_SHARED),
            ("--share-gist", instead::NOT_SHARED),
            ("--remote", instead::NOT_SHARED),
        ]
    }

    fn controlled_env(&self) -> Controlled {
        &[("COPILOT_ALLOW_ALL", "use `mode:` (skip allows everything)")]
    }

    /// Its patterns are passed as written — `shell(git:*)` (every git command), `shell(git push)`,
    /// `write`, `write(src/)`, `url(github.com)`, `MyMCP(tool)` — so only their kind is checked:
    /// Claude Code's and Copilot's own tool names are pointed at the kind, and reading needs no
    /// permission there at all.
    fn refused_tool_rule(&self, entry: &str) -> Option<String> {
        let (kind, inside) = match entry.trim().split_once('(') {
            Some((kind, rest)) => (kind.trim(), Some(rest.trim_end().trim_end_matches(')').trim())),
            None => (entry.trim(), None),
        };
        let pointed = [("Bash", "shell"), ("bash", "shell"), ("Write", "write"), ("Edit", "write"), ("MultiEdit", "write"), ("create", "write"), ("edit", "write"), ("WebFetch", "url"), ("web_fetch", "url")];
        if let Some((_, own)) = pointed.iter().find(|(name, _)| *name == kind) {
            let example = match inside {
                Some(p) if !p.is_empty() && *own == "shell" => format!("shell({p})"),
                _ => own.to_string(),
            };
            return Some(format!("`{entry}`: Copilot CLI calls that permission {own} (write `{example}`)"));
        }
        if ["Read", "Grep", "Glob", "LS", "view", "grep", "glob"].contains(&kind) {
            return Some(format!("`{entry}`: Copilot CLI reads and searches without asking; its rules are for shell, write, url and MCP servers"));
        }
        if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.') {
            return Some(format!("`{entry}` is not a Copilot CLI permission (shell, write, url, or an MCP server's name)"));
        }
        match inside {
            Some("") => Some(format!("`{entry}`: write `{kind}` for all of it, or what it is limited to, e.g. `shell(git status)`")),
            _ => None,
        }
    }

    fn config_ignored(&self) -> Option<&'static str> {
        Some("Copilot CLI takes no settings on its command line (put it in the account's settings.json, or use `copilot config`)")
    }

    // Copilot CLI keeps its settings, sessions and `copilot login` under COPILOT_HOME (the
    // login's token goes to the OS keychain; config.json names who is signed in). Its cache (the
    // unpacked CLI, ~235 MB) stays shared: nothing of the account is in it but a disposable copy
    // of the user record.
    /// Inside the sandbox: the vendor's API and sign-in hosts, and the folders Copilot CLI writes.
    fn sandbox_needs(&self) -> &'static crate::sandbox::Needs {
        &crate::sandbox::Needs {
            api_hosts: &["api.github.com", "github.com", "api.githubcopilot.com", "*.githubcopilot.com", "copilot-proxy.githubusercontent.com"],
            background_hosts: &[],
            home_state: &[".copilot", ".cache/copilot"],
            state_vars: &["COPILOT_CACHE_HOME"],
            config_files: &[],
        }
    }

    fn auth(&self) -> Option<&'static AgentAuth> {
        Some(&AgentAuth {
            config_dir_var: "COPILOT_HOME",
            secret_var: "COPILOT_GITHUB_TOKEN",
            secret_name: "GitHub token",
            secret_how: "a fine-grained token with the Copilot Requests permission (https://github.com/settings/personal-access-tokens); with `provider = \"openai\"` (or azure, anthropic) the provider's API key instead",
            login_file: "config.json",
            login_command: "copilot login",
            inherited: &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
            more_dirs: &[],
        })
    }

    /// Copilot writes config.json on first start; it names a user only after `copilot login`.
    fn login(&self, config_dir: &Path) -> LoginFacts {
        let file = self.auth().map(|a| config_dir.join(a.login_file)).unwrap_or_default();
        LoginFacts { present: std::fs::read_to_string(file).is_ok_and(|t| t.contains("\"lastLoggedInUser\"")), ..LoginFacts::default() }
    }

    /// `github` (its own model routing, a GitHub token) or one of its bring-your-own-key types.
    fn provider_problem(&self, email: &str, p: &str) -> Option<String> {
        (!PROVIDERS.contains(&p)).then(|| format!("`provider` of {email} must be github (a GitHub token, the default) or a bring-your-own-key type: openai, azure or anthropic (found \"{p}\")"))
    }

    fn secret_note(&self, provider: Option<&str>) -> Option<String> {
        Some(match provider.and_then(|p| self.byok(p)) {
            Some(p) => format!("its key reaches Copilot as COPILOT_PROVIDER_API_KEY with COPILOT_PROVIDER_TYPE={p}; its routines name the endpoint (`env: COPILOT_PROVIDER_BASE_URL`) and `model:`"),
            None => "its GitHub token reaches Copilot as COPILOT_GITHUB_TOKEN; the dir is its COPILOT_HOME".to_string(),
        })
    }

    /// A bring-your-own-key account's key goes in `COPILOT_PROVIDER_API_KEY`.
    fn provider_secret_var(&self, provider: &str) -> Option<String> {
        self.byok(provider).map(|_| "COPILOT_PROVIDER_API_KEY".to_string())
    }

    fn byok<'p>(&self, provider: &'p str) -> Option<&'p str> {
        (provider != "github").then_some(provider)
    }

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
        if let Some(level) = call.effort.and_then(super::call::Effort::level) {
            args.extend(["--reasoning-effort".to_string(), level.as_str().to_string()]);
        }
        if let Some(dir) = call.run_dir {
            args.extend(["--usage-output-file".to_string(), dir.join(USAGE_FILE).display().to_string()]);
        }
        // A retry that continues the earlier try's session (kept in the account's config dir).
        if let Some(session) = call.resume {
            args.push(format!("--resume={session}"));
        }
        args.extend(call.extra.iter().cloned());
        // `--prompt=` keeps a prompt that starts with a dash a prompt.
        args.push(format!("--prompt={}", call.prompt));
        args
    }

    fn resumes(&self) -> bool {
        true
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

    fn ends_run_at(&self, line: &str) -> bool {
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
        let mut work = 0;
        let sandboxed = out.sandboxed();
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
                Some("tool.execution_complete") => {
                    let call = started.get(data["toolCallId"].as_str().unwrap_or(""));
                    if data["success"] == true && call.is_some_and(|(tool, _)| changes_things(tool)) {
                        work += 1;
                    }
                    // What the sandbox refused, as the call's own output says it.
                    let said = format!("{}\n{}", data["result"]["content"].as_str().unwrap_or(""), data["error"]["message"].as_str().unwrap_or(""));
                    if let Some((tool, input)) = call.filter(|_| sandboxed && crate::sandbox::refused_by_machine(&said)) {
                        denials.push(crate::run::Denial { tool: tool.clone(), input: input.clone() });
                    }
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
        outcome.work = work;
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

/// Copilot CLI's tools that only look: viewing, searching, fetching, reporting its intent.
/// Every other tool — `bash` and its shell's input, `create`, `edit`, a sub-agent's `task`, any MCP
/// server's tool (Nightshift cannot know what it does) — may have changed something a retry must
/// not do again.
const LOOKING_TOOLS: &[&str] = &["view", "glob", "grep", "rg", "web_fetch", "report_intent", "read_bash", "list_bash", "think", "update_todo", "fetch_copilot_cli_documentation"];

fn changes_things(tool: &str) -> bool {
    !LOOKING_TOOLS.contains(&tool)
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
fn usage_file(run_dir: &Path) -> Option<crate::run::Usage> {
    let text = std::fs::read_to_string(run_dir.join(USAGE_FILE)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let metrics = v["modelMetrics"].as_object()?;
    let mut u = crate::run::Usage::default();
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
