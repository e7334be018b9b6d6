//! What a routine runs: an agent (`agent`, `prompt`, `mode`, `model`, `config`, `effort`, `args`,
//! `allow`, `deny`, `on_denial`) — what its CLI cannot take, the agent says — or a `command`.

use super::cx::{nearest, Cx};
use super::Fields;
use super::super::yaml::{Node, Pos};
use super::super::{Action, Agent, Effort, Guard, Mode};
use crate::agents::rules;

/// The routine's action (`None` when the file gets it wrong: said already), its guard and where
/// the guard's fields are written.
pub(super) fn action(cx: &mut Cx<'_>, f: &Fields<'_>) -> (Option<Action>, Guard, GuardPos) {
    // What to run: exactly one of agent/command.
    let mode = f.get("mode").and_then(|n| {
        let s = cx.string(n, "mode")?;
        let mode = Mode::parse(&s);
        if mode.is_none() {
            cx.err(n.pos(), format!("unknown mode \"{s}\" (expected plan, edit, auto or skip)"));
        }
        mode
    });
    let mut model = f.get("model").and_then(|n| cx.string(n, "model"));
    // `config.<key>` other than `model`: checked against the agent below.
    let mut settings: Vec<(String, serde_json::Value, Pos)> = Vec::new();
    if let Some(config) = f.get("config") {
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
    let effort = f.get("effort").and_then(|n| {
        let word = cx.string(n, "effort")?;
        let effort = Effort::parse(word.trim());
        if effort.is_none() {
            cx.err(n.pos(), format!("unknown effort \"{word}\" (expected low, medium, high, xhigh, max or auto; agents-cli's fast, default and detailed too)"));
        }
        effort
    });
    // `args:` — each item where it is written, for the check against what Nightshift sets.
    let args: Vec<(String, Pos)> = match f.get("args") {
        Some(Node::Seq { items, .. }) => items.iter().filter_map(|i| cx.string(i, "args").map(|a| (a, i.pos()))).collect(),
        Some(other) => {
            cx.err(other.pos(), format!("`args` must be a list of arguments (args: [--add-dir, ../docs]), found {}", other.kind()));
            Vec::new()
        }
        None => Vec::new(),
    };
    let (guard, guard_pos) = guard(cx, &|k| f.get(k));
    let prompt = f.get("prompt").and_then(|n| cx.string(n, "prompt"));
    let command = f.get("command").and_then(|n| cx.string(n, "command"));
    let agent_node = f.get("agent");
    let action = match (agent_node, command) {
        (Some(_), Some(_)) => {
            cx.err(f.pos("command"), "give either `agent` (with a `prompt`) or `command`, not both");
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
                // An agent that cannot hold a call is asked after its run (the run ends `blocked ·
                // needs_approval`; Approve reruns it with the call allowed) — which needs a rule
                // its CLI can take for that one run.
                if let (Some(_), Some(why)) = (guard.ask, d.no_tool_rules().filter(|_| !d.asks_live())) {
                    cx.err(guard_pos.on_denial, format!("`on_denial: ask` cannot be kept by {}: {why}, so an approval could not allow the one call it was refused; use `on_denial: fail` or `record`", agent.as_str()));
                }
                for (key, _, pos) in &settings {
                    if let Some(why) = rules::refused_config(d, key) {
                        cx.err(*pos, why);
                    } else if let Some(why) = d.config_ignored() {
                        cx.warn(*pos, format!("`config.{key}` is ignored: {why}"));
                    }
                }
                for (arg, pos) in &args {
                    if let Some(why) = rules::refused_arg(d, arg) {
                        cx.err(*pos, format!("`args`: {why}"));
                    }
                }
                // An agent without an effort setting of its own: said, and run at its default.
                if let (Some(why), Some(word)) = (d.no_effort(), effort.filter(|e| e.level().is_some())) {
                    cx.warn(f.pos("effort"), format!("`effort: {}` is ignored: {why}", word.as_str()));
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
                    cx.err(f.pos("agent"), "an agent routine needs a `prompt`: what should the agent do?");
                    None
                }
            }
        }
        (None, Some(command)) => {
            if command.trim().is_empty() {
                cx.err(f.pos("command"), "`command` is empty");
            }
            for (key, _, pos) in &settings {
                cx.warn(*pos, format!("`config.{key}` is ignored: {}", crate::agents::driver(Agent::Command).config_ignored().unwrap_or_default()));
            }
            let guarded = [("allow", f.get("allow").is_some()), ("deny", f.get("deny").is_some()), ("on_denial", f.get("on_denial").is_some())];
            for (key, given) in [("prompt", prompt.is_some()), ("mode", mode.is_some()), ("model", model.is_some()), ("effort", effort.is_some()), ("args", !args.is_empty())].into_iter().chain(guarded) {
                if given {
                    cx.err(f.pos(key), format!("`{key}` only applies to agent routines; this one runs a `command`"));
                }
            }
            Some(Action::Command { command })
        }
    };

    (action, guard, guard_pos)
}

/// Where `allow.tools` and `deny.tools` are written, for a refusal at its place.
#[derive(Default)]
pub(super) struct GuardPos {
    pub(super) allow_tools: Pos,
    pub(super) deny_tools: Pos,
    pub(super) on_denial: Pos,
}

/// `allow: {tools: [...], dirs: [...], hosts: [...]}`, `deny: {tools: [...]}`, `on_denial: fail | record`.
/// A folder that does not exist (yet: it may be a mount) is a warning; a run started while it is
/// missing is `blocked · no_cwd` (`~` is the home; a relative one is under the home folder too).
pub(super) fn guard<'n>(cx: &mut Cx<'_>, get: &dyn Fn(&str) -> Option<&'n Node>) -> (Guard, GuardPos) {
    let mut guard = Guard::default();
    let mut pos = GuardPos::default();
    let example = "tools: [Read, Grep]";
    for (sub, node, at) in get("allow").map(|n| cx.sub_keys(n, "allow", &["tools", "dirs", "hosts"], &format!("allow: {{{example}}}"))).unwrap_or_default() {
        match sub {
            "tools" => {
                pos.allow_tools = at;
                guard.allow_tools = Some(cx.string_list(node, "allow.tools"));
            }
            "hosts" => {
                for (text, at) in cx.string_items(node, "allow.hosts") {
                    match crate::sandbox::check_host(&text) {
                        Ok(host) => guard.allow_hosts.push(host),
                        Err(why) => cx.err(at, why),
                    }
                }
            }
            _ => {
                // A folder a sandboxed run may write: never `/`, `..`, a link or a hidden one.
                let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
                for (dir, at) in cx.string_items(node, "allow.dirs") {
                    let path = match crate::sandbox::check_folder("allow.dirs", &dir, home.as_deref(), true) {
                        Ok(path) => path,
                        Err(why) => {
                            cx.err(at, why);
                            continue;
                        }
                    };
                    if !path.is_dir() {
                        cx.warn(at, format!("`allow.dirs`: {} is not a folder (yet); a run started while it is missing is blocked (no_cwd)", path.display()));
                    }
                    guard.allow_dirs.push(path);
                }
            }
        }
    }
    for (_, node, at) in get("deny").map(|n| cx.sub_keys(n, "deny", &["tools"], &format!("deny: {{{example}}}"))).unwrap_or_default() {
        pos.deny_tools = at;
        guard.deny_tools = cx.string_list(node, "deny.tools");
    }
    if let Some(node) = get("on_denial") {
        pos.on_denial = node.pos();
        match cx.string(node, "on_denial").as_deref().map(str::trim) {
            Some("fail") => guard.fail_on_denial = true,
            Some("ask") => guard.ask = Some(Guard::DEFAULT_ASK),
            Some("record") | None => {}
            Some(other) => cx.err(node.pos(), format!("unknown on_denial \"{other}\" (expected fail — a refused tool call fails the run —, ask — the user is asked, and no answer in time is a refusal — or record)")),
        }
    }
    if let Some(node) = get("ask_timeout") {
        match (cx.duration(node, "ask_timeout"), guard.ask.is_some()) {
            (_, false) => cx.err(node.pos(), "`ask_timeout` is how long `on_denial: ask` waits for an answer; add `on_denial: ask` or remove it".to_string()),
            (Some(d), true) if d.is_zero() || d > Guard::MAX_ASK => cx.err(node.pos(), "`ask_timeout` must be more than 0 and at most 12h (an ask nobody answers is a refusal)".to_string()),
            (Some(d), true) => guard.ask = Some(d),
            (None, true) => {}
        }
    }
    (guard, pos)
}
