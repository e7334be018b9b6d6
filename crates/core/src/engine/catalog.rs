//! The routines as last read, re-read only when a routine file changed. Dispatching, recovery and
//! notifications look routines up all the time; parsing every file each time made a burst of runs
//! cost O(runs × files). A fresh look costs a directory listing and a `stat` per file; the queue's
//! dispatch passes (hundreds a second in a burst) accept a set looked at within the last second.

use crate::home::Home;
use crate::routine::{self, RoutineSet};
use crate::settings::Settings;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// (file, modified, length) of every routine file: what the cached set was read from.
type Fingerprint = Vec<(PathBuf, Option<SystemTime>, u64)>;

#[derive(Default)]
pub(crate) struct Catalog {
    cached: Mutex<Option<(Fingerprint, Arc<RoutineSet>)>>,
    /// When the files were last compared with the cached set.
    checked: Mutex<Option<Instant>>,
}

/// How old a look the dispatch passes accept.
const RECENT: Duration = Duration::from_secs(1);

impl Catalog {
    /// The routines as looked at within the last second (for hot paths).
    pub(crate) fn recent(&self, home: &Home, settings: &Settings) -> Arc<RoutineSet> {
        let fresh_enough = self.checked.lock().unwrap_or_else(|e| e.into_inner()).is_some_and(|t| t.elapsed() < RECENT);
        if fresh_enough {
            if let Some((_, set)) = self.cached.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                return Arc::clone(set);
            }
        }
        self.get(home, settings)
    }

    /// The routines now: the cached set while no file changed, else freshly read.
    pub(crate) fn get(&self, home: &Home, settings: &Settings) -> Arc<RoutineSet> {
        *self.checked.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        let files = routine::routine_files(&routine::home_dirs(home, settings));
        let fingerprint: Fingerprint = files
            .iter()
            .map(|f| {
                let meta = std::fs::metadata(f).ok();
                (f.clone(), meta.as_ref().and_then(|m| m.modified().ok()), meta.map(|m| m.len()).unwrap_or(0))
            })
            .collect();
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, set)) = cached.as_ref() {
            if *seen == fingerprint {
                return Arc::clone(set);
            }
        }
        let set = Arc::new(routine::load_files(home, &files));
        *cached = Some((fingerprint, Arc::clone(&set)));
        release_parse_garbage();
        set
    }
}

/// Parsing a thousand routine files leaves a few MB of freed YAML events and strings in the
/// allocator, which glibc keeps; a long-lived engine (the app, the daemon) would carry them all
/// day. Hand them back to the OS once after each (re)load.
fn release_parse_garbage() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
