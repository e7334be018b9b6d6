//! A run's final row: built from how it ended, the verdict and what closing its files gave, with
//! what it owes the user (its outbox entries, by the rule a missed or skipped slot's row is written
//! with too), and written once in one transaction. A database hiccup (locked, disk full) must not
//! lose the run: the write is retried; if it still fails, whoever waits is told why in words and
//! the row is offered again in the background (the row stays open; if this process ends first,
//! recovery settles it from the run's files — its exit code is kept there).

use super::closing::Closed;
use super::live::{Ending, LiveRun};
use crate::agents::Outcome;
use crate::engine::followed::Following;
use crate::engine::problems::About;
use crate::engine::state::Core;
use crate::run::{Attempt, Channel, RunRecord, RunStatus};
use crate::store::FinalRow;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Duration;

/// How a run ended, everything the final row needs. Built by the run's driver (or recovery,
/// or cancel) — nothing is read back from the row.
pub(crate) struct RunEnd {
    pub ending: Ending,
    /// The classification, when the driver already made it (failover decisions need it).
    pub outcome: Option<Outcome>,
    /// Earlier tries on other accounts (failover), oldest first.
    pub attempts: Vec<Attempt>,
    /// The account of the last try (or the one that blocked it).
    pub account: Option<String>,
    /// When the process ended, if not now (a run settled long after it ended).
    pub finished_at: Option<DateTime<Utc>>,
    /// Only a run still waiting may end this way (cancel while queued: a run that a dispatcher
    /// started meanwhile is cancelled as a running run instead).
    pub only_if_queued: bool,
    /// The agent session of an earlier try that the last one continued.
    pub resumed: Option<String>,
}

impl RunEnd {
    pub fn new(ending: Ending) -> RunEnd {
        RunEnd { ending, outcome: None, attempts: Vec::new(), account: None, finished_at: None, only_if_queued: false, resumed: None }
    }
}

/// What settling did.
pub(crate) struct Settled {
    /// The row as it stands now (`None` when it could not be written or read: settling goes on
    /// trying in the background, and whoever waits has been told why).
    pub record: Option<RunRecord>,
    /// This call made the row final — not another engine first, nor (for a cancel while queued)
    /// a start that won the race.
    pub made_final: bool,
}

/// Write the run's final row and its outbox entries, once; the row as it stands afterwards (also
/// when another engine finalized it first). `following` is kept by the background retry while the
/// row cannot be written (the run stays followed, the machine awake).
pub(crate) async fn record(core: &Arc<Core>, run: &LiveRun, ended: RunEnd, outcome: Outcome, closed: Closed, following: &mut Option<Following>) -> Settled {
    let settlement = row(core.clock.now(), run, ended, outcome, closed);
    let owes = crate::engine::outbox::owed::Final {
        status: settlement.status,
        reason: settlement.reason,
        webhooks: &run.webhooks,
        notify_missed: false,
        pings: run.pings,
        push_pending: settlement.changes.as_ref().and_then(|c| c.push.as_ref()).is_some_and(|p| p.state == crate::run::PushState::Pending),
    };
    let outbox: Vec<Channel> = crate::engine::outbox::owed::owed(&owes, &core.settings());
    let mut last_error = None;
    for attempt in 0..5u32 {
        match write_final(core, &run.id, &settlement, &outbox).await {
            Ok(made_final) => {
                return match core.store.get_run(&run.id) {
                    Ok(record) => Settled { record: Some(record), made_final },
                    Err(e) => {
                        tracing::error!(run = %run.id, error = %e, "run record unreadable after settling");
                        Settled { record: None, made_final }
                    }
                };
            }
            Err(e) => {
                tracing::warn!(run = %run.id, attempt, error = %e, "could not finalize run record; retrying");
                last_error = Some(e);
            }
        }
        tokio::time::sleep(Duration::from_millis(200 * 2u64.pow(attempt))).await;
    }
    let err = unrecorded_error(core, run, &settlement, last_error);
    core.problems.tell(About::Unrecorded(run.id.clone()), err.message.clone());
    // Said once: to whoever waits (the CLI prints it), else in the log.
    if core.runs.fail(&run.id, &err) {
        tracing::warn!(run = %run.id, "{}", err.message);
    } else {
        tracing::error!(run = %run.id, "{}", err.message);
    }
    core.emit_state();
    // The run stays followed (the machine awake) until its row is written.
    tokio::spawn(keep_trying(Arc::clone(core), run.id.clone(), settlement, outbox, following.take()));
    Settled { record: None, made_final: false }
}

/// The final row from how the run ended, the verdict and what closing its files gave: the last
/// attempt appended, the end time the process's own. Pure: nothing is read or written here.
fn row(now: DateTime<Utc>, run: &LiveRun, ended: RunEnd, outcome: Outcome, closed: Closed) -> FinalRow {
    let RunEnd { ending, mut attempts, account, finished_at, only_if_queued, resumed, .. } = ended;
    // The last try joins the list once there is a list (failover, a retry, a wait) or an account.
    if (account.is_some() || !attempts.is_empty()) && !matches!(ending, Ending::Blocked { .. }) && !only_if_queued {
        attempts.push(Attempt {
            account: account.clone(),
            status: outcome.status(),
            reason: outcome.reason,
            message: outcome.message.clone(),
            resets_at: outcome.resets_at,
            started_at: Some(run.started_at),
            finished_at: Some(finished_at.unwrap_or(now)),
            next_at: None,
            session: outcome.session_id.clone(),
            work: outcome.work,
            resumed,
        });
    }
    // Never before the start, never after now (clocks of different processes disagree a little).
    let finished_at = finished_at.map(|t| t.clamp(run.started_at, now.max(run.started_at))).unwrap_or(now);
    FinalRow {
        status: outcome.status(),
        reason: outcome.reason,
        message: outcome.message.clone(),
        exit_code: closed.exit_code,
        account,
        resets_at: outcome.resets_at,
        attempts,
        finished_at,
        duration_ms: (!closed.never_started).then(|| (finished_at - run.started_at).num_milliseconds().max(0) as u64),
        cost_usd: outcome.cost_usd,
        usage: outcome.usage.clone(),
        session_id: outcome.session_id.clone(),
        report_path: closed.report_path,
        changes: closed.changes,
        asks: super::approval::asks_after(run, &outcome, finished_at),
        denials: outcome.denials,
        only_if_queued,
    }
}

/// One attempt at the final write, off the async workers.
async fn write_final(core: &Arc<Core>, id: &str, settlement: &FinalRow, outbox: &[Channel]) -> crate::error::Result<bool> {
    let (core, id, s, outbox) = (Arc::clone(core), id.to_string(), settlement.clone(), outbox.to_vec());
    tokio::task::spawn_blocking(move || core.store.finalize(&id, &s, &outbox))
        .await
        .unwrap_or_else(|e| Err(crate::error::Error::new(crate::error::ErrorCode::StoreUnavailable, format!("finalizing failed: {e}"))))
}

/// "Run X ended (exit code 1) but could not be recorded: <why>" — one sentence for the user,
/// naming the storage problem and its path when there is one, and where the result is kept.
fn unrecorded_error(core: &Core, run: &LiveRun, s: &FinalRow, err: Option<crate::error::Error>) -> crate::error::Error {
    let mut how = match (s.status, s.exit_code) {
        (RunStatus::Completed | RunStatus::Failed, Some(code)) => format!("ended {} (exit code {code})", s.status),
        (status, _) => format!("ended {status}"),
    };
    if let Some(m) = s.message.as_deref().filter(|_| s.exit_code.is_none()) {
        how = format!("{how} ({m})");
    }
    let why = crate::fsutil::storage_trouble(core.home.data_dir())
        .or_else(|| err.map(|e| e.message))
        .unwrap_or_else(|| "the database could not be written".into());
    // Never started (no process): recovery puts it back in the queue, so it is owed, not over.
    if s.reason == Some(crate::run::Reason::SpawnFailed) && s.exit_code.is_none() {
        return crate::error::Error::new(
            crate::error::ErrorCode::StoreUnavailable,
            format!("run {} of {} could not start: {why}. It stays queued and starts once the database can be written again (by the app, the daemon or the next Nightshift command).", run.id, run.routine),
        );
    }
    crate::error::Error::new(
        crate::error::ErrorCode::StoreUnavailable,
        format!(
            "run {} of {} {how} but could not be recorded: {why}. Nothing is lost: its exit code and output stay in {} and the run is recorded as soon as the database can be written again (by this process, or the next Nightshift command).",
            run.id,
            run.routine,
            run.run_dir.display()
        ),
    )
}

/// Long after the quick retries: keep offering the final row every 10 s while this process
/// lives; once written, the run is announced as any other.
async fn keep_trying(core: Arc<Core>, id: String, settlement: FinalRow, outbox: Vec<Channel>, following: Option<Following>) {
    loop {
        tokio::time::sleep(Duration::from_secs(10)).await;
        match write_final(&core, &id, &settlement, &outbox).await {
            Ok(changed) => {
                core.problems.clear(&About::Unrecorded(id.clone()));
                drop(following);
                if let Ok(record) = core.store.get_run(&id) {
                    if changed {
                        tracing::info!(run = %id, status = %record.status, "run recorded after the database became writable again");
                    }
                    super::announce::settled(&core, &record, changed).await;
                }
                core.emit_state();
                return;
            }
            Err(e) => tracing::debug!(run = %id, error = %e, "the run still cannot be recorded"),
        }
    }
}
