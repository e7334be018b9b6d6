//! Worktrees on a large repository: creating and removing a run's worktree (Nightshift's
//! `workspace::start` + cleanup, in-process) against `git worktree add` + `git worktree remove`
//! themselves, and whole processes — `nightshiftctl run NAME --wait` of `true` as a worktree run,
//! as a `cwd` run in the repository (which photographs the checkout before and after), and as a
//! run outside git — in the same run. Medians of 5.
//!
//! `NIGHTSHIFT_BENCH_QUICK=1`: 10 000 files instead of 100 000, 3 rounds.

use nightshift_testkit::bench::{fmt, measure};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "B")
        .env("GIT_AUTHOR_EMAIL", "b@x")
        .env("GIT_COMMITTER_NAME", "B")
        .env("GIT_COMMITTER_EMAIL", "b@x")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let (files, rounds) = if quick { (10_000, 3) } else { (100_000, 5) };
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let started = Instant::now();
    for i in 0..files {
        let dir = repo.join(format!("d{:03}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(dir.join(format!("f{i}.txt")), format!("line {i}\n")).unwrap();
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "files"]);
    println!("Worktrees of a repository with {files} files (made in {}), medians of {rounds}", fmt(started.elapsed()));

    // Baseline: git itself.
    let (mut git_add, mut git_remove) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        let path = tmp.path().join(format!("plain-{i}"));
        let t = Instant::now();
        git(&repo, &["worktree", "add", "-q", "--no-track", "-b", &format!("plain/{i}"), path.to_str().unwrap(), "HEAD"]);
        git_add.push(t.elapsed());
        let t = Instant::now();
        git(&repo, &["worktree", "remove", "--force", "--force", path.to_str().unwrap()]);
        git_remove.push(t.elapsed());
    }

    // Nightshift, in-process: the same, as a run does it (start) and cleanup does it (remove).
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join("routines")).unwrap();
    let text = format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\ncwd: {}\nworkspace: worktree\n", repo.display());
    let file = home.join("routines/wt.yaml");
    std::fs::write(&file, &text).unwrap();
    std::fs::write(
        home.join("routines/incwd.yaml"),
        format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\ncwd: {}\n", repo.display()),
    )
    .unwrap();
    std::fs::write(home.join("routines/outside.yaml"), format!("schedule: \"0 3 * * *\"\ncommand: \"true\"\ncwd: {}\n", tmp.path().display()))
        .unwrap();
    let routine = nightshift_core::routine::parse_routine(&text, &file, "wt.yaml").expect("a valid routine");
    let (mut ours_add, mut ours_remove) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        let id = format!("bench{i}");
        let run_dir = tmp.path().join("runs").join(&id);
        std::fs::create_dir_all(&run_dir).unwrap();
        let t = Instant::now();
        let started = nightshift_core::workspace::start(&routine, &id, &run_dir, &tmp.path().join("worktrees"), None).unwrap().unwrap();
        ours_add.push(t.elapsed());
        let wt = started.worktree.clone().unwrap();
        let t = Instant::now();
        nightshift_core::workspace::remove_worktree(&tmp.path().join("worktrees"), &repo, &wt, started.branch.as_deref(), None, false).unwrap();
        ours_remove.push(t.elapsed());
        assert!(!wt.exists());
    }
    println!("| a worktree of the repository | git itself | Nightshift | ratio |");
    println!("|---|---:|---:|---:|");
    let both = |a: &[Duration], b: &[Duration]| a.iter().zip(b).map(|(x, y)| *x + *y).collect::<Vec<_>>();
    for (label, g, n) in [
        ("create (`git worktree add` / a run's workspace start)", git_add.clone(), ours_add.clone()),
        ("remove (`git worktree remove` / cleanup)", git_remove.clone(), ours_remove.clone()),
        ("both", both(&git_add, &git_remove), both(&ours_add, &ours_remove)),
    ] {
        let (g, n) = (median(g), median(n));
        println!("| {label} | {} | {} | {:.2}× |", fmt(g), fmt(n), n.as_secs_f64() / g.as_secs_f64());
    }

    // Whole processes: a run of `true`, three ways.
    let ctl = env!("CARGO_BIN_EXE_nightshiftctl");
    let run = |name: &str| {
        let mut times = Vec::new();
        let mut peak = 0;
        for _ in 0..rounds {
            let m = measure(Command::new(ctl).args(["run", name, "--wait"]).env("NIGHTSHIFT_HOME", &home));
            assert_eq!(m.code, Some(0), "nightshiftctl run {name} failed");
            times.push(m.time);
            peak = peak.max(m.peak_kib);
        }
        (median(times), peak)
    };
    println!();
    println!("| `nightshiftctl run NAME --wait` of `true`, whole process | time | peak |");
    println!("|---|---:|---:|");
    for (label, name) in [("outside git", "outside"), ("in the repository (`cwd`, change summary)", "incwd"), ("`workspace: worktree`", "wt")] {
        let (t, peak) = run(name);
        println!("| {label} | {} | {} MiB |", fmt(t), peak / 1024);
    }
}
