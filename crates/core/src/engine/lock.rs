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

impl SchedulerLock {
    /// Take the lock for `who` (e.g. "nightshiftctl daemon"), or say who has it.
    pub fn acquire(home: &Home, who: &str) -> Result<SchedulerLock> {
        let path = home.data_dir().join("scheduler.lock");
        std::fs::create_dir_all(home.data_dir()).map_err(|e| Error::io("create directory", home.data_dir(), &e))?;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io("open", &path, &e))?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let holder = Self::holder(home).unwrap_or_else(|| "another process".to_string());
            return Err(Error::new(
                ErrorCode::AlreadyScheduled,
                format!("{holder} already schedules this home ({}); not scheduling here. Manual runs still work.", home.data_dir().display()),
            ));
        }
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = write!(file, "{who} (pid {})", std::process::id());
        let _ = file.flush();
        Ok(SchedulerLock { file })
    }
}

impl SchedulerLock {
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
