//! Closing a run's files as it is settled, after the verdict and before its row: what the live
//! scrubber has not covered yet is masked in its logs, what a worktree run left uncommitted is
//! committed on its branch (the change summary goes into the row), and the report is written: a
//! completed run's own, or — any other end — one that explains the verdict. Blocking (call off the async workers); done again by a second settler, it finds
//! nothing left to do and the same summary.

use super::live::{Ending, LiveRun};
use crate::engine::state::Core;
use crate::agents::Outcome;
use crate::run::{Changes, RunStatus};
use crate::run_dir::RunDir;
use crate::runner::scrub;
use std::sync::Arc;

/// What closing the run's files left for its row.
pub(crate) struct Closed {
    /// The report, when it could be written: the agent's, or the verdict's for a run that did not
    /// complete (a completed run without output has none).
    pub report_path: Option<String>,
    /// What the run changed in its git workspace.
    pub changes: Option<Changes>,
    /// Its exit code: the ending's own, else what its wrapper wrote (read only then).
    pub exit_code: Option<i32>,
    /// Blocked or cancelled before it wrote any output (looked at only for those endings).
    pub never_started: bool,
}

/// Close the run's files, off the async workers; `None` only when closing them failed outright
/// (the row is then not written: recovery settles the run from its files).
/// `account`: the account of its last try, which the verdict's report may name.
pub(crate) async fn close(core: &Arc<Core>, run: &LiveRun, ending: &Ending, outcome: &Outcome, account: Option<&str>) -> Option<Closed> {
    let (core, run, ending, outcome, account) = (Arc::clone(core), run.clone(), ending.clone(), outcome.clone(), account.map(str::to_string));
    tokio::task::spawn_blocking(move || close_files(&core, &run, &ending, &outcome, account.as_deref())).await.ok()
}

fn close_files(core: &Core, run: &LiveRun, ending: &Ending, outcome: &Outcome, account: Option<&str>) -> Closed {
    // What the live scrubber has not covered yet (for a run settled from its files: all of it).
    scrub_logs(core, run, true);
    // Its workspace: what a worktree run left uncommitted is committed on its branch, whatever
    // its status; the summary is part of the final row.
    let changes = crate::workspace::started(&run.run_dir).map(|started| {
        let mut c = crate::workspace::finish(&started, &run.routine, &run.id, outcome.status(), &run.run_dir);
        for commit in &mut c.commits {
            commit.subject = core.redactor.redact(&commit.subject);
        }
        c.error = c.error.map(|e| core.redactor.redact(&e));
        c
    });
    let dir = RunDir::at(&run.run_dir);
    let report = match (outcome.status(), &outcome.report) {
        (RunStatus::Completed, report) => report.clone(),
        (status, _) if status.is_final() => verdict_report(core, run, outcome, account),
        _ => None,
    };
    let report_path = report.and_then(|report| {
        let written = std::fs::create_dir_all(&run.run_dir).map_err(|e| e.to_string()).and_then(|()| crate::fsutil::write_atomic(&dir.report(), report.as_bytes()).map_err(|e| e.to_string()));
        match written {
            Ok(()) => Some(dir.report().display().to_string()),
            Err(e) => {
                tracing::error!(run = %run.id, error = %e, "could not write report");
                None
            }
        }
    });
    let exit_code = match ending {
        Ending::Exited(code) => *code,
        _ => crate::runner::process::recorded_exit_code(&run.run_dir),
    };
    let never_started = matches!(ending, Ending::Blocked { .. } | Ending::Cancelled) && !dir.stdout().exists();
    Closed { report_path, changes, exit_code, never_started }
}

/// The report of a run that did not complete: its row as it is about to be written (status,
/// reason, message, account), explained, with the last lines of its output (a command's; an
/// agent's is its event stream) and of its error output as evidence (scrubbed by now).
fn verdict_report(core: &Core, run: &LiveRun, outcome: &Outcome, account: Option<&str>) -> Option<String> {
    let mut rec = core.store.get_run(&run.id).map_err(|e| tracing::warn!(run = %run.id, error = %e, "no verdict report: its row is unreadable")).ok()?;
    (rec.status, rec.reason, rec.message, rec.resets_at) = (outcome.status(), outcome.reason, outcome.message.clone(), outcome.resets_at);
    if let Some(a) = account {
        rec.account = Some(a.to_string());
    }
    let dir = RunDir::at(&run.run_dir);
    let tail = |path: std::path::PathBuf| crate::agents::LogTail::read(&path, 4096).last_lines(3);
    let mut evidence = Vec::new();
    if run.agent == crate::words::Agent::Command {
        evidence.push(("Its output", tail(dir.stdout())));
    }
    evidence.push(("Its error output", tail(dir.stderr())));
    Some(core.redactor.redact(&crate::explain::verdict_report(&rec, &evidence)))
}

/// Mask secrets in the run's logs from where the last scrub stopped (blocking: call off the
/// async workers). While an engine follows a run this happens every few seconds, so settling
/// only has the rest to do; see [`crate::runner::scrub`] for who else scrubs and when.
pub(crate) fn scrub_logs(core: &Core, run: &LiveRun, finished: bool) {
    if let Err(e) = scrub::scrub_run_logs(&core.redactor, &run.run_dir, finished) {
        tracing::warn!(run = %run.id, error = %e, "could not scrub secrets from a log");
    }
}
