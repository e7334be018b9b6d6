//! `nightshift.toml` as last read, read again when it changed: an account added with `nightshiftctl
//! accounts add`, a new webhook, `max_parallel` — they take effect in a running app or daemon
//! without a restart, as routine files do. A look costs one `stat`, at most once a second.
//!
//! A file that no longer parses keeps the last good settings in force and becomes one of the home's
//! problems (its `file:line:col` and that the previous settings still apply), shown by the tray and
//! the window until the file is fixed.

use crate::error::Result;
use crate::settings::Settings;
use super::problems::{About, Problems};
use std::path::PathBuf;
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
}

fn fingerprint(path: &PathBuf) -> Fingerprint {
    std::fs::metadata(path).ok().map(|m| (m.modified().ok(), m.len()))
}

impl LiveSettings {
    /// Read the settings at start: an invalid file is an error then (nothing good to fall back to).
    pub(crate) fn open(path: PathBuf) -> Result<LiveSettings> {
        let seen = fingerprint(&path);
        let settings = Settings::load(&path)?;
        Ok(LiveSettings { path, current: Mutex::new((seen, Arc::new(settings))), checked: Mutex::new(Some(Instant::now())) })
    }

    /// The next look reads the file's identity again (the scheduler saw it change).
    pub(crate) fn forget(&self) {
        *self.checked.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The settings now. `problems` gets (or loses) the sentence about an invalid file; returns
    /// whether the settings changed with this look.
    pub(crate) fn get(&self, problems: &Problems) -> (Arc<Settings>, bool) {
        {
            let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
            if checked.is_some_and(|t| t.elapsed() < RECENT) {
                return (Arc::clone(&self.current.lock().unwrap_or_else(|e| e.into_inner()).1), false);
            }
            *checked = Some(Instant::now());
        }
        let seen = fingerprint(&self.path);
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.0 == seen {
            return (Arc::clone(&current.1), false);
        }
        current.0 = seen;
        match Settings::load(&self.path) {
            Ok(settings) => {
                problems.clear(&About::Settings);
                tracing::info!(file = %self.path.display(), "settings changed: read again");
                current.1 = Arc::new(settings);
                (Arc::clone(&current.1), true)
            }
            Err(e) => {
                tracing::warn!("{}", e.message);
                let sentence = format!("{} — the previous settings stay in effect until it is fixed", e.message);
                problems.tell(About::Settings, sentence);
                (Arc::clone(&current.1), false)
            }
        }
    }
}
