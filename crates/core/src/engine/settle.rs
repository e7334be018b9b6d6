//! Supervising a live run and settling it — exactly once.

use super::{Core, Engine};
use crate::agents::{AgentDriver, Outcome, RunOutput};
use crate::events::EngineEvent;
use crate::fsutil::write_atomic;
use crate::routine::Routine;
use crate::run::{Attempt, Reason, RunRecord, RunStatus};
use crate::runner::hooks::{run_hooks, HOOK_TIMEOUT};
use crate::runner::process::{self, RunProcess, REPORT_FILE};
use crate::runner::follow::follow;
use crate::store::Settlement;
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, Notify};

/// What the supervisor knows about a run it settles.
#[derive(Clone)]
pub(crate) struct LiveRun {
    pub id: String,
    pub routine: Routine,
    pub driver: &'static dyn AgentDriver,
    pub run_dir: PathBuf,
    pub started_at: DateTime<Utc>,
}

/// How a run's process ended, before classification.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ending {
    /// Exited by itself; the exit code when known.
    Exited(Option<i32>),
    TimedOut,
    Cancelled,
    /// Never started; the message says why.
    SpawnFailed(String),
    /// Its process is gone and left no exit code (the engine and the run were both killed).
    Lost,
    /// Refused before spawning (account preflight).
    Blocked { reason: Reason, message: String, resets_at: Option<DateTime<Utc>> },
}

/// Wait for the process, enforcing timeout and cancel on its whole process group.
pub(crate) async fn supervise(core: &Arc<Core>, run: &LiveRun, mut proc: RunProcess, cancel: Arc<Notify>, timeout: Duration) -> Ending {
    let follower = run.driver.has_progress().then(|| {
        let core = Arc::clone(core);
        let (id, routine) = (run.id.clone(), run.routine.name.clone());
        tokio::spawn(follow(run.run_dir.join(process::STDOUT_LOG), run.driver, move |message| {
            Engine::emit(&core, EngineEvent::RunProgress { run_id: id.clone(), routine: routine.clone(), message });
        }))
    });
    let pgid = proc.pid;
    let ending = tokio::select! {
        status = proc.child.wait() => {
            let code = status.ok().and_then(|s| s.code());
            Ending::Exited(code.or_else(|| process::recorded_exit_code(&run.run_dir)))
        }
        _ = tokio::time::sleep(timeout) => Ending::TimedOut,
        _ = cancel.notified() => Ending::Cancelled,
    };
    if matches!(ending, Ending::TimedOut | Ending::Cancelled) {
        process::terminate_group(pgid, core.settings.kill_grace()).await;
        // Reap the leader; bounded in case something unkillable (D state) holds it.
        let _ = tokio::time::timeout(Duration::from_secs(5), proc.child.wait()).await;
    }
    if let Some(f) = follower {
        f.abort();
    }
    ending
}

/// How the run ended, from its output and what the engine itself knows.
pub(crate) async fn classify(core: &Arc<Core>, run: &LiveRun, ending: &Ending) -> Outcome {
    let now = core.clock.now();
    let (driver, run_dir, ending, timeout) = (run.driver, run.run_dir.clone(), ending.clone(), run.routine.timeout);
    tokio::task::spawn_blocking(move || outcome_for(driver, &run_dir, &ending, timeout, now))
        .await
        .unwrap_or_else(|e| Outcome::failed(Reason::AgentError, format!("classifying the run's output failed: {e}")))
}

/// Classify (unless already done), write the report, finalize the record once, then run the
/// settle hooks. `attempts` lists earlier tries on other accounts (failover).
pub(crate) async fn settle(
    core: &Arc<Core>,
    run: &LiveRun,
    ending: Ending,
    mut attempts: Vec<Attempt>,
    outcome: Option<Outcome>,
    notify: Option<oneshot::Sender<RunRecord>>,
) {
    core.active.lock().unwrap_or_else(|e| e.into_inner()).remove(&run.id);
    let now = core.clock.now();
    let outcome = match outcome {
        Some(o) => o,
        None => classify(core, run, &ending).await,
    };
    let mut outcome = outcome;
    // Nothing secret leaves the engine: not in the record, the report, or the logs on disk.
    outcome.message = outcome.message.map(|m| core.redactor.redact(&m));
    outcome.report = outcome.report.map(|r| core.redactor.redact(&r));
    for log in [process::STDOUT_LOG, process::STDERR_LOG] {
        if let Err(e) = core.redactor.scrub_file(&run.run_dir.join(log)) {
            tracing::warn!(run = %run.id, error = %e, "could not scrub secrets from a log");
        }
    }
    let account = core.store.get_run(&run.id).ok().and_then(|r| r.account);
    if account.is_some() && !matches!(ending, Ending::Blocked { .. }) {
        attempts.push(Attempt {
            account: account.clone(),
            status: outcome.status(),
            reason: outcome.reason,
            message: outcome.message.clone(),
            resets_at: outcome.resets_at,
        });
    }
    let report_path = match (&outcome.status(), &outcome.report) {
        (RunStatus::Completed, Some(report)) => {
            let path = run.run_dir.join(REPORT_FILE);
            match write_atomic(&path, report.as_bytes()) {
                Ok(()) => Some(path.display().to_string()),
                Err(e) => {
                    tracing::error!(run = %run.id, error = %e, "could not write report");
                    None
                }
            }
        }
        _ => None,
    };
    let exit_code = match &ending {
        Ending::Exited(code) => *code,
        _ => process::recorded_exit_code(&run.run_dir),
    };
    let settlement = Settlement {
        status: outcome.status(),
        reason: outcome.reason,
        message: outcome.message.clone(),
        exit_code,
        account,
        resets_at: outcome.resets_at,
        attempts,
        finished_at: now,
        duration_ms: Some((now - run.started_at).num_milliseconds().max(0) as u64),
        cost_usd: outcome.cost_usd,
        session_id: outcome.session_id.clone(),
        report_path,
    };

    // A database hiccup (locked, disk full) must not lose the run: retry, and if it still fails
    // the row stays `running` and crash recovery settles it from the files later.
    let mut finalized = None;
    for attempt in 0..5u32 {
        match core.store.finalize(&run.id, &settlement) {
            Ok(changed) => {
                finalized = Some(changed);
                break;
            }
            Err(e) => {
                tracing::error!(run = %run.id, attempt, error = %e, "could not finalize run record; retrying");
                tokio::time::sleep(Duration::from_millis(200 * 2u64.pow(attempt))).await;
            }
        }
    }
    let record = match core.store.get_run(&run.id) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(run = %run.id, error = %e, "run record unreadable after settling");
            return;
        }
    };
    // A lane is free: start whatever waits (without waiting for the hooks below).
    core.lane_freed.notify_waiters();
    {
        let core = Arc::clone(core);
        tokio::spawn(async move { super::launch::dispatch(&core).await });
    }
    if finalized != Some(true) {
        // Someone else settled it (or we could not): no second event, no second hook call.
        if let Some(tx) = notify {
            let _ = tx.send(record);
        }
        return;
    }
    tracing::info!(run = %run.id, routine = %run.routine.name, status = %record.status, "run settled");
    Engine::emit(core, EngineEvent::RunFinished { run: record.clone() });
    auto_pause(core, &record);
    let hooks = core.hooks.read().unwrap_or_else(|e| e.into_inner()).clone();
    run_hooks(&hooks, &record, HOOK_TIMEOUT).await;
    if let Some(tx) = notify {
        let _ = tx.send(record);
    }
}

/// After N failed runs in a row (setting `auto_pause_after`, 0 = never) pause the routine, with
/// the reason the user will see, and tell the faces.
fn auto_pause(core: &Arc<Core>, record: &RunRecord) {
    let limit = core.settings.auto_pause_after;
    if limit == 0 || !matches!(record.status, RunStatus::Failed | RunStatus::TimedOut) {
        return;
    }
    let failures = core.store.consecutive_failures(&record.routine).unwrap_or(0);
    if failures < limit {
        return;
    }
    let now = core.clock.now();
    match core.store.routine_state(&record.routine, now) {
        Ok(state) if !state.paused => {
            let last = record.message.clone().unwrap_or_else(|| record.status.to_string());
            let reason = format!(
                "auto-paused after {failures} failed runs in a row (last: {last}); resume with `nightshiftctl resume {}`",
                record.routine
            );
            if core.store.set_routine_paused(&record.routine, true, Some(&reason), now).is_ok() {
                tracing::warn!(routine = %record.routine, failures, "routine auto-paused");
                Engine::emit(core, EngineEvent::RoutinePaused { routine: record.routine.clone(), reason });
            }
        }
        _ => {}
    }
}

/// The outcome for an ending: the agent's classification, overridden by what the engine itself
/// knows (it timed the run out, cancelled it, or could not start it).
fn outcome_for(driver: &'static dyn AgentDriver, run_dir: &std::path::Path, ending: &Ending, timeout: Duration, now: DateTime<Utc>) -> Outcome {
    let exit_code = match ending {
        Ending::Exited(code) => *code,
        _ => process::recorded_exit_code(run_dir),
    };
    let out = RunOutput { run_dir, exit_code, now };
    match ending {
        Ending::SpawnFailed(message) => Outcome::failed(Reason::SpawnFailed, message.clone()),
        Ending::Blocked { reason, message, resets_at } => Outcome {
            status: Some(RunStatus::Blocked),
            reason: Some(*reason),
            message: Some(message.clone()),
            resets_at: *resets_at,
            ..Outcome::default()
        },
        Ending::Exited(_) => driver.classify(&out),
        Ending::TimedOut | Ending::Cancelled => {
            // Keep what the stream says about cost and session; the status is ours.
            let seen = driver.classify(&out);
            let (status, message) = if *ending == Ending::TimedOut {
                (RunStatus::TimedOut, timeout_message(timeout))
            } else {
                (RunStatus::Cancelled, "cancelled".to_string())
            };
            Outcome {
                status: Some(status),
                reason: None,
                message: Some(message),
                cost_usd: seen.cost_usd,
                session_id: seen.session_id,
                ..Outcome::default()
            }
        }
        Ending::Lost => {
            let seen = driver.classify(&out);
            if seen.from_final_event {
                seen
            } else {
                let mut o = Outcome::failed(
                    Reason::Interrupted,
                    "interrupted: Nightshift stopped while this run was in progress and its process ended without a result",
                );
                o.cost_usd = seen.cost_usd;
                o.session_id = seen.session_id;
                o
            }
        }
    }
}

/// The human message for a timeout, e.g. "timed out after 30m".
pub(crate) fn timeout_message(timeout: Duration) -> String {
    format!("timed out after {}", humantime::format_duration(timeout))
}
