//! Crash recovery: runs left `running` (or `queued`) by an engine that died.
//!
//! Each such row is examined. If its process is still alive (same pid *and* same start time — a
//! reused pid is not our run) it is re-adopted: watched until it exits, then settled from its log
//! and the exit code its wrapper wrote. Otherwise it is settled now from what its files show: the
//! agent's own final event when present, else `failed`/`interrupted` — finished at the time its
//! files say the process ended, not when recovery noticed. Rows whose supervising engine is still
//! alive (another process: the tray, a daemon, a `run --wait`) are left alone.
//!
//! Queued work is recovered too: a queued row whose engine is gone is adopted by a long-running
//! engine (and started by its queue); a row claimed by an engine that died before spawning goes
//! back to the queue.

use super::finalize::{self, RunEnd};
use super::remote_run::{self, RemoteProc};
use super::live::{Ending, LiveRun};
use super::supervise::{supervise, Proc};
use crate::engine::state::Core;
use crate::error::Result;
use crate::runner::process;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Settle runs whose process is gone; leave live orphans for a long-running engine.
    /// (Short-lived CLI commands use this.)
    SettleFinished,
    /// Also re-adopt live orphans and supervise them to the end (daemon, tray app).
    Adopt,
}

const ADOPT_POLL: Duration = Duration::from_millis(500);

/// What recovery found for one open run whose engine is gone.
enum Found {
    /// Its process still runs: watch it to the end.
    Alive { live: LiveRun, pid: u32, start: Option<String>, account: Option<String> },
    /// Its process is gone: settle it from its files (and remove what it left on its host).
    Gone { live: LiveRun, ending: Ending, account: Option<String>, leftover: Option<RemoteProc> },
    /// It runs (or ran) on a host: re-attach, bring the rest of its output home, settle it.
    Remote { live: LiveRun, proc: RemoteProc, account: Option<String> },
    /// Claimed but never spawned: back in the queue.
    Requeued(String),
}

/// Settle a run another engine started, and let its account's health hear how it ended, as its
/// own engine would have (a revoked login, a limit, a sign-in that worked): without it, the next
/// run on a revoked account was started again (found by the simulation).
async fn settle_adopted(core: &Arc<Core>, live: &LiveRun, ended: RunEnd, following: Option<crate::engine::followed::Following>) {
    let account = ended.account.clone();
    let settled = finalize::settle(core, live, ended, following).await;
    if let (Some(account), Some(record), true) = (account, settled.record, settled.made_final) {
        let outcome = crate::agents::Outcome { status: Some(record.status), reason: record.reason, message: record.message.clone(), resets_at: record.resets_at, ..Default::default() };
        let core = Arc::clone(core);
        let _ = tokio::task::spawn_blocking(move || crate::engine::accounts::record_outcome(&core, &account, &record.id, &outcome)).await;
    }
}

pub(crate) async fn recover(core: &Arc<Core>, mode: RecoveryMode) -> Result<Vec<String>> {
    // Store reads, routine files and /proc: all off the async workers.
    let (found, adopted_queued) = {
        let core = Arc::clone(core);
        tokio::task::spawn_blocking(move || -> Result<_> { Ok((survey(&core, mode)?, recover_queued(&core, mode)?)) })
            .await
            .map_err(|e| crate::error::Error::new(crate::error::ErrorCode::StoreUnavailable, e.to_string()))??
    };
    let mut handled = Vec::new();
    for f in found {
        match f {
            Found::Requeued(id) => handled.push(id),
            Found::Alive { live, pid, start, account } => {
                tracing::info!(run = %live.id, pid, "re-adopting a run left by a previous engine");
                let following = core.follow(&live.id);
                handled.push(live.id.clone());
                let core = Arc::clone(core);
                tokio::spawn(async move {
                    let ending = watch_orphan(&core, &live, pid, start, following.signal()).await;
                    let mut ended = RunEnd::new(ending);
                    ended.account = account;
                    ended.finished_at = Some(process::ended_at(&live.run_dir).unwrap_or_else(|| core.clock.now()));
                    settle_adopted(&core, &live, ended, Some(following)).await;
                });
            }
            Found::Remote { live, proc, account } => {
                tracing::info!(run = %live.id, host = %proc.host(), "re-attaching to a run on its host left by a previous engine");
                let following = core.follow(&live.id);
                handled.push(live.id.clone());
                let core = Arc::clone(core);
                tokio::spawn(async move {
                    let mut running = Proc::Remote(proc.clone());
                    let ending = supervise(&core, &live, &mut running, following.signal()).await;
                    if remote_run::keep_locally(&live.run_dir, &ending) {
                        remote_run::forget(&live.id, &proc).await;
                    }
                    let mut ended = RunEnd::new(ending);
                    ended.account = account;
                    settle_adopted(&core, &live, ended, Some(following)).await;
                });
            }
            Found::Gone { live, ending, account, leftover } => {
                tracing::info!(run = %live.id, ?ending, "settling a run left by a previous engine");
                let mut ended = RunEnd::new(ending);
                ended.account = account;
                // The run ended when its process did, not now (it may have been hours ago).
                ended.finished_at = process::ended_at(&live.run_dir);
                // Its process is gone and nothing follows it: settled from its files.
                settle_adopted(core, &live, ended, None).await;
                handled.push(live.id.clone());
                if let Some(proc) = leftover {
                    // Over SSH, in the background: recovery never waits on a host.
                    let id = live.id.clone();
                    tokio::spawn(async move { remote_run::forget(&id, &proc).await });
                }
            }
        }
    }
    if mode == RecoveryMode::Adopt {
        super::queue::kick(core);
    }
    handled.extend(adopted_queued);
    Ok(handled)
}

/// Look at every running row whose engine is gone and decide what it needs (blocking).
fn survey(core: &Arc<Core>, mode: RecoveryMode) -> Result<Vec<Found>> {
    let me = (core.identity.0, core.identity.1.as_str());
    let mut set = None;
    let mut found = Vec::new();
    for open in core.store.open_runs()? {
        if core.owner_alive(open.owner_pid, open.owner_start.as_deref()) {
            continue;
        }
        let from = (open.owner_pid, open.owner_start.as_deref());
        if let Some(remote) = open.remote.as_deref() {
            let set = set.get_or_insert_with(|| core.routines());
            let live = LiveRun::for_record(&open.record, set, core.clock.now());
            let account = open.record.account.clone();
            // Its end was brought home before its engine died: settle from that.
            if process::recorded_exit_code(&live.run_dir).is_some() || process::timed_out_by_wrapper(&live.run_dir) {
                // (Its files there may still be on the host: its engine died before removing them.)
                let leftover = (mode == RecoveryMode::Adopt).then(|| remote_run::recorded(core, open.record.host.as_deref(), remote).ok()).flatten();
                found.push(Found::Gone { ending: ending_from_files(&live.run_dir), live, account, leftover });
                continue;
            }
            // Reaching the host takes a long-running engine (a short command leaves it be).
            if mode == RecoveryMode::Adopt {
                core.store.set_owner(&open.record.id, me)?;
                match remote_run::recorded(core, open.record.host.as_deref(), remote) {
                    Ok(proc) => found.push(Found::Remote { live, proc, account }),
                    Err(why) => found.push(Found::Gone { live, ending: Ending::Unreachable(why), account, leftover: None }),
                }
            }
            continue;
        }
        let Some(pid) = open.pid else {
            // No process on record — but its process may have begun and its pid not been written
            // (a full disk refuses that write while the run fills it). The run directory tells:
            // the exit-code file is made just before the spawn, the wrapper writes the code at
            // its end and marks the run `unwatched` as soon as its engine is gone. A run that
            // ended is settled from its files, never run twice; one still going is left until it
            // ends (or its limit is long past); a file with neither, a while after it was made,
            // means the spawn never happened, and the run goes back to the queue as below.
            let set = set.get_or_insert_with(|| core.routines());
            let live = LiveRun::for_record(&open.record, set, core.clock.now());
            let dir = crate::run_dir::RunDir::at(&live.run_dir);
            if let Ok(made) = std::fs::metadata(dir.exit_code()).and_then(|m| m.modified()) {
                let age = core.clock.now() - chrono::DateTime::<chrono::Utc>::from(made);
                let ended = process::recorded_exit_code(&live.run_dir).is_some() || process::timed_out_by_wrapper(&live.run_dir);
                let going = dir.unwatched().exists();
                let long_past = age > chrono::Duration::from_std(live.timeout).unwrap_or_default() + chrono::Duration::minutes(5);
                if ended || (going && long_past) {
                    let account = open.record.account.clone();
                    found.push(Found::Gone { ending: ending_from_files(&live.run_dir), live, account, leftover: None });
                    continue;
                }
                if going || age < chrono::Duration::seconds(10) {
                    continue;
                }
            }
            // Claimed, but its engine died before spawning anything: nothing was done, so the
            // run goes back to the queue instead of being lost.
            let why = "queued again: the engine that started it stopped before its process began";
            let note = match mode {
                RecoveryMode::Adopt => why.to_string(),
                RecoveryMode::SettleFinished => super::queue::handed_off_note(Some(why)),
            };
            if core.store.requeue_unstarted(&open.record.id, from, me, &note)? {
                tracing::info!(run = %open.record.id, "a run claimed by an engine that is gone goes back to the queue");
                found.push(Found::Requeued(open.record.id.clone()));
            }
            continue;
        };
        let set = set.get_or_insert_with(|| core.routines());
        let live = LiveRun::for_record(&open.record, set, core.clock.now());
        let account = open.record.account.clone();
        if process::same_process_alive(pid, open.pid_start.as_deref()) {
            if mode == RecoveryMode::Adopt {
                core.store.set_owner(&open.record.id, me)?;
                found.push(Found::Alive { live, pid, start: open.pid_start.clone(), account });
            }
            continue;
        }
        let ending = ending_from_files(&live.run_dir);
        found.push(Found::Gone { live, ending, account, leftover: None });
    }
    Ok(found)
}

/// Queued runs whose owner is gone: a long-running engine adopts them (the queue then starts
/// them in order); a short-lived command only says who will.
fn recover_queued(core: &Core, mode: RecoveryMode) -> Result<Vec<String>> {
    let me = (core.identity.0, core.identity.1.as_str());
    let mut adopted = Vec::new();
    for q in core.store.queued_rows()? {
        if core.owner_alive(q.owner_pid, q.owner_start.as_deref()) {
            continue;
        }
        match mode {
            RecoveryMode::Adopt => {
                if core.store.adopt_queued(&q.id, (q.owner_pid, q.owner_start.as_deref()), me)? {
                    tracing::info!(run = %q.id, routine = %q.routine, "adopting a queued run whose engine is gone");
                    adopted.push(q.id);
                }
            }
            RecoveryMode::SettleFinished => {
                let note = super::queue::handed_off_note(q.message.as_deref());
                if q.message.as_deref() != Some(note.as_str()) {
                    core.store.set_queued_message(&q.id, &note)?;
                }
            }
        }
    }
    Ok(adopted)
}

/// How a run whose process is gone ended, from its files alone.
fn ending_from_files(run_dir: &std::path::Path) -> Ending {
    if process::timed_out_by_wrapper(run_dir) {
        return Ending::TimedOut;
    }
    match process::recorded_exit_code(run_dir) {
        Some(code) => Ending::Exited(Some(code)),
        None => Ending::Lost,
    }
}

/// Watch a process we are not the parent of until it exits, still enforcing the routine's
/// timeout (measured from the run's start) and cancel.
async fn watch_orphan(core: &Arc<Core>, run: &LiveRun, pid: u32, start: Option<String>, cancel: Arc<Notify>) -> Ending {
    let elapsed = (core.clock.now() - run.started_at).to_std().unwrap_or_default();
    let deadline = tokio::time::Instant::now() + run.timeout.saturating_sub(elapsed);
    loop {
        if !process::same_process_alive(pid, start.as_deref()) {
            return ending_from_files(&run.run_dir);
        }
        tokio::select! {
            _ = tokio::time::sleep(ADOPT_POLL) => {}
            _ = tokio::time::sleep_until(deadline) => {
                process::terminate_group(pid, core.settings().kill_grace()).await;
                return Ending::TimedOut;
            }
            _ = cancel.notified() => {
                process::terminate_group(pid, core.settings().kill_grace()).await;
                return Ending::Cancelled;
            }
        }
    }
}
