//! `push RUN`, and what `show` says about a run's git workspace.

use crate::format;
use crate::Outcome;
use nightshift_core::run::{Changes, CommitBy, PushState, WorkspaceKind as Kind};
use nightshift_core::{Engine, Error};

/// How many changed files `show` lists (the window and `--json` have them all, up to the cap).
const FILES_SHOWN: usize = 20;

/// `show`'s lines for a run's workspace.
pub fn print_changes(c: &Changes, run_id: &str) {
    println!("changes      {}", c.summary());
    match c.workspace {
        Kind::Worktree => {
            if let Some(b) = &c.branch {
                println!("branch       {b}  (in {})", c.repo);
            }
            match (&c.worktree, &c.worktree_removed_at) {
                (Some(w), _) => println!("worktree     {w}"),
                (None, Some(t)) => println!("worktree     removed {} (the branch keeps everything)", format::local(t)),
                _ => {}
            }
        }
        Kind::Cwd => println!("checkout     {}{}", c.repo, c.branch.as_ref().map(|b| format!(" ({b})")).unwrap_or_default()),
    }
    for f in c.files.iter().take(FILES_SHOWN) {
        let lines = match (f.added, f.removed) {
            (Some(a), Some(r)) => format!("+{a} \u{2212}{r}"),
            _ => "binary".into(),
        };
        println!("  {lines:>12}  {}", f.path);
    }
    if c.files_changed > FILES_SHOWN {
        println!("  … and {} more files (nightshiftctl show {run_id} --json)", c.files_changed - FILES_SHOWN);
    }
    for commit in &c.commits {
        let by = if commit.by == CommitBy::Nightshift { " (by Nightshift: what the run left uncommitted)" } else { "" };
        println!("commit       {} {}{by}", &commit.sha[..commit.sha.len().min(10)], commit.subject);
    }
    if let Some(p) = &c.push {
        let how = match p.state {
            PushState::Pushed => format!("pushed{}", p.at.map(|t| format!(" {}", format::local(&t))).unwrap_or_default()),
            PushState::Nothing => "nothing to push (no commit)".into(),
            PushState::Failed => format!(
                "failed after {} tries: {} — the branch is kept; try again with `nightshiftctl push {run_id}`",
                p.tries,
                p.error.as_deref().unwrap_or("no message")
            ),
            _ if p.tries == 0 => "pending (pushed by this command, the app or `nightshiftctl daemon`)".into(),
            _ => format!(
                "pending: try {} failed ({}); retried by the app or the daemon, or now with `nightshiftctl push {run_id}`",
                p.tries,
                p.error.as_deref().unwrap_or("no message")
            ),
        };
        let onto = p.onto.as_ref().map(|b| format!(" (onto {b}, its routine's open pull request)")).unwrap_or_default();
        println!("push         {}{onto}: {how}", p.remote);
    }
}

/// `show`'s line for a run's pull request (`push.pr`).
pub fn print_pull_request(pr: &nightshift_core::run::PullRequest) {
    let number = pr.number.map(|n| format!("#{n} ")).unwrap_or_default();
    let url = pr.url.as_deref().unwrap_or("");
    let how = match pr.state.as_str() {
        "opened" => format!("opened {number}{url}"),
        "updated" => format!("updated {number}{url} (its routine's open one)"),
        "none" => "none: the run changed nothing".to_string(),
        "answered" => format!("answered the review in {number}{url}"),
        "unchanged" => format!("answered the review in {number}{url} without a change (no more reviews of it are answered)"),
        "pending" if pr.tries == 0 => "pending (opened after the push, by this command, the app or the daemon)".to_string(),
        "pending" => format!("pending: try {} failed; tried again by the app or the daemon", pr.tries),
        other => other.to_string(),
    };
    println!("pull request {how}");
    if let Some(e) = pr.error.as_deref().filter(|_| pr.state != "none") {
        println!("             {e}");
    }
}

/// `nightshiftctl push RUN`: push the run's branch now.
pub async fn push(engine: &Engine, run_id: &str) -> Result<Outcome, Error> {
    let failed_before = engine.run(run_id).ok().and_then(|r| r.changes?.push).is_some_and(|p| p.state == PushState::Failed);
    let run = engine.retry_push(run_id).await?;
    let push = run.changes.as_ref().and_then(|c| c.push.clone());
    let branch = run.changes.as_ref().and_then(|c| c.branch.clone()).unwrap_or_default();
    match push {
        Some(p) if p.state == PushState::Pushed => {
            // What told of the failure (the tray, `why`) stops telling it now.
            let cleared = if failed_before { " — the failed push is cleared" } else { "" };
            println!("pushed {branch} to {}{cleared}", p.remote);
            Ok(Outcome::Ok)
        }
        Some(p) => Err(Error::new(
            nightshift_core::ErrorCode::Io,
            format!("pushing {branch} to {} failed: {}; the branch is kept", p.remote, p.error.unwrap_or_default()),
        )),
        None => Ok(Outcome::Ok),
    }
}
