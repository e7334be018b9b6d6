//! Page through a run's log for the window: a chunk at a time from a byte offset, as readable
//! entries (the agent's transcript) or raw text, secrets masked. Following a live run is asking
//! again from `next_offset`; only whole lines are consumed until the run is over, so an entry is
//! never cut in half by the writer.

use crate::agents::{AgentDriver, LogEntry};
use crate::engine::Engine;
use crate::error::Result;
use crate::run_dir::{read_range, RunDir};
use serde::Serialize;
use std::path::Path;

/// Most bytes read per request: big enough for a whole typical run, small enough to stay quick
/// when a run wrote gigabytes (the window asks again for more).
pub const CHUNK_BYTES: u64 = 512 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub enum LogStream {
    Stdout,
    Stderr,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct LogChunk {
    /// Readable entries (when asked for readable).
    pub entries: Vec<LogEntry>,
    /// The bytes as text (when asked for raw).
    pub raw: Option<String>,
    pub offset: u64,
    /// Ask from here for what comes next.
    pub next_offset: u64,
    /// The file's size when read; `next_offset < size` means there is more already.
    pub size: u64,
}

/// Read one chunk of `path` from `offset`. `complete`: the writer is done, so a last line without
/// a newline is consumed too.
pub fn read_chunk(path: &Path, driver: &dyn AgentDriver, offset: u64, readable: bool, complete: bool, max: u64) -> LogChunk {
    let (buf, size) = read_range(path, offset, max);
    let full = buf.len() as u64 == max;
    let consumed = match buf.iter().rposition(|b| *b == b'\n') {
        Some(i) if !(complete && offset + buf.len() as u64 >= size) => i + 1,
        // A single line longer than a whole chunk: take it as it is (it is clipped below).
        None if !full && !complete => 0,
        _ => buf.len(),
    };
    let bytes = &buf[..consumed];
    let text = String::from_utf8_lossy(bytes);
    let mut chunk = LogChunk { entries: Vec::new(), raw: None, offset, next_offset: offset + consumed as u64, size };
    if readable {
        for line in text.lines() {
            for e in driver.transcript(line) {
                match chunk.entries.last_mut() {
                    Some(prev) if e.joins && prev.kind == e.kind => prev.text = crate::agents::transcript::clip(&(prev.text.clone() + &e.text)),
                    _ => chunk.entries.push(e),
                }
            }
        }
    } else {
        chunk.raw = Some(text.into_owned());
    }
    chunk
}

/// A chunk of a run's stdout or stderr, secrets masked.
pub fn run_log(engine: &Engine, run_id: &str, stream: LogStream, offset: u64, readable: bool) -> Result<LogChunk> {
    let run = engine.run(run_id)?;
    if let Some(t) = run.pruned_at {
        return Err(crate::error::Error::new(
            crate::error::ErrorCode::Usage,
            format!("the log of run {} was removed {} by retention (keep_runs_days, keep_runs_per_routine); its record stays", run.id, crate::words::fmt_time(&t)),
        ));
    }
    let dir = RunDir::at(Path::new(&run.run_dir));
    let (file, driver): (_, &dyn AgentDriver) = match stream {
        LogStream::Stdout => (dir.stdout(), crate::agents::driver(run.agent)),
        LogStream::Stderr => (dir.stderr(), &crate::agents::command::Command),
    };
    let mut chunk = read_chunk(&file, driver, offset, readable, run.status.is_final(), CHUNK_BYTES);
    for e in &mut chunk.entries {
        e.text = engine.redact(&e.text);
    }
    chunk.raw = chunk.raw.map(|r| engine.redact(&r));
    Ok(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{claude::Claude, command::Command, gemini::Gemini, LogKind};

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
    }

    fn kinds(c: &LogChunk) -> Vec<LogKind> {
        c.entries.iter().map(|e| e.kind).collect()
    }

    #[test]
    fn a_real_claude_stream_reads_as_a_transcript() {
        let path = fixture("claude-2.1.332/success.jsonl");
        let c = read_chunk(&path, &Claude, 0, true, true, CHUNK_BYTES);
        assert_eq!(kinds(&c), [LogKind::Info, LogKind::Text, LogKind::Result], "{:#?}", c.entries);
        assert!(c.entries[0].text.starts_with("Session started · model "), "{}", c.entries[0].text);
        assert_eq!(c.entries[1].text, "## PR review\n\nAll 3 open PRs look good. No action needed.");
        assert_eq!(c.entries[2].text, "Finished · 1 turn · $0.0002");
        assert_eq!(c.next_offset, c.size);
    }

    #[test]
    fn retries_and_auth_errors_are_spelled_out() {
        let c = read_chunk(&fixture("claude-2.1.332/500-retries.jsonl"), &Claude, 0, true, true, CHUNK_BYTES);
        let texts: Vec<&str> = c.entries.iter().map(|e| e.text.as_str()).collect();
        assert!(texts.contains(&"API retry 1/2: server_error (HTTP 500)"), "{texts:#?}");
        let c = read_chunk(&fixture("claude-2.1.332/401.jsonl"), &Claude, 0, true, true, CHUNK_BYTES);
        let last = c.entries.last().unwrap();
        assert_eq!(last.kind, LogKind::Error);
        assert!(last.text.contains("401 Invalid bearer token"), "{}", last.text);
        assert!(c.entries.iter().any(|e| e.text == "API error: authentication_failed"));
    }

    const REPORT: &str = "## Nightly triage\n\n2 new issues labelled; nothing urgent.";

    /// A log of `lines` (for tool calls: the loopback fakes answer with text only, so these lines
    /// follow each CLI's documented stream format).
    fn log_of(lines: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        std::fs::write(&path, lines).unwrap();
        (dir, path)
    }

    #[test]
    fn gemini_deltas_join_into_one_message() {
        let c = read_chunk(&fixture("gemini-0.61.0/success.jsonl"), &Gemini, 0, true, true, CHUNK_BYTES);
        let text: Vec<&LogEntry> = c.entries.iter().filter(|e| e.kind == LogKind::Text).collect();
        assert_eq!(text.len(), 1, "{:#?}", c.entries);
        assert_eq!(text[0].text, REPORT);
        assert_eq!(c.entries.last().unwrap().kind, LogKind::Result);
        let (_d, tools) = log_of(concat!(
            r##"{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"gh pr list"}}"##, "\n",
            r##"{"type":"tool_result","tool_id":"t1","status":"success","output":"#12 Fix flaky test"}"##, "\n",
        ));
        let c = read_chunk(&tools, &Gemini, 0, true, true, CHUNK_BYTES);
        assert!(c.entries.iter().any(|e| e.kind == LogKind::Tool && e.text == "run_shell_command: gh pr list"), "{:#?}", c.entries);
        assert!(c.entries.iter().any(|e| e.kind == LogKind::ToolResult && e.text == "#12 Fix flaky test"));
    }

    #[test]
    fn codex_commands_and_their_output() {
        let c = read_chunk(&fixture("codex-0.171.0/success.jsonl"), &crate::agents::codex::Codex, 0, true, true, CHUNK_BYTES);
        let lines: Vec<(LogKind, &str)> = c.entries.iter().map(|e| (e.kind, e.text.as_str())).collect();
        assert!(lines.contains(&(LogKind::Text, REPORT)), "{lines:#?}");
        assert_eq!(lines.last().unwrap().0, LogKind::Result);
        let (_d, tools) = log_of(concat!(
            r##"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'gh pr list'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"##, "\n",
            r##"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'gh pr list'","aggregated_output":"#12 Fix flaky test\n","exit_code":0,"status":"completed"}}"##, "\n",
        ));
        let c = read_chunk(&tools, &crate::agents::codex::Codex, 0, true, true, CHUNK_BYTES);
        let lines: Vec<(LogKind, &str)> = c.entries.iter().map(|e| (e.kind, e.text.as_str())).collect();
        assert!(lines.contains(&(LogKind::Tool, "$ bash -lc 'gh pr list'")), "{lines:#?}");
        assert!(lines.contains(&(LogKind::ToolResult, "#12 Fix flaky test\n(exit 0)")), "{lines:#?}");
    }

    #[test]
    fn a_live_log_is_consumed_in_whole_lines_and_paged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        std::fs::write(&path, "one\ntwo\nthr").unwrap();
        let c = read_chunk(&path, &Command, 0, true, false, CHUNK_BYTES);
        assert_eq!(c.entries.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(), ["one", "two"]);
        assert_eq!(c.next_offset, 8);
        // The writer finishes the line; asking again from next_offset continues exactly there.
        std::fs::write(&path, "one\ntwo\nthree\n").unwrap();
        let c = read_chunk(&path, &Command, c.next_offset, false, false, CHUNK_BYTES);
        assert_eq!(c.raw.as_deref(), Some("three\n"));
        // Small chunks page through everything without losing or repeating a line.
        let mut seen = Vec::new();
        let mut at = 0;
        loop {
            let c = read_chunk(&path, &Command, at, true, true, 5);
            seen.extend(c.entries.into_iter().map(|e| e.text));
            if c.next_offset == at || c.next_offset >= c.size {
                break;
            }
            at = c.next_offset;
        }
        assert_eq!(seen, ["one", "two", "three"]);
    }

    #[test]
    fn a_huge_line_is_clipped_not_loaded_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.log");
        std::fs::write(&path, format!("{}\nafter\n", "x".repeat(100_000))).unwrap();
        let c = read_chunk(&path, &Command, 0, true, false, 50_000);
        assert_eq!(c.next_offset, 50_000);
        assert!(c.entries[0].text.len() < 5_000 && c.entries[0].text.ends_with("more characters in the raw log)"));
    }
}
