//! Where a run works, in git terms, and what it changed there.
//!
//! * `workspace: worktree` — each run gets its own `git worktree` of the routine's repository, on
//!   a new branch `nightshift/<routine>/<run-id>`; the user's checkout, index and stash are never
//!   touched. Whatever the run's status, what the agent left uncommitted is committed on that
//!   branch by "Nightshift" when the run settles.
//! * `workspace: cwd` (the default) in a git repository — the run works in the user's checkout;
//!   its working tree is photographed as a tree object at the start and at the end (through a
//!   scratch index, so the user's own index is never written), which gives "what did it do?" an
//!   answer too.
//!
//! What was set up is kept in the run directory ([`STATE_FILE`]) the moment it exists, so whoever
//! settles the run — its driver, or recovery after a crash — commits and summarises it.

use crate::git::{self, Git};
use crate::run::{
    Changes, Commit, CommitBy, FileChange, Push, PushState, RunStatus, RunWorkspace, WorkspaceKind,
};
use std::path::{Path, PathBuf};

/// The run directory's record of its workspace (see the module docs).
pub const STATE_FILE: &str = "workspace.json";
/// The scratch copy of a repository's index through which a `cwd` run's working tree is
/// photographed (kept in the run directory; the user's index is never written).
const SCRATCH_INDEX: &str = "workspace.index";
/// At most this many files are listed in a summary (the totals count them all).
pub const MAX_FILES_LISTED: usize = 500;
/// At most this many commits are listed in a summary.
pub const MAX_COMMITS_LISTED: usize = 100;

/// A branch name component from a routine name (routine names may hold `..` or end in `.lock`,
/// which refs may not).
fn ref_safe(name: &str) -> String {
    let mut s = name.replace("..", "-");
    if s.ends_with(".lock") || s.ends_with('.') {
        s.push('_');
    }
    s
}

/// The branch of a worktree run.
pub fn branch_name(routine: &str, run_id: &str) -> String {
    format!("nightshift/{}/{run_id}", ref_safe(routine))
}

/// Set up the run's workspace. `Ok(None)`: nothing to track (no `cwd`, or a `cwd` run outside git
/// — and a cwd run whose photograph fails only loses its summary, never its start). `Err`: a
/// worktree could not be made; nothing of it is left behind. `onto`: the remote branch of the
/// routine's open pull request — the worktree starts from its head (fetched from the push remote;
/// the local branch when the fetch fails) and the run pushes onto it.
pub fn start(routine: &crate::routine::Routine, run_id: &str, run_dir: &Path, worktrees_dir: &Path, onto: Option<&str>) -> Result<Option<RunWorkspace>, String> {
    use crate::routine::Workspace;
    let Some(cwd) = routine.cwd.as_deref() else {
        return match routine.workspace {
            Workspace::Cwd => Ok(None),
            Workspace::Worktree { .. } => Err("`workspace: worktree` needs `cwd:` (a directory in a git repository)".into()),
        };
    };
    let started = match &routine.workspace {
        Workspace::Cwd => {
            if git::find_repo_root(cwd).is_none() {
                return Ok(None);
            }
            match start_cwd(cwd, run_dir) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(run = %run_id, error = %e, "no change summary for this run: its checkout could not be read");
                    return Ok(None);
                }
            }
        }
        Workspace::Worktree { base, push } => {
            let remote = push.as_ref().map(|p| p.remote.as_str());
            let head = onto.zip(remote).and_then(|(branch, remote)| branch_head(cwd, remote, branch));
            let from = head.as_deref().or(base.as_deref());
            let mut s = start_worktree(cwd, &routine.name, run_id, from, worktrees_dir)?;
            s.base_ref = base.clone();
            s.push = push.as_ref().map(|p| p.remote.clone());
            s.push_onto = head.and(onto.map(str::to_string));
            s
        }
    };
    let json = serde_json::to_vec_pretty(&started).unwrap_or_default();
    if let Err(e) = crate::fsutil::write_atomic(&run_dir.join(STATE_FILE), &json) {
        if let Some(wt) = &started.worktree {
            discard_worktree(&started.repo, wt, started.branch.as_deref());
        }
        return Err(format!("could not record the run's workspace: {e}"));
    }
    Ok(Some(started))
}

/// The workspace a run started with, from its run directory.
pub fn started(run_dir: &Path) -> Option<RunWorkspace> {
    let text = std::fs::read(run_dir.join(STATE_FILE)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// The head of `branch` on `remote` (fetched now, bounded), else of the local branch of that name;
/// `None` when neither is there (a branch deleted after its pull request was merged).
fn branch_head(cwd: &Path, remote: &str, branch: &str) -> Option<String> {
    let fetched = Git::new(cwd, &["fetch", "--quiet", "--no-tags", remote, &format!("refs/heads/{branch}")]).limit(git::PUSH_LIMIT).run().is_ok();
    let rev = if fetched { "FETCH_HEAD".to_string() } else { format!("refs/heads/{branch}") };
    Git::new(cwd, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")]).run().ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn top_and_base(cwd: &Path, rev: &str) -> Result<(PathBuf, String, Option<String>), String> {
    if !cwd.is_dir() {
        return Err(format!("the working directory {} does not exist", cwd.display()));
    }
    // One process for both: the top of the working tree, then `cwd`'s path inside it.
    let both = Git::new(cwd, &["rev-parse", "--show-toplevel", "--show-prefix"]).run().map_err(|e| format!("{} is not in a git repository ({e})", cwd.display()))?;
    let mut lines = both.lines();
    let top = lines.next().unwrap_or_default().to_string();
    let prefix = lines.next().unwrap_or_default().to_string();
    let base = Git::new(Path::new(&top), &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")]).output()?;
    let base = base.ok().then(|| base.text()).filter(|s| !s.is_empty());
    Ok((PathBuf::from(top), prefix, base))
}

fn start_cwd(cwd: &Path, run_dir: &Path) -> Result<RunWorkspace, String> {
    let (repo, _, base) = top_and_base(cwd, "HEAD")?;
    let branch = Git::new(&repo, &["symbolic-ref", "--quiet", "--short", "HEAD"]).run().ok();
    let start_tree = Some(photograph(&repo, run_dir, base.as_deref())?);
    Ok(RunWorkspace { kind: WorkspaceKind::Cwd, repo, dir: cwd.to_path_buf(), worktree: None, branch, base, base_ref: None, start_tree, push: None, push_onto: None })
}

fn start_worktree(cwd: &Path, routine: &str, run_id: &str, base_ref: Option<&str>, worktrees_dir: &Path) -> Result<RunWorkspace, String> {
    let (repo, prefix, base) = top_and_base(cwd, base_ref.unwrap_or("HEAD"))?;
    let Some(base) = base else {
        return Err(match base_ref {
            Some(b) => format!("`base: {b}` is not a branch or commit of the repository at {}", repo.display()),
            None => format!("the repository at {} has no commit yet; a worktree starts from one", repo.display()),
        });
    };
    if let Err(e) = std::fs::create_dir_all(worktrees_dir) {
        let cause = crate::error::io_cause_words(&e);
        return Err(format!("cannot create {}: {e}{cause}", worktrees_dir.display()));
    }
    if let Some(trouble) = crate::fsutil::storage_trouble(worktrees_dir) {
        return Err(format!("no worktree made: {trouble}"));
    }
    let path = worktrees_dir.join(run_id);
    let branch = branch_name(routine, run_id);
    let added = Git::new(&repo, &["worktree", "add", "--quiet", "--no-track", "-b", &branch])
        .limit(git::DEFAULT_LIMIT)
        .arg(&path)
        .arg(&base)
        .run();
    if let Err(e) = added {
        discard_worktree(&repo, &path, Some(&branch));
        let why = if e.contains("unable to write") || e.contains("No space") { too_big(&repo, &base, worktrees_dir) } else { None };
        let why = why.or_else(|| crate::fsutil::storage_trouble(worktrees_dir)).map(|t| format!(" ({t})")).unwrap_or_default();
        return Err(format!("could not create a worktree of {}: {e}{why}", repo.display()));
    }
    let dir = if prefix.is_empty() { path.clone() } else { path.join(&prefix) };
    Ok(RunWorkspace {
        kind: WorkspaceKind::Worktree,
        repo,
        dir,
        worktree: Some(path),
        branch: Some(branch),
        base: Some(base),
        base_ref: base_ref.map(str::to_string),
        start_tree: None,
        push: None,
        push_onto: None,
    })
}

/// "the checkout needs 6 MiB and the disk holding … has 4 MiB free" — asked only after git
/// could not write (git removes what it wrote and does not say why).
fn too_big(repo: &Path, base: &str, dir: &Path) -> Option<String> {
    let listing = Git::new(repo, &["ls-tree", "-r", "-l", "--full-tree", base]).run().ok()?;
    let needed: u64 = listing.lines().filter_map(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok()).sum();
    let (free, _) = crate::fsutil::space(dir)?;
    let mib = |b: u64| b.div_ceil(1 << 20);
    (needed >= free).then(|| {
        format!("the disk is full: the checkout needs {} MiB and the disk holding {} has {} MiB free", mib(needed), dir.display(), free >> 20)
    })
}

/// Remove a worktree and its branch after a failed start: never half a worktree left behind.
fn discard_worktree(repo: &Path, path: &Path, branch: Option<&str>) {
    let _ = Git::new(repo, &["worktree", "remove", "--force", "--force"]).arg(path).run();
    if path.exists() {
        let _ = std::fs::remove_dir_all(path);
    }
    let _ = Git::new(repo, &["worktree", "prune"]).run();
    if let Some(b) = branch {
        let _ = Git::new(repo, &["branch", "-D", "--quiet", b]).run();
    }
}

/// Untracked files larger than this are left out of a `cwd` run's photographs: photographing
/// stores each file's content in the repository's object database, and a data set or build
/// product nobody ignored must not be copied there twice a run.
pub const MAX_UNTRACKED_PHOTOGRAPHED: u64 = 16 << 20;
/// The pathspec file of a photograph (what it includes, and the big untracked files it leaves out).
const SCRATCH_PATHSPEC: &str = "workspace.pathspec";

/// The working tree of `repo` as a tree object, through a scratch copy of its index (the user's
/// index is read, never written; untracked files count — up to [`MAX_UNTRACKED_PHOTOGRAPHED`]
/// each — ignored ones do not).
fn photograph(repo: &Path, run_dir: &Path, base: Option<&str>) -> Result<String, String> {
    let scratch = run_dir.join(SCRATCH_INDEX);
    let _ = std::fs::remove_file(&scratch);
    let index = Git::new(repo, &["rev-parse", "--path-format=absolute", "--git-path", "index"]).run()?;
    let copied = std::fs::copy(&index, &scratch).is_ok();
    let with_scratch = |args: &[&str]| Git::new(repo, args).env("GIT_INDEX_FILE", &scratch);
    let result = (|| {
        if !copied {
            if let Some(base) = base {
                with_scratch(&["read-tree", base]).run()?;
            }
        }
        let pathspec = run_dir.join(SCRATCH_PATHSPEC);
        std::fs::write(&pathspec, photograph_pathspec(repo)?).map_err(|e| format!("could not write {}: {e}", pathspec.display()))?;
        let from = format!("--pathspec-from-file={}", pathspec.display());
        with_scratch(&["add", "--all", &from, "--pathspec-file-nul"]).run()?;
        with_scratch(&["write-tree"]).run()
    })();
    let _ = std::fs::remove_file(&scratch);
    let _ = std::fs::remove_file(run_dir.join(SCRATCH_PATHSPEC));
    result
}

/// Everything (`.`), minus untracked files over [`MAX_UNTRACKED_PHOTOGRAPHED`], NUL-separated.
fn photograph_pathspec(repo: &Path) -> Result<Vec<u8>, String> {
    let out = Git::new(repo, &["ls-files", "--others", "--exclude-standard", "-z", "--full-name"]).output()?;
    if !out.ok() {
        return Err(git::complaint("git ls-files", &out.stderr));
    }
    let mut spec = b".\0".to_vec();
    for path in out.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let rel = std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path));
        if std::fs::symlink_metadata(repo.join(rel)).is_ok_and(|m| m.len() > MAX_UNTRACKED_PHOTOGRAPHED) {
            spec.extend_from_slice(b":(top,exclude,literal)");
            spec.extend_from_slice(path);
            spec.push(0);
        }
    }
    Ok(spec)
}

/// Finish the run's workspace: commit what a worktree run left (whatever its status), then
/// summarise. Never fails: a problem is written into the summary's `error`.
pub fn finish(started: &RunWorkspace, routine: &str, run_id: &str, status: RunStatus, run_dir: &Path) -> Changes {
    let mut changes = Changes {
        workspace: started.kind,
        repo: started.repo.display().to_string(),
        branch: started.branch.clone(),
        base: started.base.clone(),
        head: None,
        commits: Vec::new(),
        files: Vec::new(),
        files_changed: 0,
        added: 0,
        removed: 0,
        worktree: started.worktree.as_ref().map(|p| p.display().to_string()),
        worktree_removed_at: None,
        push: started.push.as_ref().map(|remote| Push { remote: remote.clone(), state: PushState::Pending, onto: started.push_onto.clone(), tries: 0, error: None, at: None }),
        error: None,
    };
    let result = match started.kind {
        WorkspaceKind::Worktree => finish_worktree(started, routine, run_id, status, &mut changes),
        WorkspaceKind::Cwd => finish_cwd(started, run_dir, &mut changes),
    };
    if let Err(e) = result {
        changes.error = Some(e);
    }
    if let Some(push) = changes.push.as_mut() {
        if changes.commits.is_empty() && changes.error.is_none() {
            push.state = PushState::Nothing;
        }
    }
    changes
}

fn finish_worktree(started: &RunWorkspace, routine: &str, run_id: &str, status: RunStatus, changes: &mut Changes) -> Result<(), String> {
    let wt = started.worktree.as_deref().ok_or("the run has no worktree")?;
    let base = started.base.as_deref().ok_or("the run has no base commit")?;
    if !wt.is_dir() {
        return Err(format!("its worktree {} is gone", wt.display()));
    }
    Git::new(wt, &["add", "--all", "--", "."]).run()?;
    let staged = Git::new(wt, &["diff", "--cached", "--quiet"]).output()?;
    let mut ours = None;
    if staged.status == 1 {
        let message =
            format!("nightshift: {routine} run {run_id} ({status})\n\nWhat the run left uncommitted, committed by Nightshift when the run ended.");
        Git::new(wt, &["-c", "commit.gpgsign=false", "commit", "--no-verify", "--quiet", "-m", &message]).as_nightshift().run()?;
        ours = Some(Git::new(wt, &["rev-parse", "HEAD"]).run()?);
    } else if !staged.ok() {
        return Err(git::complaint("git diff", &staged.stderr));
    }
    let head = Git::new(wt, &["rev-parse", "HEAD"]).run()?;
    summarise(wt, base, &head, Some(&head), ours.as_deref(), changes)
}

fn finish_cwd(started: &RunWorkspace, run_dir: &Path, changes: &mut Changes) -> Result<(), String> {
    let start_tree = started.start_tree.as_deref().ok_or("no picture of the checkout at the start")?;
    let head = Git::new(&started.repo, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]).output()?;
    let head = head.ok().then(|| head.text());
    let end_tree = photograph(&started.repo, run_dir, head.as_deref())?;
    let (from, to) = (start_tree.to_string(), end_tree);
    match (&started.base, &head) {
        (Some(base), Some(head)) => summarise(&started.repo, &from, &to, Some(head), None, changes).map(|()| {
            changes.commits = commits(&started.repo, base, head, None).unwrap_or_default();
        }),
        _ => summarise(&started.repo, &from, &to, head.as_deref(), None, changes),
    }
}

/// Files and +/− between two trees (or commits), and the commits `from..head`.
fn summarise(repo: &Path, from: &str, to: &str, head: Option<&str>, ours: Option<&str>, changes: &mut Changes) -> Result<(), String> {
    changes.head = head.map(str::to_string);
    let out = Git::new(repo, &["diff", "--numstat", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", from, to]).output()?;
    if !out.ok() {
        return Err(git::complaint("git diff", &out.stderr));
    }
    for entry in out.stdout.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let text = String::from_utf8_lossy(entry);
        let mut parts = text.splitn(3, '\t');
        let (Some(a), Some(r), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (added, removed) = (a.parse::<u64>().ok(), r.parse::<u64>().ok());
        changes.files_changed += 1;
        changes.added += added.unwrap_or(0);
        changes.removed += removed.unwrap_or(0);
        if changes.files.len() < MAX_FILES_LISTED {
            changes.files.push(FileChange { path: path.to_string(), added, removed });
        }
    }
    if let (Some(head), WorkspaceKind::Worktree) = (head, changes.workspace) {
        changes.commits = commits(repo, from, head, ours)?;
    }
    Ok(())
}

fn commits(repo: &Path, from: &str, head: &str, ours: Option<&str>) -> Result<Vec<Commit>, String> {
    let range = format!("{from}..{head}");
    let limit = format!("--max-count={MAX_COMMITS_LISTED}");
    let text = Git::new(repo, &["log", "--reverse", &limit, "--format=%H%x1f%s", &range]).run()?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('\u{1f}'))
        .map(|(sha, subject)| Commit {
            sha: sha.to_string(),
            subject: subject.to_string(),
            by: if Some(sha) == ours { CommitBy::Nightshift } else { CommitBy::Agent },
        })
        .collect())
}

/// Push the run's branch to `remote` (bounded, never prompting). The error says why in git's
/// and the remote's own words: the rejection (`[remote rejected] (pre-receive hook declined)`)
/// and what the remote printed.
pub fn push(repo: &Path, remote: &str, branch: &str, onto: Option<&str>) -> Result<(), String> {
    let spec = format!("refs/heads/{branch}:refs/heads/{}", onto.unwrap_or(branch));
    let out = Git::new(repo, &["push", "--porcelain", remote, &spec]).limit(git::PUSH_LIMIT).output()?;
    if out.ok() {
        return Ok(());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rejected = stdout.lines().filter(|l| l.starts_with('!')).filter_map(|l| l.split('\t').nth(2)).map(str::trim).next();
    let remote_said: Vec<&str> =
        out.stderr.lines().filter_map(|l| l.strip_prefix("remote:")).map(str::trim).filter(|l| !l.is_empty()).take(3).collect();
    let mut message = match rejected {
        Some(r) => format!("git push to {remote} was refused: {r}"),
        None => git::complaint(&format!("git push to {remote}"), &out.stderr),
    };
    if !remote_said.is_empty() {
        message.push_str(&format!("; the remote said: {}", remote_said.join(" / ")));
    }
    Err(message)
}

/// Remove a settled run's worktree directory (its branch stays, with everything committed).
/// With `delete_merged`, the branch goes too once it is merged into `base_ref` (or the
/// repository's `HEAD`). Returns what was done, in words. Only ever a directory inside
/// `worktrees_dir` (the home's worktrees folder): the path comes from a record, and a record
/// that was tampered with, or restored from another machine, must not delete anything else.
pub fn remove_worktree(worktrees_dir: &Path, repo: &Path, worktree: &Path, branch: Option<&str>, base_ref: Option<&str>, delete_merged: bool) -> Result<String, String> {
    if !inside(worktree, worktrees_dir) {
        return Err(format!("not removed: {} is not inside Nightshift's worktrees folder {}", worktree.display(), worktrees_dir.display()));
    }
    if repo.join(".git").exists() {
        let out = Git::new(repo, &["worktree", "remove", "--force", "--force"]).arg(worktree).run();
        if out.is_err() && worktree.exists() {
            std::fs::remove_dir_all(worktree).map_err(|e| format!("could not remove {}: {e}", worktree.display()))?;
        }
        let _ = Git::new(repo, &["worktree", "prune"]).run();
    } else if worktree.exists() {
        std::fs::remove_dir_all(worktree).map_err(|e| format!("could not remove {}: {e}", worktree.display()))?;
    }
    let mut said = format!("removed {}", worktree.display());
    if let (true, Some(branch)) = (delete_merged && repo.join(".git").exists(), branch) {
        let target = base_ref.unwrap_or("HEAD");
        let merged =
            Git::new(repo, &["merge-base", "--is-ancestor", &format!("refs/heads/{branch}"), target]).output().map(|o| o.ok()).unwrap_or(false);
        if merged && Git::new(repo, &["branch", "-D", "--quiet", branch]).run().is_ok() {
            said.push_str(&format!(" and its merged branch {branch}"));
        }
    }
    Ok(said)
}

/// Whether `path` is strictly inside `root` — symlinks resolved where the paths exist, and a
/// path that does not exist judged by its words with no `..` allowed.
fn inside(path: &Path, root: &Path) -> bool {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let path = match path.canonicalize() {
        Ok(p) => p,
        Err(_) if path.components().any(|c| matches!(c, std::path::Component::ParentDir)) => return false,
        Err(_) => path.to_path_buf(),
    };
    path != root && path.starts_with(&root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_inside_the_worktrees_folder_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("worktrees");
        let outside = tmp.path().join("precious");
        std::fs::create_dir_all(root.join("r1")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep.txt"), "mine").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        assert!(inside(&root.join("r1"), &root));
        for bad in [outside.clone(), root.clone(), root.join("link"), root.join("../precious"), root.join("gone/../../precious")] {
            let refused = remove_worktree(&root, tmp.path(), &bad, None, None, false).unwrap_err();
            assert!(refused.starts_with("not removed:"), "{refused}");
        }
        assert_eq!(std::fs::read_to_string(outside.join("keep.txt")).unwrap(), "mine");
        assert!(remove_worktree(&root, tmp.path(), &root.join("r1"), None, None, false).is_ok());
        assert!(!root.join("r1").exists());
    }

    #[test]
    fn branch_names_are_valid_refs() {
        assert_eq!(branch_name("pr-review", "01j"), "nightshift/pr-review/01j");
        assert_eq!(branch_name("a..b", "x"), "nightshift/a-b/x");
        assert_eq!(branch_name("x.lock", "x"), "nightshift/x.lock_/x");
    }

    #[test]
    fn the_summary_line_says_files_lines_and_branch() {
        let mut c = Changes {
            workspace: WorkspaceKind::Worktree,
            repo: "/r".into(),
            branch: Some("nightshift/r/1".into()),
            base: None,
            head: None,
            commits: vec![],
            files: vec![],
            files_changed: 3,
            added: 40,
            removed: 12,
            worktree: None,
            worktree_removed_at: None,
            push: None,
            error: None,
        };
        assert_eq!(c.summary(), "3 files changed, +40 \u{2212}12 on nightshift/r/1");
        c.files_changed = 0;
        c.workspace = WorkspaceKind::Cwd;
        assert_eq!(c.summary(), "no files changed");
        c.error = Some("git diff failed: x".into());
        assert_eq!(c.summary(), "changes unknown: git diff failed: x");
    }
}
