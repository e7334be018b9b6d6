//! The engine: the one API both faces (tray app, `nightshiftctl`) drive.
//!
//! It owns the home, settings, store, clock, event channel and settle hooks — no globals: two
//! engines on two homes live side by side in one process (tests do exactly that).

mod accounts;
mod launch;
mod lock;
mod recovery;
pub mod scheduler;
mod settle;

pub use launch::RunHandle;
pub use lock::SchedulerLock;
pub use recovery::RecoveryMode;
pub use scheduler::{Scheduler, TickReport};

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, ErrorCode, Result};
use crate::events::{EngineEvent, EventReceiver, EventSender};
use crate::home::Home;
use crate::routine::{self, Routine, RoutineSet};
use crate::run::Trigger;
use crate::runner::SettleHook;
use crate::settings::Settings;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::Notify;

/// How to build an [`Engine`]; everything has a default except the home.
pub struct EngineOptions {
    pub home: Home,
    pub clock: Arc<dyn Clock>,
    /// The environment runs inherit from (filtered by the allow-list). Default: this process's.
    pub env: Vec<(String, String)>,
    /// Who this engine is in run rows (pid, start time[#image]): recovery tells its own runs from
    /// those of engines that are gone by it. Default: this process.
    pub identity: (u32, String),
}

impl EngineOptions {
    pub fn new(home: Home) -> Self {
        EngineOptions { home, clock: Arc::new(SystemClock), env: std::env::vars().collect(), identity: crate::runner::process::self_identity() }
    }
}

#[derive(Clone)]
pub struct Engine {
    core: Arc<Core>,
}

/// Shared state of one engine.
pub(crate) struct Core {
    pub home: Home,
    pub settings: Settings,
    pub store: Arc<Store>,
    pub clock: Arc<dyn Clock>,
    pub env: Vec<(String, String)>,
    pub events: EventSender,
    pub hooks: RwLock<Vec<Arc<dyn SettleHook>>>,
    /// Runs this engine supervises: id → cancel signal.
    pub active: Mutex<HashMap<String, Arc<Notify>>>,
    /// This process, as the owner recorded on the runs it supervises.
    pub identity: (u32, String),
    /// Runs waiting for a lane, in order.
    pub queue: tokio::sync::Mutex<std::collections::VecDeque<launch::Pending>>,
    /// Signalled whenever a run of this engine settles.
    pub lane_freed: Notify,
    /// A task is already waiting to re-dispatch the queue.
    pub dispatcher_awake: std::sync::atomic::AtomicBool,
    /// Masks every secret the engine has handled in anything it writes or returns.
    pub redactor: crate::accounts::redact::Redactor,
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) } == 0;
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    if ok { String::from_utf8_lossy(&buf[..end]).into_owned() } else { "localhost".into() }
}

impl Engine {
    /// Open the engine on a home: read settings, open (and migrate) the database.
    pub fn open(opts: EngineOptions) -> Result<Engine> {
        let settings = Settings::load(&opts.home.settings_path())?;
        let store = Arc::new(Store::open(&opts.home.db_path())?);
        let (events, _) = tokio::sync::broadcast::channel(1024);
        Ok(Engine {
            core: Arc::new(Core {
                home: opts.home,
                settings,
                store,
                clock: opts.clock,
                env: opts.env,
                events,
                hooks: RwLock::new(Vec::new()),
                active: Mutex::new(HashMap::new()),
                identity: opts.identity,
                queue: tokio::sync::Mutex::new(std::collections::VecDeque::new()),
                lane_freed: Notify::new(),
                dispatcher_awake: std::sync::atomic::AtomicBool::new(false),
                redactor: Default::default(),
            }),
        })
    }

    pub fn home(&self) -> &Home {
        &self.core.home
    }
    pub fn settings(&self) -> &Settings {
        &self.core.settings
    }
    pub fn store(&self) -> &Store {
        &self.core.store
    }
    pub fn subscribe(&self) -> EventReceiver {
        self.core.events.subscribe()
    }

    /// Send desktop notifications through `notifier`: a finish notification per run (per the
    /// routine's `notify:` policy, exactly once), and a notice when an account turns `revoked` or
    /// a routine is auto-paused. Must be called inside a tokio runtime.
    pub fn enable_notifications(&self, notifier: Arc<dyn crate::notify::Notifier>) {
        let hook = Arc::new(crate::notify::NotifyHook::new(notifier, Arc::clone(&self.core.store), self.core.home.clone(), self.core.settings.clone()));
        self.add_settle_hook(hook.clone());
        let mut events = self.subscribe();
        let store = Arc::clone(&self.core.store);
        let accounts: Vec<String> = self.accounts().into_iter().map(|a| a.email).collect();
        tokio::spawn(async move {
            let mut told: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
            loop {
                let notice = match events.recv().await {
                    Ok(EngineEvent::RoutinePaused { routine, reason }) => {
                        Some(crate::notify::Notice { summary: format!("⏸ {routine} paused"), body: reason, run_id: None, critical: true })
                    }
                    Ok(EngineEvent::AccountsChanged) => accounts.iter().find_map(|a| {
                        let h = store.account_health(a).ok().flatten()?;
                        let key = (a.clone(), crate::run::fmt_time(&h.at));
                        (h.verdict == crate::health::Verdict::Revoked.as_str() && told.insert(key)).then(|| crate::notify::Notice {
                            summary: format!("✗ {a} needs login"),
                            body: crate::agents::first_line(&h.evidence, 140),
                            run_id: h.run_id.clone(),
                            critical: true,
                        })
                    }),
                    Ok(_) => None,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
                    Err(_) => return,
                };
                if let Some(n) = notice {
                    let hook = hook.clone();
                    tokio::task::spawn_blocking(move || hook.send_bounded(n));
                }
            }
        });
    }

    /// Register a hook called after every run's record is final.
    pub fn add_settle_hook(&self, hook: Arc<dyn SettleHook>) {
        self.core.hooks.write().unwrap_or_else(|e| e.into_inner()).push(hook);
    }

    /// Load the routines now (files are the source of truth; cheap enough to read on demand).
    pub fn routines(&self) -> RoutineSet {
        routine::load_home(&self.core.home, &self.core.settings)
    }

    /// A routine by name, or an error that says what is wrong with it or what exists instead.
    pub fn routine(&self, name: &str) -> Result<Routine> {
        let set = self.routines();
        if let Some(r) = set.get(name) {
            return Ok(r.clone());
        }
        if let Some(bad) = set.get_invalid(name) {
            // One self-explanatory line per problem (each names file:line:col).
            let errors: Vec<String> = bad.errors.iter().map(ToString::to_string).collect();
            return Err(Error::new(ErrorCode::RoutineInvalid, errors.join("\n")));
        }
        let names: Vec<&str> = set.names().collect();
        let hint = match crate::routine::nearest_name(name, &names) {
            Some(near) => format!("; did you mean \"{near}\"?"),
            None if names.is_empty() => format!("; there are no routines in {}", self.core.home.routines_dir().display()),
            None => format!(" (routines: {})", names.join(", ")),
        };
        Err(Error::new(ErrorCode::RoutineNotFound, format!("no routine named \"{name}\"{hint}")))
    }

    /// Start a run of routine `name` now. Returns once the run's record exists and its process is
    /// started (or the run has already failed to start — that is recorded too).
    pub async fn run_now(&self, name: &str, trigger: Trigger) -> Result<RunHandle> {
        let routine = self.routine(name)?;
        launch::submit(&self.core, routine, trigger, None, None).await
    }

    /// Ask a run this engine supervises to stop (SIGTERM to its group, then SIGKILL after the
    /// grace period), or drop it from the queue. Returns false when this engine has no such run.
    pub async fn cancel(&self, run_id: &str) -> bool {
        let signal = self.core.active.lock().unwrap_or_else(|e| e.into_inner()).get(run_id).cloned();
        match signal {
            Some(signal) => {
                signal.notify_one();
                true
            }
            None => launch::cancel_queued(&self.core, run_id).await,
        }
    }

    /// This machine's name for `devices:` filters: the `device_name` setting, else the hostname.
    pub fn device_name(&self) -> String {
        self.core.settings.device_name.clone().unwrap_or_else(hostname)
    }

    /// Pause or resume all scheduling (stored per machine; manual runs still work).
    pub fn set_paused(&self, paused: bool) -> Result<()> {
        self.core.store.set_global_paused(paused)?;
        Engine::emit_state(&self.core);
        Ok(())
    }

    /// Pause or resume one routine (stored per machine, never written into its YAML).
    pub fn set_routine_paused(&self, name: &str, paused: bool) -> Result<()> {
        let set = self.routines();
        if set.get(name).is_none() && set.get_invalid(name).is_none() {
            self.routine(name)?;
        }
        self.core.store.set_routine_paused(name, paused, None, self.core.clock.now())?;
        Engine::emit(&self.core, EngineEvent::RoutinesChanged);
        Ok(())
    }

    /// Runs waiting for a lane in this engine.
    pub async fn queued(&self) -> usize {
        self.core.queue.lock().await.len()
    }

    pub(crate) fn emit_state(core: &Core) {
        let running = core.store.running_count().unwrap_or(0);
        let queued = core.queue.try_lock().map(|q| q.len()).unwrap_or(0);
        let paused = core.store.global_paused().unwrap_or(false);
        Engine::emit(core, EngineEvent::EngineState { running, queued, paused });
    }

    /// Settle (or, with [`RecoveryMode::Adopt`], re-adopt) runs left `running` by an engine that
    /// is gone. Returns the ids it settled or adopted.
    pub async fn recover(&self, mode: RecoveryMode) -> Result<Vec<String>> {
        recovery::recover(&self.core, mode).await
    }

    pub(crate) fn emit(core: &Core, event: EngineEvent) {
        let _ = core.events.send(event);
    }
}
