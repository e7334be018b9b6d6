//! OpenCode (`opencode-ai`): `opencode run --format json [--agent plan] [--auto] [-m provider/model]
//! [--variant effort] PROMPT`.
//!
//! JSON lines: `step_start`, `text {part.text}`, `tool_use {part.tool, part.state}`, `step_finish
//! {part.reason, part.tokens, part.cost}`, `error {error.name, error.data.statusCode, …}`. Exit 0
//! on success, 1 on any failure. What a routine decides (the mode's permissions, its tool rules,
//! its `config.` keys) reaches the CLI as `OPENCODE_CONFIG_CONTENT`, which OpenCode merges over
//! every config file it finds (a project's `opencode.json` cannot loosen it).
//!
//! **The long-wait trap.** OpenCode retries a 429 or 5xx by itself up to five times, sleeping its
//! `Retry-After` — two hours for a weekly limit — with nothing on stdout. Its own backoff never
//! passes 40 s (2 s doubling, 25 % jitter, five tries), so a longer sleep is the API's reset. The
//! [`PLUGIN`] Nightshift writes into the run's directory prints each of OpenCode's `retry`
//! statuses (`next`: when it will try again) into the stream as a `nightshift_status` line;
//! [`settles`](OpenCode::settles) ends the run on one that waits longer than [`LONG_WAIT_MS`], and
//! [`classify`](OpenCode::classify) judges it `rate_limited` until `next` — so failover and the
//! wait for the reset take over instead of an idle process holding a lane until its timeout.

use super::auth::provider_key_var;
use super::patterns::{epoch_to_time, failure_from_text, looks_like_rate_limit};
use super::rules::{instead, ToolNames};
use super::tail::json_if;
use super::transcript::{not_json, tool_input};
use crate::words::first_line;
use super::driver::{AgentDriver, Outcome, RunOutput};
use super::call::Call;
use super::transcript::{LogEntry, LogKind};
use super::tail::LogTail;
use super::call::{split_tool_rule as split, Guard, Mode};
use super::auth::AgentAuth;
use super::driver::Controlled;
use crate::run::Reason;
use crate::words::Agent;
use serde_json::{json, Map, Value};

pub struct OpenCode;

/// OpenCode's permission keys (its tools; `edit` covers write and patch too): what its rules
/// name. `bash(PREFIX)` limits a command by how it starts.
pub const OPENCODE_PERMISSIONS: [&str; 12] = ["read", "edit", "glob", "grep", "list", "bash", "task", "webfetch", "websearch", "codesearch", "todowrite", "skill"];

/// What its rules name: its permissions; Claude Code's names are pointed at them.
const TOOL_NAMES: ToolNames = ToolNames {
    calls: "OpenCode calls that permission",
    from_claude: &[("Bash", "bash"), ("Read", "read"), ("Write", "edit"), ("Edit", "edit"), ("MultiEdit", "edit"), ("Grep", "grep"), ("Glob", "glob"), ("LS", "list"), ("WebFetch", "webfetch")],
    shell: "bash",
    known: |tool| match OPENCODE_PERMISSIONS.contains(&tool) {
        true => Ok(()),
        false => Err(format!("is not one of OpenCode's permissions ({})", OPENCODE_PERMISSIONS.join(", "))),
    },
};

/// The plugin's file name in the run's directory.
pub const PLUGIN_FILE: &str = "nightshift-opencode-plugin.js";

/// An OpenCode plugin that puts OpenCode's retry statuses into its own JSON stream: one line per
/// retry, `{"type":"nightshift_status","timestamp":ms,"sessionID":…,"status":{"type":"retry",
/// "attempt":n,"message":…,"next":ms}}`. It prints nothing else and reads nothing.
pub const PLUGIN: &str = r#"// Written by Nightshift for this run: OpenCode's retry statuses, into its JSON stream, so a run
// sleeping out a long rate limit is seen (OpenCode prints nothing while it waits).
export const NightshiftRetryStatus = async () => ({
  event: async ({ event }) => {
    if (event.type === "session.status" && event.properties?.status?.type === "retry") {
      process.stdout.write(JSON.stringify({ type: "nightshift_status", timestamp: Date.now(), sessionID: event.properties.sessionID, status: event.properties.status }) + "\n");
    }
  },
});
"#;

/// A retry OpenCode waits longer for than this is an API's reset, not its own backoff (at most
/// 40 s), and ends the run.
pub const LONG_WAIT_MS: i64 = 60_000;

/// The permissions of a mode: what may run without asking. An `ask` cannot be answered in a run
/// nobody watches: OpenCode rejects it (the run goes on, the call is one of its `denials`).
fn mode_permissions(mode: Mode) -> Map<String, Value> {
    let (edit, bash, outside) = match mode {
        Mode::Plan => ("deny", "ask", "ask"),
        Mode::Edit => ("allow", "ask", "ask"),
        Mode::Auto => ("allow", "allow", "ask"),
        Mode::Skip => ("allow", "allow", "allow"),
    };
    let mut p = Map::new();
    p.insert("edit".into(), json!(edit));
    p.insert("bash".into(), json!(bash));
    p.insert("external_directory".into(), json!(outside));
    p
}

/// `allow.tools` / `deny.tools` over the mode's permissions: with `allow.tools`, every permission
/// it does not name is denied and each named one allowed (a mode that denies it keeps it denied);
/// `deny.tools` wins over both. `bash(git status)` is the pattern `git status*` of `bash`.
fn with_tool_rules(mut p: Map<String, Value>, guard: &Guard) -> Map<String, Value> {
    let set = |p: &mut Map<String, Value>, entry: &str, decision: &str| {
        let (tool, prefix) = split(entry);
        match prefix {
            Some(prefix) => {
                let before = p.get(tool).cloned().unwrap_or(json!("ask"));
                let mut patterns = match before {
                    Value::Object(m) => m,
                    // The tool's decision so far stays the decision for every other command.
                    Value::String(_) => Map::from_iter([("*".to_string(), before)]),
                    _ => Map::new(),
                };
                patterns.insert(format!("{prefix}*"), json!(decision));
                p.insert(tool.to_string(), Value::Object(patterns));
            }
            None => {
                p.insert(tool.to_string(), json!(decision));
            }
        }
    };
    if let Some(allowed) = &guard.allow_tools {
        let denied_by_mode: Vec<String> = p.iter().filter(|(_, v)| *v == "deny").map(|(k, _)| k.clone()).collect();
        for name in OPENCODE_PERMISSIONS {
            p.insert(name.to_string(), json!("deny"));
        }
        for entry in allowed {
            let (tool, _) = split(entry);
            if denied_by_mode.iter().any(|d| d == tool) {
                continue;
            }
            set(&mut p, entry, "allow");
        }
    }
    // Approved for this run by the user, whatever the mode; `deny.tools` still wins.
    for entry in &guard.approved {
        set(&mut p, entry, "allow");
    }
    for entry in &guard.deny_tools {
        set(&mut p, entry, "deny");
    }
    p
}

/// The config Nightshift gives OpenCode for a run: the routine's `config.` keys, then what
/// Nightshift decides (the permissions of its mode and rules, the retry-status plugin, no
/// sharing, no self-update) — merged by OpenCode over every config file it reads.
pub fn config_content(call: &Call<'_>) -> String {
    let mut config: Map<String, Value> = call.config.iter().cloned().collect();
    config.insert("permission".into(), Value::Object(with_tool_rules(mode_permissions(call.mode), call.guard)));
    // An unattended run is never shared to opencode.ai, and never updates the CLI under its feet.
    config.insert("share".into(), json!("disabled"));
    config.insert("autoupdate".into(), json!(false));
    // A refused call is told to the model, which goes on (as Claude Code does), instead of
    // OpenCode ending the session with exit 0 and the work undone.
    let experimental = config.entry("experimental").or_insert_with(|| json!({}));
    if let Some(e) = experimental.as_object_mut() {
        e.insert("continue_loop_on_deny".into(), json!(true));
    }
    if let Some(dir) = call.run_dir {
        config.insert("plugin".into(), json!([format!("file://{}", dir.join(PLUGIN_FILE).display())]));
    }
    Value::Object(config).to_string()
}

impl AgentDriver for OpenCode {
    fn npm_package(&self) -> Option<&'static str> {
        Some("opencode-ai@1.18.33")
    }

    fn agent(&self) -> Agent {
        Agent::OpenCode
    }

    fn controlled_args(&self) -> Controlled {
        &[
            ("run", "Nightshift runs `opencode run` itself"),
            ("--format", instead::OUTPUT),
            ("--print-logs", instead::OUTPUT),
            ("--agent", instead::MODE),
            ("--auto", "use `mode: skip`"),
            ("-m", instead::MODEL),
            ("--model", instead::MODEL),
            ("--variant", instead::EFFORT),
            ("-c", instead::SESSION),
            ("--continue", instead::SESSION),
            ("-s", instead::SESSION),
            ("--session", instead::SESSION),
            ("--fork", instead::SESSION),
            ("--share", instead::NOT_SHARED),
            ("--attach", "Nightshift runs OpenCode here, with the account's config"),
            ("--pure", "Nightshift's plugin tells it when OpenCode waits out a rate limit"),
            ("-i", instead::NOT_INTERACTIVE),
            ("--interactive", instead::NOT_INTERACTIVE),
        ]
    }

    fn controlled_env(&self) -> Controlled {
        &[("OPENCODE_CONFIG_CONTENT", "use `mode:`, `allow:`, `deny:` and `config:`"), ("OPENCODE_PERMISSION", "use `mode:`, `allow:` and `deny:`")]
    }

    /// Its rules name its permissions (`read`, `bash(git status)`).
    fn refused_tool_rule(&self, entry: &str) -> Option<String> {
        TOOL_NAMES.refused(entry)
    }

    /// Its settings travel in `OPENCODE_CONFIG_CONTENT` ([`config_content`]), not as arguments.
    fn controlled_config(&self) -> Controlled {
        &[
            ("permission", "use `mode:`, `allow:` and `deny:`"),
            ("plugin", "Nightshift's plugin tells it when OpenCode waits out a rate limit"),
            ("share", instead::NOT_SHARED),
            ("provider", "the account's key is Nightshift's to pass: use `account:` (and the provider settings in the account's own opencode.json)"),
            ("agent", "use `mode:` (plan runs OpenCode's plan agent)"),
        ]
    }

    /// Each step's cost, in `step_finish`.
    fn reports_cost(&self) -> bool {
        true
    }

    // OpenCode keeps its login (`opencode auth login`: auth.json) and sessions under
    // XDG_DATA_HOME, its opencode.json under XDG_CONFIG_HOME: the account's dir is its data home,
    // with config/, state/ and cache/ inside.
    /// Inside the sandbox: the vendor's API and sign-in hosts, and the folders OpenCode writes.
    fn sandbox_needs(&self) -> &'static crate::sandbox::Needs {
        &crate::sandbox::Needs {
            api_hosts: &["opencode.ai", "models.dev", "registry.npmjs.org", "api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "openrouter.ai"],
            background_hosts: &[],
            home_state: &[".config/opencode", ".local/share/opencode", ".local/state/opencode", ".cache/opencode"],
            state_vars: &[],
            config_files: &[("XDG_CONFIG_HOME", ".config", "opencode/opencode.json")],
        }
    }

    fn auth(&self) -> Option<&'static AgentAuth> {
        Some(&AgentAuth {
            config_dir_var: "XDG_DATA_HOME",
            secret_var: "ANTHROPIC_API_KEY",
            secret_name: "provider API key",
            secret_how: "your provider's console (set `provider = \"…\"` on the account for another than Anthropic)",
            login_file: "opencode/auth.json",
            login_command: "opencode auth login",
            inherited: &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENCODE_API_KEY"],
            more_dirs: &[("XDG_CONFIG_HOME", "config"), ("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache")],
        })
    }

    fn provider_problem(&self, email: &str, p: &str) -> Option<String> {
        (p.is_empty() || !p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')).then(|| format!("`provider` of {email} must be OpenCode's provider id, such as anthropic, openai or openrouter (found \"{p}\")"))
    }

    fn secret_note(&self, provider: Option<&str>) -> Option<String> {
        let var = provider_key_var(provider.unwrap_or("anthropic"));
        Some(format!("its key reaches OpenCode as {var}; its own opencode.json goes in the config dir's config/opencode/"))
    }

    /// `<PROVIDER>_API_KEY`, the variable OpenCode's built-in providers read (a custom provider in
    /// the account's opencode.json names it as `{env:<PROVIDER>_API_KEY}`).
    fn provider_secret_var(&self, provider: &str) -> Option<String> {
        Some(provider_key_var(provider))
    }

    fn program(&self) -> &'static str {
        "opencode"
    }

    fn args(&self, call: &Call<'_>) -> Vec<String> {
        let mut args = vec!["run".to_string(), "--format".into(), "json".into()];
        match call.mode {
            // OpenCode's own plan agent (its prompt and its read-only rules), over the
            // permissions Nightshift gives every mode.
            Mode::Plan => args.extend(["--agent".to_string(), "plan".into()]),
            Mode::Skip => args.push("--auto".into()),
            Mode::Edit | Mode::Auto => {}
        }
        if let Some(model) = call.model {
            args.extend(["--model".to_string(), model.to_string()]);
        }
        if let Some(level) = call.effort.and_then(super::call::Effort::level) {
            args.extend(["--variant".to_string(), level.as_str().to_string()]);
        }
        // A retry that continues the earlier try's session (kept in the account's data folder).
        if let Some(session) = call.resume {
            args.extend(["--session".to_string(), session.to_string()]);
        }
        args.extend(call.extra.iter().cloned());
        // `--` keeps a prompt that starts with a dash a prompt.
        args.extend(["--".to_string(), call.prompt.to_string()]);
        args
    }

    fn resumes(&self) -> bool {
        true
    }

    fn env(&self, call: &Call<'_>) -> Vec<(&'static str, String)> {
        vec![
            ("OPENCODE_CONFIG_CONTENT", config_content(call)),
            // Its models catalogue is fetched from models.dev on start otherwise; a night's run
            // needs the one it names, and the bundled catalogue has it.
            ("OPENCODE_DISABLE_MODELS_FETCH", "1".into()),
        ]
    }

    fn run_file(&self, _call: &Call<'_>) -> Option<(&'static str, String)> {
        Some((PLUGIN_FILE, PLUGIN.to_string()))
    }

    fn install_hint(&self) -> &'static str {
        "install OpenCode with `npm install -g opencode-ai`, or set `[agents.opencode] path = \"/path/to/opencode\"` in nightshift.toml"
    }

    fn progress(&self, line: &str) -> Option<String> {
        let v = json_if(line, "\"type\"")?;
        match v["type"].as_str()? {
            "tool_use" => v["part"]["tool"].as_str().map(|t| format!("tool: {t}")),
            "error" => Some(format!("error: {}", first_line(&error_text(&v["error"]), 160))),
            "nightshift_status" => retry(&v).map(|(at, message)| format!("OpenCode retries at {} ({})", at.format("%H:%M:%S UTC"), first_line(&message, 120))),
            _ => None,
        }
    }

    fn ends_run_at(&self, line: &str) -> bool {
        json_if(line, "nightshift_status").is_some_and(|v| long_wait(&v))
    }

    fn transcript(&self, line: &str) -> Vec<LogEntry> {
        let Some(v) = json_if(line, "\"type\"") else { return not_json(line) };
        let part = &v["part"];
        let entry = |kind, text: String| vec![LogEntry::new(kind, text)];
        match v["type"].as_str().unwrap_or("") {
            "text" => entry(LogKind::Text, part["text"].as_str().unwrap_or("").to_string()),
            "tool_use" => {
                let state = &part["state"];
                let mut out = vec![LogEntry::new(LogKind::Tool, format!("{}: {}", part["tool"].as_str().unwrap_or("tool"), tool_input(&state["input"])))];
                match state["status"].as_str() {
                    Some("completed") => out.push(LogEntry::new(LogKind::ToolResult, state["output"].as_str().unwrap_or(""))),
                    Some("error") => out.push(LogEntry::new(LogKind::Error, state["error"].as_str().unwrap_or("error"))),
                    _ => {}
                }
                out
            }
            "step_finish" if part["reason"] != "tool-calls" => {
                let t = &part["tokens"];
                entry(LogKind::Result, format!("Finished · {} tokens · ${:.4}", t["total"].as_u64().unwrap_or(0), part["cost"].as_f64().unwrap_or(0.0)))
            }
            "error" => entry(LogKind::Error, error_text(&v["error"])),
            "nightshift_status" => match retry(&v) {
                Some((at, message)) => entry(LogKind::Info, format!("OpenCode waits until {} to try again: {message}", at.format("%Y-%m-%d %H:%M:%S UTC"))),
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    fn classify(&self, out: &RunOutput<'_>) -> Outcome {
        let tail = LogTail::read(&out.stdout_path(), 4 << 20);
        let mut session_id = None;
        let mut reply = String::new();
        let mut finished = false;
        let mut error: Option<Value> = None;
        let mut waiting: Option<Value> = None;
        let mut denials = Vec::new();
        let mut work = 0;
        let sandboxed = out.sandboxed();
        let (mut cost, mut usage) = (None::<f64>, None::<crate::run::Usage>);
        for line in &tail.lines {
            let Some(v) = json_if(line, "\"type\"") else { continue };
            if session_id.is_none() {
                session_id = v["sessionID"].as_str().map(str::to_string);
            }
            let part = &v["part"];
            match v["type"].as_str() {
                Some("step_start") => finished = false,
                // Each text part is whole; the report is what it said after its last tool call.
                Some("text") => {
                    if !reply.is_empty() {
                        reply.push_str("\n\n");
                    }
                    reply.push_str(part["text"].as_str().unwrap_or(""));
                }
                Some("tool_use") => {
                    reply.clear();
                    let state = &part["state"];
                    if state["status"] == "error" && state["error"].as_str().is_some_and(rejected) {
                        denials.push(crate::run::Denial { tool: part["tool"].as_str().unwrap_or("?").to_string(), input: tool_input(&state["input"]) });
                    }
                    if state["status"] == "completed" && part["tool"].as_str().is_some_and(changes_things) {
                        work += 1;
                    }
                    // What the sandbox refused, as the call's own output says it.
                    let said = format!("{}\n{}", state["output"].as_str().unwrap_or(""), state["error"].as_str().unwrap_or(""));
                    if sandboxed && crate::sandbox::refused_by_machine(&said) {
                        denials.push(crate::run::Denial { tool: part["tool"].as_str().unwrap_or("?").to_string(), input: tool_input(&state["input"]) });
                    }
                }
                Some("step_finish") => {
                    let t = &part["tokens"];
                    *cost.get_or_insert(0.0) += part["cost"].as_f64().unwrap_or(0.0);
                    let u = usage.get_or_insert_with(crate::run::Usage::default);
                    let add = |sum: &mut Option<u64>, n: &Value| *sum = Some(sum.unwrap_or(0) + n.as_u64().unwrap_or(0));
                    add(&mut u.input_tokens, &t["input"]);
                    add(&mut u.output_tokens, &t["output"]);
                    add(&mut u.cache_read_tokens, &t["cache"]["read"]);
                    add(&mut u.cache_write_tokens, &t["cache"]["write"]);
                    // `stop`: the model ended its answer (`tool-calls`: it goes on; `length`: cut).
                    finished = part["reason"] == "stop";
                }
                Some("error") => error = Some(v["error"].clone()),
                Some("nightshift_status") if long_wait(&v) => waiting = Some(v),
                _ => {}
            }
        }
        let completed = error.is_none() && finished && out.exit_code == Some(0);
        // A limit it was sleeping out wins over any other failure beside it (as for the other
        // agents: the account fails over, or the run waits for the reset).
        let mut outcome = if let Some(wait) = waiting.as_ref().filter(|_| !completed) {
            // Ended by Nightshift while OpenCode slept out the API's reset.
            let (at, message) = retry(wait).unwrap_or((out.now, String::new()));
            let limit = looks_like_rate_limit(&message);
            let said = format!("{}; OpenCode was waiting until {} to try again", first_line(&message, 240), at.format("%Y-%m-%d %H:%M UTC"));
            let mut o = Outcome::failed(if limit { Reason::RateLimited } else { Reason::ApiUnavailable }, said);
            o.resets_at = limit.then_some(at);
            o
        } else if completed {
            Outcome::completed((!reply.trim().is_empty()).then_some(reply))
        } else {
            let stderr = out.stderr_tail();
            let status = error.as_ref().and_then(|e| e["data"]["statusCode"].as_u64());
            let text = error
                .as_ref()
                .map(error_text)
                .or_else(|| stderr.last_line().map(str::to_string))
                .unwrap_or_else(|| match out.exit_code {
                    Some(0) => "OpenCode ended before the model finished its answer".into(),
                    Some(c) => format!("OpenCode exited with code {c} without a result"),
                    None => "OpenCode ended without a result (the process was interrupted)".into(),
                });
            let auth = matches!(status, Some(401 | 403)) || error.as_ref().is_some_and(|e| e["name"] == "ProviderAuthError");
            let mut o = failure_from_text(&text, &stderr, error.is_some(), auth, out.now);
            // A status the API gave wins over the words around it.
            match status {
                Some(429) => o.reason = Some(Reason::RateLimited),
                Some(s) if s >= 500 => o.reason = Some(Reason::ApiUnavailable),
                _ => {}
            }
            o
        };
        outcome.from_final_event = finished || error.is_some();
        outcome.cost_usd = cost;
        outcome.usage = usage.and_then(crate::run::Usage::or_none);
        outcome.session_id = session_id;
        outcome.denials = denials;
        outcome.work = work;
        outcome
    }
}

/// OpenCode's tools that only look: reading, searching, fetching, its to-do list. Every other
/// tool — `bash`, `edit`, `write`, `patch`, a sub-agent's `task`, any MCP server's tool (Nightshift
/// cannot know what it does) — may have changed something a retry must not do again.
const LOOKING_TOOLS: &[&str] = &["read", "glob", "grep", "list", "webfetch", "websearch", "codesearch", "todoread", "todowrite", "lsp", "skill", "question"];

fn changes_things(tool: &str) -> bool {
    !LOOKING_TOOLS.contains(&tool)
}

/// OpenCode's words when a permission `ask` was answered no (as it answers every ask in a run
/// without a person) or a rule denied the call.
fn rejected(error: &str) -> bool {
    let e = error.to_ascii_lowercase();
    e.contains("rejected permission") || e.contains("permission") && (e.contains("denied") || e.contains("reject")) || e.contains("prevents you from using")
}

/// An `error` event's words: the API's message with its status, or the error's name.
fn error_text(error: &Value) -> String {
    let data = &error["data"];
    let message = data["message"].as_str().or(error["message"].as_str()).unwrap_or("");
    let name = error["name"].as_str().unwrap_or("error");
    match (data["statusCode"].as_u64(), message.is_empty()) {
        (Some(code), false) => format!("{message} (HTTP {code})"),
        (None, false) => message.to_string(),
        (Some(code), true) => format!("{name} (HTTP {code})"),
        (None, true) => name.to_string(),
    }
}

/// A `nightshift_status` retry line: when OpenCode tries again, and the error it retries.
fn retry(v: &Value) -> Option<(chrono::DateTime<chrono::Utc>, String)> {
    let status = &v["status"];
    (status["type"] == "retry").then_some(())?;
    let next = epoch_to_time(status["next"].as_i64()? / 1000)?;
    Some((next, status["message"].as_str().unwrap_or("").to_string()))
}

/// A retry status that waits longer than OpenCode's own backoff ever does: the API's reset.
fn long_wait(v: &Value) -> bool {
    v["type"] == "nightshift_status"
        && v["status"]["type"] == "retry"
        && match (v["status"]["next"].as_i64(), v["timestamp"].as_i64()) {
            (Some(next), Some(at)) => next - at > LONG_WAIT_MS,
            _ => false,
        }
}
