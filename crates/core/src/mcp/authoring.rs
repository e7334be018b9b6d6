//! Routines an agent writes through MCP, within the user's limits (`[mcp]`): the same draft and
//! checks as `routines new` and the window's form, plus what only an agent's routine gets —
//! `created_by: mcp` and the calling run as `parent_run`; disabled unless `enable_created`; a
//! mode no looser than `max_mode` (a shell command counts as `skip`); no account but the one the
//! calling run was given; no key that reaches secrets, other machines or the sandbox (those stay
//! the user's to write), and at most `max_created_per_day`. A follow-up made inside a run works
//! like its parent: its folder and its routine's `env:`.

use super::Caller;
use crate::agents::Mode;
use crate::error::{Error, ErrorCode, Result};
use crate::routine::author::{Draft, FieldProblem};
use crate::settings::looseness;
use crate::Engine;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `routine_create`'s arguments: the fields of `nightshiftctl routines new` an agent may set.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct NewRoutine {
    /// Its name: letters, digits, '-', '_' and '.'; it names its file.
    pub name: String,
    pub description: Option<String>,
    /// claude, codex, gemini, opencode or copilot (with `prompt`); or use `command`.
    pub agent: Option<String>,
    pub prompt: Option<String>,
    /// A shell command (run with sh -c); counts as mode `skip` against `[mcp] max_mode`.
    pub command: Option<String>,
    /// A 5-field cron expression ("0 9 * * 1-5"); or `at` for once.
    pub schedule: Option<String>,
    /// Once, at this time: RFC 3339, or "2026-12-24 09:00" in the routine's zone.
    pub at: Option<String>,
    /// IANA zone (default: this machine's).
    pub timezone: Option<String>,
    /// The folder it works in (default inside a run: that run's routine's folder).
    pub cwd: Option<String>,
    /// plan, edit, auto or skip (default: the loosest `[mcp] max_mode` allows, at most auto).
    pub mode: Option<String>,
    pub model: Option<String>,
    /// Pin an account: only the calling run's own.
    pub account: Option<String>,
    /// "30m", "2h"… (default 10m).
    pub timeout: Option<String>,
    /// always, failures or never.
    pub notify: Option<String>,
    /// low, medium, high, xhigh, max or auto.
    pub effort: Option<String>,
    /// `worktree`: each run in a git worktree of its own.
    pub workspace: Option<String>,
    /// With `workspace: worktree`: the branch runs start from.
    pub base: Option<String>,
    /// The only tools the agent may use (names, or rules such as "Bash(git status)").
    #[serde(default)]
    pub allow_tools: Vec<String>,
    /// Tools the agent may never use.
    #[serde(default)]
    pub deny_tools: Vec<String>,
}

/// `routine_schedule_once`'s arguments: a follow-up that runs once.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct Once {
    /// What the agent is asked then (or use `command`).
    pub prompt: Option<String>,
    /// A shell command instead of a prompt; counts as mode `skip` against `[mcp] max_mode`.
    pub command: Option<String>,
    /// When: RFC 3339, or "2026-12-24 09:00" in the routine's zone. Or use `after`.
    pub at: Option<String>,
    /// After this long from now: "2s", "90m", "1h 30m", "1d".
    pub after: Option<String>,
    /// Its name (default: `followup-<parent routine or "mcp">-<time>`).
    pub name: Option<String>,
    pub description: Option<String>,
    /// The agent (default inside a run: the run's own; else claude).
    pub agent: Option<String>,
    pub timezone: Option<String>,
    /// The folder it works in (default inside a run: that run's routine's folder).
    pub cwd: Option<String>,
    pub mode: Option<String>,
    pub model: Option<String>,
    pub account: Option<String>,
    pub timeout: Option<String>,
    pub notify: Option<String>,
}

/// What a created routine is, for the agent to report.
#[derive(Serialize)]
pub struct Made {
    pub name: String,
    pub file: String,
    /// Written enabled (`[mcp] enable_created`), or disabled until the user enables it.
    pub enabled: bool,
    pub created_by: &'static str,
    pub parent_run: Option<String>,
    /// When it fires next (RFC 3339, UTC) — once enabled, if it is not.
    pub next_fires: Vec<String>,
    /// What the user does to let it run, when it was written disabled.
    pub note: Option<String>,
}

pub async fn create(engine: &Engine, caller: &Caller, args: NewRoutine) -> Result<Made> {
    let text = |v: Option<String>| v.unwrap_or_default();
    let draft = Draft {
        name: args.name,
        description: text(args.description),
        agent: text(args.agent),
        prompt: text(args.prompt),
        command: text(args.command),
        schedule: text(args.schedule),
        at: text(args.at),
        timezone: text(args.timezone),
        cwd: text(args.cwd),
        mode: text(args.mode),
        model: text(args.model),
        account: text(args.account),
        timeout: text(args.timeout),
        notify: text(args.notify),
        effort: text(args.effort),
        workspace: text(args.workspace),
        base: text(args.base),
        allow_tools: args.allow_tools,
        deny_tools: args.deny_tools,
        ..Draft::default()
    };
    write(engine, caller, draft).await
}

pub async fn schedule_once(engine: &Engine, caller: &Caller, args: Once) -> Result<Made> {
    let now = engine.clock_now();
    let at = match (args.at.as_deref().map(str::trim).filter(|a| !a.is_empty()), args.after.as_deref().map(str::trim).filter(|a| !a.is_empty())) {
        (Some(_), Some(_)) => return Err(usage("give `at` or `after`, not both")),
        (None, None) => return Err(usage("say when: `at` (a time) or `after` (a delay such as \"2h\")")),
        (Some(at), None) => at.to_string(),
        (None, Some(after)) => {
            let delay = humantime::parse_duration(after).map_err(|e| usage(&format!("`after`: \"{after}\" is not a delay ({e}); e.g. \"90s\", \"2h\", \"1d\"")))?;
            let when = now + chrono::Duration::from_std(delay).map_err(|_| usage(&format!("`after`: \"{after}\" is too far away")))?;
            crate::words::fmt_time(&when)
        }
    };
    let parent = caller.run.as_ref();
    let name = args.name.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| default_name(parent.map(|r| r.routine.as_str()), now));
    let agent = match (&args.agent, &args.command) {
        (Some(a), _) => a.clone(),
        (None, Some(_)) => String::new(),
        (None, None) => parent.map(|r| r.agent).filter(|a| a.cli().is_some()).map(|a| a.to_string()).unwrap_or_else(|| "claude".into()),
    };
    let once = NewRoutine {
        name,
        description: args.description,
        agent: Some(agent).filter(|a| !a.is_empty()),
        prompt: args.prompt,
        command: args.command,
        at: Some(at),
        timezone: args.timezone,
        cwd: args.cwd,
        mode: args.mode,
        model: args.model,
        account: args.account,
        timeout: args.timeout,
        notify: args.notify,
        ..NewRoutine::default()
    };
    create(engine, caller, once).await
}

/// `followup-nightly-20261207-021400`: whose follow-up, and when it was asked for.
fn default_name(parent_routine: Option<&str>, now: DateTime<Utc>) -> String {
    format!("followup-{}-{}", parent_routine.unwrap_or("mcp"), now.format("%Y%m%d-%H%M%S"))
}

fn usage(message: &str) -> Error {
    Error::new(ErrorCode::Usage, message.to_string())
}

/// The draft within the limits, checked, written and counted.
async fn write(engine: &Engine, caller: &Caller, mut draft: Draft) -> Result<Made> {
    let settings = engine.settings();
    let limits = &settings.mcp;
    let parent = caller.run.as_ref();
    // The mode: no looser than `max_mode`; unsaid, the loosest it allows (at most the default).
    let is_command = !draft.command.trim().is_empty() && draft.agent.trim().is_empty();
    let asked = match draft.mode.trim() {
        "" if is_command => Mode::Skip,
        "" => [limits.max_mode, Mode::Auto].into_iter().min_by_key(|m| looseness(*m)).unwrap_or(Mode::Plan),
        m => Mode::parse(m).ok_or_else(|| invalid(&[FieldProblem { field: Some("mode".into()), message: format!("\"{m}\" is not a mode: plan, edit, auto or skip") }]))?,
    };
    let asked = if is_command { Mode::Skip } else { asked };
    if looseness(asked) > looseness(limits.max_mode) {
        let what = if is_command { "a shell command (which counts as mode skip: nothing limits it)".to_string() } else { format!("mode \"{asked}\"") };
        return Err(Error::new(
            ErrorCode::NotAllowed,
            format!("{what} is looser than `[mcp] max_mode = \"{}\"` in nightshift.toml allows for a routine an agent creates; raise `max_mode` to allow it", limits.max_mode),
        ));
    }
    if !is_command && draft.mode.trim().is_empty() && asked != Mode::Auto {
        draft.mode = asked.to_string();
    }
    // An account: only the one the calling run was given.
    let account = draft.account.trim().to_string();
    if !account.is_empty() && parent.and_then(|r| r.account.as_deref()) != Some(account.as_str()) {
        let given = match parent.and_then(|r| r.account.as_deref()) {
            Some(own) => format!("this run was given {own} only"),
            None => "only a run's own account, from inside that run, may be named".to_string(),
        };
        return Err(Error::new(ErrorCode::NotAllowed, format!("an agent may not pin account {account}: {given}; leave `account` out and Nightshift picks a healthy one")));
    }
    // Inside a run, a follow-up works like its parent: in its folder (unless another is named)
    // and with its routine's `env:` (an API's address, a proxy) — the agent never sees or sets it.
    if let Some(parent_routine) = parent.and_then(|r| engine.routine(&r.routine).ok()) {
        if draft.cwd.trim().is_empty() {
            if let Some(cwd) = &parent_routine.cwd {
                draft.cwd = cwd.display().to_string();
            }
        }
        draft.env = parent_routine.env.clone();
    }
    let enabled = limits.enable_created;
    draft.enabled = Some(enabled);
    draft.created_by = "mcp".into();
    draft.parent_run = parent.map(|r| r.id.clone()).unwrap_or_default();

    let check = engine.check_draft(&draft);
    if !check.problems.is_empty() {
        return Err(invalid(&check.problems));
    }
    let parent_run = Some(draft.parent_run.clone()).filter(|p| !p.is_empty());
    let e = engine.clone();
    let written = tokio::task::spawn_blocking(move || e.create_routine_by_agent(&draft)).await.map_err(|e| Error::new(ErrorCode::Io, format!("the engine task failed: {e}")))??;
    tracing::info!(routine = %written.name, parent_run = ?parent_run, enabled, "a routine created through MCP");
    let next_fires = engine.routine(&written.name).map(|r| r.upcoming(engine.clock_now(), 3).iter().map(crate::words::fmt_time).collect()).unwrap_or_default();
    let note = (!enabled).then(|| format!("written disabled: the user enables it (`enabled: true` in {}, or the window), or lets agents' routines start enabled with `[mcp] enable_created = true`", written.file));
    Ok(Made { name: written.name, file: written.file, enabled, created_by: "mcp", parent_run, next_fires, note })
}

/// Problems by field, as one `routine_invalid` error ("field: message" a line).
fn invalid(problems: &[FieldProblem]) -> Error {
    let lines: Vec<String> = problems.iter().map(|p| match &p.field {
        Some(f) => format!("{f}: {}", p.message),
        None => p.message.clone(),
    }).collect();
    Error::new(ErrorCode::RoutineInvalid, lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_follow_up_is_named_after_its_parent_and_the_time_it_was_asked() {
        let t = Utc.with_ymd_and_hms(2026, 12, 7, 2, 14, 0).unwrap();
        assert_eq!(default_name(Some("nightly"), t), "followup-nightly-20261207-021400");
        assert_eq!(default_name(None, t), "followup-mcp-20261207-021400");
        assert!(crate::routine::check_name(&default_name(Some("nightly"), t)).is_ok());
    }
}
