//! The engine: the one API both faces (tray app, `nightshiftctl`) drive.
//!
//! It owns the home, settings, store, clock, event channel and settle hooks — no globals: two
//! engines on two homes live side by side in one process (tests do exactly that).
//!
//! Its parts, by concern, each a folder that imports only folders below it (the floors test
//! holds them): `accounts/` (which account and credential a try gets) → `outbox/` (what a final
//! row owes, and its delivery) → `upkeep/` (pushes, worktrees, retention) → `run/` (a run's
//! life: `queue` → `driver` → `judge` → `closing` → `finalize`; `recovery` takes over what a dead
//! engine left) → `inbound/` (deliveries, GitHub polling) → `resident/` (the scheduler's loop and
//! held work). Below them all: `state` (the `Core` every part shares) and the plumbing it holds —
//! `signal` (wake-ups), `followed` (who holds a run here), `live_settings`, `catalog`, `problems`.
//!
//! This file is the engine's door: most of what the faces call is here, short methods each a door
//! to a part below. The `Engine` methods of one concern that are more than a door live beside it,
//! in an `impl Engine` of their own: accounts (`accounts/mod.rs`), routines' secrets
//! (`accounts/secrets.rs`), writing routines (`authoring.rs`), hosts (`hosts.rs`), deliveries and
//! polling (`inbound/`), and test set-up (`testing.rs`, feature `test-support`).

mod accounts;
mod inbound;
mod outbox;
mod lock;
pub(crate) mod presence;
mod resident;
mod run;
mod upkeep;
// The engine's modules the faces, the views and the API name, at the paths they always had.
pub use accounts::secrets;
pub use approval_links::Refused;
pub use approvals::{ask_outcome, ask_words, asks_sentence, Decision};
pub use inbound::{github_poll, incoming};
pub use resident::scheduler;
pub use resident::Parts as ResidentParts;
pub use run::lanes;
mod awake;
mod followed;
pub use accounts::budgets::BudgetState;
mod approval_links;
mod approvals;
mod authoring;
mod catalog;
#[cfg(any(test, feature = "test-support"))]
mod testing;
mod actions_hosts;
mod hosts;
mod live_settings;
mod problems;
mod state;
pub(crate) mod signal;
mod watch;

pub use authoring::{Removed, RoutineSource, Written};
pub use outbox::delivery::DEFAULT_BACKOFF;
pub use run::queue::RunHandle;
pub use hosts::{HostCheck, HostView};
pub use actions_hosts::{ActionsCheck, CheckLine};
pub use lock::{NotTaken, SchedulerLock};
pub use run::recovery::RecoveryMode;
pub use upkeep::housekeeping::Pruned;
pub use upkeep::retention::PrunedRun;
pub use resident::scheduler::{Scheduler, TickReport};
pub use presence::SLEEP_GAP_SECS;

pub use state::{Activity, Engine};
pub(crate) use state::Core;
use state::activity;
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, ErrorCode, Result};
use crate::events::{EngineEvent, EventReceiver};
use crate::home::Home;
use crate::routine::{Routine, RoutineSet};
use crate::run::{RunStatus, Trigger};
use crate::runner::SettleHook;
use crate::settings::Settings;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// What [`Engine::hear_other_processes`] keeps alive (one listener per engine, however many
/// faces hold it).
pub struct OtherProcesses {
    _watch: Arc<signal::WakeWatch>,
}

/// How long a face that reads again after another process's change
/// ([`Engine::watch_other_processes`]) waits for the changes right behind it: a burst of settles
/// (a night's catch-up) is one reading.
pub const OTHERS_GATHER: std::time::Duration = std::time::Duration::from_millis(150);

/// [`Engine::watch_other_processes`]: another process of this home queued or settled a run.
pub struct OthersChanged {
    _watch: signal::WakeWatch,
    woken: Arc<tokio::sync::Notify>,
}

impl OthersChanged {
    /// Until the next change by another process (cancel-safe: a change heard while nobody waits
    /// is kept for the next call). Wait [`OTHERS_GATHER`] after it before reading.
    pub async fn changed(&self) {
        self.woken.notified().await;
    }
}

/// How to build an [`Engine`]; everything has a default except the home.
pub struct EngineOptions {
    pub home: Home,
    pub clock: Arc<dyn Clock>,
    /// The environment runs inherit from (filtered by the allow-list). Default: this process's.
    pub env: Vec<(String, String)>,
    /// Who this engine is in run rows (pid, start time): recovery tells its own runs from
    /// those of engines that are gone by it. Default: this process.
    pub identity: (u32, String),
    /// Waits between tries of a notification that was not shown. Default [`DEFAULT_BACKOFF`].
    pub delivery_backoff: Vec<std::time::Duration>,
    /// Waits between tries of a webhook delivery (tests shorten them); its length is the retries.
    pub webhook_backoff: Vec<std::time::Duration>,
    /// Waits between tries of a worktree run's branch push (tests shorten them).
    pub push_backoff: Vec<std::time::Duration>,
    /// The binary a run's wrapper calls to scrub its logs once no engine follows the run (see
    /// [`crate::runner::scrub`]) and that serves the sandbox's helpers
    /// ([`crate::runner::sandbox::helper`]). Default: none (whoever settles the run scrubs them;
    /// no run here can be sandboxed).
    pub scrubber: Option<std::path::PathBuf>,
    /// The D-Bus address logind's sleep inhibitors are asked for at (`keep_awake`). Default:
    /// `None`, the system bus (tests point it at a stand-in on a private bus).
    pub logind_bus: Option<String>,
}

impl EngineOptions {
    /// Let runs' wrappers call this binary to scrub their logs ([`EngineOptions::scrubber`]).
    /// Its `main` must call [`crate::runner::scrub::serve_wrapper_request`] first thing.
    pub fn scrubbing_with_this_binary(mut self) -> Self {
        self.scrubber = std::env::current_exe().ok();
        self
    }

    pub fn new(home: Home) -> Self {
        EngineOptions {
            home,
            clock: Arc::new(SystemClock),
            env: std::env::vars().collect(),
            identity: crate::runner::process::self_identity(),
            delivery_backoff: DEFAULT_BACKOFF.to_vec(),
            webhook_backoff: outbox::webhooks::BACKOFF.to_vec(),
            push_backoff: upkeep::housekeeping::BACKOFF.to_vec(),
            scrubber: None,
            logind_bus: None,
        }
    }
}

impl Engine {
    /// Open the engine on a home: read settings, open (and migrate) the database.
    pub fn open(opts: EngineOptions) -> Result<Engine> {
        let store = Store::open(&opts.home.db_path())?;
        Engine::with_store(opts, store)
    }

    /// An engine that only reads: the history of a home where nothing may be written (a
    /// read-only file system), its database as it is. Anything that would write fails with
    /// SQLite's read-only error; the CLI opens it only for the commands that read.
    pub fn open_read_only(opts: EngineOptions) -> Result<Engine> {
        let store = Store::open_read_only(&opts.home.db_path())?;
        Engine::with_store(opts, store)
    }

    fn with_store(opts: EngineOptions, store: Store) -> Result<Engine> {
        let live_settings = live_settings::LiveSettings::open(opts.home.settings_path())?;
        let store = Arc::new(store);
        let (events, _) = tokio::sync::broadcast::channel(1024);
        Ok(Engine {
            core: Arc::new(Core {
                home: opts.home,
                live_settings,
                store,
                clock: opts.clock,
                env: opts.env,
                events,
                hooks: RwLock::new(Vec::new()),
                runs: followed::Followed::new(awake::Awake::new(opts.logind_bus.clone())),
                logind_bus: opts.logind_bus,
                probed_at: Mutex::new(HashMap::new()),
                sign_in_checked: Mutex::new(HashMap::new()),
                hook_secrets: Mutex::new(HashMap::new()),
                identity: opts.identity,
                dispatcher_started: Default::default(),
                handed_off: Default::default(),
                offers_tools: Default::default(),
                problems: Default::default(),
                wakes: Default::default(),
                webhook_watch: Default::default(),
                others_heard: Default::default(),
                webhook_holds: Default::default(),
                wake_hub: Default::default(),
                delivery_backoff: opts.delivery_backoff,
                webhook_backoff: opts.webhook_backoff,
                push_backoff: opts.push_backoff,
                scrubber: opts.scrubber,
                sandbox_probe: Default::default(),
                host_sandboxes: Default::default(),
                redactor: Default::default(),
                catalog: Default::default(),
            }),
        })
    }

    pub fn home(&self) -> &Home {
        &self.core.home
    }
    /// The settings now (read again when `nightshift.toml` changed).
    pub fn settings(&self) -> Arc<Settings> {
        self.core.settings()
    }
    /// One run by id or unambiguous id prefix, its message masked (every face shows the same).
    pub fn run(&self, id: &str) -> Result<crate::run::RunRecord> {
        let mut run = self.core.store.get_run(id)?;
        run.message = run.message.as_deref().map(|m| self.redact(m));
        Ok(run)
    }

    /// A page of history, newest first, messages masked.
    pub fn runs(&self, query: &crate::store::RunQuery) -> Result<crate::store::Page> {
        let mut page = self.core.store.list_runs(query)?;
        for run in &mut page.runs {
            run.message = run.message.as_deref().map(|m| self.redact(m));
        }
        Ok(page)
    }

    /// A run's report (Markdown, secrets masked), or an error that says why it has none: still
    /// going, ended without output, removed by retention.
    pub fn report_text(&self, id: &str) -> Result<String> {
        let r = self.run(id)?;
        if let Some(path) = &r.report_path {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", std::path::Path::new(path), &e))?;
            return Ok(self.redact(&format!("{text}{}", self.approvals_footer(&r))));
        }
        if let Some(t) = r.pruned_at {
            return Err(Error::new(ErrorCode::Usage, format!("run {} has no report any more: its files were removed {} by retention", r.id, t.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S"))));
        }
        let why = match (&r.status, &r.message) {
            (RunStatus::Completed, _) => "it completed without output".to_string(),
            (RunStatus::Running | RunStatus::Queued, _) => format!("it is still {}", r.status),
            (s, Some(m)) => format!("it ended {s}: {m}"),
            (s, None) => format!("it ended {s}"),
        };
        Err(Error::new(ErrorCode::Usage, format!("run {} has no report: {why}", r.id)))
    }

    /// What a report says after the agent's words when the run asked (`on_denial: ask`) or an
    /// approval started it: each ask and its answer, the run it reran.
    fn approvals_footer(&self, r: &crate::run::RunRecord) -> String {
        let tz = self.routine(&r.routine).map(|x| x.timezone).unwrap_or_else(|_| crate::schedule::local_tz());
        let mut lines: Vec<String> = self.rerun_words(r).into_iter().collect();
        lines.extend(self.asks_of(&r.id).unwrap_or_default().iter().map(|a| ask_outcome(a, tz)));
        match lines.is_empty() {
            true => String::new(),
            false => format!("\n\n---\nApprovals (Nightshift):\n{}\n", lines.iter().map(|l| format!("- {l}")).collect::<Vec<_>>().join("\n")),
        }
    }

    /// The finish notification run `id` is owed here (its routine's `notify:`), or `None`: what a
    /// viewer of this home on another machine shows for it.
    pub fn notice_of(&self, id: &str) -> Result<Option<crate::notify::Notice>> {
        let run = self.core.store.get_run(id)?;
        let notice = outbox::delivery::notice_of(&self.core, &self.core.routines(), &run)?;
        Ok(notice.map(|n| crate::notify::Notice { summary: self.redact(&n.summary), body: self.redact(&n.body), ..n }))
    }

    /// Runs that ended at or after `from`, oldest first (at most `limit`): what a viewer on
    /// another machine missed, messages masked as [`Engine::runs`] masks them.
    pub fn runs_finished_since(&self, from: chrono::DateTime<chrono::Utc>, limit: usize) -> Result<Vec<crate::run::RunRecord>> {
        let mut runs = self.core.store.finished_since(from, limit)?;
        for run in &mut runs {
            run.message = run.message.as_deref().map(|m| self.redact(m));
        }
        Ok(runs)
    }

    /// What is going on in this home now, in every process: the one reading behind the tray
    /// icon, the window's header and the engine's `EngineState` event.
    pub fn activity(&self) -> Result<Activity> {
        activity(&self.core)
    }

    /// Runs going now (any process on this home).
    pub fn running_count(&self) -> Result<usize> {
        self.core.store.running_count()
    }

    /// Why a run's notification was not delivered, if it was not.
    pub fn notification_error(&self, run_id: &str) -> Result<Option<String>> {
        self.core.store.delivery_error(run_id, &crate::run::Channel::Notify)
    }

    /// The store, for the engine's own read models in `view/` (the routines overview).
    /// The routines as last read, shared (no copy): for read models that look at many.
    pub(crate) fn routine_set(&self) -> Arc<RoutineSet> {
        self.core.routines()
    }

    /// Every day's and month's budget (`[budget]`, the accounts', the routines') and where each
    /// stands: what runs reported spending in the period so far, of how much, until when.
    pub fn budgets(&self) -> Result<Vec<BudgetState>> {
        accounts::budgets::states(&self.core)
    }

    /// The engine clock's now (what schedules and views are computed at).
    pub(crate) fn clock_now(&self) -> chrono::DateTime<chrono::Utc> {
        self.core.clock.now()
    }

    pub(crate) fn core_store(&self) -> &Store {
        &self.core.store
    }
    pub fn subscribe(&self) -> EventReceiver {
        self.core.events.subscribe()
    }

    /// Hear of what other processes do on this home — a run queued or settled by a daemon or a
    /// CLI (they touch its wake file) — as this engine's own `EngineState` event (the counts, read
    /// from the store), for as long as the returned value lives. A face that views a home another
    /// process schedules (`serve` beside a daemon) passes it on to its viewers, which then read
    /// what changed (other homes' viewers catch up on the finishes they owe).
    /// Faces that hold it at once (the app and its `[serve] listen`) share one listener, so each
    /// change is one state event.
    pub fn hear_other_processes(&self) -> OtherProcesses {
        let mut heard = self.core.others_heard.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(watch) = heard.upgrade() {
            return OtherProcesses { _watch: watch };
        }
        let core = Arc::clone(&self.core);
        let watch = Arc::new(self.on_other_processes(move || core.emit_state()));
        *heard = Arc::downgrade(&watch);
        OtherProcesses { _watch: watch }
    }

    /// Hear, for as long as the returned value lives, each time another process queues or
    /// settles a run of this home — for a face whose views must then read again what others
    /// changed (the window's `resync`).
    pub fn watch_other_processes(&self) -> OthersChanged {
        let woken = Arc::new(tokio::sync::Notify::new());
        let notify = Arc::clone(&woken);
        OthersChanged { _watch: self.on_other_processes(move || notify.notify_one()), woken }
    }

    /// Call `then` whenever another process queues or settles a run of this home. Every process
    /// touches the wake file, this one too: a touch whose file names this process (it holds the
    /// toucher's pid) is its own, already told by its own events, and skipped — so a view is not
    /// redrawn after each of its own runs. (Two touches in the same instant, another's and then
    /// this one's, read as this one's: the other's runs then show at the next touch.) Calls come
    /// from a watcher thread, one per touch.
    fn on_other_processes(&self, then: impl Fn() + Send + Sync + 'static) -> signal::WakeWatch {
        let (wake_file, me) = (self.core.home.wake_path(), self.core.identity.0);
        let others = move || {
            let toucher = std::fs::read_to_string(&wake_file).ok().and_then(|t| t.trim().parse::<u32>().ok());
            if toucher != Some(me) {
                then();
            }
        };
        signal::watch_wake_file(&self.core, Vec::new(), others)
    }

    /// Send desktop notifications through `notifier`: a finish notification per run (per the
    /// routine's `notify:` policy, exactly once, from the outbox — also for runs other processes
    /// settled), and a notice when an account turns `revoked` or a routine is auto-paused. Must be
    /// called inside a tokio runtime.
    pub fn enable_notifications(&self, notifier: Arc<dyn crate::notify::Notifier>) {
        let sender = Arc::new(crate::notify::BoundedSender::new(notifier));
        outbox::delivery::start(&self.core, Arc::clone(&sender));
        outbox::delivery::start_notices(&self.core, self.subscribe(), sender);
    }

    /// The notices that are news while a short-lived process waits (`run --wait --notify`): a
    /// run that starts to wait for a limit ("⏳ … waits for the limit"), an account revoked, a
    /// routine auto-paused — for as long as the runtime lives. Finish notifications stay with
    /// [`Engine::deliver_notifications_now`].
    pub fn enable_live_notices(&self, notifier: Arc<dyn crate::notify::Notifier>) {
        outbox::delivery::start_notices(&self.core, self.subscribe(), Arc::new(crate::notify::BoundedSender::new(notifier)));
    }

    /// Deliver the notifications that are due now through `notifier`, once, and return (for a
    /// short-lived process such as `run --wait --notify`; long-running ones use
    /// [`Engine::enable_notifications`]). What cannot be shown stays owed to the next notifier.
    pub async fn deliver_notifications_now(&self, notifier: Arc<dyn crate::notify::Notifier>) {
        outbox::delivery::once(&self.core, Arc::new(crate::notify::BoundedSender::new(notifier))).await;
    }

    /// Probe the usage of every account with `usage_probe = true` that was not asked about in
    /// the last 10 minutes, now (blocking: one HTTP request per account); returns the accounts
    /// asked about. The scheduler loop does this every minute for as long as it runs.
    pub fn probe_usage_now(&self) -> Vec<String> {
        accounts::usage_probe::probe_due(&self.core, &crate::webhook::agent())
    }

    /// Start this home's long-lived parts besides the scheduler's loop (the housekeeper, the usage
    /// probe, the GitHub poller), for as long as the returned value lives; see [`crate::daemon`].
    pub fn start_resident_parts(&self) -> ResidentParts {
        resident::Parts::start(self)
    }

    /// Deliver this home's webhooks from now on (the app and the daemon; call once, in a runtime).
    pub fn enable_webhooks(&self) {
        outbox::webhooks::start(&self.core);
    }

    /// Deliver what webhooks are due, for at most `limit` (a `run --wait` before it exits; what is
    /// left stays owed to the app or the daemon).
    pub async fn deliver_webhooks_now(&self, limit: std::time::Duration) {
        outbox::webhooks::once(&self.core, limit).await;
    }

    /// Push the worktree branches that are due now, once (a `run --wait` before it exits; what
    /// fails stays owed to the app or the daemon, which retry with backoff).
    pub async fn push_branches_now(&self) {
        upkeep::housekeeping::push_due(&self.core).await;
    }

    /// Push a run's branch again, now (after it gave up, or instead of waiting for the next
    /// try), and return the run as it is afterwards.
    pub async fn retry_push(&self, run_id: &str) -> Result<crate::run::RunRecord> {
        use crate::run::PushState;
        let run = self.run(run_id)?;
        let owed = run.changes.as_ref().and_then(|c| c.push.as_ref()).map(|p| p.state);
        match owed {
            None => return Err(Error::new(ErrorCode::Usage, format!("run {} has no branch to push (its routine has no `workspace: worktree` with `push:`)", run.id))),
            Some(PushState::Pushed) => return Ok(run),
            Some(PushState::Nothing) => return Err(Error::new(ErrorCode::Usage, format!("run {} made no commit: there is nothing to push", run.id))),
            _ => {}
        }
        if !self.core.store.reset_push(&run.id)? {
            return Err(Error::new(ErrorCode::Usage, format!("run {} owes no push right now", run.id)));
        }
        upkeep::housekeeping::push_due(&self.core).await;
        signal::wake(&self.core);
        self.run(&run.id)
    }

    /// Remove the worktrees of settled runs older than `keep_worktrees_days` (what the app and the
    /// daemon do every hour); `dry_run` only says which.
    pub async fn prune_worktrees(&self, dry_run: bool) -> Vec<upkeep::housekeeping::Pruned> {
        let core = Arc::clone(&self.core);
        tokio::task::spawn_blocking(move || upkeep::housekeeping::prune(&core, dry_run)).await.unwrap_or_default()
    }

    /// What runs used since `since`, grouped by routine, account or day.
    pub fn usage(&self, by: crate::store::UsageBy, since: chrono::DateTime<chrono::Utc>) -> Result<Vec<crate::store::UsageRow>> {
        self.core.store.usage(by, since, self.core.clock.now())
    }

    /// Remove the files of runs older than the retention settings say (`dry_run`: only list
    /// them); their records stay. The app and the daemon do this every hour.
    pub async fn prune_runs(&self, dry_run: bool) -> Vec<PrunedRun> {
        let core = Arc::clone(&self.core);
        tokio::task::spawn_blocking(move || upkeep::retention::prune(&core, dry_run)).await.unwrap_or_default()
    }

    /// Every delivery of a run (its notification, its webhooks).
    pub fn deliveries_of(&self, run_id: &str) -> Result<Vec<crate::store::DeliveryRow>> {
        self.core.store.deliveries_of(run_id)
    }

    /// Webhook deliveries, newest first; `failed_only`: those that gave up.
    pub fn webhook_deliveries(&self, failed_only: bool, limit: usize) -> Result<Vec<crate::store::DeliveryRow>> {
        self.core.store.webhook_deliveries(failed_only, limit)
    }

    /// Try a run's webhook deliveries again from the start (all, or the one named `webhook`).
    pub fn retry_deliveries(&self, run_id: &str, webhook: Option<&str>) -> Result<usize> {
        let channel = webhook.map(crate::webhook::channel);
        let n = self.core.store.reset_delivery(run_id, channel.as_ref())?;
        if n > 0 {
            signal::wake(&self.core);
        }
        Ok(n)
    }

    /// Store a webhook's signing secret in the OS keychain.
    pub fn set_webhook_secret(&self, name: &str, secret: &str) -> Result<()> {
        let settings = self.core.settings();
        if settings.webhook(name).is_none() {
            return Err(Error::new(ErrorCode::Usage, format!("no webhook named \"{name}\" in {}", self.core.home.settings_path().display())));
        }
        crate::accounts::keychain::set_secret(&settings.keychain_service, &crate::webhook::secret_key(name), secret, &format!("or set {}", outbox::webhooks::secret_env_var(name)))
            .map_err(|e| Error::new(ErrorCode::Io, e.0))
    }

    /// Register a hook called in this process after every run's record it finalizes is final
    /// (best effort, bounded; durable deliveries go through the outbox).
    pub fn add_settle_hook(&self, hook: Arc<dyn SettleHook>) {
        self.core.hooks.write().unwrap_or_else(|e| e.into_inner()).push(hook);
    }

    /// Load the routines now (files are the source of truth; cheap enough to read on demand).
    pub fn routines(&self) -> RoutineSet {
        (*self.core.routines()).clone()
    }

    /// A routine by name, or an error that says what is wrong with it or what exists instead.
    pub fn routine(&self, name: &str) -> Result<Routine> {
        let core = &self.core;
        let found = core.catalog.by_name(&core.home, &core.settings(), &core.store, || Ok(vec![name.to_string()]))?;
        let set = found.set;
        if let Some(r) = set.get(name) {
            return Ok(r.clone());
        }
        if let Some(bad) = set.get_invalid(name) {
            // One self-explanatory line per problem (each names file:line:col).
            let errors: Vec<String> = bad.errors.iter().map(ToString::to_string).collect();
            return Err(Error::new(ErrorCode::RoutineInvalid, errors.join("\n")));
        }
        let names: Vec<&str> = found.names.iter().map(String::as_str).collect();
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
        self.run_now_with(name, trigger, crate::run::RunAsks::default()).await
    }

    /// [`run_now`](Engine::run_now) with what a person asked: `wait_for_limit` — should it meet a
    /// rate limit with no other account free, it waits for the reset (and runs then) instead of
    /// failing; `ignore_budget` — it starts although a day's or month's budget is spent. A run of
    /// the routine that already waits for a time is started now instead of a new one.
    /// A routine whose `devices:` does not list this machine is refused, with where it runs,
    /// unless `here` (recorded on the run).
    pub async fn run_now_with(&self, name: &str, trigger: Trigger, asks: crate::run::RunAsks) -> Result<RunHandle> {
        let routine = self.routine(name)?;
        let device = self.core.device_name();
        if !asks.here && !routine.runs_on(&device) {
            return Err(Error::new(
                ErrorCode::OtherDevice,
                format!(
                    "{name} runs on {} (its `devices:`), not on this machine ({device}): run it there, or here anyway with `nightshiftctl run {name} --here`",
                    routine.devices.join(", ")
                ),
            ));
        }
        run::queue::run_now(&self.core, &routine, trigger, asks).await
    }

    /// Ask a run this engine supervises to stop (SIGTERM to its group, then SIGKILL after the
    /// grace period), or drop it from the queue (whichever process queued it). Returns false when
    /// there is no such run to stop here.
    pub async fn cancel(&self, run_id: &str) -> bool {
        run::queue::stop(&self.core, run_id, true).await
    }

    /// Check the database file for damage before scheduling on it (reads every page; the daemon
    /// and the app call it once at start).
    pub fn check_database(&self) -> Result<()> {
        let checked = self.core.store.check_integrity();
        if let Err(e) = &checked {
            self.core.problems.tell(problems::About::Database, e.message.clone());
            self.core.emit_state();
        }
        checked
    }

    /// Everything the user must hear about this home now, one sentence each, for the tray's
    /// attention state and the window's header: the storage (disk full, read-only — asked of the
    /// file system each time, so it clears once space is freed), a damaged database, runs that
    /// ended but could not be recorded yet.
    pub fn problems(&self) -> Vec<String> {
        // A look at nightshift.toml first: a broken edit is one of the problems.
        let _ = self.core.settings();
        let mut out: Vec<String> = crate::fsutil::storage_trouble(self.core.home.data_dir()).into_iter().collect();
        out.extend(self.core.problems.sentences());
        out
    }

    /// Says that the receiver of `[hooks] listen` could not start, atop the window and in
    /// `problems`, until the process ends.
    pub fn tell_hooks_problem(&self, said: String) {
        tracing::error!("{said}");
        self.core.problems.tell(problems::About::Hooks, said);
        self.core.emit_state();
    }

    /// Says that the window's server of `[serve] listen` could not start, as for the hooks.
    pub fn tell_serve_problem(&self, said: String) {
        tracing::error!("{said}");
        self.core.problems.tell(problems::About::Serve, said);
        self.core.emit_state();
    }

    /// The storage problem behind a failed command, if any ("the disk holding … is full"), for
    /// faces to print beside a database error (which cannot name the path itself).
    pub fn storage_trouble(&self) -> Option<String> {
        crate::fsutil::storage_trouble(self.core.home.data_dir())
    }

    /// Before a short-lived process exits: its runs that still wait say who will start them.
    pub fn hand_off_queued(&self) -> Result<usize> {
        run::queue::hand_off(&self.core)
    }

    /// This machine's name for `devices:` filters: the `device_name` setting, else the hostname.
    pub fn device_name(&self) -> String {
        self.core.device_name()
    }

    /// Pause or resume all scheduling (stored per machine; manual runs still work).
    pub fn set_paused(&self, paused: bool) -> Result<()> {
        self.core.store.set_global_paused(paused, self.core.clock.now())?;
        self.core.emit_state();
        Ok(())
    }

    /// Pause or resume one routine (stored per machine, never written into its YAML).
    pub fn set_routine_paused(&self, name: &str, paused: bool) -> Result<()> {
        let set = self.routines();
        if set.get(name).is_none() && set.get_invalid(name).is_none() {
            self.routine(name)?;
        }
        self.core.store.set_routine_paused(name, paused, None, self.core.clock.now())?;
        self.core.emit(EngineEvent::RoutinesChanged);
        Ok(())
    }

    /// Runs waiting for a lane, in every process on this home.
    pub async fn queued(&self) -> usize {
        let core = Arc::clone(&self.core);
        tokio::task::spawn_blocking(move || core.store.open_counts().map(|c| c.1).unwrap_or(0)).await.unwrap_or(0)
    }

    /// Settle (or, with [`RecoveryMode::Adopt`], re-adopt) runs left `running` by an engine that
    /// is gone. Returns the ids it settled or adopted.
    pub async fn recover(&self, mode: RecoveryMode) -> Result<Vec<String>> {
        run::recovery::recover(&self.core, mode).await
    }
}
