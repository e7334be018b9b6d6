//! Keeping a home tidy while it is scheduled: `housekeeping` (worktree runs' pushes from the outbox,
//! old worktrees removed, and room made for a new one under `max_worktrees`) and `retention` (old
//! runs' files removed, their rows kept).

pub(crate) mod housekeeping;
pub(crate) mod pull_requests;
pub(crate) mod retention;
