//! Finish notifications: whether a run deserves one (the routine's `notify:` policy), what it
//! says, and sending it without ever holding up settling. Exactly-once delivery, retries and
//! "not delivered" live in the engine's outbox deliverer.
//!
//! The sending itself goes through [`Notifier`]; the tray app and `nightshiftctl daemon --notify`
//! provide a desktop implementation (notify-rust), tests a recorder or a real D-Bus server.

use crate::routine::NotifyPolicy;
use crate::run::{Reason, RunRecord, RunStatus, Trigger};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a notification server may take to accept one notification.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Notice {
    /// "✓ pr-review · 4m 12s"
    pub summary: String,
    /// The report's first line or the failure's message (≤ 140 characters).
    pub body: String,
    /// The run to open when the notification is clicked.
    pub run_id: Option<String>,
    pub critical: bool,
    /// The run waits for an answer (`on_denial: ask`): the notification offers Approve and Deny.
    #[serde(default)]
    pub asks: bool,
    /// Notices with the same tag replace each other on the desktop (an ask's notification becomes
    /// its answer: "✓ deps: approved (phone, 02:14)").
    #[serde(default)]
    pub tag: Option<String>,
}

impl Notice {
    /// The notice with one more line in its body.
    pub fn with_line(mut self, line: &str) -> Notice {
        if !self.body.is_empty() {
            self.body.push('\n');
        }
        self.body.push_str(line);
        self
    }
}

pub trait Notifier: Send + Sync + 'static {
    /// Show one notification. May block; callers bound it with a timeout on its own thread.
    fn send(&self, notice: &Notice) -> Result<(), String>;
}

/// The notification for a finished run under `policy`, or `None` when it should stay quiet.
/// `report` is the run's report text when it has one.
pub fn notice_for(run: &RunRecord, policy: NotifyPolicy, report: Option<&str>, timeout: Option<Duration>) -> Option<Notice> {
    // Bookkeeping rows (a slot that was missed or skipped) never notify; history shows them.
    if matches!(run.status, RunStatus::Missed | RunStatus::Skipped | RunStatus::Queued | RunStatus::Running) {
        return None;
    }
    let failed = run.status.is_failure();
    if !policy.wants(failed) {
        return None;
    }
    let mut name = if run.trigger == Trigger::Catchup { format!("↻ {} ({})", run.routine, Trigger::Catchup.label()) } else { run.routine.clone() };
    // A run on another machine says which.
    if let Some(host) = &run.host {
        name = format!("{name} on {host}");
    }
    let took = run.duration_ms.map(crate::words::duration).unwrap_or_default();
    let login = matches!(run.reason, Some(Reason::AuthFailed | Reason::AuthPreflight | Reason::NoAccount));
    // A run that got there on a later try says how: the night's work was not lost to an outage.
    let waited = run.attempts.iter().any(|a| a.next_at.is_some() && a.reason == Some(Reason::RateLimited));
    let retried = run.attempts.iter().any(|a| a.next_at.is_some() && a.reason != Some(Reason::RateLimited));
    let after = match (retried, waited) {
        (_, true) => " · after waiting for the limit",
        (true, false) => " · after a retry",
        _ => "",
    };
    let summary = match run.status {
        RunStatus::Completed if run.trigger == Trigger::Catchup => format!("{name} · {took}{after}"),
        RunStatus::Completed => format!("✓ {name} · {took}{after}"),
        RunStatus::TimedOut => format!(
            "⏱ {name} timed out after {}",
            timeout.map(|t| humantime::format_duration(t).to_string()).unwrap_or(took)
        ),
        _ if login => format!("✗ {name} · login needed for {}", run.account.as_deref().unwrap_or("its account")),
        RunStatus::Failed if run.reason == Some(Reason::RateLimited) => format!("✗ {name} · rate limited"),
        RunStatus::Cancelled => format!("– {name} cancelled"),
        RunStatus::Blocked if run.reason == Some(Reason::NeedsApproval) => format!("? {name} · needs approval"),
        RunStatus::Blocked => format!("✗ {name} · blocked"),
        _ => format!("✗ {name} · {}", run.reason.map(|r| r.as_str()).unwrap_or("failed")),
    };
    let body = match (run.status, report, &run.message) {
        (RunStatus::Completed, Some(r), _) => crate::words::first_line(r, 140),
        (_, _, Some(m)) => crate::words::first_line(m, 140),
        _ => String::new(),
    };
    // What it changed, in git: "3 files changed, +40 −12 on nightshift/pr-review/01j…"; what it
    // was refused: "2 tool calls refused: Bash(git push), …" (unless the message says it already).
    let refused = (!run.denials.is_empty() && !matches!(run.reason, Some(Reason::PermissionDenied | Reason::NeedsApproval))).then(|| crate::run::denials_words(&run.denials));
    // On GitHub Actions: which workflow run of which repository ("on ci · run 1234 · acme/app").
    let actions = run.remote_url.is_some().then(|| run.place().map(|p| format!("on {p}"))).flatten();
    // Blocked for an approval: Approve and Deny on the notification itself (Approve reruns it).
    let asks = run.reason == Some(Reason::NeedsApproval);
    let notice = Notice { summary, body, run_id: Some(run.id.clone()), critical: failed, asks, tag: asks.then(|| format!("ask:{}", run.id)) };
    Some(run.changes.as_ref().map(|c| c.summary()).into_iter().chain(refused).chain(actions).fold(notice, |n, line| n.with_line(&line)))
}

/// "✗ nightly · push failed": a worktree run whose branch could not be pushed after every try —
/// told on its own, after the run's finish notification; `None` once the push is no longer failed
/// (it went through after all).
pub fn push_failed_notice(run: &RunRecord) -> Option<Notice> {
    let changes = run.changes.as_ref()?;
    let push = changes.push.as_ref().filter(|p| p.state == crate::run::PushState::Failed)?;
    let error = push.error.as_deref().map(|e| crate::words::first_line(e, 140)).unwrap_or_else(|| "it was refused".into());
    let branch = changes.branch.as_deref().unwrap_or("its branch");
    Some(Notice {
        summary: format!("✗ {} · push failed: {error}", run.routine),
        body: format!("{branch} was not pushed to {} after {} tries; the branch is kept here — `nightshiftctl push {}` tries again", push.remote, push.tries, run.id),
        run_id: Some(run.id.clone()),
        critical: true,
        asks: false,
        tag: None,
    })
}

/// "⏳ nightly waits for the limit at 04:12": a run that met a rate limit (its last try's reason)
/// and waits in the queue for the reset, as the next try of the same run; `None` for any other
/// queued run.
pub fn waiting_notice(run: &RunRecord, tz: chrono_tz::Tz) -> Option<Notice> {
    let due = run.due_at.filter(|_| run.status == RunStatus::Queued)?;
    let last = run.attempts.last().filter(|a| a.reason == Some(Reason::RateLimited))?;
    let on = last.account.as_deref().map(|a| format!(" on {a}")).unwrap_or_default();
    Some(Notice {
        summary: format!("⏳ {} waits for the limit{on} · at {}", run.routine, due.with_timezone(&tz).format("%H:%M")),
        body: run.message.as_deref().map(|m| crate::words::first_line(m, 140)).unwrap_or_default(),
        run_id: Some(run.id.clone()),
        critical: false,
        asks: false,
        tag: None,
    })
}

/// The notice of a slot that ended with nothing done (`notify_missed`): the routine has gone
/// quiet. `last_ran`: when it last ran; `absence`: why no scheduler was there at the slot
/// ("machine asleep 01:10–07:55"), when that is known. Times in the routine's zone `tz`.
pub fn quiet_notice(run: &RunRecord, last_ran: Option<chrono::DateTime<chrono::Utc>>, absence: Option<&str>, tz: chrono_tz::Tz) -> Notice {
    let since = match last_ran {
        Some(t) => format!("has not run since {}", crate::words::local_day_time(t, tz)),
        None => "has not run yet".to_string(),
    };
    let slot = run.scheduled_for.map(|t| format!("{} ", crate::words::local_day_time(t, tz))).unwrap_or_default();
    let message = run.message.as_deref().unwrap_or("");
    let body = match run.status {
        RunStatus::Skipped => format!("{slot}skipped — {}", message.trim_start_matches("skipped: ")),
        _ => {
            // "missed: Nightshift was not running at this time, and the routine has `catchup: false`"
            let not_made_up = message.split_once(", and ").map(|(_, why)| format!("; {why}")).unwrap_or_default();
            format!("{slot}missed — {}{not_made_up}", absence.unwrap_or("Nightshift was not running"))
        }
    };
    // A skipped slot's routine is busy with the run before, not silent: said as what happened.
    let summary = match run.status {
        RunStatus::Skipped => format!("⚠ {} skipped its {}slot", run.routine, slot),
        _ => format!("⚠ {} {since}", run.routine),
    };
    Notice { summary, body: crate::words::first_line(&body, 200), run_id: Some(run.id.clone()), critical: true, asks: false, tag: None }
}

/// One notification for runs that finished long ago, while nothing could notify (a week away
/// must not bring a storm of stale notifications).
pub fn summary_for(runs: &[RunRecord]) -> Notice {
    let failed = runs.iter().filter(|r| r.status != RunStatus::Completed).count();
    let oldest = runs.iter().filter_map(|r| r.finished_at).min();
    let since = oldest.map(|t| format!(" since {}", t.with_timezone(&chrono::Local).format("%a %H:%M"))).unwrap_or_default();
    let n = runs.len();
    Notice {
        summary: format!("Nightshift · {n} run{} finished while you were away", if n == 1 { "" } else { "s" }),
        body: format!("{} completed, {failed} did not{since} — see History", n - failed),
        run_id: None,
        critical: failed > 0,
        asks: false,
        tag: None,
    }
}

/// Sends notifications through a [`Notifier`] one at a time, each bounded by [`SEND_TIMEOUT`] on
/// a thread of its own: a send waits for the one before it (at most that long), then goes. While
/// an earlier send still hangs (a server that owns the name but never answers), no new thread is
/// started — that try fails at once. A broken server is logged once. (Sends that overlapped used to
/// fail as if the first hung: a live notice — a limit's reset — sent while a finish notification
/// was on its way was lost.)
pub struct BoundedSender {
    notifier: Arc<dyn Notifier>,
    hung: Arc<std::sync::atomic::AtomicBool>,
    /// Held for the length of one bounded send.
    one_at_a_time: Mutex<()>,
    warned: Mutex<bool>,
}

impl BoundedSender {
    pub fn new(notifier: Arc<dyn Notifier>) -> Self {
        BoundedSender { notifier, hung: Default::default(), one_at_a_time: Mutex::new(()), warned: Mutex::new(false) }
    }

    /// Send one notice (blocking: at most twice [`SEND_TIMEOUT`]); `Err` says why it was not shown.
    pub fn send(&self, notice: Notice) -> Result<(), String> {
        use std::sync::atomic::Ordering;
        let _turn = self.one_at_a_time.lock().unwrap_or_else(|e| e.into_inner());
        if self.hung.load(Ordering::SeqCst) {
            return Err("the notification server has not answered an earlier notification yet".into());
        }
        let notifier = Arc::clone(&self.notifier);
        let hung = Arc::clone(&self.hung);
        hung.store(true, Ordering::SeqCst);
        let answer = crate::bounded::within(SEND_TIMEOUT, move || {
            let result = notifier.send(&notice);
            hung.store(false, Ordering::SeqCst);
            result
        });
        let problem = match answer {
            Some(Ok(())) => return Ok(()),
            Some(Err(e)) => format!("the notification server refused: {e}"),
            None => format!("the notification server did not answer within {} s", SEND_TIMEOUT.as_secs()),
        };
        let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
        if !*warned {
            *warned = true;
            tracing::warn!("desktop notifications are not working: {problem} (further failures are not logged)");
        }
        Err(problem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shows each notice after `delay`, counting them.
    struct Slow(Duration, Mutex<usize>);

    impl Notifier for Slow {
        fn send(&self, _: &Notice) -> Result<(), String> {
            std::thread::sleep(self.0);
            *self.1.lock().unwrap() += 1;
            Ok(())
        }
    }

    fn notice() -> Notice {
        Notice { summary: "s".into(), body: "b".into(), run_id: None, critical: false, asks: false, tag: None }
    }

    #[test]
    fn overlapping_sends_both_go_through_one_after_the_other() {
        let slow = Arc::new(Slow(Duration::from_millis(300), Mutex::new(0)));
        let sender = Arc::new(BoundedSender::new(slow.clone()));
        let other = Arc::clone(&sender);
        let first = std::thread::spawn(move || other.send(notice()));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(sender.send(notice()), Ok(()), "the second waits its turn");
        assert_eq!(first.join().unwrap(), Ok(()));
        assert_eq!(*slow.1.lock().unwrap(), 2);
    }

    #[test]
    fn a_send_after_one_that_hung_fails_at_once() {
        let hanging = Arc::new(Slow(SEND_TIMEOUT + Duration::from_secs(10), Mutex::new(0)));
        let sender = BoundedSender::new(hanging);
        let err = sender.send(notice()).unwrap_err();
        assert!(err.contains("did not answer within"), "{err}");
        let t0 = std::time::Instant::now();
        assert_eq!(sender.send(notice()).unwrap_err(), "the notification server has not answered an earlier notification yet");
        assert!(t0.elapsed() < Duration::from_secs(1), "at once");
    }

    fn record(status: RunStatus, reason: Option<Reason>, trigger: Trigger) -> RunRecord {
        RunRecord {
            trigger,
            message: Some("Not logged in · Please run /login".into()),
            exit_code: Some(1),
            duration_ms: Some(252_000),
            ..RunRecord::sample(status, reason)
        }
    }

    #[test]
    fn texts_for_each_ending() {
        let ok = notice_for(&record(RunStatus::Completed, None, Trigger::Schedule), NotifyPolicy::Always, Some("## Title\nrest"), None).unwrap();
        assert_eq!((ok.summary.as_str(), ok.body.as_str(), ok.critical), ("✓ pr-review · 4m 12s", "## Title", false));
        let auth = notice_for(&record(RunStatus::Failed, Some(Reason::AuthFailed), Trigger::Schedule), NotifyPolicy::Always, None, None).unwrap();
        assert_eq!(auth.summary, "✗ pr-review · login needed for work@acme.dev");
        assert_eq!(auth.body, "Not logged in · Please run /login");
        let late = notice_for(&record(RunStatus::TimedOut, None, Trigger::Schedule), NotifyPolicy::Always, None, Some(Duration::from_secs(1800))).unwrap();
        assert_eq!(late.summary, "⏱ pr-review timed out after 30m");
        let caught = notice_for(&record(RunStatus::Completed, None, Trigger::Catchup), NotifyPolicy::Always, Some("done"), None).unwrap();
        assert_eq!(caught.summary, "↻ pr-review (catch-up) · 4m 12s");
        let blocked = notice_for(&record(RunStatus::Blocked, Some(Reason::AuthPreflight), Trigger::Schedule), NotifyPolicy::Failures, None, None).unwrap();
        assert_eq!(blocked.summary, "✗ pr-review · login needed for work@acme.dev");
    }

    #[test]
    fn a_run_on_github_actions_says_which_workflow_run_of_which_repository() {
        let run = RunRecord { host: Some("ci".into()), remote_url: Some("https://github.com/acme/app/actions/runs/1234".into()), ..record(RunStatus::Completed, None, Trigger::Schedule) };
        assert_eq!(run.place().as_deref(), Some("ci · run 1234 · acme/app"));
        let n = notice_for(&run, NotifyPolicy::Always, Some("## Triage"), None).unwrap();
        assert_eq!((n.summary.as_str(), n.body.as_str()), ("✓ pr-review on ci · 4m 12s", "## Triage\non ci · run 1234 · acme/app"));
        let ssh = RunRecord { host: Some("workstation".into()), ..record(RunStatus::Completed, None, Trigger::Schedule) };
        assert_eq!(ssh.place().as_deref(), Some("workstation (over SSH)"));
        assert_eq!(RunRecord::sample(RunStatus::Completed, None).place(), None);
    }

    #[test]
    fn a_run_on_a_host_says_which() {
        let ok = RunRecord { host: Some("workstation".into()), ..record(RunStatus::Completed, None, Trigger::Schedule) };
        assert_eq!(notice_for(&ok, NotifyPolicy::Always, None, None).unwrap().summary, "✓ pr-review on workstation · 4m 12s");
        let down = RunRecord {
            host: Some("workstation".into()),
            message: Some("not started: workstation: ssh: connect to host 10.0.0.2 port 22: No route to host".into()),
            ..record(RunStatus::Blocked, Some(Reason::HostUnreachable), Trigger::Schedule)
        };
        let n = notice_for(&down, NotifyPolicy::Failures, None, None).unwrap();
        assert_eq!((n.summary.as_str(), n.body.as_str()), ("✗ pr-review on workstation · blocked", "not started: workstation: ssh: connect to host 10.0.0.2 port 22: No route to host"));
    }

    #[test]
    fn a_run_that_changed_files_says_what_and_where() {
        let changes = serde_json::from_value(serde_json::json!({
            "workspace": "worktree", "repo": "/r", "branch": "nightshift/pr-review/01j", "base": null, "head": null,
            "commits": [], "files": [], "files_changed": 3, "added": 40, "removed": 12, "worktree": null, "push": null, "error": null
        }))
        .unwrap();
        let run = RunRecord { changes: Some(changes), ..record(RunStatus::Completed, None, Trigger::Schedule) };
        let n = notice_for(&run, NotifyPolicy::Always, Some("All green"), None).unwrap();
        assert_eq!(n.body, "All green\n3 files changed, +40 \u{2212}12 on nightshift/pr-review/01j");
    }

    #[test]
    fn refused_tool_calls_are_in_the_body_once() {
        let d = |tool: &str, input: &str| crate::run::Denial { tool: tool.into(), input: input.into() };
        let denials = vec![d("Bash", "git push"), d("Read", "/etc/shadow"), d("WebFetch", ""), d("Bash", "rm -rf x")];
        let run = RunRecord { denials: denials.clone(), ..record(RunStatus::Completed, None, Trigger::Schedule) };
        let n = notice_for(&run, NotifyPolicy::Always, Some("Done"), None).unwrap();
        assert_eq!(n.body, "Done\n4 tool calls refused: Bash(git push), Read(/etc/shadow), WebFetch and 1 more");
        // `on_denial: fail`: the message says it; the body does not say it twice.
        let message = crate::run::denials_words(&denials[..1]);
        assert_eq!(message, "1 tool call refused: Bash(git push)");
        let failed = RunRecord { denials: denials[..1].to_vec(), message: Some(message.clone()), ..record(RunStatus::Failed, Some(Reason::PermissionDenied), Trigger::Schedule) };
        assert_eq!(notice_for(&failed, NotifyPolicy::Always, None, None).unwrap().body, message);
        // Blocked for an approval: the message names the calls; Approve and Deny on the notice,
        // which the answer's notice replaces (one tag).
        let asked = RunRecord { denials: denials[..1].to_vec(), message: Some("needs approval for Bash(git push) (…)".into()), ..record(RunStatus::Blocked, Some(Reason::NeedsApproval), Trigger::Schedule) };
        let n = notice_for(&asked, NotifyPolicy::Failures, None, None).unwrap();
        assert_eq!((n.summary.as_str(), n.body.as_str(), n.asks, n.tag.as_deref()), ("? pr-review · needs approval", "needs approval for Bash(git push) (…)", true, Some(format!("ask:{}", asked.id).as_str())));
    }

    #[test]
    fn policy_and_bookkeeping_rows() {
        let done = record(RunStatus::Completed, None, Trigger::Schedule);
        assert!(notice_for(&done, NotifyPolicy::Failures, None, None).is_none());
        assert!(notice_for(&done, NotifyPolicy::Never, None, None).is_none());
        assert!(notice_for(&record(RunStatus::Failed, None, Trigger::Schedule), NotifyPolicy::Failures, None, None).is_some());
        assert!(notice_for(&record(RunStatus::Blocked, Some(Reason::AuthPreflight), Trigger::Schedule), NotifyPolicy::Failures, None, None).is_some());
        // A cancel is someone's choice, not a failure: `notify: failures` stays quiet, `always` says it (not urgently).
        let cancelled = record(RunStatus::Cancelled, None, Trigger::Manual);
        assert!(notice_for(&cancelled, NotifyPolicy::Failures, None, None).is_none());
        assert!(!notice_for(&cancelled, NotifyPolicy::Always, None, None).unwrap().critical);
        assert!(notice_for(&record(RunStatus::Missed, Some(Reason::Superseded), Trigger::Schedule), NotifyPolicy::Always, None, None).is_none());
        let mut retried = record(RunStatus::Completed, None, Trigger::Schedule);
        retried.duration_ms = Some(2000);
        let tried = |reason| crate::run::Attempt { account: None, status: RunStatus::Failed, reason: Some(reason), message: None, resets_at: None, started_at: None, finished_at: None, next_at: Some(chrono::Utc::now()), session: None, work: 0, resumed: None };
        retried.attempts = vec![tried(Reason::ApiUnavailable)];
        assert_eq!(notice_for(&retried, NotifyPolicy::Always, None, None).unwrap().summary, "✓ pr-review · 2s · after a retry");
        retried.attempts = vec![tried(Reason::RateLimited)];
        assert_eq!(notice_for(&retried, NotifyPolicy::Always, None, None).unwrap().summary, "✓ pr-review · 2s · after waiting for the limit");
        assert!(notice_for(&record(RunStatus::Skipped, Some(Reason::ActiveRun), Trigger::Schedule), NotifyPolicy::Always, None, None).is_none());
    }

    /// A quiet slot's notice: since when the routine has not run, and why this slot did not.
    #[test]
    fn a_quiet_slot_says_since_when_and_why() {
        let tz = chrono_tz::Tz::UTC;
        let at = |h| chrono::DateTime::parse_from_rfc3339(&format!("2026-11-30T{h:02}:00:00Z")).unwrap().with_timezone(&chrono::Utc);
        let missed = RunRecord {
            scheduled_for: Some(at(5)),
            message: Some("missed: Nightshift was not running at this time, and the slot was 9h 00m late — more than `catchup: 6h` makes up".into()),
            ..RunRecord::sample(RunStatus::Missed, None)
        };
        let n = quiet_notice(&missed, Some(at(4)), Some("machine asleep 04:00–14:00"), tz);
        assert_eq!(n.summary, "⚠ pr-review has not run since Mon 30 Nov 04:00");
        assert_eq!(n.body, "Mon 30 Nov 05:00 missed — machine asleep 04:00–14:00; the slot was 9h 00m late — more than `catchup: 6h` makes up");
        assert!(n.critical);
        let skipped = RunRecord { scheduled_for: Some(at(5)), message: Some("skipped: the previous run (01abc) was still running".into()), ..RunRecord::sample(RunStatus::Skipped, None) };
        let n = quiet_notice(&skipped, None, None, tz);
        assert_eq!((n.summary.as_str(), n.body.as_str()), ("⚠ pr-review skipped its Mon 30 Nov 05:00 slot", "Mon 30 Nov 05:00 skipped — the previous run (01abc) was still running"));
        let unknown = RunRecord { scheduled_for: Some(at(5)), message: None, ..RunRecord::sample(RunStatus::Missed, None) };
        assert_eq!(quiet_notice(&unknown, None, None, tz).body, "Mon 30 Nov 05:00 missed — Nightshift was not running");
    }

    #[test]
    fn a_run_waiting_for_its_limit_says_until_when() {
        let due = chrono::DateTime::parse_from_rfc3339("2026-11-30T04:12:00Z").unwrap().with_timezone(&chrono::Utc);
        let limited = crate::run::Attempt { account: Some("work@acme.dev".into()), status: RunStatus::Failed, reason: Some(Reason::RateLimited), message: None, resets_at: Some(due), started_at: None, finished_at: None, next_at: Some(due), session: None, work: 0, resumed: None };
        let waiting = RunRecord {
            due_at: Some(due),
            attempts: vec![limited.clone()],
            message: Some("waiting for the rate limit on work@acme.dev to reset at 04:12:00 UTC".into()),
            ..RunRecord::sample(RunStatus::Queued, None)
        };
        let n = waiting_notice(&waiting, chrono_tz::Tz::UTC).unwrap();
        assert_eq!((n.summary.as_str(), n.body.as_str(), n.critical), ("⏳ pr-review waits for the limit on work@acme.dev · at 04:12", "waiting for the rate limit on work@acme.dev to reset at 04:12:00 UTC", false));
        let retry = RunRecord { attempts: vec![crate::run::Attempt { reason: Some(Reason::ApiUnavailable), ..limited }], ..waiting.clone() };
        assert!(waiting_notice(&retry, chrono_tz::Tz::UTC).is_none(), "a retry after an outage is not a wait for a limit");
        assert!(waiting_notice(&RunRecord { due_at: None, ..waiting }, chrono_tz::Tz::UTC).is_none());
    }
}
