//! Run commands: a page of history, a run's detail and log, cancel, and a run's git work (push
//! again, open its folder).

use super::{blocking, Face};
use crate::error::{Error, ErrorCode, Result};
use crate::Engine;
use serde::Serialize;
use crate::run::{RunRecord, RunStatus};
use crate::store::{DeliveryRow, Page, RunQuery};
use crate::view::explain::{explain, Explanation};
use crate::view::log::{run_log, LogChunk, LogStream};

/// Page sizes the window may ask for: enough to fill a tall window, never the whole history.
const MAX_PAGE: usize = 200;

/// "Push again": a worktree run's branch pushed now; the run as it is afterwards (its
/// `changes.push` says how it went).
pub async fn push_branch(engine: &Engine, id: &str) -> Result<crate::run::RunRecord> {
    engine.retry_push(id).await
}

/// "Open folder": a run's worktree — or its repository, once the worktree is cleaned up or for a
/// run in `cwd` — in the system's file manager.
pub fn open_workspace(engine: &Engine, face: &dyn Face, id: &str) -> Result<()> {
    let run = engine.run(id)?;
    let changes = run.changes.ok_or_else(|| Error::new(ErrorCode::Usage, format!("run {} did not work in a git repository", run.id)))?;
    face.open_file(std::path::Path::new(&changes.worktree.unwrap_or(changes.repo)))
}

/// One page of history, newest first. `cursor` comes from the previous page's `next_cursor`.
pub async fn list_runs(engine: &Engine, routine: Option<String>, status: Option<String>, cursor: Option<String>, limit: Option<usize>) -> Result<Page> {
    // A word, not the enum, as the argument: a wrong one (a hand-edited `#/history?status=…`) is
    // answered "unknown status …" — the CLI's words — rather than serde's.
    let status = match status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(RunStatus::parse(s).ok_or_else(|| Error::new(ErrorCode::Usage, format!("unknown status {s:?}")))?),
    };
    let query = RunQuery { routine: routine.filter(|r| !r.is_empty()), status, cursor, limit: limit.unwrap_or(50).clamp(1, MAX_PAGE) };
    blocking(engine, move |e| {
        e.runs(&query)
    })
    .await
}

/// Runs that ended at or after `from` (an RFC 3339 time), oldest first, at most `limit` (≤ 200):
/// how a viewer of this home on another machine catches up after a sleep or a lost connection.
pub async fn runs_finished_since(engine: &Engine, from: &str, limit: Option<usize>) -> Result<Vec<RunRecord>> {
    let from = crate::words::parse_time(from).ok_or_else(|| Error::new(ErrorCode::Usage, format!("\"{from}\" is not a time (RFC 3339, e.g. 2026-12-06T02:00:00Z)")))?;
    let limit = limit.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    blocking(engine, move |e| e.runs_finished_since(from, limit)).await
}

/// The finish notification a run is owed here, as this home's own notifier shows it (`None`: its
/// `notify:` wants none): what a viewer on another machine shows.
pub async fn run_notice(engine: &Engine, id: &str) -> Result<Option<crate::notify::Notice>> {
    let id = id.to_string();
    blocking(engine, move |e| e.notice_of(&id)).await
}

/// A run's report as Markdown (secrets masked), or why it has none (`nightshiftctl report`).
pub async fn run_report(engine: &Engine, id: &str) -> Result<String> {
    let id = id.to_string();
    blocking(engine, move |e| e.report_text(&id)).await
}

/// A run for the detail view: the record, what it means, and its report as sanitized HTML.
#[derive(Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct RunDetail {
    pub run: RunRecord,
    pub explanation: Explanation,
    pub report_html: Option<String>,
    /// The routine still exists (Run again is possible).
    pub routine_exists: bool,
    /// Its webhook and heartbeat-ping deliveries (what each receiver got, tries, last error).
    pub deliveries: Vec<DeliveryRow>,
    /// What it changed in git, in one line ("3 files changed, +40 −12 on nightshift/…"), worded
    /// as the notification and the CLI say it.
    pub changes_summary: Option<String>,
    /// For a slot that did not run (missed, skipped, blocked): its fate with the evidence, as
    /// `nightshiftctl why` says it ("missed — machine asleep 01:10–07:55; …").
    pub slot_why: Option<String>,
    /// Where it ran when not here, in words (`ci · run 1234 · acme/app`, `workstation (over SSH)`).
    pub place: Option<String>,
    /// Whether it went in the machine's sandbox: `on`, or `off: <why>` (as `show` says it).
    pub sandbox: Option<String>,
    /// Its routine is a follow-up an agent scheduled: whose ("scheduled by nightly at …").
    pub scheduled_by: Option<String>,
    /// What it asked before a call its routine does not allow (`on_denial: ask`), and what
    /// became of each, oldest first.
    pub asks: Vec<crate::store::Ask>,
    /// Each of `asks` in words, as `show` says it ("Bash(git push …) — approved (desktop, Mon 7
    /// Dec 02:14)"): what the window lists.
    pub asked: Vec<String>,
}

pub async fn get_run(engine: &Engine, id: &str) -> Result<RunDetail> {
    let id = id.to_string();
    blocking(engine, move |e| {
        let run = e.run(&id)?;
        let report_html = run.report_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).map(|md| crate::view::markdown::render(&e.redact(&md)));
        let deliveries = e.deliveries_of(&run.id)?.into_iter().filter(|d| d.webhook.is_some() || d.ping.is_some()).collect();
        let changes_summary = run.changes.as_ref().map(crate::run::Changes::summary);
        let slot_why = match (run.status, run.scheduled_for) {
            (RunStatus::Missed | RunStatus::Skipped | RunStatus::Blocked, Some(slot)) => crate::view::why::slot_sentence(&e, &run.routine, slot).map(|s| e.redact(&s)),
            _ => None,
        };
        let place = run.place();
        let sandbox = crate::sandbox::words_of(std::path::Path::new(&run.run_dir)).map(|w| e.redact(&w));
        let routine = e.routine(&run.routine).ok();
        let scheduled_by = routine.as_ref().and_then(|r| crate::view::lineage::scheduled_by(&e, r));
        let asks = e.asks_of(&run.id)?;
        let tz = routine.as_ref().map(|r| r.timezone).unwrap_or_else(crate::schedule::local_tz);
        let asked = e.rerun_words(&run).into_iter().chain(asks.iter().map(|a| crate::engine::ask_outcome(a, tz))).collect();
        Ok(RunDetail { explanation: explain(&run), routine_exists: routine.is_some(), run, report_html, deliveries, changes_summary, slot_why, place, sandbox, scheduled_by, asks, asked })
    })
    .await
}

/// A chunk of a run's log from `offset`: readable entries, or raw text.
pub async fn read_log(engine: &Engine, id: &str, stream: LogStream, offset: u64, readable: bool) -> Result<LogChunk> {
    let id = id.to_string();
    blocking(engine, move |e| run_log(&e, &id, stream, offset, readable)).await
}

/// The tool calls runs hold while they ask (`on_denial: ask`), oldest first.
pub async fn list_asks(engine: &Engine) -> Result<Vec<crate::store::Ask>> {
    blocking(engine, |e| e.open_asks()).await
}

/// Answer what run `run` asks (the window's Approve, Allow for this run, Deny); an approval after
/// a blocked run starts its rerun (the answer's `rerun`).
pub async fn answer_ask(engine: &Engine, run: &str, allow: bool, for_run: bool) -> Result<crate::store::Ask> {
    let run = run.to_string();
    let ask = blocking(engine, move |e| e.answer_ask(&run, allow, for_run, "window")).await?;
    engine.rerun_if_approved(ask).await
}

/// Cancel a queued or running run. `false` when it had already ended.
pub async fn cancel_run(engine: &Engine, id: &str) -> Result<bool> {
    engine.run(id)?;
    Ok(engine.cancel(id).await)
}
