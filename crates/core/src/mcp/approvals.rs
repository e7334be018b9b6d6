//! The one tool of a run's approvals server: Claude Code's permission prompt
//! (`--permission-prompt-tool`), called with a tool call the routine does not allow. It holds
//! the call while the user is asked ([`Engine::ask_for_approval`]) and answers as Claude Code
//! reads it: `{"behavior":"allow","updatedInput":…}` or `{"behavior":"deny","message":…}`.

use super::Caller;
use crate::engine::Decision;
use crate::error::{Error, ErrorCode, Result};
use crate::Engine;
use rmcp::model::Tool;
use schemars::JsonSchema;
use serde::Deserialize;

/// The tool's name (Claude Code calls it `mcp__nightshift_approvals__approval_prompt`).
pub const TOOL: &str = "approval_prompt";

/// What Claude Code sends.
#[derive(Deserialize, JsonSchema)]
pub struct Prompt {
    /// The tool the agent wants to call.
    pub tool_name: String,
    /// Its input. (Claude Code also sends `tool_use_id`, not needed here.)
    pub input: serde_json::Value,
}

pub fn declared() -> Vec<Tool> {
    vec![Tool::new(TOOL, "Asks the user whether a tool call the routine does not allow may run; holds it until they answer or the routine's ask_timeout passes.", super::tools::input_schema::<Prompt>())]
}

/// The answer for Claude Code, as the JSON text its prompt tool returns.
pub async fn call(engine: &Engine, caller: &Caller, name: &str, args: serde_json::Value) -> Result<serde_json::Value> {
    if name != TOOL {
        return Err(Error::new(ErrorCode::Usage, format!("no tool named \"{name}\" here")));
    }
    let run = caller.run.as_ref().ok_or_else(|| Error::new(ErrorCode::Usage, "approvals are asked from inside a run"))?;
    let prompt: Prompt = serde_json::from_value(args).map_err(|e| Error::new(ErrorCode::Usage, format!("bad arguments for {TOOL}: {e}")))?;
    Ok(match engine.ask_for_approval(run, &prompt.tool_name, &prompt.input).await? {
        Decision::Allow => serde_json::json!({ "behavior": "allow", "updatedInput": prompt.input }),
        Decision::Deny(message) => serde_json::json!({ "behavior": "deny", "message": message }),
    })
}
