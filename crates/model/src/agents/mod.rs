//! One file per agent CLI — how to call it, read its stream live, judge how a run ended and
//! extract its report, and what a routine may ask of it and how its accounts sign in — each the
//! [`AgentDriver`] (`driver.rs`) of its word; [`driver`] is the one place a word becomes its file.

pub mod auth;
pub mod call;
pub mod claude;
pub mod claude_login;
pub mod codex;
pub mod command;
pub mod copilot;
pub mod driver;
pub mod gemini;
pub mod opencode;
mod patterns;
pub mod rules;
pub mod tail;
pub mod transcript;
pub mod usage_endpoint;

pub use crate::run::Usage;
use crate::words::Agent;
pub use auth::{AgentAuth, LoginFacts};
pub use call::{split_tool_rule, Call, Effort, Guard, Mode};
pub use driver::{AgentDriver, Controlled, Invocation, Outcome, RunOutput};
pub use tail::LogTail;
pub use transcript::{LogEntry, LogKind};
pub use usage_endpoint::{LoginToken, UsageEndpoint};

/// The argument that makes a Nightshift binary (the app's or `nightshiftctl`) carry an MCP
/// client's stdio to the run's own socket ([`Call::bridge`]).
pub const BRIDGE_ARG: &str = "nightshift-mcp-bridge";

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

impl AgentAuth {
    /// How `agent` signs in; `None` for a shell command, which has no login.
    pub fn of(agent: Agent) -> Option<&'static AgentAuth> {
        driver(agent).auth()
    }
}
