//! A run's directory (`runs/<routine>/<id>/`): the one place that knows its files' names and how
//! a piece of one is read. The runner writes them, agents and settling read them, the views and
//! the CLI show them — all through these names, so none of them imports another for a file name.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A run's directory: where each of its files is. Borrowed from wherever the path is kept (the run
/// record, a driver), so naming a file costs nothing but the join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunDir<'a>(&'a Path);

impl<'a> RunDir<'a> {
    pub fn at(dir: &'a Path) -> RunDir<'a> {
        RunDir(dir)
    }
    pub fn path(self) -> &'a Path {
        self.0
    }
    pub fn stdout(self) -> PathBuf {
        self.0.join(STDOUT_LOG)
    }
    pub fn stderr(self) -> PathBuf {
        self.0.join(STDERR_LOG)
    }
    pub fn exit_code(self) -> PathBuf {
        self.0.join(EXIT_CODE_FILE)
    }
    /// Present while the run holds a call and waits for the user's answer (`on_denial: ask`): its
    /// silence then is no stall.
    pub fn asking(self) -> PathBuf {
        self.0.join("asking")
    }
    /// Present when the run's agent was given Nightshift's prompt tool (`on_denial: ask` held
    /// live: its engine offered the run's sockets); without it, a refused call is asked after the
    /// run.
    pub fn asks_live(self) -> PathBuf {
        self.0.join("asks-live")
    }
    pub fn report(self) -> PathBuf {
        self.0.join(REPORT_FILE)
    }
    pub fn timed_out(self) -> PathBuf {
        self.0.join(TIMED_OUT_FILE)
    }
    pub fn unwatched(self) -> PathBuf {
        self.0.join(UNWATCHED_FILE)
    }
    /// An earlier attempt's log of `stream` ("stdout", "stderr"), kept beside the next one.
    pub fn attempt_log(self, stream: &str, attempt: usize) -> PathBuf {
        self.0.join(attempt_log(stream, attempt))
    }
    /// How far the logs hold no secret any more ([`SCRUBBED_FILE`]).
    pub fn scrubbed(self) -> [u64; 2] {
        scrubbed(self.0)
    }
    pub fn set_scrubbed(self, at: [u64; 2]) -> std::io::Result<()> {
        set_scrubbed(self.0, at)
    }
    /// The sandbox's own folder in the run's (its plan, its proxy's socket and refusals).
    pub fn sandbox(self) -> PathBuf {
        self.0.join(SANDBOX_DIR)
    }
    /// What the sandbox was built from, written before the run starts: a run with it was sandboxed.
    pub fn sandbox_plan(self) -> PathBuf {
        self.sandbox().join(SANDBOX_PLAN_FILE)
    }
    /// Why a run here went without a sandbox (a routine that said `off`, a command's default, a
    /// machine where none can be built and the routine did not ask).
    pub fn sandbox_off(self) -> PathBuf {
        self.sandbox().join("off")
    }
    /// The connections the sandbox's proxy refused, one JSON line each ([`crate::sandbox::Refusal`]).
    pub fn sandbox_refused(self) -> PathBuf {
        self.sandbox().join(SANDBOX_REFUSED_FILE)
    }
    /// Forget how far the logs were scrubbed (the next attempt writes new ones).
    pub fn clear_scrubbed(self) {
        let _ = std::fs::remove_file(self.0.join(SCRUBBED_FILE));
    }
}

/// The sandbox's folder in a sandboxed run's.
pub const SANDBOX_DIR: &str = "sandbox";
/// What the sandbox was built from, in its folder.
pub const SANDBOX_PLAN_FILE: &str = "plan.json";
/// The connections its proxy refused, in its folder.
pub const SANDBOX_REFUSED_FILE: &str = "refused.jsonl";
/// The run's standard output, as its process wrote it (an agent's event stream).
pub const STDOUT_LOG: &str = "stdout.log";
pub const STDERR_LOG: &str = "stderr.log";
/// Made blank at spawn and written over in place by the run's wrapper with its exit code.
pub const EXIT_CODE_FILE: &str = "exit_code";
pub const REPORT_FILE: &str = "report.md";
/// The payload of the event that fired an event run (GitHub Actions' `GITHUB_EVENT_PATH`).
pub const EVENT_FILE: &str = "event.json";
/// Written by the wrapper when the run's wall-clock limit ran out.
pub const TIMED_OUT_FILE: &str = "timed_out";
/// How far `stdout.log` and `stderr.log` hold no secret any more: `<stdout offset> <stderr offset>`.
/// Written after each scrub, so the next scrubber — whichever process it is — resumes there.
pub const SCRUBBED_FILE: &str = "scrubbed";
/// Made by the run's wrapper when the engine that started it no longer follows it (that engine
/// held the other end of the wrapper's stdin: its exit, however it happened, closed it).
pub const UNWATCHED_FILE: &str = "unwatched";

/// The offsets in [`SCRUBBED_FILE`]; nothing scrubbed when it is missing or unreadable (a scrub
/// then starts over, which costs time and loses nothing).
pub fn scrubbed(dir: &Path) -> [u64; 2] {
    let text = std::fs::read_to_string(dir.join(SCRUBBED_FILE)).unwrap_or_default();
    let mut parts = text.split_whitespace().map(|n| n.parse::<u64>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(out), Some(err)) => [out, err],
        _ => [0, 0],
    }
}

/// Written over in place at a fixed width ([`crate::fsutil::write_in_place`]): rewritten every few
/// seconds while a run is followed.
pub fn set_scrubbed(dir: &Path, at: [u64; 2]) -> std::io::Result<()> {
    crate::fsutil::write_in_place(&dir.join(SCRUBBED_FILE), format!("{:>20} {:>20}\n", at[0], at[1]).as_bytes())
}

/// An earlier attempt's log, kept beside the next one: `stdout.attempt-1.log`, …
pub fn attempt_log(stream: &str, attempt: usize) -> String {
    format!("{stream}.attempt-{attempt}.log")
}

/// Up to `max` bytes of `path` from `offset`, and the file's size when read (a missing file, or
/// an offset at or past its end: nothing, and its size).
pub fn read_range(path: &Path, offset: u64, max: u64) -> (Vec<u8>, u64) {
    let mut buf = Vec::new();
    let Ok(mut f) = std::fs::File::open(path) else { return (buf, 0) };
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    if offset < size && f.seek(SeekFrom::Start(offset)).is_ok() {
        buf.reserve(max.min(size - offset) as usize);
        let _ = f.take(max).read_to_end(&mut buf);
    }
    (buf, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_read_from_its_offset_up_to_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STDOUT_LOG);
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_range(&path, 2, 3), (b"234".to_vec(), 10));
        assert_eq!(read_range(&path, 8, 100), (b"89".to_vec(), 10));
        assert_eq!(read_range(&path, 10, 100), (Vec::new(), 10));
        assert_eq!(read_range(&dir.path().join("missing"), 0, 100), (Vec::new(), 0));
    }
}
