//! Watching files for changes: the one way the engine's loops hear that routine files,
//! `nightshift.toml`, the wake file or an account's login file changed.
//!
//! A read is not a change. Opening a file shows up as an access event, and the engine reads its
//! own files all the time (every run reads its routine file); before, a run's read woke the
//! routines watch, which reloaded every routine and told every window.

use std::path::{Path, PathBuf};

/// Call `on_change` with the path when a path for which `wanted` holds is created, written,
/// renamed or removed under `targets`: a folder is watched for its entries (made if missing), a
/// file for itself. `None` (and a warning naming `what`) where nothing can be watched.
pub(crate) fn watch(
    targets: &[PathBuf],
    what: &str,
    wanted: impl Fn(&Path) -> bool + Send + 'static,
    on_change: impl Fn(&Path) + Send + 'static,
) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(ev) = res else { return };
        if matches!(ev.kind, notify::EventKind::Access(_)) {
            return;
        }
        if let Some(path) = ev.paths.iter().find(|p| wanted(p)) {
            on_change(path);
        }
    })
    .map_err(|e| tracing::warn!(error = %e, "cannot watch {what}"))
    .ok()?;
    let mut watched = false;
    for target in targets {
        if !target.exists() {
            let _ = std::fs::create_dir_all(target);
        }
        match watcher.watch(target, notify::RecursiveMode::NonRecursive) {
            Ok(()) => watched = true,
            Err(e) => tracing::warn!(error = %e, path = %target.display(), "cannot watch {what}"),
        }
    }
    watched.then_some(watcher)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn reading_a_file_is_no_change_and_writing_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let (read, written) = (dir.path().join("read.yaml"), dir.path().join("written.yaml"));
        std::fs::write(&read, "a: 1\n").unwrap();
        let (tx, rx) = mpsc::channel();
        let _w = watch(&[dir.path().to_path_buf()], "a test folder", |_| true, move |p| {
            let _ = tx.send(p.to_path_buf());
        })
        .unwrap();
        // Read it, then write another file. Events arrive in order, so everything heard before
        // the write is what the reads caused: nothing.
        for _ in 0..5 {
            std::fs::read_to_string(&read).unwrap();
        }
        std::fs::write(&written, "b: 2\n").unwrap();
        let first = rx.recv_timeout(Duration::from_secs(10)).expect("the write was heard");
        assert_eq!(first, written, "a read was heard as a change");
        // A write to the file that was only read before is heard.
        std::fs::write(&read, "a: 2\n").unwrap();
        loop {
            let p = rx.recv_timeout(Duration::from_secs(10)).expect("a write to the file that was read before was heard");
            if p == read {
                break;
            }
            assert_eq!(p, written, "only the earlier write's own events come in between");
        }
    }
}
