//! Telling everyone a run's row is final — once per final row, whoever wrote it: the queue and
//! the deliverers are woken (here and, through the wake file, in other processes), the faces get
//! `run_finished`, the routine may be auto-paused, and the in-process settle hooks run (bounded).
//! A missed or skipped slot's row (written by the scheduler) is told here too.

use crate::engine::signal::Wake;
use crate::engine::state::Core;
use crate::events::EngineEvent;
use crate::run::{RunRecord, RunStatus};
use crate::runner::hooks::{run_hooks, HOOK_TIMEOUT};
use std::sync::Arc;

/// The row is final (`made_final`: by this call, else by another engine first — then nothing is
/// told twice): a lane is free, so whatever waits may start.
pub(crate) async fn settled(core: &Arc<Core>, record: &RunRecord, made_final: bool) {
    crate::engine::signal::wake(core);
    if made_final {
        tracing::info!(run = %record.id, routine = %record.routine, status = %record.status, "run settled");
        announce(core, record).await;
    }
}

/// Tell the faces, auto-pause, run the in-process hooks: once per final row.
pub(crate) async fn announce(core: &Arc<Core>, record: &RunRecord) {
    core.emit(EngineEvent::RunFinished { run: Box::new(record.clone()) });
    core.emit_state();
    if record.notified.is_some() {
        core.wakes.kick(Wake::Notifier);
    }
    core.wakes.kick(Wake::Webhooks);
    if matches!(record.status, RunStatus::Missed | RunStatus::Skipped) {
        return;
    }
    auto_pause(core, record);
    crate::engine::upkeep::pull_requests::settled(core, record);
    // Blocked for an approval: asked on the phone too (the finish notification asks on the desktop).
    if record.reason == Some(crate::run::Reason::NeedsApproval) {
        let engine = crate::Engine { core: Arc::clone(core) };
        for ask in core.store.asks_of(&record.id).unwrap_or_default().iter().filter(|a| a.answer.is_none()) {
            engine.post_ask_to_ntfy(ask, &crate::engine::ask_words(&ask.tool, &ask.input));
        }
    }
    let hooks = core.hooks.read().unwrap_or_else(|e| e.into_inner()).clone();
    run_hooks(&hooks, record, HOOK_TIMEOUT).await;
}

/// After N failed runs in a row (setting `auto_pause_after`, 0 = never) pause the routine, with
/// the reason the user will see, and tell the faces.
fn auto_pause(core: &Arc<Core>, record: &RunRecord) {
    let limit = core.settings().auto_pause_after;
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
                core.emit(EngineEvent::RoutinePaused { routine: record.routine.clone(), reason });
            }
        }
        _ => {}
    }
}
