//! The loader's questions to an agent, worded once: may a routine of this agent give this
//! argument, this variable, this `config.` key, this tool rule? Each agent's own tables and
//! exceptions are in its file ([`super::AgentDriver`]); this module turns their answers into the
//! messages every agent shares, so a rule is refused with the agent and the field named — never
//! silently dropped.

use super::driver::AgentDriver;

/// What to use instead of an argument or setting Nightshift controls: the words every agent's
/// table shares.
pub mod instead {
    pub const PROMPT: &str = "the prompt is the routine's `prompt:`";
    pub const OUTPUT: &str = "Nightshift reads the agent's own event stream and sets its format";
    pub const MODE: &str = "use `mode:` (plan, edit, auto, skip)";
    pub const MODEL: &str = "use `model:`";
    pub const EFFORT: &str = "use `effort:`";
    pub const SESSION: &str = "each run is a session of its own";
    pub const NOT_SHARED: &str = "an unattended run is never shared";
    pub const NOT_INTERACTIVE: &str = "a run nobody watches cannot be interactive";
}

/// Why `arg` may not be given in `args:` for the agent `d` drives, if it may not.
pub fn refused_arg(d: &dyn AgentDriver, arg: &str) -> Option<String> {
    if let Some(why) = d.refused_arg(arg) {
        return Some(why);
    }
    let (flag, why) = d.controlled_args().iter().find(|(flag, _)| arg == *flag || arg.strip_prefix(flag).is_some_and(|rest| rest.starts_with('=')))?;
    Some(format!("`{flag}` is Nightshift's to set for {}: {why}", d.agent().as_str()))
}

/// Why a routine of the agent `d` drives may not set `name` in its `env:`, if it may not.
pub fn refused_env(d: &dyn AgentDriver, name: &str) -> Option<String> {
    let (_, why) = d.controlled_env().iter().find(|(var, _)| *var == name)?;
    Some(format!("`env: {name}` is Nightshift's to set for {}: {why}", d.agent().as_str()))
}

/// Why `config.<key>` may not be given for the agent `d` drives, if it may not. A dotted key
/// (`sandbox_workspace_write.writable_roots`) is judged by its first part.
pub fn refused_config(d: &dyn AgentDriver, key: &str) -> Option<String> {
    let head = key.split('.').next().unwrap_or(key);
    let (_, why) = d.controlled_config().iter().find(|(k, _)| *k == head)?;
    Some(format!("`config.{key}` is Nightshift's to set for {}: {why}", d.agent().as_str()))
}

/// How an agent CLI whose rules name its own tools (Gemini CLI, OpenCode) names what they limit:
/// Claude Code's names are pointed at its own, and a command prefix is taken only on its shell.
pub struct ToolNames {
    /// "Gemini CLI calls that tool", "OpenCode calls that permission".
    pub calls: &'static str,
    /// Claude Code's tool names, and this CLI's for the same tool.
    pub from_claude: &'static [(&'static str, &'static str)],
    /// The shell tool: the only one a rule may give a command prefix.
    pub shell: &'static str,
    /// Whether a name is one of its own, or the words for one that is not.
    pub known: fn(&str) -> Result<(), String>,
}

impl ToolNames {
    /// Why `entry` is not a rule in this CLI's names, if it is not.
    pub fn refused(&self, entry: &str) -> Option<String> {
        let (tool, prefix) = super::call::split_tool_rule(entry);
        // What was written between the parentheses, as written (for the example to write instead).
        let written = entry.split_once('(').map(|(_, rest)| rest.trim_end().trim_end_matches(')').trim());
        let (shell, cli) = (self.shell, self.calls.split(" calls").next().unwrap_or(""));
        if let Some((_, own)) = self.from_claude.iter().find(|(claude, _)| *claude == tool) {
            let example = match written {
                Some(p) if *own == shell => format!("{own}({p})"),
                _ => own.to_string(),
            };
            return Some(format!("`{entry}` is Claude Code's name; {} {own} (write `{example}`)", self.calls));
        }
        if let Err(why) = (self.known)(tool) {
            return Some(format!("`{entry}` {why}"));
        }
        match (written, prefix) {
            (Some(_), _) if tool != shell => Some(format!("`{entry}`: {cli}'s rules take a command prefix only for {shell}")),
            (Some(_), None) => Some(format!("`{entry}`: give the command it starts with, e.g. `{shell}(git status)`")),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::driver;
    use crate::words::Agent;

    fn refused_tool(agent: Agent, entry: &str) -> Option<String> {
        driver(agent).refused_tool_rule(entry)
    }

    #[test]
    fn gemini_rules_name_gemini_tools_and_claude_names_point_at_them() {
        assert_eq!(refused_tool(Agent::Gemini, "read_file"), None);
        assert_eq!(refused_tool(Agent::Gemini, "run_shell_command(git status)"), None);
        assert_eq!(refused_tool(Agent::Gemini, "run_shell_command(git push *)"), None);
        assert_eq!(refused_tool(Agent::Gemini, "Bash(git status)").unwrap(), "`Bash(git status)` is Claude Code's name; Gemini CLI calls that tool run_shell_command (write `run_shell_command(git status)`)");
        assert!(refused_tool(Agent::Gemini, "Read").unwrap().contains("calls that tool read_file"));
        assert!(refused_tool(Agent::Gemini, "read_file(/etc)").unwrap().contains("only for run_shell_command"));
        assert!(refused_tool(Agent::Gemini, "run_shell_command()").unwrap().contains("give the command it starts with"));
        assert!(refused_tool(Agent::Gemini, "read file").unwrap().contains("not a Gemini CLI tool name"));
        assert_eq!(refused_tool(Agent::Claude, "Bash(git status)"), None);
        assert!(driver(Agent::Codex).no_tool_rules().is_some() && driver(Agent::Gemini).no_tool_rules().is_none());
    }

    #[test]
    fn copilot_rules_are_its_permission_patterns_and_other_names_point_at_them() {
        assert_eq!(refused_tool(Agent::Copilot, "shell(git:*)"), None);
        assert_eq!(refused_tool(Agent::Copilot, "write(src/)"), None);
        assert_eq!(refused_tool(Agent::Copilot, "url(github.com)"), None);
        assert_eq!(refused_tool(Agent::Copilot, "MyMCP(my_tool)"), None);
        assert_eq!(refused_tool(Agent::Copilot, "Bash(git push)").unwrap(), "`Bash(git push)`: Copilot CLI calls that permission shell (write `shell(git push)`)");
        assert!(refused_tool(Agent::Copilot, "edit").unwrap().contains("calls that permission write"));
        assert!(refused_tool(Agent::Copilot, "Read").unwrap().contains("reads and searches without asking"));
        assert!(refused_tool(Agent::Copilot, "shell()").unwrap().contains("e.g. `shell(git status)`"));
        assert!(refused_tool(Agent::Copilot, "rm -rf").unwrap().contains("not a Copilot CLI permission"));
    }

    #[test]
    fn opencode_rules_name_its_permissions() {
        assert_eq!(refused_tool(Agent::OpenCode, "read"), None);
        assert_eq!(refused_tool(Agent::OpenCode, "bash(git status)"), None);
        assert_eq!(refused_tool(Agent::OpenCode, "Bash(git push)").unwrap(), "`Bash(git push)` is Claude Code's name; OpenCode calls that permission bash (write `bash(git push)`)");
        assert!(refused_tool(Agent::OpenCode, "Write").unwrap().contains("calls that permission edit"));
        assert!(refused_tool(Agent::OpenCode, "run_shell_command").unwrap().contains("not one of OpenCode's permissions"));
        assert!(refused_tool(Agent::OpenCode, "edit(src/)").unwrap().contains("only for bash"));
        assert!(refused_tool(Agent::OpenCode, "bash()").unwrap().contains("give the command it starts with"));
    }

    #[test]
    fn arguments_nightshift_sets_are_refused_with_what_to_use() {
        assert_eq!(refused_arg(driver(Agent::Claude), "--output-format").unwrap(), "`--output-format` is Nightshift's to set for claude: Nightshift reads the agent's own event stream and sets its format");
        assert_eq!(refused_arg(driver(Agent::Claude), "--model=opus").unwrap(), "`--model` is Nightshift's to set for claude: use `model:`");
        assert!(refused_arg(driver(Agent::Claude), "--append-system-prompt").is_none());
        assert!(refused_arg(driver(Agent::Claude), "--add-dir").is_none());
        assert!(refused_arg(driver(Agent::Codex), "model_reasoning_effort=high").is_some());
        assert!(refused_arg(driver(Agent::Codex), "-c").is_none(), "a -c with another setting is the user's");
        assert!(refused_arg(driver(Agent::Gemini), "--yolo").unwrap().contains("use `mode:`"));
        assert!(refused_arg(driver(Agent::Gemini), "--policy=/tmp/mine.toml").unwrap().contains("use `allow.tools` and `deny.tools`"), "a policy of its own could undo the routine's rules");
    }

    #[test]
    fn each_agent_gets_its_config_in_its_own_form() {
        use serde_json::Value;
        let config = vec![("reasoning_summary".to_string(), Value::from("concise")), ("max_tokens".to_string(), Value::from(4000)), ("tools.web_search".to_string(), Value::Bool(true))];
        assert_eq!(driver(Agent::Codex).config_args(&config), ["-c", "reasoning_summary=\"concise\"", "-c", "max_tokens=4000", "-c", "tools.web_search=true"]);
        let claude = driver(Agent::Claude).config_args(&[("includeCoAuthoredBy".to_string(), Value::Bool(false)), ("cleanupPeriodDays".to_string(), Value::from(7))]);
        assert_eq!(claude[0], "--settings");
        assert_eq!(serde_json::from_str::<Value>(&claude[1]).unwrap(), serde_json::json!({"includeCoAuthoredBy": false, "cleanupPeriodDays": 7}));
        assert!(driver(Agent::Gemini).config_args(&config).is_empty());
        assert_eq!(driver(Agent::Codex).config_args(&[("a".to_string(), serde_json::json!({"a": [1, "x\"y"]}))]), ["-c", "a={\"a\"=[1, \"x\\\"y\"]}"]);
    }

    #[test]
    fn settings_that_routine_fields_decide_are_refused_with_the_field() {
        assert_eq!(refused_config(driver(Agent::Claude), "permissions").unwrap(), "`config.permissions` is Nightshift's to set for claude: use `mode:`, `allow:` and `deny:`");
        assert_eq!(refused_config(driver(Agent::Codex), "sandbox_workspace_write.writable_roots").unwrap(), "`config.sandbox_workspace_write.writable_roots` is Nightshift's to set for codex: use `mode:` and `allow.dirs`");
        assert!(refused_config(driver(Agent::Codex), "reasoning_summary").is_none());
        assert!(driver(Agent::Gemini).config_ignored().is_some() && driver(Agent::Claude).config_ignored().is_none());
    }

    #[test]
    fn every_driver_says_its_own_word() {
        for agent in Agent::ALL {
            assert_eq!(driver(*agent).agent(), *agent);
        }
    }
}
