//! The routines as last read, re-read only when a routine file changed. Dispatching, recovery and
//! notifications look routines up all the time; parsing every file each time made a burst of runs
//! cost O(runs × files). A fresh look costs a directory listing and a `stat` per file; the queue's
//! dispatch passes (hundreds a second in a burst) accept a set looked at within the last second.
//!
//! A one-shot process (`nightshiftctl run NAME`) that never needed the whole set looks routines up
//! by name through the name index in the database (`store::routine_files`): it parses only the
//! files that changed since they were indexed and the file(s) naming the routine — the same parse
//! and the same duplicate rule as a full load, over fewer files.

use crate::home::Home;
use crate::routine::{self, RoutineSet};
use crate::settings::Settings;
use crate::store::{IndexedFile, Store};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// (file, modified, length) of every routine file: what the cached set was read from.
type Fingerprint = Vec<(PathBuf, Option<SystemTime>, u64)>;
/// The set, with the files and the settings it was read from.
type Cached = (Fingerprint, Arc<Settings>, Arc<RoutineSet>);

#[derive(Default)]
pub(crate) struct Catalog {
    /// With the settings it was read under (a webhook's name decides validity; `import_agents_cli`
    /// adds a folder): new settings mean a new read.
    cached: Mutex<Option<Cached>>,
    /// When the files were last compared with the cached set.
    checked: Mutex<Option<Instant>>,
    /// The by-name lookup's view of the files (file → the name it gives), reused for a second:
    /// a `run --wait` looks up by name several times in a few milliseconds.
    indexed: Mutex<Option<(Instant, Arc<Named>)>>,
}

/// What a by-name lookup found: the routines (or invalid files) claiming the names asked for,
/// loaded as a full load would (two files with one name are both invalid), and every name there is.
pub(crate) struct Found {
    pub set: Arc<RoutineSet>,
    pub names: Vec<String>,
}

/// Each routine file with the name it gives.
type Named = Vec<(PathBuf, String)>;

/// How old a look the dispatch passes accept.
const RECENT: Duration = Duration::from_secs(1);

impl Catalog {
    /// The routines as looked at within the last second (for hot paths).
    pub(crate) fn recent(&self, home: &Home, settings: &Arc<Settings>) -> Arc<RoutineSet> {
        let fresh_enough = self.checked.lock().unwrap_or_else(|e| e.into_inner()).is_some_and(|t| t.elapsed() < RECENT);
        if fresh_enough {
            if let Some((_, _, set)) = self.cached.lock().unwrap_or_else(|e| e.into_inner()).as_ref().filter(|(_, used, _)| Arc::ptr_eq(used, settings)) {
                return Arc::clone(set);
            }
        }
        self.get(home, settings)
    }

    /// The routines named by `wanted` (and every routine name, for "did you mean"): from the
    /// whole set when this process holds one (then `wanted` is never asked — a dispatch pass of the
    /// app or the daemon costs no query for it), else through the name index.
    pub(crate) fn by_name(&self, home: &Home, settings: &Arc<Settings>, store: &Store, wanted: impl FnOnce() -> crate::error::Result<Vec<String>>) -> crate::error::Result<Found> {
        let holds_all = self.cached.lock().unwrap_or_else(|e| e.into_inner()).is_some();
        if holds_all {
            let set = self.recent(home, settings);
            let names = set.names().map(str::to_string).collect();
            return Ok(Found { set, names });
        }
        let wanted = wanted()?;
        let names: Vec<&str> = wanted.iter().map(String::as_str).collect();
        let names = names.as_slice();
        let recent = self.indexed.lock().unwrap_or_else(|e| e.into_inner()).as_ref().filter(|(t, _)| t.elapsed() < RECENT).map(|(_, n)| Arc::clone(n));
        let named = match recent {
            Some(named) => Ok(named),
            None => index_files(home, settings, store).map(|named| {
                let named = Arc::new(named);
                *self.indexed.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), Arc::clone(&named)));
                named
            }),
        };
        Ok(match named.map(|named| load_named(home, settings, &named, names)) {
            Ok(found) => found,
            Err(e) => {
                // The index is a shortcut: without it, read everything as before.
                tracing::warn!(error = %e, "routine name index unavailable; reading every routine file");
                let set = self.get(home, settings);
                let names = set.names().map(str::to_string).collect();
                Found { set, names }
            }
        })
    }

    /// A routine file was just written by this process: the next look reads the files again
    /// instead of trusting a look from within the last second.
    pub(crate) fn forget(&self) {
        *self.checked.lock().unwrap_or_else(|e| e.into_inner()) = None;
        *self.indexed.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The routines now: the cached set while no file changed, else freshly read.
    pub(crate) fn get(&self, home: &Home, settings: &Arc<Settings>) -> Arc<RoutineSet> {
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
        if let Some((seen, used, set)) = cached.as_ref() {
            if *seen == fingerprint && Arc::ptr_eq(used, settings) {
                return Arc::clone(set);
            }
        }
        let set = Arc::new(routine::with_settings(routine::load_files(home, &files), settings, home));
        *cached = Some((fingerprint, Arc::clone(settings), Arc::clone(&set)));
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

/// Which routine each file names: stat every file, re-read those whose time or size changed since
/// they were indexed (updating the index).
fn index_files(home: &Home, settings: &Settings, store: &Store) -> crate::error::Result<Vec<(PathBuf, String)>> {
    use std::collections::HashMap;
    let files = routine::routine_files(&routine::home_dirs(home, settings));
    let indexed: HashMap<String, IndexedFile> = store.routine_file_index()?.into_iter().map(|f| (f.path.clone(), f)).collect();
    let mut changed = Vec::new();
    let mut named: Vec<(PathBuf, String)> = Vec::with_capacity(files.len());
    for file in &files {
        let path = file.to_string_lossy().into_owned();
        let meta = std::fs::metadata(file).ok();
        let mtime_ns = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        let size = meta.map(|m| m.len() as i64).unwrap_or(-1);
        let name = match indexed.get(&path) {
            Some(f) if f.mtime_ns == mtime_ns && f.size == size => f.name.clone(),
            _ => {
                let one = routine::load_files(home, std::slice::from_ref(file));
                let name = one.names().next().map(str::to_string).unwrap_or_default();
                changed.push(IndexedFile { path: path.clone(), mtime_ns, size, name: name.clone() });
                name
            }
        };
        named.push((file.clone(), name));
    }
    if !changed.is_empty() || indexed.len() != files.len() {
        let keep: Vec<String> = files.iter().map(|f| f.to_string_lossy().into_owned()).collect();
        let keep: Vec<&str> = keep.iter().map(String::as_str).collect();
        // Best effort: a read-only home still answers, it only re-reads next time.
        if let Err(e) = store.update_routine_file_index(&changed, &keep) {
            tracing::debug!(error = %e, "could not update the routine name index");
        }
    }
    Ok(named)
}

/// Load the files naming what was asked (all of them: two files with one name are both invalid,
/// as in a full load).
fn load_named(home: &Home, settings: &Settings, named: &[(PathBuf, String)], wanted: &[&str]) -> Found {
    let claiming: Vec<PathBuf> = named.iter().filter(|(_, n)| wanted.contains(&n.as_str())).map(|(f, _)| f.clone()).collect();
    let mut names: Vec<String> = named.iter().map(|(_, n)| n.clone()).collect();
    names.sort();
    names.dedup();
    Found { set: Arc::new(routine::with_settings(routine::load_files(home, &claiming), settings, home)), names }
}
