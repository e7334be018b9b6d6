//! The queue: every run is submitted as a `queued` row, and dispatch passes start what fits.
//!
//! The row *is* the queue entry, so queued work survives its process: a row whose owner died is
//! adopted by the next long-running engine (tray app or daemon, see `recovery`). A pass reads
//! the head of each class of the home's queue (the `runs_queue` index, never all of it) and the
//! running runs, asks [`lanes::decide`](super::lanes::decide) and claims its own starts in one
//! transaction; each claimed run gets a [`driver`](super::driver). This is the one place queued
//! runs are started.
//!
//! Wake-ups: a pass runs when this engine submits or settles a run, when another process touches
//! the home's wake file (it settled or queued something), and once a second while this engine
//! has runs waiting (a lane can free up in a process that cannot tell us).

use crate::engine::signal::Wake;
use super::lanes::{self, Busy, Waiting};
use super::live::{Ending, LiveRun};
use super::driver;
use super::finalize;
use crate::engine::signal;
use crate::engine::state::Core;
use crate::error::{Error, ErrorCode, Result};
use crate::events::EngineEvent;
use crate::routine::{AccountChoice, Routine, RoutineSet};
use crate::run::{new_run_id, RunAsks, RunRecord, RunStatus, Trigger};
use crate::store::{Claims, NewRun};
use chrono::{DateTime, Utc};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// How often an engine with waiting runs looks again without being woken.
const WAITING_POLL: Duration = Duration::from_secs(1);
/// How long a wait for a run's end trusts this engine to settle it before it also watches for
/// another process doing so (and reads the row once).
const FIRST_LOOK: Duration = Duration::from_secs(1);
/// How long a wait for a run's end goes without looking at its row when nothing woke it (only
/// where the wake file cannot be watched does that matter).
const SAFETY_LOOK: Duration = Duration::from_secs(30);
/// The longest a dispatcher sleeps toward a waiting run's due time before it looks at the wall
/// clock again.
const DUE_RECHECK: Duration = Duration::from_secs(30);

/// The message on a queued run that no running engine will start.
pub const HANDED_OFF: &str = "starts when the Nightshift app or `nightshiftctl daemon` runs";

/// A submitted run. Its record already exists (queued or running); `wait` gives the final one.
pub struct RunHandle {
    pub id: String,
    pub routine: String,
    done: oneshot::Receiver<Result<RunRecord>>,
    core: Arc<Core>,
}

impl RunHandle {
    /// Wait until the run is final (and, when this engine settled it, its settle hooks ran).
    /// A run finalized by another process (cancelled from the window, say) ends the wait too: its
    /// settling touched the home's wake file, which wakes this wait to read the row. The store is
    /// not polled: its row is read once after [`FIRST_LOOK`] — most runs are settled here before
    /// that, and their wait costs no watch at all — and then whenever the wake file is touched (a
    /// slow look every [`SAFETY_LOOK`] only in case the file cannot be watched).
    pub async fn wait(self) -> Result<RunRecord> {
        let RunHandle { id, mut done, core, .. } = self;
        let woken = Arc::new(tokio::sync::Notify::new());
        let mut watch = None;
        loop {
            tokio::select! {
                rec = &mut done => {
                    return rec.map_err(|_| Error::new(ErrorCode::StoreUnavailable, format!("run {id} could not be settled; see the log"))).and_then(|r| r);
                }
                _ = woken.notified(), if watch.is_some() => {}
                _ = tokio::time::sleep(if watch.is_some() { SAFETY_LOOK } else { FIRST_LOOK }) => {}
            }
            // Watched before the row is read: a settle right after the read still wakes the wait.
            if watch.is_none() {
                let woken = Arc::clone(&woken);
                watch = Some(signal::watch_wake_file(&core, Vec::new(), move || woken.notify_one()));
            }
            let (core2, id2) = (Arc::clone(&core), id.clone());
            if let Ok(Ok(rec)) = tokio::task::spawn_blocking(move || core2.store.get_run(&id2)).await {
                // Final elsewhere, and no driver of ours is about to announce it.
                if rec.status.is_final() && !core.runs.is_followed(&id) {
                    return Ok(rec);
                }
            }
        }
    }
}

/// Submit a run: its queued row (unless `claimed`: a slot row the scheduler already inserted),
/// then a dispatch pass. Returns once the row exists and this pass has started it if it fits.
/// `asks`: what a person asked of a manual run (wait out a rate limit, ignore a spent budget).
pub(crate) async fn submit(core: &Arc<Core>, routine: &Routine, trigger: Trigger, scheduled_for: Option<DateTime<Utc>>, claimed: Option<String>, asks: RunAsks) -> Result<RunHandle> {
    let id = match claimed {
        Some(id) => id,
        None => {
            let id = new_run_id();
            let row = queued_row(core, routine, &id, trigger, scheduled_for, core.clock.now());
            let core2 = Arc::clone(core);
            tokio::task::spawn_blocking(move || {
                core2.store.insert_run(&row)?;
                if asks != RunAsks::default() {
                    core2.store.set_asks(&row.id, asks)?;
                }
                Ok::<_, Error>(())
            })
            .await
            .map_err(|e| Error::new(ErrorCode::StoreUnavailable, e.to_string()))??;
            id
        }
    };
    Ok(queued(core, routine, id).await)
}

/// A new queued row `id` of `routine`: announced, dispatched, and followed by its handle.
async fn queued(core: &Arc<Core>, routine: &Routine, id: String) -> RunHandle {
    let done = core.runs.wait_for(&id);
    if let Ok(run) = core.store.get_run(&id) {
        core.emit(EngineEvent::RunQueued { run: Box::new(run) });
    }
    dispatch(core).await;
    // Long-running engines in other processes look at once (they may take over what waits).
    signal::wake(core);
    RunHandle { id, routine: routine.name.clone(), done, core: Arc::clone(core) }
}

/// The rerun of `blocked` its approved asks after the run ask for (trigger `approval`): claimed
/// with its row in one transaction, so two processes that both saw the answer start one rerun;
/// `None` when it was claimed already.
pub(crate) async fn submit_rerun(core: &Arc<Core>, routine: &Routine, blocked: &str) -> Result<Option<RunHandle>> {
    let id = new_run_id();
    let row = queued_row(core, routine, &id, Trigger::Approval, None, core.clock.now());
    let (core2, blocked) = (Arc::clone(core), blocked.to_string());
    let claimed = tokio::task::spawn_blocking(move || core2.store.insert_rerun(&blocked, &row))
        .await
        .map_err(|e| Error::new(ErrorCode::StoreUnavailable, e.to_string()))??;
    Ok(match claimed {
        true => Some(queued(core, routine, id).await),
        false => None,
    })
}

/// Run now: a run of the routine that waits for a time (a retry's backoff, a limit's reset)
/// starts as soon as a lane is free — one run, not a second beside it; otherwise a new run.
pub(crate) async fn run_now(core: &Arc<Core>, routine: &Routine, trigger: Trigger, asks: RunAsks) -> Result<RunHandle> {
    let (core2, name) = (Arc::clone(core), routine.name.clone());
    let waiting = tokio::task::spawn_blocking(move || -> Result<Option<String>> {
        match core2.store.waiting_run_of(&name)? {
            Some((id, _)) if core2.store.make_due(&id)? => Ok(Some(id)),
            _ => Ok(None),
        }
    })
    .await
    .map_err(|e| Error::new(ErrorCode::StoreUnavailable, e.to_string()))??;
    match waiting {
        Some(id) => {
            tracing::info!(run = %id, routine = %routine.name, "run now: the waiting run starts now");
            submit(core, routine, trigger, None, Some(id), RunAsks::default()).await
        }
        None => submit(core, routine, trigger, None, None, asks).await,
    }
}

/// `overlap: replace`: stop running run `id` for the new one, `why` its final message. Ours to
/// stop when this engine follows it (or has just claimed it); a run another process follows ends
/// there, and the new run starts when it has (one run per routine).
pub(crate) async fn replace(core: &Arc<Core>, id: &str, why: String) {
    core.runs.note_cancel(id, why);
    if !stop(core, id, false).await {
        core.runs.forget_note(id);
        tracing::warn!(run = %id, "overlap: replace — the running run is followed by another process; the new run waits for it to end");
    }
}

/// The row of a run that waits for a lane (history shows it at once).
pub(crate) fn queued_row(core: &Core, routine: &Routine, id: &str, trigger: Trigger, scheduled_for: Option<DateTime<Utc>>, now: DateTime<Utc>) -> NewRun {
    NewRun {
        id: id.to_string(),
        routine: routine.name.clone(),
        trigger,
        agent: routine.agent(),
        status: RunStatus::Queued,
        reason: None,
        message: None,
        scheduled_for,
        started_at: None,
        finished_at: None,
        account: match &routine.account {
            AccountChoice::Pinned(a) => Some(a.clone()),
            _ => None,
        },
        run_dir: core.home.run_dir(&routine.name, id).display().to_string(),
        owner: Some(core.identity.clone()),
        sort_at: scheduled_for.unwrap_or(now),
    }
}

/// The accounts a run of `routine` could use ([`Routine::candidate_accounts`]) but those whose
/// sign-in was refused (revoked: a run would only be blocked on them, so it waits for a lane of
/// another one — none left, it starts and its preflight says why), the one with the most headroom
/// in its tightest usage window first (ties keep the listed order), so the lanes set that one
/// aside for it; empty when it uses none. `room` is [`account_room`]'s, read before the dispatch
/// transaction (which holds the store).
pub(crate) fn candidate_accounts(core: &Core, routine: &Routine, room: &AccountRoom) -> Vec<String> {
    let configured: Vec<String> = core.accounts().into_iter().filter(|a| Some(a.agent) == routine.agent().cli()).map(|a| a.email).collect();
    let mut order = routine.candidate_accounts(&configured, None).unwrap_or_default();
    order.retain(|a| !room.refused.contains(a));
    order.sort_by(|a, b| room.headroom.get(b).unwrap_or(&100.0).total_cmp(room.headroom.get(a).unwrap_or(&100.0)));
    order
}

/// Every configured account as the lanes weigh it: its headroom ([`crate::engine::accounts::headroom`])
/// as its windows stand now, and whether its sign-in was refused (its last verdict blocks runs).
pub(crate) struct AccountRoom {
    headroom: std::collections::HashMap<String, f64>,
    refused: std::collections::HashSet<String>,
}

pub(crate) fn account_room(core: &Core) -> AccountRoom {
    let accounts = core.accounts();
    let refused = accounts.iter().filter(|a| core.store.account_health(&a.email).ok().flatten().is_some_and(|h| h.verdict.blocks())).map(|a| a.email.clone()).collect();
    AccountRoom { headroom: accounts.into_iter().map(|a| (a.email.clone(), crate::engine::accounts::headroom(&core.windows(&a.email)))).collect(), refused }
}

/// Make sure this engine's dispatcher runs a pass soon (starting it on first use).
pub(crate) fn kick(core: &Arc<Core>) {
    if !core.dispatcher_started.swap(true, Ordering::SeqCst) {
        let core = Arc::clone(core);
        tokio::spawn(async move {
            loop {
                let (waiting, next_due) = pass(&core).await;
                // A run waiting for a time (a retry, a limit's reset) is started at that time:
                // sleep until then, at most `DUE_RECHECK` at once (a machine that slept wakes
                // with its monotonic timers behind the wall clock).
                let until_due = next_due.map(|t| (t - core.clock.now()).to_std().unwrap_or_default().min(DUE_RECHECK));
                let sleep = match (waiting > 0, until_due) {
                    (true, Some(d)) => Some(d.min(WAITING_POLL)),
                    (true, None) => Some(WAITING_POLL),
                    (false, d) => d,
                };
                match sleep {
                    Some(d) => {
                        tokio::select! {
                            _ = core.wakes.of(Wake::Dispatcher).notified() => {}
                            _ = tokio::time::sleep(d) => {}
                        }
                    }
                    None => core.wakes.of(Wake::Dispatcher).notified().await,
                }
            }
        });
    }
    core.wakes.kick(Wake::Dispatcher);
}

/// Run one dispatch pass now (and make sure the dispatcher keeps watching what still waits).
pub(crate) async fn dispatch(core: &Arc<Core>) {
    pass(core).await;
    kick(core);
}

/// A pass could not write (disk full, read-only, locked for long): said once per cause, not
/// once a second; the runs stay queued. On a full or read-only disk whoever waits here for a
/// queued run is told now, in words — the run starts once space is freed (here, or by the app,
/// the daemon or the next command, which adopt it).
fn dispatch_failed(core: &Arc<Core>, e: &crate::error::Error) {
    let trouble = crate::fsutil::storage_trouble(core.home.data_dir());
    let said = format!("queued runs cannot start: {}", trouble.as_deref().unwrap_or(&e.message));
    let repeated = core.problems.tell(crate::engine::problems::About::Dispatch, said.clone()).as_ref() == Some(&said);
    if !repeated {
        tracing::error!(error = %e, "dispatch pass failed; trying again shortly");
        core.emit_state();
    }
    let Some(trouble) = trouble else { return };
    for id in core.runs.waited_for_in_queue() {
        let err = Error::new(
            ErrorCode::StoreUnavailable,
            format!("run {id} could not start: {trouble}. It stays queued and starts once space is freed (by the app, the daemon or the next Nightshift command)."),
        );
        core.runs.fail(&id, &err);
    }
}

/// One pass; returns how many of this engine's runs still wait for a lane, and when the first
/// run that waits for a time is due.
async fn pass(core: &Arc<Core>) -> (usize, Option<DateTime<Utc>>) {
    if core.handed_off.load(Ordering::SeqCst) {
        return (0, None); // this process is about to exit; what waits is someone else's to start
    }
    let core2 = Arc::clone(core);
    let result = tokio::task::spawn_blocking(move || claim(&core2)).await;
    let Claimed { starts: claimed, set, own_waiting: waiting, next_due, overflow, overdue } = match result {
        Ok(Ok(r)) => {
            if core.problems.clear(&crate::engine::problems::About::Dispatch) {
                core.emit_state();
            }
            r
        }
        Ok(Err(e)) => {
            dispatch_failed(core, &e);
            return (1, None);
        }
        // Cancelled: the runtime is shutting down (a CLI exiting), nothing went wrong.
        Err(e) if e.is_cancelled() => return (1, None),
        Err(e) => {
            tracing::error!(error = %e, "dispatch pass panicked");
            return (1, None);
        }
    };
    // A pass that found nothing due changed nothing the faces show.
    let claimed_any = !claimed.is_empty() || waiting > 0 || !overflow.is_empty() || !overdue.is_empty();
    for (id, why) in overflow {
        skip_queued(core, &id, why).await;
    }
    for (id, why) in overdue {
        supersede_waiting(core, &id, &why).await;
    }
    for (id, account) in claimed {
        let Ok(rec) = core.store.get_run(&id) else { continue };
        // Queued after the names were read: look it up before calling it gone.
        let set = match set.get(&rec.routine) {
            Some(_) => Arc::clone(&set),
            None => core.catalog.by_name(&core.home, &core.settings(), &core.store, || Ok(vec![rec.routine.clone()])).map(|f| f.set).unwrap_or_else(|_| Arc::clone(&set)),
        };
        match set.get(&rec.routine) {
            Some(routine) => driver::start(core, rec, routine.clone(), account).await,
            None => {
                // The file went away (or broke) while the run waited: say so, finally.
                let live = LiveRun::for_record(&rec, &set, core.clock.now());
                let message = format!("the routine {} no longer exists or is invalid; the queued run was not started", rec.routine);
                let core = Arc::clone(core);
                tokio::spawn(async move {
                    finalize::settle(&core, &live, finalize::RunEnd::new(Ending::SpawnFailed(message)), None).await;
                });
            }
        }
    }
    if !claimed_any {
        return (waiting, next_due);
    }
    core.emit_state();
    (waiting, next_due)
}

/// What a pass claimed.
#[derive(Default)]
struct Claimed {
    /// (run id, account) of each run to start.
    starts: Vec<(String, Option<String>)>,
    /// The routines it decided with.
    set: Arc<RoutineSet>,
    /// How many of this engine's runs still wait for a lane.
    own_waiting: usize,
    /// When the first run waiting for a time is due.
    next_due: Option<DateTime<Utc>>,
    /// (run id, why) of runs past their agent's `max_queued`, to settle `skipped · queue_full`.
    overflow: Vec<(String, String)>,
    /// (run id, why) of waiting runs whose routine's next slot came after their try was due and
    /// before it could start (the machine was off or asleep): that slot does the work instead.
    overdue: Vec<(String, String)>,
}
/// An owner (pid, start time) and whether it is alive, as asked once per pass.
type OwnerSeen = ((Option<u32>, Option<String>), bool);

/// The blocking part of a pass: decide and claim in one transaction.
fn claim(core: &Core) -> Result<Claimed> {
    let (due, next_due) = core.store.queue_due(core.clock.now())?;
    if due == 0 {
        return Ok(Claimed { next_due, ..Claimed::default() });
    }
    // Only the routines that have queued or running runs (a one-shot CLI parses those files, not
    // all): what waits, and what the running runs hold (a worktree each).
    let settings = core.settings();
    let set = core.catalog.by_name(&core.home, &settings, &core.store, || core.store.open_routine_names())?.set;
    let worktree = |routine: &str| set.get(routine).is_some_and(|r| matches!(r.workspace, crate::routine::Workspace::Worktree { .. }));
    let me = (core.identity.0, core.identity.1.as_str());
    let limits = lanes::Limits {
        max_parallel: settings.max_parallel,
        memory: (settings.min_free_memory_mb > 0).then(crate::fsutil::available_memory_mb).flatten().map(|mb| (mb, settings.min_free_memory_mb)),
        max_running: settings.agents.iter().filter_map(|(agent, a)| Some((*agent, a.max_running?))).collect(),
        max_worktrees: Some(settings.max_worktrees as usize),
        max_queued: settings.agents.iter().filter_map(|(agent, a)| Some((*agent, a.max_queued?))).collect(),
    };
    let mut own_waiting = 0;
    let mut overflow = Vec::new();
    let mut overdue = Vec::new();
    let now = core.clock.now();
    let mut live_owner: Vec<OwnerSeen> = Vec::new();
    let room = account_room(core);
    let claimed = core.store.dispatch(me, now, |queued, running| {
        // Rows of owners that are gone do not hold lanes until an engine adopts them.
        let mut alive = |pid: Option<u32>, start: &Option<String>| -> bool {
            let key = (pid, start.clone());
            if let Some((_, a)) = live_owner.iter().find(|(k, _)| *k == key) {
                return *a;
            }
            let a = core.owner_alive(pid, start.as_deref());
            live_owner.push((key, a));
            a
        };
        let mut eligible: Vec<&crate::store::QueuedRow> = Vec::new();
        for q in queued.iter().filter(|q| alive(q.owner_pid, &q.owner_start)) {
            match overdue_by(&set, q, now) {
                Some(why) => overdue.push((q.id.clone(), why)),
                None => eligible.push(q),
            }
        }
        let waiting: Vec<Waiting> = eligible
            .iter()
            .map(|q| Waiting {
                id: q.id.clone(),
                routine: q.routine.clone(),
                agent: set.get(&q.routine).map_or(q.agent, |r| r.agent()),
                worktree: worktree(&q.routine),
                manual: q.trigger.by_hand(),
                accounts: set.get(&q.routine).map(|r| candidate_accounts(core, r, &room)).unwrap_or_default(),
            })
            .collect();
        let busy: Vec<Busy> = running.iter().map(|r| Busy { routine: r.routine.clone(), account: r.account.clone(), agent: r.agent, worktree: worktree(&r.routine) }).collect();
        let decision = lanes::decide(&waiting, &busy, &limits);
        overflow = decision.overflow;
        let by_id: std::collections::HashMap<&str, &crate::store::QueuedRow> = eligible.iter().map(|q| (q.id.as_str(), *q)).collect();
        let mine = |q: &crate::store::QueuedRow| q.owner_pid == Some(me.0) && q.owner_start.as_deref() == Some(me.1);
        own_waiting = decision.notes.iter().filter(|(id, _)| by_id.get(id.as_str()).is_some_and(|q| mine(q))).count();
        // Only notes that changed are written; a row this process has handed off keeps saying who
        // starts it (this pass may have begun just before the hand-off). Rows adopted by another
        // engine lose that sentence at its first pass.
        let handed_off = core.handed_off.load(Ordering::SeqCst);
        let notes = decision
            .notes
            .into_iter()
            .filter_map(|(id, note)| {
                let q = by_id.get(id.as_str())?;
                let note = if handed_off && mine(q) { handed_off_note(Some(&note)) } else { note };
                (q.message.as_deref() != Some(note.as_str())).then_some((id, note))
            })
            .collect();
        Claims { starts: decision.starts.into_iter().map(|s| (s.id, s.account)).collect(), notes }
    })?;
    Ok(Claimed { starts: claimed, set, own_waiting, next_due, overflow, overdue })
}

/// Why a run that waited for a time is not tried any more: its routine's next slot after the try
/// was due has come (the rule a retry is planned by — never later than the next slot — kept when
/// the machine was off or asleep at the try's time). `None`: it may start.
fn overdue_by(set: &RoutineSet, q: &crate::store::QueuedRow, now: DateTime<Utc>) -> Option<String> {
    let due = q.due_at?;
    let routine = set.get(&q.routine)?;
    let slot = routine.next_slot(due).filter(|slot| *slot <= now)?;
    let local = |t: DateTime<Utc>| t.with_timezone(&routine.timezone).format("%Y-%m-%d %H:%M %Z").to_string();
    Some(format!("not tried again: its next try was due at {}, and the routine's next slot ({}) came before it could start, which runs instead", local(due), local(slot)))
}

/// Cancel a queued run (of any process on this home). `true` if it was still queued.
pub(crate) async fn cancel_queued(core: &Arc<Core>, id: &str) -> bool {
    let Some((live, rec)) = queued_run(core, id).await else { return false };
    let mut ended = finalize::RunEnd::new(Ending::Cancelled);
    ended.only_if_queued = true;
    // A run that waited for a retry or a limit keeps the tries it made.
    ended.attempts = rec.attempts;
    ended.outcome = Some(crate::agents::Outcome {
        status: Some(RunStatus::Cancelled),
        message: Some("cancelled while queued".into()),
        ..Default::default()
    });
    finalize::settle(core, &live, ended, None).await.made_final
}

/// Settle a run that would wait past its agent's `max_queued` as `skipped · queue_full` (unless
/// another engine started or settled it meanwhile).
async fn skip_queued(core: &Arc<Core>, id: &str, why: String) {
    let Some((live, rec)) = queued_run(core, id).await else { return };
    let mut ended = finalize::RunEnd::new(Ending::Cancelled);
    ended.only_if_queued = true;
    ended.attempts = rec.attempts;
    ended.outcome = Some(crate::agents::Outcome { status: Some(RunStatus::Skipped), reason: Some(crate::run::Reason::QueueFull), message: Some(why.clone()), ..Default::default() });
    tracing::info!(run = %id, routine = %rec.routine, %why, "skipped: its agent's queue is full");
    finalize::settle(core, &live, ended, None).await;
}

/// Stop a run: signal it when this engine follows it (SIGTERM to its group, then SIGKILL after
/// the grace period) or, with `or_queued`, drop it from the queue (whichever process queued it).
/// A run the dispatcher has just claimed is already `running` in the database but registers its
/// driver a moment later: it is ours to signal as soon as it has (a few milliseconds at most).
/// False when there is no such run to stop here.
pub(crate) async fn stop(core: &Arc<Core>, run_id: &str, or_queued: bool) -> bool {
    for _ in 0..100 {
        if core.runs.stop(run_id) {
            return true;
        }
        if or_queued && cancel_queued(core, run_id).await {
            return true;
        }
        // (`open_runs` is every running row.)
        let starting_here = core.store.open_runs().is_ok_and(|open| {
            open.iter().any(|o| o.record.id == run_id && o.owner_pid == Some(core.identity.0) && o.owner_start.as_deref() == Some(core.identity.1.as_str()))
        });
        if !starting_here {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    false
}

/// A queued run's record (of any process on this home), and the run as settling sees it.
async fn queued_run(core: &Arc<Core>, id: &str) -> Option<(LiveRun, RunRecord)> {
    let (core2, id2) = (Arc::clone(core), id.to_string());
    tokio::task::spawn_blocking(move || {
        let rec = core2.store.get_run(&id2).ok().filter(|r| r.status == RunStatus::Queued)?;
        Some((LiveRun::for_record(&rec, &core2.routines(), core2.clock.now()), rec))
    })
    .await
    .ok()
    .flatten()
}

/// Settle a run that waits for a time (a retry, a limit's reset) because a new slot of its
/// routine does the work: its last try's ending stands, with `why` added; its tries stay.
pub(crate) async fn supersede_waiting(core: &Arc<Core>, id: &str, why: &str) {
    let Some((live, rec)) = queued_run(core, id).await.filter(|(_, rec)| rec.due_at.is_some()) else { return };
    let last = rec.attempts.last();
    let mut ended = finalize::RunEnd::new(Ending::Exited(None));
    ended.only_if_queued = true;
    ended.account = last.and_then(|a| a.account.clone());
    ended.outcome = Some(super::retry::ending_of(&rec.attempts, why));
    ended.attempts = rec.attempts.clone();
    tracing::info!(run = %id, routine = %rec.routine, %why, "a waiting run is superseded by a new slot");
    finalize::settle(core, &live, ended, None).await;
}

/// Say, on this engine's runs that still wait, who will start them once this process is gone
/// (`nightshiftctl run` without `--wait` returns while its run waits for a lane).
pub(crate) fn hand_off(core: &Core) -> Result<usize> {
    core.handed_off.store(true, Ordering::SeqCst);
    let me = (Some(core.identity.0), Some(core.identity.1.clone()));
    let mut n = 0;
    for q in core.store.queued_rows()? {
        if (q.owner_pid, q.owner_start.clone()) == me {
            core.store.set_queued_message(&q.id, &handed_off_note(q.message.as_deref()))?;
            n += 1;
        }
    }
    Ok(n)
}

/// A queue note with the hand-off sentence added (once).
pub(crate) fn handed_off_note(note: Option<&str>) -> String {
    match note {
        Some(n) if n.contains(HANDED_OFF) => n.to_string(),
        Some(n) => format!("{n}; {HANDED_OFF}"),
        None => format!("queued: {HANDED_OFF}"),
    }
}
