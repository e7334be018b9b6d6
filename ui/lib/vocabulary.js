// Generated from crates/core/src/view/vocabulary.rs — do not edit: a test fails when this file and the
// engine disagree; `NIGHTSHIFT_BLESS=1 cargo test -p nightshift-core vocabulary` writes it again.

/** Every run status, in the engine's order. */
export const STATUSES = ["queued", "running", "completed", "failed", "timed_out", "cancelled", "blocked", "missed", "skipped"];

/** How a run with each status looks (CSS `tone-*`). */
export const STATUS_TONE = {
  queued: "pending",
  running: "pending",
  completed: "ok",
  failed: "bad",
  timed_out: "bad",
  cancelled: "muted",
  blocked: "bad",
  missed: "bad",
  skipped: "warn",
};

/** The words a person reads for each status. */
export const STATUS_LABEL = {
  queued: "queued",
  running: "running",
  completed: "completed",
  failed: "failed",
  timed_out: "timed out",
  cancelled: "cancelled",
  blocked: "blocked",
  missed: "missed",
  skipped: "skipped",
};

/** Statuses of runs that never started a process (drawn lighter beside those that ran). */
export const NEVER_STARTED = ["blocked", "missed", "skipped"];

/** Statuses of runs that are not final yet: their record can still change. */
export const LIVE = ["queued", "running"];

/** The words a person reads for each trigger. */
export const TRIGGER_LABEL = {
  schedule: "schedule",
  manual: "manual",
  catchup: "catch-up",
  cli: "cli",
};
