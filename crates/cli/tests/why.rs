//! `nightshiftctl why`: a real daemon fires a routine every two seconds and is stopped; `why` then
//! explains each slot (ran, with its run), the slots since the daemon stopped, a pause, and the
//! next fire — as text and as JSON.

mod common;
use common::*;
use nightshift_testkit::TestHome;
use std::time::Duration;

#[test]
fn why_explains_each_slot_after_a_daemon_ran_and_stopped() {
    let th = TestHome::new();
    th.routine("tick", "schedule: \"*/2 * * * * *\"\ntimezone: UTC\ncommand: \"true\"\n");
    let mut daemon = ctl(&th).arg("daemon").stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let ran = || json(&ctl(&th).args(["runs", "--routine", "tick", "--status", "completed", "--json"]).output().unwrap()).as_array().map(Vec::len).unwrap_or(0);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while ran() < 2 {
        assert!(std::time::Instant::now() < deadline, "the daemon did not run tick twice");
        std::thread::sleep(Duration::from_millis(200));
    }
    // A clean stop (SIGTERM) ends the daemon's presence; then slots pass with nobody there.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    assert!(daemon.wait().unwrap().success());
    // Slots pass with nobody there: real time, nothing to await.
    std::thread::sleep(Duration::from_secs(5));

    let out = ctl(&th).args(["why", "tick", "--days", "1"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "tick — At every 2 seconds, UTC; the last 1 day, newest first", "{text}");
    // The newest line: the slots since the daemon stopped, grouped, with what happens next.
    assert!(lines[1].contains(" slots)  not run yet — no Nightshift running since "), "{text}");
    assert!(lines[1].ends_with("when the app or the daemon starts, the newest of these runs once as a catch-up"), "{text}");
    let ran_lines = lines.iter().filter(|l| l.contains("ran — succeeded in ") && l.contains("(run ")).count();
    assert!(ran_lines >= 2, "{text}");
    assert!(lines.last().unwrap().starts_with("next: "), "{text}");
    assert!(lines.last().unwrap().ends_with("if this machine is awake and the app or the daemon runs — none is running now"), "{text}");

    let doc = json(&ctl(&th).args(["why", "tick", "--json"]).output().unwrap());
    let first = &doc["lines"][0];
    assert_eq!(first["fate"], "missed");
    assert_eq!(first["tone"], "bad");
    let with_run = doc["lines"].as_array().unwrap().iter().find(|l| l["fate"] == "ran").unwrap();
    assert_eq!(with_run["status"], "completed");
    assert!(with_run["run_id"].as_str().is_some());

    // A pause is the reason there is no next fire.
    assert!(ctl(&th).args(["pause", "tick"]).output().unwrap().status.success());
    let doc = json(&ctl(&th).args(["why", "tick", "--json"]).output().unwrap());
    assert!(doc["next"].as_str().unwrap().starts_with("none while paused since "), "{}", doc["next"]);
    assert!(doc["next"].as_str().unwrap().contains(", by you; resume it (`nightshiftctl resume tick`)"), "{}", doc["next"]);
    assert!(doc["next_fire"].is_null());

    let unknown = ctl(&th).args(["why", "nope"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("nope"), "{}", stderr(&unknown));
}
