//! One module per agent CLI: how to invoke it, how to read its stream live (progress), and how to
//! classify how a run ended and extract its report — from the tail of its log.

pub mod claude;
pub mod codex;
pub mod command;
pub mod copilot;
pub mod gemini;
pub mod opencode;
mod patterns;
pub mod tail;
pub mod transcript;

use crate::routine::{Action, Effort, Mode};
pub use crate::run::Usage;
use crate::run::{Reason, RunStatus};
use crate::words::Agent;
use chrono::{DateTime, Utc};
use std::path::Path;
pub use tail::LogTail;
pub use transcript::{LogEntry, LogKind};

/// How a run's process ended, as far as the agent module can tell from its output.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    pub status: Option<RunStatus>,
    pub reason: Option<Reason>,
    pub message: Option<String>,
    pub resets_at: Option<DateTime<Utc>>,
    pub cost_usd: Option<f64>,
    pub usage: Option<Usage>,
    pub session_id: Option<String>,
    /// Markdown to save as report.md — only ever for a completed run.
    pub report: Option<String>,
    /// The outcome comes from the agent's own final event (Claude's `result`, Codex's
    /// `turn.completed`…), not from guessing; crash recovery trusts only such outcomes.
    pub from_final_event: bool,
    /// Tool calls the agent was refused or could not make, as it reported them.
    pub denials: Vec<crate::run::Denial>,
    /// The account's usage windows as the agent last reported them in this run.
    pub windows: Vec<crate::run::LimitWindow>,
}

impl Outcome {
    pub fn completed(report: Option<String>) -> Outcome {
        Outcome { status: Some(RunStatus::Completed), report, ..Outcome::default() }
    }
    pub fn failed(reason: Reason, message: impl Into<String>) -> Outcome {
        Outcome { status: Some(RunStatus::Failed), reason: Some(reason), message: Some(message.into()), ..Outcome::default() }
    }
    pub fn status(&self) -> RunStatus {
        self.status.unwrap_or(RunStatus::Failed)
    }
}

/// What the run left behind, for classification.
pub struct RunOutput<'a> {
    pub run_dir: &'a Path,
    /// The process's exit code; `None` when unknown (killed by a signal, or lost in a crash).
    pub exit_code: Option<i32>,
    pub now: DateTime<Utc>,
}

impl RunOutput<'_> {
    pub fn stdout_path(&self) -> std::path::PathBuf {
        crate::run_dir::RunDir::at(self.run_dir).stdout()
    }
    /// The last lines of stderr: the best message when a CLI dies without a structured event.
    pub fn stderr_tail(&self) -> LogTail {
        LogTail::read(&crate::run_dir::RunDir::at(self.run_dir).stderr(), 16 * 1024)
    }
}

/// What an agent is asked to do, and how: a routine's action with its prompt rendered.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub prompt: &'a str,
    pub mode: Mode,
    pub model: Option<&'a str>,
    pub effort: Option<Effort>,
    /// The routine's `args:`, placed where the CLI takes its options (before a positional
    /// prompt); never one of the arguments the driver sets itself (`routine::agent_args`).
    pub extra: &'a [String],
    /// `allow:`/`deny:` — in the strongest form the CLI has.
    pub guard: &'a crate::routine::Guard,
    /// What the run may spend (USD: `budget.run`, `[budget] run`), for a CLI that caps it itself.
    pub max_budget_usd: Option<f64>,
    /// The run's directory here, where [`AgentDriver::run_file`] is written before the agent
    /// starts; `None` for a run on another machine.
    pub run_dir: Option<&'a std::path::Path>,
    /// `config.<key>` for a CLI that takes its settings other than as arguments (OpenCode's
    /// `OPENCODE_CONFIG_CONTENT`); the others have them in `extra` already.
    pub config: &'a [(String, serde_json::Value)],
}

pub trait AgentDriver: Send + Sync {
    /// The executable's name on PATH (`claude`), or an absolute path for `command`.
    fn program(&self) -> &'static str;
    /// Arguments after the program.
    fn args(&self, call: &Call<'_>) -> Vec<String>;
    /// Variables the CLI reads its run settings from (none by default: most take arguments).
    fn env(&self, _call: &Call<'_>) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// A file the agent reads from the run's directory, written there before it starts (name,
    /// contents): Gemini CLI's policy, OpenCode's retry-status plugin. Only for a run here.
    fn run_file(&self, _call: &Call<'_>) -> Option<(&'static str, String)> {
        None
    }
    /// Whether this line of live output means the CLI will not end by itself in useful time — it
    /// sleeps out a long rate limit, or hangs after reporting one — so the run is ended now and
    /// judged from its output ([`AgentDriver::classify`] must know the line). Never by default.
    fn settles(&self, _line: &str) -> bool {
        false
    }
    /// How to install the CLI, for the "not found" message.
    fn install_hint(&self) -> &'static str;
    /// A human progress message for one line of live output, if it deserves one.
    fn progress(&self, line: &str) -> Option<String>;
    /// Whether following the live stream can yield progress at all.
    fn has_progress(&self) -> bool {
        true
    }
    /// How the run ended and its report.
    fn classify(&self, out: &RunOutput<'_>) -> Outcome;
    /// One line of the log as people read it (the window's log view). Plain lines by default.
    fn transcript(&self, line: &str) -> Vec<LogEntry> {
        transcript::not_json(line)
    }
    /// The usage windows an agent keeps beside its output rather than in it — in the account's
    /// config dir (`config_dir`), for session `session_id`, a run that ended about `now`. None by
    /// default: Claude Code reports them in its stream ([`Outcome::windows`]).
    fn windows_kept_in(&self, _config_dir: &std::path::Path, _session_id: &str, _now: DateTime<Utc>) -> Vec<crate::run::LimitWindow> {
        Vec::new()
    }
}

/// The one place an agent's word becomes its module.
pub fn driver(agent: Agent) -> &'static dyn AgentDriver {
    match agent {
        Agent::Claude => &claude::Claude,
        Agent::Codex => &codex::Codex,
        Agent::Gemini => &gemini::Gemini,
        Agent::OpenCode => &opencode::OpenCode,
        Agent::Copilot => &copilot::Copilot,
        Agent::Command => &command::Command,
    }
}

/// What a routine's action runs: the driver, its arguments, the variables it reads its settings
/// from, and the file it reads from the run's directory (see [`AgentDriver::run_file`]).
pub struct Invocation {
    pub driver: &'static dyn AgentDriver,
    pub args: Vec<String>,
    pub env: Vec<(&'static str, String)>,
    pub run_file: Option<(&'static str, String)>,
}

/// The invocation for a routine's action (the prompt already rendered); `run_dir` as in
/// [`Call::run_dir`].
pub fn invocation(action: &Action, rendered_prompt: &str, max_budget_usd: Option<f64>, run_dir: Option<&std::path::Path>) -> Invocation {
    match action {
        Action::Agent { agent, mode, model, effort, args, guard, config, .. } => {
            let d = driver(*agent);
            // `config.<key>` in the CLI's own form, then the routine's `args:`.
            let extra: Vec<String> = crate::routine::agent_config::args(*agent, config).into_iter().chain(args.iter().cloned()).collect();
            let call = Call { prompt: rendered_prompt, mode: *mode, model: model.as_deref(), effort: *effort, extra: &extra, guard, max_budget_usd, run_dir, config };
            Invocation { driver: d, args: d.args(&call), env: d.env(&call), run_file: run_dir.and_then(|_| d.run_file(&call)) }
        }
        Action::Command { command } => Invocation { driver: &command::Command, args: vec!["-c".into(), command.clone()], env: Vec::new(), run_file: None },
    }
}

/// The first line of `text`, trimmed and cut to `max` characters — for messages and summaries.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}
