//! A run's log as people read it: assistant text, tool calls and their results, retries, errors —
//! one [`LogEntry`] per meaningful event instead of raw JSON. Each agent module turns one line of
//! its stream into entries ([`super::AgentDriver::transcript`]); `view::log` pages through a file.

use serde::Serialize;

/// Longest text of one entry; the rest is in the raw log. Agent output can hold megabyte lines.
pub const MAX_ENTRY_CHARS: usize = 4000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub enum LogKind {
    /// What the agent said.
    Text,
    /// A tool call ("Bash: gh pr list").
    Tool,
    /// What a tool returned.
    ToolResult,
    /// An API retry or a rate-limit notice.
    Retry,
    Error,
    /// Session facts (model, working directory).
    Info,
    /// The agent's final event (turns, cost).
    Result,
    /// A plain line (commands, or anything not in the agent's format).
    Output,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct LogEntry {
    pub kind: LogKind,
    pub text: String,
    /// A streamed continuation of the previous entry (Gemini sends text in deltas).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "typescript", ts(as = "Option<bool>", optional))]
    pub joins: bool,
}

impl LogEntry {
    pub fn new(kind: LogKind, text: impl AsRef<str>) -> LogEntry {
        LogEntry { kind, text: clip(text.as_ref()), joins: false }
    }
    pub fn output(line: &str) -> LogEntry {
        LogEntry::new(LogKind::Output, line)
    }
}

/// Cut a text to [`MAX_ENTRY_CHARS`], saying how much was left out.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_ENTRY_CHARS) {
        Some((at, _)) => {
            let rest = text[at..].chars().count();
            format!("{}… ({rest} more characters in the raw log)", &text[..at])
        }
        None => text.to_string(),
    }
}

/// A tool's input in one short line: `{"command": "gh pr list"}` → `gh pr list`.
pub fn tool_input(input: &serde_json::Value) -> String {
    let pick = ["command", "file_path", "path", "pattern", "url", "query", "description", "prompt"];
    if let Some(s) = pick.iter().find_map(|k| input.get(*k).and_then(|v| v.as_str())) {
        return crate::words::first_line(s, 300);
    }
    match input {
        serde_json::Value::Null => String::new(),
        serde_json::Value::Object(m) if m.is_empty() => String::new(),
        other => crate::words::first_line(&other.to_string(), 300),
    }
}

/// The text of a tool result: a string, or an array of `{type: text, text}` blocks.
pub fn result_text(content: &serde_json::Value) -> String {
    match content {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A line that is not a JSON object of the agent's stream is shown as it is.
pub fn not_json(line: &str) -> Vec<LogEntry> {
    if line.trim().is_empty() {
        Vec::new()
    } else {
        vec![LogEntry::output(line)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_clipped_with_a_count() {
        let t = clip(&"é".repeat(MAX_ENTRY_CHARS + 5));
        assert!(t.ends_with("… (5 more characters in the raw log)"), "{}", &t[t.len() - 60..]);
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn tool_inputs_in_one_line() {
        assert_eq!(tool_input(&serde_json::json!({"command": "gh pr list\n--state open"})), "gh pr list");
        assert_eq!(tool_input(&serde_json::json!({"a": 1})), r#"{"a":1}"#);
        assert_eq!(result_text(&serde_json::json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])), "a\nb");
    }
}
