//! Full and read-only disks, for real: the home lives on a size-limited tmpfs (root only; CI runs
//! as root). Each case must end in bounded time with one sentence that names the disk and the
//! cause, and no run may be lost or recorded with the wrong cause.

mod common;
use common::*;
use nightshift_testkit::{TestHome, Tmpfs};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// A Nightshift home on `fs` with one routine.
fn home_on(fs: &Tmpfs, routine: &str) -> PathBuf {
    let home = fs.path().join("home");
    std::fs::create_dir_all(home.join("routines")).unwrap();
    std::fs::write(home.join("routines/job.yaml"), format!("name: job\nschedule: \"0 3 * * *\"\ncommand: \"{routine}\"\n")).unwrap();
    home
}

/// `nightshiftctl ARGS` on that home, killed (and the test failed) if it outlives `limit`.
fn ctl_on(th: &TestHome, home: &Path, args: &[&str], limit: Duration) -> Output {
    let mut child = ctl(th).env("NIGHTSHIFT_HOME", home).args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("`nightshiftctl {}` hung past {limit:?}; stderr: {}", args.join(" "), stderr(&out));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn run_dir_of(home: &Path) -> PathBuf {
    let dirs: Vec<_> = std::fs::read_dir(home.join("runs/job")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "one run directory: {dirs:?}");
    dirs[0].clone()
}

#[test]
fn a_run_that_fills_the_disk_says_so_and_is_recorded_with_its_own_exit_code_once_space_is_freed() {
    let Some(fs) = Tmpfs::mount(3 * 1024) else { return };
    let th = TestHome::new();
    // 8 MB into a 3 MB disk: `head` fails with ENOSPC, the run exits 7.
    let home = home_on(&fs, "head -c 8000000 /dev/zero || exit 7");

    let out = ctl_on(&th, &home, &["run", "job", "--wait"], Duration::from_secs(60));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ended failed (exit code 7) but could not be recorded"), "{err}");
    assert!(err.contains(&format!("the disk holding {} is full", home.display())), "the disk and the cause, named: {err}");
    assert!(err.contains("Nothing is lost"), "{err}");
    assert!(!err.contains("could not finalize"), "one sentence, not a retry log: {err}");

    // The exit code was kept in the run directory although the disk was full.
    let run_dir = run_dir_of(&home);
    assert_eq!(std::fs::read_to_string(run_dir.join("exit_code")).unwrap().trim(), "7");

    // Space is freed: the next command records the run with its own cause, not "interrupted".
    std::fs::remove_file(run_dir.join("stdout.log")).unwrap();
    let out = ctl_on(&th, &home, &["runs", "--json"], Duration::from_secs(30));
    let runs = json(&out);
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "failed", "{:?}", runs[0]);
    assert_eq!(runs[0]["reason"], "exit_nonzero", "{:?}", runs[0]);
    assert_eq!(runs[0]["exit_code"], 7, "{:?}", runs[0]);
}

#[test]
fn on_a_full_disk_a_run_is_not_started_and_the_record_says_why() {
    let Some(fs) = Tmpfs::mount(4 * 1024) else { return };
    let th = TestHome::new();
    let home = home_on(&fs, "echo hello");
    assert!(ctl_on(&th, &home, &["routines", "list"], Duration::from_secs(30)).status.success());
    fs.fill(300);

    let out = ctl_on(&th, &home, &["run", "job", "--wait", "--json"], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("spawn_failed")), "{rec:#}");
    let message = rec["message"].as_str().unwrap();
    assert!(message.starts_with(&format!("not started: the disk holding {}", home.join("runs/job").display())), "{message}");
    assert!(message.ends_with("is full") || message.contains("KiB free); free some space and run it again"), "{message}");
    assert_eq!(message.matches("is full").count(), 1, "said once: {message}");
}

#[test]
fn a_read_only_home_is_named_nothing_hangs_and_its_history_can_still_be_read() {
    let Some(fs) = Tmpfs::mount(4 * 1024) else { return };
    let th = TestHome::new();
    let home = home_on(&fs, "echo hello from before");
    let run = ctl_on(&th, &home, &["run", "job", "--wait", "--json"], Duration::from_secs(30));
    assert!(run.status.success(), "{}", stderr(&run));
    let id = json(&run)["id"].as_str().unwrap().to_string();
    fs.set_read_only(true);
    let before = every_file(&home);
    let said = format!("the file system holding {} is read-only", home.display());
    // What writes is refused, in one line.
    for args in [&["run", "job", "--wait"][..], &["routines", "list"], &["pause"]] {
        let out = ctl_on(&th, &home, args, Duration::from_secs(30));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&said), "{args:?}: {err}");
        // One cause, one line: not SQLite's vaguer "unable to open database file" first.
        assert_eq!(err.lines().filter(|l| l.starts_with("error: ")).count(), 1, "{args:?}: said once: {err}");
    }
    // What only reads the history works, saying once why nothing is recorded.
    let reads: [(&[&str], &str); 5] = [(&["runs"], "✓ completed"), (&["show", &id], "✓ job · completed"), (&["report", &id], "hello from before"), (&["logs", &id], "hello from before"), (&["why", "job"], "job — At 03:00")];
    for (args, expected) in reads {
        let out = ctl_on(&th, &home, args, Duration::from_secs(30));
        let err = stderr(&out);
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(stdout(&out).contains(expected), "{args:?}: {}", stdout(&out));
        assert_eq!(err.matches(&said).count(), 1, "{args:?}: {err}");
        assert!(err.contains("showing the history as it is") && !err.contains("error:"), "{args:?}: {err}");
    }
    assert!(every_file(&home) == before, "reading a read-only home changed nothing");
    fs.set_read_only(false);
}

/// Every file under `dir` with its bytes, sorted by path.
fn every_file(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut all = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            match e.path().is_dir() {
                true => stack.push(e.path()),
                false => all.push((e.path(), std::fs::read(e.path()).unwrap())),
            }
        }
    }
    all.sort();
    all
}
