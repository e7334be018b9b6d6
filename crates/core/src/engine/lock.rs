//! One scheduler per home: an OS file lock (`flock`) on `scheduler.lock` in the data dir.
//!
//! The lock dies with its process (no stale-lock cleanup needed). The file also says who holds
//! it, so a second daemon — or the tray app while a daemon runs — can say exactly which process
//! already schedules this home. Manual runs never need the lock: the database coordinates them.

use crate::error::{Error, ErrorCode, Result};
use crate::home::Home;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::io::AsRawFd;

pub struct SchedulerLock {
    file: File,
}

/// Why the lock was not taken.
#[derive(Debug)]
pub enum NotTaken {
    /// Another process schedules this home: who, in its own words ("nightshiftctl daemon (pid
    /// 4242)"; "another process" when it did not say).
    Held { holder: String },
    /// The lock file could not be made or opened (an unusable data folder).
    Failed(Error),
}

impl NotTaken {
    /// As an engine error: `already_scheduled` with the holder, or the I/O error.
    pub fn into_error(self, home: &Home) -> Error {
        match self {
            NotTaken::Held { holder } => Error::new(
                ErrorCode::AlreadyScheduled,
                format!("{holder} already schedules this home ({}); not scheduling here. Manual runs still work.", home.data_dir().display()),
            ),
            NotTaken::Failed(e) => e,
        }
    }
}

impl SchedulerLock {
    /// Take the lock for `who` (e.g. "nightshiftctl daemon"), or an error that says who has it.
    pub fn acquire(home: &Home, who: &str) -> Result<SchedulerLock> {
        Self::take(home, who).map_err(|n| n.into_error(home))
    }

    /// Take the lock for `who`, or learn who holds it — for a face that then views and controls.
    pub fn take(home: &Home, who: &str) -> std::result::Result<SchedulerLock, NotTaken> {
        let path = home.data_dir().join("scheduler.lock");
        std::fs::create_dir_all(home.data_dir()).map_err(|e| NotTaken::Failed(Error::io("create directory", home.data_dir(), &e)))?;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| NotTaken::Failed(Error::io("open", &path, &e)))?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(NotTaken::Held { holder: Self::holder(home).unwrap_or_else(|| "another process".to_string()) });
        }
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = write!(file, "{who} (pid {})", std::process::id());
        let _ = file.flush();
        Ok(SchedulerLock { file })
    }

    /// Who holds the lock, as it wrote ("nightshiftctl daemon (pid 4242)"), if anyone said.
    pub fn holder(home: &Home) -> Option<String> {
        let mut text = String::new();
        File::open(home.data_dir().join("scheduler.lock")).ok()?.read_to_string(&mut text).ok()?;
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_string())
    }
}

impl Drop for SchedulerLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
        // SAFETY: unlocking our own descriptor.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_lock_names_its_holder_and_is_free_again_once_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let first = SchedulerLock::take(&home, "the first").unwrap();
        match SchedulerLock::take(&home, "the second") {
            Err(NotTaken::Held { holder }) => assert_eq!(holder, format!("the first (pid {})", std::process::id())),
            other => panic!("expected the lock held: {:?}", other.map(|_| ())),
        }
        let err = SchedulerLock::acquire(&home, "the second").err().unwrap();
        assert_eq!(err.code, ErrorCode::AlreadyScheduled);
        assert!(err.message.starts_with("the first (pid "), "{}", err.message);
        drop(first);
        assert!(SchedulerLock::take(&home, "the second").is_ok());
    }

    #[test]
    fn an_unusable_data_folder_is_an_error_not_a_holder() {
        let dir = tempfile::tempdir().unwrap();
        // The data folder's place is taken by a file.
        std::fs::write(dir.path().join("blocker"), "").unwrap();
        let home = Home::at(dir.path().join("blocker"));
        assert!(matches!(SchedulerLock::take(&home, "x"), Err(NotTaken::Failed(_))));
    }
}
