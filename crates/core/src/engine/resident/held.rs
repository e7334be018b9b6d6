//! Held, not lost: a scheduled or catch-up run that a sign-in failure stopped (blocked at
//! preflight, or ended `auth_failed` having done nothing) is owed. Once its account is seen
//! working again — a token set, a new `claude /login` in the account's config dir, a run that
//! authenticated — the routine runs once (trigger `catchup`), and the held row names that run.
//!
//! Everything here is read from the store, so it works across processes and restarts: whichever
//! scheduler looks next makes the run up, exactly once (a conditional update on the held row).

use crate::engine::run::queue::queued_row;
use crate::engine::accounts;
use crate::engine::state::Core;
use crate::routine::RoutineSet;
use crate::run::{new_run_id, Trigger};
use chrono::Duration;
use std::sync::Arc;

/// How long held work stays owed.
pub const HELD_FOR_HOURS: i64 = 24;

/// Queue the make-up runs owed now; returns (routine, new run id) for each.
pub(crate) fn make_up_owed(core: &Arc<Core>, set: &RoutineSet) -> crate::error::Result<Vec<(String, String)>> {
    accounts::notice_new_logins(core);
    let now = core.clock.now();
    let all_paused = core.store.global_paused()?;
    let device = core.device_name();
    let mut queued = Vec::new();
    for held in core.store.held_runs_owed(now - Duration::hours(HELD_FOR_HOURS))? {
        let Some(routine) = set.get(&held.routine) else { continue };
        // The scheduler's own rule (file, device, pauses): still owed when it may fire again.
        if !routine.state(&device, core.store.routine_state(&routine.name, now)?.pause(), all_paused).is_active() {
            continue;
        }
        let id = new_run_id();
        if core.store.queue_make_up(&held.id, &queued_row(core, routine, &id, Trigger::Catchup, None, now))? {
            tracing::info!(routine = %held.routine, account = %held.account, held = %held.id, run = %id, "account works again: making up the held run");
            queued.push((held.routine, id));
        }
    }
    Ok(queued)
}
