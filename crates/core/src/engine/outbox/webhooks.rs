//! Delivering webhooks from the outbox: each final run posted to each of its webhooks, exactly
//! once (leases keep two engines from sending one entry together; the run id is the receiver's
//! idempotency key for the rare resend after a lost answer).
//!
//! One task per webhook, so a slow or dead receiver only delays its own deliveries; within it up to
//! [`CONCURRENT`] requests at a time, each bounded by `webhook::REQUEST_TIMEOUT`. Network errors,
//! timeouts, 5xx and 429 are retried with exponential backoff and jitter (a `Retry-After` is
//! honoured, and holds the webhook's other deliveries until then too); a 409 ("I have it already")
//! is a delivery; other 4xx are not retried; after [`ATTEMPTS`] tries or a day the delivery is `not_delivered`
//! and the engine's problems say so (tray, window) until a delivery of that webhook succeeds.
//! Settling never waits for any of this: it only writes the outbox entry.

use crate::engine::signal::Wake;
use crate::engine::state::Core;
use crate::run::RunRecord;
use crate::store::{Delivery, OutboxEntry};
use crate::run::{Channel, PingEvent};
use crate::webhook::{self, Failure};
use chrono::{Duration as Span, Utc};
use std::sync::Arc;
use std::time::Duration;

/// Waits between tries (each ±20 % jitter): 5 s, 30 s, 2 min, 10 min, 30 min, then give up.
pub(crate) const BACKOFF: &[Duration] = &[
    Duration::from_secs(5),
    Duration::from_secs(30),
    Duration::from_secs(120),
    Duration::from_secs(600),
    Duration::from_secs(1800),
];
/// A delivery older than this is given up after its current try.
const MAX_AGE_HOURS: i64 = 24;
/// Requests in flight per webhook.
const CONCURRENT: usize = 8;
/// Longer than one bounded request.
const LEASE: Duration = Duration::from_secs(30);
/// A `Retry-After` longer than this is cut to it.
const LONGEST_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// Start one deliverer per configured webhook, and one for each webhook added to
/// `nightshift.toml` later (looked for whenever the deliverers are woken: the settings' reread
/// wakes them). Call
/// once, inside a runtime.
pub(crate) fn start(core: &Arc<Core>) {
    {
        let k = Arc::clone(core);
        let watcher = crate::engine::signal::watch_wake_file(core, Vec::new(), move || k.wakes.kick(Wake::Webhooks));
        let mut held = core.webhook_watch.lock().unwrap_or_else(|e| e.into_inner());
        *held = Some(watcher);
    }
    // The routines' heartbeat pings: one deliverer for start pings, one for end pings.
    for event in [PingEvent::Start, PingEvent::End] {
        deliverer(core, Channel::Ping(event));
    }
    let core = Arc::clone(core);
    tokio::spawn(async move {
        let mut started = std::collections::HashSet::new();
        loop {
            let notified = core.wakes.of(Wake::Webhooks).notified();
            for hook in &core.settings().webhooks {
                if started.insert(hook.name.clone()) {
                    deliverer(&core, webhook::channel(&hook.name));
                    deliverer(&core, webhook::channel(&hook.name).push_failed());
                    deliverer(&core, webhook::channel(&hook.name).pull_request_news());
                }
            }
            // A webhook added to nightshift.toml: the settings' reread kicks this.
            notified.await;
        }
    });
}

/// One webhook's deliverer: sends what is due, then sleeps until the next retry or a wake-up.
fn deliverer(core: &Arc<Core>, channel: Channel) {
    let core = Arc::clone(core);
    tokio::spawn(async move {
        let agent = webhook::agent();
        crate::engine::signal::deliver_forever(&*core.clock, core.wakes.of(Wake::Webhooks), || pass(&core, &agent, &channel)).await;
    });
}

/// Deliver what is due now, for at most `limit` (a `run --wait` before it exits; the rest stays
/// pending for the app or the daemon).
pub(crate) async fn once(core: &Arc<Core>, limit: Duration) {
    let agent = webhook::agent();
    let all = async {
        for event in [PingEvent::Start, PingEvent::End] {
            pass(core, &agent, &Channel::Ping(event)).await;
        }
        for hook in &core.settings().webhooks {
            pass(core, &agent, &webhook::channel(&hook.name)).await;
            pass(core, &agent, &webhook::channel(&hook.name).push_failed()).await;
            pass(core, &agent, &webhook::channel(&hook.name).pull_request_news()).await;
        }
    };
    let _ = tokio::time::timeout(limit, all).await;
}

/// Deliver every due entry of `channel`; returns when the next pending one comes due. Up to
/// [`CONCURRENT`] tries at a time, and a slot that frees is filled at once: one request that hangs
/// (a ping whose monitor never answers, while other routines' pings share the channel) holds up
/// only itself.
async fn pass(core: &Arc<Core>, agent: &ureq::Agent, channel: &Channel) -> Option<chrono::DateTime<Utc>> {
    // Its receiver asked for a pause: nothing goes before then (what is in flight ends as it may).
    if let Some(until) = held_until(core, channel) {
        return Some(until);
    }
    let mut sends = tokio::task::JoinSet::new();
    // The entries (run ids: one channel) this pass is sending now.
    let in_flight: Arc<std::sync::Mutex<std::collections::HashSet<String>>> = Default::default();
    let mut unreadable = false;
    loop {
        let free = if held_until(core, channel).is_some() { 0 } else { CONCURRENT - sends.len() };
        let now = core.clock.now();
        let (core2, ch) = (Arc::clone(core), channel.clone());
        let due = match free {
            0 => Ok(Ok(Vec::new())),
            _ => tokio::task::spawn_blocking(move || core2.store.lease_due(&ch, now, now + Span::from_std(LEASE).unwrap_or_default(), free)).await,
        };
        let due = match due {
            Ok(Ok(due)) => due,
            Ok(Err(e)) => {
                tracing::warn!(%channel, error = %e, "could not read the webhook outbox; trying again later");
                unreadable = true;
                Vec::new()
            }
            Err(_) => {
                unreadable = true;
                Vec::new()
            }
        };
        for entry in due {
            // Its lease ran out while this pass still sends it (the clock stepped or the machine
            // slept mid-send): the send in flight records it; a second would post it twice.
            if !in_flight.lock().unwrap_or_else(|e| e.into_inner()).insert(entry.run_id.clone()) {
                continue;
            }
            let (core, agent, in_flight) = (Arc::clone(core), agent.clone(), Arc::clone(&in_flight));
            sends.spawn_blocking(move || {
                deliver(&core, &agent, &entry);
                in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&entry.run_id);
            });
        }
        if sends.is_empty() && unreadable {
            return Some(now + Span::seconds(10));
        }
        if sends.is_empty() {
            let (core2, ch) = (Arc::clone(core), channel.clone());
            return tokio::task::spawn_blocking(move || core2.store.next_delivery_due(&ch)).await.ok().and_then(Result::ok).flatten();
        }
        if free == 0 {
            // Every slot is taken: the next thing to do is to fill the one that frees.
            sends.join_next().await;
            continue;
        }
        // Wait for a try to end (a retry it set may be due), for another entry to come due
        // (a retry of a receiver that refused, while a hanging one holds its slot) or for a kick
        // (a new entry) — whichever comes first.
        let kicked = core.wakes.of(Wake::Webhooks).notified();
        let (core2, ch) = (Arc::clone(core), channel.clone());
        let next = tokio::task::spawn_blocking(move || core2.store.next_delivery_due(&ch)).await.ok().and_then(Result::ok).flatten();
        let wait = next.map_or(crate::engine::signal::LONGEST_WAIT, |n| (n - core.clock.now()).to_std().unwrap_or_default()).min(crate::engine::signal::LONGEST_WAIT);
        tokio::select! {
            _ = sends.join_next() => {}
            _ = tokio::time::sleep(wait.max(Duration::from_millis(10))) => {}
            _ = kicked => {}
        }
    }
}

/// What a receiver's pause holds: all of one webhook's posts (its runs' ends and their push
/// failures alike), else the channel itself.
fn hold_key(channel: &Channel) -> String {
    channel.webhook().map_or_else(|| channel.to_string(), |name| webhook::channel(name).to_string())
}

/// When the pause `channel`'s receiver asked for ends, while it lasts.
fn held_until(core: &Core, channel: &Channel) -> Option<chrono::DateTime<Utc>> {
    let mut holds = core.webhook_holds.lock().unwrap_or_else(|e| e.into_inner());
    let key = hold_key(channel);
    match holds.get(&key) {
        Some(until) if *until > core.clock.now() => Some(*until),
        Some(_) => {
            holds.remove(&key);
            None
        }
        None => None,
    }
}

/// One try of one entry, and its record.
fn deliver(core: &Arc<Core>, agent: &ureq::Agent, entry: &OutboxEntry) {
    if let Channel::Ping(event) = entry.channel {
        return deliver_ping(core, agent, entry, event);
    }
    let name = entry.channel.webhook().unwrap_or_default();
    let outcome = match (core.settings().webhook(name), core.store.get_run(&entry.run_id)) {
        (None, _) => Err(Failure::Refused(format!("no webhook named \"{name}\" in nightshift.toml any more"))),
        (_, Err(_)) => Err(Failure::Refused("the run no longer exists".into())),
        (Some(_), Ok(run)) if super::delivery::told_already(core, &run, &entry.channel, core.clock.now()).unwrap_or(false) => return,
        (Some(hook), Ok(run)) => {
            let run = masked(core, run);
            let report = run.report_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).map(|r| core.redactor.redact(&r));
            let secret = secret(core, name);
            let event = match entry.channel {
                Channel::PushFailed(_) => webhook::Event::PushFailed,
                Channel::PullRequestNews(_) => webhook::Event::PullRequest,
                _ => webhook::Event::RunFinished,
            };
            let approval = approval_links(core, &run);
            let req = webhook::request(hook, event, &run, report.as_deref(), approval.as_ref(), &core.device_name(), secret.as_deref(), core.clock.now().timestamp());
            webhook::send(agent, &req)
        }
    };
    if let Err(e) = record(core, entry, name, &format!("webhook \"{name}\""), outcome) {
        tracing::warn!(run = %entry.run_id, webhook = name, error = %e, "could not record a webhook delivery; it will be tried again");
    }
}

/// A run blocked for an approval, while its asks are open and this home is served (`[serve]
/// public_url`, else its `listen` address): the signed links that answer them (one answers all).
fn approval_links(core: &Arc<Core>, run: &crate::run::RunRecord) -> Option<webhook::ApprovalLinks> {
    if run.reason != Some(crate::run::Reason::NeedsApproval) {
        return None;
    }
    let settings = core.settings();
    let base = settings.serve.public_url.clone().or_else(|| settings.serve.listen.map(|a| format!("http://{a}")))?;
    let open: Vec<_> = core.store.asks_of(&run.id).ok()?.into_iter().filter(|a| a.answer.is_none()).collect();
    let first = open.first()?;
    let engine = crate::Engine { core: Arc::clone(core) };
    Some(webhook::ApprovalLinks {
        calls: open.iter().map(|a| core.redactor.redact(&crate::engine::ask_words(&a.tool, &a.input))).collect::<Vec<_>>().join(", "),
        approve: engine.approval_link(&base, first, "allow").ok()?,
        deny: engine.approval_link(&base, first, "deny").ok()?,
        until: crate::words::fmt_time(&first.expires_at),
    })
}

/// One try of a heartbeat ping. An end ping waits for its run's start ping (a monitor that heard
/// "done" before "started" would think the run still going).
fn deliver_ping(core: &Core, agent: &ureq::Agent, entry: &OutboxEntry, event: PingEvent) {
    let label = format!("ping {}", event.as_str());
    let run = core.store.get_run(&entry.run_id);
    let routine = run.as_ref().map(|r| r.routine.clone()).unwrap_or_default();
    let url = core.routines().get(&routine).and_then(|r| r.ping.clone());
    let now = core.clock.now();
    let outcome = match (run, url) {
        (Err(_), _) => Err(Failure::Refused("the run no longer exists".into())),
        (Ok(_), None) => {
            let _ = core.store.settle_delivery(&entry.run_id, &entry.channel, Delivery::NotNeeded, Some("its routine no longer has `ping:`"), now);
            return;
        }
        (Ok(_), Some(_)) if event == PingEvent::End && core.store.delivery_state(&entry.run_id, &Channel::Ping(PingEvent::Start)).ok().flatten() == Some(Delivery::Pending) => {
            let _ = core.store.postpone_delivery(&entry.run_id, &entry.channel, now + Span::seconds(2));
            return;
        }
        (Ok(run), Some(url)) => {
            let req = webhook::ping_request(&url, event, &run);
            // The URL is the monitor's secret: an error names the ping, never the URL.
            webhook::send(agent, &req).map_err(|f| f.masking(&req.url, &label).masking(&url, &label))
        }
    };
    if let Err(e) = record(core, entry, &label, &format!("the {label} of routine {routine}"), outcome) {
        tracing::warn!(run = %entry.run_id, ping = event.as_str(), error = %e, "could not record a ping; it will be tried again");
    }
}

/// Delivered; or another try after the backoff (or `Retry-After`); or, after the last try, the
/// refusal or a day, `not_delivered` — said once in the engine's problems.
/// (`name`: the webhook's, or `ping start` / `ping end`; `who` says it in a sentence.)
fn record(core: &Core, entry: &OutboxEntry, name: &str, who: &str, outcome: Result<(), Failure>) -> crate::error::Result<()> {
    let now = core.clock.now();
    let problem_key = crate::engine::problems::About::Delivery(entry.channel.clone());
    match outcome {
        Ok(()) => {
            core.problems.clear(&problem_key);
            tracing::info!(run = %entry.run_id, webhook = name, "{who} delivered");
            core.store.settle_delivery(&entry.run_id, &entry.channel, Delivery::Delivered, None, now)
        }
        Err(failure) => {
            let (error, wait) = match failure {
                Failure::Retry { error, after } => {
                    let too_old = now - entry.finished_at > Span::hours(MAX_AGE_HOURS);
                    let backoff = core.webhook_backoff.get(entry.attempts as usize).filter(|_| !too_old).map(|b| jitter(*b, &entry.run_id, entry.attempts));
                    let asked = after.map(|a| a.min(LONGEST_RETRY_AFTER));
                    // The receiver said when to come back: none of its deliveries goes before
                    // then. (Not for pings: one channel carries every routine's, to monitors of
                    // their own.)
                    if let (Some(asked), Some(_), Some(_)) = (asked, backoff, entry.channel.webhook()) {
                        let until = now + Span::from_std(asked).unwrap_or_default();
                        let mut holds = core.webhook_holds.lock().unwrap_or_else(|e| e.into_inner());
                        let held = holds.entry(hold_key(&entry.channel)).or_insert(until);
                        *held = (*held).max(until);
                    }
                    (error, backoff.map(|b| asked.unwrap_or(b)))
                }
                Failure::Refused(error) => (error, None),
            };
            match wait {
                Some(wait) => {
                    tracing::info!(run = %entry.run_id, webhook = name, attempt = entry.attempts + 1, %error, "{who} not delivered; trying again");
                    core.store.retry_delivery(&entry.run_id, &entry.channel, &error, now + Span::from_std(wait).unwrap_or_default())
                }
                None => {
                    let said = format!("{who} could not deliver run {} after {} tr{}: {error}", entry.run_id, entry.attempts + 1, if entry.attempts == 0 { "y" } else { "ies" });
                    tracing::warn!("{said}");
                    let first = core
                        .problems
                        .tell(problem_key, format!("{said} (`nightshiftctl deliveries --failed`; retry with `nightshiftctl deliveries retry RUN`)"))
                        .is_none();
                    if first && entry.channel.webhook().is_some() {
                        // Once per webhook until it works again: the desktop notification, the tray.
                        // Announced before the row is final, so whoever sees it final was told.
                        let routine = core.store.get_run(&entry.run_id).map(|r| r.routine).unwrap_or_default();
                        let _ = core.events.send(crate::events::EngineEvent::WebhookFailed { webhook: name.to_string(), run_id: entry.run_id.clone(), routine, error: error.clone() });
                    }
                    core.store.settle_delivery(&entry.run_id, &entry.channel, Delivery::NotDelivered, Some(&error), now)
                }
            }
        }
    }
}

/// ±20 %, decided by the run id and the attempt (so two engines agree and tests can rely on the
/// bounds), to spread a burst of retries.
fn jitter(base: Duration, run_id: &str, attempt: u32) -> Duration {
    let h = run_id.bytes().fold(attempt as u64 ^ 0x9e37_79b9, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    let permille = 800 + (h % 401); // 800..=1200
    base * permille as u32 / 1000
}

/// The signing secret: `NIGHTSHIFT_WEBHOOK_SECRET_<NAME>` in the engine's environment (headless
/// servers), else the OS keychain; none means unsigned.
fn secret(core: &Core, name: &str) -> Option<String> {
    let var = secret_env_var(name);
    if let Some((_, v)) = core.env.iter().find(|(k, _)| *k == var) {
        return Some(v.clone());
    }
    match crate::accounts::keychain::get_secret(&core.settings().keychain_service, &webhook::secret_key(name), &format!("or set {var}")) {
        Ok(secret) => secret,
        Err(e) => {
            tracing::warn!(webhook = name, "{e}; sending unsigned");
            None
        }
    }
}

/// `NIGHTSHIFT_WEBHOOK_SECRET_TEAM_CHAT` for `team-chat`.
pub fn secret_env_var(name: &str) -> String {
    let slug: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("NIGHTSHIFT_WEBHOOK_SECRET_{slug}")
}

fn masked(core: &Core, mut run: RunRecord) -> RunRecord {
    run.message = run.message.map(|m| core.redactor.redact(&m));
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_twenty_percent() {
        for attempt in 0..6 {
            for id in ["01a", "01b", "01m8pbcedhv34yb9rc2jkm7hcs"] {
                let j = jitter(Duration::from_secs(100), id, attempt);
                assert!((Duration::from_secs(80)..=Duration::from_secs(120)).contains(&j), "{j:?}");
            }
        }
    }

    #[test]
    fn secret_variables_are_named_after_the_webhook() {
        assert_eq!(secret_env_var("team-chat"), "NIGHTSHIFT_WEBHOOK_SECRET_TEAM_CHAT");
    }
}
