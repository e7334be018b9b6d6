//! Turn one routine file into a [`Routine`], collecting every problem with its position — the only
//! definition of a valid routine, which the loader, the editor and the form all run. The fields are
//! read by concern, one module each: [`when`] it runs, what it runs ([`action`]), what a run gets
//! ([`setup`]), where it works ([`place`]) and how it behaves around its runs ([`behaviour`]);
//! [`cx`] is the typed reading every field goes through.

mod action;
mod behaviour;
mod cx;
mod place;
mod sandbox;
mod setup;
mod when;

use super::agents_cli;
use super::yaml::{self, Node, Pos};
use super::{check_name, Agent, Diagnostic, InvalidRoutine, NotifyPolicy, Routine};
pub use crate::words::MAX_DURATION;
use cx::{unknown_key, Cx};
pub use cx::{nearest, MAX_PROBLEMS};
pub(crate) use place::name_this_machine;
use std::collections::BTreeMap;
use std::path::Path;

const KEYS: &[&str] = &[
    "name", "description", "schedule", "timezone", "agent", "command", "prompt", "mode", "model", "config",
    "timeout", "cwd", "env", "account", "accounts", "catchup", "notify", "enabled", "variables", "devices", "at",
    "end_at", "webhooks", "workspace", "base", "push", "host", "hosts", "remote_cwd", "remoteCwd", "hostStrategy",
    "retries", "retry_backoff", "max_wait", "retry_after_work", "overlap", "jitter", "notify_missed", "ping", "run_once", "trigger", "version", "effort", "args", "stall_timeout", "secrets", "allow", "deny", "on_denial", "budget", "sandbox", "sandbox_hide",
    "created_by", "parent_run", "ask_timeout", "on_review", "review_rounds", "review_from",
];

/// A file's keys, each once, by Nightshift's name for it (agents-cli's aliases read as ours).
pub(super) struct Fields<'n> {
    by_key: BTreeMap<&'static str, (&'n Node, &'n Node)>,
}

impl<'n> Fields<'n> {
    /// Index the keys, reporting unknown and duplicate ones.
    fn index(cx: &mut Cx<'_>, entries: &'n [(Node, Node)]) -> Fields<'n> {
        let mut fields: BTreeMap<&'static str, (&'n Node, &'n Node)> = BTreeMap::new();
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

        Fields { by_key: fields }
    }

    /// The value of `key`, unless it is missing or null.
    pub(super) fn get(&self, key: &str) -> Option<&'n Node> {
        self.by_key.get(key).map(|(_, v)| *v).filter(|v| !v.is_null())
    }

    /// Where `key` is written (the file's start when it is not).
    pub(super) fn pos(&self, key: &str) -> Pos {
        self.by_key.get(key).map(|(key, _)| key.pos()).unwrap_or(Pos { line: 1, col: 1 })
    }

    /// Whether `key` is written at all (null included).
    pub(super) fn has(&self, key: &str) -> bool {
        self.by_key.contains_key(key)
    }
}

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

    let f = Fields::index(&mut cx, entries);

    let name = match f.get("name") {
        Some(node) => cx.string(node, "name").unwrap_or_else(|| stem.clone()),
        None => stem.clone(),
    };
    if let Err(msg) = check_name(&name) {
        let pos = if f.has("name") { f.get("name").map(Node::pos).unwrap_or(f.pos("name")) } else { Pos { line: 1, col: 1 } };
        let hint = if f.has("name") { "" } else { " (the name comes from the file name; set `name:` to choose another)" };
        cx.err(pos, format!("{msg}{hint}"));
    }
    let description = f.get("description").and_then(|n| cx.string(n, "description"));
    // Who wrote it when not a person (`created_by: mcp`), and the run that asked for it.
    let created_by = f.get("created_by").and_then(|n| cx.string(n, "created_by"));
    let parent_run = f.get("parent_run").and_then(|n| cx.string(n, "parent_run"));

    let when::When { timezone, schedule, at, end_at, trigger, version, run_once } = when::when(&mut cx, &f, &name);
    let (action, guard, guard_pos) = action::action(&mut cx, &f);
    let setup::Setup { timeout, secrets, budget, stall, cwd, env, variables, account } = setup::setup(&mut cx, &f, action.as_ref());
    let (workspace, placement) = place::place(&mut cx, &f, cwd.as_deref(), action.as_ref(), &guard, &guard_pos);
    let sandbox = sandbox::sandbox(&mut cx, &f);
    let behaviour::Behaviour { catchup, catchup_within, enabled, notify_missed, ping, notify, devices, webhooks, retry, overlap } = behaviour::behaviour(&mut cx, &f);

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
                sandbox,
                notify_missed,
                ping,
                run_once,
                secrets,
                stall_timeout: stall.unwrap_or((!is_command).then_some(Routine::DEFAULT_STALL)),
                budget,
                version,
                program: None,
                timeout_given: timeout.is_some(),
                created_by,
                parent_run,
                warnings: cx.into_errors().1,
            })
        }
        _ => {
            Err(invalid(name, cx.into_errors()))
        }
    }
}

