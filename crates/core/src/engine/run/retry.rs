//! What happens after a try that did not get the work done: try again after a backoff (a failure
//! that says nothing about the work), wait for a rate limit's reset (no other account to fail
//! over to), or settle. One pure decision, so the rules read in one place and test without
//! processes; the driver carries it out (the run goes back to the queue until then, as the same
//! run: one record, one more attempt).
//!
//! Tried again: the API overloaded or unreachable, a host unreachable, an agent killed by a signal
//! Nightshift did not send, a run that could not be started. Never retried: `auth_failed` (the
//! account is revoked), `cancelled`, `blocked`, an agent's own error about the work; a command's non-zero exit and a timeout only when the routine sets
//! `retries:` itself. Never later than the routine's next slot: that slot does the work instead.

use crate::agents::Outcome;
use crate::routine::{Action, RetryPolicy, Routine};
use crate::run::{Attempt, Reason, RunStatus, Trigger};
use chrono::{DateTime, Duration, Utc};

/// How long after a limit's reset a held run starts: the provider gives the reset in whole
/// seconds, and a run that starts a moment early meets the same limit.
pub(crate) const RESET_MARGIN_MS: i64 = 500;
/// A run waits for a limit at most this many times (a provider that keeps moving its reset
/// would otherwise hold it until `max_wait`).
const MAX_LIMIT_WAITS: usize = 3;

/// What the run is, beyond its routine: why it exists and what it was asked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunFacts {
    pub trigger: Trigger,
    /// Its slot, for a scheduled or catch-up run.
    pub scheduled_for: Option<DateTime<Utc>>,
    /// When its first try started.
    pub first_started: DateTime<Utc>,
    /// A manual run that was asked to wait out a limit (`run --wait-for-limit`).
    pub wait_for_limit: bool,
    /// A manual run started past a spent budget (`run --ignore-budget`).
    pub ignore_budget: bool,
}

/// The try that just ended, and the ones before it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TryEnd<'a> {
    pub outcome: &'a Outcome,
    /// Nightshift's own timeout ended it.
    pub timed_out: bool,
    /// The tries before it.
    pub earlier: &'a [Attempt],
    /// The account it ran on.
    pub account: Option<&'a str>,
    /// A next try could continue its agent's session (the agent resumes, the session is known,
    /// and the next try runs on this machine, where the session's files are).
    pub resumable: bool,
}

/// The decision after a try.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Next {
    /// Final now; `note` (if any) is added to its message: why it was not tried again.
    Settle { note: Option<String> },
    /// Back to the queue until `at`, as try number `try_n`; `note` is the waiting row's message.
    Later { at: DateTime<Utc>, note: String, waits_for_limit: bool },
    /// Final now as `interrupted`: a retry would repeat work the try already did (`note` says).
    NotRetried { note: String },
}

/// Decide after the try that `ended`; `jitter`: a number in [0, 1) for the backoff's spread
/// (random in the engine, fixed in tests).
pub(crate) fn after_try(routine: &Routine, run: &RunFacts, ended: &TryEnd<'_>, now: DateTime<Utc>, jitter: f64) -> Next {
    let TryEnd { outcome, timed_out, earlier, .. } = *ended;
    let settle = Next::Settle { note: None };
    let policy = &routine.retry;
    let next_slot = routine.next_slot(run.scheduled_for.unwrap_or(now).max(now));
    let tz = routine.timezone;
    let local = |t: DateTime<Utc>| t.with_timezone(&tz).format("%H:%M:%S %Z").to_string();
    if outcome.status() == RunStatus::Completed || outcome.status() == RunStatus::Cancelled {
        return settle;
    }
    if outcome.reason == Some(Reason::RateLimited) {
        return after_limit(policy, run, ended, now, next_slot, &local);
    }
    let explicit = policy.retries.is_some();
    let transient = match outcome.reason {
        // Could not be started (an agent binary missing for the minute an upgrade takes, a host
        // unreachable): a passing reason too — tried again, then said "could not be started".
        Some(Reason::ApiUnavailable | Reason::HostUnreachable | Reason::Killed | Reason::SpawnFailed) => true,
        Some(Reason::ExitNonzero) => explicit && matches!(routine.action, Action::Command { .. }),
        None => timed_out && explicit,
        _ => false,
    };
    if !transient {
        return settle;
    }
    // Unattended runs (scheduled, caught up, fired by an event) are tried again by default; a
    // person at the keyboard hears at once.
    let allowed = policy.retries.unwrap_or(if run.trigger.by_hand() { 0 } else { RetryPolicy::DEFAULT_RETRIES }) as usize;
    let used = earlier.iter().filter(|a| a.next_at.is_some() && a.reason != Some(Reason::RateLimited)).count();
    if used >= allowed {
        return match allowed {
            0 => settle,
            n => Next::Settle { note: Some(format!("failed after {} tries", n + 1)) },
        };
    }
    // A try that already changed things is not started again from scratch: the next one
    // continues the agent's own session where it can; else the run ends here.
    if outcome.work > 0 && !ended.resumable && !policy.after_work {
        let n = outcome.work;
        return Next::NotRetried {
            note: format!("not retried: it had already run {n} tool call{} that change things (commands, edits); rerun it by hand, or set `retry_after_work: true`", if n == 1 { "" } else { "s" }),
        };
    }
    let at = now + backoff(policy, used, jitter);
    if let Some(slot) = next_slot.filter(|slot| at >= *slot) {
        return Next::Settle { note: Some(format!("not retried: the next try ({}) would come after the next slot ({}), which runs instead", local(at), local(slot))) };
    }
    let what = outcome.reason.map(|r| r.label()).unwrap_or_else(|| outcome.status().label());
    let tries = earlier.len() + 1;
    let resumes = match (outcome.work > 0 && ended.resumable, outcome.session_id.as_deref()) {
        (true, Some(session)) => format!(", continuing session {session}"),
        _ => String::new(),
    };
    Next::Later { at, note: format!("{what} on try {tries}; try {} of {} at {}{resumes}", tries + 1, allowed + 1 + earlier.len() - used, local(at)), waits_for_limit: false }
}

/// A rate limit with no other account to go to: wait for its reset when the run may (scheduled
/// and catch-up runs; a manual one asked to), within `max_wait` and before the next slot.
fn after_limit(policy: &RetryPolicy, run: &RunFacts, ended: &TryEnd<'_>, now: DateTime<Utc>, next_slot: Option<DateTime<Utc>>, local: &dyn Fn(DateTime<Utc>) -> String) -> Next {
    let TryEnd { outcome, earlier, account, .. } = *ended;
    let may_wait = run.wait_for_limit || !run.trigger.by_hand();
    let Some(reset) = outcome.resets_at else {
        return Next::Settle { note: None };
    };
    let at = reset.max(now) + Duration::milliseconds(RESET_MARGIN_MS);
    if !may_wait {
        return Next::Settle { note: Some(format!("the limit resets at {}; `--wait-for-limit` waits for it", local(reset))) };
    }
    let waits = earlier.iter().filter(|a| a.next_at.is_some() && a.reason == Some(Reason::RateLimited)).count();
    if waits >= MAX_LIMIT_WAITS {
        return Next::Settle { note: Some(format!("not waited for again: the limit was still there after {waits} waits for its reset")) };
    }
    let max_wait = Duration::from_std(policy.max_wait).unwrap_or(Duration::hours(12));
    if at - run.first_started > max_wait {
        return Next::Settle { note: Some(format!("not waited for: the limit resets at {}, later than `max_wait` ({}) allows", local(reset), humantime::format_duration(policy.max_wait))) };
    }
    if let Some(slot) = next_slot.filter(|slot| at >= *slot) {
        return Next::Settle { note: Some(format!("not waited for: the limit resets at {}, after the next slot ({}), which runs instead", local(reset), local(slot))) };
    }
    let on = account.map(|a| format!(" on {a}")).unwrap_or_default();
    Next::Later { at, note: format!("waiting for the rate limit{on} to reset at {}", local(reset)), waits_for_limit: true }
}

/// `message` with `note` added ("…; failed after 3 tries"), or the note alone.
pub(crate) fn with_note(message: Option<&str>, note: &str) -> String {
    match message.filter(|m| !m.is_empty()) {
        Some(m) => format!("{m}; {note}"),
        None => note.to_string(),
    }
}

/// How a run ends that is not tried again after `tries` (its recorded tries): as its last try
/// did — a wait for a free account is a try that did not start, recorded `blocked`, so a run
/// whose last try could not start ends `blocked` — with `note` saying why there is no further one.
pub(crate) fn ending_of(tries: &[Attempt], note: &str) -> Outcome {
    let last = tries.last();
    Outcome {
        status: Some(last.map_or(RunStatus::Failed, |a| a.status)),
        reason: last.and_then(|a| a.reason),
        message: Some(with_note(last.and_then(|a| a.message.as_deref()), note)),
        resets_at: last.and_then(|a| a.resets_at),
        ..Outcome::default()
    }
}

/// The wait before retry number `used + 1`: the backoff doubled per earlier retry, spread ±20 %
/// (`jitter` in [0, 1)), never more than an hour.
pub(crate) fn backoff(policy: &RetryPolicy, used: usize, jitter: f64) -> Duration {
    let base = policy.backoff.as_secs_f64() * 2f64.powi(used.min(20) as i32);
    let spread = base * (0.8 + 0.4 * jitter.clamp(0.0, 1.0));
    let capped = spread.min(RetryPolicy::MAX_BACKOFF.as_secs_f64());
    Duration::milliseconds((capped * 1000.0) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn routine(yaml: &str) -> Routine {
        let schedule = if yaml.contains("schedule:") { "" } else { "schedule: \"0 2 * * *\"\n" };
        let text = format!("{schedule}timezone: UTC\n{yaml}");
        crate::routine::parse_routine(&text, std::path::Path::new("/r/nightly.yaml"), "nightly.yaml").unwrap()
    }
    fn agent() -> Routine {
        routine("agent: claude\nprompt: hi\n")
    }
    fn facts(trigger: Trigger) -> RunFacts {
        let t = Utc.with_ymd_and_hms(2026, 12, 2, 2, 0, 0).unwrap();
        RunFacts { trigger, scheduled_for: Some(t), first_started: t, wait_for_limit: false, ignore_budget: false }
    }
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 2, 2, 5, 0).unwrap()
    }
    fn failed(reason: Reason) -> Outcome {
        Outcome::failed(reason, "x")
    }
    fn retried(reason: Reason) -> Attempt {
        Attempt { account: None, status: RunStatus::Failed, reason: Some(reason), message: None, resets_at: None, started_at: None, finished_at: None, next_at: Some(now()), session: None, work: 0, resumed: None }
    }

    /// A try that already changed things is continued where its session can be, else not
    /// started again from the top (`interrupted`) unless the routine says `retry_after_work`; a
    /// try that changed nothing is retried as ever.
    #[test]
    fn a_try_that_changed_things_is_continued_or_not_started_again() {
        let r = agent();
        let worked = Outcome { work: 3, session_id: Some("s-1".into()), ..failed(Reason::ApiUnavailable) };
        let end = |resumable| TryEnd { outcome: &worked, timed_out: false, earlier: &[], account: None, resumable };
        let Next::Later { note, .. } = after_try(&r, &facts(Trigger::Schedule), &end(true), now(), 0.5) else { panic!("continued") };
        assert_eq!(note, "api unavailable on try 1; try 2 of 3 at 02:06:00 UTC, continuing session s-1");
        assert_eq!(
            after_try(&r, &facts(Trigger::Schedule), &end(false), now(), 0.5),
            Next::NotRetried { note: "not retried: it had already run 3 tool calls that change things (commands, edits); rerun it by hand, or set `retry_after_work: true`".into() }
        );
        let anyway = routine("agent: claude\nprompt: hi\nretry_after_work: true\n");
        let Next::Later { note, .. } = after_try(&anyway, &facts(Trigger::Schedule), &end(false), now(), 0.5) else { panic!("from the top, as asked") };
        assert_eq!(note, "api unavailable on try 1; try 2 of 3 at 02:06:00 UTC");
        // A person's run is not retried at all: its reason stands.
        assert_eq!(after_try(&r, &facts(Trigger::Manual), &end(false), now(), 0.5), Next::Settle { note: None });
        // Nothing changed yet: retried as ever.
        let read_only = Outcome { session_id: Some("s-2".into()), ..failed(Reason::ApiUnavailable) };
        let Next::Later { note, .. } = after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &read_only, timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5) else { panic!() };
        assert!(!note.contains("continuing"), "{note}");
    }

    #[test]
    fn a_transient_failure_of_a_scheduled_run_is_tried_twice_more_with_doubling_backoff() {
        let r = agent();
        let first = after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &failed(Reason::ApiUnavailable), timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5);
        let Next::Later { at, note, .. } = first else { panic!("{first:?}") };
        assert_eq!(at, now() + Duration::seconds(60));
        assert_eq!(note, "api unavailable on try 1; try 2 of 3 at 02:06:00 UTC");
        let second = after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &failed(Reason::Killed), timed_out: false, earlier: &[retried(Reason::ApiUnavailable)], account: None, resumable: false }, now(), 0.5);
        assert!(matches!(second, Next::Later { at, .. } if at == now() + Duration::seconds(120)), "{second:?}");
        let third = after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &failed(Reason::ApiUnavailable), timed_out: false, earlier: &[retried(Reason::ApiUnavailable), retried(Reason::ApiUnavailable)], account: None, resumable: false }, now(), 0.5);
        assert_eq!(third, Next::Settle { note: Some("failed after 3 tries".into()) });
        // A run that could not be started (its agent's binary missing for a moment) too.
        assert!(matches!(after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &failed(Reason::SpawnFailed), timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5), Next::Later { .. }));
        assert_eq!(after_try(&r, &facts(Trigger::Manual), &TryEnd { outcome: &failed(Reason::SpawnFailed), timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5), Next::Settle { note: None }, "a manual run says so at once");
    }

    #[test]
    fn what_says_something_about_the_work_is_never_retried() {
        let r = agent();
        for reason in [Reason::AuthFailed, Reason::AgentError, Reason::ExitNonzero] {
            assert_eq!(after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &failed(reason), timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5), Next::Settle { note: None }, "{reason}");
        }
        let timed_out = Outcome { status: Some(RunStatus::TimedOut), ..Outcome::default() };
        assert_eq!(after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &timed_out, timed_out: true, earlier: &[], account: None, resumable: false }, now(), 0.5), Next::Settle { note: None });
        let cancelled = Outcome { status: Some(RunStatus::Cancelled), ..Outcome::default() };
        assert_eq!(after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &cancelled, timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5), Next::Settle { note: None });
    }

    #[test]
    fn manual_runs_are_not_retried_unless_the_routine_asks_and_then_a_command_exit_counts_too() {
        let r = agent();
        assert_eq!(after_try(&r, &facts(Trigger::Manual), &TryEnd { outcome: &failed(Reason::ApiUnavailable), timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5), Next::Settle { note: None });
        let cmd = routine("command: exit 3\n");
        assert_eq!(after_try(&cmd, &facts(Trigger::Schedule), &TryEnd { outcome: &failed(Reason::ExitNonzero), timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5), Next::Settle { note: None });
        let asks = routine("command: exit 3\nretries: 1\nretry_backoff: 5s\n");
        let next = after_try(&asks, &facts(Trigger::Manual), &TryEnd { outcome: &failed(Reason::ExitNonzero), timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.0);
        assert!(matches!(next, Next::Later { at, .. } if at == now() + Duration::seconds(4)), "{next:?}");
        let timed_out = Outcome { status: Some(RunStatus::TimedOut), ..Outcome::default() };
        assert!(matches!(after_try(&asks, &facts(Trigger::Manual), &TryEnd { outcome: &timed_out, timed_out: true, earlier: &[], account: None, resumable: false }, now(), 0.0), Next::Later { .. }));
    }

    #[test]
    fn a_retry_that_would_come_after_the_next_slot_is_left_to_that_slot() {
        let r = routine("agent: claude\nprompt: hi\nschedule: \"*/10 * * * *\"\nretry_backoff: 1h\n");
        let next = after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &failed(Reason::ApiUnavailable), timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5);
        let Next::Settle { note: Some(note) } = next else { panic!("{next:?}") };
        assert!(note.starts_with("not retried: the next try (03:05:00 UTC) would come after the next slot (02:10:00 UTC)"), "{note}");
    }

    #[test]
    fn backoff_doubles_spreads_and_stops_at_an_hour() {
        let p = RetryPolicy::default();
        assert_eq!(backoff(&p, 0, 0.0), Duration::seconds(48));
        assert_eq!(backoff(&p, 0, 1.0), Duration::seconds(72));
        assert_eq!(backoff(&p, 3, 0.5), Duration::seconds(480));
        assert_eq!(backoff(&p, 12, 0.5), Duration::seconds(3600));
    }

    #[test]
    fn a_limit_is_waited_for_until_its_reset_by_scheduled_runs_and_when_asked() {
        let r = agent();
        let reset = now() + Duration::minutes(30);
        let limited = Outcome { resets_at: Some(reset), ..failed(Reason::RateLimited) };
        let next = after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &limited, timed_out: false, earlier: &[], account: Some("work@acme.dev"), resumable: false }, now(), 0.5);
        assert_eq!(next, Next::Later { at: reset + Duration::milliseconds(RESET_MARGIN_MS), note: "waiting for the rate limit on work@acme.dev to reset at 02:35:00 UTC".into(), waits_for_limit: true });
        let manual = after_try(&r, &facts(Trigger::Cli), &TryEnd { outcome: &limited, timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5);
        assert_eq!(manual, Next::Settle { note: Some("the limit resets at 02:35:00 UTC; `--wait-for-limit` waits for it".into()) });
        let asked = RunFacts { wait_for_limit: true, ..facts(Trigger::Cli) };
        assert!(matches!(after_try(&r, &asked, &TryEnd { outcome: &limited, timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5), Next::Later { .. }));
        // No reset time known: nothing to wait for.
        assert_eq!(after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &failed(Reason::RateLimited), timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5), Next::Settle { note: None });
    }

    #[test]
    fn a_limit_past_max_wait_or_the_next_slot_is_not_waited_for() {
        let r = routine("agent: claude\nprompt: hi\nmax_wait: 1h\n");
        let limited = Outcome { resets_at: Some(now() + Duration::hours(2)), ..failed(Reason::RateLimited) };
        let next = after_try(&r, &facts(Trigger::Schedule), &TryEnd { outcome: &limited, timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5);
        assert!(matches!(&next, Next::Settle { note: Some(n) } if n.contains("later than `max_wait` (1h) allows")), "{next:?}");
        let hourly = routine("agent: claude\nprompt: hi\nschedule: \"0 * * * *\"\n");
        let next = after_try(&hourly, &facts(Trigger::Schedule), &TryEnd { outcome: &limited, timed_out: false, earlier: &[], account: None, resumable: false }, now(), 0.5);
        assert!(matches!(&next, Next::Settle { note: Some(n) } if n.contains("after the next slot (03:00:00 UTC)")), "{next:?}");
    }
}
