//! What a routine asks of an agent, in the agents' own vocabulary: the permission mode, the
//! effort, the guard (`allow:`/`deny:`) and the call itself. These words live here, below the
//! routine, so an agent's rules can sit in the agent's own file: the routine parser *asks* the
//! agent ([`super::driver`]) rather than the agents reaching up into the routine.

use crate::words::string_enum;
use serde::Serialize;
use std::path::PathBuf;

string_enum!(
    /// `effort:` — agents-cli's words for how hard the agent thinks; each agent module passes its
    /// own setting (an agent without one is a warning).
    Effort as "effort" {
        Low = "low",
        Medium = "medium",
        High = "high",
        Xhigh = "xhigh",
        Max = "max",
        /// The agent's own default: nothing is passed.
        Auto = "auto",
        /// agents-cli's older words: `fast` is low, `default` the agent's default, `detailed` high.
        Fast = "fast",
        Default = "default",
        Detailed = "detailed",
    }
);

impl Effort {
    /// The level in the current words (`fast` → low, `detailed` → high); `None` for the agent's
    /// own default (`auto`, `default`), where nothing is passed.
    pub fn level(self) -> Option<Effort> {
        match self {
            Effort::Auto | Effort::Default => None,
            Effort::Fast => Some(Effort::Low),
            Effort::Detailed => Some(Effort::High),
            other => Some(other),
        }
    }
}

string_enum!(
    /// agents-cli permission modes; each agent module maps them to its own flags.
    Mode as "mode" {
        /// Read-only: plan, do not change files.
        Plan = "plan",
        /// May edit files in the working directory.
        Edit = "edit",
        /// The agent decides (default).
        Auto = "auto",
        /// Skip all permission checks.
        Skip = "skip",
    }
);

impl Mode {
    /// The order a form offers them in: the default first.
    pub const CHOICES: &'static [Mode] = &[Mode::Auto, Mode::Plan, Mode::Edit, Mode::Skip];

    /// What it lets the agent do, in a few words (the window's mode list).
    pub fn meaning(self) -> &'static str {
        match self {
            Mode::Auto => "the agent decides (default)",
            Mode::Plan => "read only",
            Mode::Edit => "may edit files in the folder",
            Mode::Skip => "no permission checks",
        }
    }
}

/// What an unattended agent may use and touch, decided before it starts (`allow:`, `deny:`,
/// `on_denial:`). Each agent gets the strongest form its CLI has; a rule an agent cannot express
/// is a validation error, never a rule dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Guard {
    /// `allow.tools`: the only tools the agent has — names (`Read`) or Claude's rules
    /// (`Bash(git status)`); `None`: the agent's own set.
    pub allow_tools: Option<Vec<String>>,
    /// `allow.dirs`: folders it may work in besides `cwd`.
    pub allow_dirs: Vec<PathBuf>,
    /// `allow.hosts`: hosts a sandboxed run may reach besides its agent's API
    /// ([`crate::sandbox::check_host`]'s form).
    pub allow_hosts: Vec<String>,
    /// `deny.tools`: tools (or rules) that never run, whatever the mode.
    pub deny_tools: Vec<String>,
    /// `on_denial: fail`: a run that had tool calls refused is `failed · permission_denied`.
    pub fail_on_denial: bool,
    /// `on_denial: ask` (with `ask_timeout`, default [`Guard::DEFAULT_ASK`]): a tool call outside
    /// the rules is held while the user is asked; no answer in time is a denial.
    pub ask: Option<std::time::Duration>,
    /// Rules the user approved for this one run (`on_denial: ask` answered after a run that
    /// could not hold the call: `nightshiftctl approve`), allowed on top of the mode and
    /// `allow.tools`; never written into the routine's file.
    pub approved: Vec<String>,
}

impl Guard {
    /// How long an ask waits for an answer unless `ask_timeout` says otherwise.
    pub const DEFAULT_ASK: std::time::Duration = std::time::Duration::from_secs(30 * 60);
    /// The longest `ask_timeout`.
    pub const MAX_ASK: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

    /// Whether it says anything about tools (`allow.tools` or `deny.tools`).
    pub fn has_tool_rules(&self) -> bool {
        self.allow_tools.is_some() || !self.deny_tools.is_empty()
    }

    /// The tool names `allow.tools` (and this run's approvals) make available (`Bash(git *)` →
    /// `Bash`), each once.
    pub fn allowed_tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for t in self.allow_tools.iter().flatten().chain(&self.approved) {
            let name = split_tool_rule(t).0.to_string();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }
}

impl Guard {
    /// Whether `deny.tools` refuses `tool` called with `input` (a name, or a name and a command
    /// prefix): such a call is never the user's to approve.
    pub fn denies(&self, tool: &str, input: &str) -> bool {
        self.deny_tools.iter().any(|rule| match split_tool_rule(rule) {
            (name, None) => name == tool,
            (name, Some(prefix)) => name == tool && input.trim_start().starts_with(prefix),
        })
    }
}

/// A rule as its tool and command prefix: `run_shell_command(git status)` → (`run_shell_command`,
/// `Some("git status")`), a trailing `*` dropped (a prefix is a prefix); `read_file` → (`read_file`,
/// `None`). Both the loader's check and the agents' own forms read a rule through this.
pub fn split_tool_rule(entry: &str) -> (&str, Option<&str>) {
    match entry.trim().split_once('(') {
        Some((tool, rest)) => {
            let prefix = rest.trim_end().trim_end_matches(')').trim_end().trim_end_matches('*').trim_end();
            (tool.trim(), (!prefix.is_empty()).then_some(prefix))
        }
        None => (entry.trim(), None),
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
    pub guard: &'a Guard,
    /// What the run may spend (USD: `budget.run`, `[budget] run`), for a CLI that caps it itself.
    pub max_budget_usd: Option<f64>,
    /// The run's directory here, where [`AgentDriver::run_file`] is written before the agent
    /// starts; `None` for a run on another machine.
    pub run_dir: Option<&'a std::path::Path>,
    /// `config.<key>` for a CLI that takes its settings other than as arguments (OpenCode's
    /// `OPENCODE_CONFIG_CONTENT`); the others have them in `extra` already.
    pub config: &'a [(String, serde_json::Value)],
    /// An earlier try's session to continue (a retry after the connection dropped mid-work);
    /// only given to a driver that [`resumes`](super::AgentDriver::resumes).
    pub resume: Option<&'a str>,
    /// The run goes in Nightshift's machine sandbox: a CLI whose own sandbox cannot be built
    /// inside another uses the kind that can (Codex: Landlock instead of bubblewrap).
    pub sandboxed: bool,
    /// The program that carries an MCP client's stdio to the run's own socket (`<it>
    /// nightshift-mcp-bridge`): how a CLI that asks a tool before a call it may not make
    /// (`on_denial: ask`) reaches Nightshift. `None`: no such program here (a run elsewhere).
    pub bridge: Option<&'a std::path::Path>,
}
