//! Retention: the files of old runs (logs, report, attempt logs) are removed after
//! `keep_runs_days`, or beyond the newest `keep_runs_per_routine` of a routine; each run's record
//! stays, marked `pruned_at`, so history, usage and `show` stay true.
//!
//! A run's directory goes in three steps — renamed to `<id>.pruning` (one atomic rename), the row
//! marked, the directory deleted — so a prune killed at any point leaves each run either whole or
//! marked, never half-deleted; the next prune marks what was renamed and deletes what is left.

use crate::engine::state::Core;
use std::path::{Path, PathBuf};

/// Runs looked at per prune (the hourly pass continues where it stopped).
const BATCH: usize = 10_000;
const PRUNING: &str = "pruning";

/// One run's files, removed (or, in a dry run, to be removed).
#[derive(Debug, Clone, serde::Serialize)]
pub struct PrunedRun {
    pub run_id: String,
    pub routine: String,
    /// What its directory took on the disk (allocated blocks: what removing it frees).
    pub bytes: u64,
    pub removed: bool,
}

/// Remove (or, `dry_run`, list) what the retention settings say is old.
pub(crate) fn prune(core: &Core, dry_run: bool) -> Vec<PrunedRun> {
    let settings = core.settings();
    if settings.keep_runs_days == 0 && settings.keep_runs_per_routine == 0 {
        return Vec::new();
    }
    if !dry_run {
        sweep_leftovers(core);
    }
    let now = core.clock.now();
    let before = if settings.keep_runs_days == 0 { chrono::DateTime::<chrono::Utc>::MIN_UTC } else { now - chrono::Duration::days(settings.keep_runs_days as i64) };
    // After a day a notification owed is only summarised and a webhook given up: neither needs
    // the run's files any more.
    let owed_until = now - chrono::Duration::hours(crate::engine::outbox::delivery::STALE_AFTER_HOURS);
    let candidates = match core.store.prunable_runs(before, settings.keep_runs_per_routine as usize, owed_until, BATCH) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "could not list runs to prune");
            return Vec::new();
        }
    };
    let mut done = Vec::new();
    for run in candidates {
        let dir = PathBuf::from(&run.run_dir);
        let bytes = crate::fsutil::disk_usage(&dir);
        let mut p = PrunedRun { run_id: run.id.clone(), routine: run.routine.clone(), bytes, removed: false };
        if dry_run {
            done.push(p);
            continue;
        }
        let doomed = pruning_path(&dir);
        let renamed = match std::fs::rename(&dir, &doomed) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => {
                tracing::warn!(run = %run.id, error = %e, "could not remove a run's files");
                continue;
            }
        };
        match core.store.set_pruned(&run.id, now) {
            Ok(_) => {
                if renamed {
                    let _ = std::fs::remove_dir_all(&doomed);
                }
                p.removed = true;
            }
            // Renamed but not marked: put it back, so the record and the files agree.
            Err(e) => {
                tracing::warn!(run = %run.id, error = %e, "could not mark a run as pruned");
                if renamed {
                    let _ = std::fs::rename(&doomed, &dir);
                }
                continue;
            }
        }
        done.push(p);
    }
    if !done.is_empty() && !dry_run {
        let bytes: u64 = done.iter().map(|p| p.bytes).sum();
        tracing::info!(runs = done.len(), bytes, "removed the files of old runs (their records stay)");
    }
    done
}

fn pruning_path(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".{PRUNING}"));
    dir.with_file_name(name)
}

/// A prune killed between rename and delete: mark those runs and delete what is left.
fn sweep_leftovers(core: &Core) {
    let Ok(routines) = std::fs::read_dir(core.home.runs_dir()) else { return };
    for routine in routines.flatten() {
        let Ok(runs) = std::fs::read_dir(routine.path()) else { continue };
        for entry in runs.flatten() {
            let path = entry.path();
            let Some(id) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(&format!(".{PRUNING}"))) else { continue };
            if core.store.set_pruned(id, core.clock.now()).is_ok() {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    }
}
