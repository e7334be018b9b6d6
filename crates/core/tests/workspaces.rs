//! Workspaces with real git and real processes: a worktree run never touches the user's
//! checkout, index or stash; two worktree runs on one repository work side by side; a branch is
//! pushed to a real bare repository, a refused push is kept and retried; a `cwd` run's summary
//! names exactly the files it touched; a worktree that cannot be made leaves nothing behind (a
//! ref git cannot lock, a full disk); cleanup removes old worktrees and never a running one.
//! (Kill -9 of the engine mid-run is drilled with the real CLI in `crates/cli/tests`.)

use chrono::{TimeZone, Utc};
use nightshift_core::run::WorkspaceKind as Kind;
use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::{Engine, EngineOptions, Home, ManualClock};
use nightshift_testkit::git::{accept_pushes, git, init_bare, init_repo, refuse_pushes};
use nightshift_testkit::{TestHome, Tmpfs};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// A repository with a few files in its first commit.
fn repo(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    init_repo(&dir, &[("README.md", "hello\n"), ("src/lib.rs", "fn a() {}\n"), ("notes.txt", "one\ntwo\n")]);
    dir
}

/// Every file under `dir` (`.git` included: index, refs, stash) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                // New objects are shared by worktrees by design; everything else must not change.
                if p.ends_with(".git/objects")
                    || p.ends_with(".git/worktrees")
                    || p.ends_with(".git/logs/refs/heads/nightshift")
                    || p.ends_with(".git/refs/heads/nightshift")
                {
                    continue;
                }
                stack.push(p);
            } else {
                all.insert(p.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&p).unwrap());
            }
        }
    }
    all
}

fn engine_with(th: &TestHome, clock: Option<Arc<ManualClock>>) -> Engine {
    let mut opts = EngineOptions::for_test(th.path());
    opts.push_backoff = vec![Duration::from_millis(20); 2];
    match clock {
        Some(c) => opts.clock(c).open(),
        None => opts.open(),
    }
}

fn engine(th: &TestHome) -> Engine {
    engine_with(th, None)
}

/// The run's agent: a shell command that commits once itself and leaves more uncommitted.
const EDITS: &str = "printf 'fn b() {}\\n' >> src/lib.rs && git add src/lib.rs && git -c user.name=Agent -c user.email=agent@example.com commit -q -m 'agent: add b' && printf 'three\\n' >> notes.txt && echo new > new.txt && echo \"$NIGHTSHIFT_BRANCH\" > branch.txt";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_run_leaves_the_users_checkout_index_and_stash_byte_identical() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    // The user's work in progress: a stash, a staged change, an unstaged one, an untracked file.
    std::fs::write(repo.join("notes.txt"), "stashed\n").unwrap();
    git(&repo, &["stash", "-q"]);
    std::fs::write(repo.join("README.md"), "hello, staged\n").unwrap();
    git(&repo, &["add", "README.md"]);
    std::fs::write(repo.join("src/lib.rs"), "fn a() { /* wip */ }\n").unwrap();
    std::fs::write(repo.join("scratch.txt"), "mine\n").unwrap();
    let before = snapshot(&repo);

    th.routine(
        "refactor",
        &format!("schedule: \"0 3 * * *\"\ncommand: \"{}\"\ncwd: {}\nworkspace: worktree\n", EDITS.replace('"', "\\\""), repo.display()),
    );
    let engine = engine(&th);
    let rec = engine.run_now("refactor", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(rec.status, RunStatus::Completed, "{:?}", rec.message);

    assert_eq!(snapshot(&repo), before, "the user's checkout, index or stash changed");
    let c = rec.changes.clone().expect("a change summary");
    let branch = format!("nightshift/refactor/{}", rec.id);
    assert_eq!((c.workspace, c.branch.as_deref()), (Kind::Worktree, Some(branch.as_str())));
    // The agent's commit, then Nightshift's commit of what it left.
    let by: Vec<&str> = c.commits.iter().map(|c| c.by.as_str()).collect();
    assert_eq!(by, ["agent", "nightshift"], "{:?}", c.commits);
    assert_eq!(c.commits[0].subject, "agent: add b");
    let files: Vec<(&str, Option<u64>, Option<u64>)> = c.files.iter().map(|f| (f.path.as_str(), f.added, f.removed)).collect();
    assert_eq!(
        files,
        [("branch.txt", Some(1), Some(0)), ("new.txt", Some(1), Some(0)), ("notes.txt", Some(1), Some(0)), ("src/lib.rs", Some(1), Some(0))]
    );
    assert_eq!((c.files_changed, c.added, c.removed), (4, 4, 0));
    // The branch holds it all; the run saw its branch.
    assert_eq!(git(&repo, &["show", &format!("{branch}:notes.txt")]), "one\ntwo\nthree");
    assert_eq!(git(&repo, &["show", &format!("{branch}:branch.txt")]), branch);
    assert_eq!(git(&repo, &["log", "-1", "--format=%an <%ae>", &branch]), "Nightshift <nightshift@localhost>");
    assert_eq!(git(&repo, &["rev-parse", &branch]), c.head.clone().unwrap());
    // The worktree is where the summary says, clean.
    let wt = PathBuf::from(c.worktree.clone().unwrap());
    assert!(wt.starts_with(th.path().join("worktrees")), "{}", wt.display());
    assert_eq!(git(&wt, &["status", "--porcelain"]), "");
    // And the record reads back the same from the store.
    assert_eq!(engine.run(&rec.id).unwrap().changes, Some(c));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worktree_runs_of_different_routines_on_one_repository_run_side_by_side() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    std::fs::write(th.path().join("nightshift.toml"), "max_parallel = 4\n").unwrap();
    // Each waits for the other to have started, so they really overlap.
    for (name, other) in [("alpha", "beta"), ("beta", "alpha")] {
        let cmd = format!(
            "touch {dir}/{name}.started; i=0; while [ ! -e {dir}/{other}.started ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; echo {name} > {name}.txt",
            dir = th.path().display()
        );
        th.routine(name, &format!("schedule: \"0 3 * * *\"\ncommand: \"{cmd}\"\ncwd: {}\nworkspace: worktree\n", repo.display()));
    }
    let engine = engine(&th);
    let a = engine.run_now("alpha", Trigger::Manual).await.unwrap();
    let b = engine.run_now("beta", Trigger::Manual).await.unwrap();
    let (a, b) = (a.wait().await.unwrap(), b.wait().await.unwrap());
    for (rec, mine, theirs) in [(&a, "alpha.txt", "beta.txt"), (&b, "beta.txt", "alpha.txt")] {
        assert_eq!(rec.status, RunStatus::Completed, "{:?}", rec.message);
        let branch = rec.changes.as_ref().unwrap().branch.clone().unwrap();
        let tree = git(&repo, &["ls-tree", "-r", "--name-only", &branch]);
        assert!(tree.lines().any(|l| l == mine), "{branch}: {tree}");
        assert!(!tree.lines().any(|l| l == theirs), "{branch} holds the other run's file: {tree}");
    }
    assert_ne!(a.changes.unwrap().worktree, b.changes.unwrap().worktree);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "", "the user's checkout changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_is_pushed_and_a_refused_push_is_kept_then_retried() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    let remote = th.path().join("remote.git");
    init_bare(&remote);
    git(&repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
    th.routine(
        "nightly",
        &format!("schedule: \"0 3 * * *\"\ncommand: \"echo x >> notes.txt\"\ncwd: {}\nworkspace: worktree\npush: origin\n", repo.display()),
    );
    let engine = engine(&th);

    // Pushed: the remote has the branch at the run's head.
    let rec = engine.run_now("nightly", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(rec.changes.as_ref().unwrap().push.as_ref().unwrap().state.as_str(), "pending");
    engine.push_branches_now().await;
    let rec = engine.run(&rec.id).unwrap();
    let c = rec.changes.unwrap();
    let push = c.push.clone().unwrap();
    assert_eq!((push.state.as_str(), push.tries, push.error.as_deref()), ("pushed", 1, None));
    assert_eq!(git(&remote, &["rev-parse", c.branch.as_deref().unwrap()]), c.head.clone().unwrap());

    // Refused by the remote: retried, then failed, and the branch is kept.
    refuse_pushes(&remote, "pushes are closed tonight");
    let rec = engine.run_now("nightly", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let branch = rec.changes.as_ref().unwrap().branch.clone().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let failed = loop {
        engine.push_branches_now().await;
        let p = engine.run(&rec.id).unwrap().changes.unwrap().push.unwrap();
        if p.state.as_str() == "failed" {
            break p;
        }
        assert!(std::time::Instant::now() < deadline, "the push never gave up: {p:?}");
        tokio::time::sleep(Duration::from_millis(30)).await;
    };
    assert_eq!(failed.tries, 3, "{failed:?}");
    let said = failed.error.as_deref().unwrap();
    assert!(said.contains("pre-receive hook declined") && said.contains("pushes are closed tonight"), "{failed:?}");
    assert!(!git(&repo, &["branch", "--list", &branch]).is_empty(), "the branch was not kept");
    assert!(Command::new("git").arg("-C").arg(&remote).args(["rev-parse", "--verify", "--quiet", &branch]).output().unwrap().stdout.is_empty());

    // The remote takes pushes again: a later retry pushes it.
    accept_pushes(&remote);
    let retried = engine.retry_push(&rec.id).await.unwrap().changes.unwrap();
    assert_eq!(retried.push.as_ref().unwrap().state.as_str(), "pushed", "{:?}", retried.push);
    assert_eq!(git(&remote, &["rev-parse", &branch]), retried.head.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cwd_run_summary_lists_exactly_the_files_it_touched() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    // The user's own uncommitted work is not the run's.
    std::fs::write(repo.join("README.md"), "hello, mine\n").unwrap();
    std::fs::write(repo.join("mine.txt"), "mine\n").unwrap();
    let index_before = std::fs::read(repo.join(".git/index")).unwrap();
    th.routine(
        "tidy",
        &format!(
            "schedule: \"0 3 * * *\"\ncommand: \"printf 'one\\\\n' > notes.txt && rm src/lib.rs && echo hi > added.txt && mkdir -p docs && echo d > docs/d.md\"\ncwd: {}\n",
            repo.display()
        ),
    );
    let engine = engine(&th);
    let rec = engine.run_now("tidy", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(rec.status, RunStatus::Completed, "{:?}", rec.message);
    let c = rec.changes.expect("a change summary for a run in a repository");
    assert_eq!((c.workspace, c.branch.as_deref(), c.worktree.as_deref()), (Kind::Cwd, Some("main"), None));
    let files: Vec<(&str, Option<u64>, Option<u64>)> = c.files.iter().map(|f| (f.path.as_str(), f.added, f.removed)).collect();
    assert_eq!(
        files,
        [("added.txt", Some(1), Some(0)), ("docs/d.md", Some(1), Some(0)), ("notes.txt", Some(0), Some(1)), ("src/lib.rs", Some(0), Some(1))]
    );
    assert!(c.commits.is_empty());
    assert_eq!(std::fs::read(repo.join(".git/index")).unwrap(), index_before, "the user's index was written");
    assert_eq!(git(&repo, &["status", "--porcelain", "--", "README.md", "mine.txt"]), " M README.md\n?? mine.txt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_outside_git_has_no_summary_and_a_commit_in_cwd_is_listed() {
    let th = TestHome::new();
    let plain = th.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let repo = repo(th.path(), "repo");
    th.routine("outside", &format!("schedule: \"0 3 * * *\"\ncommand: \"echo x > x.txt\"\ncwd: {}\n", plain.display()));
    th.routine(
        "commits",
        &format!("schedule: \"0 3 * * *\"\ncommand: \"echo c > c.txt && git add c.txt && git -c user.name=A -c user.email=a@x commit -q -m 'add c'\"\ncwd: {}\n", repo.display()),
    );
    let engine = engine(&th);
    let outside = engine.run_now("outside", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((outside.status, outside.changes), (RunStatus::Completed, None));
    let rec = engine.run_now("commits", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let c = rec.changes.unwrap();
    assert_eq!(c.commits.iter().map(|c| (c.subject.as_str(), c.by.as_str())).collect::<Vec<_>>(), [("add c", "agent")]);
    assert_eq!(c.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["c.txt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_git_cannot_make_fails_the_run_and_leaves_nothing() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    // A branch named like the routine's branch folder: git cannot lock the run's ref.
    git(&repo, &["branch", "nightshift/job"]);
    th.routine("job", &format!("schedule: \"0 3 * * *\"\ncommand: \"touch ran\"\ncwd: {}\nworkspace: worktree\n", repo.display()));
    let engine = engine(&th);
    let rec = engine.run_now("job", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((rec.status, rec.reason), (RunStatus::Failed, Some(nightshift_core::run::Reason::SpawnFailed)));
    let msg = rec.message.unwrap();
    assert!(msg.starts_with(&format!("could not create a worktree of {}: git worktree failed: ", repo.display())), "{msg}");
    assert!(msg.contains("cannot lock ref"), "{msg}");
    assert_eq!(git(&repo, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1);
    assert_eq!(git(&repo, &["branch", "--list", "nightshift/*"]).trim(), "nightshift/job");
    assert!(!th.path().join("worktrees").join(&rec.id).exists());
    assert!(!repo.join("ran").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_while_checking_out_leaves_no_half_worktree() {
    let Some(fs) = Tmpfs::mount(4 * 1024) else {
        return;
    };
    let outside = TestHome::new();
    let repo = repo(outside.path(), "repo");
    // 6 MB of content cannot be checked out into a 4 MB disk.
    let big: Vec<u8> = (0..6_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    std::fs::write(repo.join("big.bin"), big).unwrap();
    git(&repo, &["add", "big.bin"]);
    git(&repo, &["commit", "-q", "-m", "big"]);
    let home = fs.path().join("home");
    std::fs::create_dir_all(home.join("routines")).unwrap();
    std::fs::write(
        home.join("routines/job.yaml"),
        format!("schedule: \"0 3 * * *\"\ncommand: \"touch ran\"\ncwd: {}\nworkspace: worktree\n", repo.display()),
    )
    .unwrap();
    let engine = EngineOptions::for_test(&home).open();
    let rec = engine.run_now("job", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(rec.status, RunStatus::Failed);
    let msg = rec.message.unwrap();
    assert!(msg.contains("could not create a worktree of"), "{msg}");
    assert!(
        msg.contains(&format!("the disk is full: the checkout needs 6 MiB and the disk holding {} has ", home.join("worktrees").display())),
        "{msg}"
    );
    assert!(!home.join("worktrees").join(&rec.id).exists(), "half a worktree was left");
    assert_eq!(git(&repo, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1);
    assert_eq!(git(&repo, &["branch", "--list", "nightshift/*"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_worktrees_are_removed_branches_stay_and_a_running_run_is_never_touched() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    std::fs::write(th.path().join("nightshift.toml"), "keep_worktrees_days = 2\n").unwrap();
    th.routine("done", &format!("schedule: \"0 3 * * *\"\ncommand: \"echo d >> notes.txt\"\ncwd: {}\nworkspace: worktree\n", repo.display()));
    th.routine(
        "slow",
        &format!("schedule: \"0 3 * * *\"\ncommand: \"echo s > s.txt; sleep 30\"\ncwd: {}\nworkspace: worktree\ntimeout: 1m\n", repo.display()),
    );
    let clock = Arc::new(ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap()));
    let engine = engine_with(&th, Some(Arc::clone(&clock)));
    let done = engine.run_now("done", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let slow = engine.run_now("slow", Trigger::Manual).await.unwrap();
    // The slow run must be under way in its worktree before anything is pruned, or the check
    // below would prove nothing (and would race the run's checkout: CI once looked too early).
    let slow_wt = th.path().join("worktrees").join(&slow.id);
    nightshift_testkit::wait_until_async("the slow run to start in its worktree", Duration::from_secs(20), || slow_wt.join("s.txt").exists()).await;
    let wt = PathBuf::from(done.changes.as_ref().unwrap().worktree.clone().unwrap());
    let branch = done.changes.as_ref().unwrap().branch.clone().unwrap();

    assert!(engine.prune_worktrees(false).await.is_empty(), "a fresh worktree was pruned");
    clock.advance(chrono::Duration::days(3));
    let dry = engine.prune_worktrees(true).await;
    assert_eq!(dry.iter().map(|p| (p.run_id.as_str(), p.removed)).collect::<Vec<_>>(), [(done.id.as_str(), false)]);
    assert!(wt.exists());
    let pruned = engine.prune_worktrees(false).await;
    assert_eq!(pruned.iter().map(|p| (p.run_id.as_str(), p.removed)).collect::<Vec<_>>(), [(done.id.as_str(), true)]);
    assert!(!wt.exists());
    assert!(!git(&repo, &["worktree", "list"]).contains(&done.id));
    assert!(!git(&repo, &["branch", "--list", &branch]).is_empty(), "the branch went with the worktree");
    let c = engine.run(&done.id).unwrap().changes.unwrap();
    assert_eq!((c.worktree, c.worktree_removed_at), (None, Some(clock_now(&clock))));
    // The running run's worktree is still there and still in use.
    assert!(slow_wt.join("s.txt").is_file(), "the running run's worktree was pruned");
    assert!(engine.cancel(&slow.id).await);
    let slow = slow.wait().await.unwrap();
    assert_eq!(slow.status, RunStatus::Cancelled);
    assert!(slow.changes.unwrap().worktree.is_some(), "a cancelled run keeps its worktree until it is old");

    // With delete_merged_branches, a merged branch goes with its worktree; an unmerged one stays.
    std::fs::write(th.path().join("nightshift.toml"), "keep_worktrees_days = 0\ndelete_merged_branches = true\n").unwrap();
    let engine = engine_with(&th, Some(Arc::clone(&clock)));
    let merged = engine.run_now("done", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let merged_branch = merged.changes.unwrap().branch.unwrap();
    git(&repo, &["merge", "-q", "--ff-only", &merged_branch]);
    clock.advance(chrono::Duration::seconds(1));
    let pruned = engine.prune_worktrees(false).await;
    assert_eq!(pruned.len(), 2, "{pruned:?}");
    assert!(git(&repo, &["branch", "--list", &merged_branch]).is_empty(), "the merged branch was kept");
    assert!(!git(&repo, &["branch", "--list", &format!("nightshift/slow/{}", slow.id)]).is_empty(), "an unmerged branch was deleted");
}

fn clock_now(clock: &ManualClock) -> chrono::DateTime<Utc> {
    nightshift_core::Clock::now(clock)
}

#[test]
fn routine_files_say_where_a_workspace_is_wrong() {
    let th = TestHome::new();
    let plain = th.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let repo = repo(th.path(), "repo");
    th.routine("nocwd", "schedule: \"0 3 * * *\"\ncommand: \"true\"\nworkspace: worktree\n");
    th.routine("nogit", &format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\ncwd: {}\nworkspace: worktree\n", plain.display()));
    th.routine("strays", &format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\ncwd: {}\npush: origin\nbase: main\n", repo.display()));
    th.routine("typo", &format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\ncwd: {}\nworkspace: worktrees\n", repo.display()));
    th.routine("badpush", &format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\ncwd: {}\nworkspace: worktree\npush: \"-f\"\n", repo.display()));
    th.routine(
        "good",
        &format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\ncwd: {}\nworkspace: worktree\nbase: main\npush: origin\n", repo.join("src").display()),
    );
    let set = nightshift_core::routine::load_home(&Home::at(th.path()), &Default::default());
    let errors: BTreeMap<String, Vec<String>> =
        set.invalid.iter().map(|i| (i.name.clone(), i.errors.iter().map(|d| d.to_string()).collect())).collect();
    assert_eq!(
        errors["nocwd"],
        ["routines/nocwd.yaml:3:12: `workspace: worktree` needs `cwd:` — a directory in the git repository to make worktrees of"]
    );
    assert_eq!(
        errors["nogit"],
        [format!(
            "routines/nogit.yaml:3:6: `workspace: worktree` needs `cwd` in a git repository; {} is not in one (no .git in it or above)",
            plain.display()
        )]
    );
    assert_eq!(
        errors["strays"],
        [
            "routines/strays.yaml:4:1: `push` only applies to `workspace: worktree`",
            "routines/strays.yaml:5:1: `base` only applies to `workspace: worktree`"
        ]
    );
    assert_eq!(
        errors["typo"],
        ["routines/typo.yaml:4:12: unknown workspace \"worktrees\" (expected cwd — run in `cwd` itself — or worktree — a git worktree of its own per run)"]
    );
    assert_eq!(errors["badpush"], ["routines/badpush.yaml:5:7: `push` must be a remote name (no spaces, not starting with '-')"]);
    assert!(!errors.contains_key("good"), "{errors:?}");
    let good = set.get("good").unwrap();
    assert_eq!(good.workspace, nightshift_core::routine::Workspace::Worktree { base: Some("main".into()), push: Some(nightshift_core::routine::PushSpec { remote: "origin".into(), ..Default::default() }) });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_run_starts_in_the_same_subdirectory_and_from_base() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    git(&repo, &["checkout", "-q", "-b", "release"]);
    std::fs::write(repo.join("src/release.rs"), "// release\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "release only"]);
    git(&repo, &["checkout", "-q", "main"]);
    th.routine(
        "sub",
        &format!(
            "schedule: \"0 3 * * *\"\ncommand: \"pwd > here.txt; ls > seen.txt\"\ncwd: {}\nworkspace: worktree\nbase: release\n",
            repo.join("src").display()
        ),
    );
    let engine = engine(&th);
    let rec = engine.run_now("sub", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let c = rec.changes.unwrap();
    assert_eq!(c.base.as_deref(), Some(git(&repo, &["rev-parse", "release"]).as_str()));
    let branch = c.branch.unwrap();
    let here = git(&repo, &["show", &format!("{branch}:src/here.txt")]);
    assert_eq!(PathBuf::from(here), th.path().join("worktrees").join(&rec.id).join("src").canonicalize().unwrap());
    assert!(git(&repo, &["show", &format!("{branch}:src/seen.txt")]).lines().any(|l| l == "release.rs"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_prompt_gets_its_branch_and_last_report() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    // A stand-in for the agent CLI: it keeps the prompt it was given (the last argument after -p).
    th.script("claude", "while [ $# -gt 0 ]; do if [ \"$1\" = -p ]; then printf '%s' \"$2\" > prompt.txt; fi; shift; done");
    th.routine("ask", &format!("schedule: \"0 3 * * *\"\nagent: claude\nprompt: \"Work on {{branch}}; before: {{last_report}}\"\ncwd: {}\nworkspace: worktree\n", repo.display()));
    let engine = EngineOptions::for_test(th.path()).path_first(&th.bin_dir()).open();
    let rec = engine.run_now("ask", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let branch = rec.changes.unwrap().branch.unwrap();
    assert_eq!(git(&repo, &["show", &format!("{branch}:prompt.txt")]), format!("Work on {branch}; before: (no previous report)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_untracked_file_is_not_copied_into_the_repository() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    let big = nightshift_core::workspace::MAX_UNTRACKED_PHOTOGRAPHED as usize + 1;
    let data: Vec<u8> = (0..big as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(repo.join("dataset.bin"), data).unwrap();
    let objects = |repo: &Path| -> u64 {
        let mut total = 0;
        let mut stack = vec![repo.join(".git/objects")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() { stack.push(e.path()) } else { total += e.metadata().unwrap().len() }
            }
        }
        total
    };
    let before = objects(&repo);
    th.routine("tidy", &format!("schedule: \"0 3 * * *\"\ncommand: \"echo more >> notes.txt\"\ncwd: {}\n", repo.display()));
    let engine = engine(&th);
    let rec = engine.run_now("tidy", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let c = rec.changes.unwrap();
    assert_eq!(c.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["notes.txt"]);
    // dataset.bin does not compress: stored, it would add 16 MiB; the photographs add a few KiB.
    assert!(objects(&repo) - before < 1 << 20, "the photograph stored the big untracked file");
}

/// A remote that wants a password: the push fails at once with git's words — no prompt waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_that_asks_for_a_password_fails_the_push_without_a_prompt() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/team.git", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { break };
            let mut buf = [0u8; 4096];
            let _ = std::io::Read::read(&mut s, &mut buf);
            let _ = std::io::Write::write_all(&mut s, b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"team\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    git(&repo, &["remote", "add", "origin", &url]);
    th.routine("nightly", &format!("schedule: \"0 3 * * *\"\ncommand: \"echo x >> notes.txt\"\ncwd: {}\nworkspace: worktree\npush: origin\n", repo.display()));
    let engine = engine(&th);
    let rec = engine.run_now("nightly", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let started = std::time::Instant::now();
    engine.push_branches_now().await;
    assert!(started.elapsed() < Duration::from_secs(30), "the push waited for something");
    let push = engine.run(&rec.id).unwrap().changes.unwrap().push.unwrap();
    assert_eq!((push.state.as_str(), push.tries), ("pending", 1), "{push:?}");
    let said = push.error.unwrap();
    assert!(said.contains("terminal prompts disabled"), "{said}");
}

/// `max_worktrees`: a worktree run beyond the cap waits, saying why, while runs in their `cwd`
/// go on; and a new worktree removes the oldest kept ones early to stay within it — their
/// branches stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_worktrees_holds_a_run_back_and_makes_room_from_the_oldest_kept() {
    let th = TestHome::new();
    let repo = repo(th.path(), "repo");
    std::fs::write(th.path().join("nightshift.toml"), "max_parallel = 4\nmax_worktrees = 2\n").unwrap();
    th.routine("slow", &format!("schedule: \"0 3 * * *\"\ncommand: \"sleep 2\"\ncwd: {}\nworkspace: worktree\n", repo.display()));
    th.routine("quick", &format!("schedule: \"0 3 * * *\"\ncommand: \"echo hi > hi.txt\"\ncwd: {}\nworkspace: worktree\n", repo.display()));
    th.routine("there", &format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\ncwd: {}\n", repo.display()));
    let e = engine(&th);
    // Two kept worktrees first.
    let first = e.run_now("quick", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let second = e.run_now("quick", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let path = |r: &nightshift_core::run::RunRecord| PathBuf::from(r.changes.as_ref().unwrap().worktree.clone().unwrap());
    assert!(path(&first).exists() && path(&second).exists());
    // A third: the oldest kept one goes to make room, its branch stays.
    let slow = e.run_now("slow", Trigger::Manual).await.unwrap();
    nightshift_testkit::wait_until_async("the slow run's worktree", nightshift_testkit::secs(10), || !path(&first).exists()).await;
    assert!(path(&second).exists(), "only the oldest is removed");
    let branch = first.changes.as_ref().unwrap().branch.clone().unwrap();
    assert!(git(&repo, &["branch", "--list", &branch]).contains(&branch), "its branch stays");
    // With `max_worktrees = 1` a second worktree run waits while the slow one goes; a run in its
    // cwd does not.
    std::fs::write(th.path().join("nightshift.toml"), "max_parallel = 4\nmax_worktrees = 1\n").unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await; // the settings are looked at once a second
    let quick = e.run_now("quick", Trigger::Manual).await.unwrap();
    let there = e.run_now("there", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(there.status, RunStatus::Completed);
    let waiting = e.store().get_run(&quick.id).unwrap();
    assert_eq!((waiting.status, waiting.message.as_deref()), (RunStatus::Queued, Some("queued (position 1): waiting: 1 worktree run is going (`max_worktrees = 1`)")));
    let (slow, quick) = (slow.wait().await.unwrap(), quick.wait().await.unwrap());
    assert_eq!((slow.status, quick.status), (RunStatus::Completed, RunStatus::Completed));
    assert!(quick.started_at.unwrap() >= slow.finished_at.unwrap(), "after the slow one");
}
