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
  event: "event",
  mcp: "mcp",
  approval: "approval",
};

/** Every word shown as a badge — run statuses, routine states, account verdicts — with its tone (CSS `badge-tone-*`) and words. */
export const BADGE = {
  queued: { tone: "pending", label: "queued" },
  running: { tone: "pending", label: "running" },
  completed: { tone: "ok", label: "completed" },
  failed: { tone: "bad", label: "failed" },
  timed_out: { tone: "bad", label: "timed out" },
  cancelled: { tone: "muted", label: "cancelled" },
  blocked: { tone: "bad", label: "blocked" },
  missed: { tone: "bad", label: "missed" },
  skipped: { tone: "warn", label: "skipped" },
  enabled: { tone: "ok", label: "enabled" },
  disabled: { tone: "muted", label: "disabled" },
  paused: { tone: "warn", label: "paused" },
  auto_paused: { tone: "warn", label: "auto-paused" },
  paused_all: { tone: "warn", label: "paused (all)" },
  other_device: { tone: "muted", label: "not on this device" },
  invalid: { tone: "bad", label: "invalid" },
  live: { tone: "ok", label: "live" },
  ok: { tone: "ok", label: "ok" },
  expiring: { tone: "warn", label: "expiring" },
  expired: { tone: "bad", label: "expired" },
  revoked: { tone: "bad", label: "revoked" },
  rate_limited: { tone: "warn", label: "rate limited" },
  unconfigured: { tone: "bad", label: "unconfigured" },
  unknown: { tone: "muted", label: "unknown" },
};

/** The words a person reads for each reason. */
export const REASON_LABEL = {
  auth_failed: "auth failed",
  rate_limited: "rate limited",
  agent_error: "agent error",
  exit_nonzero: "exit nonzero",
  spawn_failed: "spawn failed",
  interrupted: "interrupted",
  auth_preflight: "auth preflight",
  no_account: "no account",
  superseded: "superseded",
  active_run: "active run",
  queue_full: "queue full",
  host_unreachable: "host unreachable",
  no_runner: "no runner",
  api_unavailable: "api unavailable",
  killed: "killed",
  stalled: "stalled",
  missing_secret: "missing secret",
  no_cwd: "no cwd",
  no_hosts: "no hosts",
  no_sandbox: "no sandbox",
  permission_denied: "permission denied",
  needs_approval: "needs approval",
  budget: "budget",
};

/** Verdicts of accounts whose runs cannot sign in until someone logs in again. */
export const NEEDS_LOGIN = ["expired", "revoked", "unconfigured"];

/** The permission modes a routine may ask for, as a form offers them: [word, words]. */
export const MODES = [
  ["auto", "auto — the agent decides (default)"],
  ["plan", "plan — read only"],
  ["edit", "edit — may edit files in the folder"],
  ["skip", "skip — no permission checks"],
];
