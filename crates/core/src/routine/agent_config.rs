//! `config.<key>` (agents-cli): settings for the agent, passed in the form its CLI takes them —
//! Claude Code's `--settings '{json}'` (any key of its settings.json), Codex's `-c key=value`
//! (any key of its config.toml), OpenCode's `OPENCODE_CONFIG_CONTENT` (any key of its opencode.json). Gemini CLI and Copilot CLI take no settings on their command lines: there a key is
//! a warning, never silently dropped. A key that would undo what a routine field decides (the
//! permission mode, the tools, the credentials, the model, the effort) is an error naming that
//! field, as `args:` is (`agent_args`).

use super::yaml::Node;
use crate::words::Agent;
use serde_json::Value;

/// The settings each agent may not take from `config.`, with the field to use instead.
fn controlled(agent: Agent) -> &'static [(&'static str, &'static str)] {
    match agent {
        Agent::Claude => &[
            ("permissions", "use `mode:`, `allow:` and `deny:`"),
            ("env", "use `env:`"),
            ("apiKeyHelper", "the account's credential is Nightshift's to pass: use `account:`"),
            ("effortLevel", "use `effort:`"),
        ],
        Agent::Codex => &[
            ("model_reasoning_effort", "use `effort:`"),
            ("approval_policy", "use `mode:`"),
            ("sandbox_mode", "use `mode:`"),
            ("sandbox_workspace_write", "use `mode:` and `allow.dirs`"),
            ("model_provider", "the account's credential is Nightshift's to pass: use `account:`"),
        ],
        Agent::OpenCode => &[
            ("permission", "use `mode:`, `allow:` and `deny:`"),
            ("plugin", "Nightshift's plugin tells it when OpenCode waits out a rate limit"),
            ("share", "an unattended run is never shared"),
            ("provider", "the account's key is Nightshift's to pass: use `account:` (and the provider settings in the account's own opencode.json)"),
            ("agent", "use `mode:` (plan runs OpenCode's plan agent)"),
        ],
        Agent::Gemini | Agent::Copilot | Agent::Command => &[],
    }
}

/// Why `config.<key>` may not be given for `agent`, if it may not. A dotted Codex key
/// (`sandbox_workspace_write.writable_roots`) is judged by its first part.
pub fn refused(agent: Agent, key: &str) -> Option<String> {
    let head = key.split('.').next().unwrap_or(key);
    let (_, why) = controlled(agent).iter().find(|(k, _)| *k == head)?;
    Some(format!("`config.{key}` is Nightshift's to set for {}: {why}", agent.as_str()))
}

/// Why `agent` ignores `config.` keys, if it does.
pub fn ignored_by(agent: Agent) -> Option<&'static str> {
    match agent {
        Agent::Gemini => Some("Gemini CLI takes no settings on its command line (put it in ~/.gemini/settings.json)"),
        Agent::Copilot => Some("Copilot CLI takes no settings on its command line (put it in the account's settings.json, or use `copilot config`)"),
        Agent::Command => Some("a `command` routine has no agent to pass it to"),
        Agent::Claude | Agent::Codex | Agent::OpenCode => None,
    }
}

/// A YAML value as JSON: `true`/`false`, numbers and `null` unquoted as themselves, other
/// scalars as strings, lists and mappings as arrays and objects.
pub fn to_json(node: &Node) -> Value {
    match node {
        Node::Scalar { .. } if node.is_null() => Value::Null,
        Node::Scalar { value, quoted: false, .. } => match value.as_str() {
            "true" | "True" | "TRUE" => Value::Bool(true),
            "false" | "False" | "FALSE" => Value::Bool(false),
            v => v.parse::<i64>().map(Value::from).ok().or_else(|| v.parse::<f64>().ok().filter(|f| f.is_finite()).map(Value::from)).unwrap_or_else(|| Value::String(v.to_string())),
        },
        Node::Scalar { value, .. } => Value::String(value.clone()),
        Node::Seq { items, .. } => Value::Array(items.iter().map(to_json).collect()),
        Node::Map { entries, .. } => Value::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Node::Scalar { value, .. } => value.clone(),
                        other => to_json(other).to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
    }
}

/// The arguments that pass `config` to `agent`'s CLI (empty when there is none).
pub fn args(agent: Agent, config: &[(String, Value)]) -> Vec<String> {
    if config.is_empty() {
        return Vec::new();
    }
    match agent {
        Agent::Claude => {
            let settings: serde_json::Map<String, Value> = config.iter().cloned().collect();
            vec!["--settings".to_string(), Value::Object(settings).to_string()]
        }
        Agent::Codex => config.iter().flat_map(|(k, v)| ["-c".to_string(), format!("{k}={}", toml_value(v))]).collect(),
        // OpenCode's settings travel in OPENCODE_CONFIG_CONTENT (`agents::opencode::config_content`).
        Agent::Gemini | Agent::OpenCode | Agent::Copilot | Agent::Command => Vec::new(),
    }
}

/// A JSON value as a TOML value, for Codex's `-c key=value` (which parses the value as TOML).
fn toml_value(v: &Value) -> String {
    match v {
        // TOML has no null; an empty string is the nearest "nothing".
        Value::Null => "\"\"".to_string(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        // A JSON string is a valid TOML basic string (the same escapes).
        Value::String(_) => v.to_string(),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!("{{{}}}", map.iter().map(|(k, v)| format!("{}={}", Value::String(k.clone()), toml_value(v))).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_gets_its_own_form() {
        let config = vec![("reasoning_summary".to_string(), Value::from("concise")), ("max_tokens".to_string(), Value::from(4000)), ("tools.web_search".to_string(), Value::Bool(true))];
        assert_eq!(args(Agent::Codex, &config), ["-c", "reasoning_summary=\"concise\"", "-c", "max_tokens=4000", "-c", "tools.web_search=true"]);
        let claude = args(Agent::Claude, &[("includeCoAuthoredBy".to_string(), Value::Bool(false)), ("cleanupPeriodDays".to_string(), Value::from(7))]);
        assert_eq!(claude[0], "--settings");
        assert_eq!(serde_json::from_str::<Value>(&claude[1]).unwrap(), serde_json::json!({"includeCoAuthoredBy": false, "cleanupPeriodDays": 7}));
        assert!(args(Agent::Gemini, &config).is_empty());
        assert_eq!(toml_value(&serde_json::json!({"a": [1, "x\"y"]})), "{\"a\"=[1, \"x\\\"y\"]}");
    }

    #[test]
    fn settings_that_routine_fields_decide_are_refused_with_the_field() {
        assert_eq!(refused(Agent::Claude, "permissions").unwrap(), "`config.permissions` is Nightshift's to set for claude: use `mode:`, `allow:` and `deny:`");
        assert_eq!(refused(Agent::Codex, "sandbox_workspace_write.writable_roots").unwrap(), "`config.sandbox_workspace_write.writable_roots` is Nightshift's to set for codex: use `mode:` and `allow.dirs`");
        assert!(refused(Agent::Codex, "reasoning_summary").is_none());
        assert!(ignored_by(Agent::Gemini).is_some() && ignored_by(Agent::Claude).is_none());
    }
}
