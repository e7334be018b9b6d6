//! Signals between the steps of a run's life, so no step imports the one that calls it: a lane
//! freed (this process's dispatcher and, through the home's wake file, other processes), and
//! callers waiting for a run's final record.

use super::Core;
use crate::run::RunRecord;
use tokio::sync::oneshot;

/// Something was queued or settled: this engine's dispatcher looks again, and long-running
/// engines in other processes (watching the wake file) do too.
pub(crate) fn wake(core: &Core) {
    core.dispatch_kick.notify_one();
    let path = core.home.wake_path();
    // Written over in place, the same length each time (touched on every settle).
    let touched = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|_| crate::fsutil::write_in_place(&path, format!("{:>10}\n", std::process::id()).as_bytes()));
    if let Err(e) = touched {
        tracing::debug!(error = %e, "could not touch the wake file");
    }
}

/// Register interest in a run's final record.
pub(crate) fn waiter(core: &Core, id: &str) -> oneshot::Receiver<crate::error::Result<RunRecord>> {
    let (tx, rx) = oneshot::channel();
    core.waiters.lock().unwrap_or_else(|e| e.into_inner()).entry(id.to_string()).or_default().push(tx);
    rx
}

/// Hand the final record to whoever waits for it in this process.
pub(crate) fn resolve_waiters(core: &Core, record: &RunRecord) {
    let waiting = core.waiters.lock().unwrap_or_else(|e| e.into_inner()).remove(&record.id);
    for tx in waiting.into_iter().flatten() {
        let _ = tx.send(Ok(record.clone()));
    }
}

/// Tell whoever waits for a run in this process that it ended but could not be recorded.
/// Returns whether anyone was told.
pub(crate) fn fail_waiters(core: &Core, id: &str, err: &crate::error::Error) -> bool {
    let waiting = core.waiters.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
    // Every waiter is told (no short-circuit).
    waiting.into_iter().flatten().map(|tx| tx.send(Err(err.clone())).is_ok()).filter(|told| *told).count() > 0
}

/// Call `on_wake` whenever a process touches the home's wake file, or one of `also` changes
/// (the scheduler adds each account's login file). `None` (and a warning) where files cannot be
/// watched: callers then only hear of their own process's runs.
/// How long a wake-up from the wake file waits for the ones right behind it before the work it
/// asks for: a burst of settles (a process's own included — it touches the file too) is then one
/// pass, not one per run.
pub(crate) const WAKE_GATHER: std::time::Duration = std::time::Duration::from_millis(50);

pub(crate) fn watch_wake_file(core: &Core, also: Vec<std::path::PathBuf>, on_wake: impl Fn() + Send + 'static) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let mut files = also;
    files.push(core.home.wake_path());
    let mut dirs: Vec<std::path::PathBuf> = files.iter().filter_map(|f| f.parent().map(std::path::Path::to_path_buf)).collect();
    dirs.sort();
    dirs.dedup();
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(ev) = res {
            if !matches!(ev.kind, notify::EventKind::Access(_)) && ev.paths.iter().any(|p| files.contains(p)) {
                on_wake();
            }
        }
    })
    .map_err(|e| tracing::warn!(error = %e, "cannot watch the wake file"))
    .ok()?;
    for dir in dirs {
        let _ = std::fs::create_dir_all(&dir);
        if let Err(e) = watcher.watch(&dir, notify::RecursiveMode::NonRecursive) {
            tracing::warn!(error = %e, dir = %dir.display(), "cannot watch for wake-ups");
        }
    }
    Some(watcher)
}
