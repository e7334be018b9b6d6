//! `nightshift.toml` as last read, read again when it changed: an account added with `nightshiftctl
//! accounts add`, a new webhook, `max_parallel` — they take effect in a running app or daemon
//! without a restart, as routine files do. A look costs one `stat`, at most once a second.
//!
//! Reading never announces: the faces are told a change where the file watch fires (the
//! scheduler's loop, [`LiveSettings::reread`]) — also a change a read between saw first.
//!
//! A file that no longer parses keeps the last good settings in force and becomes one of the home's
//! problems (its `file:line:col` and that the previous settings still apply), shown by the tray and
//! the window until the file is fixed.

use crate::error::Result;
use crate::settings::Settings;
use super::problems::{About, Problems};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The file's identity when it was read: (modified, length), or `None` when there was no file.
type Fingerprint = Option<(Option<SystemTime>, u64)>;

/// How old a look is trusted.
const RECENT: Duration = Duration::from_secs(1);

pub(crate) struct LiveSettings {
    path: PathBuf,
    current: Mutex<(Fingerprint, Arc<Settings>)>,
    /// When the file's identity was last looked at (`None`: look at the next call).
    checked: Mutex<Option<Instant>>,
    /// How many times the settings changed while this engine ran, and how many of those changes
    /// the faces were told of (a read may see a change before the watch fires).
    changes: AtomicU64,
    told: AtomicU64,
}

fn fingerprint(path: &PathBuf) -> Fingerprint {
    std::fs::metadata(path).ok().map(|m| (m.modified().ok(), m.len()))
}

impl LiveSettings {
    /// Read the settings at start: an invalid file is an error then (nothing good to fall back to).
    pub(crate) fn open(path: PathBuf) -> Result<LiveSettings> {
        let seen = fingerprint(&path);
        let settings = Settings::load(&path)?;
        Ok(LiveSettings { path, current: Mutex::new((seen, Arc::new(settings))), checked: Mutex::new(Some(Instant::now())), changes: AtomicU64::new(0), told: AtomicU64::new(0) })
    }

    /// The file watch fired: read the file now (not within a second) and say whether the
    /// settings changed since the faces were last told — by this read or by one before it.
    pub(crate) fn reread(&self, problems: &Problems) -> bool {
        *self.checked.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.get(problems);
        let changes = self.changes.load(Ordering::SeqCst);
        self.told.swap(changes, Ordering::SeqCst) != changes
    }

    /// The settings now. `problems` gets (or loses) the sentence about an invalid file.
    pub(crate) fn get(&self, problems: &Problems) -> Arc<Settings> {
        {
            let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
            if checked.is_some_and(|t| t.elapsed() < RECENT) {
                return Arc::clone(&self.current.lock().unwrap_or_else(|e| e.into_inner()).1);
            }
            *checked = Some(Instant::now());
        }
        let seen = fingerprint(&self.path);
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.0 == seen {
            return Arc::clone(&current.1);
        }
        current.0 = seen;
        match Settings::load(&self.path) {
            Ok(settings) => {
                problems.clear(&About::Settings);
                tracing::info!(file = %self.path.display(), "settings changed: read again");
                current.1 = Arc::new(settings);
                self.changes.fetch_add(1, Ordering::SeqCst);
                Arc::clone(&current.1)
            }
            Err(e) => {
                tracing::warn!("{}", e.message);
                let sentence = format!("{} — the previous settings stay in effect until it is fixed", e.message);
                problems.tell(About::Settings, sentence);
                Arc::clone(&current.1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A change a read saw first is still told once where the watch fires; a watch that fires for
    /// an edit that changed nothing tells nothing.
    #[test]
    fn a_change_is_told_once_by_the_watch_whoever_read_it_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.toml");
        std::fs::write(&path, "max_parallel = 2\n").unwrap();
        let (live, problems) = (LiveSettings::open(path.clone()).unwrap(), Problems::default());
        assert!(!live.reread(&problems), "nothing changed yet");
        std::fs::write(&path, "max_parallel = 3\n# longer now\n").unwrap();
        *live.checked.lock().unwrap() = None;
        assert_eq!(live.get(&problems).max_parallel, 3, "a read sees the change");
        assert!(live.reread(&problems), "the watch tells it");
        assert!(!live.reread(&problems), "once");
    }
}
