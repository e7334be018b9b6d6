//! The arguments of each agent CLI that Nightshift sets itself, so a routine's `args:` cannot
//! fight them: the output it reads, the permission mode, the prompt, the model and effort, the
//! session. Each comes with the routine field to use instead (or why it is Nightshift's). The
//! agent modules (`agents/`) build these very arguments; this table is what `args:` is checked
//! against.

use crate::words::Agent;

/// `(argument, what to use instead)` for `agent`. An argument matches as itself or as
/// `argument=value`.
pub fn controlled(agent: Agent) -> &'static [(&'static str, &'static str)] {
    const PROMPT: &str = "the prompt is the routine's `prompt:`";
    const OUTPUT: &str = "Nightshift reads the agent's own event stream and sets its format";
    const MODE: &str = "use `mode:` (plan, edit, auto, skip)";
    const MODEL: &str = "use `model:`";
    const EFFORT: &str = "use `effort:`";
    const SESSION: &str = "each run is a session of its own";
    match agent {
        Agent::Claude => &[
            ("-p", PROMPT),
            ("--print", PROMPT),
            ("--output-format", OUTPUT),
            ("--input-format", OUTPUT),
            ("--verbose", OUTPUT),
            ("--permission-mode", MODE),
            ("--dangerously-skip-permissions", "use `mode: skip`"),
            ("--model", MODEL),
            ("--effort", EFFORT),
            ("-r", SESSION),
            ("--resume", SESSION),
            ("-c", SESSION),
            ("--continue", SESSION),
            ("--session-id", SESSION),
            ("--tools", "use `allow.tools`"),
            ("--allowedTools", "use `allow.tools`"),
            ("--allowed-tools", "use `allow.tools`"),
            ("--disallowedTools", "use `deny.tools`"),
            ("--disallowed-tools", "use `deny.tools`"),
        ],
        Agent::Codex => &[
            ("exec", "Nightshift runs `codex exec` itself"),
            ("--json", OUTPUT),
            ("--color", OUTPUT),
            ("-s", MODE),
            ("--sandbox", MODE),
            ("--full-auto", MODE),
            ("--dangerously-bypass-approvals-and-sandbox", "use `mode: skip`"),
            ("-m", MODEL),
            ("--model", MODEL),
        ],
        Agent::Gemini => &[
            ("-p", PROMPT),
            ("--prompt", PROMPT),
            ("-o", OUTPUT),
            ("--output-format", OUTPUT),
            ("--approval-mode", MODE),
            ("-y", MODE),
            ("--yolo", MODE),
            ("-m", MODEL),
            ("--model", MODEL),
            ("--policy", "use `allow.tools` and `deny.tools` (Nightshift writes the policy)"),
            ("--admin-policy", "use `allow.tools` and `deny.tools` (Nightshift writes the policy)"),
            ("--allowed-tools", "use `allow.tools`"),
        ],
        Agent::OpenCode => &[
            ("run", "Nightshift runs `opencode run` itself"),
            ("--format", OUTPUT),
            ("--print-logs", OUTPUT),
            ("--agent", MODE),
            ("--auto", "use `mode: skip`"),
            ("-m", MODEL),
            ("--model", MODEL),
            ("--variant", EFFORT),
            ("-c", SESSION),
            ("--continue", SESSION),
            ("-s", SESSION),
            ("--session", SESSION),
            ("--fork", SESSION),
            ("--share", "an unattended run is never shared"),
            ("--attach", "Nightshift runs OpenCode here, with the account's config"),
            ("--pure", "Nightshift's plugin tells it when OpenCode waits out a rate limit"),
            ("-i", "a run nobody watches cannot be interactive"),
            ("--interactive", "a run nobody watches cannot be interactive"),
        ],
        Agent::Copilot => &[
            ("-p", PROMPT),
            ("--prompt", PROMPT),
            ("-i", "a run nobody watches cannot be interactive"),
            ("--interactive", "a run nobody watches cannot be interactive"),
            ("--acp", "a run nobody watches cannot be interactive"),
            ("--output-format", OUTPUT),
            ("-s", OUTPUT),
            ("--silent", OUTPUT),
            ("--usage-output-file", OUTPUT),
            ("--mode", MODE),
            ("--plan", MODE),
            ("--autopilot", MODE),
            ("--allow-all-tools", MODE),
            ("--allow-all-paths", "use `mode: skip`"),
            ("--allow-all", "use `mode: skip`"),
            ("--yolo", "use `mode: skip`"),
            ("--allow-tool", "use `allow.tools`"),
            ("--deny-tool", "use `deny.tools`"),
            ("--model", MODEL),
            ("--reasoning-effort", EFFORT),
            ("-r", SESSION),
            ("--resume", SESSION),
            ("--continue", SESSION),
            ("--session-id", SESSION),
            ("--connect", SESSION),
            ("--share", "an unattended run is never shared"),
            ("--share-gist", "an unattended run is never shared"),
            ("--remote", "an unattended run is never shared"),
        ],
        Agent::Command => &[],
    }
}

/// The environment variables an agent CLI reads its run settings from and Nightshift sets for it,
/// with the fields to use instead: a routine's `env:` naming one is an error (it would win).
pub fn controlled_env(agent: Agent) -> &'static [(&'static str, &'static str)] {
    match agent {
        Agent::OpenCode => &[
            ("OPENCODE_CONFIG_CONTENT", "use `mode:`, `allow:`, `deny:` and `config:`"),
            ("OPENCODE_PERMISSION", "use `mode:`, `allow:` and `deny:`"),
        ],
        Agent::Copilot => &[
            ("COPILOT_ALLOW_ALL", "use `mode:` (skip allows everything)"),
        ],
        _ => &[],
    }
}

/// Why a routine of `agent` may not set `name` in its `env:`, if it may not.
pub fn refused_env(agent: Agent, name: &str) -> Option<String> {
    let (_, why) = controlled_env(agent).iter().find(|(var, _)| *var == name)?;
    Some(format!("`env: {name}` is Nightshift's to set for {}: {why}", agent.as_str()))
}

/// Why `arg` may not be given in `args:` for `agent`, if it may not.
pub fn refused(agent: Agent, arg: &str) -> Option<String> {
    // Codex takes settings as `-c key=value`: its reasoning effort is `effort:`'s.
    if agent == Agent::Codex && arg.trim_start_matches("-c").trim_start_matches("--config").trim_start_matches('=').trim().starts_with("model_reasoning_effort") {
        return Some(format!("`{arg}` sets Codex's reasoning effort: use `effort:`"));
    }
    let (flag, why) = controlled(agent).iter().find(|(flag, _)| arg == *flag || arg.strip_prefix(flag).is_some_and(|rest| rest.starts_with('=')))?;
    Some(format!("`{flag}` is Nightshift's to set for {}: {why}", agent.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_nightshift_sets_are_refused_with_what_to_use() {
        assert_eq!(refused(Agent::Claude, "--output-format").unwrap(), "`--output-format` is Nightshift's to set for claude: Nightshift reads the agent's own event stream and sets its format");
        assert_eq!(refused(Agent::Claude, "--model=opus").unwrap(), "`--model` is Nightshift's to set for claude: use `model:`");
        assert!(refused(Agent::Claude, "--append-system-prompt").is_none());
        assert!(refused(Agent::Claude, "--add-dir").is_none());
        assert!(refused(Agent::Codex, "model_reasoning_effort=high").is_some());
        assert!(refused(Agent::Codex, "-c").is_none(), "a -c with another setting is the user's");
        assert!(refused(Agent::Gemini, "--yolo").unwrap().contains("use `mode:`"));
        assert!(refused(Agent::Gemini, "--policy=/tmp/mine.toml").unwrap().contains("use `allow.tools` and `deny.tools`"), "a policy of its own could undo the routine's rules");
    }
}
