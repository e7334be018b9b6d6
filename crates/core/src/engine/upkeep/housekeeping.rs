//! Housekeeping, the hourly pass of long-lived engines (app, daemon, serve): worktree runs'
//! branches pushed (`push:`), their worktree directories removed after `keep_worktrees_days`, and
//! retention (`retention.rs`: old runs' files).
//!
//! A push is owed like a notification: an outbox entry written with the final row, leased by one
//! engine at a time, retried with backoff, and after the last try `failed` on the run — the branch
//! stays, and `nightshiftctl push RUN` (or the window) tries again. The state the user sees lives
//! in the run's change summary (`changes.push`).

use crate::engine::signal::AbortOnDrop;
use crate::engine::state::Core;
use crate::run::PushState;
use crate::run::Channel;
use crate::store::{Delivery, KeptWorktree};
use crate::workspace;
use chrono::{DateTime, Duration as Span, Utc};
use std::sync::Arc;
use std::time::Duration;

/// Waits between push tries: a flaky network gets a few chances within the hour.
pub(crate) const BACKOFF: &[Duration] = &[Duration::from_secs(10), Duration::from_secs(60), Duration::from_secs(300), Duration::from_secs(1800)];
/// Longer than one bounded push.
const LEASE: Duration = Duration::from_secs(180);
/// How often a long-running engine looks for worktrees to remove.
const CLEANUP_EVERY: Duration = Duration::from_secs(3600);

/// Push and clean up for as long as the engine lives (the app, the daemon, `serve`). The task
/// ends when the returned handle is dropped.
pub(crate) fn start(core: &Arc<Core>) -> AbortOnDrop {
    let core = Arc::clone(core);
    AbortOnDrop::spawn(async move {
        let kick = Arc::new(tokio::sync::Notify::new());
        let k = Arc::clone(&kick);
        // A run settled here or in another process may owe a push.
        let _watcher = crate::engine::signal::watch_wake_file(&core, Vec::new(), move || k.notify_one());
        let mut next_cleanup = tokio::time::Instant::now();
        loop {
            let next_push = push_due(&core).await;
            if tokio::time::Instant::now() >= next_cleanup {
                let c = Arc::clone(&core);
                let _ = tokio::task::spawn_blocking(move || {
                    prune(&c, false);
                    super::retention::prune(&c, false);
                })
                .await;
                next_cleanup = tokio::time::Instant::now() + CLEANUP_EVERY;
            }
            let until_push = next_push.map(|t| (t - Utc::now()).to_std().unwrap_or_default()).unwrap_or(crate::engine::signal::LONGEST_WAIT);
            let until_cleanup = next_cleanup.saturating_duration_since(tokio::time::Instant::now());
            tokio::select! {
                _ = kick.notified() => tokio::time::sleep(crate::engine::signal::WAKE_GATHER).await,
                _ = tokio::time::sleep(until_push.min(until_cleanup).min(crate::engine::signal::LONGEST_WAIT)) => {}
            }
        }
    })
}

/// Push every branch that is due now; returns when the next retry is due.
pub(crate) async fn push_due(core: &Arc<Core>) -> Option<DateTime<Utc>> {
    let c = Arc::clone(core);
    match tokio::task::spawn_blocking(move || push_due_blocking(&c)).await {
        Ok(Ok(next)) => next,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "could not push run branches; trying again later");
            Some(Utc::now() + Span::seconds(30))
        }
        Err(_) => Some(Utc::now() + Span::seconds(30)),
    }
}

/// The pushes due, then the pull requests they owe (`push.pr`); when the next of either is due.
fn push_due_blocking(core: &Core) -> crate::error::Result<Option<DateTime<Utc>>> {
    let next_push = push_each_due(core)?;
    let next_pr = super::pull_requests::open_due(core)?;
    Ok(next_push.into_iter().chain(next_pr).min())
}

fn push_each_due(core: &Core) -> crate::error::Result<Option<DateTime<Utc>>> {
    loop {
        let now = Utc::now();
        let due = core.store.lease_due(&Channel::Push, now, now + Span::from_std(LEASE).unwrap_or_default(), 8)?;
        if due.is_empty() {
            return core.store.next_delivery_due(&Channel::Push);
        }
        for entry in due {
            let id = entry.run_id.clone();
            let run = core.store.get_run(&entry.run_id).ok();
            let routine = run.as_ref().map(|r| r.routine.clone()).unwrap_or_default();
            let Some((changes, mut push, branch)) = run.and_then(|r| r.changes).and_then(|c| {
                let push = c.push.clone()?;
                let branch = c.branch.clone()?;
                Some((c, push, branch))
            }) else {
                core.store.settle_delivery(&entry.run_id, &Channel::Push, Delivery::NotNeeded, Some("the run has no branch to push"), now)?;
                continue;
            };
            let result = workspace::push(std::path::Path::new(&changes.repo), &push.remote, &branch, push.onto.as_deref()).map_err(|e| core.redactor.redact(&e));
            let now = Utc::now();
            push.tries = entry.attempts + 1;
            push.at = Some(now);
            match result {
                Ok(()) => {
                    tracing::info!(run = %entry.run_id, remote = %push.remote, %branch, "pushed the run's branch");
                    push.state = PushState::Pushed;
                    push.error = None;
                    core.store.set_push(&entry.run_id, &push)?;
                    core.store.settle_delivery(&entry.run_id, &Channel::Push, Delivery::Delivered, None, now)?;
                    // (`push RUN` after it gave up: what was still to be told of the failure is not.)
                    core.store.withdraw_push_failed(&entry.run_id, now)?;
                    // `push.pr`: its pull request follows.
                    super::pull_requests::owe_after_push(core, &entry.run_id, &routine, now)?;
                }
                Err(e) => match core.push_backoff.get(entry.attempts as usize) {
                    Some(wait) => {
                        tracing::info!(run = %entry.run_id, attempt = push.tries, error = %e, "push failed; trying again");
                        push.state = PushState::Pending;
                        push.error = Some(e.clone());
                        core.store.set_push(&entry.run_id, &push)?;
                        core.store.retry_delivery(&entry.run_id, &Channel::Push, &e, now + Span::from_std(*wait).unwrap_or_default())?;
                    }
                    None => {
                        tracing::warn!(run = %entry.run_id, error = %e, "push failed after every try; the branch is kept");
                        push.state = PushState::Failed;
                        push.error = Some(e.clone());
                        core.store.give_up_push(&entry.run_id, &push, &e, &push_failed_owed(core, &routine), now)?;
                        // A run that answers a review says so in the pull request all the same.
                        super::pull_requests::owe_after_failed_push(core, &entry.run_id, now)?;
                        core.wakes.kick(crate::engine::signal::Wake::Notifier);
                        core.wakes.kick(crate::engine::signal::Wake::Webhooks);
                    }
                },
            }
            // The faces show the push as it went: here through the event, elsewhere through the
            // wake file (other processes' views look again).
            if let Ok(run) = core.store.get_run(&id) {
                core.emit(crate::events::EngineEvent::RunUpdated { run: Box::new(run) });
            }
            crate::engine::signal::wake(core);
        }
    }
}

/// Who is told that a run's push failed after every try: the notification (unless its routine
/// says `notify: never`) and the webhooks that hear of its failures — the same ones its finish
/// would have gone to, had it failed (`routine`: the run's).
fn push_failed_owed(core: &Core, routine: &str) -> Vec<Channel> {
    let set = core.routines();
    let routine = set.get(routine);
    let notify = routine.is_none_or(|r| r.notify != crate::routine::NotifyPolicy::Never);
    let webhooks = routine.map(|r| r.webhooks.clone()).unwrap_or_default();
    notify.then_some(Channel::Notify).into_iter().chain(crate::webhook::owed(true, &webhooks, &core.settings())).map(Channel::push_failed).collect()
}

/// One worktree cleanup decision.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Pruned {
    pub run_id: String,
    pub routine: String,
    pub worktree: String,
    /// What was done ("removed …", "would remove …"), or why not.
    pub outcome: String,
    pub removed: bool,
}

/// Remove the worktree directories of settled runs that finished more than
/// `keep_worktrees_days` ago (`dry_run`: only say which). A run still going is never touched:
/// only final rows are looked at. The branches stay (all the run did is committed on them),
/// unless `delete_merged_branches` and they are merged.
pub(crate) fn prune(core: &Core, dry_run: bool) -> Vec<Pruned> {
    let settings = core.settings();
    let before = core.clock.now() - Span::days(settings.keep_worktrees_days as i64);
    match core.store.kept_worktrees(before, 10_000) {
        Ok(kept) => remove_kept(core, kept, dry_run),
        Err(e) => {
            tracing::warn!(error = %e, "could not list worktrees to clean up");
            Vec::new()
        }
    }
}

/// Before run `run_id` makes its worktree: at most `max_worktrees` may exist, the runs going
/// and the kept worktrees of settled runs together — so the oldest kept ones are removed early,
/// as cleanup would (their branches stay), to make room. (The lanes already hold a worktree run
/// back while `max_worktrees` are going.)
pub(crate) fn make_room(core: &Core, run_id: &str) {
    let max = core.settings().max_worktrees as usize;
    let (kept, going) = match (core.store.kept_worktrees(core.clock.now() + Span::days(1), 10_000), core.store.running_worktrees(run_id)) {
        (Ok(kept), Ok(going)) => (kept, going),
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!(error = %e, "could not count the worktrees before making one");
            return;
        }
    };
    let room = max.saturating_sub(going + 1);
    if kept.len() <= room {
        return;
    }
    // Oldest first: the ones beyond the room.
    let excess = kept.len() - room;
    let oldest: Vec<KeptWorktree> = kept.into_iter().take(excess).collect();
    let removed = remove_kept(core, oldest, false).into_iter().filter(|p| p.removed).count();
    tracing::info!(run = %run_id, removed, max, "made room for a worktree (max_worktrees): removed the oldest kept worktrees; their branches stay");
}

/// Remove these kept worktrees (`dry_run`: only say which).
fn remove_kept(core: &Core, kept: Vec<KeptWorktree>, dry_run: bool) -> Vec<Pruned> {
    let settings = core.settings();
    let mut done = Vec::new();
    for k in kept {
        let Some(path) = k.changes.worktree.clone() else {
            continue;
        };
        let mut p = Pruned { run_id: k.run_id.clone(), routine: k.routine.clone(), worktree: path.clone(), outcome: String::new(), removed: false };
        if dry_run {
            p.outcome = format!("would remove {path}");
            done.push(p);
            continue;
        }
        let started = workspace::started(&core.home.run_dir(&k.routine, &k.run_id));
        let base_ref = started.and_then(|s| s.base_ref);
        let result = workspace::remove_worktree(
            &core.home.worktrees_dir(),
            std::path::Path::new(&k.changes.repo),
            std::path::Path::new(&path),
            k.changes.branch.as_deref(),
            base_ref.as_deref(),
            settings.delete_merged_branches,
        );
        match result {
            Ok(said) => {
                if let Err(e) = core.store.set_worktree_removed(&k.run_id, core.clock.now()) {
                    tracing::warn!(run = %k.run_id, error = %e, "removed a worktree but could not record it");
                }
                tracing::info!(run = %k.run_id, "{said}");
                p.outcome = said;
                p.removed = true;
            }
            Err(e) => {
                tracing::warn!(run = %k.run_id, error = %e, "could not remove a worktree");
                p.outcome = e;
            }
        }
        done.push(p);
    }
    done
}
