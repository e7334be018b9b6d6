//! Reading the end of a log, not the whole of it.
//!
//! A run's outcome and report sit at the end of its stream (Claude's `result` event, Codex's
//! `turn.completed`…). Reading only the tail makes settling a 300 MB log cost the same as a small
//! one. The window grows (×4) only while the event we need has not appeared in it, up to a cap.

use std::path::Path;

pub const INITIAL_WINDOW: u64 = 256 * 1024;
pub const MAX_WINDOW: u64 = 64 * 1024 * 1024;

#[derive(Debug, Clone, Default)]
pub struct LogTail {
    /// Complete lines in the window, oldest first (a cut first line is dropped).
    pub lines: Vec<String>,
    /// The window does not reach the start of the file.
    pub cut: bool,
    /// The file's size when read.
    pub len: u64,
}

impl LogTail {
    /// The last `window` bytes of `path` (missing file → empty).
    pub fn read(path: &Path, window: u64) -> LogTail {
        let Ok(meta) = std::fs::metadata(path) else { return LogTail::default() };
        let start = meta.len().saturating_sub(window);
        let (buf, len) = crate::run_dir::read_range(path, start, window);
        let text = String::from_utf8_lossy(&buf);
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        if start > 0 && !lines.is_empty() {
            lines.remove(0);
        }
        LogTail { lines, cut: start > 0, len }
    }

    /// Read a growing window until `found` says the lines hold what is needed (or the window
    /// covers the file, or the cap is reached).
    pub fn read_until(path: &Path, found: impl Fn(&[String]) -> bool) -> LogTail {
        let mut window = INITIAL_WINDOW;
        loop {
            let tail = LogTail::read(path, window);
            if !tail.cut || window >= MAX_WINDOW || found(&tail.lines) {
                return tail;
            }
            window = (window * 4).min(MAX_WINDOW);
        }
    }

    /// The last non-empty line, trimmed.
    pub fn last_line(&self) -> Option<&str> {
        self.lines.iter().rev().map(|l| l.trim()).find(|l| !l.is_empty())
    }

    /// The last `n` lines joined, for a command's report.
    pub fn last_lines(&self, n: usize) -> String {
        let start = self.lines.len().saturating_sub(n);
        self.lines[start..].join("\n")
    }
}

/// Parse `line` as JSON only if it could be the event we look for (cheap substring test first:
/// most lines of a big stream are not).
pub fn json_if(line: &str, needle: &str) -> Option<serde_json::Value> {
    if line.contains(needle) && line.trim_start().starts_with('{') {
        serde_json::from_str(line).ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_first_line_is_dropped_and_window_grows_until_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut text = String::from("{\"type\":\"result\",\"result\":\"early\"}\n");
        for i in 0..100_000 {
            text.push_str(&format!("{{\"type\":\"noise\",\"i\":{i}}}\n"));
        }
        std::fs::write(&path, &text).unwrap();
        let tail = LogTail::read(&path, 100);
        assert!(tail.cut);
        assert!(tail.lines.iter().all(|l| l.starts_with("{\"type\":\"noise\"")), "{:?}", tail.lines);
        let grown = LogTail::read_until(&path, |lines| lines.iter().any(|l| l.contains("\"result\"")));
        assert!(grown.lines.iter().any(|l| l.contains("early")));
        assert_eq!(grown.last_line(), Some("{\"type\":\"noise\",\"i\":99999}"));
    }
}
