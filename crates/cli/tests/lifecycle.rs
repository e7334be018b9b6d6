//! The durable run lifecycle with real processes: whichever process dies, work that was asked for
//! is started once and recorded once. kill -9 drills for the daemon and the CLI, two processes
//! sharing lanes, the wrapper's own timeout with no engine alive, and notifications owed by runs
//! that a plain CLI command settled.

mod common;

use common::{ctl, json, runs, start_daemon, start_daemon_with};
use nightshift_testkit::dbus::NotificationBus;
use nightshift_testkit::{wait_until, TestHome};
use std::time::{Duration, Instant};

fn by_status(th: &TestHome, status: &str) -> Vec<serde_json::Value> {
    runs(th).into_iter().filter(|r| r["status"] == status).collect()
}

/// Every run ended exactly once: none queued or running, one row per run id.
fn all_final(th: &TestHome) -> bool {
    runs(th).iter().all(|r| r["status"] != "queued" && r["status"] != "running")
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[test]
fn a_cli_run_times_out_on_its_own_with_no_engine_alive() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "kill_grace_secs = 1\n").unwrap();
    let pidfile = th.path().join("agent.pid");
    th.routine("slow", &format!("schedule: \"0 3 * * *\"\ntimeout: 3s\ncommand: 'echo $$ > {}; exec sleep 60'\n", pidfile.display()));
    let started = Instant::now();
    let out = ctl(&th).args(["run", "slow"]).output().unwrap();
    assert!(out.status.success());
    wait_until("the run's process to start", Duration::from_secs(5), || pidfile.exists());
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    // No engine is alive (the CLI returned); the run's wrapper ends it on time by itself.
    wait_until("the timed-out process to be gone", Duration::from_secs(3 + 1 + 2 + 2), || !pid_alive(pid));
    assert!(started.elapsed() < Duration::from_secs(3 + 1 + 2 + 1), "gone within timeout + grace + 2 s: {:?}", started.elapsed());
    let rec = &runs(&th)[0];
    assert_eq!(rec["status"], "timed_out", "{rec:#}");
    assert_eq!(rec["message"], "timed out after 3s");
    assert!(rec["duration_ms"].as_u64().unwrap() < 6_000, "{rec:#}");
}

#[test]
fn a_run_queued_by_a_cli_that_returned_says_who_starts_it_and_the_daemon_does() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "max_parallel = 1\n").unwrap();
    th.routine("long", "schedule: \"0 3 * * *\"\ncommand: sleep 2\n");
    th.routine("next", "schedule: \"0 3 * * *\"\ncommand: echo next ran\n");
    assert!(ctl(&th).args(["run", "long"]).output().unwrap().status.success());
    let out = ctl(&th).args(["run", "next", "--json"]).output().unwrap();
    let queued = json(&out);
    assert_eq!(queued["status"], "queued", "{queued:#}");
    let msg = queued["message"].as_str().unwrap();
    assert!(msg.contains("waiting for a free lane (1 of 1 running)"), "{msg}");
    assert!(msg.ends_with("starts when the Nightshift app or `nightshiftctl daemon` runs"), "{msg}");
    // `runs` shows the same row and sentence (as JSON, and under the table).
    let listed = by_status(&th, "queued");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["message"], queued["message"]);
    let table = String::from_utf8(ctl(&th).args(["runs"]).output().unwrap().stdout).unwrap();
    assert!(table.contains(&format!("{}: {msg}", queued["id"].as_str().unwrap())), "{table}");
    let d = start_daemon(&th);
    wait_until("both runs to complete", Duration::from_secs(20), || by_status(&th, "completed").len() == 2);
    assert!(all_final(&th), "{:#?}\n{}", runs(&th), d.output());
    assert_eq!(runs(&th).len(), 2, "no run was duplicated");
}

#[test]
fn kill_9_of_a_waiting_cli_leaves_its_queued_run_to_the_daemon() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "max_parallel = 1\n").unwrap();
    th.routine("long", "schedule: \"0 3 * * *\"\ncommand: sleep 3\n");
    th.routine("next", "schedule: \"0 3 * * *\"\ncommand: echo next ran\n");
    assert!(ctl(&th).args(["run", "long"]).output().unwrap().status.success());
    let mut waiting = ctl(&th).args(["run", "next", "--wait"]).spawn().unwrap();
    wait_until("the waiting CLI's run to be queued", Duration::from_secs(5), || by_status(&th, "queued").len() == 1);
    waiting.kill().unwrap();
    waiting.wait().unwrap();
    // Still queued: nothing lost, nothing started twice. The daemon adopts and runs it.
    assert_eq!(by_status(&th, "queued").len(), 1);
    let d = start_daemon(&th);
    wait_until("both runs to complete", Duration::from_secs(20), || by_status(&th, "completed").len() == 2);
    assert!(all_final(&th), "{}", d.output());
    assert_eq!(runs(&th).len(), 2);
}

#[test]
fn kill_9_of_the_daemon_with_runs_waiting_loses_nothing() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "max_parallel = 1\n").unwrap();
    for name in ["a", "b", "c"] {
        th.routine(name, &format!("schedule: \"0 3 * * *\"\ncommand: 'sleep 1; echo {name} ran'\n"));
    }
    let d = start_daemon(&th);
    for name in ["a", "b", "c"] {
        assert!(ctl(&th).args(["run", name]).output().unwrap().status.success());
    }
    // The daemon adopts the queued runs the CLIs left; kill it while they wait.
    let daemon_pid = d.id().to_string();
    wait_until("the daemon to own the waiting runs", Duration::from_secs(10), || {
        let q = by_status(&th, "queued");
        !q.is_empty() && q.iter().all(|r| !r["message"].as_str().unwrap_or("").contains("starts when"))
    });
    d.kill9();
    let left: Vec<String> = runs(&th).iter().map(|r| r["status"].as_str().unwrap().to_string()).collect();
    assert!(left.iter().any(|s| s == "queued"), "runs were still waiting when the daemon died: {left:?} (daemon {daemon_pid})");
    let d2 = start_daemon(&th);
    wait_until("every run to complete", Duration::from_secs(30), || by_status(&th, "completed").len() == 3);
    assert!(all_final(&th), "{}", d2.output());
    let all = runs(&th);
    assert_eq!(all.len(), 3, "exactly once each: {all:#?}");
    for name in ["a", "b", "c"] {
        assert_eq!(all.iter().filter(|r| r["routine"] == name).count(), 1);
    }
}

#[test]
fn two_processes_share_the_lanes() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "max_parallel = 2\n").unwrap();
    let log = th.path().join("overlap.log");
    for i in 0..6 {
        th.routine(
            &format!("r{i}"),
            &format!("schedule: \"0 3 * * *\"\ncommand: 'echo \"+ $(date +%s%N)\" >> {l}; sleep 0.4; echo \"- $(date +%s%N)\" >> {l}'\n", l = log.display()),
        );
    }
    // Six CLIs, each waiting for its own run, plus the daemon: three-plus processes, one queue.
    let d = start_daemon(&th);
    let children: Vec<_> = (0..6).map(|i| ctl(&th).args(["run", &format!("r{i}"), "--wait"]).spawn().unwrap()).collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "{}", d.output());
    }
    let mut events: Vec<(u128, i32)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            let (sign, t) = l.split_once(' ').unwrap();
            (t.parse().unwrap(), if sign == "+" { 1 } else { -1 })
        })
        .collect();
    events.sort_by_key(|e| (e.0, e.1));
    let (mut now, mut most) = (0, 0);
    for (_, delta) in &events {
        now += delta;
        most = most.max(now);
    }
    assert_eq!(events.len(), 12, "six runs, each once");
    assert!(most <= 2, "max_parallel = 2 held across processes; saw {most} at once");
    assert_eq!(by_status(&th, "completed").len(), 6);
}

#[test]
fn runs_settled_by_plain_commands_are_notified_once_by_the_next_daemon() {
    let th = TestHome::new();
    th.routine("report", "schedule: \"0 3 * * *\"\nnotify: always\ncommand: echo all green\n");
    // A plain command settles the run (no notifier anywhere).
    let rec = json(&ctl(&th).args(["run", "report", "--wait", "--json"]).output().unwrap());
    assert_eq!(rec["notified"], "pending", "{rec:#}");
    // The server refuses the first two tries; the daemon retries and it is shown once.
    let bus = NotificationBus::start(th.path(), "refuse:2");
    let d = start_daemon_with(&th, &["--notify"], &[("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str())]);
    let id = rec["id"].as_str().unwrap().to_string();
    wait_until("the notification", Duration::from_secs(30), || {
        json(&ctl(&th).args(["show", &id, "--json"]).output().unwrap())["notified"] == "delivered"
    });
    let shown = bus.notifications();
    assert_eq!(shown.len(), 1, "{shown:#?}");
    assert!(shown[0]["summary"].as_str().unwrap().starts_with("✓ report · "), "{shown:#?}");
    d.kill9();
    // A restart (as after a crash) does not send it again.
    let d2 = start_daemon_with(&th, &["--notify"], &[("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str())]);
    // Something new to notify: once it is shown, the new daemon's deliverer has been through the
    // outbox, where the first run's entry was no longer due — so it was not sent again.
    th.routine("second", "schedule: \"0 3 * * *\"\nnotify: always\ncommand: echo second\n");
    json(&ctl(&th).args(["run", "second", "--wait", "--json"]).output().unwrap());
    wait_until("the second run's notification", Duration::from_secs(30), || bus.notifications().len() >= 2);
    let shown = bus.notifications();
    assert_eq!(shown.len(), 2, "{shown:#?}\n{}", d2.output());
    assert!(shown[1]["summary"].as_str().unwrap().starts_with("✓ second · "), "{shown:#?}");
}

#[test]
fn a_notifier_killed_while_sending_leaves_the_notification_to_the_next_one() {
    let th = TestHome::new();
    th.routine("report", "schedule: \"0 3 * * *\"\nnotify: always\ncommand: echo all green\n");
    let hung = NotificationBus::start(th.path(), "hang");
    let d = start_daemon_with(&th, &["--notify"], &[("DBUS_SESSION_BUS_ADDRESS", hung.address.as_str())]);
    let rec = json(&ctl(&th).args(["run", "report", "--wait", "--json"]).output().unwrap());
    let id = rec["id"].as_str().unwrap().to_string();
    // The daemon took the notification and is stuck in the call: kill it there.
    hung.wait_for(1, Duration::from_secs(15));
    assert_eq!(hung.notifications().len(), 1);
    d.kill9();
    let show = |th: &TestHome| json(&ctl(th).args(["show", &id, "--json"]).output().unwrap());
    assert_eq!(show(&th)["notified"], "pending", "still owed");
    // The next notifier sends it once its predecessor's lease (10 s) has run out.
    let ok = NotificationBus::start(th.path(), "record");
    let _d2 = start_daemon_with(&th, &["--notify"], &[("DBUS_SESSION_BUS_ADDRESS", ok.address.as_str())]);
    wait_until("the notification", Duration::from_secs(30), || show(&th)["notified"] == "delivered");
    assert_eq!(ok.notifications().len(), 1);
}

/// A run that timed out has no stale report — not a half-written one of its own, not the last
/// completed run's: its report explains the verdict (what happened, what to do), with what it
/// printed last as inert evidence; the completed run keeps its own. (The routine's latest report
/// skips it: `last_report_comes_only_from_completed_runs`.)
#[test]
fn a_timed_out_run_has_no_stale_report() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "kill_grace_secs = 1\n").unwrap();
    th.routine("nightly", "schedule: \"0 3 * * *\"\ntimeout: 2s\ncommand: echo '## Done on time'\n");
    let done = json(&ctl(&th).args(["run", "nightly", "--wait", "--json"]).output().unwrap());
    assert_eq!(done["status"], "completed", "{done:#}");
    th.routine("nightly", "schedule: \"0 3 * * *\"\ntimeout: 2s\ncommand: echo '## Half a report'; exec sleep 60\n");
    let late = json(&ctl(&th).args(["run", "nightly", "--wait", "--json"]).output().unwrap());
    assert_eq!(late["status"].as_str(), Some("timed_out"), "{late:#}");
    let id = late["id"].as_str().unwrap();
    let report = ctl(&th).args(["report", id]).output().unwrap();
    assert_eq!(report.status.code(), Some(0), "{}", String::from_utf8_lossy(&report.stderr));
    let said = String::from_utf8_lossy(&report.stdout).into_owned();
    // (What the shell said on its error output as it was stopped is listed after, when it said it.)
    assert!(
        said.starts_with("# nightly · timed_out\n\nStopped: it ran longer than its timeout (timed out after 2s).\n\n**What to do:** Raise `timeout:` in the routine file if it needs longer.\n\n**Its output ended with:**\n\n    ## Half a report\n"),
        "{said}"
    );
    assert!(!said.contains("Done on time"), "{said}");
    assert_eq!(late["report_path"].as_str().map(std::path::PathBuf::from), Some(std::path::Path::new(late["run_dir"].as_str().unwrap()).join("report.md")));
    // The completed run keeps its own.
    let first = ctl(&th).args(["report", done["id"].as_str().unwrap()]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&first.stdout), "## Done on time\n");
}
