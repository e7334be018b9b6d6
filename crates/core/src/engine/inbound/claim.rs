//! An event claimed for one routine and its run started: once per delivery and routine, whoever
//! received it and however often it came (`Store::claim_event_run`), queued under the routine's
//! `overlap` rule like a scheduled run — for a `trigger:` ([`super::incoming`]) and for a review
//! that brings a routine back ([`super::reviews`]) alike.

use crate::engine::run::queue;
use crate::engine::state::Core;
use crate::error::{Error, ErrorCode, Result};
use crate::incoming::Event;
use crate::routine::{Overlap, Routine, RoutineState};
use crate::run::{Reason, RunAsks, RunStatus, Trigger};
use crate::store::{Claim, NewRun, Verdict};
use std::sync::Arc;

/// Why routine `r` takes no event now, as a slot would not run: disabled, paused, for another
/// machine (`devices:`) or past its `end_at` — the outcome's word and why.
pub(super) async fn held_back(core: &Arc<Core>, r: &Routine) -> Option<(String, String)> {
    let store = Arc::clone(&core.store);
    let (paused, all_paused) = off_thread(move || (store.paused_routines().unwrap_or_default(), store.global_paused().unwrap_or(false))).await.unwrap_or_default();
    let state = r.state(&core.device_name(), paused.get(&r.name).map(|why| why.as_deref()), all_paused);
    if state != RoutineState::Enabled {
        return Some((state.as_str().to_string(), format!("the routine is {}", state.words())));
    }
    let now = core.clock.now();
    r.end_at.filter(|end| now > *end).map(|end| ("ended".to_string(), format!("its end_at ({}) has passed", crate::words::fmt_time(&end))))
}

/// What claiming a delivery for a routine came to.
enum Claimed {
    /// An earlier arrival has it: this run.
    Duplicate(String),
    /// Recorded `skipped` under `overlap` (the run's id, why).
    Skipped(String, Option<String>),
    /// A review's run refused: its routine's `review_rounds` for the pull request are spent.
    Spent(usize),
    /// Its run is queued (and, under `overlap: replace`, the running one to stop).
    Queued { id: String, replace: Option<String> },
}

/// Claim `event` for routine `r` and start its run (or record it skipped, under `overlap`). The
/// store's part runs off the async runtime: a write may wait on another engine's.
pub(super) async fn start(core: &Arc<Core>, r: &Routine, event: &Event, raw: Arc<Vec<u8>>) -> Result<Verdict> {
    let (c, routine, e) = (Arc::clone(core), r.clone(), event.clone());
    let claimed = tokio::task::spawn_blocking(move || claim(&c, &routine, &e, &raw)).await.map_err(|e| Error::new(ErrorCode::StoreUnavailable, e.to_string()))??;
    let verdict = |outcome: &str, run_id: String, why: Option<String>| Verdict { routine: r.name.clone(), outcome: outcome.into(), run_id: Some(run_id), why };
    match claimed {
        Claimed::Duplicate(run) => Ok(verdict("duplicate", run, Some("an earlier arrival of this delivery fired it".into()))),
        Claimed::Skipped(id, why) => Ok(verdict("skipped", id, why)),
        Claimed::Spent(n) => Ok(Verdict { routine: r.name.clone(), outcome: "ended".into(), run_id: None, why: Some(format!("its {n} review rounds are spent (`review_rounds: {n}`)")) }),
        Claimed::Queued { id, replace } => {
            if let Some(running) = replace {
                queue::replace(core, &running, format!("cancelled: replaced by the run for {} (`overlap: replace`)", event.words())).await;
            }
            queue::submit(core, r, Trigger::Event, None, Some(id.clone()), RunAsks::default()).await?;
            Ok(verdict("fired", id, None))
        }
    }
}

/// The store's part of [`start`]: the routine's open run under `overlap`, the claim with its row,
/// and the payload beside the run.
fn claim(core: &Core, r: &Routine, event: &Event, raw: &[u8]) -> Result<Claimed> {
    let now = core.clock.now();
    let id = crate::run::new_run_id();
    let mut row = queue::queued_row(core, r, &id, Trigger::Event, None, now);
    let mut replace = None;
    // A review waits its turn behind a run of its routine (it is a person's request, not a slot
    // to drop); `overlap: replace` still replaces.
    let review = r.workspace.push().and_then(|p| p.review).filter(|_| event.review.is_some());
    let overlap = if review.is_some() && r.overlap == Overlap::Skip { Overlap::Queue } else { r.overlap };
    if let Some((running, status)) = core.store.open_run_of(&r.name)? {
        let one_waits = core.store.has_queued_run(&r.name)?;
        match (overlap, status) {
            (Overlap::Queue, RunStatus::Running) if !one_waits => {}
            (Overlap::Replace, RunStatus::Running) if !one_waits => replace = Some(running),
            _ => {
                let why = match status {
                    RunStatus::Running => format!("skipped: the previous run ({running}) was still running"),
                    _ => "skipped: a run of this routine was still waiting for a free lane".to_string(),
                };
                row = NewRun { status: RunStatus::Skipped, reason: Some(Reason::ActiveRun), message: Some(why), finished_at: Some(now), ..row };
            }
        }
    }
    match core.store.claim_event_run(event.source, &event.delivery, &row, event, review.map(|l| l.rounds))? {
        Claim::Taken(run) => return Ok(Claimed::Duplicate(run)),
        Claim::Spent(n) => return Ok(Claimed::Spent(n)),
        Claim::Claimed => {}
    }
    if row.status == RunStatus::Skipped {
        return Ok(Claimed::Skipped(id, row.message));
    }
    // The payload beside the run's logs, for `NIGHTSHIFT_EVENT_PATH` (as GitHub Actions'
    // `GITHUB_EVENT_PATH`).
    let dir = core.home.run_dir(&r.name, &id);
    let kept = std::fs::create_dir_all(&dir).map_err(|e| e.to_string()).and_then(|()| crate::fsutil::write_atomic(&dir.join(crate::run_dir::EVENT_FILE), raw).map_err(|e| e.to_string()));
    if let Err(e) = kept {
        tracing::warn!(run = %id, error = %e, "could not keep the event's payload beside the run");
    }
    Ok(Claimed::Queued { id, replace })
}

/// `f` on the blocking pool (store reads and writes, which may wait on another process's lock);
/// `None` if the task could not finish.
pub(super) async fn off_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}
