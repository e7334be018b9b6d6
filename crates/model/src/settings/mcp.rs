//! `[mcp]`: what an agent may do through Nightshift's MCP server (`nightshiftctl mcp`, `serve`'s
//! `/mcp`). Read-only unless the user turns acting on; what an agent creates is marked, disabled
//! unless the user says otherwise, no looser than `max_mode`, and counted per day.

use crate::agents::Mode;
use serde::Deserialize;

/// What `allow` may turn on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpPower {
    /// Start and cancel runs, pause and resume routines (`run_now`, `run_cancel`,
    /// `routine_pause`, `routine_resume`).
    Run,
    /// Create routines (`routine_create`, `routine_schedule_once`).
    Create,
}

impl McpPower {
    pub fn as_str(self) -> &'static str {
        match self {
            McpPower::Run => "run",
            McpPower::Create => "create",
        }
    }
}

/// `[mcp]` in nightshift.toml.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct McpSettings {
    /// `allow = ["run", "create"]`: the acting tools an agent gets (none by default: it reads).
    pub allow: Vec<McpPower>,
    /// A routine an agent creates is written enabled (default: disabled until the user enables
    /// it).
    pub enable_created: bool,
    /// The loosest `mode:` a routine an agent creates may have (default `edit`); a command
    /// routine counts as `skip` (nothing limits a shell command).
    pub max_mode: Mode,
    /// At most this many routines created through MCP in a day (UTC), all agents together.
    pub max_created_per_day: u32,
}

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings { allow: Vec::new(), enable_created: false, max_mode: Mode::Edit, max_created_per_day: 10 }
    }
}

impl McpSettings {
    pub fn allows(&self, power: McpPower) -> bool {
        self.allow.contains(&power)
    }
}

/// How loose a mode is: plan < edit < auto < skip.
pub fn looseness(mode: Mode) -> u8 {
    match mode {
        Mode::Plan => 0,
        Mode::Edit => 1,
        Mode::Auto => 2,
        Mode::Skip => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_by_default_and_edit_at_most() {
        let s = McpSettings::default();
        assert!(!s.allows(McpPower::Run) && !s.allows(McpPower::Create));
        assert_eq!(s.max_mode, Mode::Edit);
        assert_eq!(s.max_created_per_day, 10);
        assert!(looseness(Mode::Plan) < looseness(Mode::Edit) && looseness(Mode::Auto) < looseness(Mode::Skip));
    }
}
