//! Watching one attempt's process to its end (timeout, cancel, live progress) and judging how it
//! ended: the agent's own classification, overridden by what the engine itself knows.

use super::{Core, Engine};
use crate::run_dir::RunDir;
use crate::agents::{AgentDriver, Outcome, RunOutput};
use crate::events::EngineEvent;
use crate::routine::Routine;
use crate::run::{Reason, RunStatus};
use crate::runner::follow::follow;
use crate::runner::process::{self, RunProcess};
use crate::runner::scrub;
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// What the supervisor knows about a run it settles.
#[derive(Clone)]
pub(crate) struct LiveRun {
    pub id: String,
    pub routine: Routine,
    pub driver: &'static dyn AgentDriver,
    pub run_dir: PathBuf,
    pub started_at: DateTime<Utc>,
}

/// Mask secrets in the run's logs from where the last scrub stopped (blocking: call off the
/// async workers). While an engine follows a run this happens every few seconds, so settling
/// only has the rest to do; see [`crate::runner::scrub`] for who else scrubs and when.
pub(crate) fn scrub_logs(core: &Core, run: &LiveRun, finished: bool) {
    if let Err(e) = scrub::scrub_run_logs(&core.redactor, &run.run_dir, finished) {
        tracing::warn!(run = %run.id, error = %e, "could not scrub secrets from a log");
    }
}

/// How often a live run's new output is scrubbed.
const SCRUB_EVERY: Duration = Duration::from_secs(5);

impl LiveRun {
    /// Rebuild what settling needs from a run's record. The routine file may have changed or
    /// gone since; the record's agent decides how its output is read.
    pub(crate) fn for_record(core: &Core, rec: &crate::run::RunRecord, set: &crate::routine::RoutineSet) -> LiveRun {
        let routine = set.get(&rec.routine).cloned().unwrap_or_else(|| Routine {
            name: rec.routine.clone(),
            file: core.home.routines_dir(),
            description: None,
            schedule: None,
            timezone: chrono_tz::Tz::UTC,
            at: None,
            end_at: None,
            action: crate::routine::Action::Command { command: String::new() },
            timeout: Routine::DEFAULT_TIMEOUT,
            cwd: None,
            env: Default::default(),
            account: crate::routine::AccountChoice::Any,
            catchup: false,
            notify: crate::routine::NotifyPolicy::default_for(rec.agent),
            enabled: false,
            variables: Default::default(),
            devices: Vec::new(),
            webhooks: Vec::new(),
            workspace: Default::default(),
            placement: None,
        });
        LiveRun {
            id: rec.id.clone(),
            driver: crate::agents::driver(rec.agent),
            run_dir: rec.run_dir.clone().into(),
            started_at: rec.started_at.unwrap_or_else(|| core.clock.now()),
            routine,
        }
    }
}

/// Wait until the wall clock reaches `deadline` (forever without one), looking at it at least
/// every 30 s: a monotonic timer stops while the machine sleeps, and the limit must not stretch.
async fn until_wall_clock(deadline: Option<std::time::SystemTime>) {
    let Some(deadline) = deadline else { return std::future::pending().await };
    while let Ok(left) = deadline.duration_since(std::time::SystemTime::now()) {
        if left.is_zero() {
            break;
        }
        tokio::time::sleep(left.min(Duration::from_secs(30))).await;
    }
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
    /// Refused before spawning (account preflight, no host reachable).
    Blocked { reason: Reason, message: String, resets_at: Option<DateTime<Utc>> },
    /// A run on a host that could not be followed to its end (contact lost past its limit).
    Unreachable(String),
}

/// A try's process: here, or on a host.
pub(crate) enum Proc {
    Local(RunProcess),
    Remote(super::remote_run::RemoteProc),
}

/// Follow a try to its end — live progress from its log and secrets scrubbed from it as it grows,
/// wherever it runs — then scrub the rest.
pub(crate) async fn supervise(core: &Arc<Core>, run: &LiveRun, proc: &mut Proc, cancel: Arc<Notify>) -> Ending {
    let follower = run.driver.has_progress().then(|| {
        let core = Arc::clone(core);
        let (id, routine) = (run.id.clone(), run.routine.name.clone());
        tokio::spawn(follow(RunDir::at(&run.run_dir).stdout(), run.driver, move |message| {
            Engine::emit(&core, EngineEvent::RunProgress { run_id: id.clone(), routine: routine.clone(), message });
        }))
    });
    let scrubber = {
        let (core, run) = (Arc::clone(core), run.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SCRUB_EVERY).await;
                let (core, run) = (Arc::clone(&core), run.clone());
                let _ = tokio::task::spawn_blocking(move || scrub_logs(&core, &run, false)).await;
            }
        })
    };
    let ending = match proc {
        Proc::Local(p) => wait_local(core, run, p, cancel).await,
        Proc::Remote(r) => super::remote_run::follow(core, run, r, cancel).await,
    };
    if let Some(f) = follower {
        f.abort();
    }
    scrubber.abort();
    // The attempt's logs are final: scrub the rest now (failover archives them next).
    let (core2, run2) = (Arc::clone(core), run.clone());
    let _ = tokio::task::spawn_blocking(move || scrub_logs(&core2, &run2, true)).await;
    ending
}

/// Wait for a local process, enforcing timeout and cancel on its whole process group.
async fn wait_local(core: &Arc<Core>, run: &LiveRun, proc: &mut RunProcess, cancel: Arc<Notify>) -> Ending {
    let pgid = proc.pid;
    let ending = tokio::select! {
        status = proc.child.wait() => {
            let code = status.ok().and_then(|s| s.code());
            // What this engine saw is kept with the run even if the wrapper could not write it
            // (a full disk): should the row not be writable now, recovery settles it correctly later.
            if let Some(code) = code {
                if let Err(e) = process::record_exit_code(&run.run_dir, code) {
                    tracing::warn!(run = %run.id, error = %e, "could not keep the exit code in the run directory");
                }
            }
            // The wrapper enforces the limit too (it travels with the run): its mark wins.
            if process::timed_out_by_wrapper(&run.run_dir) {
                Ending::TimedOut
            } else {
                Ending::Exited(code.or_else(|| process::recorded_exit_code(&run.run_dir)))
            }
        }
        // The engine keeps the limit while it follows the run (the wrapper once it does not).
        _ = until_wall_clock(proc.deadline) => Ending::TimedOut,
        _ = cancel.notified() => Ending::Cancelled,
    };
    if matches!(ending, Ending::TimedOut | Ending::Cancelled) {
        let child = &mut proc.child;
        process::terminate_group_reaping(pgid, core.settings().kill_grace(), || {
            let _ = child.try_wait();
        })
        .await;
        // Reap the leader; bounded in case something unkillable (D state) holds it.
        let _ = tokio::time::timeout(Duration::from_secs(5), proc.child.wait()).await;
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

/// The outcome for an ending: the agent's classification, overridden by what the engine itself
/// knows (it timed the run out, cancelled it, or could not start it).
pub(crate) fn outcome_for(driver: &'static dyn AgentDriver, run_dir: &std::path::Path, ending: &Ending, timeout: Duration, now: DateTime<Utc>) -> Outcome {
    let exit_code = match ending {
        Ending::Exited(code) => *code,
        _ => process::recorded_exit_code(run_dir),
    };
    let out = RunOutput { run_dir, exit_code, now };
    match ending {
        Ending::SpawnFailed(message) => Outcome::failed(Reason::SpawnFailed, message.clone()),
        Ending::Unreachable(message) => {
            // What came home before contact was lost still counts for cost and session.
            let seen = driver.classify(&out);
            let mut o = Outcome::failed(Reason::HostUnreachable, message.clone());
            o.cost_usd = seen.cost_usd;
            o.session_id = seen.session_id;
            o
        }
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
