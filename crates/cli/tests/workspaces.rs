//! Worktree runs through the real `nightshiftctl` and real git: kill -9 of the engine mid-run
//! (recovery commits and summarises the worktree exactly once), `show` and `run --wait` saying
//! what changed, `push` retrying a refused push, `prune`.

mod common;
use common::*;
use nightshift_testkit::git::{accept_pushes, git, init_bare, init_repo, refuse_pushes};
use nightshift_testkit::{secs, wait_until, TestHome};
use std::path::PathBuf;
use std::time::Duration;

fn repo(th: &TestHome) -> PathBuf {
    let dir = th.path().join("repo");
    init_repo(&dir, &[("README.md", "hello\n")]);
    dir
}

#[test]
fn kill_9_of_the_engine_mid_run_commits_and_summarises_the_worktree_once() {
    let th = TestHome::new();
    let repo = repo(&th);
    let mark = th.path().join("started");
    th.routine(
        "wt",
        &format!(
            "schedule: \"0 3 * * *\"\ncommand: \"echo a > a.txt; touch {}; sleep 1; echo b > b.txt\"\ncwd: {}\nworkspace: worktree\n",
            mark.display(),
            repo.display()
        ),
    );
    let mut waiting = ctl(&th).args(["run", "wt", "--wait"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    wait_until("the run to start", secs(20), || mark.exists());
    waiting.kill().unwrap(); // SIGKILL: the engine dies, the run's process group goes on
    waiting.wait().unwrap();

    let runs = json(&ctl(&th).args(["runs", "--json"]).output().unwrap());
    let id = runs[0]["id"].as_str().unwrap().to_string();
    // The next command settles it from its files once its process has ended.
    let mut rec = serde_json::Value::Null;
    wait_until("the run to be settled", secs(30), || {
        rec = json(&ctl(&th).args(["show", &id, "--json"]).output().unwrap());
        rec["status"] != "running"
    });
    assert_eq!(rec["status"], "completed", "{rec}");
    let changes = &rec["changes"];
    let files: Vec<&str> = changes["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(files, ["a.txt", "b.txt"], "{changes}");
    let by: Vec<&str> = changes["commits"].as_array().unwrap().iter().map(|c| c["by"].as_str().unwrap()).collect();
    assert_eq!(by, ["nightshift"]);

    // Settled once: asking again changes nothing, and the branch has exactly one commit of ours.
    let again = json(&ctl(&th).args(["show", &id, "--json"]).output().unwrap());
    assert_eq!(again["changes"], rec["changes"]);
    let branch = changes["branch"].as_str().unwrap();
    assert_eq!(git(&repo, &["rev-list", "--count", &format!("main..{branch}")]), "1");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "", "the user's checkout changed");

    let shown = ctl(&th).args(["show", &id]).output().unwrap();
    let text = stdout(&shown);
    assert!(text.contains(&format!("changes      2 files changed, +2 \u{2212}0 on {branch}")), "{text}");
    assert!(text.contains(" +1 \u{2212}0  a.txt\n"), "{text}");
    assert!(text.contains("(by Nightshift: what the run left uncommitted)"), "{text}");
}

#[test]
fn a_refused_push_is_said_by_run_and_pushed_later_by_push() {
    let th = TestHome::new();
    let repo = repo(&th);
    let remote = th.path().join("remote.git");
    init_bare(&remote);
    git(&repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
    refuse_pushes(&remote, "frozen for the release");
    th.routine("nightly", &format!("schedule: \"0 3 * * *\"\ncommand: \"echo x > x.txt\"\ncwd: {}\nworkspace: worktree\npush: origin\n", repo.display()));

    let out = ctl(&th).args(["run", "nightly", "--wait"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("1 file changed, +1 \u{2212}0 on nightshift/nightly/"), "{said}");
    assert!(
        said.contains("push to origin: not pushed yet (git push to origin was refused: [remote rejected] (pre-receive hook declined); the remote said: frozen for the release)"),
        "{said}"
    );
    let id = json(&ctl(&th).args(["runs", "--json"]).output().unwrap())[0]["id"].as_str().unwrap().to_string();
    let shown = stdout(&ctl(&th).args(["show", &id]).output().unwrap());
    assert!(shown.contains("push         origin: pending: try 1 failed (git push to origin was refused"), "{shown}");

    let refused = ctl(&th).args(["push", &id]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("failed: git push to origin was refused"), "{}", stderr(&refused));

    accept_pushes(&remote);
    let pushed = ctl(&th).args(["push", &id]).output().unwrap();
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    let branch = format!("nightshift/nightly/{id}");
    assert_eq!(stdout(&pushed).trim(), format!("pushed {branch} to origin"));
    assert_eq!(git(&remote, &["rev-parse", &branch]), git(&repo, &["rev-parse", &branch]));

    // A run with nothing to push says so.
    th.routine("plain", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    assert!(ctl(&th).args(["run", "plain", "--wait"]).output().unwrap().status.success());
    let plain = json(&ctl(&th).args(["runs", "--routine", "plain", "--json"]).output().unwrap())[0]["id"].as_str().unwrap().to_string();
    let none = ctl(&th).args(["push", &plain]).output().unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(stderr(&none).contains("has no branch to push"), "{}", stderr(&none));
}

#[test]
fn prune_removes_worktrees_past_their_days_and_says_so() {
    let th = TestHome::new();
    let repo = repo(&th);
    std::fs::write(th.path().join("nightshift.toml"), "keep_worktrees_days = 0\n").unwrap();
    th.routine("wt", &format!("schedule: \"0 3 * * *\"\ncommand: \"echo x > x.txt\"\ncwd: {}\nworkspace: worktree\n", repo.display()));
    assert!(ctl(&th).args(["run", "wt", "--wait"]).output().unwrap().status.success());
    let id = json(&ctl(&th).args(["runs", "--json"]).output().unwrap())[0]["id"].as_str().unwrap().to_string();
    let wt = th.path().join("worktrees").join(&id);
    assert!(wt.is_dir());
    std::thread::sleep(Duration::from_millis(20));

    let dry = ctl(&th).args(["prune", "--dry-run"]).output().unwrap();
    assert_eq!(stdout(&dry).trim(), format!("would remove {} (wt run {id})", wt.display()));
    assert!(wt.is_dir());
    let done = ctl(&th).args(["prune"]).output().unwrap();
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(stdout(&done).trim(), format!("removed {} (wt run {id})", wt.display()));
    assert!(!wt.exists());
    assert!(!git(&repo, &["branch", "--list", &format!("nightshift/wt/{id}")]).is_empty(), "the branch went too");
    let shown = stdout(&ctl(&th).args(["show", &id]).output().unwrap());
    assert!(shown.contains("worktree     removed "), "{shown}");
    let again = ctl(&th).args(["prune"]).output().unwrap();
    assert_eq!(stdout(&again).trim(), "nothing to prune: no settled run's worktree is older than 0 days (keep_worktrees_days), and no run's files are older than 90 days or beyond the newest 1000 of its routine (keep_runs_days, keep_runs_per_routine)");
}

#[test]
fn prune_removes_old_run_files_keeps_their_records_and_says_what_it_freed() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "keep_runs_days = 30\n").unwrap();
    th.routine("job", "schedule: \"0 3 * * *\"\ncommand: \"echo a report line\"\n");
    for _ in 0..3 {
        assert!(ctl(&th).args(["run", "job", "--wait"]).output().unwrap().status.success());
    }
    let ids: Vec<String> = json(&ctl(&th).args(["runs", "--json"]).output().unwrap()).as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect();
    // Make them forty days old (a fake clock cannot reach a separate process).
    let db = rusqlite::Connection::open(th.path().join("nightshift.db")).unwrap();
    let old = chrono::Utc::now() - chrono::Duration::days(40);
    db.execute("UPDATE runs SET sort_ms = sort_ms - ?1, finished_at = ?2", rusqlite::params![chrono::Duration::days(40).num_milliseconds(), nightshift_core::words::fmt_time(&old)]).unwrap();
    drop(db);
    let (newest, older) = (&ids[0], &ids[1..]);

    let dry = stdout(&ctl(&th).args(["prune", "--dry-run"]).output().unwrap());
    for id in older {
        assert!(dry.contains(&format!("would remove the files of job run {id} (")), "{dry}");
    }
    assert!(dry.contains("2 runs: would free ") && dry.contains("; their records stay (history, usage, `show`)"), "{dry}");
    assert!(older.iter().all(|id| th.path().join("runs/job").join(id).is_dir()));

    let done = ctl(&th).args(["prune"]).output().unwrap();
    assert!(done.status.success(), "{}", stderr(&done));
    assert!(stdout(&done).contains("2 runs: freed "), "{}", stdout(&done));
    for id in older {
        assert!(!th.path().join("runs/job").join(id).exists());
        let shown = stdout(&ctl(&th).args(["show", id]).output().unwrap());
        assert!(shown.contains("job · completed") && shown.contains("files        removed "), "{shown}");
        let report = ctl(&th).args(["report", id]).output().unwrap();
        assert!(stderr(&report).contains("has no report any more: its files were removed"), "{}", stderr(&report));
        let logs = ctl(&th).args(["logs", id]).output().unwrap();
        assert!(stderr(&logs).contains("was removed") && stderr(&logs).contains("by retention"), "{}", stderr(&logs));
    }
    // The newest completed run keeps its files: its report is the next run's {last_report}.
    assert!(th.path().join("runs/job").join(newest).is_dir());
}
