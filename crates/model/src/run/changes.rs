//! What a run's workspace is and what the run changed there — the `changes` of its record (and
//! `workspace.json` in its run directory), as stored and as every face shows them.

use crate::words::string_enum;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub enum WorkspaceKind {
    Cwd,
    Worktree,
}

/// What was set up when the run started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunWorkspace {
    pub kind: WorkspaceKind,
    /// The top of the user's working tree.
    pub repo: PathBuf,
    /// Where the agent runs (inside the worktree for a worktree run).
    pub dir: PathBuf,
    pub worktree: Option<PathBuf>,
    /// The run's branch (worktree), or the checkout's branch at the start (cwd).
    pub branch: Option<String>,
    /// The commit the run started from (`None`: the repository had no commit yet).
    pub base: Option<String>,
    /// `base:` as the routine gave it (cleanup asks whether the run's branch is merged into it).
    pub base_ref: Option<String>,
    /// A cwd run's working tree at the start, as a tree object.
    pub start_tree: Option<String>,
    pub push: Option<String>,
    /// The remote branch this run continues and pushes onto: its routine's open pull request's
    /// (`push.pr`, one open per routine); `None`: its own branch.
    #[serde(default)]
    pub push_onto: Option<String>,
}

/// What a run changed — part of the run record (`changes`, `null` for a run outside git).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Changes {
    pub workspace: WorkspaceKind,
    pub repo: String,
    pub branch: Option<String>,
    /// The commit the run started from, and the one its branch (or checkout) ended on.
    pub base: Option<String>,
    pub head: Option<String>,
    /// Oldest first; at most [`MAX_COMMITS_LISTED`].
    pub commits: Vec<Commit>,
    /// At most [`MAX_FILES_LISTED`]; `files_changed` counts them all.
    pub files: Vec<FileChange>,
    pub files_changed: usize,
    pub added: u64,
    pub removed: u64,
    /// The worktree's directory while it exists (`null` once cleaned up, and for cwd runs).
    pub worktree: Option<String>,
    #[serde(serialize_with = "crate::words::ser_opt_time", default)]
    pub worktree_removed_at: Option<DateTime<Utc>>,
    /// The branch's push, when the routine has `push:`.
    pub push: Option<Push>,
    /// Committing or summarising failed: said here instead of a summary that looks complete.
    pub error: Option<String>,
}

string_enum!(
    /// Who made a commit of a run's branch.
    CommitBy {
        /// The agent, during the run.
        Agent = "agent",
        /// Nightshift, after it: what the run left uncommitted.
        Nightshift = "nightshift",
    }
);

string_enum!(
    /// Where a worktree run's branch is in being pushed.
    PushState {
        Pending = "pending",
        Pushed = "pushed",
        /// Retried, then given up — the branch stays.
        Failed = "failed",
        /// The run made no commit: nothing to push.
        Nothing = "nothing",
    }
);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Commit {
    pub sha: String,
    pub subject: String,
    pub by: CommitBy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct FileChange {
    pub path: String,
    /// Lines added / removed; `null` for a binary file.
    pub added: Option<u64>,
    pub removed: Option<u64>,
}

/// The pull request a worktree run's branch went to (`push.pr`): opened by this run, or the
/// routine's open one it pushed onto and updated — or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct PullRequest {
    /// `pending` (after the push), `opened`, `updated`, `none` (the run changed nothing), `failed`;
    /// for a run that answered a review (`on_review: rerun`): `answered` (its commits pushed and
    /// its answer posted), `unchanged` (it changed nothing: answered, and the loop ends there).
    pub state: String,
    pub number: Option<u64>,
    pub url: Option<String>,
    /// `owner/name`.
    pub repo: Option<String>,
    /// Why it failed, or why there is none — in words, with what to do.
    pub error: Option<String>,
    pub tries: u32,
    #[serde(serialize_with = "crate::words::ser_opt_time", default)]
    pub at: Option<DateTime<Utc>>,
}

impl PullRequest {
    /// The state a round answering a review leaves when it changed nothing: the loop ends there.
    pub const UNCHANGED: &'static str = "unchanged";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Push {
    pub remote: String,
    pub state: PushState,
    /// The remote branch it goes to when it is not the run's own: the routine's open pull
    /// request's branch, which this run continued (`push.pr`, one open per routine).
    #[serde(default)]
    pub onto: Option<String>,
    pub tries: u32,
    pub error: Option<String>,
    #[serde(serialize_with = "crate::words::ser_opt_time", default)]
    pub at: Option<DateTime<Utc>>,
}

impl Changes {
    /// "3 files changed, +40 −12 on nightshift/pr-review/01j…" — the notification's and the
    /// CLI's one line.
    pub fn summary(&self) -> String {
        if let Some(e) = &self.error {
            return format!("changes unknown: {e}");
        }
        let files = match self.files_changed {
            0 => "no files changed".to_string(),
            1 => "1 file changed".to_string(),
            n => format!("{n} files changed"),
        };
        let lines = if self.files_changed > 0 { format!(", +{} \u{2212}{}", self.added, self.removed) } else { String::new() };
        let place = match (&self.workspace, &self.branch) {
            (WorkspaceKind::Worktree, Some(b)) => format!(" on {b}"),
            _ => String::new(),
        };
        format!("{files}{lines}{place}")
    }
}
