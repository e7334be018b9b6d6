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

/// How long a lock whose recorded holder is dead is waited for.
const DEAD_HOLDER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The pid in a holder's words ("nightshiftctl daemon (pid 4242)").
fn holder_pid(holder: &str) -> Option<u32> {
    holder.rsplit_once("(pid ")?.1.strip_suffix(')')?.parse().ok()
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
        let locked = || unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if !locked() {
            // Held, but its holder is gone (killed a moment ago): what still holds it is a process
            // it was starting (between fork and exec a child shares the descriptor), which lets go
            // within moments. Waited for, briefly — a daemon restarted right after a kill takes over.
            let holder = Self::holder(home);
            let gone = holder.as_deref().and_then(holder_pid).is_some_and(|pid| !crate::runner::process::same_process_alive(pid, None));
            let deadline = std::time::Instant::now() + DEAD_HOLDER_WAIT;
            let mut taken = false;
            while gone && !taken && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(50));
                taken = locked();
            }
            if !taken {
                return Err(NotTaken::Held { holder: holder.unwrap_or_else(|| "another process".to_string()) });
            }
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

    /// A daemon killed a moment ago may leave the lock held by a child it was starting (its
    /// descriptor shared until the child's exec): the next daemon waits for it, not refusing.
    #[test]
    fn a_lock_whose_holder_is_dead_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        std::fs::create_dir_all(home.data_dir()).unwrap();
        let path = home.data_dir().join("scheduler.lock");
        // The recorded holder: a process that has ended.
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let pid = dead.id();
        dead.wait().unwrap();
        std::fs::write(&path, format!("nightshiftctl daemon (pid {pid})")).unwrap();
        // What still holds it, for a moment: `flock` holding the file while `sleep` runs.
        let mut holder = std::process::Command::new("flock").arg(&path).args(["sleep", "3"]).spawn().unwrap();
        let held = (0..1000).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            // SAFETY: a probe on a descriptor we own, released at once.
            let f = std::fs::File::open(&path).unwrap();
            let busy = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0;
            busy
        });
        assert!(held, "flock never took the file");
        assert!(SchedulerLock::take(&home, "the next").is_ok(), "taken once the leftover let go");
        holder.wait().unwrap();
        assert_eq!(holder_pid("nightshiftctl daemon (pid 4242)"), Some(4242));
        assert_eq!(holder_pid("another process"), None);
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
