//! `why` under a manual clock: one routine driven through every fate a slot can have — ran, asleep
//! (caught up, superseded), no Nightshift running, paused by the user, auto-paused, skipped,
//! invalid file — and others that are blocked, on another device, or weekly; the explanation is
//! asserted line by line. Real processes run each slot; nothing sleeps for a schedule.

use chrono::{DateTime, Utc};
use nightshift_core::store::RunQuery;
use nightshift_core::view::why::{Fate, Why};
use nightshift_core::{Engine, EngineOptions, ManualClock, Scheduler};
use nightshift_testkit::TestHome;
use std::sync::Arc;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

struct Rig {
    th: TestHome,
    clock: Arc<ManualClock>,
    engine: Engine,
    sched: Option<Arc<Scheduler>>,
}

impl Rig {
    fn new(th: TestHome, start: DateTime<Utc>, settings: &str) -> Rig {
        std::fs::write(th.path().join("nightshift.toml"), format!("kill_grace_secs = 1\ndevice_name = \"laptop\"\n{settings}")).unwrap();
        let clock = Arc::new(ManualClock::new(start));
        let engine = EngineOptions::for_test(th.path()).clock(clock.clone()).path_first(&th.bin_dir()).open();
        let sched = Some(Scheduler::new(engine.clone()));
        Rig { th, clock, engine, sched }
    }

    fn sched(&self) -> &Arc<Scheduler> {
        self.sched.as_ref().expect("a scheduler runs")
    }

    /// One scheduler pass at `t`; then wait (really) until its runs have ended.
    async fn tick(&self, t: &str) {
        self.clock.set(at(t));
        self.sched().tick().await.unwrap();
        self.settle().await;
    }

    async fn settle(&self) {
        self.engine.until_idle(std::time::Duration::from_secs(20)).await;
    }

    fn why(&self, routine: &str, days: u32) -> Why {
        nightshift_core::view::why::why(&self.engine, routine, days).unwrap()
    }
}

/// A line as asserted: "HH:MM[–HH:MM ×n] sentence", with run ids and durations made stable.
fn lines(why: &Why, ids: &[String]) -> Vec<String> {
    why.lines
        .iter()
        .map(|l| {
            let when = if l.slots > 1 { format!("{}–{} ×{}", l.from.format("%H:%M"), l.at.format("%H:%M"), l.slots) } else { l.at.format("%H:%M").to_string() };
            let mut s = l.sentence.to_string();
            for id in ids {
                s = s.replace(id.as_str(), "ID");
            }
            // " in 12ms", " in 1s": how long a real process took.
            if let Some(i) = s.find(" in ") {
                let rest = &s[i + 4..];
                let digits = rest.chars().take_while(char::is_ascii_digit).count();
                if digits > 0 && (rest[digits..].starts_with("ms") || rest[digits..].starts_with('s')) {
                    let unit = if rest[digits..].starts_with("ms") { 2 } else { 1 };
                    s = format!("{}{}", &s[..i], &rest[digits + unit..]);
                }
            }
            // An invalid file's error names file:line:col; asserted apart.
            if let Some(i) = s.find("15:30: ") {
                assert!(s.contains("tick.yaml:"), "{s}");
                s = format!("{}FILE", &s[..i + 7]);
            }
            format!("{when} {s}")
        })
        .collect()
}

/// An hourly routine that fails while `fail` exists in its home and is slow while `slow` does.
fn tick_yaml(th: &TestHome) -> String {
    let dir = th.path().display();
    format!("schedule: \"0 * * * *\"\ntimezone: UTC\ncommand: \"if [ -e {dir}/fail ]; then exit 1; fi; if [ -e {dir}/slow ]; then sleep 60; fi\"\n")
}

#[tokio::test]
async fn every_fate_of_a_slot_is_explained_with_its_evidence() {
    let th = TestHome::new();
    let yaml = tick_yaml(&th);
    th.routine("tick", &yaml);
    let mut r = Rig::new(th, at("2026-11-01T23:59:50Z"), "auto_pause_after = 2\n");
    let flag = |name: &str, on: bool| {
        let p = r.th.path().join(name);
        if on {
            std::fs::write(p, "").unwrap()
        } else {
            let _ = std::fs::remove_file(p);
        }
    };
    r.tick("2026-11-01T23:59:50Z").await;
    r.tick("2026-11-02T00:00:05Z").await;
    r.tick("2026-11-02T01:00:05Z").await;
    // The machine sleeps from 01:00 to 04:10: the clock jumps, monotonic time does not.
    r.tick("2026-11-02T04:10:00Z").await;
    r.tick("2026-11-02T05:00:05Z").await;
    // The app quits at 05:30 and starts again at 08:20.
    r.clock.set(at("2026-11-02T05:30:00Z"));
    drop(r.sched.take());
    r.clock.set(at("2026-11-02T08:20:00Z"));
    r.sched = Some(Scheduler::new(r.engine.clone()));
    r.tick("2026-11-02T08:20:00Z").await;
    // Paused by the user from 08:30 to 10:30.
    r.clock.set(at("2026-11-02T08:30:00Z"));
    r.engine.set_routine_paused("tick", true).unwrap();
    r.tick("2026-11-02T09:00:05Z").await;
    r.tick("2026-11-02T10:00:05Z").await;
    r.clock.set(at("2026-11-02T10:30:00Z"));
    r.engine.set_routine_paused("tick", false).unwrap();
    // Two failures in a row auto-pause it; resumed at 13:30.
    flag("fail", true);
    r.tick("2026-11-02T11:00:05Z").await;
    r.tick("2026-11-02T12:00:05Z").await;
    r.tick("2026-11-02T13:00:05Z").await;
    r.clock.set(at("2026-11-02T13:30:00Z"));
    r.engine.set_routine_paused("tick", false).unwrap();
    flag("fail", false);
    // A slow run: the next slot is skipped; then it is cancelled.
    flag("slow", true);
    r.clock.set(at("2026-11-02T14:00:05Z"));
    r.sched().tick().await.unwrap();
    let slow = wait_for_running(&r).await;
    r.clock.set(at("2026-11-02T15:00:05Z"));
    r.sched().tick().await.unwrap();
    assert!(r.engine.cancel(&slow).await);
    r.settle().await;
    flag("slow", false);
    // The file is broken at 15:30 and fixed at 17:30: its slots in between are not replayed.
    r.clock.set(at("2026-11-02T15:30:00Z"));
    let file = r.th.routine("tick", "schedule: \"0 * * * *\"\ntimezone: UTC\ncommand: [unclosed\n");
    r.sched().reload();
    r.tick("2026-11-02T16:00:05Z").await;
    r.tick("2026-11-02T17:00:05Z").await;
    r.clock.set(at("2026-11-02T17:30:00Z"));
    std::fs::write(&file, &yaml).unwrap();
    r.sched().reload();
    r.tick("2026-11-02T18:00:05Z").await;
    // Now the app stops for good at 18:10; it is 19:30.
    r.clock.set(at("2026-11-02T18:10:00Z"));
    drop(r.sched.take());
    r.clock.set(at("2026-11-02T19:30:00Z"));

    let why = r.why("tick", 1);
    let rows = r.engine.store().list_runs(&RunQuery { routine: Some("tick".into()), limit: 100, ..Default::default() }).unwrap().runs;
    let ids: Vec<String> = rows.iter().map(|x| x.id.clone()).collect();
    let got = lines(&why, &ids);
    let want = [
        "19:00 not run yet — no Nightshift running since Mon 2 Nov 18:10; when the app or the daemon starts, the newest of these runs once as a catch-up",
        "18:00 ran — succeeded",
        "16:00–17:00 ×2 file invalid since Mon 2 Nov 15:30: FILE",
        "15:00 skipped — the previous run (ID) was still running",
        "14:00 ran — cancelled",
        "13:00 paused since Mon 2 Nov 12:00 — auto-paused after 2 failed runs in a row (last: exited with code 1); resume with `nightshiftctl resume tick`",
        "12:00 ran — failed",
        "11:00 ran — failed",
        "09:00–10:00 ×2 paused since Mon 2 Nov 08:30, by you",
        "08:00 caught up later at Mon 2 Nov 08:20 as run ID (succeeded) — no Nightshift running 05:30–08:20",
        "07:00 missed — no Nightshift running 05:30–08:20; superseded by a later slot",
        "06:00 missed — no Nightshift running 05:30–08:20; superseded by a later slot",
        "05:00 ran — succeeded",
        "04:00 caught up later at Mon 2 Nov 04:10 as run ID (succeeded) — machine asleep 01:00–04:10",
        "03:00 missed — machine asleep 01:00–04:10; superseded by a later slot",
        "02:00 missed — machine asleep 01:00–04:10; superseded by a later slot",
        "01:00 ran — succeeded",
        "00:00 ran — succeeded",
    ];
    assert_eq!(got, want, "{got:#?}");
    assert_eq!(why.next_fire, Some(at("2026-11-02T20:00:00Z")));
    assert_eq!(why.next, "Mon 2 Nov 20:00, if this machine is awake and the app or the daemon runs — none is running now");
    // Every run has its own line, linked; the fates are what the UI colours.
    let ran = why.lines.iter().filter(|l| l.run_id.is_some()).count();
    assert_eq!(ran, rows.len(), "every row of the day is one line");
    assert_eq!(why.lines[2].fate, Fate::Invalid);
    assert_eq!(why.lines[13].fate, Fate::CaughtUp);
}

async fn wait_for_running(r: &Rig) -> String {
    nightshift_testkit::wait_for_async("the slow run to start", std::time::Duration::from_secs(10), || {
        let runs = r.engine.store().list_runs(&RunQuery { routine: Some("tick".into()), limit: 1, ..Default::default() }).unwrap().runs;
        runs.first().filter(|x| x.status == nightshift_core::RunStatus::Running).map(|run| run.id.clone())
    })
    .await
}

#[tokio::test]
async fn blocked_elsewhere_weekly_and_broken_routines_say_so() {
    let th = TestHome::new();
    th.routine("agent", "schedule: \"0 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: hi\naccount: nobody@nowhere.dev\n");
    th.routine("desk", "schedule: \"0 * * * *\"\ntimezone: UTC\ndevices: [workstation]\ncommand: \"true\"\n");
    th.routine("weekly", "schedule: \"0 9 * * 1\"\ntimezone: UTC\ncommand: \"true\"\n");
    th.routine("broken", "schedule: \"0 * * * *\"\ncommand: [\n");
    th.routine("spread", "schedule: \"0 9 * * 1\"\ntimezone: UTC\ncommand: \"true\"\njitter: 1h\n");
    let r = Rig::new(th, at("2026-11-02T08:59:50Z"), "keychain_service = \"nightshift-test-why\"\n[[accounts]]\nemail = \"nobody@nowhere.dev\"\n");
    r.tick("2026-11-02T08:59:50Z").await;
    r.tick("2026-11-02T09:00:05Z").await;
    r.tick("2026-11-02T10:00:05Z").await;
    r.tick("2026-11-04T12:00:05Z").await;

    let agent = r.why("agent", 1);
    let blocked: Vec<&str> = agent.lines.iter().filter(|l| l.fate == Fate::Blocked).map(|l| l.sentence.as_ref()).collect();
    assert!(!blocked.is_empty(), "{:#?}", agent.lines);
    assert!(blocked[0].starts_with("blocked — "), "{}", blocked[0]);
    assert!(blocked[0].contains("nobody@nowhere.dev"), "{}", blocked[0]);

    let desk = r.why("desk", 1);
    assert_eq!(desk.lines.len(), 1, "{:#?}", desk.lines);
    assert_eq!(desk.lines[0].fate, Fate::OtherDevice);
    assert_eq!(desk.lines[0].sentence, "not this device (devices: workstation; this is laptop)");
    assert_eq!(desk.lines[0].slots, 24);
    assert_eq!(desk.next, "none here — it fires on workstation (devices:)");

    // A weekly routine with no slot in the window still says when it last fired.
    let weekly = r.why("weekly", 1);
    assert!(weekly.lines.is_empty(), "{:#?}", weekly.lines);
    let last = weekly.notes.last().unwrap();
    assert!(last.starts_with("No slot was due in the last day. It last fired Mon 2 Nov 09:00 (completed, run "), "{last}");
    assert_eq!(weekly.next, "Mon 9 Nov 09:00, if this machine is awake and the app or the daemon runs");
    // With `jitter:` the next start, and the time it was moved from.
    let spread = r.why("spread", 1);
    let next = spread.next_fire.unwrap();
    let moved = nightshift_core::schedule::Schedule::parse("0 9 * * 1", chrono_tz::Tz::UTC).unwrap().with_jitter(std::time::Duration::from_secs(3600), "spread").next_after(at("2026-11-09T00:00:00Z")).unwrap();
    assert_eq!(next, moved);
    assert!(next > at("2026-11-09T09:00:00Z") && next < at("2026-11-09T10:00:00Z"), "{next}");
    assert_eq!(spread.next, format!("Mon 9 Nov {} (Mon 9 Nov 09:00 moved by `jitter: 1h`), if this machine is awake and the app or the daemon runs", next.format("%H:%M")));

    let broken = r.why("broken", 7);
    assert!(broken.notes[0].starts_with("The file is invalid since "), "{:?}", broken.notes);
    assert!(broken.notes[0].contains("broken.yaml:"), "{:?}", broken.notes);
    assert!(broken.next.starts_with("none — the file is invalid"));

    // The strip: one mark per slot when they fit, else stretches showing the worst fate.
    let per_slot = r.why("desk", 1).strip(100);
    assert_eq!(per_slot.len(), 24);
    assert!(per_slot.windows(2).all(|w| w[0].from < w[1].from), "oldest first");
    let stretches = r.why("desk", 1).strip(6);
    assert_eq!(stretches.len(), 6);
    assert!(stretches[0].sentence.starts_with("4 not this device; worst: not this device"), "{}", stretches[0].sentence);

    let unknown = nightshift_core::view::why::why(&r.engine, "nope", 1).unwrap_err();
    assert_eq!(unknown.code, nightshift_core::ErrorCode::RoutineNotFound);
}

/// A long window is explained in two halves at once; a stretch of slots across the middle is
/// still one line, and every slot and every run is in exactly one line.
#[tokio::test]
async fn a_long_window_split_in_two_halves_reads_as_one() {
    let th = TestHome::new();
    th.routine("minutely", "schedule: \"* * * * *\"\ntimezone: UTC\ncommand: \"true\"\n");
    let now = at("2026-11-30T12:00:30Z");
    let r = Rig::new(th, now, "");
    let db = rusqlite::Connection::open(r.th.path().join("nightshift.db")).unwrap();
    let minute = |m: i64| now - chrono::Duration::seconds(30) - chrono::Duration::minutes(m);
    let t = nightshift_core::words::fmt_time;
    db.execute("INSERT INTO routine_state (routine, first_seen, checked_until) VALUES ('minutely', ?1, ?2)", rusqlite::params![t(&minute(40 * 1440)), t(&now)]).unwrap();
    // Asleep for three hours around the middle of the 30 days; awake (and running it) otherwise.
    let (sleep_from, sleep_to) = (15 * 1440 + 90, 15 * 1440 - 90);
    let device = r.engine.device_name();
    for (a, b, ended) in [(40 * 1440, sleep_from + 1, "asleep"), (sleep_to - 1, 0, "stopped")] {
        db.execute(
            "INSERT INTO presence (device, who, pid, started_at, last_seen, ended) VALUES (?1, 'x', 1, ?2, ?3, ?4)",
            rusqlite::params![device, t(&(minute(a) - chrono::Duration::seconds(1))), t(&(minute(b) + chrono::Duration::seconds(1))), ended],
        )
        .unwrap();
    }
    let mut runs = 0;
    {
        let tx = db.unchecked_transaction().unwrap();
        let mut stmt = tx.prepare("INSERT INTO runs (id, routine, trigger, agent, sort_ms, scheduled_for, status, run_dir) VALUES (?1, 'minutely', 'schedule', 'command', ?2, ?3, 'completed', '/x')").unwrap();
        for m in 0..30 * 1440 {
            if (sleep_to..sleep_from).contains(&m) {
                continue;
            }
            stmt.execute(rusqlite::params![format!("m{m:025}"), minute(m).timestamp_millis(), t(&minute(m))]).unwrap();
            runs += 1;
        }
        drop(stmt);
        tx.commit().unwrap();
    }
    let why = r.why("minutely", 30);
    assert_eq!(why.lines.iter().map(|l| l.slots).sum::<usize>(), 30 * 1440, "every slot once");
    assert_eq!(why.lines.iter().filter(|l| l.run_id.is_some()).count(), runs, "every run once");
    let missed: Vec<_> = why.lines.iter().filter(|l| l.fate == Fate::Missed).collect();
    assert_eq!(missed.len(), 1, "the night across the middle is one line: {:#?}", missed);
    assert_eq!(missed[0].slots, 180);
    assert!(missed[0].sentence.starts_with("missed — machine asleep "), "{}", missed[0].sentence);
    assert!(why.lines.windows(2).all(|w| w[0].at > w[1].at), "newest first");
}

/// A slot whose run went to a host on GitHub Actions says where: the workflow run and the
/// repository (the fake GitHub runs the generated workflow under act).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_run_on_github_actions_says_which_workflow_run_of_which_repository() {
    let act = std::env::var_os("NIGHTSHIFT_TEST_ACT").expect("NIGHTSHIFT_TEST_ACT: run the suite through scripts/test.sh, which installs act from PyPI");
    const TOKEN: &str = "ghp_WhyActionsToken0000000000000000000001";
    let fake = nightshift_testkit::FakeGithub::start(TOKEN).await;
    let th = TestHome::new();
    th.routine_sent_from_here("build", "schedule: \"0 * * * *\"\ntimezone: UTC\nhost: ci\ntimeout: 2m\ncommand: echo built\n");
    std::fs::write(th.path().join("nightshift.toml"), format!("[github]\napi_url = \"{}\"\nactions_poll = \"300ms\"\n[hosts.ci]\ngithub = \"acme/app\"\nruns_on = \"self-hosted\"\n", fake.url())).unwrap();
    let clock = Arc::new(ManualClock::new(at("2026-11-02T02:59:50Z")));
    let engine = EngineOptions::for_test(th.path()).clock(clock.clone()).env("GH_TOKEN", TOKEN).open();
    let checkout = nightshift_testkit::fake_github::actions::checkout(&engine.host_workflow("ci").unwrap());
    fake.add_actions_repo("acme/app", nightshift_testkit::fake_github::ActionsRepo::new(checkout.path(), act.into(), &["self-hosted"], "/usr/local/bin:/usr/bin:/bin".into()));
    let sched = Scheduler::new(engine.clone());
    sched.tick().await.unwrap();
    clock.set(at("2026-11-02T03:00:05Z"));
    sched.tick().await.unwrap();
    engine.until_idle(std::time::Duration::from_secs(60)).await;
    let runs = fake.workflow_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let why = nightshift_core::view::why::why(&engine, "build", 1).unwrap();
    let line = why.lines.iter().find(|l| l.at == at("2026-11-02T03:00:00Z")).expect("the 03:00 slot");
    assert_eq!(line.sentence, format!("ran — succeeded on ci · run {} · acme/app", runs[0].0));
}

/// A slot whose run asked (`on_denial: ask`) says what it asked and how it was answered: a call
/// approved from the phone while it ran, and a blocked slot's ask after the run that reran it.
#[tokio::test]
async fn a_slot_that_asked_says_how_it_was_answered() {
    let th = TestHome::new();
    th.routine("minutely", "schedule: \"* * * * *\"\ntimezone: UTC\ncommand: \"true\"\n");
    let now = at("2026-12-07T02:20:30Z");
    let r = Rig::new(th, now, "");
    let db = rusqlite::Connection::open(r.th.path().join("nightshift.db")).unwrap();
    let t = nightshift_core::words::fmt_time;
    db.execute("INSERT INTO routine_state (routine, first_seen, checked_until) VALUES ('minutely', ?1, ?2)", rusqlite::params![t(&at("2026-12-07T02:10:00Z")), t(&now)]).unwrap();
    for (id, slot, status, reason) in [("pushed", "2026-12-07T02:14:00Z", "completed", None), ("blocked", "2026-12-07T02:15:00Z", "blocked", Some("needs_approval"))] {
        db.execute(
            "INSERT INTO runs (id, routine, trigger, agent, sort_ms, scheduled_for, status, reason, run_dir) VALUES (?1, 'minutely', 'schedule', 'command', ?2, ?3, ?4, ?5, '/x')",
            rusqlite::params![id, at(slot).timestamp_millis(), slot, status, reason],
        )
        .unwrap();
    }
    let store = nightshift_core::store::Store::open(&r.th.path().join("nightshift.db")).unwrap();
    let ask = |id: &str, run: &str, input: &str, held: bool| nightshift_core::store::Ask {
        id: id.into(),
        run_id: run.into(),
        routine: "minutely".into(),
        tool: "Bash".into(),
        input: input.into(),
        asked_at: at("2026-12-07T02:14:10Z"),
        expires_at: at("2026-12-07T02:44:10Z"),
        answer: None,
        for_run: false,
        answered_at: None,
        answered_by: None,
        held,
        rerun: None,
    };
    store.add_ask(&ask("a1", "pushed", "{\"command\":\"git push origin fix/deps\"}", true)).unwrap();
    assert!(store.answer_ask("a1", "allow", false, "phone", at("2026-12-07T02:14:40Z")).unwrap());
    store.add_ask(&ask("a2", "blocked", "npm install", false)).unwrap();
    let why = r.why("minutely", 1);
    let of = |id: &str| why.lines.iter().find(|l| l.run_id.as_deref() == Some(id)).map(|l| l.sentence.to_string()).unwrap();
    assert!(of("pushed").ends_with(" · Bash(git push origin fix/deps) — approved (phone, Mon 7 Dec 02:14)"), "{}", of("pushed"));
    assert!(of("blocked").ends_with(" · Bash(npm install) — refused; approve by Mon 7 Dec 02:44 to rerun with it allowed"), "{}", of("blocked"));
}

/// A slot of a routine that opens pull requests (`push.pr`) says which one its branch went to,
/// or why there is none.
#[tokio::test]
async fn a_slot_says_which_pull_request_its_branch_went_to() {
    let th = TestHome::new();
    let project = th.path().join("project");
    nightshift_testkit::git::init_repo(&project, &[("README.md", "# app\n")]);
    th.routine("deps", &format!("schedule: \"* * * * *\"\ntimezone: UTC\nworkspace: worktree\ncwd: {}\npush: {{remote: origin, pr: draft, repo: acme/app}}\ncommand: \"true\"\n", project.display()));
    let now = at("2026-12-07T02:20:30Z");
    let r = Rig::new(th, now, "");
    let db = rusqlite::Connection::open(r.th.path().join("nightshift.db")).unwrap();
    let t = nightshift_core::words::fmt_time;
    db.execute("INSERT INTO routine_state (routine, first_seen, checked_until) VALUES ('deps', ?1, ?2)", rusqlite::params![t(&at("2026-12-07T02:10:00Z")), t(&now)]).unwrap();
    let pr = |state: &str, number: Option<u64>, error: Option<&str>| serde_json::json!({"state": state, "number": number, "url": number.map(|n| format!("https://github.com/acme/app/pull/{n}")), "repo": "acme/app", "error": error, "tries": 1, "at": null}).to_string();
    for (id, slot, pull) in [("first", "2026-12-07T02:14:00Z", pr("opened", Some(3), None)), ("second", "2026-12-07T02:15:00Z", pr("updated", Some(3), None)), ("quiet", "2026-12-07T02:16:00Z", pr("none", None, Some("the run changed nothing: no pull request opened")))] {
        db.execute(
            "INSERT INTO runs (id, routine, trigger, agent, sort_ms, scheduled_for, status, run_dir, pull_request) VALUES (?1, 'deps', 'schedule', 'command', ?2, ?3, 'completed', '/x', ?4)",
            rusqlite::params![id, at(slot).timestamp_millis(), slot, pull],
        )
        .unwrap();
    }
    let why = r.why("deps", 1);
    let of = |id: &str| why.lines.iter().find(|l| l.run_id.as_deref() == Some(id)).map(|l| l.sentence.to_string()).unwrap();
    assert!(of("first").ends_with(" · pull request #3 opened (https://github.com/acme/app/pull/3)"), "{}", of("first"));
    assert!(of("second").ends_with(" · pull request #3 updated (https://github.com/acme/app/pull/3)"), "{}", of("second"));
    assert!(of("quiet").ends_with(" · no pull request: the run changed nothing: no pull request opened"), "{}", of("quiet"));
}
