//! `nightshiftctl daemon` as a real process: it fires and records real runs, stops cleanly on
//! SIGTERM, never re-fires a slot after a restart, and refuses to be a second scheduler.

mod common;

use common::{ctl, json, runs, start_daemon, stderr, stop};
use nightshift_testkit::TestHome;
use std::collections::HashSet;
use std::time::Duration;

fn completed(th: &TestHome) -> usize {
    runs(th).iter().filter(|r| r["status"] == "completed").count()
}

#[test]
fn the_daemon_fires_real_runs_stops_on_sigterm_and_never_refires_a_slot() {
    let th = TestHome::new();
    th.routine("fast", "schedule: \"*/2 * * * * *\"\ntimezone: UTC\ncommand: echo tick\n");
    let d = start_daemon(&th);
    assert!(nightshift_testkit::waited(Duration::from_secs(30), || completed(&th) >= 2), "no runs fired: {:?}\ndaemon output:\n{}", runs(&th), d.output());
    let (code, out) = stop(d);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("▶ fast started (schedule"), "{out}");
    assert!(out.contains("✓ fast completed"), "{out}");
    let first: Vec<serde_json::Value> = runs(&th);

    // A second daemon on the same home picks up where the first stopped — after slots (every
    // 2 s) passed with nobody scheduling: real time has to pass here, there is nothing to await.
    std::thread::sleep(Duration::from_millis(2500));
    let d = start_daemon(&th);
    nightshift_testkit::wait_until("runs after the restart", Duration::from_secs(30), || completed(&th) >= first.len() + 2);
    let (code, _) = stop(d);
    assert_eq!(code, 0);
    let all = runs(&th);
    let slots: Vec<&str> = all.iter().map(|r| r["scheduled_for"].as_str().unwrap()).collect();
    let unique: HashSet<&&str> = slots.iter().collect();
    assert_eq!(unique.len(), slots.len(), "a slot was fired twice: {slots:?}");
    for r in &first {
        let now = all.iter().find(|x| x["id"] == r["id"]).unwrap();
        assert_eq!(now["scheduled_for"], r["scheduled_for"]);
    }
    // Nothing lost across the gap between the two daemons: every 2-second slot from the first to
    // the last has exactly one record (run, or missed if it was too late to matter).
    let mut times: Vec<chrono::DateTime<chrono::Utc>> = slots.iter().map(|s| s.parse().unwrap()).collect();
    times.sort();
    for pair in times.windows(2) {
        assert_eq!((pair[1] - pair[0]).num_seconds(), 2, "a slot is missing between {} and {}: {slots:?}", pair[0], pair[1]);
    }
    assert!(all.iter().all(|r| ["completed", "missed"].contains(&r["status"].as_str().unwrap())), "{all:#?}");
}

#[test]
fn a_second_daemon_says_who_schedules_and_exits_2() {
    let th = TestHome::new();
    th.routine("hourly", "schedule: \"0 * * * *\"\ncommand: echo hi\n");
    let first = start_daemon(&th);
    first.wait_scheduling();
    let second = ctl(&th).args(["daemon"]).output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    let err = stderr(&second);
    assert!(err.starts_with(&format!("error: nightshiftctl daemon (pid {}) already schedules this home", first.id())), "{err}");
    // Manual runs still work while the daemon schedules.
    let run = ctl(&th).args(["run", "hourly", "--wait", "--json"]).output().unwrap();
    assert_eq!(run.status.code(), Some(0));
    let (code, _) = stop(first);
    assert_eq!(code, 0);
}

#[test]
fn pause_and_resume_from_the_cli() {
    let th = TestHome::new();
    th.routine("hourly", "schedule: \"0 * * * *\"\ncommand: echo hi\n");
    let state = |th: &TestHome| json(&ctl(th).args(["routines", "list", "--json"]).output().unwrap())[0].clone();
    assert_eq!(state(&th)["paused"], false);
    assert!(ctl(&th).args(["pause", "hourly"]).status().unwrap().success());
    let s = state(&th);
    assert_eq!((s["paused"].as_bool(), s["next_fire"].is_null()), (Some(true), true));
    assert!(ctl(&th).args(["resume", "hourly"]).status().unwrap().success());
    assert_eq!(state(&th)["paused"], false);
    let out = ctl(&th).args(["pause", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("error: no routine named \"nope\""));
}

#[test]
fn the_daemon_adopts_a_run_whose_cli_went_away() {
    let th = TestHome::new();
    th.routine("bg", "schedule: \"0 0 1 1 *\"\ncommand: 'sleep 1; echo adopted'\n");
    let d = start_daemon(&th);
    d.wait_scheduling();
    // Started without --wait: the CLI returns at once and nobody supervises the run…
    let out = ctl(&th).args(["run", "bg"]).output().unwrap();
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // …until the daemon adopts it and records its end (no CLI command needed).
    let db = th.path().join("nightshift.db");
    nightshift_testkit::wait_until("the daemon to adopt and settle the run", Duration::from_secs(45), || rusqlite_status(&db, &id) == "completed");
    let (code, out) = stop(d);
    assert_eq!(code, 0);
    assert!(out.contains("✓ bg completed"), "{out}");
}

/// Read a run's status straight from the database (a CLI command would settle it itself).
fn rusqlite_status(db: &std::path::Path, id: &str) -> String {
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute('select status from runs where id=?',(sys.argv[2],)).fetchone(); print(r[0] if r else '')"])
        .arg(db)
        .arg(id)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A project folder opted in with `routines add-project` has its own routines read
/// (`.agents/routines/`), live like the home's; a clone that was not opted in fires nothing;
/// `remove-project` stops reading it and leaves its files.
#[test]
fn only_opted_in_project_folders_have_their_routines_read() {
    let th = TestHome::new();
    let project = th.path().join("code/app");
    let clone = th.path().join("code/someone-elses");
    for (dir, name) in [(&project, "tick"), (&clone, "clone")] {
        std::fs::create_dir_all(dir.join(".agents/routines")).unwrap();
        std::fs::write(dir.join(format!(".agents/routines/{name}.yml")), format!("name: {name}\nschedule: \"*/2 * * * * *\"\ntimezone: UTC\ncommand: echo {name}\n")).unwrap();
    }
    let out = ctl(&th).args(["routines", "add-project"]).arg(&project).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.starts_with(&format!("✓ {} is a project: its routine file in {} is read", project.display(), project.join(".agents/routines").display())), "{said}");
    let again = ctl(&th).args(["routines", "add-project"]).arg(&project).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("is already a project"), "{}", stderr(&again));

    let d = start_daemon(&th);
    let of = |name: &str| runs(&th).iter().filter(|r| r["routine"] == name && r["status"] == "completed").count();
    assert!(nightshift_testkit::waited(Duration::from_secs(30), || of("tick") >= 1), "the project's routine did not fire: {:?}\n{}", runs(&th), d.output());
    // A routine added to the project while the daemon runs fires too.
    std::fs::write(project.join(".agents/routines/later.yml"), "name: later\nschedule: \"*/2 * * * * *\"\ntimezone: UTC\ncommand: echo later\n").unwrap();
    assert!(nightshift_testkit::waited(Duration::from_secs(30), || of("later") >= 1), "the new routine did not fire: {}", d.output());
    let (code, _) = stop(d);
    assert_eq!(code, 0);
    assert_eq!(of("clone"), 0, "a folder that was not opted in fires nothing");

    let out = ctl(&th).args(["routines", "remove-project"]).arg(&project).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = json(&ctl(&th).args(["routines", "list", "--json"]).output().unwrap());
    let names: Vec<&str> = listed.as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert!(!names.contains(&"tick") && !names.contains(&"later"), "{names:?}");
    assert!(project.join(".agents/routines/tick.yml").is_file(), "its files stay");
}

/// `usage_probe = true` is read while the daemon runs: its first pass asks the fake usage
/// endpoint once with the account's token, `accounts list` shows the windows it read, and the
/// daemon's output tells the 80 % mark it passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_probes_an_opted_in_accounts_usage() {
    use nightshift_testkit::{FakeAnthropic, Reply};
    const TOKEN: &str = "sk-ant-oat01-daemon-probe-token-0000000001";
    let fake = FakeAnthropic::start(None).await;
    let reset = chrono::Utc::now().timestamp() + 3 * 3600;
    fake.set(TOKEN, Reply::Windows { five_hour: 0.9, five_hour_reset: reset, seven_day: 0.3, seven_day_reset: reset + 86_400, text: String::new() });
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), format!("usage_probe_url = \"{}/api/oauth/usage\"\n[[accounts]]\nemail = \"a@x.dev\"\nusage_probe = true\n", fake.url())).unwrap();
    let d = common::start_daemon_with(&th, &[], &[("CLAUDE_CODE_OAUTH_TOKEN_A_AT_X_DOT_DEV", TOKEN)]);
    d.wait_scheduling();
    let windows = |th: &TestHome| json(&ctl(th).args(["accounts", "list", "--json"]).output().unwrap())[0]["windows"].clone();
    nightshift_testkit::wait_until("the probe's windows", Duration::from_secs(20), || windows(&th).as_array().is_some_and(|w| !w.is_empty()));
    let w = windows(&th);
    assert_eq!((w[0]["window"].as_str(), w[0]["used_percent"].as_f64(), w[0]["run_id"].is_null()), (Some("five_hour"), Some(90.0), true), "{w:#}");
    nightshift_testkit::wait_until("the daemon to say the mark", Duration::from_secs(10), || d.output().contains("◔ a@x.dev · 5h 90 %: a@x.dev's 5h window is 90 % used (past 80 %)"));
    let (code, out) = stop(d);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains(TOKEN));
    assert_eq!(fake.requests().iter().map(|r| r.credential.clone().unwrap_or_default()).collect::<Vec<_>>(), [TOKEN], "asked once in the first 10 minutes");
}
