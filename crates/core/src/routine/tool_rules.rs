//! What each agent CLI can express of `allow.tools` and `deny.tools`, so the loader refuses a rule
//! it cannot — with the agent and the rule named — instead of a rule silently dropped. The agent
//! modules (`agents/`) turn the accepted rules into each CLI's own form.

use crate::words::Agent;

/// Why `agent` cannot take tool rules at all, if it cannot.
pub fn cannot(agent: Agent) -> Option<&'static str> {
    match agent {
        Agent::Codex => Some("Codex CLI has no tool list — its sandbox is its limit (`mode: plan` runs it read-only)"),
        _ => None,
    }
}

/// Claude Code's tool names, and what Gemini CLI calls the same tool.
const GEMINI_NAMES: [(&str, &str); 9] = [
    ("Bash", "run_shell_command"),
    ("Read", "read_file"),
    ("Write", "write_file"),
    ("Edit", "replace"),
    ("MultiEdit", "replace"),
    ("Grep", "grep_search"),
    ("Glob", "glob"),
    ("LS", "list_directory"),
    ("WebFetch", "web_fetch"),
];

/// A rule as its tool and command prefix: `run_shell_command(git status)` → (`run_shell_command`,
/// `Some("git status")`), a trailing `*` dropped (a prefix is a prefix); `read_file` → (`read_file`,
/// `None`). Both the loader's check and the agents' own forms read a rule through this.
pub fn split(entry: &str) -> (&str, Option<&str>) {
    match entry.trim().split_once('(') {
        Some((tool, rest)) => {
            let prefix = rest.trim_end().trim_end_matches(')').trim_end().trim_end_matches('*').trim_end();
            (tool.trim(), (!prefix.is_empty()).then_some(prefix))
        }
        None => (entry.trim(), None),
    }
}

/// Why `entry` of `allow.tools` / `deny.tools` cannot be expressed for `agent`, if it cannot.
/// Gemini CLI's rules name its own tools (`read_file`, `run_shell_command(git status)`: a command
/// prefix, its policy engine's `commandPrefix`); Claude Code's names are pointed at their Gemini
/// equivalents, and a prefix on another tool is refused (the policy engine has none).
pub fn refused(agent: Agent, entry: &str) -> Option<String> {
    if agent != Agent::Gemini {
        return None;
    }
    let (tool, prefix) = split(entry);
    // What was written between the parentheses, as written (for the example to write instead).
    let written = entry.split_once('(').map(|(_, rest)| rest.trim_end().trim_end_matches(')').trim());
    if let Some((_, gemini)) = GEMINI_NAMES.iter().find(|(claude, _)| *claude == tool) {
        let example = match written {
            Some(p) if *gemini == "run_shell_command" => format!("{gemini}({p})"),
            _ => gemini.to_string(),
        };
        return Some(format!("`{entry}` is Claude Code's name; Gemini CLI calls that tool {gemini} (write `{example}`)"));
    }
    if tool.is_empty() || !tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*') {
        return Some(format!("`{entry}` is not a Gemini CLI tool name (such as read_file or run_shell_command)"));
    }
    match (written, prefix) {
        (Some(_), _) if tool != "run_shell_command" => Some(format!("`{entry}`: Gemini CLI's rules take a command prefix only for run_shell_command")),
        (Some(_), None) => Some(format!("`{entry}`: give the command it starts with, e.g. `run_shell_command(git status)`")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_rules_name_gemini_tools_and_claude_names_point_at_them() {
        assert_eq!(refused(Agent::Gemini, "read_file"), None);
        assert_eq!(refused(Agent::Gemini, "run_shell_command(git status)"), None);
        assert_eq!(refused(Agent::Gemini, "run_shell_command(git push *)"), None);
        assert_eq!(refused(Agent::Gemini, "Bash(git status)").unwrap(), "`Bash(git status)` is Claude Code's name; Gemini CLI calls that tool run_shell_command (write `run_shell_command(git status)`)");
        assert!(refused(Agent::Gemini, "Read").unwrap().contains("calls that tool read_file"));
        assert!(refused(Agent::Gemini, "read_file(/etc)").unwrap().contains("only for run_shell_command"));
        assert!(refused(Agent::Gemini, "run_shell_command()").unwrap().contains("give the command it starts with"));
        assert!(refused(Agent::Gemini, "read file").unwrap().contains("not a Gemini CLI tool name"));
        assert_eq!(refused(Agent::Claude, "Bash(git status)"), None);
        assert!(cannot(Agent::Codex).is_some() && cannot(Agent::Gemini).is_none());
    }
}
