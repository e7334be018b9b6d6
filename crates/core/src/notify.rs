//! Finish notifications: whether a run deserves one (the routine's `notify:` policy), what it
//! says, and sending it exactly once — without ever holding up settling.
//!
//! The sending itself goes through [`Notifier`]; the tray app and `nightshiftctl daemon --notify`
//! provide a desktop implementation (notify-rust), tests a recorder or a real D-Bus server.

use crate::routine::NotifyPolicy;
use crate::run::{Reason, RunRecord, RunStatus, Trigger};
use crate::runner::SettleHook;
use crate::store::Store;
use serde::Serialize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a notification server may take to accept one notification.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    /// "✓ pr-review · 4m 12s"
    pub summary: String,
    /// The report's first line or the failure's message (≤ 140 characters).
    pub body: String,
    /// The run to open when the notification is clicked.
    pub run_id: Option<String>,
    pub critical: bool,
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
    let failed = run.status != RunStatus::Completed;
    match policy {
        NotifyPolicy::Never => return None,
        NotifyPolicy::Failures if !failed => return None,
        _ => {}
    }
    let name = if run.trigger == Trigger::Catchup { format!("↻ {} (catch-up)", run.routine) } else { run.routine.clone() };
    let took = run.duration_ms.map(crate::view::duration).unwrap_or_default();
    let login = matches!(run.reason, Some(Reason::AuthFailed | Reason::AuthPreflight | Reason::NoAccount));
    let summary = match run.status {
        RunStatus::Completed if run.trigger == Trigger::Catchup => format!("{name} · {took}"),
        RunStatus::Completed => format!("✓ {name} · {took}"),
        RunStatus::TimedOut => format!(
            "⏱ {name} timed out after {}",
            timeout.map(|t| humantime::format_duration(t).to_string()).unwrap_or(took)
        ),
        _ if login => format!("✗ {name} · login needed for {}", run.account.as_deref().unwrap_or("its account")),
        RunStatus::Failed if run.reason == Some(Reason::RateLimited) => format!("✗ {name} · rate limited"),
        RunStatus::Cancelled => format!("– {name} cancelled"),
        RunStatus::Blocked => format!("✗ {name} · blocked"),
        _ => format!("✗ {name} · {}", run.reason.map(|r| r.as_str()).unwrap_or("failed")),
    };
    let body = match (run.status, report, &run.message) {
        (RunStatus::Completed, Some(r), _) => crate::agents::first_line(r, 140),
        (_, _, Some(m)) => crate::agents::first_line(m, 140),
        _ => String::new(),
    };
    Some(Notice { summary, body, run_id: Some(run.id.clone()), critical: failed })
}

/// The settle hook that notifies: policy from the routine, exactly once per run (recorded in the
/// database before sending, so a crash and re-adoption cannot notify twice), sent on a thread of
/// its own with [`SEND_TIMEOUT`]. A missing or hanging server is logged once, and runs keep settling.
pub struct NotifyHook {
    notifier: Arc<dyn Notifier>,
    store: Arc<Store>,
    home: crate::home::Home,
    settings: crate::settings::Settings,
    warned: Mutex<bool>,
}

impl NotifyHook {
    pub fn new(notifier: Arc<dyn Notifier>, store: Arc<Store>, home: crate::home::Home, settings: crate::settings::Settings) -> Self {
        NotifyHook { notifier, store, home, settings, warned: Mutex::new(false) }
    }

    fn policy(&self, run: &RunRecord) -> (NotifyPolicy, Option<Duration>) {
        let set = crate::routine::load_home(&self.home, &self.settings);
        match set.get(&run.routine) {
            Some(r) => (r.notify, Some(r.timeout)),
            None if run.agent == "command" => (NotifyPolicy::Failures, None),
            None => (NotifyPolicy::Always, None),
        }
    }

    /// Send with a bound, from a thread of its own (the caller never waits longer than the bound).
    pub fn send_bounded(&self, notice: Notice) {
        let notifier = Arc::clone(&self.notifier);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(notifier.send(&notice));
        });
        let problem = match rx.recv_timeout(SEND_TIMEOUT) {
            Ok(Ok(())) => return,
            Ok(Err(e)) => format!("the notification server refused: {e}"),
            Err(_) => format!("the notification server did not answer within {} s", SEND_TIMEOUT.as_secs()),
        };
        let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
        if !*warned {
            *warned = true;
            tracing::warn!("desktop notifications are not working: {problem} (further failures are not logged)");
        }
    }
}

impl SettleHook for NotifyHook {
    fn name(&self) -> &str {
        "desktop-notification"
    }

    fn on_settled(&self, run: &RunRecord) -> Result<(), String> {
        let (policy, timeout) = self.policy(run);
        let report = run.report_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
        let Some(notice) = notice_for(run, policy, report.as_deref(), timeout) else { return Ok(()) };
        // Claim first: exactly one notification per run, across processes and crashes.
        if !self.store.mark_notified(&run.id).map_err(|e| e.message)? {
            return Ok(());
        }
        self.send_bounded(notice);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn policy_and_bookkeeping_rows() {
        let done = record(RunStatus::Completed, None, Trigger::Schedule);
        assert!(notice_for(&done, NotifyPolicy::Failures, None, None).is_none());
        assert!(notice_for(&done, NotifyPolicy::Never, None, None).is_none());
        assert!(notice_for(&record(RunStatus::Failed, None, Trigger::Schedule), NotifyPolicy::Failures, None, None).is_some());
        assert!(notice_for(&record(RunStatus::Missed, Some(Reason::Superseded), Trigger::Schedule), NotifyPolicy::Always, None, None).is_none());
        assert!(notice_for(&record(RunStatus::Skipped, Some(Reason::ActiveRun), Trigger::Schedule), NotifyPolicy::Always, None, None).is_none());
    }

    #[test]
    fn a_run_is_notified_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        store
            .insert_run(&crate::store::NewRun {
                id: "n1".into(),
                routine: "r".into(),
                trigger: Trigger::Manual,
                agent: "command".into(),
                status: RunStatus::Running,
                reason: None,
                message: None,
                scheduled_for: None,
                started_at: None,
                finished_at: None,
                account: None,
                run_dir: "/x".into(),
                owner: None,
                sort_at: chrono::Utc::now(),
            })
            .unwrap();
        assert!(store.mark_notified("n1").unwrap());
        assert!(!store.mark_notified("n1").unwrap(), "a second engine (or a re-adoption) does not notify again");
    }
}
