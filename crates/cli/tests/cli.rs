//! `nightshiftctl` as a user meets it: exit codes, error lines, history, and surviving a crash.

mod common;

use common::{ctl, json, stderr, stdout};
use nightshift_testkit::{secs, wait_until, TestHome};

#[test]
fn validate_prints_every_problem_as_file_line_col_and_exits_2() {
    let th = TestHome::new();
    th.routine("ok", "schedule: \"0 * * * *\"\ncommand: echo ok\n");
    th.routine("x", "schedule: \"0 9 * * *\"\nagent: claud\nprompt: hi\n");
    let out = ctl(&th).args(["routines", "validate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).lines().next().unwrap(),
        "error: routines/x.yaml:2:8: unknown agent \"claud\" (expected claude, codex, gemini, opencode, copilot); did you mean \"claude\"?"
    );
    assert!(stderr(&out).contains("1 valid, 1 invalid (1 problem)"));

    std::fs::remove_file(th.path().join("routines/x.yaml")).unwrap();
    let out = ctl(&th).args(["routines", "validate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "✓ 1 routine valid\n");
}

/// A warning is located like an error and never blocks: `validate` exits 0 with only warnings,
/// 2 when an error comes with them; `routines list --json` carries both per routine.
#[test]
fn warnings_are_located_listed_and_never_block() {
    let th = TestHome::new();
    th.routine("synced", "schedule: \"0 8 * * 1\"\ncommand: echo hi\nsandbox: false\ntimeout: 45\n");
    let out = ctl(&th).args(["routines", "validate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "routines/synced.yaml:3:10: warning: agents-cli's `sandbox: false` is not taken as `sandbox: off`: Nightshift's default applies (its sandbox for agent routines, none for commands); write `sandbox: off` to opt out\n\
         routines/synced.yaml:4:10: warning: `timeout: 45` has no unit: taken as 45 seconds; write 45s (or 10m, 1h) to say so\n"
    );
    assert_eq!(stdout(&out), "✓ 1 routine valid, 2 warnings\n");
    let listed = json(&ctl(&th).args(["routines", "list", "--json"]).output().unwrap());
    let row = &listed.as_array().unwrap()[0];
    assert_eq!((row["valid"].as_bool(), row["errors"].as_array().unwrap().len(), row["warnings"].as_array().unwrap().len()), (Some(true), 0, 2), "{row:#}");
    th.routine("broken", "schedule: \"0 8 * * 1\"\ncommand: echo hi\nhostStrategy: cloud\ncreatedAt: today\n");
    let out = ctl(&th).args(["routines", "validate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    let lines: Vec<&str> = said.lines().collect();
    assert!(lines[0].starts_with("error: routines/broken.yaml:3:15: `hostStrategy: cloud` is not supported"), "{lines:#?}");
    assert!(lines[1].starts_with("routines/broken.yaml:4:1: warning: `createdAt` is ignored"), "{lines:#?}");
    assert_eq!(*lines.last().unwrap(), "1 valid, 1 invalid (1 problem, 3 warnings)");
}

#[test]
fn validate_named_files() {
    let th = TestHome::new();
    let f = th.path().join("elsewhere.yaml");
    std::fs::write(&f, "schedule: \"0 * * * *\"\ncommand: ls\ntimeout: forever\n").unwrap();
    let out = ctl(&th).args(["routines", "validate"]).arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("elsewhere.yaml:3:10: invalid duration \"forever\""), "{}", stderr(&out));
    let out = ctl(&th).args(["routines", "validate", "missing.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: missing.yaml: no such file\n");
}

#[test]
fn usage_errors_exit_2_with_one_clear_line() {
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 * * * *\"\ncommand: echo hi\n");
    let out = ctl(&th).args(["run", "helo", "--wait"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: no routine named \"helo\"; did you mean \"hello\"?\n");
    let out = ctl(&th).args(["show", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: no run with id \"nope\" (see `nightshiftctl runs`)\n");
    let out = ctl(&th).args(["runs", "--status", "done"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("error: unknown status \"done\""));
}

#[test]
fn a_corrupt_database_is_reported_not_a_panic() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.db"), vec![7u8; 4096]).unwrap();
    let out = ctl(&th).args(["runs"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with(&format!("error: {} is not Nightshift's database — it is not a SQLite database", th.path().join("nightshift.db").display())), "{err}");
    assert!(err.contains("move that file away"), "{err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn run_wait_exit_codes_history_show_report_and_logs() {
    let th = TestHome::new();
    th.routine("good", "schedule: \"0 * * * *\"\ncommand: 'echo \"# Report\"; echo all fine'\n");
    th.routine("bad", "schedule: \"0 * * * *\"\ncommand: 'echo nope >&2; exit 4'\n");
    let good = ctl(&th).args(["run", "good", "--wait", "--json"]).output().unwrap();
    assert_eq!(good.status.code(), Some(0));
    let good = json(&good);
    assert_eq!(good["status"], "completed");
    assert_eq!(good["trigger"], "cli");
    let bad = ctl(&th).args(["run", "bad", "--wait", "--json"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let bad = json(&bad);
    assert_eq!((bad["status"].as_str(), bad["reason"].as_str()), (Some("failed"), Some("exit_nonzero")));

    let runs = json(&ctl(&th).args(["runs", "--json"]).output().unwrap());
    let ids: Vec<&str> = runs.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![bad["id"].as_str().unwrap(), good["id"].as_str().unwrap()], "newest first");
    let only_good = json(&ctl(&th).args(["runs", "--json", "--routine", "good"]).output().unwrap());
    assert_eq!(only_good.as_array().unwrap().len(), 1);
    let failed = json(&ctl(&th).args(["runs", "--json", "--status", "failed"]).output().unwrap());
    assert_eq!(failed[0]["id"], bad["id"]);

    let id = good["id"].as_str().unwrap();
    let shown = json(&ctl(&th).args(["show", &id[..12], "--json"]).output().unwrap());
    assert_eq!(shown, good, "show by id prefix gives the same record");
    let report = ctl(&th).args(["report", id]).output().unwrap();
    assert_eq!(stdout(&report), "# Report\nall fine\n");
    let logs = ctl(&th).args(["logs", id]).output().unwrap();
    assert_eq!(stdout(&logs), "# Report\nall fine\n");
    // A failed run's report explains its verdict, with what it printed last as evidence.
    let verdict = ctl(&th).args(["report", bad["id"].as_str().unwrap()]).output().unwrap();
    assert_eq!(verdict.status.code(), Some(0));
    assert!(stdout(&verdict).starts_with("# bad · failed · exit_nonzero\n\nThe command failed: exited with code 4: nope\n"), "{}", stdout(&verdict));
    assert!(stdout(&verdict).ends_with("**Its error output ended with:**\n\n    nope\n"), "{}", stdout(&verdict));
    let errlog = ctl(&th).args(["logs", bad["id"].as_str().unwrap(), "--stderr"]).output().unwrap();
    assert_eq!(stdout(&errlog), "nope\n");

    let human = stdout(&ctl(&th).args(["runs"]).output().unwrap());
    assert!(human.starts_with("ID "), "{human}");
    assert!(human.contains("✗ failed (exit_nonzero)"), "{human}");
}

fn run_rows(th: &TestHome) -> Vec<serde_json::Value> {
    json(&ctl(th).args(["runs", "--json"]).output().unwrap()).as_array().unwrap().clone()
}

#[test]
fn a_run_survives_its_engine_being_killed_and_is_settled_from_its_files() {
    let th = TestHome::new();
    let marker = th.path().join("started");
    th.routine(
        "slow",
        &format!("schedule: \"0 * * * *\"\ncommand: 'touch {}; sleep 2; echo survived the crash'\n", marker.display()),
    );
    let mut engine = ctl(&th).args(["run", "slow", "--wait"]).spawn().unwrap();
    wait_until("the run to start", secs(30), || marker.exists());
    // SIGKILL the engine mid-run: no chance to clean up.
    unsafe { libc::kill(engine.id() as i32, libc::SIGKILL) };
    engine.wait().unwrap();

    // The agent is in its own process group and keeps running; a short-lived command does not
    // pretend it has ended.
    let rows = run_rows(&th);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "running");

    // Once its process is done, the next engine settles it from its exit code file and log.
    let id = rows[0]["id"].as_str().unwrap().to_string();
    wait_until("settling", secs(30), || json(&ctl(&th).args(["show", &id, "--json"]).output().unwrap())["status"] != "running");
    let rec = json(&ctl(&th).args(["show", &id, "--json"]).output().unwrap());
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert_eq!(rec["exit_code"], 0);
    assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), "survived the crash");
    assert_eq!(run_rows(&th).len(), 1, "no duplicate record");
}

#[test]
fn a_run_killed_together_with_its_engine_is_recorded_as_interrupted() {
    let th = TestHome::new();
    let marker = th.path().join("pgid");
    th.routine("slow", &format!("schedule: \"0 * * * *\"\ncommand: 'cut -d\" \" -f5 /proc/$$/stat > {}; sleep 30'\n", marker.display()));
    let mut engine = ctl(&th).args(["run", "slow", "--wait"]).spawn().unwrap();
    wait_until("the run to start", secs(30), || std::fs::read_to_string(&marker).map(|s| !s.trim().is_empty()).unwrap_or(false));
    let pgid: i32 = std::fs::read_to_string(&marker).unwrap().trim().parse().unwrap();
    unsafe {
        libc::kill(engine.id() as i32, libc::SIGKILL);
        libc::killpg(pgid, libc::SIGKILL);
    }
    engine.wait().unwrap();
    let id = run_rows(&th)[0]["id"].as_str().unwrap().to_string();
    wait_until("settling", secs(30), || json(&ctl(&th).args(["show", &id, "--json"]).output().unwrap())["status"] != "running");
    let rec = json(&ctl(&th).args(["show", &id, "--json"]).output().unwrap());
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("interrupted")), "{rec:#}");
}

#[test]
fn run_without_wait_returns_at_once_and_logs_follow_to_the_end() {
    let th = TestHome::new();
    th.routine("bg", "schedule: \"0 * * * *\"\ncommand: 'echo one; sleep 1; echo two'\n");
    let out = ctl(&th).args(["run", "bg"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let id = stdout(&out).trim().to_string();
    assert_eq!(id.len(), 26, "prints the run id: {id}");
    let logs = ctl(&th).args(["logs", &id, "--follow"]).output().unwrap();
    assert_eq!(stdout(&logs), "one\ntwo\n");
    let rec = json(&ctl(&th).args(["show", &id, "--json"]).output().unwrap());
    assert_eq!(rec["status"], "completed");
}

/// `logs` reads through the same masking view as the window: a key the agent printed is masked
/// while the run is still going (nobody has scrubbed its file yet) — and, followed to the end,
/// still masked.
#[test]
fn logs_never_print_a_secret_even_of_a_live_run() {
    let th = TestHome::new();
    let key = "sk-ant-api03-livekey0123456789abcdefghijklmnop";
    th.routine("leaky", &format!("schedule: \"0 * * * *\"\ncommand: 'echo key={key}; sleep 2; echo done'\n"));
    let id = stdout(&ctl(&th).args(["run", "leaky"]).output().unwrap()).trim().to_string();
    let run_dir = th.path().join("runs/leaky").join(&id);
    wait_until("the run to write its key", secs(5), || std::fs::read_to_string(run_dir.join("stdout.log")).unwrap_or_default().contains("key="));
    assert!(std::fs::read_to_string(run_dir.join("stdout.log")).unwrap().contains(key), "the file itself is not scrubbed yet (no engine follows this run)");
    let live = stdout(&ctl(&th).args(["logs", &id]).output().unwrap());
    assert!(live.starts_with("key=") && !live.contains(key), "{live}");
    let followed = stdout(&ctl(&th).args(["logs", &id, "--follow"]).output().unwrap());
    assert!(followed.ends_with("done\n") && !followed.contains(key), "{followed}");
}

/// A run nobody follows (the CLI that started it returned) is scrubbed by its own wrapper when
/// it ends, before the wrapper exits: the key it printed and the token it was given are masked on
/// disk before any Nightshift process looks at the run, and settling it later has nothing left to
/// scan.
#[test]
fn a_run_nobody_follows_scrubs_its_own_logs_before_it_counts_as_finished() {
    let th = TestHome::new();
    let key = "sk-ant-api03-unfollowed0123456789abcdefghijk";
    let token = "a-plain-token-with-no-known-shape-42";
    th.routine(
        "leaky",
        &format!(
            "schedule: \"0 * * * *\"\ntimeout: 1h\nenv:\n  CLAUDE_CODE_OAUTH_TOKEN: {token}\ncommand: 'sleep 0.3; echo key={key}; echo \"token=$CLAUDE_CODE_OAUTH_TOKEN\" >&2'\n"
        ),
    );
    let id = stdout(&ctl(&th).args(["run", "leaky"]).output().unwrap()).trim().to_string();
    let run_dir = th.path().join("runs/leaky").join(&id);
    // The wrapper records the exit code, then the scrub (which records how far it got), then exits.
    wait_until("the run's wrapper to scrub its logs", secs(10), || nightshift_core::run_dir::scrubbed(&run_dir) != [0, 0]);
    assert_eq!(std::fs::read_to_string(run_dir.join("exit_code")).unwrap().trim(), "0");
    let out = std::fs::read_to_string(run_dir.join("stdout.log")).unwrap();
    let err = std::fs::read_to_string(run_dir.join("stderr.log")).unwrap();
    assert_eq!(out, format!("key={}\n", "*".repeat(key.len())));
    assert_eq!(err, format!("token={}\n", "*".repeat(token.len())));
    assert!(run_dir.join("unwatched").exists(), "the wrapper saw its engine go");
    let scrubbed: Vec<usize> = std::fs::read_to_string(run_dir.join("scrubbed")).unwrap().split_whitespace().map(|n| n.parse().unwrap()).collect();
    assert_eq!(scrubbed, [out.len(), err.len()], "the wrapper's scrub recorded how far it got");
    let rec = json(&ctl(&th).args(["show", &id, "--json"]).output().unwrap());
    assert_eq!(rec["status"], "completed", "{rec:#}");
}

#[test]
fn list_shows_valid_and_invalid_routines_with_next_fire() {
    let th = TestHome::new();
    th.routine("hourly", "schedule: \"0 * * * *\"\ntimezone: Europe/Berlin\ncommand: echo\n");
    th.routine("broken", "schedule: \"0 * * * *\"\ncommand: echo\nnotify: sometimes\n");
    let rows = json(&ctl(&th).args(["routines", "list", "--json"]).output().unwrap());
    let hourly = rows.as_array().unwrap().iter().find(|r| r["name"] == "hourly").unwrap();
    assert_eq!(hourly["valid"], true);
    assert_eq!(hourly["timezone"], "Europe/Berlin");
    assert!(hourly["next_fire"].as_str().unwrap().ends_with(":00:00.000Z"));
    let broken = rows.as_array().unwrap().iter().find(|r| r["name"] == "broken").unwrap();
    assert_eq!(broken["valid"], false);
    assert_eq!(broken["errors"][0], "routines/broken.yaml:3:9: unknown notify policy \"sometimes\" (expected always, failures or never)");
    let next = json(&ctl(&th).args(["routines", "next", "--json", "--count", "2"]).output().unwrap());
    assert_eq!(next[0]["fires"].as_array().unwrap().len(), 2);
}

#[test]
fn init_creates_a_home_whose_example_runs() {
    let th = tempfile::tempdir().unwrap();
    let home = th.path().join("fresh");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nightshiftctl"))
        .env("NIGHTSHIFT_HOME", &home)
        .args(["init"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_nightshiftctl"))
        .env("NIGHTSHIFT_HOME", &home)
        .args(["run", "hello", "--wait", "--json"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let rec: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let report = std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap();
    assert!(report.starts_with("Hello from Nightshift on "), "{report}");
}

#[test]
fn a_damaged_database_is_named_and_never_scheduled_on() {
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 3 * * *\"\ncommand: echo hi\n");
    // Enough history that the database has pages beyond the header.
    for _ in 0..30 {
        assert!(ctl(&th).args(["run", "hello", "--wait"]).output().unwrap().status.success());
    }
    let db = th.path().join("nightshift.db");
    // Checkpoint the WAL into the file, then damage its last page (the header stays, and the
    // first page of each table, which every open reads, too): only the whole check finds it.
    let _ = rusqlite::Connection::open(&db).unwrap().pragma_update(None, "wal_checkpoint", "TRUNCATE");
    let len = std::fs::metadata(&db).unwrap().len();
    assert!(len > 3 * 4096, "{len}");
    use std::os::unix::fs::FileExt;
    std::fs::OpenOptions::new().write(true).open(&db).unwrap().write_all_at(&[0xAB; 4096], len - 4096).unwrap();
    let out = ctl(&th).args(["daemon"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(&format!("the database {} is damaged", db.display())), "{err}");
    assert!(err.contains("Nightshift will not schedule on it") && err.contains(".damaged") && err.contains("never deletes it"), "{err}");
    assert!(db.exists(), "never deleted");
}

/// A Nightshift database damaged where SQLite looks first — its header overwritten, or the page
/// after its schema garbage — is called Nightshift's, damaged, in the same words by every command
/// (never "another program's", never an exit 0 that the next command contradicts), and left as
/// it was.
#[test]
fn a_damaged_nightshift_database_is_called_damaged_by_every_command() {
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 3 * * *\"\ncommand: echo hi\n");
    for _ in 0..5 {
        assert!(ctl(&th).args(["run", "hello", "--wait"]).output().unwrap().status.success());
    }
    let db = th.path().join("nightshift.db");
    let _ = rusqlite::Connection::open(&db).unwrap().pragma_update(None, "wal_checkpoint", "TRUNCATE");
    let healthy = std::fs::read(&db).unwrap();
    use std::os::unix::fs::FileExt;
    let commands: [&[&str]; 7] = [&["runs"], &["pause"], &["resume"], &["accounts", "list"], &["routines", "next"], &["routines", "validate"], &["daemon"]];
    for (damage, at, what) in [(&[0x5Au8; 100][..], 0u64, "its first bytes, the SQLite header, were overwritten"), (&[0xAB; 4096][..], 4096, "malformed")] {
        std::fs::write(&db, &healthy).unwrap();
        std::fs::OpenOptions::new().write(true).open(&db).unwrap().write_all_at(damage, at).unwrap();
        let before = std::fs::read(&db).unwrap();
        for args in commands {
            let out = ctl(&th).args(args).output().unwrap();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?} after damage at {at}: {err}");
            assert_eq!(err.matches(&format!("the database {} is damaged (", db.display())).count(), 1, "{args:?}: said once: {err}");
            assert!(err.contains(what) && err.contains(".damaged`), or restore it from a backup — Nightshift never deletes it"), "{args:?}: {err}");
            assert!(!err.contains("not Nightshift's") && !err.contains("NIGHTSHIFT_HOME"), "{args:?}: {err}");
            assert_eq!(std::fs::read(&db).unwrap(), before, "{args:?} changed the damaged file");
        }
    }
}

/// Another program's database where Nightshift's belongs (another runner keeps its own at the
/// same default path): refused in one sentence by every command and the daemon, the file byte for
/// byte as it was and no journal, WAL or shared-memory file beside it. A file that is not SQLite
/// at all likewise.
#[test]
fn another_programs_database_is_refused_and_left_untouched() {
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 3 * * *\"\ncommand: echo hi\n");
    let db = th.path().join("nightshift.db");
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch("PRAGMA journal_mode = DELETE; CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT, status TEXT); CREATE TABLE run_history (task_id INTEGER, output TEXT); INSERT INTO tasks (title, status) VALUES ('lint', 'done');").unwrap();
    }
    let listing = || {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(th.path()).unwrap().flatten().filter(|e| e.path().is_file()).map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap())).collect();
        files.sort();
        files
    };
    let before = listing();
    for args in [&["runs"][..], &["run", "hello", "--wait"], &["why", "hello"], &["daemon"]] {
        let out = ctl(&th).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(
            err.matches(&format!("{} is not Nightshift's database — it is another program's SQLite database (its tables: run_history, tasks)", db.display())).count(),
            1,
            "{args:?}: said once: {err}"
        );
        assert!(err.contains("set NIGHTSHIFT_HOME to another folder for Nightshift, or move that file away"), "{err}");
        assert_eq!(listing(), before, "{args:?} changed a file of the home");
    }
    std::fs::write(&db, "not a database at all\n").unwrap();
    let out = ctl(&th).args(["runs"]).output().unwrap();
    assert!(stderr(&out).contains("is not Nightshift's database — it is a text file, not a SQLite database"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "not a database at all\n");
}

/// `run NAME` finds its routine through the name index (it parses only the file it runs and files
/// that changed) and answers exactly as a full load would: a renamed routine, a name two files
/// claim, a removed file, a routine that does not exist.
#[test]
fn run_by_name_follows_every_file_change_like_a_full_load() {
    let th = TestHome::new();
    for i in 0..20 {
        th.routine(&format!("r{i:02}"), &format!("schedule: \"0 3 * * *\"\ncommand: echo r{i:02}\n"));
    }
    let run = |name: &str| ctl(&th).args(["run", name, "--wait"]).output().unwrap();
    assert!(run("r05").status.success(), "{}", stderr(&run("r05")));
    let db = rusqlite::Connection::open(th.path().join("nightshift.db")).unwrap();
    let indexed: i64 = db.query_row("SELECT COUNT(*) FROM routine_files", [], |r| r.get(0)).unwrap();
    assert_eq!(indexed, 20, "every file indexed by name");

    // Renamed inside its file (another size, another time).
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(th.path().join("routines/r07.yaml"), "name: nightly-seven\nschedule: \"0 3 * * *\"\ncommand: echo seven\n").unwrap();
    assert!(run("nightly-seven").status.success());
    let gone = run("r07");
    assert_eq!(gone.status.code(), Some(2));
    assert!(stderr(&gone).contains("no routine named \"r07\""), "{}", stderr(&gone));

    // Two files claim one name: both refused, each naming the other.
    th.routine("copy", "name: r09\nschedule: \"0 3 * * *\"\ncommand: echo copy\n");
    let dup = run("r09");
    assert_eq!(dup.status.code(), Some(2));
    let err = stderr(&dup);
    assert!(err.contains("routines/copy.yaml:1:1: duplicate routine name \"r09\" (also in routines/r09.yaml)"), "{err}");

    // A removed file is gone from the index too.
    std::fs::remove_file(th.path().join("routines/copy.yaml")).unwrap();
    assert!(run("r09").status.success());
    std::fs::remove_file(th.path().join("routines/r11.yaml")).unwrap();
    let missing = run("r11");
    assert!(stderr(&missing).contains("no routine named \"r11\"; did you mean"), "{}", stderr(&missing));
    let indexed: i64 = db.query_row("SELECT COUNT(*) FROM routine_files", [], |r| r.get(0)).unwrap();
    assert_eq!(indexed, 19);
}

/// Completions and manual pages come from the CLI's own definition: bash loads the completion
/// (`complete -p nightshiftctl`) and it completes subcommands; zsh and fish get theirs; the manual
/// pages — `nightshiftctl.1` and one per subcommand — render with `man -l`, each with its options.
#[test]
fn completions_and_manual_pages_come_from_the_cli_itself() {
    let th = TestHome::new();
    let out = ctl(&th).args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let script = th.path().join("nightshiftctl.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let probe = format!(
        ". {}; complete -p nightshiftctl; COMP_WORDS=(nightshiftctl rout); COMP_CWORD=1; COMP_LINE='nightshiftctl rout'; COMP_POINT=${{#COMP_LINE}}; _nightshiftctl nightshiftctl rout nightshiftctl; echo \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let bash = std::process::Command::new("bash").args(["--norc", "-c", &probe]).output().unwrap();
    let said = String::from_utf8_lossy(&bash.stdout);
    assert!(said.starts_with("complete ") && said.contains(" -F _nightshiftctl nightshiftctl\nroutines\n"), "{said}\n{}", String::from_utf8_lossy(&bash.stderr));
    for (shell, marker) in [("zsh", "#compdef nightshiftctl"), ("fish", "complete -c nightshiftctl")] {
        let out = ctl(&th).args(["completions", shell]).output().unwrap();
        assert!(stdout(&out).contains(marker), "{shell}: {}", stdout(&out));
    }

    let dir = th.path().join("man");
    let out = ctl(&th).args(["manpages"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    for page in ["nightshiftctl.1", "nightshiftctl-run.1", "nightshiftctl-routines-new.1", "nightshiftctl-secrets-set.1", "nightshiftctl-usage.1"] {
        assert!(stdout(&out).lines().any(|l| l.ends_with(page)), "{page} not written: {}", stdout(&out));
        let shown = std::process::Command::new("man").arg("-l").arg(dir.join(page)).env("MANWIDTH", "100").env("MANPAGER", "cat").env("PAGER", "cat").output().unwrap();
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.status.success() && text.contains("NAME") && text.contains("SYNOPSIS"), "{page}: {text}{}", String::from_utf8_lossy(&shown.stderr));
    }
    let run = std::process::Command::new("man").arg("-l").arg(dir.join("nightshiftctl-run.1")).env("MANWIDTH", "100").env("MANPAGER", "cat").output().unwrap();
    let run = String::from_utf8_lossy(&run.stdout).replace('\u{2010}', "-");
    assert!(run.contains("--ignore-budget") && run.contains("--wait-for-limit"), "{run}");
}

/// `nightshiftctl routines list | head -1`: a reader that goes away ends a printing command
/// quietly (as SIGPIPE ends `ls`), never with a panic and its backtrace.
#[test]
fn a_closed_pipe_ends_a_listing_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let th = TestHome::new();
    for i in 0..40 {
        th.routine(&format!("r{i:02}"), "schedule: \"0 2 * * *\"\ncommand: echo hi\n");
    }
    for args in [&["routines", "list"][..], &["runs"][..], &["completions", "bash"][..]] {
        // The reading end is closed before the command writes a byte.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = ctl(&th).args(args).stdout(writer).stderr(std::process::Stdio::piped()).spawn().unwrap().wait_with_output().unwrap();
        assert!(!stderr(&out).contains("panicked"), "{args:?}: {}", stderr(&out));
        assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{args:?}: ended by SIGPIPE, as a Unix filter is: {:?}", out.status);
    }
}

/// A manual run on a machine its routine's `devices:` does not list is refused, saying where it
/// runs (the window's Run now too, through the same engine call); `--here` runs it anyway,
/// recorded on the run.
#[test]
fn a_manual_run_respects_devices_unless_asked_to_run_here() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "device_name = \"laptop\"\n").unwrap();
    th.routine("studio", "schedule: \"0 3 * * *\"\ndevices: [studio, desk]\ncommand: echo made here\n");
    let refused = ctl(&th).args(["run", "studio", "--wait"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("studio runs on studio, desk (its `devices:`), not on this machine (laptop): run it there, or here anyway with `nightshiftctl run studio --here`"), "{}", stderr(&refused));
    assert!(json(&ctl(&th).args(["runs", "--json"]).output().unwrap()).as_array().unwrap().is_empty(), "nothing recorded for a refusal");

    let ran = ctl(&th).args(["run", "studio", "--here", "--wait", "--json"]).output().unwrap();
    let run = json(&ran);
    assert_eq!((run["status"].as_str(), run["here"].as_bool()), (Some("completed"), Some(true)), "{run:#}");
    let shown = stdout(&ctl(&th).args(["show", run["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.contains("devices      run here by hand (`--here`) although its `devices:` does not list this machine"), "{shown}");
    // A routine for this machine needs nothing and records nothing.
    th.routine("mine", "schedule: \"0 3 * * *\"\ndevices: [laptop]\ncommand: echo mine\n");
    let mine = json(&ctl(&th).args(["run", "mine", "--wait", "--json"]).output().unwrap());
    assert_eq!((mine["status"].as_str(), mine["here"].as_bool()), (Some("completed"), Some(false)), "{mine:#}");
}

/// A folder a routine names that is not there (yet: a mount that appears later) is a located
/// warning at load, for `cwd` and `allow.dirs` alike; a run started while it is missing is
/// `blocked · no_cwd`, naming it, and not tried again — once there, the routine runs.
#[test]
fn a_missing_folder_warns_at_load_and_blocks_at_start_without_retries() {
    let th = TestHome::new();
    let folder = th.path().join("mnt/disk");
    th.routine("backup", &format!("schedule: \"0 3 * * *\"\ncwd: {}\nretries: 2\nretry_backoff: 1s\ncommand: pwd\n", folder.display()));
    th.routine("docs", &format!("schedule: \"0 3 * * *\"\nagent: claude\nprompt: tidy\nallow: {{dirs: [{}]}}\n", folder.display()));
    let out = ctl(&th).args(["routines", "validate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains(&format!("routines/backup.yaml:2:6: warning: `cwd`: {} does not exist (yet); a run started while it is missing is blocked (no_cwd)", folder.display())), "{said}");
    assert!(said.contains(&format!("routines/docs.yaml:4:16: warning: `allow.dirs`: {} is not a folder (yet)", folder.display())), "{said}");

    for name in ["backup", "docs"] {
        let run = json(&ctl(&th).args(["run", name, "--wait", "--json"]).output().unwrap());
        assert_eq!((run["status"].as_str(), run["reason"].as_str()), (Some("blocked"), Some("no_cwd")), "{run:#}");
        let key = if name == "backup" { "`cwd:`" } else { "`allow.dirs`" };
        assert!(run["message"].as_str().unwrap().contains(&format!("not started: {}", if name == "backup" { format!("its folder {} ({key})", folder.display()) } else { format!("{} ({key})", folder.display()) })), "{run:#}");
        assert_eq!(run["attempts"].as_array().map_or(0, Vec::len), 0, "never tried: {run:#}");
    }
    assert_eq!(json(&ctl(&th).args(["runs", "--json"]).output().unwrap()).as_array().unwrap().len(), 2, "one record each, no retry");
    std::fs::create_dir_all(&folder).unwrap();
    let run = json(&ctl(&th).args(["run", "backup", "--wait", "--json"]).output().unwrap());
    assert_eq!(run["status"], "completed", "{run:#}");
}
