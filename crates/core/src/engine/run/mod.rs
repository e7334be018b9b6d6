//! A run's life, one module per step: `queue` (a queued row; dispatch passes decided by
//! `lanes`) → `driver` (preflight, each try prepared by `attempt` — in its sandbox, `sandboxing` — and watched by `supervise`; the
//! run as they all see it is `live`; this engine holds it through `followed`; `retry` decides what
//! follows a try, `remote_run` is a try on another machine — over SSH, or on GitHub Actions through
//! `actions_run`) → `finalize`, the one way a run becomes
//! final, one pass down: `judge` (how it ended, and the verdict; `approval` when it must ask after it) → `closing` (its files closed) →
//! `record` (the final row and its outbox entries) → `announce` (everyone told). `recovery` takes
//! over what a dead engine left.

pub(crate) mod actions_run;
pub(crate) mod announce;
pub(crate) mod approval;
pub(crate) mod attempt;
pub(crate) mod closing;
pub(crate) mod driver;
pub(crate) mod finalize;
pub(crate) mod judge;
pub mod lanes;
pub(crate) mod live;
pub(crate) mod queue;
pub(crate) mod record;
pub(crate) mod recovery;
pub(crate) mod remote_run;
pub(crate) mod retry;
pub(crate) mod sandboxing;
pub(crate) mod supervise;
