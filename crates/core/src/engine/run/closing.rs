//! Closing a run's files as it is settled, after the verdict and before its row: what the live
//! scrubber has not covered yet is masked in its logs, what a worktree run left uncommitted is
//! committed on its branch (the change summary goes into the row), and a completed run's report
//! is written. Blocking (call off the async workers); done again by a second settler, it finds
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
    /// The report, when the run completed with one and it could be written.
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
pub(crate) async fn close(core: &Arc<Core>, run: &LiveRun, ending: &Ending, outcome: &Outcome) -> Option<Closed> {
    let (core, run, ending, outcome) = (Arc::clone(core), run.clone(), ending.clone(), outcome.clone());
    tokio::task::spawn_blocking(move || close_files(&core, &run, &ending, &outcome)).await.ok()
}

fn close_files(core: &Core, run: &LiveRun, ending: &Ending, outcome: &Outcome) -> Closed {
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
    let report_path = match (outcome.status(), &outcome.report) {
        (RunStatus::Completed, Some(report)) => match crate::fsutil::write_atomic(&dir.report(), report.as_bytes()) {
            Ok(()) => Some(dir.report().display().to_string()),
            Err(e) => {
                tracing::error!(run = %run.id, error = %e, "could not write report");
                None
            }
        },
        _ => None,
    };
    let exit_code = match ending {
        Ending::Exited(code) => *code,
        _ => crate::runner::process::recorded_exit_code(&run.run_dir),
    };
    let never_started = matches!(ending, Ending::Blocked { .. } | Ending::Cancelled) && !dir.stdout().exists();
    Closed { report_path, changes, exit_code, never_started }
}

/// Mask secrets in the run's logs from where the last scrub stopped (blocking: call off the
/// async workers). While an engine follows a run this happens every few seconds, so settling
/// only has the rest to do; see [`crate::runner::scrub`] for who else scrubs and when.
pub(crate) fn scrub_logs(core: &Core, run: &LiveRun, finished: bool) {
    if let Err(e) = scrub::scrub_run_logs(&core.redactor, &run.run_dir, finished) {
        tracing::warn!(run = %run.id, error = %e, "could not scrub secrets from a log");
    }
}
