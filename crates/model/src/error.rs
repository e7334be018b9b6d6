//! One error type for the whole engine: a stable machine `code` plus a human `message`.
//!
//! Both faces rely on it: the CLI prints `error: <message>` and picks its exit code from the
//! code; the tray/UI receives `{code, message}` as JSON. Messages are written for the user and say
//! what to do. They never contain secrets (callers redact before building one).

use serde::{Deserialize, Serialize};

/// Stable identifiers; the UI and scripts may match on these, so never rename one.
/// (`Deserialize`: another home's `serve` answers errors as `{code, message}`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A routine file (or several) has problems; the message lists each as file:line:col.
    RoutineInvalid,
    /// No routine with that name.
    RoutineNotFound,
    /// No run with that id.
    RunNotFound,
    /// `nightshift.toml` is malformed.
    SettingsInvalid,
    /// The SQLite database cannot be opened, migrated or written.
    StoreUnavailable,
    /// A file or directory could not be read or written.
    Io,
    /// The run's process could not be started.
    SpawnFailed,
    /// The caller asked for something impossible (bad argument).
    Usage,
    /// Another process already runs the scheduler for this home.
    AlreadyScheduled,
    /// What the caller acted on changed under it or is taken (a routine file changed on disk since
    /// it was opened, a name already used, a routine with a run going): nothing was written.
    Conflict,
    /// Another home (`[[homes]]`) could not be reached: no answer, SSH refused, no `serve` there.
    HomeUnreachable,
    /// A read-only token or `serve --read-only` refused a command that would change the home.
    ReadOnly,
    /// A person asked to run a routine here whose `devices:` does not list this machine (it
    /// runs anyway when asked again with `here`).
    OtherDevice,
    /// An agent asked Nightshift's MCP server for something `[mcp]` in nightshift.toml does not
    /// allow (the message names the setting that would).
    NotAllowed,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::RoutineInvalid => "routine_invalid",
            ErrorCode::RoutineNotFound => "routine_not_found",
            ErrorCode::RunNotFound => "run_not_found",
            ErrorCode::SettingsInvalid => "settings_invalid",
            ErrorCode::StoreUnavailable => "store_unavailable",
            ErrorCode::Io => "io",
            ErrorCode::SpawnFailed => "spawn_failed",
            ErrorCode::Usage => "usage",
            ErrorCode::AlreadyScheduled => "already_scheduled",
            ErrorCode::Conflict => "conflict",
            ErrorCode::HomeUnreachable => "home_unreachable",
            ErrorCode::ReadOnly => "read_only",
            ErrorCode::OtherDevice => "other_device",
            ErrorCode::NotAllowed => "not_allowed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error { code, message: message.into() }
    }

    /// An I/O failure on `path`, phrased so the user knows which file and why.
    pub fn io(action: &str, path: &std::path::Path, err: &std::io::Error) -> Self {
        let cause = io_cause_words(err);
        Error::new(ErrorCode::Io, format!("cannot {action} {}: {err}{cause}", path.display()))
    }
}

/// The words for an I/O error that is about the storage rather than the file: disk full, quota,
/// read-only file system, a failing device. `None` for everything else.
pub fn io_cause(err: &std::io::Error) -> Option<&'static str> {
    match err.raw_os_error()? {
        libc::ENOSPC => Some("the disk is full; free some space"),
        libc::EDQUOT => Some("your disk quota is used up; free some space or ask for a larger quota"),
        libc::EROFS => Some("the file system is read-only"),
        libc::EIO => Some("the disk reported an I/O error; check the device"),
        _ => None,
    }
}

/// [`io_cause`] as the end of a message (" — the disk is full; free some space"), or nothing.
pub fn io_cause_words(err: &std::io::Error) -> String {
    io_cause(err).map(|c| format!(" — {c}")).unwrap_or_default()
}

impl From<rusqlite::Error> for Error {
    fn from(err: rusqlite::Error) -> Self {
        let hint = match err.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => {
                " — the database file (nightshift.db in the Nightshift home) is damaged; move it aside or restore it from a backup"
            }
            Some(rusqlite::ErrorCode::DiskFull) => " — the disk is full; free some space",
            Some(rusqlite::ErrorCode::ReadOnly) => " — the database is read-only; check the permissions of the Nightshift home",
            Some(rusqlite::ErrorCode::SystemIoFailure) => " — the disk may be full, read-only or failing",
            _ => "",
        };
        Error::new(ErrorCode::StoreUnavailable, format!("database error: {err}{hint}"))
    }
}
