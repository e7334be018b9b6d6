//! Judging how a run ended — the agent's own classification of its output, overridden by what the
//! engine itself knows (it timed the run out, cancelled it, could not start it, lost it), and the
//! final word settling adds (`on_denial`, secrets masked, a disk in trouble). The one place a run is
//! judged: the driver, settling and recovery all come here.

use super::live::{Ending, LiveRun};
use super::record::RunEnd;
use crate::engine::state::Core;
use crate::agents::{Outcome, RunOutput};
use crate::words::Agent;
use crate::run::{Reason, RunStatus};
use crate::runner::process;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Duration;

/// The final word on how a run ended, once it is settled: what the agent was refused, masked
/// and cut — with `on_denial: fail` a run that had tool calls refused is a failure, however it
/// ended its turn —; with `on_denial: ask`, a run that must ask after it ended is `blocked ·
/// needs_approval` ([`super::approval`]); nothing secret in the message or the report; and a run
/// that failed on a full (or read-only) disk says so (its own error is often just "exit code 1",
/// its output may be cut short). Reads whether the run's disk is in trouble and, with
/// `on_denial: ask`, the asks it still holds.
pub(crate) fn verdict(core: &Core, run: &LiveRun, mut outcome: Outcome) -> Outcome {
    for d in &mut outcome.denials {
        d.input = crate::words::first_line(&core.redactor.redact(&d.input), 200);
    }
    if run.asks.is_some() {
        // Asks still held: the engine that held them stopped before anyone answered.
        let held: Vec<_> = core.store.asks_of(&run.id).unwrap_or_default().into_iter().filter(|a| a.held && a.answer.is_none()).collect();
        super::approval::needs_approval(run, &mut outcome, &held);
    }
    if run.fail_on_denial && outcome.status() == RunStatus::Completed && !outcome.denials.is_empty() {
        outcome.status = Some(RunStatus::Failed);
        outcome.reason = Some(Reason::PermissionDenied);
        outcome.message = Some(format!("{} (`on_denial: fail`)", crate::run::denials_words(&outcome.denials)));
        outcome.report = None;
    }
    outcome.message = outcome.message.map(|m| core.redactor.redact(&m));
    outcome.report = outcome.report.map(|r| core.redactor.redact(&r));
    if matches!(outcome.status(), RunStatus::Failed | RunStatus::TimedOut) && outcome.reason != Some(Reason::SpawnFailed) {
        if let Some(trouble) = crate::fsutil::storage_trouble(&run.run_dir) {
            let said = outcome.message.take().map(|m| format!("{m} — ")).unwrap_or_default();
            outcome.message = Some(format!("{said}{trouble}; the run's output may be cut short"));
        }
    }
    outcome
}

/// The verdict on how a run ended: the classification the driver already made (its failover
/// decisions needed it), else the agent's reading of its output overridden by what the engine
/// knows — then the final word ([`verdict`]).
pub(crate) async fn judge(core: &Arc<Core>, run: &LiveRun, ended: &RunEnd) -> Outcome {
    let now = core.clock.now();
    let (core, run, ending, given) = (Arc::clone(core), run.clone(), ended.ending.clone(), ended.outcome.clone());
    tokio::task::spawn_blocking(move || {
        let outcome = given.unwrap_or_else(|| outcome_for(run.agent, &run.run_dir, &ending, run.timeout, now));
        verdict(&core, &run, outcome)
    })
    .await
    .unwrap_or_else(|e| Outcome::failed(Reason::AgentError, format!("judging the run's output failed: {e}")))
}

/// How the run ended, from its output and what the engine itself knows.
pub(crate) async fn classify(core: &Arc<Core>, run: &LiveRun, ending: &Ending) -> Outcome {
    let now = core.clock.now();
    let (agent, run_dir, ending, timeout) = (run.agent, run.run_dir.clone(), ending.clone(), run.timeout);
    tokio::task::spawn_blocking(move || outcome_for(agent, &run_dir, &ending, timeout, now))
        .await
        .unwrap_or_else(|e| Outcome::failed(Reason::AgentError, format!("classifying the run's output failed: {e}")))
}

/// The outcome for an ending: the agent's classification, overridden by what the engine itself
/// knows (it timed the run out, cancelled it, or could not start it).
pub(crate) fn outcome_for(agent: Agent, run_dir: &std::path::Path, ending: &Ending, timeout: Duration, now: DateTime<Utc>) -> Outcome {
    let driver = crate::agents::driver(agent);
    let exit_code = match ending {
        Ending::Exited(code) => *code,
        _ => process::recorded_exit_code(run_dir),
    };
    let out = RunOutput { run_dir, exit_code, now };
    let mut outcome = agent_outcome(agent, driver, &out, ending, timeout);
    // What the sandbox's proxy refused, whatever the agent's stream says of it.
    if !matches!(ending, Ending::SpawnFailed(_) | Ending::Blocked { .. }) {
        outcome.denials.extend(crate::sandbox::refusals(run_dir));
    }
    outcome
}

fn agent_outcome(agent: Agent, driver: &dyn crate::agents::AgentDriver, out: &RunOutput<'_>, ending: &Ending, timeout: Duration) -> Outcome {
    match ending {
        Ending::SpawnFailed(message) => Outcome::failed(Reason::SpawnFailed, message.clone()),
        Ending::Unreachable(message) => {
            // What came home before contact was lost still counts for cost and session.
            let seen = driver.classify(out);
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
        Ending::Exited(code) => killed_by_signal(agent, driver.classify(out), *code),
        // Ended on the line that says how: the agent's reading of its own output is the verdict.
        Ending::Settled => driver.classify(out),
        Ending::TimedOut | Ending::Stalled(_) | Ending::Cancelled => {
            // Keep what the stream says about cost and session; the status is ours.
            let seen = driver.classify(out);
            let (status, reason, message) = match ending {
                Ending::TimedOut => (RunStatus::TimedOut, None, timeout_message(timeout)),
                Ending::Stalled(words) => (RunStatus::TimedOut, Some(Reason::Stalled), words.clone()),
                _ => (RunStatus::Cancelled, None, "cancelled".to_string()),
            };
            Outcome {
                status: Some(status),
                reason,
                message: Some(message),
                cost_usd: seen.cost_usd,
                session_id: seen.session_id,
                ..Outcome::default()
            }
        }
        Ending::Lost => {
            let seen = driver.classify(out);
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

/// An agent that ended without its own final word and with a shell's "killed by signal N" code
/// (128 + N) was killed by someone else — the OOM killer, a user's `kill` — not by anything in
/// its work (Nightshift's own timeout and cancel are judged before this). A command's exit code
/// is its own to choose, so only agents are judged so.
fn killed_by_signal(agent: Agent, mut seen: Outcome, code: Option<i32>) -> Outcome {
    match code {
        Some(c @ 129..=192) if agent != Agent::Command && !seen.from_final_event && seen.status() == RunStatus::Failed => {
            let signal = c - 128;
            let name = match signal {
                9 => " (SIGKILL)",
                15 => " (SIGTERM)",
                6 => " (SIGABRT)",
                11 => " (SIGSEGV)",
                2 => " (SIGINT)",
                1 => " (SIGHUP)",
                _ => "",
            };
            seen.reason = Some(Reason::Killed);
            seen.message = Some(format!("{} was killed by signal {signal}{name}, not by Nightshift, before it reported a result", crate::agents::driver(agent).program()));
            seen
        }
        _ => seen,
    }
}

/// The human message for a timeout, e.g. "timed out after 30m".
pub(crate) fn timeout_message(timeout: Duration) -> String {
    format!("timed out after {}", humantime::format_duration(timeout))
}
