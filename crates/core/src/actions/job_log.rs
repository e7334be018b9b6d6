//! Reading a run's output back from its job's log. The wrapper (`wrapper.js`) frames every line
//! the agent prints — `ns|o|` its stdout, `ns|e|` its stderr, `ns|x|N` its exit code — and GitHub
//! puts a timestamp before each line of a job's log (`2026-12-06T02:00:01.1234567Z ns|o|{…}`).
//! Everything else in the log (the runner's own lines, the steps' headers) is left out.

/// What the wrapper said in a job's log.
#[derive(Debug, Default, PartialEq)]
pub struct JobOutput {
    pub stdout: String,
    pub stderr: String,
    /// `None`: the log ends before the wrapper said how the agent ended (the job was cancelled,
    /// timed out, or its runner lost).
    pub exit_code: Option<i32>,
    /// The repository secret the run needed and did not find (nothing was started).
    pub missing_secret: Option<String>,
}

pub fn read(log: &str) -> JobOutput {
    let mut out = JobOutput::default();
    for line in log.strip_prefix('\u{feff}').unwrap_or(log).lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let text = without_timestamp(line);
        if let Some(rest) = text.strip_prefix("ns|o|") {
            out.stdout.push_str(rest);
            out.stdout.push('\n');
        } else if let Some(rest) = text.strip_prefix("ns|e|") {
            out.stderr.push_str(rest);
            out.stderr.push('\n');
        } else if let Some(name) = text.strip_prefix("ns|m|") {
            out.missing_secret = Some(name.trim().to_string());
        } else if let Some(code) = text.strip_prefix("ns|x|") {
            out.exit_code = code.trim().parse().ok();
        }
    }
    out
}

/// A log line without GitHub's leading timestamp (`YYYY-MM-DDTHH:MM:SS.fffffffZ `).
fn without_timestamp(line: &str) -> &str {
    match line.split_once(' ') {
        Some((stamp, rest)) if stamp.len() >= 20 && stamp.ends_with('Z') && stamp.as_bytes().get(10) == Some(&b'T') => rest,
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_wrappers_lines_are_read_and_their_text_is_kept_whole() {
        let log = "\u{feff}2026-12-06T02:00:00.0000000Z ##[group]Run node - <<'NIGHTSHIFT_WRAPPER'\n\
                   2026-12-06T02:00:00.1000000Z // `ns|o|` a line of its stdout\n\
                   2026-12-06T02:00:01.1234567Z ns|o|{\"type\":\"result\",\"result\":\"a b  c\"}\r\n\
                   2026-12-06T02:00:01.2234567Z ns|e|warning: x | y\n\
                   2026-12-06T02:00:01.3234567Z ns|o|\n\
                   2026-12-06T02:00:02.0000000Z ns|x|3\n\
                   2026-12-06T02:00:02.1000000Z ##[error]Process completed with exit code 1.\n";
        assert_eq!(read(log), JobOutput { stdout: "{\"type\":\"result\",\"result\":\"a b  c\"}\n\n".into(), stderr: "warning: x | y\n".into(), exit_code: Some(3), missing_secret: None });
        assert_eq!(read("2026-12-06T02:00:01.1234567Z ns|m|NIGHTSHIFT_CLAUDE_A\n2026-12-06T02:00:01.2234567Z ns|x|78\n").missing_secret.as_deref(), Some("NIGHTSHIFT_CLAUDE_A"));
        assert_eq!(read("2026-12-06T02:00:01.1234567Z ns|o|half").exit_code, None, "cut short: no exit code");
    }
}
