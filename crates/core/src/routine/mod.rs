//! Routine files: one routine per YAML file in `routines/` (agents-cli compatible field names).
//!
//! Loading never stops at the first problem: every file is parsed, every problem is collected
//! with its `file:line:col`, and one bad file never keeps the others from loading.

pub mod author;
mod load;
mod parse;
pub mod prompt;
pub mod yaml;

pub use load::{check_webhooks, home_dirs, is_routine_path, load_dir, load_files, load_home, routine_files, RoutineSet};
pub use parse::{parse_routine, MAX_DURATION, MAX_PROBLEMS};

/// The name closest to `name` among `names`, if close enough to be a typo.
pub fn nearest_name<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    parse::nearest(name, names)
}

use crate::run::{string_enum, RunKind};
use crate::schedule::Schedule;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

string_enum!(
    /// The agent CLIs Nightshift drives.
    AgentKind { Claude = "claude", Codex = "codex", Gemini = "gemini" }
);

/// agents-cli permission modes; each agent module maps them to its own flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Read-only: plan, do not change files.
    Plan,
    /// May edit files in the working directory.
    Edit,
    /// The agent decides (default).
    Auto,
    /// Skip all permission checks.
    Skip,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyPolicy {
    Always,
    Failures,
    Never,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    Agent { agent: AgentKind, prompt: String, mode: Mode, model: Option<String> },
    Command { command: String },
}

/// Where a run works (`workspace:`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Workspace {
    /// In `cwd` itself, the user's own checkout (the default).
    #[default]
    Cwd,
    /// In a git worktree of `cwd`'s repository of its own, on branch
    /// `nightshift/<routine>/<run-id>` from `base` (default: the repository's `HEAD`); pushed to
    /// `push` after the run.
    Worktree { base: Option<String>, push: Option<String> },
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
    /// Absent for a one-shot routine (`at:`).
    pub schedule: Option<Schedule>,
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
    pub notify: NotifyPolicy,
    pub enabled: bool,
    pub variables: BTreeMap<String, String>,
    pub devices: Vec<String>,
    /// Webhooks (by name, from `nightshift.toml`) that get every final run of this routine.
    pub webhooks: Vec<String>,
    pub workspace: Workspace,
}

impl Routine {
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10 * 60);

    pub fn agent(&self) -> Option<AgentKind> {
        match &self.action {
            Action::Agent { agent, .. } => Some(*agent),
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
    pub fn runs_on(&self, device: &str) -> bool {
        self.devices.is_empty() || self.devices.iter().any(|d| d == device)
    }

    /// What runs it: an agent, or `command`.
    pub fn kind(&self) -> RunKind {
        RunKind::of(self.agent())
    }

    /// "claude", "codex", "gemini" or "command".
    pub fn kind_name(&self) -> &'static str {
        self.kind().as_str()
    }
}

fn ser_tz<S: serde::Serializer>(tz: &Tz, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(tz.name())
}
fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_duration(*d).to_string())
}

/// One problem in one routine file, at a position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The file as the user should see it (relative to the home when inside it).
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.col, self.message)
    }
}

/// A routine file that could not be loaded, with every problem found in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InvalidRoutine {
    /// The name it would have had (its `name:` or its file stem).
    pub name: String,
    pub file: PathBuf,
    pub errors: Vec<Diagnostic>,
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
