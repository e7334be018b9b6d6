//! Gemini CLI: `gemini -p <prompt> --output-format stream-json [--model m] [--approval-mode m]`.
//!
//! JSONL events: `init {session_id, model}`, `message {role, content, delta?}`, `tool_use`,
//! `tool_result`, `error {severity, message}`, `result {status: success|error, error?, stats}`.
//! Exit codes: 0 success, 1 error, 41 authentication (no or bad credentials), 42 bad input,
//! 53 turn limit exceeded.
//!
//! `allow.tools` / `deny.tools` become a policy file of Gemini CLI's policy engine
//! ([`policy`], written into the run's directory and passed as `--policy`): every tool outside
//! `allow.tools` is denied — Gemini CLI then does not even offer it to the model (a call to it is
//! `tool_not_registered`) —, each entry is allowed (so nothing asks, which an unattended run could
//! not answer), and `deny.tools` wins over both (`policy_violation`). Both refusals are the run's
//! `denials`.

use super::patterns::failure_from_text;
use super::rules::{instead, ToolNames};
use super::tail::json_if;
use super::transcript::{not_json, tool_input};
use crate::words::first_line;
use super::driver::{AgentDriver, Outcome, RunOutput};
use super::transcript::{LogEntry, LogKind};
use super::tail::LogTail;
use super::call::{split_tool_rule as split, Guard, Mode};
use super::auth::AgentAuth;
use super::driver::Controlled;
use crate::words::Agent;

pub struct Gemini;

/// Claude Code's tool names, and what Gemini CLI calls the same tool.
const FROM_CLAUDE: [(&str, &str); 9] =
    [("Bash", "run_shell_command"), ("Read", "read_file"), ("Write", "write_file"), ("Edit", "replace"), ("MultiEdit", "replace"), ("Grep", "grep_search"), ("Glob", "glob"), ("LS", "list_directory"), ("WebFetch", "web_fetch")];

/// What its rules name: its own tools; Claude Code's names are pointed at them.
const TOOL_NAMES: ToolNames = ToolNames {
    calls: "Gemini CLI calls that tool",
    from_claude: &FROM_CLAUDE,
    shell: "run_shell_command",
    known: |tool| match !tool.is_empty() && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*') {
        true => Ok(()),
        false => Err("is not a Gemini CLI tool name (such as read_file or run_shell_command)".into()),
    },
};

/// The policy file's name in the run's directory.
pub const POLICY_FILE: &str = "gemini-policy.toml";

/// The tools Gemini CLI's own plan mode lets run (its `policies/read-only.toml`): in `mode: plan`
/// only these of `allow.tools` are allowed, so a listed write tool stays refused there.
pub const READ_ONLY_TOOLS: [&str; 6] = ["glob", "grep_search", "list_directory", "read_file", "google_web_search", "read_many_files"];

/// `allow.tools` / `deny.tools` as a Gemini CLI policy (TOML), or `None` when the routine has
/// neither. Rules land in the user tier, above the CLI's defaults (its approval modes included):
/// everything else denied (100), the entries allowed (200), `deny.tools` denied (300). An entry is
/// a tool name (`read_file`) or `run_shell_command(PREFIX)` for commands that start with PREFIX (a
/// trailing `*` is the same). Tool names are checked by the loader; a file Gemini CLI cannot read
/// would be ignored by it, so every value is written as a TOML string.
pub fn policy(guard: &Guard, mode: Mode) -> Option<String> {
    if !guard.has_tool_rules() && guard.approved.is_empty() {
        return None;
    }
    let mut toml = String::from("# Written by Nightshift for this run: the routine's allow.tools and deny.tools.\n");
    let mut rule = |entry: &str, decision: &str, priority: u32| {
        let (tool, prefix) = split(entry);
        toml += &format!("\n[[rule]]\ntoolName = {}\n", toml_string(tool));
        if let Some(prefix) = prefix {
            toml += &format!("commandPrefix = {}\n", toml_string(prefix));
        }
        toml += &format!("decision = \"{decision}\"\npriority = {priority}\n");
    };
    if let Some(allowed) = &guard.allow_tools {
        rule("*", "deny", 100);
        for entry in allowed {
            if mode != Mode::Plan || READ_ONLY_TOOLS.contains(&split(entry).0) {
                rule(entry, "allow", 200);
            }
        }
    }
    // Approved for this run by the user: above the rest, below `deny.tools`.
    for entry in &guard.approved {
        rule(entry, "allow", 250);
    }
    for entry in &guard.deny_tools {
        rule(entry, "deny", 300);
    }
    Some(toml)
}

fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

impl AgentDriver for Gemini {
    fn npm_package(&self) -> Option<&'static str> {
        Some("@google/gemini-cli@0.61.0")
    }

    fn agent(&self) -> Agent {
        Agent::Gemini
    }

    fn controlled_args(&self) -> Controlled {
        const POLICY: &str = "use `allow.tools` and `deny.tools` (Nightshift writes the policy)";
        &[
            ("-p", instead::PROMPT),
            ("--prompt", instead::PROMPT),
            ("-o", instead::OUTPUT),
            ("--output-format", instead::OUTPUT),
            ("--approval-mode", instead::MODE),
            ("-y", instead::MODE),
            ("--yolo", instead::MODE),
            ("-m", instead::MODEL),
            ("--model", instead::MODEL),
            ("--policy", POLICY),
            ("--admin-policy", POLICY),
            ("--allowed-tools", "use `allow.tools`"),
            ("-r", instead::SESSION),
            ("--resume", instead::SESSION),
            ("--session-id", instead::SESSION),
        ]
    }

    /// Its rules name its own tools (`read_file`, `run_shell_command(git status)`: a command
    /// prefix, its policy engine's `commandPrefix`).
    fn refused_tool_rule(&self, entry: &str) -> Option<String> {
        TOOL_NAMES.refused(entry)
    }

    fn tool_rules_only_here(&self) -> Option<&'static str> {
        Some("gemini's tool rules are a policy file beside the run, on this machine; a run on a host (`host:`) cannot have them yet")
    }

    fn config_ignored(&self) -> Option<&'static str> {
        Some("Gemini CLI takes no settings on its command line (put it in ~/.gemini/settings.json)")
    }

    fn no_effort(&self) -> Option<&'static str> {
        Some("Gemini CLI has no effort setting")
    }

    /// Inside the sandbox: the vendor's API and sign-in hosts, and the folders Gemini CLI writes.
    fn sandbox_needs(&self) -> &'static crate::sandbox::Needs {
        &crate::sandbox::Needs {
            api_hosts: &["generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com", "www.googleapis.com", "play.googleapis.com"],
            background_hosts: &[],
            home_state: &[".gemini"],
            state_vars: &[],
            config_files: &[],
        }
    }

    fn auth(&self) -> Option<&'static AgentAuth> {
        Some(&AgentAuth {
            config_dir_var: "GEMINI_CLI_HOME",
            secret_var: "GEMINI_API_KEY",
            secret_name: "Gemini API key",
            secret_how: "https://aistudio.google.com/apikey",
            login_file: ".gemini/oauth_creds.json",
            login_command: "gemini",
            inherited: &["GEMINI_API_KEY"],
            more_dirs: &[],
        })
    }

    /// Gemini CLI uses a `GEMINI_API_KEY` only when its settings select API-key auth (otherwise it
    /// stops with "Invalid auth method selected"). For an account with a stored key, make the
    /// account's own settings say so — leaving every other setting, and an explicit choice, as is.
    fn prepare_config_dir(&self, config_dir: &std::path::Path) -> Result<(), String> {
        let path = config_dir.join(".gemini").join("settings.json");
        let mut settings: serde_json::Value = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{} is not valid JSON ({e}); fix or remove it", path.display()))?,
            Err(_) => serde_json::json!({}),
        };
        if settings.pointer("/security/auth/selectedType").is_some() {
            return Ok(());
        }
        let Some(obj) = settings.as_object_mut() else {
            return Err(format!("{} is not a JSON object", path.display()));
        };
        let security = obj.entry("security").or_insert_with(|| serde_json::json!({}));
        let auth = security.as_object_mut().map(|s| s.entry("auth").or_insert_with(|| serde_json::json!({})));
        if let Some(serde_json::Value::Object(a)) = auth {
            a.insert("selectedType".into(), "gemini-api-key".into());
        }
        crate::fsutil::write_atomic(&path, serde_json::to_string_pretty(&settings).unwrap_or_default().as_bytes()).map_err(|e| e.message)
    }

    fn program(&self) -> &'static str {
        "gemini"
    }

    fn args(&self, call: &super::call::Call<'_>) -> Vec<String> {
        let (prompt, model) = (call.prompt, call.model);
        let approval = match call.mode {
            Mode::Plan => "plan",
            Mode::Edit => "auto_edit",
            Mode::Auto | Mode::Skip => "yolo",
        };
        // `--skip-trust`: an unattended run cannot answer the "trust this folder?" question, and
        // without it Gemini CLI refuses (exit 55) or quietly drops the approval mode to `default`
        // in any folder nobody trusted interactively. The routine's `cwd` is the user's choice of
        // folder; that choice is the trust.
        let mut args = vec![
            "-p".to_string(),
            prompt.to_string(),
            "--output-format".into(),
            "stream-json".into(),
            "--approval-mode".into(),
            approval.into(),
            "--skip-trust".into(),
        ];
        if let Some(model) = model {
            args.extend(["--model".to_string(), model.to_string()]);
        }
        // `allow.dirs`: in the workspace beside the working folder.
        for d in &call.guard.allow_dirs {
            args.extend(["--include-directories".to_string(), d.display().to_string()]);
        }
        // `allow.tools` / `deny.tools`: the policy file [`policy`] wrote into the run's directory.
        if let Some(dir) = call.run_dir.filter(|_| call.guard.has_tool_rules()) {
            args.extend(["--policy".to_string(), dir.join(POLICY_FILE).display().to_string()]);
        }
        // A retry that continues the earlier try's session (kept under the account's config dir,
        // by project: the run's folder, which a retry keeps).
        if let Some(session) = call.resume {
            args.extend(["--resume".to_string(), session.to_string()]);
        }
        // No effort setting in Gemini CLI (a routine's `effort:` is a warning there).
        args.extend(call.extra.iter().cloned());
        args
    }

    fn resumes(&self) -> bool {
        true
    }

    fn run_file(&self, call: &super::call::Call<'_>) -> Option<(&'static str, String)> {
        policy(call.guard, call.mode).map(|text| (POLICY_FILE, text))
    }

    fn install_hint(&self) -> &'static str {
        "install Gemini CLI with `npm install -g @google/gemini-cli`, or set `[agents.gemini] path = \"/path/to/gemini\"` in nightshift.toml"
    }

    fn progress(&self, line: &str) -> Option<String> {
        let v = json_if(line, "\"type\"")?;
        match v["type"].as_str()? {
            "init" => Some(format!("session started (model {})", v["model"].as_str().unwrap_or("?"))),
            "error" => v["message"].as_str().map(|m| format!("error: {}", first_line(m, 160))),
            "tool_use" => v["tool_name"].as_str().map(|t| format!("tool: {t}")),
            _ => None,
        }
    }

    fn transcript(&self, line: &str) -> Vec<LogEntry> {
        let Some(v) = json_if(line, "\"type\"") else { return not_json(line) };
        let entry = |kind, text: String| vec![LogEntry::new(kind, text)];
        match v["type"].as_str().unwrap_or("") {
            "init" => entry(LogKind::Info, format!("Session started · model {}", v["model"].as_str().unwrap_or("?"))),
            "message" if v["role"] == "assistant" => {
                let mut e = LogEntry::new(LogKind::Text, v["content"].as_str().unwrap_or(""));
                e.joins = v["delta"] == true;
                vec![e]
            }
            "tool_use" => entry(LogKind::Tool, format!("{}: {}", v["tool_name"].as_str().unwrap_or("tool"), tool_input(&v["parameters"]))),
            "tool_result" => {
                let kind = if v["status"] == "success" { LogKind::ToolResult } else { LogKind::Error };
                let text = v["output"].as_str().or(v["error"]["message"].as_str()).unwrap_or("").to_string();
                entry(kind, text)
            }
            "error" => entry(LogKind::Error, v["message"].as_str().unwrap_or("error").to_string()),
            "result" => {
                let s = &v["stats"];
                match v["status"].as_str() {
                    Some("success") => entry(LogKind::Result, format!("Finished · {} tokens · {} tool calls", s["total_tokens"].as_u64().unwrap_or(0), s["tool_calls"].as_u64().unwrap_or(0))),
                    other => entry(LogKind::Error, format!("Finished: {}", v["error"]["message"].as_str().or(other).unwrap_or("error"))),
                }
            }
            _ => Vec::new(),
        }
    }

    fn classify(&self, out: &RunOutput<'_>) -> Outcome {
        let tail = LogTail::read_until(&out.stdout_path(), |lines| lines.iter().any(|l| l.contains("\"result\"")));
        let mut session_id = None;
        let mut reply = String::new();
        let mut result = None;
        let mut last_error: Option<String> = None;
        // Tool calls by id, for the ones the policy refused or that were not there to call.
        let mut calls = std::collections::HashMap::new();
        let mut denials = Vec::new();
        let mut work = 0;
        let sandboxed = out.sandboxed();
        for line in &tail.lines {
            let Some(v) = json_if(line, "\"type\"") else { continue };
            match v["type"].as_str() {
                Some("init") => session_id = v["session_id"].as_str().map(str::to_string),
                Some("tool_use") => {
                    calls.insert(v["tool_id"].as_str().unwrap_or("").to_string(), (v["tool_name"].as_str().unwrap_or("?").to_string(), tool_input(&v["parameters"])));
                }
                Some("tool_result") if matches!(v["error"]["type"].as_str(), Some("policy_violation" | "tool_not_registered")) => {
                    let (tool, input) = calls.remove(v["tool_id"].as_str().unwrap_or("")).unwrap_or_else(|| ("?".into(), String::new()));
                    denials.push(crate::run::Denial { tool, input });
                }
                Some("tool_result") => {
                    let call = calls.get(v["tool_id"].as_str().unwrap_or(""));
                    if v["status"] == "success" && call.is_some_and(|(tool, _)| changes_things(tool)) {
                        work += 1;
                    }
                    // What the sandbox refused, as the call's own output says it.
                    let said = format!("{}\n{}", v["output"].as_str().unwrap_or(""), v["error"]["message"].as_str().unwrap_or(""));
                    if let Some((tool, input)) = call.filter(|_| sandboxed && crate::sandbox::refused_by_machine(&said)) {
                        denials.push(crate::run::Denial { tool: tool.clone(), input: input.clone() });
                    }
                }
                Some("message") if v["role"] == "user" => reply.clear(),
                Some("message") if v["role"] == "assistant" => {
                    let text = v["content"].as_str().unwrap_or("");
                    if v["delta"].as_bool() != Some(true) {
                        reply.clear();
                    }
                    reply.push_str(text);
                }
                Some("error") => last_error = v["message"].as_str().map(str::to_string),
                Some("result") => result = Some(v),
                _ => {}
            }
        }
        let success = result.as_ref().is_some_and(|r| r["status"] == "success") && out.exit_code == Some(0);
        let mut outcome = if success {
            Outcome::completed((!reply.trim().is_empty()).then_some(reply))
        } else {
            let stderr = out.stderr_tail();
            let text = result
                .as_ref()
                .and_then(|r| r["error"]["message"].as_str().map(str::to_string))
                .or(last_error)
                .or_else(|| stderr.last_line().map(str::to_string))
                .unwrap_or_else(|| match out.exit_code {
                    Some(42) => "Gemini CLI rejected its input (exit 42)".into(),
                    Some(53) => "Gemini CLI stopped: turn limit exceeded (exit 53)".into(),
                    Some(c) => format!("Gemini CLI exited with code {c}"),
                    None => "Gemini CLI ended without a result (the process was interrupted)".into(),
                });
            // 41: no auth configured; 145 = HTTP 401 cut to 8 bits; a 400 whose reason is an
            // invalid key (144 = 400); `UNAUTHENTICATED` for an expired or revoked credential.
            let auth = matches!(out.exit_code, Some(41) | Some(145))
                || ["GEMINI_API_KEY", "API_KEY_INVALID", "API key not valid", "UNAUTHENTICATED", "PERMISSION_DENIED"].iter().any(|p| text.contains(p));
            failure_from_text(&text, &stderr, result.is_some() || out.exit_code == Some(53), auth, out.now)
        };
        outcome.from_final_event = result.is_some();
        outcome.usage = result.as_ref().and_then(|r| {
            let s = &r["stats"];
            crate::run::Usage {
                input_tokens: s["input_tokens"].as_u64(),
                output_tokens: s["output_tokens"].as_u64(),
                cache_read_tokens: s["cached"].as_u64(),
                cache_write_tokens: None,
                model: crate::run::Usage::models(&s["models"], "total_tokens"),
                ..crate::run::Usage::default()
            }
            .or_none()
        });
        outcome.session_id = session_id;
        outcome.denials = denials;
        outcome.work = work;
        outcome
    }
}

/// Gemini CLI's tools that only look: reading, searching, fetching, planning. Every other tool —
/// a shell command, a write or a replace, a saved memory, any MCP server's tool (Nightshift cannot
/// know what it does) — may have changed something a retry must not do again.
const LOOKING_TOOLS: &[&str] = &["read_file", "read_many_files", "list_directory", "glob", "grep_search", "search_file_content", "google_web_search", "web_fetch", "write_todos", "get_internal_docs", "activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode"];

fn changes_things(tool: &str) -> bool {
    !LOOKING_TOOLS.contains(&tool)
}
