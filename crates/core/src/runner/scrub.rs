//! Keeping secrets out of a run's logs on disk. The run's process writes its logs directly (so
//! they survive the engine), which means a command that echoes its token would keep it there;
//! these functions mask it in place.
//!
//! Whoever scrubs records how far it got (`scrubbed` in the run directory), so the next one
//! resumes there: the engine every few seconds while it follows a run, the engine that settles
//! it, another engine after a crash — and, when no engine follows the run any more (the CLI that
//! started it returned, or its engine died), the run's own wrapper, which calls the binary that
//! started it with [`SCRUB_ARG`] once the agent has exited (after recording the exit code, before
//! it exits itself: nobody settles a run whose wrapper lives). So settling scans only what nobody
//! scrubbed yet, whatever the log's size.

use crate::accounts::redact::Redactor;
use crate::accounts::AgentAuth;
use crate::run_dir::RunDir;
use crate::words::Agent;
use std::path::Path;

/// `<exe> __scrub-run-logs <run dir>`: the wrapper's request to scrub what is left of its logs.
pub const SCRUB_ARG: &str = "__scrub-run-logs";

/// Mask secrets in the run's current logs from where the last scrub stopped, and record where
/// this one did. `finished`: the process is done writing (a key still growing at the end of a
/// live log is left for the next pass). Blocking: call off the async workers.
pub fn scrub_run_logs(redactor: &Redactor, dir: &Path, finished: bool) -> std::io::Result<()> {
    let dir = RunDir::at(dir);
    let before = dir.scrubbed();
    let mut after = before;
    let mut failed = None;
    for (i, log) in [dir.stdout(), dir.stderr()].into_iter().enumerate() {
        match redactor.scrub_file(&log, before[i], finished) {
            Ok(end) => after[i] = end,
            Err(e) => failed = Some(e),
        }
    }
    if after != before {
        dir.set_scrubbed(after)?;
    }
    failed.map_or(Ok(()), Err)
}

/// Serve the wrapper's request if this process was started for one (call it first thing in
/// `main`; it returns when not). The secrets are the ones the run was given — each agent's
/// secret variable in the environment the wrapper passes on — plus the key shapes every scrub
/// masks. Exits 0 when the logs are scrubbed, 1 when they could not be (settling scrubs the rest).
pub fn serve_wrapper_request() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(SCRUB_ARG)) {
        return;
    }
    let Some(dir) = args.next() else { std::process::exit(2) };
    let redactor = Redactor::default();
    for auth in Agent::ALL.iter().filter_map(|a| AgentAuth::of(*a)) {
        if let Ok(secret) = std::env::var(auth.secret_var) {
            redactor.register(&secret);
        }
    }
    std::process::exit(if scrub_run_logs(&redactor, Path::new(&dir), true).is_ok() { 0 } else { 1 });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_dir::{self, STDERR_LOG, STDOUT_LOG};

    const KEY: &str = "sk-ant-api03-0123456789abcdefghij";

    #[test]
    fn each_scrub_resumes_where_the_last_one_stopped_and_says_where_it_did() {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (dir.path().join(STDOUT_LOG), dir.path().join(STDERR_LOG));
        let redactor = Redactor::default();
        redactor.register("a-registered-token-42");
        std::fs::write(&out, format!("one {KEY}\n")).unwrap();
        std::fs::write(&err, "token a-registered-token-42 here\n").unwrap();
        scrub_run_logs(&redactor, dir.path(), false).unwrap();
        let first = std::fs::read_to_string(&out).unwrap();
        assert_eq!(first, format!("one {}\n", "*".repeat(KEY.len())));
        assert_eq!(std::fs::read_to_string(&err).unwrap(), format!("token {} here\n", "*".repeat(21)));
        assert_eq!(run_dir::scrubbed(dir.path()), [first.len() as u64, 33]);

        // Bytes before the recorded offset are not read again: a key planted there (as if it had
        // been scrubbed already) stays, and one written after it is masked.
        let mut text = format!("{KEY}\n");
        text.push_str(&first[KEY.len() + 1..]);
        text.push_str(&format!("two {KEY}\n"));
        std::fs::write(&out, &text).unwrap();
        scrub_run_logs(&redactor, dir.path(), true).unwrap();
        let second = std::fs::read_to_string(&out).unwrap();
        assert!(second.starts_with(KEY), "{second}");
        assert!(second.ends_with(&format!("two {}\n", "*".repeat(KEY.len()))), "{second}");
        assert_eq!(run_dir::scrubbed(dir.path())[0], second.len() as u64);

        // A log shorter than what was scrubbed of it is a new log: all of it is read.
        std::fs::write(&out, format!("{KEY}\n")).unwrap();
        scrub_run_logs(&redactor, dir.path(), true).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("{}\n", "*".repeat(KEY.len())));
    }

    #[test]
    fn a_missing_or_damaged_record_means_nothing_was_scrubbed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(run_dir::scrubbed(dir.path()), [0, 0]);
        std::fs::write(dir.path().join(run_dir::SCRUBBED_FILE), "12").unwrap();
        assert_eq!(run_dir::scrubbed(dir.path()), [0, 0]);
        std::fs::write(dir.path().join(STDOUT_LOG), format!("{KEY}\n")).unwrap();
        scrub_run_logs(&Redactor::default(), dir.path(), true).unwrap();
        assert!(!std::fs::read_to_string(dir.path().join(STDOUT_LOG)).unwrap().contains(KEY));
    }
}
