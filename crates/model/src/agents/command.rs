//! Plain shell commands: `sh -c <command>`. The exit code decides; the report is the tail of stdout.

use crate::words::first_line;
use super::driver::{AgentDriver, Outcome, RunOutput};
use super::tail::LogTail;
use crate::run::Reason;
use crate::words::Agent;

/// Lines of stdout kept as a command's report.
const REPORT_LINES: usize = 40;

pub struct Command;

impl AgentDriver for Command {
    fn agent(&self) -> Agent {
        Agent::Command
    }

    fn config_ignored(&self) -> Option<&'static str> {
        Some("a `command` routine has no agent to pass it to")
    }

    fn program(&self) -> &'static str {
        "/bin/sh"
    }
    fn args(&self, call: &super::call::Call<'_>) -> Vec<String> {
        vec!["-c".into(), call.prompt.into()]
    }
    fn install_hint(&self) -> &'static str {
        "a POSIX shell at /bin/sh is required"
    }
    fn progress(&self, _line: &str) -> Option<String> {
        None
    }
    fn has_progress(&self) -> bool {
        false
    }
    fn classify(&self, out: &RunOutput<'_>) -> Outcome {
        let stdout = LogTail::read(&out.stdout_path(), 64 * 1024);
        match out.exit_code {
            Some(0) => {
                let report = stdout.last_lines(REPORT_LINES);
                let mut o = Outcome::completed((!report.trim().is_empty()).then_some(report));
                o.from_final_event = true;
                o
            }
            code => {
                let stderr = out.stderr_tail();
                let detail = stderr.last_line().or(stdout.last_line()).map(|l| first_line(l, 300));
                let what = match code {
                    Some(127) => "command not found (exit 127)".to_string(),
                    Some(c) => format!("exited with code {c}"),
                    None => "ended without an exit code".to_string(),
                };
                let mut o = Outcome::failed(Reason::ExitNonzero, match detail {
                    Some(d) if !d.is_empty() => format!("{what}: {d}"),
                    _ => what,
                });
                o.from_final_event = code.is_some();
                o
            }
        }
    }
}
