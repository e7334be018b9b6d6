//! What every agent's file implements — [`AgentDriver`] — and what it gives back: how a run ended
//! ([`Outcome`], read from what it left: [`RunOutput`]) and what a routine's action runs
//! ([`Invocation`]). The agents' files stand on this; nothing here names an agent.

use super::auth::{AgentAuth, LoginFacts};
use super::call::Call;
use super::tail::LogTail;
use super::transcript::{self, LogEntry};
use crate::run::{Reason, RunStatus, Usage};
use crate::words::Agent;
use chrono::{DateTime, Utc};
use std::path::Path;

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
    /// How many things the agent changed, or may have, before it ended — shell commands, edits,
    /// MCP calls that ran — as far as its stream says; 0 when it says nothing of them.
    pub work: u32,
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
    /// Whether the run went in the machine's sandbox (its plan is in its folder): a tool's output
    /// that says it was refused is then the sandbox's refusal, one of the run's denials.
    pub fn sandboxed(&self) -> bool {
        crate::run_dir::RunDir::at(self.run_dir).sandbox_plan().exists()
    }
    /// The last lines of stderr: the best message when a CLI dies without a structured event.
    pub fn stderr_tail(&self) -> LogTail {
        LogTail::read(&crate::run_dir::RunDir::at(self.run_dir).stderr(), 16 * 1024)
    }
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
    fn ends_run_at(&self, _line: &str) -> bool {
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

    // ── What a routine may say for this agent. The loader asks ([`rules`]); the agent answers. ──

    /// Its CLI can hold a tool call the routine's rules do not allow while Nightshift asks the
    /// user (`on_denial: ask`): Claude Code's `--permission-prompt-tool`.
    fn asks_live(&self) -> bool {
        false
    }

    /// Its word: what a routine's `agent:` and an account's `agent` say.
    fn agent(&self) -> Agent;
    /// The CLI's arguments Nightshift sets itself, each with what to use instead: `args:` may not
    /// name one (as itself or as `argument=value`).
    fn controlled_args(&self) -> Controlled {
        &[]
    }
    /// Why `arg` may not be in `args:` although no [`AgentDriver::controlled_args`] entry names it
    /// (a setting passed through a generic flag, as Codex's `-c model_reasoning_effort=…`).
    fn refused_arg(&self, _arg: &str) -> Option<String> {
        None
    }
    /// The variables the CLI reads its run settings from and Nightshift sets: `env:` may not name one.
    fn controlled_env(&self) -> Controlled {
        &[]
    }
    /// Why the CLI can take no tool rules (`allow.tools`, `deny.tools`) at all, if it cannot.
    fn no_tool_rules(&self) -> Option<&'static str> {
        None
    }
    /// Why this entry of `allow.tools` / `deny.tools` cannot be expressed for the CLI, if it cannot.
    fn refused_tool_rule(&self, _entry: &str) -> Option<String> {
        None
    }
    /// Why its tool rules cannot go with a run on another machine (`host:`), if they cannot.
    fn tool_rules_only_here(&self) -> Option<&'static str> {
        None
    }
    /// The settings (`config.<key>`) that a routine field decides, each with that field.
    fn controlled_config(&self) -> Controlled {
        &[]
    }
    /// Whether its CLI continues an earlier session of its own from this machine's files, given
    /// [`Call::resume`] (`claude --resume <session>`): a retry after a dropped connection then
    /// carries on instead of starting the work again.
    fn resumes(&self) -> bool {
        false
    }
    /// The setting (`config.<key>`) that carries `[agents.<agent>] auto_compact_tokens` — the
    /// context size at which the CLI compacts its conversation — if the CLI has one.
    fn auto_compact_setting(&self) -> Option<&'static str> {
        None
    }
    /// The setting (`config.<key>`) set to `true` for a model `[agents.<agent>] fast_mode_models`
    /// lists, if the CLI has a fast mode it takes so.
    fn fast_mode_setting(&self) -> Option<&'static str> {
        None
    }
    /// Why `config.<key>` is ignored for this agent (a warning), if it is.
    fn config_ignored(&self) -> Option<&'static str> {
        None
    }
    /// The arguments that pass `config.<key>` to the CLI, in its own form (none by default).
    fn config_args(&self, _config: &[(String, serde_json::Value)]) -> Vec<String> {
        Vec::new()
    }
    /// Why `effort:` is ignored (the CLI has no effort setting), if it is.
    fn no_effort(&self) -> Option<&'static str> {
        None
    }
    /// Whether the CLI reports what a run cost (so a day or month budget counts it).
    fn reports_cost(&self) -> bool {
        false
    }
    /// Whether the CLI stops a run at a cost itself (`budget.run`).
    fn caps_run_cost(&self) -> bool {
        false
    }

    // ── How an account of this agent signs in ([`auth`]). ──

    /// How it signs in; `None` for a shell command, which has no login.
    fn auth(&self) -> Option<&'static AgentAuth> {
        None
    }
    /// What its own login in an account's config dir says (by default: whether the login file
    /// [`AgentAuth::login_file`] is there).
    fn login(&self, config_dir: &std::path::Path) -> LoginFacts {
        let present = self.auth().is_some_and(|a| config_dir.join(a.login_file).exists());
        LoginFacts { present, ..LoginFacts::default() }
    }
    /// Why an account's `provider` is not one this agent's accounts may have, if it is not. By
    /// default the agent has one provider and the field is refused.
    fn provider_problem(&self, email: &str, _provider: &str) -> Option<String> {
        Some(format!("`provider` of {email} names the provider of an OpenCode or Copilot account's key; {} has one provider", self.agent().as_str()))
    }
    /// The variable an account's stored secret goes in when its `provider` says so, instead of
    /// [`AgentAuth::secret_var`].
    fn provider_secret_var(&self, _provider: &str) -> Option<String> {
        None
    }
    /// The provider type of a bring-your-own-key account (a key for a model provider instead of
    /// the agent vendor's own sign-in), if `provider` makes it one.
    fn byok<'p>(&self, _provider: &'p str) -> Option<&'p str> {
        None
    }
    /// Lays out an account's config dir before a run that is given the account's stored secret
    /// (Gemini CLI must be told to use its API key).
    fn prepare_config_dir(&self, _config_dir: &std::path::Path) -> Result<(), String> {
        Ok(())
    }
    /// Where the CLI keeps its own login when no config dir is set, under the home folder
    /// (Claude Code's `.claude`), for an account pinned by the identity that login is signed in
    /// as; only an agent whose login says whom it is signed in as ([`LoginFacts::email`]) has one.
    fn own_config_dir(&self) -> Option<&'static str> {
        None
    }
    /// What its CLI needs inside the sandbox besides the run's own folders: its API's hosts and
    /// the folders it writes ([`crate::sandbox::Needs`]). A command needs nothing of its own.
    fn sandbox_needs(&self) -> &'static crate::sandbox::Needs {
        &crate::sandbox::Needs::NONE
    }
    /// How an account's secret reaches the CLI, said after `accounts add` (`provider`: the
    /// account's, if it names one).
    fn secret_note(&self, _provider: Option<&str>) -> Option<String> {
        None
    }
    /// Its CLI's npm package, pinned to the version Nightshift is tested with
    /// (`tests/agents-cli/package.json`): what a generated GitHub Actions workflow installs.
    fn npm_package(&self) -> Option<&'static str> {
        None
    }
    /// The vendor's usage endpoint, when it has one an account may opt in to probe
    /// (`usage_probe`).
    fn usage_endpoint(&self) -> Option<&'static dyn super::usage_endpoint::UsageEndpoint> {
        None
    }
}

/// `(what, why or what to use instead)` pairs: what Nightshift decides for an agent.
pub type Controlled = &'static [(&'static str, &'static str)];

/// What a routine's action runs: the driver, its arguments, the variables it reads its settings
/// from, and the file it reads from the run's directory (see [`AgentDriver::run_file`]).
pub struct Invocation {
    pub driver: &'static dyn AgentDriver,
    pub args: Vec<String>,
    pub env: Vec<(&'static str, String)>,
    pub run_file: Option<(&'static str, String)>,
}
