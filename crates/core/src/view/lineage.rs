//! Whose follow-up a routine is — "scheduled by nightly at Mon 7 Dec 02:14 (run 01J…)" — from
//! the `parent_run:` an agent's routine carries, in one wording for `why`, the run detail and
//! `routines list`.

use crate::routine::Routine;
use crate::Engine;

/// The words for `routine`'s parent run, if it has one.
pub fn scheduled_by(engine: &Engine, routine: &Routine) -> Option<String> {
    let parent = routine.parent_run.as_deref()?;
    Some(match engine.run(parent) {
        Ok(run) => {
            let tz = engine.routine(&run.routine).map(|r| r.timezone).unwrap_or(routine.timezone);
            match run.started_at.or(run.scheduled_for) {
                Some(t) => format!("scheduled by {} at {} (run {})", run.routine, crate::words::local_day_time(t, tz), run.id),
                None => format!("scheduled by {} (run {})", run.routine, run.id),
            }
        }
        Err(_) => format!("scheduled by run {parent} (no longer on record)"),
    })
}
