//! Routine files: one routine per YAML file in `routines/` (agents-cli compatible field names).
//!
//! Loading never stops at the first problem: every file is parsed, every problem is collected
//! with its `file:line:col`, and one bad file never keeps the others from loading.

pub mod agents_cli;
pub mod author;
mod load;
mod parse;
pub mod prompt;
pub mod trigger;
pub mod yaml;

pub use load::{home_dirs, is_routine_path, load_dir, load_files, load_home, project_routines_dir, NO_FLEET, routine_files, with_settings, RoutineSet};
pub use parse::{parse_routine, MAX_DURATION, MAX_PROBLEMS};

/// The name closest to `name` among `names`, if close enough to be a typo.
pub fn nearest_name<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    parse::nearest(name, names)
}

use crate::agents;
pub use crate::agents::{Effort, Guard, Mode};
use crate::schedule::Schedule;
use crate::words::{string_enum, Agent};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

string_enum!(
    /// What a slot does while the routine's previous run is still going (`overlap:`).
    Overlap as "overlap" {
        /// Record the slot `skipped` (the default).
        Skip = "skip",
        /// Queue one run behind the running one — never more than one waiting.
        Queue = "queue",
        /// Cancel the running run and start the new one.
        Replace = "replace",
    }
);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyPolicy {
    Always,
    Failures,
    Never,
}

impl NotifyPolicy {
    /// Without `notify:` — commands speak up only when they fail, an agent's every run is news.
    /// (Also what a run of a routine that is gone gets.)
    pub fn default_for(kind: Agent) -> NotifyPolicy {
        match kind {
            Agent::Command => NotifyPolicy::Failures,
            _ => NotifyPolicy::Always,
        }
    }

    /// Whether a run that ended this way (`failed`: anything but completed) is notified.
    pub fn wants(self, failed: bool) -> bool {
        match self {
            NotifyPolicy::Always => true,
            NotifyPolicy::Failures => failed,
            NotifyPolicy::Never => false,
        }
    }
}

string_enum!(
    /// Why a routine will or will not fire here, one word the faces turn into a badge.
    RoutineState as "routine state" {
        Enabled = "enabled",
        Disabled = "disabled",
        /// Paused by the user.
        Paused = "paused",
        /// Paused by the engine after failures in a row (`paused_reason` says why).
        AutoPaused = "auto_paused",
        /// Everything is paused ("Pause all").
        PausedAll = "paused_all",
        /// `devices:` does not list this machine.
        OtherDevice = "other_device",
        /// The file has errors; it never runs until they are fixed.
        Invalid = "invalid",
    }
);

impl RoutineState {
    /// Whether the scheduler fires it.
    pub fn is_active(self) -> bool {
        self == RoutineState::Enabled
    }

    pub fn words(self) -> &'static str {
        match self {
            RoutineState::Enabled => "enabled",
            RoutineState::Disabled => "disabled",
            RoutineState::Paused => "paused",
            RoutineState::AutoPaused => "auto-paused",
            RoutineState::PausedAll => "paused (all)",
            RoutineState::OtherDevice => "not on this device",
            RoutineState::Invalid => "invalid",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    Agent {
        agent: Agent,
        prompt: String,
        mode: Mode,
        model: Option<String>,
        /// `effort:`, passed as the agent's own setting.
        effort: Option<Effort>,
        /// `args:` — more arguments for the agent CLI, where it takes its options (never one
        /// Nightshift sets itself: [`crate::agents::rules::refused_arg`]).
        args: Vec<String>,
        /// `allow:`, `deny:`, `on_denial:` — what the agent may use and touch.
        guard: Guard,
        /// `config.<key>` other than `model`: the agent's own settings, passed in the form its
        /// CLI takes them ([`crate::agents::AgentDriver::config_args`]).
        config: Vec<(String, serde_json::Value)>,
    },
    Command { command: String },
}

impl Action {
    /// Who does the work: its agent CLI, or [`Agent::Command`].
    pub fn agent(&self) -> Agent {
        match self {
            Action::Agent { agent, .. } => *agent,
            Action::Command { .. } => Agent::Command,
        }
    }

    /// What this action runs (the prompt already rendered): the routine's fields handed to its
    /// agent's driver, which alone knows its CLI's form. `run_dir` as in [`agents::Call::run_dir`].
    pub fn invocation(&self, rendered_prompt: &str, max_budget_usd: Option<f64>, run_dir: Option<&std::path::Path>) -> agents::Invocation {
        self.invocation_of_try(rendered_prompt, max_budget_usd, run_dir, None, false, None)
    }

    /// [`Action::invocation`] for one try: continuing the agent's session `resume` when its driver
    /// resumes, inside Nightshift's machine sandbox or not (`sandboxed`, [`agents::Call::sandboxed`]),
    /// with the program that reaches the run's own MCP socket (`bridge`, [`agents::Call::bridge`]).
    pub fn invocation_of_try(&self, rendered_prompt: &str, max_budget_usd: Option<f64>, run_dir: Option<&std::path::Path>, resume: Option<&str>, sandboxed: bool, bridge: Option<&std::path::Path>) -> agents::Invocation {
        match self {
            Action::Agent { agent, mode, model, effort, args, guard, config, .. } => {
                let d = agents::driver(*agent);
                // `config.<key>` in the CLI's own form, then the routine's `args:`.
                let extra: Vec<String> = d.config_args(config).into_iter().chain(args.iter().cloned()).collect();
                let resume = resume.filter(|_| d.resumes());
                let call = agents::Call { prompt: rendered_prompt, mode: *mode, model: model.as_deref(), effort: *effort, extra: &extra, guard, max_budget_usd, run_dir, config, resume, sandboxed, bridge };
                agents::Invocation { driver: d, args: d.args(&call), env: d.env(&call), run_file: run_dir.and_then(|_| d.run_file(&call)) }
            }
            Action::Command { command } => agents::Invocation { driver: agents::driver(Agent::Command), args: vec!["-c".into(), command.clone()], env: Vec::new(), run_file: None },
        }
    }
}

/// Where a run works (`workspace:`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Workspace {
    /// In `cwd` itself, the user's own checkout (the default).
    #[default]
    Cwd,
    /// In a git worktree of `cwd`'s repository of its own, on branch
    /// `nightshift/<routine>/<run-id>` from `base` (default: the repository's `HEAD`); pushed as
    /// `push` says after the run.
    Worktree { base: Option<String>, push: Option<PushSpec> },
}

impl Workspace {
    /// Where its runs' branches are pushed, and whether a pull request follows.
    pub fn push(&self) -> Option<&PushSpec> {
        match self {
            Workspace::Worktree { push, .. } => push.as_ref(),
            Workspace::Cwd => None,
        }
    }
}

/// `push:` — a remote's name (`push: origin`), or a mapping that also opens a pull request:
/// `push: {remote: origin, pr: draft, base: main, title: "…", labels: […], reviewers: […]}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PushSpec {
    pub remote: String,
    /// `pr:` — a pull request after a run with changes: `draft`, `ready`, or none (`off`).
    pub pr: Option<PrKind>,
    /// `pr_per_run: true` — one pull request per run instead of one open per routine.
    pub pr_per_run: bool,
    /// The pull request's base branch (default: the worktree's `base:`, else the repository's
    /// default branch as GitHub says).
    pub base: Option<String>,
    /// Its title, with the prompt's placeholders (`{date}`); default: the report's first line.
    pub title: Option<String>,
    pub labels: Vec<String>,
    pub reviewers: Vec<String>,
    /// `owner/name` on GitHub; default: read from the remote's URL.
    pub repo: Option<String>,
    /// `on_review: rerun` (with `review_rounds`, `review_from`): a review of the pull request this
    /// push opened brings the routine back to its branch. Kept with the pull request it answers
    /// for: without `pr:` there is nothing to review.
    pub review: Option<ReviewLoop>,
}

/// How a routine comes back when its pull request is reviewed (`on_review: rerun`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReviewLoop {
    /// `review_rounds` (default [`ReviewLoop::DEFAULT_ROUNDS`]): reviews answered per pull
    /// request; the next one is left to people.
    pub rounds: u32,
    /// `review_from`: whose reviews count.
    pub from: ReviewFrom,
}

impl ReviewLoop {
    pub const DEFAULT_ROUNDS: u32 = 3;
    /// More rounds than this is an agent arguing with a reviewer, not a loop with a breaker.
    pub const MAX_ROUNDS: u32 = 20;
}

/// Whose reviews bring a routine back (`review_from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewFrom {
    /// The repository's collaborators (GitHub's `GET /repos/{o}/{r}/collaborators/{user}`): a
    /// stranger's review on a public repository cannot spend the routine's runs.
    Collaborators,
    Anyone,
}

/// Whether a pull request is opened as a draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PrKind {
    Draft,
    Ready,
}

/// Which account(s) a run may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "accounts", rename_all = "snake_case")]
pub enum AccountChoice {
    /// No preference: the first healthy account of the agent, or none at all.
    Any,
    Pinned(String),
    /// Tried in order; the next one on a rate limit.
    Pool(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Routine {
    pub name: String,
    pub file: PathBuf,
    pub description: Option<String>,
    /// Absent for a one-shot routine (`at:`) and one that runs only on events (`trigger:`).
    pub schedule: Option<Schedule>,
    /// `trigger:` — the GitHub or Linear events it runs on (beside its schedule, if it has one).
    pub trigger: Option<trigger::EventTrigger>,
    #[serde(serialize_with = "ser_tz")]
    pub timezone: Tz,
    pub at: Option<DateTime<Utc>>,
    pub end_at: Option<DateTime<Utc>>,
    pub action: Action,
    #[serde(serialize_with = "ser_duration")]
    pub timeout: Duration,
    pub cwd: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
    pub account: AccountChoice,
    pub catchup: bool,
    /// `catchup: <duration>`: the most a slot may be late and still be made up (`catchup: 6h`:
    /// the 02:00 report is not worth running at 11:00); `None`: any lateness (`catchup: true`).
    #[serde(serialize_with = "ser_opt_duration")]
    pub catchup_within: Option<Duration>,
    pub notify: NotifyPolicy,
    pub enabled: bool,
    pub variables: BTreeMap<String, String>,
    pub devices: Vec<String>,
    /// Webhooks (by name, from `nightshift.toml`) that get every final run of this routine.
    pub webhooks: Vec<String>,
    pub workspace: Workspace,
    /// Where its runs go: here (`None`), or over SSH to one of the user's machines (`host:`).
    pub placement: Option<Placement>,
    /// What a run does after a failure that says nothing about the work, or a rate limit.
    pub retry: RetryPolicy,
    /// What a slot does while the previous run still goes.
    pub overlap: Overlap,
    /// `sandbox:`, `sandbox_hide:` (and `[defaults] sandbox`): whether its runs are put in the
    /// machine's sandbox ([`crate::sandbox`]).
    pub sandbox: crate::sandbox::Sandbox,
    /// `notify_missed:` — a slot that ends with nothing done (missed and not made up, skipped)
    /// is told, once for a stretch of them, until the routine runs again. Default: agent
    /// routines yes, commands no.
    pub notify_missed: bool,
    /// `ping:` — a heartbeat URL (the healthchecks.io convention): `<url>/start` when a run
    /// starts, `<url>` when it completes, `<url>/fail` (a command's exit code: `<url>/<code>`)
    /// when it ends any other way. A machine that is off stops pinging; the monitor says so.
    pub ping: Option<String>,
    /// `runOnce: true` (agents-cli): the schedule's first fire after the routine appeared is its
    /// only one.
    pub run_once: bool,
    /// `secrets:` — names of secrets kept in the OS keychain (`nightshiftctl secrets set NAME`),
    /// each given to the run as the environment variable of that name, masked everywhere.
    pub secrets: Vec<String>,
    /// `stall_timeout:` — a run whose output stops this long while its process still runs ends
    /// `timed_out · stalled` (nobody answers a prompt at 3 a.m.). Agents default to
    /// [`Routine::DEFAULT_STALL`]; commands (a quiet build is normal) only when they set it; `0`:
    /// never.
    pub stall_timeout: Option<Duration>,
    /// `budget:` — what one run, or its runs in a day or month, may spend (USD).
    pub budget: Option<crate::budget::Budget>,
    /// `version:` (agents-cli): the agent CLI version it pins; run with the executable
    /// `[agents.<agent>.versions]` maps it to (the settings' part, [`load::with_settings`]).
    pub version: Option<String>,
    /// The executable a pinned `version` runs with, when the settings map it.
    pub program: Option<PathBuf>,
    /// Its file gives `timeout:`; without one, `[defaults] timeout` in nightshift.toml applies.
    pub timeout_given: bool,
    /// `created_by: mcp` — written by an agent through Nightshift's MCP server, not by a person
    /// (shown in `routines list` and the window; such routines count against `[mcp]
    /// max_created_per_day`).
    pub created_by: Option<String>,
    /// `parent_run:` — the run whose agent created it (a follow-up it scheduled), for `why` and
    /// the run detail's "scheduled by nightly at 02:14".
    pub parent_run: Option<String>,
    /// What its file says that it runs without, or takes another way than written (located like
    /// errors; never blocking).
    pub warnings: Vec<Diagnostic>,
}

/// `retries`, `retry_backoff` and `max_wait`: how a run gets its work done through an outage or
/// a limit at 3 a.m. (see `engine::retry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RetryPolicy {
    /// Further tries after a transient failure; `None`: the default for the run's trigger (2
    /// for scheduled and catch-up runs, 0 for manual ones). Given explicitly, it also covers a
    /// command's own non-zero exit and a timeout.
    pub retries: Option<u32>,
    /// The wait before the first retry; each next one doubles it (±20 % jitter, at most 1 h).
    #[serde(serialize_with = "ser_duration")]
    pub backoff: Duration,
    /// The longest a run waits, from its first try, for a rate limit to reset.
    #[serde(serialize_with = "ser_duration")]
    pub max_wait: Duration,
    /// `retry_after_work: true`: a try that already changed things (ran commands, edited files)
    /// and cannot be resumed is tried again from the start all the same. Default: it is not —
    /// the run ends `failed · interrupted`, so nothing is done twice.
    pub after_work: bool,
}

impl RetryPolicy {
    pub const DEFAULT_RETRIES: u32 = 2;
    pub const MAX_RETRIES: u32 = 10;
    pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(60);
    /// The longest backoff, however many retries came before.
    pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);
    pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(12 * 3600);
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { retries: None, backoff: Self::DEFAULT_BACKOFF, max_wait: Self::DEFAULT_MAX_WAIT, after_work: false }
    }
}

/// A routine placed on another machine (`host:` or `hosts:`, `remote_cwd:`): its runs go there
/// over the user's own OpenSSH, and are followed, judged and notified here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// SSH hosts or aliases from the user's `ssh_config`, tried in order: the first reachable one
    /// without a run of this routine takes the run. For `fleet`, every `[hosts.<name>]` of
    /// nightshift.toml (filled in by [`load::with_settings`]).
    pub hosts: Vec<String>,
    /// Where the run works on that machine (`~` is its home); `None`: the remote home.
    pub remote_cwd: Option<String>,
    /// `hostStrategy: fleet` (agents-cli): any of the machines nightshift.toml lists, the one
    /// with the fewest runs going first, then the next that answers.
    pub fleet: bool,
}

impl Routine {
    /// Its next `count` fire times after `now` (a one-shot's one, if still ahead), none past
    /// `end_at`.
    pub fn upcoming(&self, now: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
        let fires = match (&self.schedule, self.at) {
            (Some(s), _) => s.upcoming(now, count),
            (None, Some(at)) if at > now => vec![at],
            _ => Vec::new(),
        };
        fires.into_iter().filter(|t| self.end_at.is_none_or(|end| *t <= end)).collect()
    }


    /// "At 09:00 on Monday through Friday, Europe/Berlin", "Once at 2026-12-01 09:00 Europe/Berlin",
    /// "On github:pull_request (acme/app@main)" (and both: "…, Europe/Berlin; and on github:…"), or
    /// "Only when run by hand".
    pub fn schedule_words(&self) -> String {
        let zone = self.timezone.name();
        let on = self.trigger.as_ref().map(|t| t.words());
        let clock = match (&self.schedule, self.at) {
            (Some(s), _) => Some(format!("{}, {zone}", s.words())),
            (None, Some(at)) => Some(format!("Once at {} {zone}", at.with_timezone(&self.timezone).format("%Y-%m-%d %H:%M"))),
            _ => None,
        };
        match (clock, on) {
            (Some(c), Some(on)) => format!("{c}; and on {on}"),
            (Some(c), None) => c,
            (None, Some(on)) => format!("On {on}"),
            (None, None) => "Only when run by hand".into(),
        }
    }

    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10 * 60);
    pub const DEFAULT_STALL: Duration = Duration::from_secs(10 * 60);

    /// Who does the work: its agent CLI, or [`Agent::Command`].
    pub fn agent(&self) -> Agent {
        self.action.agent()
    }

    /// Its agent's guardrails (`None` for a command).
    pub fn guard(&self) -> Option<&Guard> {
        match &self.action {
            Action::Agent { guard, .. } => Some(guard),
            Action::Command { .. } => None,
        }
    }

    /// The first slot after `now`, if it has one: the next cron fire or the one-shot `at`, never
    /// after `end_at`. (Whether it will fire also depends on pause, `enabled` and device.)
    pub fn next_slot(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let next = match (&self.schedule, self.at) {
            (Some(s), _) => s.next_after(now),
            (None, Some(at)) if at > now => Some(at),
            _ => None,
        };
        next.filter(|t| self.end_at.is_none_or(|end| *t <= end))
    }

    /// Whether it fires on the device named `device` (`devices:`; none listed = every device).
    /// Host names are compared as agents-cli does: without case or domain (`Studio.local` is
    /// `studio`).
    pub fn runs_on(&self, device: &str) -> bool {
        self.devices.is_empty() || self.devices.iter().any(|d| agents_cli::same_device(d, device))
    }

    /// Whether its file lets it fire on `device` (enabled, and listed by `devices:`); pauses are
    /// the store's and come on top ([`Routine::state`]).
    pub fn fires_on(&self, device: &str) -> bool {
        self.enabled && self.runs_on(device)
    }

    /// Whether it fires here now, and if not, why. `paused`: `None` when not paused on this
    /// machine, `Some(None)` when paused by the user, `Some(Some(reason))` when auto-paused.
    /// The order is the one a person fixes things in: the file first, then this machine.
    pub fn state(&self, device: &str, paused: Option<Option<&str>>, all_paused: bool) -> RoutineState {
        match paused {
            _ if !self.enabled => RoutineState::Disabled,
            _ if !self.runs_on(device) => RoutineState::OtherDevice,
            Some(Some(_)) => RoutineState::AutoPaused,
            Some(None) => RoutineState::Paused,
            None if all_paused => RoutineState::PausedAll,
            None => RoutineState::Enabled,
        }
    }

    /// The slots it was due at in `(from, now]` — its cron fires or its one-shot `at`, none after
    /// `end_at` — newest first, at most `max` of them; and how many the schedule had in all.
    pub fn due_slots(&self, from: DateTime<Utc>, now: DateTime<Utc>, max: usize) -> (Vec<DateTime<Utc>>, usize) {
        let (mut slots, total) = match (&self.schedule, self.at) {
            (Some(s), _) => s.fires_between(from, now, max),
            (None, Some(at)) if at > from && at <= now => (vec![at], 1),
            _ => (Vec::new(), 0),
        };
        slots.retain(|t| self.end_at.is_none_or(|end| *t <= end));
        (slots, total)
    }

    /// The accounts a run of it may use, in the order to try them (`prefer` first when it is one
    /// of them), from `configured` (the emails of its agent's accounts). `None` when no account is
    /// involved: a command, or `account:` not set and none configured (the agent's own login).
    pub fn candidate_accounts(&self, configured: &[String], prefer: Option<&str>) -> Option<Vec<String>> {
        self.agent().cli()?;
        let listed: Vec<String> = match &self.account {
            AccountChoice::Pinned(email) => vec![email.clone()],
            AccountChoice::Pool(list) => list.clone(),
            AccountChoice::Any if configured.is_empty() => return None,
            AccountChoice::Any => configured.to_vec(),
        };
        let first = prefer.filter(|p| listed.iter().any(|c| c == p));
        Some(first.map(str::to_string).into_iter().chain(listed.iter().filter(|c| Some(c.as_str()) != first).cloned()).collect())
    }
}

fn ser_tz<S: serde::Serializer>(tz: &Tz, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(tz.name())
}
fn ser_opt_duration<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => ser_duration(d, s),
        None => s.serialize_none(),
    }
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_duration(*d).to_string())
}

string_enum!(
    /// How bad a problem in a routine file is.
    Severity as "severity" {
        /// The file is invalid: the routine does not run.
        Error = "error",
        /// The routine runs as its author meant, but something in it is ignored or taken another
        /// way (a key another tool writes, a bare number of seconds): said, never blocking.
        Warning = "warning",
    }
);

/// One problem in one routine file, at a position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Diagnostic {
    /// The file as the user should see it (relative to the home when inside it).
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
    pub severity: Severity,
}

impl Diagnostic {
    /// An error at `line`:`col` of `file`.
    pub fn error(file: impl Into<String>, line: usize, col: usize, message: impl Into<String>) -> Diagnostic {
        Diagnostic { file: file.into(), line, col, message: message.into(), severity: Severity::Error }
    }

    /// A warning at `line`:`col` of `file`.
    pub fn warning(file: impl Into<String>, line: usize, col: usize, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(file, line, col, message) }
    }
}

impl fmt::Display for Diagnostic {
    /// `file:line:col: message`, or `file:line:col: warning: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = if self.severity == Severity::Warning { "warning: " } else { "" };
        write!(f, "{}:{}:{}: {severity}{}", self.file, self.line, self.col, self.message)
    }
}

/// A routine file that could not be loaded, with every problem found in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InvalidRoutine {
    /// The name it would have had (its `name:` or its file stem).
    pub name: String,
    pub file: PathBuf,
    pub errors: Vec<Diagnostic>,
    /// What would have been said even of a valid file (listed beside the errors).
    pub warnings: Vec<Diagnostic>,
}

/// Is `name` usable as a routine name, i.e. as one directory under `runs/`?
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("routine name is empty".into());
    }
    if name == "." || name == ".." || name.starts_with('.') {
        return Err(format!("routine name \"{name}\" must not start with a dot"));
    }
    if name.len() > 64 {
        return Err(format!("routine name \"{name}\" is longer than 64 characters"));
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
        return Err(format!(
            "routine name \"{name}\" contains {bad:?}; use letters, digits, '-', '_' and '.' only (it names a directory)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn routine(yaml: &str) -> Routine {
        parse_routine(yaml, std::path::Path::new("r.yaml"), "r.yaml").unwrap_or_else(|e| panic!("{:?}", e.errors))
    }
    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, h, m, 0).unwrap()
    }

    #[test]
    fn state_puts_the_file_first_then_this_machine() {
        let r = routine("name: r\ncommand: \"true\"\nschedule: \"0 * * * *\"\ndevices: [desk]\n");
        assert_eq!(r.state("desk", None, false), RoutineState::Enabled);
        assert!(r.state("desk", None, false).is_active());
        assert_eq!(r.state("laptop", Some(None), true), RoutineState::OtherDevice, "another device's routine is not 'paused' here");
        assert_eq!(r.state("desk", Some(Some("3 failures in a row")), true), RoutineState::AutoPaused);
        assert_eq!(r.state("desk", Some(None), false), RoutineState::Paused);
        assert_eq!(r.state("desk", None, true), RoutineState::PausedAll);
        assert!(!r.state("desk", None, true).is_active());
        let off = routine("name: r\ncommand: \"true\"\nschedule: \"0 * * * *\"\nenabled: false\ndevices: [desk]\n");
        assert_eq!(off.state("laptop", None, false), RoutineState::Disabled);
        assert!(!off.fires_on("desk") && r.fires_on("desk") && !r.fires_on("laptop"));
    }

    #[test]
    fn due_slots_are_the_fires_in_the_window_and_none_after_end_at() {
        let r = routine("name: r\ncommand: \"true\"\nschedule: \"*/10 * * * *\"\ntimezone: UTC\nend_at: \"2026-12-01T09:30:00Z\"\n");
        let (slots, total) = r.due_slots(at(9, 0), at(10, 0), 100);
        assert_eq!(slots, vec![at(9, 30), at(9, 20), at(9, 10)], "newest first; from is excluded, end_at included, nothing after it");
        assert_eq!(total, 6, "the schedule's own count is kept (the scheduler sizes its catch-up by it)");
        let once = routine("name: r\ncommand: \"true\"\nat: \"2026-12-01T09:15:00Z\"\n");
        assert_eq!(once.due_slots(at(9, 0), at(10, 0), 100), (vec![at(9, 15)], 1));
        assert_eq!(once.due_slots(at(9, 15), at(10, 0), 100), (vec![], 0), "an `at` already checked is not due again");
    }

    #[test]
    fn candidate_accounts_follow_account_and_put_the_preferred_first() {
        let configured = vec!["a@x.dev".to_string(), "b@x.dev".to_string()];
        let any = routine("name: r\nagent: claude\nprompt: hi\nschedule: \"0 9 * * *\"\n");
        assert_eq!(any.candidate_accounts(&configured, Some("b@x.dev")), Some(vec!["b@x.dev".into(), "a@x.dev".into()]));
        assert_eq!(any.candidate_accounts(&[], None), None, "no account configured: the agent's own login");
        let pool = routine("name: r\nagent: claude\nprompt: hi\nschedule: \"0 9 * * *\"\naccounts: [c@x.dev, a@x.dev]\n");
        assert_eq!(pool.candidate_accounts(&configured, Some("b@x.dev")), Some(vec!["c@x.dev".into(), "a@x.dev".into()]), "a preferred account outside the pool is ignored");
        let pinned = routine("name: r\nagent: claude\nprompt: hi\nschedule: \"0 9 * * *\"\naccount: c@x.dev\n");
        assert_eq!(pinned.candidate_accounts(&configured, None), Some(vec!["c@x.dev".into()]));
        let command = routine("name: r\ncommand: \"true\"\nschedule: \"0 9 * * *\"\n");
        assert_eq!(command.candidate_accounts(&configured, None), None);
    }

    #[test]
    fn notify_defaults_by_kind_and_policies_choose_by_outcome() {
        assert_eq!(routine("name: r\ncommand: \"true\"\nschedule: \"0 9 * * *\"\n").notify, NotifyPolicy::Failures);
        assert_eq!(routine("name: r\nagent: codex\nprompt: hi\nschedule: \"0 9 * * *\"\n").notify, NotifyPolicy::Always);
        assert_eq!(NotifyPolicy::default_for(Agent::Gemini), NotifyPolicy::Always);
        assert!(NotifyPolicy::Always.wants(false) && NotifyPolicy::Failures.wants(true));
        assert!(!NotifyPolicy::Failures.wants(false) && !NotifyPolicy::Never.wants(true));
    }
}
