//! The scheduler: fires routines at their slots — exactly once each — catches up honestly after
//! sleep or downtime, and reloads routine files as they change.
//!
//! * **Time** comes from the engine's [`Clock`](crate::Clock). [`Scheduler::tick`] does one pass at
//!   "now"; tests drive it with a manual clock and never sleep for a schedule.
//! * **Timers that survive sleep, and wake only when something is due**: the loop sleeps until the
//!   next fire on a kernel *wall-clock* timer ([`super::wall_timer`]: it fires at that time after a
//!   suspend too, and wakes early when the clock is stepped), or — for nothing due — at most
//!   [`FALLBACK`] (the presence record's beat, a wake-up that could not be heard). A plain
//!   monotonic `sleep(until_next)` would fire hours late after a suspend. Without a wall timer
//!   (another platform, a test's manual clock) the wait is sliced: the clock is looked at every
//!   30 s.
//! * **Catch-up**: each routine's state remembers up to when its slots were evaluated
//!   (`checked_until`). Slots after that — the engine was off or the machine asleep — are due now:
//!   the newest runs once (trigger `catchup`, or `schedule` when it is less than 90 s late), the
//!   older ones are recorded `missed` (reason `superseded`). Never a burst. Look-back is at most 7
//!   days and never before the routine first appeared. While a routine is paused, disabled, not
//!   on this device or its file invalid, its slots are evaluated and dropped, so resuming (or
//!   fixing the file) does not replay them. `why` explains each dropped slot from the events and
//!   presence the scheduler records (see `presence`).
//! * **Exactly once**: a slot is claimed by inserting its row (`unique(routine, scheduled_for)`)
//!   before anything is spawned; a refused claim means another engine (or an earlier pass) has it.
//!   The row is the queue entry: the queue starts it when a lane is free.
//! * **Held work**: each pass also makes up runs a sign-in failure held (see `held`).
//! * **No blocking**: a pass's store work runs on a blocking thread, never on the async workers.

use crate::engine::run::queue::{self, queued_row};
use super::held;
use crate::engine::state::Core;
use crate::engine::state::Engine;
use crate::error::{Error, ErrorCode, Result};
use crate::events::EngineEvent;
use crate::routine::{self, Routine, RoutineSet};
use crate::run::{new_run_id, Reason, RunStatus, Trigger};
use crate::store::NewRun;
use chrono::{DateTime, Duration as Span, Utc};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Without a wall-clock timer, the longest the loop sleeps before re-reading the wall clock.
pub const SLICE: Duration = super::wall_timer::SLICE;
/// With one, the longest it sleeps with nothing due: a pass then extends the presence record
/// `why` reads and adopts what a process that could not wake us left behind.
pub const FALLBACK: Duration = crate::engine::signal::FALLBACK;
/// How far back missed slots are looked for.
pub const LOOKBACK_DAYS: i64 = 7;
/// A slot fired at most this late counts as on time (trigger `schedule`, not `catchup`).
pub const ON_TIME_SECS: i64 = 90;
/// At most this many missed slots per routine are written per pass (an every-second cron asleep
/// for a week would otherwise write 600k rows); the count of the rest goes into a message.
pub const MAX_MISSED_ROWS: usize = 1000;
/// How often runs of other processes are checked for an engine that is gone.
const OTHERS_POLL: Duration = Duration::from_secs(1);
/// Quiet time after a routine file changes before reloading (editors write in several steps).
const DEBOUNCE: Duration = Duration::from_millis(300);

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TickReport {
    /// Runs submitted: (routine, run id, trigger).
    pub fired: Vec<(String, String, Trigger)>,
    pub missed: usize,
    pub skipped: usize,
}

pub struct Scheduler {
    engine: Engine,
    /// Shared with the engine's catalog (never copied).
    routines: Mutex<Arc<RoutineSet>>,
    /// Each evaluated routine's next slot (`None`: none ahead). A pass skips routines whose next
    /// slot is still ahead, so an idle pass costs nothing per routine; a reload forgets all, and so
    /// does a pause or resume (by any process: a resume owes slots from its instant on).
    next_slots: Mutex<HashMap<String, Option<DateTime<Utc>>>>,
    /// The newest routine event (pause, resume) the remembered next slots were worked out after.
    events_seen: Mutex<i64>,
    /// When this scheduler was alive and awake, as recorded for `why`.
    presence: Mutex<crate::engine::presence::Presence>,
}

impl Scheduler {
    pub fn new(engine: Engine) -> Arc<Scheduler> {
        let routines = engine.core.routines();
        crate::engine::presence::record_file_states(&engine.core, &routines);
        Arc::new(Scheduler { engine, routines: Mutex::new(routines), next_slots: Mutex::new(HashMap::new()), events_seen: Mutex::new(0), presence: Default::default() })
    }

    fn core(&self) -> &Arc<Core> {
        &self.engine.core
    }

    /// The routines as the scheduler currently knows them.
    pub fn routines(&self) -> RoutineSet {
        (*self.current()).clone()
    }

    /// The routines as the scheduler knows them, without a copy.
    fn current(&self) -> Arc<RoutineSet> {
        Arc::clone(&self.routines.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Re-read the routine files (added, changed, broken, removed) and tell the faces.
    pub fn reload(&self) {
        let set = self.engine.core.routines();
        for bad in &set.invalid {
            for e in &bad.errors {
                tracing::warn!(routine = %bad.name, "{e}");
            }
        }
        crate::engine::presence::record_file_states(self.core(), &set);
        *self.routines.lock().unwrap_or_else(|e| e.into_inner()) = set;
        self.next_slots.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.core().emit(EngineEvent::RoutinesChanged);
    }

    /// `nightshift.toml` changed: read it now (not within a second) — an invalid file keeps the
    /// last good settings and becomes one of the home's problems — then the routines under it.
    pub fn settings_changed(&self) {
        self.core().settings_file_changed();
        self.reload();
    }

    /// One pass at the clock's now: fire what is due, record what was missed, make up held
    /// work; then start what fits.
    pub async fn tick(&self) -> Result<TickReport> {
        let core = Arc::clone(self.core());
        let set = self.current();
        let device = self.engine.device_name();
        self.presence.lock().unwrap_or_else(|e| e.into_inner()).beat(&core, &device);
        let mut next_slots = std::mem::take(&mut *self.next_slots.lock().unwrap_or_else(|e| e.into_inner()));
        // Paused or resumed since: the remembered next slots may hide slots now owed.
        if let Ok(latest) = core.store.routine_events_upto() {
            let mut seen = self.events_seen.lock().unwrap_or_else(|e| e.into_inner());
            if *seen != latest {
                next_slots.clear();
                *seen = latest;
            }
        }
        let (report, finals, queued, next_slots, superseded, replaced) = {
            let core = Arc::clone(&core);
            tokio::task::spawn_blocking(move || Pass { core: &core, set: &set, device: &device, claims: Vec::new(), owes: HashMap::new(), superseded: Vec::new(), replaced: Vec::new(), next_slots }.run())
                .await
                .map_err(|e| Error::new(ErrorCode::StoreUnavailable, format!("scheduler pass failed: {e}")))??
        };
        *self.next_slots.lock().unwrap_or_else(|e| e.into_inner()) = next_slots;
        for run in finals {
            crate::engine::run::announce::announce(&core, &run).await;
        }
        for (id, why) in superseded {
            crate::engine::run::queue::supersede_waiting(&core, &id, &why).await;
        }
        for (id, why) in replaced {
            queue::replace(&core, &id, why).await;
        }
        for run in queued {
            core.emit(EngineEvent::RunQueued { run: Box::new(run) });
        }
        queue::dispatch(&core).await;
        Ok(report)
    }

    /// The next instant any active routine fires. A slot the last pass computed (and that is
    /// still ahead) is taken as it is: the loop asks after every pass, and working each routine's
    /// schedule out again cost a burst of settles thousands of cron evaluations.
    pub fn next_fire(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let device = self.engine.device_name();
        let known = self.next_slots.lock().unwrap_or_else(|e| e.into_inner());
        self.current()
            .routines
            .iter()
            .filter(|r| r.fires_on(&device))
            .filter_map(|r| match known.get(&r.name) {
                Some(next) if next.is_none_or(|t| t > now) => *next,
                _ => r.next_slot(now),
            })
            .min()
    }

    /// The long-running loop, until `shutdown` is notified. Never returns early on errors: a
    /// failing pass is logged and retried at the next wake.
    pub async fn run(self: Arc<Self>, shutdown: Arc<Notify>) {
        let (tx, mut changes) = tokio::sync::mpsc::channel::<()>(16);
        // Every folder routines are read from (the home's, agents-cli's, opted-in projects'), as
        // the settings say: watched again when they change.
        let watch_folders = || watch_routines(&routine::home_dirs(self.engine.home(), &self.core().settings()), tx.clone());
        let mut _watcher = watch_folders();
        let (settings_tx, mut settings_changes) = tokio::sync::mpsc::channel::<()>(16);
        let settings_path = self.engine.home().settings_path();
        let mut _settings_watcher = watch_settings(&settings_path, settings_tx.clone());
        let (wake_tx, mut wakes) = tokio::sync::mpsc::channel::<()>(16);
        // Another process queued or settled a run; an account's login file changed (the accounts
        // as the settings say now: watched again when they change).
        let watch_wakes = || {
            let (engine, tx) = (&self.engine, wake_tx.clone());
            let logins = engine.accounts().iter().map(|a| a.config_dir.join(a.auth().login_file)).collect();
            crate::engine::signal::watch_wake_file(self.core(), logins, move || {
                let _ = tx.try_send(());
            })
        };
        let mut _wake_watcher = watch_wakes();
        self.core().emit_state();
        let timer = super::wall_timer::WallTimer::new(self.core().clock.is_system());
        tracing::debug!(wall_timer = timer.is_whole(), "the scheduler sleeps until what is due");
        let mut sleeps = super::sleep_watch::watch(self.core().logind_bus.clone());
        loop {
            self.pass().await;
            let now = self.core().clock.now();
            let fallback = now + chrono::Duration::from_std(FALLBACK).unwrap_or_default();
            let at = self.next_fire(now).map_or(fallback, |t| t.min(fallback));
            tokio::select! {
                _ = self.sleep_watching_others(&timer, at) => {}
                Some(()) = changes.recv() => {
                    tokio::time::sleep(DEBOUNCE).await;
                    while changes.try_recv().is_ok() {}
                    self.reload();
                }
                // nightshift.toml changed: read it now (not within a second), then the routines
                // under it (a webhook's name decides whether a routine is valid).
                Some(()) = settings_changes.recv() => {
                    tokio::time::sleep(DEBOUNCE).await;
                    while settings_changes.try_recv().is_ok() {}
                    // Watched again before it is read: a change from now on is not missed.
                    _settings_watcher = watch_settings(&settings_path, settings_tx.clone());
                    self.settings_changed();
                    _wake_watcher = watch_wakes();
                    _watcher = watch_folders();
                }
                // Another process queued or settled a run, a login changed, an account works again.
                Some(()) = wakes.recv() => {
                    // A burst of settles (this process's own included: it touches the file too)
                    // is one pass, not one per run.
                    tokio::time::sleep(crate::engine::signal::WAKE_GATHER).await;
                    while wakes.try_recv().is_ok() {}
                }
                _ = self.core().wakes.of(crate::engine::signal::Wake::Scheduler).notified() => {}
                // logind: the machine goes to sleep. Its stretch of presence ends now, and no pass
                // happens until it wakes (a pass would start a new stretch before the suspend, and
                // a slot due in the seconds before it would fire into it). logind says it woke —
                // also when a suspend was called off — else the fallback look ends the wait.
                Some(said) = sleeps.recv() => {
                    if said == super::sleep_watch::Sleep::Going {
                        self.presence.lock().unwrap_or_else(|e| e.into_inner()).asleep(self.core());
                        tokio::select! {
                            _ = async { while sleeps.recv().await == Some(super::sleep_watch::Sleep::Going) {} } => {}
                            _ = tokio::time::sleep(FALLBACK) => {}
                            _ = shutdown.notified() => return,
                        }
                    }
                }
                _ = shutdown.notified() => {
                    self.presence.lock().unwrap_or_else(|e| e.into_inner()).stop(self.core());
                    return;
                }
            }
        }
    }
}

impl Scheduler {
    /// One wake-up's work: the pass, then what other processes left behind — runs whose engine is
    /// gone (`nightshiftctl run` without --wait, a CLI that was killed) adopted, so they end up
    /// recorded, and approvals given where their rerun could not start.
    async fn pass(&self) {
        if let Err(e) = self.tick().await {
            tracing::error!(error = %e, "scheduler pass failed; retrying at the next wake");
        }
        if let Err(e) = self.engine.recover(crate::engine::run::recovery::RecoveryMode::Adopt).await {
            tracing::warn!(error = %e, "could not adopt orphaned runs");
        }
        if let Err(e) = self.engine.start_approved_reruns().await {
            tracing::warn!(error = %e, "could not start the reruns approvals asked for");
        }
    }

    /// Sleep until `at` on the wall clock (or the clock is stepped); while runs of other
    /// processes are open (a CLI's run, or one it left queued as it returned), look every second
    /// whether their engine is gone and take them over — a process that exits cannot wake us, and
    /// its work must not wait for the next pass.
    async fn sleep_watching_others(&self, timer: &super::wall_timer::WallTimer, at: DateTime<Utc>) {
        loop {
            let core = Arc::clone(self.core());
            let me = core.identity.clone();
            let others = tokio::task::spawn_blocking(move || core.store.open_runs_of_others((me.0, &me.1)).unwrap_or(0)).await.unwrap_or(0);
            let now = self.core().clock.now();
            if others == 0 {
                if let super::wall_timer::Woke::ClockStepped = timer.wait_until(at, now).await {
                    tracing::info!("the wall clock was set: working out what is due again");
                }
                return;
            }
            tokio::select! {
                _ = timer.wait_until(at, now) => return,
                _ = tokio::time::sleep(OTHERS_POLL) => {}
            }
            if let Err(e) = self.engine.recover(crate::engine::run::recovery::RecoveryMode::Adopt).await {
                tracing::warn!(error = %e, "could not adopt orphaned runs");
            }
        }
    }
}

impl Drop for Scheduler {
    /// A scheduler let go (the app or daemon stopping) ends its stretch of presence cleanly.
    fn drop(&mut self) {
        self.presence.get_mut().unwrap_or_else(|e| e.into_inner()).stop(&self.engine.core);
    }
}

/// One scheduler pass over the store (on a blocking thread).
struct Pass<'a> {
    core: &'a Arc<Core>,
    set: &'a RoutineSet,
    device: &'a str,
    /// The rows this pass claims (queued, missed, skipped), written together at its end.
    claims: Vec<NewRun>,
    /// What a missed or skipped row owes the user (`notify_missed`), by run id.
    owes: HashMap<String, Vec<crate::run::Channel>>,
    /// Runs waiting for a retry or a limit's reset that a new slot of their routine supersedes:
    /// (run id, why), settled once the slot is claimed.
    superseded: Vec<(String, String)>,
    /// Running runs a new slot replaces (`overlap: replace`): (run id, why), cancelled once the
    /// slot is claimed.
    replaced: Vec<(String, String)>,
    next_slots: NextSlots,
}

/// What a pass did: its report, the rows that were final from the start (missed, skipped) to
/// announce, the queued runs to announce, and each evaluated routine's next slot.
type PassResult = (TickReport, Vec<crate::run::RunRecord>, Vec<crate::run::RunRecord>, NextSlots, Vec<(String, String)>, Vec<(String, String)>);

/// Each routine's next slot as a pass computed it.
type NextSlots = HashMap<String, Option<DateTime<Utc>>>;

impl Pass<'_> {
    fn run(mut self) -> Result<PassResult> {
        let core = self.core;
        let now = core.clock.now();
        let all_paused = core.store.global_paused()?;
        let mut report = TickReport::default();
        let mut evaluated: Vec<&str> = Vec::with_capacity(self.set.routines.len());
        for r in &self.set.routines {
            // Nothing can be due before the routine's next slot: no store work at all until then.
            // (Its `checked_until` may lag meanwhile; the slots in between are none either way.)
            if let Some(next) = self.next_slots.get(&r.name) {
                if next.is_none_or(|t| t > now) {
                    continue;
                }
            }
            self.next_slots.insert(r.name.clone(), r.next_slot(now));
            let row = core.store.routine_state(&r.name, now)?;
            evaluated.push(&r.name);
            if !r.state(self.device, row.pause(), all_paused).is_active() {
                continue;
            }
            let from = row.checked_until.max(row.first_seen).max(now - Span::days(LOOKBACK_DAYS));
            let (mut slots, mut total) = r.due_slots(from, now, MAX_MISSED_ROWS + 1);
            // `runOnce`: the first fire after the routine appeared is its only one.
            if r.run_once && !slots.is_empty() {
                if core.store.last_slot(&r.name)?.is_some() {
                    continue;
                }
                slots = slots.iter().min().copied().into_iter().collect();
                total = 1;
            }
            // `jitter:` edited to a longer span moves a slot that already ran later: the
            // expression's fire it belongs to is done, and is not run twice.
            if let Some(s) = r.schedule.as_ref().filter(|s| s.jitter.is_some() && !slots.is_empty()) {
                if let Some(last) = core.store.last_slot(&r.name)? {
                    slots.retain(|t| s.fire_of(*t) > last);
                }
            }
            if slots.is_empty() {
                continue;
            }
            self.plan(r, &slots, total, now)?;
        }
        let (mut finals, mut queued) = (Vec::new(), Vec::new());
        // A slot another engine claimed first comes back `None`: nothing of it is announced.
        for run in core.store.claim_slots(&self.claims, &self.owes)?.into_iter().flatten() {
            match run.status {
                RunStatus::Queued => {
                    if run.trigger == Trigger::Catchup {
                        tracing::info!(routine = %run.routine, slot = ?run.scheduled_for, "catching up a missed slot");
                    }
                    report.fired.push((run.routine.clone(), run.id.clone(), run.trigger));
                    queued.push(run);
                }
                RunStatus::Missed => {
                    report.missed += 1;
                    finals.push(run);
                }
                _ => {
                    report.skipped += 1;
                    finals.push(run);
                }
            }
        }
        // An invalid file's slots are dropped too: fixing it does not replay the time it was broken.
        evaluated.extend(self.set.invalid.iter().map(|bad| bad.name.as_str()));
        core.store.set_checked_until(&evaluated, now)?;
        for (routine, id) in held::make_up_owed(core, self.set)? {
            queued.extend(core.store.get_run(&id).ok());
            report.fired.push((routine, id, Trigger::Catchup));
        }
        Ok((report, finals, queued, self.next_slots, self.superseded, self.replaced))
    }

    /// Decide what happens to a routine's due slots (newest first).
    fn plan(&mut self, r: &Routine, slots: &[DateTime<Utc>], total: usize, now: DateTime<Utc>) -> Result<()> {
        let newest = slots[0];
        let late = now - newest > Span::seconds(ON_TIME_SECS);
        // `catchup: <duration>`: a slot later than that is not worth making up.
        let too_late = r.catchup_within.filter(|within| now - newest > Span::from_std(*within).unwrap_or(Span::MAX));
        let made_up = late && r.catchup && too_late.is_none();
        let not_made_up = match too_late {
            Some(within) => format!("more than `catchup: {}` makes up", humantime::format_duration(within)),
            None => "the routine has `catchup: false`".to_string(),
        };
        if !late {
            self.fire(r, newest, Trigger::Schedule, now)?;
        } else if made_up {
            self.fire(r, newest, Trigger::Catchup, now)?;
        } else {
            let how_late = crate::words::duration((now - newest).num_milliseconds().max(0) as u64);
            let msg = match too_late {
                Some(_) => format!("missed: Nightshift was not running at this time, and the slot was {how_late} late — {not_made_up}"),
                None => format!("missed: Nightshift was not running at this time, and {not_made_up}"),
            };
            self.record(r, newest, RunStatus::Missed, None, msg, now);
        }
        let when = local(r, newest);
        for (i, older) in slots.iter().enumerate().skip(1) {
            let mut msg = if made_up || (!late && r.catchup) {
                format!("missed while Nightshift was not running; superseded by the run for {when}")
            } else {
                format!("missed: Nightshift was not running at this time, and {not_made_up}")
            };
            if i == slots.len() - 1 && total > slots.len() {
                msg += &format!(" ({} earlier missed slots were not recorded one by one)", total - slots.len());
            }
            let reason = (made_up || (!late && r.catchup)).then_some(Reason::Superseded);
            self.record(r, *older, RunStatus::Missed, reason, msg, now);
        }
        Ok(())
    }

    /// Claim the slot as a queued run — or record it `skipped` while the routine is busy.
    /// (Claimed at the pass's end with the others; a slot already taken stays the taker's.)
    fn fire(&mut self, r: &Routine, slot: DateTime<Utc>, trigger: Trigger, now: DateTime<Utc>) -> Result<()> {
        let core = self.core;
        // A run still waiting for a retry or a limit when the next slot comes: the slot does the
        // work (a late machine, say), and the waiting run is settled as superseded by it.
        if let Some((id, _)) = core.store.waiting_run_of(&r.name)? {
            self.superseded.push((id, format!("not tried again: superseded by the run for {}", local(r, slot))));
            self.claims.push(queued_row(core, r, &new_run_id(), trigger, Some(slot), now));
            return Ok(());
        }
        if let Some((id, status)) = core.store.open_run_of(&r.name)? {
            use crate::routine::Overlap;
            match (r.overlap, status) {
                // One run waits behind the running one (lanes keep one run per routine going).
                (Overlap::Queue, RunStatus::Running) if !core.store.has_queued_run(&r.name)? => {
                    self.claims.push(queued_row(core, r, &new_run_id(), trigger, Some(slot), now));
                    return Ok(());
                }
                // (Once: a replacement already waiting for the cancelled run to end is not
                // replaced again; a further slot meanwhile is skipped.)
                (Overlap::Replace, RunStatus::Running) if !core.store.has_queued_run(&r.name)? => {
                    self.replaced.push((id, format!("cancelled: replaced by the run for {} (`overlap: replace`)", local(r, slot))));
                    self.claims.push(queued_row(core, r, &new_run_id(), trigger, Some(slot), now));
                    return Ok(());
                }
                _ => {}
            }
            let msg = if status == RunStatus::Running {
                format!("skipped: the previous run ({id}) was still running")
            } else {
                "skipped: a run of this routine was still waiting for a free lane".to_string()
            };
            self.record(r, slot, RunStatus::Skipped, Some(Reason::ActiveRun), msg, now);
            return Ok(());
        }
        self.claims.push(queued_row(core, r, &new_run_id(), trigger, Some(slot), now));
        Ok(())
    }

    /// A final row for a slot that does not run (missed, skipped), if the slot is still unclaimed.
    fn record(&mut self, r: &Routine, slot: DateTime<Utc>, status: RunStatus, reason: Option<Reason>, message: String, now: DateTime<Utc>) {
        let row = NewRun {
            status,
            reason,
            message: Some(message),
            finished_at: Some(now),
            ..queued_row(self.core, r, &new_run_id(), Trigger::Schedule, Some(slot), now)
        };
        // Nothing done for the slot (not made up by a later one): told if the routine wants it —
        // by the rule every final row's outbox entries are written with.
        let facts = crate::engine::outbox::owed::Final { status, reason, webhooks: &r.webhooks, notify_missed: r.notify_missed, pings: false, push_pending: false };
        let owed = crate::engine::outbox::owed::owed(&facts, &self.core.settings());
        if !owed.is_empty() {
            self.owes.insert(row.id.clone(), owed);
        }
        self.claims.push(row);
    }
}

/// A slot as the routine's owner reads it: "2026-11-30 09:00 CET".
fn local(r: &Routine, t: DateTime<Utc>) -> String {
    t.with_timezone(&r.timezone).format("%Y-%m-%d %H:%M %Z").to_string()
}

/// Watch the routine folders; each change sends a nudge (the loop debounces and reloads). A
/// folder that does not exist yet is not watched (a scheduler pass still reads it within 30 s).
fn watch_routines(dirs: &[std::path::PathBuf], tx: tokio::sync::mpsc::Sender<()>) -> Option<notify::RecommendedWatcher> {
    let dirs: Vec<std::path::PathBuf> = dirs.iter().filter(|d| d.is_dir()).cloned().collect();
    crate::engine::watch::watch(&dirs, "routine files; changes need a restart", routine::is_routine_path, move |_| {
        let _ = tx.try_send(());
    })
}

/// `nightshift.toml`: the file itself while it exists, its folder until it does. Not the folder
/// always: it holds the database, and every write to its journal would wake the watch (dozens per
/// run). The loop watches again after each change — an editor that saves by renaming a new file
/// over the old one leaves a watch on a file that is gone.
fn watch_settings(file: &std::path::Path, tx: tokio::sync::mpsc::Sender<()>) -> Option<notify::RecommendedWatcher> {
    let name = file.file_name()?.to_owned();
    let target = if file.is_file() { file } else { file.parent()? };
    crate::engine::watch::watch(&[target.to_path_buf()], "nightshift.toml; changes need a restart", move |p| p.file_name() == Some(name.as_os_str()), move |_| {
        let _ = tx.try_send(());
    })
}
