//! Signals between the steps of a run's life, so no step imports the one that calls it: a lane
//! freed (this process's dispatcher and, through the home's wake file, other processes). Callers
//! waiting for a run's final record wait on the registry of followed runs (`followed`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

/// Whose loop a wake-up is for: each long-lived loop of an engine waits on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// The dispatcher: a run was queued or a lane freed.
    Dispatcher,
    /// The scheduler loop: an account works again (held work is owed).
    Scheduler,
    /// The notification deliverer: a run became final here, or elsewhere (the wake file).
    Notifier,
    /// The webhook deliverers (one per webhook) and their starter: a run became final, or the
    /// settings changed.
    Webhooks,
}

/// The engine's one wake-up mechanism: a kick per loop ([`Wake`]). A loop registers its wait
/// before each pass ([`Wakes::of`]`(…).notified()`), so a kick during a pass is not lost; a kick
/// with nobody waiting is kept for the next wait of a loop with one waiter, and reaches every
/// current waiter of the webhooks.
#[derive(Default)]
pub(crate) struct Wakes {
    dispatcher: tokio::sync::Notify,
    scheduler: tokio::sync::Notify,
    notifier: tokio::sync::Notify,
    webhooks: tokio::sync::Notify,
}

impl Wakes {
    pub(crate) fn of(&self, wake: Wake) -> &tokio::sync::Notify {
        match wake {
            Wake::Dispatcher => &self.dispatcher,
            Wake::Scheduler => &self.scheduler,
            Wake::Notifier => &self.notifier,
            Wake::Webhooks => &self.webhooks,
        }
    }

    pub(crate) fn kick(&self, wake: Wake) {
        match wake {
            Wake::Webhooks => self.webhooks.notify_waiters(),
            one => self.of(one).notify_one(),
        }
    }
}

/// What the wake-ups of one engine are kept in (its state implements it): signals stand below the
/// engine's state, so they name only this.
pub(crate) trait Waking {
    fn wakes(&self) -> &Wakes;
    fn wake_hub(&self) -> &WakeHub;
    /// The home's wake file, which every process touches when it queues or settles a run.
    fn wake_path(&self) -> PathBuf;
}

impl<T: Waking> Waking for Arc<T> {
    fn wakes(&self) -> &Wakes {
        (**self).wakes()
    }
    fn wake_hub(&self) -> &WakeHub {
        (**self).wake_hub()
    }
    fn wake_path(&self) -> PathBuf {
        (**self).wake_path()
    }
}

/// Something was queued or settled: this engine's dispatcher looks again, and long-running
/// engines in other processes (watching the wake file) do too.
pub(crate) fn wake(core: &impl Waking) {
    core.wakes().kick(Wake::Dispatcher);
    let path = core.wake_path();
    // Written over in place, the same length each time (touched on every settle); its folder is
    // made only when it is missing, not looked for on every settle.
    let touch = || crate::fsutil::write_in_place(&path, format!("{:>10}\n", std::process::id()).as_bytes());
    let touched = touch().or_else(|e| match (e.kind(), path.parent()) {
        (std::io::ErrorKind::NotFound, Some(dir)) => std::fs::create_dir_all(dir).and_then(|_| touch()),
        _ => Err(e),
    });
    if let Err(e) = touched {
        tracing::debug!(error = %e, "could not touch the wake file");
    }
}

/// How long a wake-up from the wake file waits for the ones right behind it before the work it
/// asks for: a burst of settles (a process's own included — it touches the file too) is then one
/// pass, not one per run.
pub(crate) const WAKE_GATHER: std::time::Duration = std::time::Duration::from_millis(50);

type Listener = Arc<dyn Fn() + Send + Sync>;

/// The process's one watch on the home's wake file, shared by every loop that wants to hear of
/// other processes' queues and settles (scheduler, delivery, webhooks, housekeeping):
/// a touch wakes one watcher thread, not one per loop. The watch starts with the first listener
/// and ends with the last.
#[derive(Default)]
pub(crate) struct WakeHub {
    state: Arc<Mutex<HubState>>,
}

#[derive(Default)]
struct HubState {
    watcher: Option<notify::RecommendedWatcher>,
    listeners: Vec<(u64, Listener)>,
    next_id: u64,
}

/// A listener on the wake file (and on the files it was asked to watch besides); it stops
/// listening when dropped.
pub(crate) struct WakeWatch {
    hub: Weak<Mutex<HubState>>,
    id: u64,
    _also: Option<notify::RecommendedWatcher>,
}

impl Drop for WakeWatch {
    fn drop(&mut self) {
        let Some(state) = self.hub.upgrade() else { return };
        let idle_watcher = {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            s.listeners.retain(|(id, _)| *id != self.id);
            if s.listeners.is_empty() { s.watcher.take() } else { None }
        };
        // Dropped outside the lock: its thread may be calling the listeners right now.
        drop(idle_watcher);
    }
}

/// Call `on_wake` whenever a process touches the home's wake file, or one of `also` changes
/// (the scheduler adds each account's login file). Where files cannot be watched (a warning is
/// logged) callers only hear of their own process's runs.
pub(crate) fn watch_wake_file(core: &impl Waking, also: Vec<PathBuf>, on_wake: impl Fn() + Send + Sync + 'static) -> WakeWatch {
    let on_wake: Listener = Arc::new(on_wake);
    let hub = core.wake_hub();
    let mut s = hub.state.lock().unwrap_or_else(|e| e.into_inner());
    if s.watcher.is_none() {
        s.watcher = watch_files(vec![core.wake_path()], "the wake file", {
            let state = Arc::downgrade(&hub.state);
            move || {
                let Some(state) = state.upgrade() else { return };
                let listeners: Vec<Listener> = state.lock().unwrap_or_else(|e| e.into_inner()).listeners.iter().map(|(_, l)| Arc::clone(l)).collect();
                for listener in listeners {
                    listener();
                }
            }
        });
    }
    s.next_id += 1;
    let id = s.next_id;
    s.listeners.push((id, Arc::clone(&on_wake)));
    drop(s);
    let also = (!also.is_empty()).then(|| watch_files(also, "login files", move || on_wake())).flatten();
    WakeWatch { hub: Arc::downgrade(&hub.state), id, _also: also }
}

/// Call `on_change` when one of `files` changes (each file's folder is watched, so a file
/// replaced by a rename is still heard of).
fn watch_files(files: Vec<PathBuf>, what: &str, on_change: impl Fn() + Send + 'static) -> Option<notify::RecommendedWatcher> {
    let mut dirs: Vec<PathBuf> = files.iter().filter_map(|f| f.parent().map(std::path::Path::to_path_buf)).collect();
    dirs.sort();
    dirs.dedup();
    super::watch::watch(&dirs, what, move |p| files.iter().any(|f| f == p), move |_| on_change())
}

/// The longest a long-running loop (the outbox deliverers, housekeeping) sleeps towards something
/// due later: the wall clock may jump (suspend, a clock change) while it waits.
pub(crate) const LONGEST_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// The longest a loop at rest — nothing due, nothing to hear of — goes without looking: the
/// scheduler's pass (the presence record `why` reads), the usage probe and the GitHub poller with
/// nothing to do. Everything else wakes them when it happens.
pub const FALLBACK: std::time::Duration = std::time::Duration::from_secs(600);

/// Sleep `wait`, or until the settings are read anew (they change `AccountsChanged` and
/// `RoutinesChanged` together) — for a loop whose work the settings decide.
pub(crate) async fn sleep_or_settings_change(changes: &mut crate::events::EventReceiver, wait: std::time::Duration) {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return,
            event = changes.recv() => match event {
                Ok(crate::events::EngineEvent::AccountsChanged) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return tokio::time::sleep_until(deadline).await,
            },
        }
    }
}

/// An outbox deliverer's loop (notifications, each webhook): run `pass` now, then again when
/// `kick` is notified or when the next entry it reported comes due. Idle is idle: with nothing
/// pending, only a kick wakes it. The wake-up is registered before each pass, so a kick during a
/// pass — `notify_waiters` included — is not lost.
pub(crate) async fn deliver_forever<F, Fut>(clock: &dyn crate::Clock, kick: &tokio::sync::Notify, mut pass: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<chrono::DateTime<chrono::Utc>>>,
{
    loop {
        let notified = kick.notified();
        match pass().await {
            Some(next) => {
                // Due times are the engine clock's (the outbox's leases and retries are).
                let wait = (next - clock.now()).to_std().unwrap_or_default().min(LONGEST_WAIT);
                tokio::select! {
                    _ = notified => {}
                    _ = tokio::time::sleep(wait) => {}
                }
            }
            None => notified.await,
        }
    }
}

/// A task that ends when this handle is dropped (the scheduler loop holds them).
pub(crate) struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    pub(crate) fn spawn(task: impl std::future::Future<Output = ()> + Send + 'static) -> Self {
        AbortOnDrop(tokio::spawn(task))
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
