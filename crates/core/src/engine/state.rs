//! The state one engine holds (`Core`), shared by every part of it through `Arc`, and the handle
//! the faces hold (`Engine`, whose methods are the engine's door in `mod.rs`). Only the engine's
//! shared plumbing lies below it, so every part of the engine stands above it.

use super::{catalog, followed, live_settings, problems, signal};
use crate::clock::Clock;
use crate::error::Result;
use crate::events::{EngineEvent, EventSender};
use crate::home::Home;
use crate::routine::RoutineSet;
use crate::runner::SettleHook;
use crate::settings::Settings;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// Runs going and waiting (counted from the store, so every process's and never under-reported)
/// and whether scheduling is paused on this machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    pub running: usize,
    pub queued: usize,
    pub paused: bool,
}

pub(crate) fn activity(core: &Core) -> Result<Activity> {
    let (running, queued) = core.store.open_counts()?;
    Ok(Activity { running, queued, paused: core.store.global_paused()? })
}

#[derive(Clone)]
pub struct Engine {
    pub(crate) core: Arc<Core>,
}

/// Shared state of one engine.
pub(crate) struct Core {
    pub home: Home,
    /// `nightshift.toml`, re-read when it changes: use [`Core::settings`].
    pub live_settings: live_settings::LiveSettings,
    pub store: Arc<Store>,
    pub clock: Arc<dyn Clock>,
    pub env: Vec<(String, String)>,
    pub events: EventSender,
    pub hooks: RwLock<Vec<Arc<dyn SettleHook>>>,
    /// The runs this engine follows and who waits for them: each run's cancel signal, the note
    /// its cancel carries and its waiters, in one registry ([`followed`]).
    pub(crate) runs: Arc<followed::Followed>,
    /// Where logind is reached (`None`: the system bus): its sleep inhibitors, and its word that
    /// the machine is about to sleep or has woken.
    pub(crate) logind_bus: Option<String>,
    /// This process, as the owner recorded on the runs it supervises.
    pub identity: (u32, String),
    pub dispatcher_started: std::sync::atomic::AtomicBool,
    /// Set when this (short-lived) process hands its waiting runs to others: it starts no more.
    pub handed_off: std::sync::atomic::AtomicBool,
    /// The run sockets are offered by this process ([`crate::mcp::per_run::offer_to_runs`] runs):
    /// an agent may be given Nightshift's tools and its prompt tool.
    pub offers_tools: std::sync::atomic::AtomicUsize,
    /// What this engine found wrong and the user must hear about (a damaged database, a run that
    /// could not be recorded), each said once under what it is about; see [`Engine::problems`].
    pub(crate) problems: problems::Problems,
    /// Wakes the dispatcher, the scheduler loop and the deliverers ([`signal::Wake`]).
    pub(crate) wakes: signal::Wakes,
    /// The process's one watch on the wake file (see [`signal::WakeHub`]).
    pub(crate) wake_hub: signal::WakeHub,
    /// Keeps the webhook deliverers listening to the wake file.
    pub(crate) webhook_watch: Mutex<Option<signal::WakeWatch>>,
    /// The one listener that tells other processes' runs as a state event, while some face
    /// holds it ([`super::Engine::hear_other_processes`]): shared, so the event is said once.
    pub(crate) others_heard: Mutex<std::sync::Weak<signal::WakeWatch>>,
    /// Webhooks whose receiver asked for a pause (`Retry-After`): none of their deliveries goes
    /// before this time.
    pub(crate) webhook_holds: Mutex<HashMap<String, chrono::DateTime<chrono::Utc>>>,
    pub delivery_backoff: Vec<std::time::Duration>,
    /// Waits between tries of a webhook delivery (tests shorten them); its length is the retries.
    pub webhook_backoff: Vec<std::time::Duration>,
    pub push_backoff: Vec<std::time::Duration>,
    /// See [`EngineOptions::scrubber`].
    pub scrubber: Option<std::path::PathBuf>,
    /// Whether bubblewrap can build a sandbox here (the `bwrap` to use, or why not): probed at the
    /// first run that may want one.
    pub(crate) sandbox_probe: std::sync::OnceLock<Result<std::path::PathBuf, String>>,
    /// SSH hosts found able to build the sandbox, with their helper and bubblewrap (a host that
    /// could not is asked again at its next run: it may have been fixed).
    pub(crate) host_sandboxes: std::sync::Mutex<std::collections::HashMap<String, crate::runner::remote_sandbox::Ready>>,
    /// Masks every secret the engine has handled in anything it writes or returns.
    pub redactor: crate::accounts::redact::Redactor,
    /// The routine files as last read.
    pub catalog: catalog::Catalog,
    /// When the usage probe last asked about each account (by email) — at most every 10 minutes —
    /// and whether that failed (a failure is told once until the probe works again).
    pub probed_at: Mutex<HashMap<String, (chrono::DateTime<chrono::Utc>, bool)>>,
    /// When this engine last checked each account's sign-in before a scheduled run (by email).
    pub sign_in_checked: Mutex<HashMap<String, chrono::DateTime<chrono::Utc>>>,
    /// The signing secrets of GitHub's and Linear's deliveries, once read (`incoming`).
    pub hook_secrets: Mutex<HashMap<crate::incoming::Source, String>>,
}

impl signal::Waking for Core {
    fn wakes(&self) -> &signal::Wakes {
        &self.wakes
    }
    fn wake_hub(&self) -> &signal::WakeHub {
        &self.wake_hub
    }
    fn wake_path(&self) -> std::path::PathBuf {
        self.home.wake_path()
    }
}

impl Core {
    /// Tell every face (the window, the tray, a waiting CLI) what happened.
    pub(crate) fn emit(&self, event: EngineEvent) {
        let _ = self.events.send(event);
    }

    /// Tell the faces how many runs are going and waiting (read from the store, so it counts
    /// every process and never under-reports).
    pub(crate) fn emit_state(&self) {
        let Ok(Activity { running, queued, paused }) = activity(self) else { return };
        self.emit(EngineEvent::EngineState { running, queued, paused });
    }

    /// This engine follows run `id` from now on (its driver, or recovery adopting it), for as
    /// long as the guard lives.
    pub(crate) fn follow(&self, id: &str) -> followed::Following {
        self.runs.follow(id, self.settings().keep_awake)
    }

    /// This machine's name for `devices:` filters: the `device_name` setting, else the hostname.
    pub(crate) fn device_name(&self) -> String {
        self.settings().device_name()
    }

    /// Is the engine recorded as a run's owner still there? "Me" is; my pid with another start
    /// time is an earlier process that had my pid, which is gone; anyone else is there while the
    /// same process (pid and start time) lives.
    pub(crate) fn owner_alive(&self, pid: Option<u32>, start: Option<&str>) -> bool {
        if pid == Some(self.identity.0) {
            return start == Some(self.identity.1.as_str());
        }
        pid.is_some_and(|p| crate::runner::process::same_process_alive(p, start))
    }

    /// The routines now (files are the source of truth; re-read when one changed).
    pub(crate) fn routines(&self) -> Arc<RoutineSet> {
        self.catalog.get(&self.home, &self.settings())
    }

    /// The settings now (`nightshift.toml` is read again when it changed). Only reads: a change
    /// is announced where the file watch fires ([`Core::settings_file_changed`]).
    pub(crate) fn settings(&self) -> Arc<Settings> {
        self.live_settings.get(&self.problems)
    }

    /// `nightshift.toml` changed on disk (the scheduler's file watch fired): read it now and, if
    /// the settings changed since the faces were last told, tell them (accounts and routines may
    /// have changed: a webhook's name decides whether a routine is valid) and wake the webhook
    /// deliverer (a new webhook may be owed deliveries).
    pub(crate) fn settings_file_changed(&self) {
        if self.live_settings.reread(&self.problems) {
            for event in [EngineEvent::AccountsChanged, EngineEvent::RoutinesChanged] {
                let _ = self.events.send(event);
            }
            self.wakes.kick(signal::Wake::Webhooks);
        }
    }
}
