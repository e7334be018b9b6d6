//! Delivering the outbox: each final run's finish notification, exactly once, by whichever engine
//! has a notifier (the tray app, `nightshiftctl daemon --notify`, `run --wait --notify`).
//!
//! Entries are leased (two notifiers on one home never send one twice), sent with a bound (a hung
//! server never delays anything), retried with backoff, and after the last try recorded as
//! `not_delivered` on the run. Runs that finished more than a day before a notifier first saw them
//! (the machine was away; only plain CLI commands ran) get one summary instead of a storm.
//! A crash between the final row and the send loses nothing: the entry is still pending (or its
//! lease runs out) and the next deliverer sends it.

use crate::engine::signal::Wake;
use crate::engine::state::Core;
use crate::notify::{notice_for, summary_for, BoundedSender};
use crate::run::RunRecord;
use crate::run::Channel;
use crate::store::{Delivery, OutboxEntry};
use chrono::{Duration as Span, Utc};
use std::sync::Arc;
use std::time::Duration;

/// Waits between tries of one notification: seconds to minutes, then "not delivered".
pub const DEFAULT_BACKOFF: &[Duration] =
    &[Duration::from_secs(2), Duration::from_secs(10), Duration::from_secs(60), Duration::from_secs(300)];
/// A run first seen by a deliverer this long after it finished is only summarised.
pub const STALE_AFTER_HOURS: i64 = 24;
/// How long a lease holds an entry (longer than one bounded send).
const LEASE: Duration = Duration::from_secs(10);

/// Start delivering this home's notifications through `sender`. Call once, inside a runtime.
pub(crate) fn start(core: &Arc<Core>, sender: Arc<BoundedSender>) {
    let core = Arc::clone(core);
    tokio::spawn(async move {
        // Runs settled by other processes (a CLI, a daemon without --notify) are heard of here.
        let kick = Arc::clone(&core);
        let _watcher = crate::engine::signal::watch_wake_file(&core, Vec::new(), move || kick.wakes.kick(Wake::Notifier));
        // Kicked by a run settled here, or by the wake file touched by another process.
        crate::engine::signal::deliver_forever(&*core.clock, core.wakes.of(Wake::Notifier), || pass(&core, &sender)).await;
    });
}

/// Deliver what is due once, here and now (a short-lived `run --wait --notify` before it exits:
/// whatever is still not shown stays pending for the next notifier).
pub(crate) async fn once(core: &Arc<Core>, sender: Arc<BoundedSender>) {
    pass(core, &sender).await;
}

/// Deliver what is due; returns when the next pending entry comes due.
async fn pass(core: &Arc<Core>, sender: &Arc<BoundedSender>) -> Option<chrono::DateTime<Utc>> {
    let (core2, sender2) = (Arc::clone(core), Arc::clone(sender));
    let both = move || -> crate::error::Result<Option<chrono::DateTime<Utc>>> {
        let finished = deliver_due(&core2, &sender2)?;
        let pushes = deliver_push_failures(&core2, &sender2)?;
        Ok(finished.into_iter().chain(pushes).min())
    };
    match tokio::task::spawn_blocking(both).await {
        Ok(Ok(next)) => next,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "could not deliver notifications; trying again later");
            Some(core.clock.now() + Span::seconds(10))
        }
        Err(e) => {
            tracing::error!(error = %e, "notification delivery panicked");
            Some(core.clock.now() + Span::seconds(10))
        }
    }
}

fn deliver_due(core: &Core, sender: &BoundedSender) -> crate::error::Result<Option<chrono::DateTime<Utc>>> {
    loop {
        let now = core.clock.now();
        let due = core.store.lease_due(&Channel::Notify, now, now + Span::from_std(LEASE).unwrap_or_default(), 50)?;
        if due.is_empty() {
            return core.store.next_delivery_due(&Channel::Notify);
        }
        let set = core.routines();
        let stale_before = core.clock.now() - Span::hours(STALE_AFTER_HOURS);
        let mut stale: Vec<(OutboxEntry, RunRecord)> = Vec::new();
        for entry in due {
            let Ok(run) = core.store.get_run(&entry.run_id) else {
                core.store.settle_delivery(&entry.run_id, &Channel::Notify, Delivery::NotNeeded, Some("the run no longer exists"), now)?;
                continue;
            };
            if told_already(core, &run, &Channel::Notify, now)? {
                continue;
            }
            let notice = notice_of(core, &set, &run)?;
            let Some(notice) = notice else {
                core.store.settle_delivery(&entry.run_id, &Channel::Notify, Delivery::NotNeeded, None, now)?;
                continue;
            };
            if entry.finished_at < stale_before {
                stale.push((entry, run));
                continue;
            }
            let result = sender.send(notice);
            record(core, &entry, result, Delivery::Delivered)?;
        }
        if !stale.is_empty() {
            let runs: Vec<RunRecord> = stale.iter().map(|(_, r)| r.clone()).collect();
            let result = sender.send(summary_for(&runs));
            for (entry, _) in &stale {
                record(core, entry, result.clone(), Delivery::Summarized)?;
            }
        }
    }
}

/// The notifications of pushes that failed after every try (`push_failed:notify`), each on its
/// own; one whose push went through meanwhile is not needed any more.
fn deliver_push_failures(core: &Core, sender: &BoundedSender) -> crate::error::Result<Option<chrono::DateTime<Utc>>> {
    let channel = Channel::Notify.push_failed();
    loop {
        let now = core.clock.now();
        let due = core.store.lease_due(&channel, now, now + Span::from_std(LEASE).unwrap_or_default(), 50)?;
        if due.is_empty() {
            return core.store.next_delivery_due(&channel);
        }
        for entry in due {
            // (The push's error was masked when it was recorded.)
            let notice = core.store.get_run(&entry.run_id).ok().and_then(|run| crate::notify::push_failed_notice(&run));
            match notice {
                Some(notice) => record(core, &entry, sender.send(notice), Delivery::Delivered)?,
                None => core.store.settle_delivery(&entry.run_id, &channel, Delivery::NotNeeded, Some("the push is no longer failed"), now)?,
            }
        }
    }
}

/// The notification `run` is owed under its routine's `notify:` (with a budget or usage window it
/// carried past a mark, told whatever `notify:` says but `never`), or `None` — what this home's
/// notifier shows, and what a viewer on another machine is given to show (`run_notice`).
pub(crate) fn notice_of(core: &Core, set: &crate::routine::RoutineSet, run: &RunRecord) -> crate::error::Result<Option<crate::notify::Notice>> {
    let (policy, timeout) = set.notify_policy(run);
    let report = run.report_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
    let tz = set.get(&run.routine).map(|r| r.timezone).unwrap_or_else(crate::schedule::local_tz);
    let passed: Vec<String> = set.get(&run.routine).and_then(|r| crate::engine::accounts::budgets::crossed(core, r, run)).into_iter().chain(crate::engine::accounts::windows::marks_passed(core, run, tz)).collect();
    let told_anyway = !passed.is_empty() && policy != crate::routine::NotifyPolicy::Never;
    Ok(match (run.status.is_quiet_slot(run.reason), told_anyway) {
        (true, _) => Some(quiet_notice_of(core, set, run)?),
        (false, true) => notice_for(run, crate::routine::NotifyPolicy::Always, report.as_deref(), timeout).map(|n| passed.iter().fold(n, |n, line| n.with_line(line))),
        (false, false) => notice_for(run, policy, report.as_deref(), timeout),
    })
}

/// A slot that ended with nothing done, in a stretch an earlier slot's notice already tells of:
/// settled as not needed, saying which run told it. (A stretch is told once, by its first slot.)
pub(crate) fn told_already(core: &Core, run: &RunRecord, channel: &Channel, now: chrono::DateTime<Utc>) -> crate::error::Result<bool> {
    if !run.status.is_quiet_slot(run.reason) {
        return Ok(false);
    }
    let Some(by) = core.store.quiet_told_by(run, channel)? else { return Ok(false) };
    core.store.settle_delivery(&run.id, channel, Delivery::NotNeeded, Some(&format!("told with run {by}, the first of the slots in a row that did nothing")), now)?;
    Ok(true)
}

/// The notice of a quiet slot, with the evidence: when the routine last ran, and why this slot
/// did not (the machine asleep, no Nightshift running — as `why` says it).
fn quiet_notice_of(core: &Core, set: &crate::routine::RoutineSet, run: &RunRecord) -> crate::error::Result<crate::notify::Notice> {
    let tz = set.get(&run.routine).map(|r| r.timezone).unwrap_or_else(crate::schedule::local_tz);
    let last_ran = core.store.last_ran_before(run)?;
    let absence = match run.scheduled_for {
        Some(slot) => {
            let presence = core.store.presence_since(&core.device_name(), slot - Span::days(1))?;
            crate::engine::presence::absence_at(&presence, slot, tz)
        }
        None => None,
    };
    Ok(crate::notify::quiet_notice(run, last_ran, absence.as_deref(), tz))
}

/// Record one try: `success` on Ok, else a retry after the backoff — or, after the last try,
/// `not_delivered` with the reason.
fn record(core: &Core, entry: &OutboxEntry, result: Result<(), String>, success: Delivery) -> crate::error::Result<()> {
    let now = core.clock.now();
    match result {
        Ok(()) => core.store.settle_delivery(&entry.run_id, &entry.channel, success, None, now),
        Err(e) => match core.delivery_backoff.get(entry.attempts as usize) {
            Some(wait) => {
                tracing::info!(run = %entry.run_id, attempt = entry.attempts + 1, error = %e, "notification not shown; trying again");
                core.store.retry_delivery(&entry.run_id, &entry.channel, &e, now + Span::from_std(*wait).unwrap_or_default())
            }
            None => {
                tracing::warn!(run = %entry.run_id, error = %e, "notification not delivered after every try");
                core.store.settle_delivery(&entry.run_id, &entry.channel, Delivery::NotDelivered, Some(&e), now)
            }
        },
    }
}

/// The notices that are not a run's finish notification, from the engine's events as they
/// happen: a routine auto-paused, a run that waits for a limit, held work starting after its
/// window reset (once per account and reset), a webhook that stopped accepting (once until it
/// works again), an account that turned `revoked` (once per verdict).
pub(crate) fn start_notices(core: &Arc<Core>, mut events: crate::events::EventReceiver, sender: Arc<BoundedSender>) {
    use crate::events::EngineEvent;
    use crate::notify::Notice;
    let core = Arc::clone(core);
    tokio::spawn(async move {
        let mut told: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
        let mut resets_told: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
        loop {
            let notice = match events.recv().await {
                Ok(EngineEvent::RoutinePaused { routine, reason }) => Some(Notice { summary: format!("⏸ {routine} paused"), body: reason, run_id: None, critical: true, asks: false, tag: None }),
                // A run that met a limit waits for its reset: said when it starts to wait.
                Ok(EngineEvent::RunQueued { run }) => {
                    let set = core.routines();
                    let routine = set.get(&run.routine);
                    let wants = routine.is_none_or(|r| r.notify != crate::routine::NotifyPolicy::Never);
                    let tz = routine.map(|r| r.timezone).unwrap_or_else(crate::schedule::local_tz);
                    crate::notify::waiting_notice(&run, tz).filter(|_| wants)
                }
                // Work a window's limit held starts again: said once per account and reset.
                Ok(EngineEvent::RunStarted { run }) => {
                    let set = core.routines();
                    let routine = set.get(&run.routine);
                    let tz = routine.map(|r| r.timezone).unwrap_or_else(crate::schedule::local_tz);
                    let wants = routine.is_none_or(|r| r.notify != crate::routine::NotifyPolicy::Never);
                    crate::engine::accounts::windows::reset_notice(&run, core.clock.now(), tz, &mut resets_told).filter(|_| wants)
                }
                // A run holds a call while it asks: Approve and Deny on the notification.
                Ok(EngineEvent::ApprovalAsked { run_id, routine, what, until }) => {
                    let tz = core.routines().get(&routine).map(|r| r.timezone).unwrap_or_else(crate::schedule::local_tz);
                    let until = crate::words::parse_time(&until).map(|t| crate::words::local_day_time(t, tz)).unwrap_or(until);
                    let tag = Some(format!("ask:{run_id}"));
                    Some(Notice { summary: format!("? {routine} asks to run a call its routine does not allow"), body: format!("{what}\nDenied if not answered by {until}."), run_id: Some(run_id), critical: true, asks: true, tag })
                }
                // Answered — wherever: the ask's notification says how (it is replaced).
                Ok(EngineEvent::ApprovalAnswered { run_id, routine, what, answer, by }) => {
                    let said = match answer.as_str() {
                        "allow" => format!("✓ {routine}: approved ({by})"),
                        "deny" => format!("✗ {routine}: denied ({by})"),
                        _ => format!("✗ {routine}: not approved in time"),
                    };
                    Some(Notice { summary: said, body: what, run_id: Some(run_id.clone()), critical: false, asks: false, tag: Some(format!("ask:{run_id}")) })
                }
                Ok(EngineEvent::ReviewLoopEnded { routine, pull, why }) => Some(Notice { summary: format!("✋ {routine}: no more review rounds on {pull}"), body: why, run_id: None, critical: false, asks: false, tag: None }),
                Ok(EngineEvent::AccountNotice { summary, body, .. }) => Some(Notice { summary, body, run_id: None, critical: false, asks: false, tag: None }),
                Ok(EngineEvent::WebhookFailed { webhook, run_id, routine, error }) => Some(Notice {
                    summary: format!("✗ webhook {webhook} could not post {routine}"),
                    body: format!("{error} — the run's result is kept; `nightshiftctl deliveries retry` sends it again"),
                    run_id: Some(run_id),
                    critical: false,
                    asks: false,
                    tag: None,
                }),
                Ok(EngineEvent::AccountsChanged) => core.accounts().iter().find_map(|a| {
                    let h = core.store.account_health(&a.email).ok().flatten()?;
                    let key = (a.email.clone(), crate::words::fmt_time(&h.at));
                    (h.verdict == crate::words::Verdict::Revoked && told.insert(key)).then(|| Notice {
                        summary: format!("✗ {} needs login", a.email),
                        body: crate::words::first_line(&h.evidence, 140),
                        run_id: h.run_id.clone(),
                        critical: true,
                        asks: false,
                        tag: None,
                    })
                }),
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
                Err(_) => return,
            };
            if let Some(n) = notice {
                let sender = Arc::clone(&sender);
                tokio::task::spawn_blocking(move || sender.send(n));
            }
        }
    });
}
