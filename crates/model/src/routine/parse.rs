//! Turn one routine file into a [`Routine`], collecting every problem with its position.
//! (Longer than most modules on purpose: every field's rules and words sit in this one place, the
//! only definition of a valid routine that the loader, the editor and the form all run.)

use super::agents_cli;
use super::yaml::{self, Node, Pos};
use super::{check_name, AccountChoice, Action, Agent, Diagnostic, Effort, Guard, InvalidRoutine, Mode, NotifyPolicy, Overlap, Placement, RetryPolicy, Routine, Workspace};
use crate::agents::rules;
use crate::schedule::{local_tz, parse_tz, Schedule};
pub use crate::words::MAX_DURATION;
use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const KEYS: &[&str] = &[
    "name", "description", "schedule", "timezone", "agent", "command", "prompt", "mode", "model", "config",
    "timeout", "cwd", "env", "account", "accounts", "catchup", "notify", "enabled", "variables", "devices", "at",
    "end_at", "webhooks", "workspace", "base", "push", "host", "hosts", "remote_cwd", "remoteCwd", "hostStrategy",
    "retries", "retry_backoff", "max_wait", "overlap", "jitter", "notify_missed", "ping", "run_once", "trigger", "version", "effort", "args", "stall_timeout", "secrets", "allow", "deny", "on_denial", "budget",
];

/// Parse the text of one routine file. `display` is how the file is named in messages.
pub fn parse_routine(src: &str, file: &Path, display: &str) -> Result<Routine, InvalidRoutine> {
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let mut cx = Cx { display, errors: Vec::new(), warnings: Vec::new(), more: 0 };
    let fallback_name = stem.clone();
    let invalid = |name: String, (errors, warnings): (Vec<Diagnostic>, Vec<Diagnostic>)| InvalidRoutine { name, file: file.to_path_buf(), errors, warnings };

    let root = match yaml::parse(src) {
        Ok(Some(root)) => root,
        Ok(None) => {
            cx.err(Pos { line: 1, col: 1 }, "the file is empty; a routine needs at least `schedule` and `agent` + `prompt` or `command`");
            return Err(invalid(fallback_name, cx.into_errors()));
        }
        Err((pos, msg)) => {
            cx.err(pos, format!("YAML syntax error: {msg}"));
            return Err(invalid(fallback_name, cx.into_errors()));
        }
    };
    let Node::Map { entries, .. } = &root else {
        cx.err(root.pos(), format!("a routine file must be a mapping of keys (name:, schedule:, …), found {}", root.kind()));
        return Err(invalid(fallback_name, cx.into_errors()));
    };

    // Index the keys, reporting unknown and duplicate ones.
    let mut fields: BTreeMap<&str, (&Node, &Node)> = BTreeMap::new();
    for (key, value) in entries {
        let Node::Scalar { value: k, .. } = key else {
            cx.err(key.pos(), "keys must be plain words");
            continue;
        };
        // Nightshift's own key, or agents-cli's name for one of them.
        let known = KEYS.iter().find(|known| **known == k.as_str()).copied().or_else(|| match agents_cli::treatment(k) {
            Some(agents_cli::Treatment::Alias(ours)) => Some(ours),
            _ => None,
        });
        match (known, agents_cli::treatment(k)) {
            (Some(known), _) => {
                if fields.insert(known, (key, value)).is_some() {
                    let also = if known != k.as_str() { format!(" (as `{known}` and `{k}`)") } else { String::new() };
                    cx.err(key.pos(), format!("`{known}` is given twice{also}"));
                }
            }
            (None, Some(agents_cli::Treatment::Ignored(why))) => cx.warn(key.pos(), format!("`{k}` is ignored: {why}")),
            (None, Some(agents_cli::Treatment::Refused(why))) => cx.err(key.pos(), why),
            _ => cx.err_with(key.pos(), || unknown_key(k, KEYS, "")),
        }
    }
    let get = |k: &str| fields.get(k).map(|(_, v)| *v).filter(|v| !v.is_null());
    let key_pos = |k: &str| fields.get(k).map(|(key, _)| key.pos()).unwrap_or(Pos { line: 1, col: 1 });

    let name = match get("name") {
        Some(node) => cx.string(node, "name").unwrap_or_else(|| stem.clone()),
        None => stem.clone(),
    };
    if let Err(msg) = check_name(&name) {
        let pos = if fields.contains_key("name") { get("name").map(Node::pos).unwrap_or(key_pos("name")) } else { Pos { line: 1, col: 1 } };
        let hint = if fields.contains_key("name") { "" } else { " (the name comes from the file name; set `name:` to choose another)" };
        cx.err(pos, format!("{msg}{hint}"));
    }
    let description = get("description").and_then(|n| cx.string(n, "description"));

    let timezone = match get("timezone") {
        Some(node) => match cx.string(node, "timezone") {
            Some(tz) => parse_tz(&tz).map_err(|m| cx.err(node.pos(), m)).unwrap_or(Tz::UTC),
            None => Tz::UTC,
        },
        None => local_tz(),
    };

    let schedule = get("schedule").and_then(|node| {
        let expr = cx.string(node, "schedule")?;
        Schedule::parse(&expr, timezone).map_err(|m| cx.err(node.pos(), m)).ok()
    });
    // `jitter: <duration>`: each slot starts at its own fixed offset within the span.
    let jitter = get("jitter").and_then(|n| Some((n, cx.duration(n, "jitter")?))).and_then(|(n, span)| {
        if span > MAX_JITTER {
            cx.err(n.pos(), "`jitter` is at most 24h (each slot starts within that span after its time)");
            None
        } else if get("schedule").is_none() {
            cx.err(key_pos("jitter"), "`jitter` spreads the slots of a `schedule`; an `at` routine runs at its one time");
            None
        } else {
            Some(span)
        }
    });
    let schedule = match jitter {
        Some(span) => schedule.map(|s| s.with_jitter(span, &name)),
        None => schedule,
    };
    let at = get("at").and_then(|n| cx.timestamp(n, "at", timezone));
    let end_at = get("end_at").and_then(|n| cx.timestamp(n, "end_at", timezone));
    // `trigger:` (agents-cli's GitHub and Linear events): the events it runs on.
    let trigger = get("trigger").and_then(|n| event_trigger(&mut cx, n));
    if get("schedule").is_none() && get("at").is_none() && get("trigger").is_none() {
        cx.err(Pos { line: 1, col: 1 }, "missing `schedule` (a cron expression such as \"0 9 * * 1-5\"), `at` (a one-shot time) or `trigger` (the GitHub or Linear events it runs on)");
    }
    // `version:` (agents-cli): the agent CLI version it pins (the settings map it to a binary).
    let version = get("version").and_then(|n| cx.string(n, "version")).map(|v| v.trim().to_string());
    if version.is_some() && get("command").is_some() {
        cx.err(key_pos("version"), "`version` pins an agent CLI's version; this routine runs a `command`");
    }
    // `runOnce: true` (agents-cli): the schedule's next fire is the routine's only one.
    let run_once = get("run_once").and_then(|n| cx.boolean(n, "runOnce")).unwrap_or(false);
    if run_once && get("schedule").is_none() {
        cx.err(key_pos("run_once"), "`runOnce` needs a `schedule`: its next fire is the routine's only one (or give `at:` a time)");
    }
    if get("schedule").is_some() && get("at").is_some() {
        cx.err(key_pos("at"), "give either `schedule` (repeating) or `at` (once), not both");
    }
    if let (Some(at), Some(end)) = (at, end_at) {
        if end < at {
            cx.err(key_pos("end_at"), "`end_at` is before `at`: the routine would never run");
        }
    }

    // What to run: exactly one of agent/command.
    let mode = get("mode").and_then(|n| {
        let s = cx.string(n, "mode")?;
        let mode = Mode::parse(&s);
        if mode.is_none() {
            cx.err(n.pos(), format!("unknown mode \"{s}\" (expected plan, edit, auto or skip)"));
        }
        mode
    });
    let mut model = get("model").and_then(|n| cx.string(n, "model"));
    // `config.<key>` other than `model`: checked against the agent below.
    let mut settings: Vec<(String, serde_json::Value, Pos)> = Vec::new();
    if let Some(config) = get("config") {
        match config {
            Node::Map { entries, .. } => {
                for (k, v) in entries {
                    let key = match k {
                        Node::Scalar { value, .. } => value.as_str(),
                        _ => "",
                    };
                    if key == "model" {
                        if model.is_some() {
                            cx.err(k.pos(), "`model` is given twice (as `model` and `config.model`)");
                        } else {
                            model = cx.string(v, "config.model");
                        }
                    } else if key.is_empty() {
                        cx.err(k.pos(), "keys must be plain words");
                    } else {
                        settings.push((key.to_string(), super::yaml::to_json(v), k.pos()));
                    }
                }
            }
            other => cx.err(other.pos(), format!("`config` must be a mapping, found {}", other.kind())),
        }
    }
    let effort = get("effort").and_then(|n| {
        let word = cx.string(n, "effort")?;
        let effort = Effort::parse(word.trim());
        if effort.is_none() {
            cx.err(n.pos(), format!("unknown effort \"{word}\" (expected low, medium, high, xhigh, max or auto; agents-cli's fast, default and detailed too)"));
        }
        effort
    });
    // `args:` — each item where it is written, for the check against what Nightshift sets.
    let args: Vec<(String, Pos)> = match get("args") {
        Some(Node::Seq { items, .. }) => items.iter().filter_map(|i| cx.string(i, "args").map(|a| (a, i.pos()))).collect(),
        Some(other) => {
            cx.err(other.pos(), format!("`args` must be a list of arguments (args: [--add-dir, ../docs]), found {}", other.kind()));
            Vec::new()
        }
        None => Vec::new(),
    };
    let (guard, guard_pos) = guard(&mut cx, &get);
    let prompt = get("prompt").and_then(|n| cx.string(n, "prompt"));
    let command = get("command").and_then(|n| cx.string(n, "command"));
    let agent_node = get("agent");
    let action = match (agent_node, command) {
        (Some(_), Some(_)) => {
            cx.err(key_pos("command"), "give either `agent` (with a `prompt`) or `command`, not both");
            None
        }
        (None, None) => {
            cx.err(Pos { line: 1, col: 1 }, format!("missing `agent` ({}, with a `prompt`) or `command` (a shell command)", Agent::cli_words()));
            None
        }
        (Some(node), None) => {
            let agent = cx.string(node, "agent").and_then(|a| match Agent::parse_cli(&a) {
                Some(kind) => Some(kind),
                None => {
                    let words: Vec<&str> = Agent::CLIS.iter().map(|a| a.as_str()).collect();
                    let near = nearest(&a, &words).map(|n| format!("; did you mean \"{n}\"?")).unwrap_or_default();
                    cx.err(node.pos(), format!("unknown agent \"{a}\" (expected {}){near}", words.join(", ")));
                    None
                }
            });
            if let Some(agent) = agent {
                // What the agent's CLI cannot take is refused, never dropped: the agent answers.
                let d = crate::agents::driver(agent);
                if let Some(why) = d.no_tool_rules() {
                    if guard.allow_tools.is_some() {
                        cx.err(guard_pos.allow_tools, format!("{} cannot be limited to `allow.tools`: {why}", agent.as_str()));
                    }
                    if !guard.deny_tools.is_empty() {
                        cx.err(guard_pos.deny_tools, format!("{} cannot be refused `deny.tools`: {why}", agent.as_str()));
                    }
                } else {
                    let rules = guard.allow_tools.iter().flatten().map(|e| ("allow.tools", e, guard_pos.allow_tools)).chain(guard.deny_tools.iter().map(|e| ("deny.tools", e, guard_pos.deny_tools)));
                    for (field, entry, pos) in rules {
                        if let Some(why) = d.refused_tool_rule(entry) {
                            cx.err(pos, format!("`{field}`: {why}"));
                        }
                    }
                }
                for (key, _, pos) in &settings {
                    if let Some(why) = rules::refused_config(agent, key) {
                        cx.err(*pos, why);
                    } else if let Some(why) = d.config_ignored() {
                        cx.warn(*pos, format!("`config.{key}` is ignored: {why}"));
                    }
                }
                for (arg, pos) in &args {
                    if let Some(why) = rules::refused_arg(agent, arg) {
                        cx.err(*pos, format!("`args`: {why}"));
                    }
                }
                // An agent without an effort setting of its own: said, and run at its default.
                if let (Some(why), Some(word)) = (d.no_effort(), effort.filter(|e| e.level().is_some())) {
                    cx.warn(key_pos("effort"), format!("`effort: {}` is ignored: {why}", word.as_str()));
                }
            }
            match prompt.clone().filter(|p| !p.trim().is_empty()) {
                Some(prompt) => agent.map(|agent| Action::Agent {
                    agent,
                    prompt,
                    mode: mode.unwrap_or(Mode::Auto),
                    model: model.clone(),
                    effort,
                    args: args.iter().map(|(a, _)| a.clone()).collect(),
                    guard: guard.clone(),
                    config: match crate::agents::driver(agent).config_ignored() {
                        Some(_) => Vec::new(),
                        None => settings.iter().map(|(k, v, _)| (k.clone(), v.clone())).collect(),
                    },
                }),
                None => {
                    cx.err(key_pos("agent"), "an agent routine needs a `prompt`: what should the agent do?");
                    None
                }
            }
        }
        (None, Some(command)) => {
            if command.trim().is_empty() {
                cx.err(key_pos("command"), "`command` is empty");
            }
            for (key, _, pos) in &settings {
                cx.warn(*pos, format!("`config.{key}` is ignored: {}", crate::agents::driver(Agent::Command).config_ignored().unwrap_or_default()));
            }
            let guarded = [("allow", get("allow").is_some()), ("deny", get("deny").is_some()), ("on_denial", get("on_denial").is_some())];
            for (key, given) in [("prompt", prompt.is_some()), ("mode", mode.is_some()), ("model", model.is_some()), ("effort", effort.is_some()), ("args", !args.is_empty())].into_iter().chain(guarded) {
                if given {
                    cx.err(key_pos(key), format!("`{key}` only applies to agent routines; this one runs a `command`"));
                }
            }
            Some(Action::Command { command })
        }
    };

    let timeout = get("timeout").and_then(|node| match node {
        // agents-cli writes `timeout: 45`; it means seconds (and falls back to 10 minutes when it
        // cannot read one, silently): taken as seconds, and said.
        Node::Scalar { value, .. } if !value.trim().is_empty() && value.trim().chars().all(|c| c.is_ascii_digit()) => {
            let secs: u64 = value.trim().parse().unwrap_or(u64::MAX);
            match std::time::Duration::from_secs(secs) {
                d if d.is_zero() => {
                    cx.err(node.pos(), "`timeout` must be longer than zero");
                    None
                }
                d if d > MAX_DURATION => {
                    cx.err(node.pos(), format!("`timeout: {value}` is longer than the longest allowed, 7 days"));
                    None
                }
                d => {
                    cx.warn(node.pos(), format!("`timeout: {value}` has no unit: taken as {value} seconds; write {value}s (or 10m, 1h) to say so"));
                    Some(d)
                }
            }
        }
        node => cx.duration(node, "timeout"),
    });
    // `secrets:` — names of keychain secrets, each the environment variable it becomes.
    let secrets: Vec<String> = get("secrets").map(|n| cx.string_list(n, "secrets")).unwrap_or_default();
    for name in &secrets {
        if !crate::words::is_env_name(name) {
            cx.err(key_pos("secrets"), format!("secret \"{name}\" must be an environment variable's name (letters, digits and _, not starting with a digit), e.g. DEPLOY_KEY"));
        }
    }
    let budget = get("budget").map(|n| budget(&mut cx, n, action.as_ref().map(Action::agent)));
    // `stall_timeout:` — `0` turns it off; agents get the default, commands none unless set.
    let stall = get("stall_timeout").map(|n| match n {
        Node::Scalar { value, .. } if value.trim() == "0" => None,
        n => cx.duration(n, "stall_timeout"),
    });
    let cwd = get("cwd").and_then(|n| cx.string(n, "cwd")).map(|c| folder_path(&c));
    let env = get("env").map(|n| cx.string_map(n, "env")).unwrap_or_default();
    for k in env.keys() {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            cx.err(key_pos("env"), format!("invalid environment variable name \"{k}\""));
        }
    }
    if let Some(Action::Agent { agent, .. }) = &action {
        for k in env.keys() {
            if let Some(why) = rules::refused_env(*agent, k) {
                cx.err(key_pos("env"), why);
            }
        }
    }
    let variables = get("variables").map(|n| cx.string_map(n, "variables")).unwrap_or_default();

    let account = match (get("account"), get("accounts")) {
        (Some(_), Some(_)) => {
            cx.err(key_pos("accounts"), "give either `account` (pin one) or `accounts` (a failover pool), not both");
            AccountChoice::Any
        }
        (Some(n), None) => cx.string(n, "account").map(AccountChoice::Pinned).unwrap_or(AccountChoice::Any),
        (None, Some(n)) => {
            let list = cx.string_list(n, "accounts");
            if list.is_empty() {
                cx.err(n.pos(), "`accounts` is an empty list");
            }
            AccountChoice::Pool(list)
        }
        (None, None) => AccountChoice::Any,
    };
    if matches!(action, Some(Action::Command { .. })) && !matches!(account, AccountChoice::Any) {
        cx.err(key_pos(if fields.contains_key("account") { "account" } else { "accounts" }), "accounts only apply to agent routines");
    }

    // `catchup: true | false | <duration>` (a duration: how late a slot may be made up).
    let (catchup, catchup_within) = match get("catchup") {
        None => (true, None),
        Some(n @ Node::Scalar { value, quoted: false, .. }) if value.eq_ignore_ascii_case("true") || value.eq_ignore_ascii_case("false") => {
            (cx.boolean(n, "catchup").unwrap_or(true), None)
        }
        Some(n) => match cx.duration(n, "catchup") {
            Some(d) => (true, Some(d)),
            None => (true, None),
        },
    };
    let enabled = get("enabled").and_then(|n| cx.boolean(n, "enabled")).unwrap_or(true);
    let notify_missed = get("notify_missed").and_then(|n| cx.boolean(n, "notify_missed"));
    let ping = get("ping").and_then(|n| Some((n, cx.string(n, "ping")?))).and_then(|(n, url)| match ping_url(url.trim()) {
        Ok(url) => Some(url),
        Err(msg) => {
            cx.err(n.pos(), msg);
            None
        }
    });
    let notify = get("notify").and_then(|n| {
        let s = cx.string(n, "notify")?;
        match s.as_str() {
            "always" => Some(NotifyPolicy::Always),
            "failures" => Some(NotifyPolicy::Failures),
            "never" => Some(NotifyPolicy::Never),
            other => {
                cx.err(n.pos(), format!("unknown notify policy \"{other}\" (expected always, failures or never)"));
                None
            }
        }
    });
    let devices = get("devices").map(|n| cx.string_list(n, "devices")).unwrap_or_default();
    let webhooks = get("webhooks").map(|n| cx.string_list(n, "webhooks")).unwrap_or_default();
    let workspace = workspace(&mut cx, &get, &key_pos, cwd.as_deref(), get("cwd").map(Node::pos));
    let placement = placement(&mut cx, &get, &key_pos);
    if placement.is_some() && get("devices").is_none() {
        // A routines folder synced between machines (agents-cli's way) fires it on each of them.
        let key = ["host", "hosts", "hostStrategy"].into_iter().find(|k| fields.contains_key(k)).unwrap_or("host");
        cx.warn(key_pos(key), "no `devices:`: every machine that reads this file fires it (and sends the run over SSH); list the machine that should, e.g. `devices: [laptop]`");
    }
    if placement.is_some() {
        if get("cwd").is_some() {
            cx.err(key_pos("cwd"), "`cwd` is a directory on this machine; a run on a host works in `remote_cwd:` (a path there, `~` is its home)");
        }
        if workspace != Workspace::Cwd {
            cx.err(key_pos("workspace"), "`workspace: worktree` makes a worktree on this machine; it cannot be used with `host:`");
        }
        // An agent that reads its tool rules from a file beside the run (Gemini CLI's policy)
        // has them only on this machine.
        let only_here = action.as_ref().and_then(|a| crate::agents::driver(a.agent()).tool_rules_only_here());
        if let Some(why) = only_here.filter(|_| guard.has_tool_rules()) {
            let pos = if guard.allow_tools.is_some() { guard_pos.allow_tools } else { guard_pos.deny_tools };
            cx.err(pos, why);
        }
    }

    let retry = retry_policy(&mut cx, &get);
    let overlap = get("overlap")
        .and_then(|n| {
            let word = cx.string(n, "overlap")?;
            let parsed = Overlap::parse(word.trim());
            if parsed.is_none() {
                cx.err(n.pos(), format!("unknown overlap \"{word}\" (expected skip, queue or replace)"));
            }
            parsed
        })
        .unwrap_or(Overlap::Skip);

    match action {
        Some(action) if cx.errors.is_empty() => {
            let notify = notify.unwrap_or_else(|| NotifyPolicy::default_for(action.agent()));
            let is_command = action.agent() == Agent::Command;
            let notify_missed = notify_missed.unwrap_or(action.agent() != Agent::Command);
            Ok(Routine {
                name,
                file: file.to_path_buf(),
                description,
                schedule,
                trigger,
                timezone,
                at,
                end_at,
                action,
                timeout: timeout.unwrap_or(Routine::DEFAULT_TIMEOUT),
                cwd,
                env,
                account,
                catchup,
                catchup_within,
                notify,
                enabled,
                variables,
                devices,
                webhooks,
                workspace,
                placement,
                retry,
                overlap,
                notify_missed,
                ping,
                run_once,
                secrets,
                stall_timeout: stall.unwrap_or((!is_command).then_some(Routine::DEFAULT_STALL)),
                budget,
                version,
                program: None,
                timeout_given: timeout.is_some(),
                warnings: cx.into_errors().1,
            })
        }
        _ => {
            Err(invalid(name, cx.into_errors()))
        }
    }
}

/// A `ping:` URL: http(s), with a host, nothing a URL cannot hold; kept without a trailing `/`
/// (the events are appended as `/start`, `/fail`, `/<code>`).
fn ping_url(url: &str) -> Result<String, String> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
    match (rest, host) {
        (None, _) => Err(format!("`ping` must be an http(s) URL such as https://hc-ping.com/<uuid> (found \"{url}\")")),
        (_, Some("")) => Err(format!("`ping: {url}` has no host")),
        _ if url.chars().any(|c| c.is_whitespace() || c.is_control()) => Err("`ping` must not contain spaces".to_string()),
        _ if url.contains(['?', '#']) => Err("`ping` takes a plain URL (no `?` or `#`): the events are added to its path".to_string()),
        _ => Ok(url.trim_end_matches('/').to_string()),
    }
}

/// The longest `jitter:`.
const MAX_JITTER: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// `retries` (0–10), `retry_backoff` (at most 1h) and `max_wait` (at most 7 days).
fn retry_policy<'n>(cx: &mut Cx<'_>, get: &dyn Fn(&str) -> Option<&'n Node>) -> RetryPolicy {
    let mut policy = RetryPolicy::default();
    if let Some(node) = get("retries") {
        let text = cx.string(node, "retries").unwrap_or_default();
        match text.trim().parse::<u32>() {
            Ok(n) if n <= RetryPolicy::MAX_RETRIES => policy.retries = Some(n),
            Ok(n) => cx.err(node.pos(), format!("`retries: {n}` is more than {}; a run that fails that often needs a look, not more tries", RetryPolicy::MAX_RETRIES)),
            Err(_) => cx.err(node.pos(), format!("`retries` must be a whole number from 0 to {}, found \"{text}\"", RetryPolicy::MAX_RETRIES)),
        }
    }
    if let Some(d) = get("retry_backoff").and_then(|n| cx.duration(n, "retry_backoff").map(|d| (n, d))) {
        if d.1 > RetryPolicy::MAX_BACKOFF {
            cx.err(d.0.pos(), "`retry_backoff` is at most 1h (backoffs double up to 1h)");
        } else {
            policy.backoff = d.1;
        }
    }
    if let Some(d) = get("max_wait").and_then(|n| cx.duration(n, "max_wait")) {
        policy.max_wait = d;
    }
    policy
}

/// `workspace:` (`cwd` or `worktree`) with its `base:` and `push:`; a worktree needs `cwd` in a
/// git repository (looked for as a `.git` in it or above — no process is started to validate).
fn workspace<'n>(
    cx: &mut Cx<'_>,
    get: &dyn Fn(&str) -> Option<&'n Node>,
    key_pos: &dyn Fn(&str) -> Pos,
    cwd: Option<&Path>,
    cwd_pos: Option<Pos>,
) -> Workspace {
    let kind = get("workspace").and_then(|n| {
        let s = cx.string(n, "workspace")?;
        match s.as_str() {
            "cwd" => Some(false),
            "worktree" => Some(true),
            other => {
                cx.err(n.pos(), format!("unknown workspace \"{other}\" (expected cwd — run in `cwd` itself — or worktree — a git worktree of its own per run)"));
                None
            }
        }
    });
    let base = get("base").and_then(|n| cx.string(n, "base"));
    let push = get("push").and_then(|n| cx.string(n, "push"));
    for (key, value) in [("base", &base), ("push", &push)] {
        let Some(value) = value else { continue };
        if kind != Some(true) {
            cx.err(key_pos(key), format!("`{key}` only applies to `workspace: worktree`"));
        } else if value.is_empty() || value.starts_with('-') || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
            let pos = get(key).map(Node::pos).unwrap_or(key_pos(key));
            cx.err(pos, format!("`{key}` must be a {} name (no spaces, not starting with '-')", if key == "base" { "branch" } else { "remote" }));
        }
    }
    if kind != Some(true) {
        return Workspace::Cwd;
    }
    let at = get("workspace").map(Node::pos).unwrap_or(key_pos("workspace"));
    match cwd {
        None => cx.err(at, "`workspace: worktree` needs `cwd:` — a directory in the git repository to make worktrees of"),
        Some(dir) if !dir.is_dir() => cx.err(cwd_pos.unwrap_or(at), format!("`workspace: worktree` needs `cwd` in a git repository; {} does not exist", dir.display())),
        Some(dir) if crate::git::find_repo_root(dir).is_none() => cx.err(
            cwd_pos.unwrap_or(at),
            format!("`workspace: worktree` needs `cwd` in a git repository; {} is not in one (no .git in it or above)", dir.display()),
        ),
        Some(_) => {}
    }
    Workspace::Worktree { base, push }
}

/// `host:` or `hosts:`, `remote_cwd:` (agents-cli's `remoteCwd:` too) and `hostStrategy:`
/// (`local` or `host`; agents-cli's `fleet` and `cloud` are refused with what to use instead).
fn placement<'n>(cx: &mut Cx<'_>, get: &dyn Fn(&str) -> Option<&'n Node>, key_pos: &dyn Fn(&str) -> Pos) -> Option<Placement> {
    let hosts = match (get("host"), get("hosts")) {
        (Some(_), Some(_)) => {
            cx.err(key_pos("hosts"), "give either `host` (one machine) or `hosts` (the first reachable of several), not both");
            Vec::new()
        }
        (Some(n), None) => cx.string(n, "host").into_iter().map(|h| (h, n.pos())).collect(),
        (None, Some(n)) => {
            let list: Vec<(String, Pos)> = match n {
                Node::Seq { items, .. } => items.iter().filter_map(|i| cx.string(i, "hosts").map(|h| (h, i.pos()))).collect(),
                other => cx.string(other, "hosts").into_iter().map(|h| (h, other.pos())).collect(),
            };
            if list.is_empty() {
                cx.err(n.pos(), "`hosts` is an empty list");
            }
            list
        }
        (None, None) => Vec::new(),
    };
    for (host, pos) in &hosts {
        // A word ssh takes as a destination, never as an option.
        if host.is_empty() || host.starts_with('-') || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            cx.err(*pos, format!("\"{host}\" is not an SSH host: give a name or alias from your ssh config, or user@host (no spaces, not starting with '-')"));
        }
    }
    let remote_cwd = match (get("remote_cwd"), get("remoteCwd")) {
        (Some(_), Some(_)) => {
            cx.err(key_pos("remoteCwd"), "`remote_cwd` is given twice (as `remote_cwd` and `remoteCwd`)");
            None
        }
        (Some(n), None) => cx.string(n, "remote_cwd"),
        (None, Some(n)) => cx.string(n, "remoteCwd"),
        (None, None) => None,
    };
    if let Some(strategy) = get("hostStrategy") {
        match cx.string(strategy, "hostStrategy").as_deref() {
            Some("host") if hosts.is_empty() => cx.err(strategy.pos(), "`hostStrategy: host` needs `host:` (an SSH host or alias) or `hosts:` (several)"),
            // agents-cli runs such a routine here: so does Nightshift, saying so.
            Some("local") if !hosts.is_empty() => {
                let named: Vec<&str> = hosts.iter().map(|(h, _)| h.as_str()).collect();
                cx.warn(strategy.pos(), format!("`hostStrategy: local` runs it on this machine: `host: {}` is not used (as agents-cli does); remove one of them to say which you mean", named.join(", ")));
                return None;
            }
            Some("host" | "local") | None => {}
            // Any of the machines nightshift.toml lists (`[hosts.<name>]`, filled in with the
            // settings): the one with the fewest runs going, else the next that answers.
            Some("fleet") if !hosts.is_empty() => {
                cx.err(strategy.pos(), "`hostStrategy: fleet` chooses among the machines in nightshift.toml's `[hosts.<name>]`; remove `host:`/`hosts:`, or use `hostStrategy: host` to keep to these")
            }
            Some("fleet") => return Some(Placement { hosts: Vec::new(), remote_cwd, fleet: true }),
            Some("cloud") => cx.err(strategy.pos(), "`hostStrategy: cloud` is not supported: Nightshift runs on your own machines — use `host:` to place the run on one of them over SSH"),
            Some(other) => cx.err(strategy.pos(), format!("unknown hostStrategy \"{other}\" (expected local, host or fleet)")),
        }
    }
    if hosts.is_empty() {
        if remote_cwd.is_some() {
            let key = if get("remote_cwd").is_some() { "remote_cwd" } else { "remoteCwd" };
            cx.err(key_pos(key), format!("`{key}` only applies to a routine placed on another machine with `host:`"));
        }
        return None;
    }
    Some(Placement { hosts: hosts.into_iter().map(|(h, _)| h).collect(), remote_cwd, fleet: false })
}

struct Cx<'a> {
    display: &'a str,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
    /// Problems past [`MAX_PROBLEMS`], counted but not kept.
    more: usize,
}

/// At most this many problems are listed per file; the rest are counted ("… and 1203 more").
pub const MAX_PROBLEMS: usize = 50;
/// Keys longer than this are shown cut, with no "did you mean" (no key is longer than 20).
const MAX_KEY_SHOWN: usize = 64;

impl Cx<'_> {
    fn err(&mut self, pos: Pos, message: impl Into<String>) {
        if self.errors.len() >= MAX_PROBLEMS {
            self.more += 1;
            return;
        }
        self.errors.push(Diagnostic::error(self.display, pos.line, pos.col, message));
    }

    /// Something the routine runs without, or takes another way than written: said, not blocking.
    fn warn(&mut self, pos: Pos, message: impl Into<String>) {
        if self.warnings.len() < MAX_PROBLEMS {
            self.warnings.push(Diagnostic { severity: super::Severity::Warning, ..Diagnostic::error(self.display, pos.line, pos.col, message) });
        }
    }

    /// Like `err`, building the message only when it will be listed (a suggestion costs time).
    fn err_with(&mut self, pos: Pos, message: impl FnOnce() -> String) {
        if self.errors.len() >= MAX_PROBLEMS {
            self.more += 1;
        } else {
            self.err(pos, message());
        }
    }

    /// The errors, in file order, with the count of those not listed; and the warnings.
    fn into_errors(mut self) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
        self.errors.sort_by_key(|d| (d.line, d.col));
        self.warnings.sort_by_key(|d| (d.line, d.col));
        if self.more > 0 {
            let last = self.errors.last().map(|d| (d.line, d.col)).unwrap_or((1, 1));
            let message = format!("… and {} more problems", self.more);
            self.errors.push(Diagnostic::error(self.display, last.0, last.1, message));
        }
        (self.errors, self.warnings)
    }

    fn string(&mut self, node: &Node, key: &str) -> Option<String> {
        match node {
            Node::Scalar { value, .. } => Some(value.clone()),
            other => {
                self.err(other.pos(), format!("`{key}` must be a text value, found {}", other.kind()));
                None
            }
        }
    }

    fn boolean(&mut self, node: &Node, key: &str) -> Option<bool> {
        match node {
            Node::Scalar { value, quoted: false, .. } if value.eq_ignore_ascii_case("true") => Some(true),
            Node::Scalar { value, quoted: false, .. } if value.eq_ignore_ascii_case("false") => Some(false),
            other => {
                self.err(other.pos(), format!("`{key}` must be true or false"));
                None
            }
        }
    }

    fn duration(&mut self, node: &Node, key: &str) -> Option<std::time::Duration> {
        let text = self.string(node, key)?;
        if text.trim().chars().all(|c| c.is_ascii_digit()) {
            self.err(node.pos(), format!("`{key}: {text}` has no unit; write e.g. {text}s or {text}m"));
            return None;
        }
        match humantime::parse_duration(text.trim()) {
            Ok(d) if d.is_zero() => {
                self.err(node.pos(), format!("`{key}` must be longer than zero"));
                None
            }
            // A week is plenty for an unattended run, and keeps every deadline computable.
            Ok(d) if d > MAX_DURATION => {
                self.err(node.pos(), format!("`{key}: {text}` is longer than the longest allowed, 7 days"));
                None
            }
            Ok(d) => Some(d),
            Err(e) => {
                self.err(node.pos(), format!("invalid duration \"{text}\" for `{key}`: {e} (examples: 90s, 10m, 1h30m)"));
                None
            }
        }
    }

    fn timestamp(&mut self, node: &Node, key: &str, tz: Tz) -> Option<DateTime<Utc>> {
        let text = self.string(node, key)?;
        if let Ok(t) = DateTime::parse_from_rfc3339(text.trim()) {
            return Some(t.with_timezone(&Utc));
        }
        for fmt in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"] {
            if let Ok(naive) = NaiveDateTime::parse_from_str(text.trim(), fmt) {
                return match tz.from_local_datetime(&naive).earliest() {
                    Some(t) => Some(t.with_timezone(&Utc)),
                    None => {
                        self.err(node.pos(), format!("`{key}: {text}` does not exist in {} (a daylight-saving gap)", tz.name()));
                        None
                    }
                };
            }
        }
        self.err(node.pos(), format!("invalid time \"{text}\" for `{key}` (expected e.g. 2026-12-01T09:00:00+01:00 or 2026-12-01 09:00)"));
        None
    }

    fn string_map(&mut self, node: &Node, key: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        match node {
            Node::Map { entries, .. } => {
                for (k, v) in entries {
                    match (k, v) {
                        (Node::Scalar { value: k, .. }, Node::Scalar { value: v, .. }) => {
                            out.insert(k.clone(), v.clone());
                        }
                        (_, v) => self.err(v.pos(), format!("values in `{key}` must be text, found {}", v.kind())),
                    }
                }
            }
            other => self.err(other.pos(), format!("`{key}` must be a mapping (KEY: value), found {}", other.kind())),
        }
        out
    }

    /// The entries of mapping `key` (`node`) whose keys are among `allowed` — each with its key and
    /// where the key is written; any other key is an error naming the allowed ones, and a value
    /// that is no mapping an error showing `example`.
    fn sub_keys<'n>(&mut self, node: &'n Node, key: &str, allowed: &[&'static str], example: &str) -> Vec<(&'static str, &'n Node, Pos)> {
        let Node::Map { entries, .. } = node else {
            self.err(node.pos(), format!("`{key}` must be a mapping ({example}), found {}", node.kind()));
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, v) in entries {
            match k {
                Node::Scalar { value, .. } => match allowed.iter().find(|a| **a == value.as_str()) {
                    Some(known) => out.push((*known, v, k.pos())),
                    None => {
                        let names: Vec<String> = allowed.iter().map(|a| format!("`{key}.{a}`")).collect();
                        let expected = match names.split_last() {
                            Some((last, [])) => last.clone(),
                            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                            None => String::new(),
                        };
                        self.err(k.pos(), format!("unknown key `{key}.{value}` (expected {expected})"));
                    }
                },
                other => self.err(other.pos(), "keys must be plain words"),
            }
        }
        out
    }

    fn string_list(&mut self, node: &Node, key: &str) -> Vec<String> {
        match node {
            Node::Seq { items, .. } => items.iter().filter_map(|i| self.string(i, key)).collect(),
            Node::Scalar { value, .. } => vec![value.clone()],
            other => {
                self.err(other.pos(), format!("`{key}` must be a list, found {}", other.kind()));
                Vec::new()
            }
        }
    }
}

/// `budget: {run: 2.00, day: 10, month: 100}` (USD). Spend is what the agent reports: only Claude
/// Code reports its cost, so for the others a run cap is an error (nothing could enforce it) and
/// a day or month cap a warning (their runs count nothing toward it).
fn budget(cx: &mut Cx<'_>, node: &Node, agent: Option<Agent>) -> crate::budget::Budget {
    let mut b = crate::budget::Budget::default();
    // (An agent the file gets wrong is reported already: no second word about it here.)
    // Claude Code caps a run itself (`--max-budget-usd`); OpenCode reports each step's cost, which
    // counts toward a day or month, but has no cap of its own.
    let reports_cost = agent.is_none_or(|a| crate::agents::driver(a).reports_cost());
    let caps_a_run = agent.is_none_or(|a| crate::agents::driver(a).caps_run_cost());
    let who = match agent {
        Some(Agent::Command) | None => "a command".to_string(),
        Some(a) => a.as_str().to_string(),
    };
    for (key, v, at) in cx.sub_keys(node, "budget", &["run", "day", "month"], "budget: {run: 2.00, day: 10, month: 100}, in US dollars") {
        let slot = match key {
            "run" => &mut b.run,
            "day" => &mut b.day,
            _ => &mut b.month,
        };
        let amount = match v {
            Node::Scalar { value, quoted: false, .. } => value.trim().trim_start_matches('$').parse::<f64>().ok().filter(|a| a.is_finite() && *a >= 0.0),
            _ => None,
        };
        match amount {
            None => cx.err(v.pos(), format!("`budget.{key}` must be an amount in US dollars, such as 2.50")),
            Some(_) if !caps_a_run && key == "run" => {
                cx.err(at, format!("`budget.run` cannot be enforced for {who}: nothing stops it at a cost while it runs (only Claude Code does)"))
            }
            Some(a) => {
                if !reports_cost {
                    cx.warn(at, format!("`budget.{key}` counts only reported costs, and {who} reports none: its runs add nothing to it"));
                }
                *slot = Some(a);
            }
        }
    }
    b
}

/// A folder as a routine writes it (`cwd`, `allow.dirs`): `~` is the user's home, and a relative
/// path is under it too, as agents-cli takes it without a project.
fn folder_path(text: &str) -> PathBuf {
    let path = crate::fsutil::expand_tilde(text);
    match path.is_relative() {
        true => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(path),
        false => path,
    }
}

/// Where `allow.tools` and `deny.tools` are written, for a refusal at its place.
#[derive(Default)]
struct GuardPos {
    allow_tools: Pos,
    deny_tools: Pos,
}

/// `allow: {tools: [...], dirs: [...]}`, `deny: {tools: [...]}`, `on_denial: fail | record`.
/// A folder must exist (`~` is the home; a relative one is under the home folder too).
fn guard<'n>(cx: &mut Cx<'_>, get: &dyn Fn(&str) -> Option<&'n Node>) -> (Guard, GuardPos) {
    let mut guard = Guard::default();
    let mut pos = GuardPos::default();
    let example = "tools: [Read, Grep]";
    for (sub, node, at) in get("allow").map(|n| cx.sub_keys(n, "allow", &["tools", "dirs"], &format!("allow: {{{example}}}"))).unwrap_or_default() {
        let list = cx.string_list(node, &format!("allow.{sub}"));
        if sub == "tools" {
            pos.allow_tools = at;
            guard.allow_tools = Some(list);
        } else {
            for dir in list {
                let path = folder_path(&dir);
                if !path.is_dir() {
                    cx.err(node.pos(), format!("`allow.dirs`: {} is not a folder", path.display()));
                }
                guard.allow_dirs.push(path);
            }
        }
    }
    for (_, node, at) in get("deny").map(|n| cx.sub_keys(n, "deny", &["tools"], &format!("deny: {{{example}}}"))).unwrap_or_default() {
        pos.deny_tools = at;
        guard.deny_tools = cx.string_list(node, "deny.tools");
    }
    if let Some(node) = get("on_denial") {
        match cx.string(node, "on_denial").as_deref().map(str::trim) {
            Some("fail") => guard.fail_on_denial = true,
            Some("record") | None => {}
            Some(other) => cx.err(node.pos(), format!("unknown on_denial \"{other}\" (expected fail — a refused tool call fails the run — or record)")),
        }
    }
    (guard, pos)
}

/// A `trigger:` block, every field checked where it stands: its `type` and `event`, the filters
/// that type has, the shape of each value.
fn event_trigger(cx: &mut Cx<'_>, node: &Node) -> Option<super::trigger::EventTrigger> {
    use crate::incoming::{github, linear, Source};
    const KEYS: [&str; 9] = ["type", "event", "repo", "branch", "action", "label", "teamKey", "stateTo", "stateFrom"];
    let example = "trigger: {type: github_event, event: pull_request, repo: acme/app}";
    let fields = cx.sub_keys(node, "trigger", &KEYS, example);
    if !matches!(node, Node::Map { .. }) {
        return None;
    }
    let mut values: Vec<(&'static str, String, Pos)> = Vec::new();
    for (key, value, _) in &fields {
        if let Some(v) = cx.string(value, &format!("trigger.{key}")) {
            values.push((key, v.trim().to_string(), value.pos()));
        }
    }
    let get = |k: &str| values.iter().find(|(key, _, _)| *key == k).map(|(_, v, p)| (v.clone(), *p));
    let Some((kind, kind_at)) = get("type") else {
        cx.err(node.pos(), format!("`trigger` needs a `type`: github_event or linear_event ({example})"));
        return None;
    };
    let (source, events): (Source, &[&str]) = match kind.as_str() {
        "github_event" => (Source::GitHub, &github::EVENTS),
        "linear_event" => (Source::Linear, &linear::EVENTS),
        other => {
            let near = nearest(other, &["github_event", "linear_event"]).map(|n| format!("; did you mean \"{n}\"?")).unwrap_or_default();
            cx.err(kind_at, format!("unknown trigger type \"{other}\" (expected github_event or linear_event){near}"));
            return None;
        }
    };
    let Some((event, event_at)) = get("event") else {
        cx.err(kind_at, format!("`trigger` needs an `event`: one of {}", events.join(", ")));
        return None;
    };
    if !events.contains(&event.as_str()) {
        let near = nearest(&event, events).map(|n| format!("; did you mean \"{n}\"?")).unwrap_or_default();
        cx.err(event_at, format!("unknown {kind} event \"{event}\" (expected {}){near}", events.join(", ")));
        return None;
    }
    let mut ok = true;
    let mut refuse = |cx: &mut Cx<'_>, at: Pos, why: String| {
        cx.err(at, why);
        ok = false;
    };
    let github_only = ["repo", "branch"];
    let linear_only = ["teamKey", "stateTo", "stateFrom"];
    for (key, _, at) in &values {
        if source == Source::Linear && github_only.contains(key) {
            refuse(cx, *at, format!("`trigger.{key}` is a GitHub filter; a linear_event has `teamKey`, `action`, `label`, `stateTo` and `stateFrom`"));
        }
        if source == Source::GitHub && linear_only.contains(key) {
            refuse(cx, *at, format!("`trigger.{key}` is a Linear filter; a github_event has `repo`, `branch`, `action` and `label`"));
        }
    }
    if let Some((repo, at)) = get("repo") {
        let part = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !repo.split_once('/').is_some_and(|(o, n)| part(o) && part(n)) {
            refuse(cx, at, format!("`trigger.repo` is owner/name, such as acme/app (found \"{repo}\")"));
        }
    }
    if let Some((action, at)) = get("action") {
        match source {
            Source::GitHub if event == "push" => refuse(cx, at, "a push has no action (GitHub sends none): leave `trigger.action` out".into()),
            Source::GitHub if action.is_empty() || !action.chars().all(|c| c.is_ascii_lowercase() || c == '_') => {
                refuse(cx, at, format!("`trigger.action` is GitHub's action word, such as opened, synchronize, labeled, created or completed (found \"{action}\")"))
            }
            Source::Linear if !linear::ACTIONS.contains(&action.as_str()) => refuse(cx, at, format!("unknown Linear action \"{action}\" (expected {})", linear::ACTIONS.join(", "))),
            _ => {}
        }
    }
    if let Some((_, at)) = get("branch") {
        if event == "issue_comment" {
            refuse(cx, at, "an issue_comment has no branch (GitHub does not send the pull request's): leave `trigger.branch` out".into());
        }
    }
    if let Some((_, at)) = get("label") {
        let has_labels = matches!((source, event.as_str()), (Source::GitHub, "pull_request" | "issue_comment") | (Source::Linear, "Issue" | "IssueLabel"));
        if !has_labels {
            refuse(cx, at, format!("a {event} event carries no labels: leave `trigger.label` out"));
        }
    }
    for key in ["stateTo", "stateFrom"] {
        if let (Some((_, at)), true) = (get(key), event != "Issue") {
            refuse(cx, at, format!("`trigger.{key}` is an Issue's workflow state; a {event} has none"));
        }
    }
    if let Some((team, at)) = get("teamKey") {
        if team.is_empty() || !team.chars().all(|c| c.is_ascii_alphanumeric()) {
            refuse(cx, at, format!("`trigger.teamKey` is the team's key, such as ENG (found \"{team}\")"));
        }
    }
    let opt = |k: &str| get(k).map(|(v, _)| v).filter(|v| !v.is_empty());
    ok.then(|| super::trigger::EventTrigger {
        source,
        event,
        repo: opt("repo"),
        branch: opt("branch"),
        action: opt("action"),
        label: opt("label"),
        team_key: opt("teamKey"),
        state_to: opt("stateTo"),
        state_from: opt("stateFrom"),
    })
}

fn unknown_key(key: &str, known: &[&str], prefix: &str) -> String {
    if key.chars().count() > MAX_KEY_SHOWN {
        let cut: String = key.chars().take(MAX_KEY_SHOWN).collect();
        return format!("unknown key `{prefix}{cut}…` ({} characters long)", key.chars().count());
    }
    match nearest(key, known) {
        Some(near) => format!("unknown key `{prefix}{key}`; did you mean `{prefix}{near}`?"),
        None => format!("unknown key `{prefix}{key}` (known keys: {})", known.join(", ")),
    }
}

/// The known word closest to `word`, if it is close enough to be a likely typo.
pub fn nearest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (levenshtein(word, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
