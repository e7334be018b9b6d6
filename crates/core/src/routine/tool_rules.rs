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
/// prefix, its policy engine's `commandPrefix`), OpenCode's its permissions (`read`, `bash(git
/// status)`); Claude Code's names are pointed at theirs, and a prefix on any tool but the shell's
/// is refused (neither has one).
pub fn refused(agent: Agent, entry: &str) -> Option<String> {
    let own = match agent {
        Agent::Gemini => &GEMINI,
        Agent::OpenCode => &OPENCODE,
        Agent::Copilot => return copilot_refused(entry),
        _ => return None,
    };
    own.refused(entry)
}

/// Why `entry` is not a Copilot CLI permission pattern, if it is not. Its patterns are passed as
/// written — `shell(git:*)` (every git command), `shell(git push)`, `write`, `write(src/)`,
/// `url(github.com)`, `MyMCP(tool)` — so only their kind is checked: Claude Code's and Copilot's
/// own tool names are pointed at the kind, and reading needs no permission there at all.
fn copilot_refused(entry: &str) -> Option<String> {
    let (kind, inside) = match entry.trim().split_once('(') {
        Some((kind, rest)) => (kind.trim(), Some(rest.trim_end().trim_end_matches(')').trim())),
        None => (entry.trim(), None),
    };
    let pointed = [("Bash", "shell"), ("bash", "shell"), ("Write", "write"), ("Edit", "write"), ("MultiEdit", "write"), ("create", "write"), ("edit", "write"), ("WebFetch", "url"), ("web_fetch", "url")];
    if let Some((_, own)) = pointed.iter().find(|(name, _)| *name == kind) {
        let example = match inside {
            Some(p) if !p.is_empty() && *own == "shell" => format!("shell({p})"),
            _ => own.to_string(),
        };
        return Some(format!("`{entry}`: Copilot CLI calls that permission {own} (write `{example}`)"));
    }
    if ["Read", "Grep", "Glob", "LS", "view", "grep", "glob"].contains(&kind) {
        return Some(format!("`{entry}`: Copilot CLI reads and searches without asking; its rules are for shell, write, url and MCP servers"));
    }
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.') {
        return Some(format!("`{entry}` is not a Copilot CLI permission (shell, write, url, or an MCP server's name)"));
    }
    match inside {
        Some("") => Some(format!("`{entry}`: write `{kind}` for all of it, or what it is limited to, e.g. `shell(git status)`")),
        _ => None,
    }
}

/// OpenCode's permission keys (its tools; `edit` covers write and patch too): what its rules
/// name. `bash(PREFIX)` limits a command by how it starts.
pub const OPENCODE_PERMISSIONS: [&str; 12] = ["read", "edit", "glob", "grep", "list", "bash", "task", "webfetch", "websearch", "codesearch", "todowrite", "skill"];

/// How an agent CLI names what its rules limit.
struct Names {
    /// "Gemini CLI calls that tool", "OpenCode calls that permission".
    calls: &'static str,
    /// Claude Code's tool names, and this CLI's for the same tool.
    from_claude: &'static [(&'static str, &'static str)],
    /// The shell tool: the only one a rule may give a command prefix.
    shell: &'static str,
    /// Whether a name is one of its own, or the words for one that is not.
    known: fn(&str) -> Result<(), String>,
}

const GEMINI: Names = Names {
    calls: "Gemini CLI calls that tool",
    from_claude: &GEMINI_NAMES,
    shell: "run_shell_command",
    known: |tool| match !tool.is_empty() && tool.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*') {
        true => Ok(()),
        false => Err("is not a Gemini CLI tool name (such as read_file or run_shell_command)".into()),
    },
};

const OPENCODE: Names = Names {
    calls: "OpenCode calls that permission",
    from_claude: &[("Bash", "bash"), ("Read", "read"), ("Write", "edit"), ("Edit", "edit"), ("MultiEdit", "edit"), ("Grep", "grep"), ("Glob", "glob"), ("LS", "list"), ("WebFetch", "webfetch")],
    shell: "bash",
    known: |tool| match OPENCODE_PERMISSIONS.contains(&tool) {
        true => Ok(()),
        false => Err(format!("is not one of OpenCode's permissions ({})", OPENCODE_PERMISSIONS.join(", "))),
    },
};

impl Names {
    fn refused(&self, entry: &str) -> Option<String> {
        let (tool, prefix) = split(entry);
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

    #[test]
    fn copilot_rules_are_its_permission_patterns_and_other_names_point_at_them() {
        assert_eq!(refused(Agent::Copilot, "shell(git:*)"), None);
        assert_eq!(refused(Agent::Copilot, "write(src/)"), None);
        assert_eq!(refused(Agent::Copilot, "url(github.com)"), None);
        assert_eq!(refused(Agent::Copilot, "MyMCP(my_tool)"), None);
        assert_eq!(refused(Agent::Copilot, "Bash(git push)").unwrap(), "`Bash(git push)`: Copilot CLI calls that permission shell (write `shell(git push)`)");
        assert!(refused(Agent::Copilot, "edit").unwrap().contains("calls that permission write"));
        assert!(refused(Agent::Copilot, "Read").unwrap().contains("reads and searches without asking"));
        assert!(refused(Agent::Copilot, "shell()").unwrap().contains("e.g. `shell(git status)`"));
        assert!(refused(Agent::Copilot, "rm -rf").unwrap().contains("not a Copilot CLI permission"));
    }

    #[test]
    fn opencode_rules_name_its_permissions() {
        assert_eq!(refused(Agent::OpenCode, "read"), None);
        assert_eq!(refused(Agent::OpenCode, "bash(git status)"), None);
        assert_eq!(refused(Agent::OpenCode, "Bash(git push)").unwrap(), "`Bash(git push)` is Claude Code's name; OpenCode calls that permission bash (write `bash(git push)`)");
        assert!(refused(Agent::OpenCode, "Write").unwrap().contains("calls that permission edit"));
        assert!(refused(Agent::OpenCode, "run_shell_command").unwrap().contains("not one of OpenCode's permissions"));
        assert!(refused(Agent::OpenCode, "edit(src/)").unwrap().contains("only for bash"));
        assert!(refused(Agent::OpenCode, "bash()").unwrap().contains("give the command it starts with"));
    }
}
