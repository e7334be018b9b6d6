//! The runs this engine follows, and who waits for them: one registry, so what belongs to a run in
//! this process — its cancel signal, the note a cancel carries, the callers waiting for its final
//! record — lives in one place and goes together.
//!
//! A run is followed through a [`Following`] guard: [`Followed::follow`] makes its cancel signal
//! and returns the guard, and dropping the guard unfollows the run. The driver holds it for the
//! run's life here and hands it to settling, which lets go of it once the row is final (or, when
//! the row cannot be written yet, once a later try writes it); a run that goes back to the queue to
//! wait lets go of it then. Recovery holds one for each run it adopts. Nothing unfollows a run by
//! hand. The first run followed asks to keep the machine awake (`keep_awake`), and the last one let
//! go lets it sleep.

use crate::engine::awake::Awake;
use crate::error::Result;
use crate::run::RunRecord;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, Notify};

/// Whoever waits in this process for a run's final record (`RunHandle::wait`).
type Waiter = oneshot::Sender<Result<RunRecord>>;

pub(crate) struct Followed {
    runs: Mutex<HashMap<String, Entry>>,
    /// The sleep inhibitor held while runs are followed.
    awake: Awake,
}

/// What this process holds for one run.
#[derive(Default)]
struct Entry {
    /// Set while this engine follows the run: notified, it stops the run.
    cancel: Option<Arc<Notify>>,
    /// Why it is being cancelled, when not by a person (`overlap: replace`): its final message.
    note: Option<String>,
    waiters: Vec<Waiter>,
}

impl Entry {
    fn is_empty(&self) -> bool {
        self.cancel.is_none() && self.note.is_none() && self.waiters.is_empty()
    }
}

impl Followed {
    pub(crate) fn new(awake: Awake) -> Arc<Followed> {
        Arc::new(Followed { runs: Mutex::new(HashMap::new()), awake })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// This engine follows run `id` now (its driver, or recovery adopting it), for as long as the
    /// guard lives; `keep_awake`: the machine is kept awake meanwhile.
    pub(crate) fn follow(self: &Arc<Self>, id: &str, keep_awake: bool) -> Following {
        let cancel = Arc::new(Notify::new());
        let mut runs = self.lock();
        runs.entry(id.to_string()).or_default().cancel = Some(Arc::clone(&cancel));
        // Said while the set is held, so wishes reach the worker in the order the set changed.
        self.awake.want(keep_awake);
        Following { registry: Arc::clone(self), id: id.to_string(), cancel }
    }

    /// The guard is gone: this engine no longer follows the run.
    fn unfollow(&self, id: &str) {
        let mut runs = self.lock();
        let Some(entry) = runs.get_mut(id) else { return };
        if entry.cancel.take().is_none() {
            return;
        }
        if entry.is_empty() {
            runs.remove(id);
        }
        if !runs.values().any(|e| e.cancel.is_some()) {
            self.awake.want(false);
        }
    }

    /// Whether this engine follows run `id` (so it is the one to announce its end).
    pub(crate) fn is_followed(&self, id: &str) -> bool {
        self.lock().get(id).is_some_and(|e| e.cancel.is_some())
    }

    /// Stop run `id` if this engine follows it (its supervisor ends it: SIGTERM, then SIGKILL after
    /// the grace period); `false` when it does not.
    pub(crate) fn stop(&self, id: &str) -> bool {
        let signal = self.lock().get(id).and_then(|e| e.cancel.clone());
        signal.map(|s| s.notify_one()).is_some()
    }

    /// Why run `id` is about to be cancelled, for its final message (the first reason given stays).
    pub(crate) fn note_cancel(&self, id: &str, why: String) {
        self.lock().entry(id.to_string()).or_default().note.get_or_insert(why);
    }

    /// The cancel did not happen here after all: its note goes.
    pub(crate) fn forget_note(&self, id: &str) {
        let mut runs = self.lock();
        if let Some(entry) = runs.get_mut(id) {
            entry.note = None;
            if entry.is_empty() {
                runs.remove(id);
            }
        }
    }

    /// Wait for run `id`'s final record (settling here, or a failure to record it, says it).
    pub(crate) fn wait_for(&self, id: &str) -> oneshot::Receiver<Result<RunRecord>> {
        let (tx, rx) = oneshot::channel();
        self.lock().entry(id.to_string()).or_default().waiters.push(tx);
        rx
    }

    /// Hand the final record to whoever waits for it in this process.
    pub(crate) fn resolve(&self, record: &RunRecord) {
        for tx in self.take_waiters(&record.id) {
            let _ = tx.send(Ok(record.clone()));
        }
    }

    /// Tell whoever waits for run `id` in this process that it could not be recorded (or could not
    /// start); returns whether anyone was told.
    pub(crate) fn fail(&self, id: &str, err: &crate::error::Error) -> bool {
        // Every waiter is told (no short-circuit).
        self.take_waiters(id).into_iter().map(|tx| tx.send(Err(err.clone())).is_ok()).filter(|told| *told).count() > 0
    }

    fn take_waiters(&self, id: &str) -> Vec<Waiter> {
        let mut runs = self.lock();
        let Some(entry) = runs.get_mut(id) else { return Vec::new() };
        let waiters = std::mem::take(&mut entry.waiters);
        if entry.is_empty() {
            runs.remove(id);
        }
        waiters
    }

    /// The runs someone here waits for that this engine does not follow (they wait in the queue).
    pub(crate) fn waited_for_in_queue(&self) -> Vec<String> {
        self.lock().iter().filter(|(_, e)| !e.waiters.is_empty() && e.cancel.is_none()).map(|(id, _)| id.clone()).collect()
    }
}

/// This engine follows a run while this lives; dropping it unfollows the run.
pub(crate) struct Following {
    registry: Arc<Followed>,
    id: String,
    cancel: Arc<Notify>,
}

impl Following {
    /// The run's cancel signal, for its supervisor.
    pub(crate) fn signal(&self) -> Arc<Notify> {
        Arc::clone(&self.cancel)
    }

    /// Why the run was cancelled, when it was not a person's Cancel (taken: said once).
    pub(crate) fn take_note(&self) -> Option<String> {
        let mut runs = self.registry.lock();
        runs.get_mut(&self.id).and_then(|e| e.note.take())
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        self.registry.unfollow(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Arc<Followed> {
        Followed::new(Awake::new(None))
    }

    #[tokio::test]
    async fn a_run_is_followed_while_its_guard_lives_and_its_cancel_stops_it() {
        let runs = registry();
        assert!(!runs.stop("r1"), "nothing to stop before it is followed");
        let guard = runs.follow("r1", false);
        assert!(runs.is_followed("r1"));
        let signal = guard.signal();
        assert!(runs.stop("r1"));
        // The supervisor hears it (the permit waits for it if it was not listening yet).
        tokio::time::timeout(std::time::Duration::from_secs(5), signal.notified()).await.expect("the cancel signal was notified");
        drop(guard);
        assert!(!runs.is_followed("r1") && !runs.stop("r1"));
        assert!(runs.lock().is_empty(), "nothing is left behind for a run nobody waits for");
    }

    #[tokio::test]
    async fn waiters_outlive_following_until_the_record_comes() {
        let runs = registry();
        let rx = runs.wait_for("r1");
        assert_eq!(runs.waited_for_in_queue(), vec!["r1".to_string()], "waited for, not followed: it waits in the queue");
        let guard = runs.follow("r1", false);
        assert!(runs.waited_for_in_queue().is_empty());
        // It goes back to the queue to wait for a retry: the waiter stays.
        drop(guard);
        assert_eq!(runs.waited_for_in_queue(), vec!["r1".to_string()]);
        let record = RunRecord::sample(crate::run::RunStatus::Completed, None);
        runs.resolve(&RunRecord { id: "r1".into(), ..record });
        assert_eq!(rx.await.unwrap().unwrap().id, "r1");
        assert!(runs.lock().is_empty());
    }

    #[test]
    fn a_cancel_note_is_said_once_and_the_first_reason_stays() {
        let runs = registry();
        let guard = runs.follow("r1", false);
        runs.note_cancel("r1", "replaced by run r2".into());
        runs.note_cancel("r1", "another reason".into());
        assert_eq!(guard.take_note().as_deref(), Some("replaced by run r2"));
        assert_eq!(guard.take_note(), None);
        runs.note_cancel("r2", "replaced".into());
        runs.forget_note("r2");
        drop(guard);
        assert!(runs.lock().is_empty());
    }

    #[test]
    fn a_failure_to_record_reaches_every_waiter() {
        let runs = registry();
        let (a, b) = (runs.wait_for("r1"), runs.wait_for("r1"));
        let err = crate::error::Error::new(crate::error::ErrorCode::StoreUnavailable, "disk full");
        assert!(runs.fail("r1", &err));
        assert!(!runs.fail("r1", &err), "told once");
        for mut rx in [a, b] {
            assert_eq!(rx.try_recv().unwrap().unwrap_err().message, "disk full");
        }
    }
}
