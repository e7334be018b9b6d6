//! Where a routine's runs work: `workspace` (`cwd` or a `worktree`, with `base` and `push`) and
//! `host`/`hosts`/`remote_cwd`/`hostStrategy` (another machine over SSH), each checked against the
//! other and against the action.

use super::action::GuardPos;
use super::cx::Cx;
use super::Fields;
use super::super::yaml::{Node, Pos};
use super::super::{Action, Guard, Placement, Workspace};
use std::path::Path;

/// What a routine on a host without `devices:` is told. The parser knows no settings, so the fix
/// names [`THIS_MACHINE`]; the loader, which knows this machine's name, puts it in its place.
const NO_DEVICES: &str = "a routine on a host needs `devices:`: without it every machine that reads this file fires it and sends the run over SSH (a routines folder synced between two machines runs it twice); add the machine that sends it, `devices: [this-machine]`";
/// The stand-in for this machine's name in [`NO_DEVICES`].
const THIS_MACHINE: &str = "this-machine";

/// `d` with this machine's name in the fix when it is [`NO_DEVICES`].
pub(crate) fn name_this_machine(d: &mut crate::routine::Diagnostic, device: &str) {
    if d.message == NO_DEVICES {
        d.message = NO_DEVICES.replace(THIS_MACHINE, device);
    }
}

pub(super) fn place(cx: &mut Cx<'_>, f: &Fields<'_>, cwd: Option<&Path>, action: Option<&Action>, guard: &Guard, guard_pos: &GuardPos) -> (Workspace, Option<Placement>) {
    let workspace = workspace(cx, &|k| f.get(k), &|k| f.pos(k), cwd, f.get("cwd").map(Node::pos));
    let placement = placement(cx, &|k| f.get(k), &|k| f.pos(k));
    if placement.is_some() && f.get("devices").is_none() {
        // A routines folder synced between machines (agents-cli's way) would fire it on each of
        // them; agents-cli refuses it too.
        let key = ["host", "hosts", "hostStrategy"].into_iter().find(|k| f.has(k)).unwrap_or("host");
        cx.err(f.pos(key), NO_DEVICES);
    }
    if placement.is_some() {
        if f.get("cwd").is_some() {
            cx.err(f.pos("cwd"), "`cwd` is a directory on this machine; a run on a host works in `remote_cwd:` (a path there, `~` is its home)");
        }
        if workspace != Workspace::Cwd {
            cx.err(f.pos("workspace"), "`workspace: worktree` makes a worktree on this machine; it cannot be used with `host:`");
        }
        // An agent that reads its tool rules from a file beside the run (Gemini CLI's policy)
        // has them only on this machine.
        let only_here = action.and_then(|a| crate::agents::driver(a.agent()).tool_rules_only_here());
        if let Some(why) = only_here.filter(|_| guard.has_tool_rules()) {
            let pos = if guard.allow_tools.is_some() { guard_pos.allow_tools } else { guard_pos.deny_tools };
            cx.err(pos, why);
        }
    }

    (workspace, placement)
}

/// `workspace:` (`cwd` or `worktree`) with its `base:` and `push:`; a worktree needs `cwd` in a
/// git repository (looked for as a `.git` in it or above — no process is started to validate).
pub(super) fn workspace<'n>(
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
    let mut push = get("push").map(|n| push_spec(cx, n));
    let review = review_loop(cx, get, key_pos, push.as_ref());
    if let Some(spec) = push.as_mut() {
        spec.review = review;
    }
    // (A mapping without `remote` was said to need one.)
    let remote = push.as_ref().map(|p| p.remote.clone()).filter(|r| !r.is_empty() || matches!(get("push"), Some(Node::Scalar { .. })));
    for (key, value) in [("base", &base), ("push", &remote)] {
        let Some(value) = value else { continue };
        if kind != Some(true) {
            cx.err(key_pos(key), format!("`{key}` only applies to `workspace: worktree`"));
        } else if value.is_empty() || value.starts_with('-') || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
            let pos = get(key).map(Node::pos).unwrap_or(key_pos(key));
            cx.err(pos, format!("`{key}` must be a {} name (no spaces, not starting with '-')", if key == "base" { "branch" } else { "remote" }));
        }
    }
    // A folder that is not there yet may be a mount that appears later: said now, and a run
    // started while it is missing is blocked (`no_cwd`), never retried.
    let missing = cwd.filter(|dir| !dir.is_dir());
    if let (Some(dir), Some(pos)) = (missing, cwd_pos) {
        cx.warn(pos, format!("`cwd`: {} does not exist (yet); a run started while it is missing is blocked (no_cwd)", dir.display()));
    }
    if kind != Some(true) {
        return Workspace::Cwd;
    }
    let at = get("workspace").map(Node::pos).unwrap_or(key_pos("workspace"));
    match cwd {
        None => cx.err(at, "`workspace: worktree` needs `cwd:` — a directory in the git repository to make worktrees of"),
        Some(dir) if !dir.is_dir() => {}
        Some(dir) if crate::git::find_repo_root(dir).is_none() => cx.err(
            cwd_pos.unwrap_or(at),
            format!("`workspace: worktree` needs `cwd` in a git repository; {} is not in one (no .git in it or above)", dir.display()),
        ),
        Some(_) => {}
    }
    Workspace::Worktree { base, push }
}

/// `push:` — a remote's name, or `{remote, pr, pr_per_run, base, title, labels, reviewers, repo}`.
fn push_spec(cx: &mut Cx<'_>, node: &Node) -> crate::routine::PushSpec {
    use crate::routine::{PrKind, PushSpec};
    if let Node::Scalar { value, .. } = node {
        return PushSpec { remote: value.clone(), ..PushSpec::default() };
    }
    let example = "push: {remote: origin, pr: draft}";
    let mut spec = PushSpec::default();
    let mut remote_given = false;
    for (key, value, _) in cx.sub_keys(node, "push", &["remote", "pr", "pr_per_run", "base", "title", "labels", "reviewers", "repo"], example) {
        match key {
            "remote" => {
                remote_given = true;
                spec.remote = cx.string(value, "push.remote").unwrap_or_default();
            }
            "pr" => match cx.string(value, "push.pr").as_deref().map(str::trim) {
                Some("draft") => spec.pr = Some(PrKind::Draft),
                Some("ready") => spec.pr = Some(PrKind::Ready),
                Some("off") => spec.pr = None,
                Some(other) => cx.err(value.pos(), format!("unknown `push.pr: {other}` (expected draft, ready or off)")),
                None => {}
            },
            "pr_per_run" => spec.pr_per_run = cx.boolean(value, "push.pr_per_run").unwrap_or(false),
            "base" => spec.base = branch_word(cx, value, "push.base"),
            "title" => spec.title = cx.string(value, "push.title").filter(|t| !t.trim().is_empty()),
            "labels" => spec.labels = cx.string_list(value, "push.labels"),
            "reviewers" => spec.reviewers = cx.string_list(value, "push.reviewers"),
            "repo" => {
                let text = cx.string(value, "push.repo").unwrap_or_default();
                match text.split_once('/') {
                    Some((owner, name)) if !owner.is_empty() && !name.is_empty() && !name.contains('/') && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) => spec.repo = Some(text),
                    _ => cx.err(value.pos(), format!("`push.repo: {text}` must be owner/name, as in github.com/owner/name")),
                }
            }
            _ => {}
        }
    }
    if !remote_given {
        cx.err(node.pos(), format!("`push` needs `remote` (which remote to push to): {example}"));
    }
    spec
}

/// `on_review: rerun|off` with `review_rounds` (1–20, default 3) and `review_from`
/// (`collaborators` — the default — or `anyone`): only beside a `push:` that opens a pull request.
fn review_loop<'n>(cx: &mut Cx<'_>, get: &dyn Fn(&str) -> Option<&'n Node>, key_pos: &dyn Fn(&str) -> Pos, push: Option<&crate::routine::PushSpec>) -> Option<crate::routine::ReviewLoop> {
    use crate::routine::{ReviewFrom, ReviewLoop};
    let on = get("on_review").and_then(|n| match cx.string(n, "on_review").as_deref().map(str::trim) {
        Some("rerun") => Some(true),
        Some("off") => Some(false),
        Some(other) => {
            cx.err(n.pos(), format!("unknown `on_review: {other}` (expected rerun or off)"));
            None
        }
        None => None,
    });
    let mut rounds = ReviewLoop::DEFAULT_ROUNDS;
    if let Some(node) = get("review_rounds") {
        let text = cx.string(node, "review_rounds").unwrap_or_default();
        match text.trim().parse::<u32>() {
            Ok(n) if (1..=ReviewLoop::MAX_ROUNDS).contains(&n) => rounds = n,
            _ => cx.err(node.pos(), format!("`review_rounds` must be a whole number from 1 to {}, found \"{text}\"", ReviewLoop::MAX_ROUNDS)),
        }
    }
    let mut from = ReviewFrom::Collaborators;
    if let Some(node) = get("review_from") {
        match cx.string(node, "review_from").as_deref().map(str::trim) {
            Some("collaborators") => {}
            Some("anyone") => from = ReviewFrom::Anyone,
            Some(other) => cx.err(node.pos(), format!("unknown `review_from: {other}` (expected collaborators or anyone)")),
            None => {}
        }
    }
    if on != Some(true) {
        for key in ["review_rounds", "review_from"].into_iter().filter(|k| get(k).is_some()) {
            cx.err(key_pos(key), format!("`{key}` only applies with `on_review: rerun`"));
        }
        return None;
    }
    if push.is_none_or(|p| p.pr.is_none()) {
        cx.err(key_pos("on_review"), "`on_review: rerun` needs a pull request to be reviewed: `workspace: worktree` with `push: {remote: origin, pr: draft}`");
        return None;
    }
    Some(ReviewLoop { rounds, from })
}

/// A branch name for `key`, or a located error.
fn branch_word(cx: &mut Cx<'_>, node: &Node, key: &str) -> Option<String> {
    let text = cx.string(node, key)?;
    if text.is_empty() || text.starts_with('-') || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        cx.err(node.pos(), format!("`{key}` must be a branch name (no spaces, not starting with '-')"));
        return None;
    }
    Some(text)
}

/// `host:` or `hosts:`, `remote_cwd:` (agents-cli's `remoteCwd:` too) and `hostStrategy:`
/// (`local` or `host`; agents-cli's `fleet` and `cloud` are refused with what to use instead).
pub(super) fn placement<'n>(cx: &mut Cx<'_>, get: &dyn Fn(&str) -> Option<&'n Node>, key_pos: &dyn Fn(&str) -> Pos) -> Option<Placement> {
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

