//! Typed engine events on a broadcast channel. Both faces (tray app, `nightshiftctl`) subscribe;
//! the tray icon, menu, notifications and UI are driven from these, never from polling.

use crate::run::RunRecord;
use serde::{Deserialize, Serialize};

/// A run's record travels boxed: the channel keeps 1024 events in slots the size of the largest
/// variant, and a record by value (~800 bytes) made that 786 KB resident in every engine.
/// (`Deserialize`: a viewer on another machine reads them from that home's `serve`.)
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub enum EngineEvent {
    RunQueued { run: Box<RunRecord> },
    RunStarted { run: Box<RunRecord> },
    /// A human line about a live run, e.g. "API retry 3/10: authentication_failed".
    RunProgress { run_id: String, routine: String, message: String },
    RunFinished { run: Box<RunRecord> },
    /// A settled run's record changed: its branch was pushed, a push try failed, or it gave up.
    RunUpdated { run: Box<RunRecord> },
    RoutinesChanged,
    /// An account's health verdict changed, or accounts were added/removed.
    AccountsChanged,
    /// A routine was paused automatically (too many failures in a row).
    RoutinePaused { routine: String, reason: String },
    /// A webhook gave up on a run (after its last try, or refused): said once per webhook until
    /// one of its posts succeeds again.
    WebhookFailed { webhook: String, run_id: String, routine: String, error: String },
    /// Something about an account the user should hear of that is not a verdict: a usage window
    /// the usage probe saw pass 80 % or 95 %, or the probe failing (a desktop notice).
    AccountNotice { account: String, summary: String, body: String },
    /// A run holds a tool call while it asks the user (`on_denial: ask`): `what` is the call in
    /// words (`Bash(git push origin fix/deps)`, inert text), `until` when no answer is a refusal.
    ApprovalAsked { run_id: String, routine: String, what: String, until: String },
    /// That ask was answered — `allow`, `deny` or `timeout` — and where (`desktop`, `window`,
    /// `cli`, `timeout`).
    ApprovalAnswered { run_id: String, routine: String, what: String, answer: String, by: String },
    /// Routine `routine` no longer answers reviews of pull request `pull` (`owner/name#n`,
    /// `on_review: rerun`): its last round was answered, a round changed nothing, or a review came
    /// after that — `why` in words. Said on the desktop: a person waits for an answer.
    ReviewLoopEnded { routine: String, pull: String, why: String },
    /// Counts the tray icon shows.
    EngineState { running: usize, queued: usize, paused: bool },
}

pub type EventSender = tokio::sync::broadcast::Sender<EngineEvent>;
pub type EventReceiver = tokio::sync::broadcast::Receiver<EngineEvent>;
