//! The scheduler under a manual clock: DST, zones, suspend and downtime catch-up, one-shots,
//! end_at, pause, auto-pause, lanes, hot reload, and two engines racing for the same slots.
//! Nothing here sleeps to wait for a schedule: time moves when the test says so.

use chrono::{DateTime, Duration, TimeZone, Utc};
use nightshift_core::events::EngineEvent;
use nightshift_core::run::{Reason, RunRecord, RunStatus, Trigger};
use nightshift_core::store::RunQuery;
use nightshift_core::{Engine, EngineOptions, ManualClock, Scheduler};
use nightshift_testkit::{secs, wait_until_async, TestHome};
use std::sync::Arc;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

struct Rig {
    th: TestHome,
    clock: Arc<ManualClock>,
    engine: Engine,
    sched: Arc<Scheduler>,
}

fn rig_with(th: TestHome, start: DateTime<Utc>, settings: &str) -> Rig {
    let clock = Arc::new(ManualClock::new(start));
    let engine = EngineOptions::for_test(th.path())
        .settings(&format!("kill_grace_secs = 1\n{settings}"))
        .clock(clock.clone())
        .path_first(&th.bin_dir())
        .env("CLAUDE_CODE_OAUTH_TOKEN_WORK_AT_ACME_DOT_DEV", "tok-work-for-tests")
        .env("CLAUDE_CODE_OAUTH_TOKEN_ME_AT_HOME_DOT_DEV", "tok-me-for-tests")
        .open();
    let sched = Scheduler::new(engine.clone());
    Rig { th, clock, engine, sched }
}

fn rig(routines: &[(&str, &str)], start: DateTime<Utc>) -> Rig {
    let th = TestHome::new();
    for (name, yaml) in routines {
        th.routine(name, yaml);
    }
    rig_with(th, start, "")
}

impl Rig {
    async fn tick_at(&self, t: DateTime<Utc>) -> nightshift_core::TickReport {
        self.clock.set(t);
        self.sched.tick().await.unwrap()
    }

    /// Advance minute by minute from the current time to `until`, ticking each minute.
    async fn walk(&self, until: DateTime<Utc>, step: Duration) {
        let mut t = self.clock.now_utc();
        while t < until {
            t += step;
            if !self.tick_at(t).await.fired.is_empty() {
                self.settle().await;
            }
        }
    }

    /// Wait (really) until no run of this home is queued or running.
    async fn settle(&self) {
        self.engine.until_idle(std::time::Duration::from_secs(12)).await;
    }

    fn rows(&self, routine: &str) -> Vec<RunRecord> {
        let mut rows = self.engine.store().list_runs(&RunQuery { routine: Some(routine.into()), limit: 1000, ..Default::default() }).unwrap().runs;
        rows.reverse(); // oldest first
        rows
    }
}

trait NowUtc {
    fn now_utc(&self) -> DateTime<Utc>;
}
impl NowUtc for ManualClock {
    fn now_utc(&self) -> DateTime<Utc> {
        nightshift_core::Clock::now(self)
    }
}

fn slots(rows: &[RunRecord]) -> Vec<DateTime<Utc>> {
    rows.iter().map(|r| r.scheduled_for.unwrap()).collect()
}

#[tokio::test]
async fn spring_forward_fires_a_gap_time_once() {
    // 02:30 does not exist in Berlin on 2026-03-29 (02:00 CET → 03:00 CEST).
    let r = rig(&[("nightly", "schedule: \"30 2 * * *\"\ntimezone: Europe/Berlin\ncommand: \"true\"\n")], at("2026-03-28T12:00:00Z"));
    r.tick_at(at("2026-03-28T12:00:00Z")).await;
    r.walk(at("2026-03-30T12:00:00Z"), Duration::minutes(1)).await;
    r.settle().await;
    let rows = r.rows("nightly");
    let on_the_29th: Vec<_> = slots(&rows).into_iter().filter(|t| t.with_timezone(&chrono_tz::Europe::Berlin).format("%d").to_string() == "29").collect();
    assert_eq!(on_the_29th.len(), 1, "{:?}", slots(&rows));
    assert_eq!(rows.len(), 2, "29th and 30th: {:?}", slots(&rows));
    assert!(rows.iter().all(|r| r.trigger == Trigger::Schedule && r.status == RunStatus::Completed), "{rows:?}");
}

#[tokio::test]
async fn fall_back_fires_a_repeated_time_once() {
    // 02:30 happens twice in Berlin on 2026-10-25 (03:00 CEST → 02:00 CET).
    let r = rig(&[("nightly", "schedule: \"30 2 * * *\"\ntimezone: Europe/Berlin\ncommand: \"true\"\n")], at("2026-10-24T12:00:00Z"));
    r.tick_at(at("2026-10-24T12:00:00Z")).await;
    r.walk(at("2026-10-25T12:00:00Z"), Duration::minutes(1)).await;
    r.settle().await;
    let rows = r.rows("nightly");
    assert_eq!(rows.len(), 1, "{:?}", slots(&rows));
    assert_eq!(rows[0].status, RunStatus::Completed);
}

#[tokio::test]
async fn a_routine_fires_in_its_own_zone() {
    let r = rig(&[("ny", "schedule: \"0 9 * * *\"\ntimezone: America/New_York\ncommand: \"true\"\n")], at("2026-01-10T00:00:00Z"));
    r.tick_at(at("2026-01-10T00:00:00Z")).await;
    r.walk(at("2026-01-10T20:00:00Z"), Duration::minutes(1)).await;
    r.settle().await;
    assert_eq!(slots(&r.rows("ny")), vec![at("2026-01-10T14:00:00Z")]);
}

#[tokio::test]
async fn waking_from_a_3h_suspend_runs_once_and_records_the_rest_missed() {
    let r = rig(&[("hourly", "schedule: \"0 * * * *\"\ntimezone: UTC\ncommand: \"true\"\n")], at("2026-11-30T10:05:00Z"));
    r.tick_at(at("2026-11-30T10:05:00Z")).await;
    let report = r.tick_at(at("2026-11-30T13:05:00Z")).await;
    assert_eq!(report.fired.len(), 1);
    assert_eq!(report.fired[0].2, Trigger::Catchup);
    assert_eq!(report.missed, 2);
    r.settle().await;
    let rows = r.rows("hourly");
    assert_eq!(slots(&rows), vec![at("2026-11-30T11:00:00Z"), at("2026-11-30T12:00:00Z"), at("2026-11-30T13:00:00Z")]);
    assert_eq!((rows[0].status, rows[0].reason), (RunStatus::Missed, Some(Reason::Superseded)));
    assert!(rows[0].message.as_deref().unwrap().contains("superseded by the run for 2026-11-30 13:00 UTC"), "{:?}", rows[0].message);
    assert_eq!((rows[2].status, rows[2].trigger), (RunStatus::Completed, Trigger::Catchup));
    // The next pass has nothing left to do.
    let again = r.tick_at(at("2026-11-30T13:06:00Z")).await;
    assert_eq!((again.fired.len(), again.missed), (0, 0));
}

#[tokio::test]
async fn two_days_closed_with_an_hourly_routine_is_one_run_and_47_missed() {
    let r = rig(&[("hourly", "schedule: \"0 * * * *\"\ntimezone: UTC\ncommand: \"true\"\n")], at("2026-11-28T10:05:00Z"));
    r.tick_at(at("2026-11-28T10:05:00Z")).await;
    // The app is closed: a new engine on the same home two days later.
    let later = rig_with(r.th, at("2026-11-30T10:05:00Z"), "");
    let report = later.tick_at(at("2026-11-30T10:05:00Z")).await;
    later.settle().await;
    assert_eq!((report.fired.len(), report.missed), (1, 47));
    let rows = later.rows("hourly");
    assert_eq!(rows.len(), 48);
    assert_eq!(rows.iter().filter(|r| r.status == RunStatus::Missed).count(), 47);
    assert_eq!(rows.last().unwrap().trigger, Trigger::Catchup);
}

#[tokio::test]
async fn catchup_false_records_everything_missed_and_runs_nothing() {
    let r = rig(&[("hourly", "schedule: \"0 * * * *\"\ntimezone: UTC\ncatchup: false\ncommand: \"true\"\n")], at("2026-11-30T10:05:00Z"));
    r.tick_at(at("2026-11-30T10:05:00Z")).await;
    let report = r.tick_at(at("2026-11-30T13:05:00Z")).await;
    assert_eq!((report.fired.len(), report.missed), (0, 3));
    let rows = r.rows("hourly");
    assert!(rows.iter().all(|r| r.status == RunStatus::Missed && r.reason.is_none()), "{rows:?}");
    assert!(rows[0].message.as_deref().unwrap().contains("catchup: false"));
}

#[tokio::test]
async fn a_new_routine_does_not_catch_up_slots_from_before_it_existed() {
    let r = rig(&[], at("2026-11-30T10:05:00Z"));
    r.tick_at(at("2026-11-30T10:05:00Z")).await;
    r.th.routine("new", "schedule: \"*/5 * * * *\"\ntimezone: UTC\ncommand: \"true\"\n");
    r.sched.reload();
    let report = r.tick_at(at("2026-11-30T10:06:00Z")).await;
    assert_eq!((report.fired.len(), report.missed), (0, 0));
    let report = r.tick_at(at("2026-11-30T10:10:00Z")).await;
    assert_eq!(report.fired.len(), 1);
    r.settle().await;
}

#[tokio::test]
async fn end_at_and_one_shot() {
    let r = rig(
        &[
            ("until", "schedule: \"*/10 * * * *\"\ntimezone: UTC\nend_at: 2026-11-30T10:30:00Z\ncommand: \"true\"\n"),
            ("once", "at: 2026-11-30T10:15:00Z\ncommand: \"true\"\n"),
        ],
        at("2026-11-30T10:00:00Z"),
    );
    r.tick_at(at("2026-11-30T10:00:00Z")).await;
    r.walk(at("2026-11-30T11:30:00Z"), Duration::minutes(1)).await;
    r.settle().await;
    assert_eq!(slots(&r.rows("until")), vec![at("2026-11-30T10:10:00Z"), at("2026-11-30T10:20:00Z"), at("2026-11-30T10:30:00Z")]);
    let once = r.rows("once");
    assert_eq!(slots(&once), vec![at("2026-11-30T10:15:00Z")]);
    assert_eq!(once[0].trigger, Trigger::Schedule);
}

#[tokio::test]
async fn devices_limit_where_a_routine_fires() {
    let th = TestHome::new();
    th.routine("here", "schedule: \"* * * * *\"\ndevices: [laptop]\ncommand: \"true\"\n");
    th.routine("there", "schedule: \"* * * * *\"\ndevices: [server]\ncommand: \"true\"\n");
    let r = rig_with(th, at("2026-11-30T10:00:30Z"), "device_name = \"laptop\"\n");
    r.tick_at(at("2026-11-30T10:00:30Z")).await;
    let report = r.tick_at(at("2026-11-30T10:01:00Z")).await;
    r.settle().await;
    assert_eq!(report.fired.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), vec!["here"]);
    assert!(r.rows("there").is_empty());
}

#[tokio::test]
async fn pausing_stops_fires_and_resuming_does_not_replay_the_pause() {
    let r = rig(&[("tick", "schedule: \"*/10 * * * *\"\ntimezone: UTC\ncommand: \"true\"\n")], at("2026-11-30T10:05:00Z"));
    r.tick_at(at("2026-11-30T10:05:00Z")).await;
    r.engine.set_routine_paused("tick", true).unwrap();
    r.walk(at("2026-11-30T10:45:00Z"), Duration::minutes(5)).await;
    assert!(r.rows("tick").is_empty(), "paused: nothing fires, nothing is recorded");
    r.engine.set_routine_paused("tick", false).unwrap();
    let report = r.tick_at(at("2026-11-30T10:50:00Z")).await;
    assert_eq!((report.fired.len(), report.missed), (1, 0));
    r.settle().await;
    // Pause all works the same way, and is stored in the database, not in the YAML.
    r.engine.set_paused(true).unwrap();
    assert_eq!(r.tick_at(at("2026-11-30T11:00:00Z")).await.fired.len(), 0);
    r.engine.set_paused(false).unwrap();
    assert_eq!(r.tick_at(at("2026-11-30T11:10:00Z")).await.fired.len(), 1);
    r.settle().await;
    assert!(!std::fs::read_to_string(r.th.path().join("routines/tick.yaml")).unwrap().contains("paused"));
}

#[tokio::test]
async fn three_failures_in_a_row_auto_pause_the_routine() {
    let r = rig(&[("flaky", "schedule: \"* * * * *\"\ntimezone: UTC\ncommand: \"echo broken >&2; exit 1\"\n")], at("2026-11-30T10:00:30Z"));
    let mut events = r.engine.subscribe();
    r.tick_at(at("2026-11-30T10:00:30Z")).await;
    for m in 1..=3 {
        r.tick_at(at("2026-11-30T10:00:00Z") + Duration::minutes(m)).await;
        r.settle().await;
    }
    let state = r.engine.store().peek_routine_state("flaky").unwrap().unwrap();
    assert!(state.paused);
    let reason = state.paused_reason.unwrap();
    assert!(reason.starts_with("auto-paused after 3 failed runs in a row (last: exited with code 1: broken)"), "{reason}");
    assert!(reason.contains("nightshiftctl resume flaky"));
    let mut saw = false;
    while let Ok(ev) = events.try_recv() {
        if let EngineEvent::RoutinePaused { routine, .. } = ev {
            saw = routine == "flaky";
        }
    }
    assert!(saw, "a RoutinePaused event for the tray");
    assert_eq!(r.tick_at(at("2026-11-30T10:04:00Z")).await.fired.len(), 0);
    r.engine.set_routine_paused("flaky", false).unwrap();
    assert_eq!(r.tick_at(at("2026-11-30T10:05:00Z")).await.fired.len(), 1);
    r.settle().await;
}

#[tokio::test]
async fn a_slot_due_while_the_previous_run_still_runs_is_skipped() {
    let r = rig(&[("slow", "schedule: \"* * * * *\"\ntimezone: UTC\ncommand: \"sleep 2\"\n")], at("2026-11-30T10:00:30Z"));
    r.tick_at(at("2026-11-30T10:00:30Z")).await;
    assert_eq!(r.tick_at(at("2026-11-30T10:01:00Z")).await.fired.len(), 1);
    let report = r.tick_at(at("2026-11-30T10:02:00Z")).await;
    assert_eq!(report.skipped, 1);
    r.settle().await;
    let rows = r.rows("slow");
    assert_eq!((rows[1].status, rows[1].reason), (RunStatus::Skipped, Some(Reason::ActiveRun)));
    assert!(rows[1].message.as_deref().unwrap().starts_with("skipped: the previous run ("));
}

#[tokio::test]
async fn run_now_starts_at_once_while_scheduled_runs_wait_visibly() {
    let r = rig(
        &[
            ("a", "schedule: \"0 * * * *\"\ntimezone: UTC\ncommand: \"sleep 30\"\n"),
            ("b", "schedule: \"0 * * * *\"\ntimezone: UTC\ncommand: \"sleep 30\"\n"),
            ("manual", "schedule: \"0 0 1 1 *\"\ncommand: \"echo by hand\"\n"),
        ],
        at("2026-11-30T09:59:00Z"),
    );
    r.tick_at(at("2026-11-30T09:59:00Z")).await;
    let report = r.tick_at(at("2026-11-30T10:00:00Z")).await;
    assert_eq!(report.fired.len(), 2, "both slots claimed");
    // max_parallel 2: scheduled runs leave the last lane free, so one runs and one waits, visibly.
    let queued = r.engine.store().list_runs(&RunQuery { status: Some(RunStatus::Queued), limit: 10, ..Default::default() }).unwrap().runs;
    assert_eq!(queued.len(), 1);
    assert_eq!(
        queued[0].message.as_deref(),
        Some("queued (position 1): waiting for a free lane (1 running; scheduled runs leave one of 2 free for Run now)")
    );
    // Run now is not held back by them.
    let manual = r.engine.run_now("manual", Trigger::Manual).await.unwrap();
    let rec = tokio::time::timeout(std::time::Duration::from_secs(10), manual.wait()).await.unwrap().unwrap();
    assert_eq!(rec.status, RunStatus::Completed);
    // Cancelling the running one lets the queued one start.
    let running = r.engine.store().list_runs(&RunQuery { status: Some(RunStatus::Running), limit: 10, ..Default::default() }).unwrap().runs;
    assert_eq!(running.len(), 1);
    assert!(r.engine.cancel(&running[0].id).await);
    wait_until_async("the queued run to start", secs(5), || r.engine.store().get_run(&queued[0].id).unwrap().status == RunStatus::Running).await;
    assert!(r.engine.cancel(&queued[0].id).await);
    r.settle().await;
}

/// `[agents.<agent>] max_queued`: past as many waiting runs of an agent, a scheduled one is
/// `skipped · queue_full` (said, told, never started later); a person's run still waits.
#[tokio::test]
async fn past_an_agents_max_queued_a_scheduled_run_is_skipped_and_run_now_still_waits() {
    let th = TestHome::new();
    th.script("claude", "sleep 30");
    for name in ["a", "b", "c", "manual"] {
        th.routine(name, "schedule: \"0 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: hi\naccount: work@acme.dev\n");
    }
    std::fs::write(th.path().join("routines/manual.yaml"), "schedule: \"0 0 1 1 *\"\nagent: claude\nprompt: hi\naccount: work@acme.dev\n").unwrap();
    let settings = "max_parallel = 4\nkeychain_service = \"nightshift-test-lanes\"\n[[accounts]]\nemail = \"work@acme.dev\"\n[agents.claude]\nmax_running = 1\nmax_queued = 1\n";
    let r = rig_with(th, at("2026-11-30T09:59:00Z"), settings);
    r.tick_at(at("2026-11-30T09:59:00Z")).await;
    assert_eq!(r.tick_at(at("2026-11-30T10:00:00Z")).await.fired.len(), 3, "the three slots claimed");
    // One runs (one claude run at a time), one waits; the third would be a second one waiting.
    let with = |status| r.engine.store().list_runs(&RunQuery { status: Some(status), limit: 10, ..Default::default() }).unwrap().runs;
    let skipped = with(RunStatus::Skipped);
    assert_eq!(skipped.iter().map(|s| (s.routine.as_str(), s.reason)).collect::<Vec<_>>(), [("c", Some(Reason::QueueFull))]);
    assert_eq!(skipped[0].message.as_deref(), Some("skipped: 1 claude run was already waiting for a lane (`[agents.claude] max_queued = 1`)"));
    assert_eq!((with(RunStatus::Running).len(), with(RunStatus::Queued).len()), (1, 1));
    // A person's run waits past the bound all the same.
    let manual = r.engine.run_now("manual", Trigger::Manual).await.unwrap();
    assert_eq!(r.engine.store().get_run(&manual.id).unwrap().status, RunStatus::Queued);
    assert!(with(RunStatus::Skipped).len() == 1, "nothing else skipped");
    for run in with(RunStatus::Queued).into_iter().chain(with(RunStatus::Running)) {
        assert!(r.engine.cancel(&run.id).await);
    }
    r.settle().await;
    assert_eq!(r.rows("c").len(), 1, "the skipped slot never ran later");
    assert_eq!(r.engine.store().get_run(&skipped[0].id).unwrap().status, RunStatus::Skipped);
}

#[tokio::test]
async fn reload_picks_up_added_changed_broken_and_removed_files() {
    let r = rig(&[("a", "schedule: \"0 * * * *\"\ncommand: \"true\"\n")], at("2026-11-30T10:00:00Z"));
    let names = |r: &Rig| {
        let set = r.sched.routines();
        (set.routines.iter().map(|x| x.name.clone()).collect::<Vec<_>>(), set.invalid.iter().map(|x| x.name.clone()).collect::<Vec<_>>())
    };
    r.th.routine("b", "schedule: \"*/5 * * * *\"\ncommand: \"true\"\n");
    r.sched.reload();
    assert_eq!(names(&r), (vec!["a".to_string(), "b".to_string()], vec![]));
    r.th.routine("b", "schedule: \"*/5 * * *\"\ncommand: \"true\"\n");
    r.sched.reload();
    assert_eq!(names(&r), (vec!["a".to_string()], vec!["b".to_string()]));
    assert!(r.sched.routines().invalid[0].errors[0].to_string().starts_with("routines/b.yaml:1:11: invalid cron expression"));
    std::fs::remove_file(r.th.path().join("routines/a.yaml")).unwrap();
    r.sched.reload();
    assert_eq!(names(&r), (vec![], vec!["b".to_string()]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_loop_notices_file_changes_by_itself() {
    let r = rig(&[], at("2026-11-30T10:00:00Z"));
    let mut events = r.engine.subscribe();
    let shutdown = Arc::new(tokio::sync::Notify::new());
    let task = tokio::spawn(r.sched.clone().run(shutdown.clone()));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    r.th.routine("fresh", "schedule: \"0 * * * *\"\ncommand: \"true\"\n");
    let changed = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            if let Ok(EngineEvent::RoutinesChanged) = events.recv().await {
                return;
            }
        }
    })
    .await;
    assert!(changed.is_ok(), "no RoutinesChanged after writing a routine file");
    assert!(r.sched.routines().get("fresh").is_some());
    shutdown.notify_one();
    tokio::time::timeout(std::time::Duration::from_secs(5), task).await.expect("the loop stops on shutdown").unwrap();
}

/// nightshift.toml edited while the loop runs: the scheduler's own routines follow at once (here a
/// routine naming a webhook that the edit adds becomes valid, so it will fire).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_loop_notices_a_settings_edit_by_itself() {
    let th = TestHome::new();
    th.routine("posted", "schedule: \"0 * * * *\"\ncommand: \"true\"\nwebhooks: [team]\n");
    let r = rig_with(th, at("2026-11-30T10:00:00Z"), "");
    assert!(r.sched.routines().get("posted").is_none(), "invalid while no webhook is named team");
    let shutdown = Arc::new(tokio::sync::Notify::new());
    let task = tokio::spawn(r.sched.clone().run(shutdown.clone()));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let with_team = "kill_grace_secs = 1\n[[webhooks]]\nname = \"team\"\nurl = \"http://127.0.0.1:9/\"\n";
    let settings = r.th.path().join("nightshift.toml");
    std::fs::write(&settings, with_team).unwrap();
    // Well before the 30 s slice: the loop watches the file.
    let seen = |valid: bool, what: &'static str| {
        let sched = r.sched.clone();
        nightshift_testkit::wait_until_async(what, std::time::Duration::from_secs(10), move || sched.routines().get("posted").is_some() == valid)
    };
    seen(true, "the scheduler to see the settings edit").await;
    // Saved the way many editors do, by renaming a new file over the old one — twice: the watch
    // follows the file that replaced the one it was on.
    let save_by_rename = |text: &str| {
        let tmp = r.th.path().join(".nightshift.toml.swp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &settings).unwrap();
    };
    save_by_rename("kill_grace_secs = 1\n");
    seen(false, "the scheduler to see the webhook removed by a rename").await;
    save_by_rename(with_team);
    seen(true, "the scheduler to see the webhook back after a second rename").await;
    shutdown.notify_one();
    tokio::time::timeout(std::time::Duration::from_secs(5), task).await.expect("the loop stops on shutdown").unwrap();
}

/// Two engines on one home, each with its own clock at `start` and a first pass made (`b` without
/// the test's stand-in binaries: command routines only).
async fn two_engines(th: TestHome, start: DateTime<Utc>) -> (Rig, SecondEngine) {
    let a = rig_with(th, start, "max_parallel = 64\n");
    let clock = Arc::new(ManualClock::new(start));
    let engine = EngineOptions::for_test(a.th.path()).clock(clock.clone()).open();
    let sched = Scheduler::new(engine.clone());
    a.tick_at(start).await;
    sched.tick().await.unwrap();
    (a, SecondEngine { clock, engine, sched })
}

struct SecondEngine {
    clock: Arc<ManualClock>,
    engine: Engine,
    sched: Arc<Scheduler>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drill_two_engines_one_home_1000_slots_no_duplicates() {
    let th = TestHome::new();
    for i in 0..20 {
        th.routine(&format!("r{i:02}"), "schedule: \"* * * * *\"\ntimezone: UTC\ncommand: \"true\"\n");
    }
    let start = at("2026-11-30T00:00:30Z");
    let (a, b) = two_engines(th, start).await;
    let (clock_b, engine_b, sched_b) = (&b.clock, &b.engine, &b.sched);
    let mut fired = 0;
    for m in 1..=50 {
        let t = at("2026-11-30T00:00:00Z") + Duration::minutes(m);
        a.clock.set(t);
        clock_b.set(t);
        // Both engines race for the same 20 slots.
        let (ra, rb) = tokio::join!(a.sched.tick(), sched_b.tick());
        fired += ra.unwrap().fired.len() + rb.unwrap().fired.len();
        a.settle().await;
        engine_b.until_idle(std::time::Duration::from_secs(5)).await;
    }
    let all = a.engine.store().list_runs(&RunQuery { limit: 1000, ..Default::default() }).unwrap();
    let mut page = all.runs;
    let mut cursor = all.next_cursor;
    while let Some(c) = cursor {
        let next = a.engine.store().list_runs(&RunQuery { limit: 1000, cursor: Some(c), ..Default::default() }).unwrap();
        page.extend(next.runs);
        cursor = next.next_cursor;
    }
    assert_eq!(fired, 1000, "every slot fired by exactly one engine");
    assert_eq!(page.len(), 1000, "one record per slot");
    let mut keys: Vec<(String, DateTime<Utc>)> = page.iter().map(|r| (r.routine.clone(), r.scheduled_for.unwrap())).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 1000, "0 duplicates");
    assert!(page.iter().all(|r| r.status == RunStatus::Completed), "{:?}", page.iter().find(|r| r.status != RunStatus::Completed));
    let _ = Utc.timestamp_opt(0, 0);
}

/// `jitter: 1h` spreads 100 routines' 02:00 slots over the hour; two engines racing for them agree
/// on every slot's time (one record each, 0 duplicates), none fires before its time, and a longer
/// jitter written after a slot ran does not run that slot again.
#[tokio::test]
async fn jitter_spreads_slots_and_two_engines_agree_on_each() {
    let th = TestHome::new();
    for i in 0..100 {
        th.routine(&format!("j{i:02}"), "schedule: \"0 2 * * *\"\ntimezone: UTC\ncommand: \"true\"\njitter: 1h\n");
    }
    let start = at("2026-11-30T01:59:30Z");
    let (a, b) = two_engines(th, start).await;
    let (clock_b, engine_b, sched_b) = (&b.clock, &b.engine, &b.sched);
    for step in 1..=122 {
        let t = start + Duration::seconds(30 * step);
        a.clock.set(t);
        clock_b.set(t);
        let (ra, rb) = tokio::join!(a.sched.tick(), sched_b.tick());
        for (_, id, trigger) in ra.unwrap().fired.into_iter().chain(rb.unwrap().fired) {
            let run = a.engine.store().get_run(&id).unwrap();
            let slot = run.scheduled_for.unwrap();
            assert!(slot <= t && slot > t - Duration::seconds(30), "{} fired at {t} for its slot {slot}", run.routine);
            assert_eq!(trigger, Trigger::Schedule);
        }
        a.settle().await;
        engine_b.until_idle(std::time::Duration::from_secs(5)).await;
    }
    let runs = a.engine.store().list_runs(&RunQuery { limit: 1000, ..Default::default() }).unwrap().runs;
    assert_eq!(runs.len(), 100, "one record per routine's slot");
    let mut names: Vec<&str> = runs.iter().map(|r| r.routine.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 100, "0 duplicates");
    let hour = at("2026-11-30T02:00:00Z")..at("2026-11-30T03:00:00Z");
    assert!(runs.iter().all(|r| hour.contains(&r.scheduled_for.unwrap()) && r.status == RunStatus::Completed), "{runs:?}");
    let mut quarters = [0; 4];
    for r in &runs {
        quarters[((r.scheduled_for.unwrap() - hour.start).num_minutes() / 15) as usize] += 1;
    }
    assert!(quarters.iter().all(|n| (10..=40).contains(n)), "spread over the hour, by quarter: {quarters:?}");

    // A routine whose slot a 2h jitter would move later than it ran: written so, it does not run
    // 02:00's slot again.
    let day = at("2026-11-30T00:00:00Z");
    let (name, later) = (0..100)
        .map(|i| format!("j{i:02}"))
        .find_map(|name| {
            let ran = runs.iter().find(|r| r.routine == name).unwrap().scheduled_for.unwrap();
            let moved = nightshift_core::schedule::Schedule::parse("0 2 * * *", chrono_tz::Tz::UTC).unwrap().with_jitter(std::time::Duration::from_secs(7200), &name).next_after(day).unwrap();
            (moved > ran + Duration::minutes(5) && moved > at("2026-11-30T03:05:00Z")).then_some((name, moved))
        })
        .expect("one of 100 routines moves later");
    a.th.routine(&name, "schedule: \"0 2 * * *\"\ntimezone: UTC\ncommand: \"true\"\njitter: 2h\n");
    a.sched.reload();
    a.tick_at(later + Duration::seconds(1)).await;
    a.settle().await;
    assert_eq!(a.rows(&name).len(), 1, "{:?}", a.rows(&name));
}

#[tokio::test]
async fn one_run_per_account_at_a_time() {
    let th = TestHome::new();
    th.script("claude", "sleep 30");
    for name in ["a", "b"] {
        th.routine(name, "schedule: \"0 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: hi\naccount: work@acme.dev\n");
    }
    let r = rig_with(
        th,
        at("2026-11-30T09:59:00Z"),
        "max_parallel = 4\nkeychain_service = \"nightshift-test-lanes\"\n[[accounts]]\nemail = \"work@acme.dev\"\n",
    );
    r.tick_at(at("2026-11-30T09:59:00Z")).await;
    assert_eq!(r.tick_at(at("2026-11-30T10:00:00Z")).await.fired.len(), 2);
    let running = r.engine.store().list_runs(&RunQuery { status: Some(RunStatus::Running), limit: 10, ..Default::default() }).unwrap().runs;
    let queued = r.engine.store().list_runs(&RunQuery { status: Some(RunStatus::Queued), limit: 10, ..Default::default() }).unwrap().runs;
    assert_eq!((running.len(), queued.len()), (1, 1));
    assert_eq!(running[0].account.as_deref(), Some("work@acme.dev"));
    assert_eq!(
        queued[0].message.as_deref(),
        Some("queued (position 1): waiting: account work@acme.dev is busy with another run (one run per account at a time)")
    );
    assert!(r.engine.cancel(&queued[0].id).await);
    assert!(r.engine.cancel(&running[0].id).await);
    r.settle().await;
    assert_eq!(r.engine.store().get_run(&running[0].id).unwrap().account.as_deref(), Some("work@acme.dev"), "settling keeps the account");
    let cancelled = r.engine.store().get_run(&running[0].id).unwrap();
    assert_eq!(cancelled.attempts.len(), 1);
    assert_eq!(cancelled.attempts[0].message.as_deref(), Some("cancelled"), "the attempt says why it ended, like the run");
}

#[tokio::test]
async fn a_pool_uses_a_free_account_and_waits_when_all_are_busy() {
    let th = TestHome::new();
    th.script("claude", "sleep 30");
    for name in ["p1", "p2", "p3"] {
        th.routine(name, "schedule: \"0 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: hi\naccounts: [work@acme.dev, me@home.dev]\n");
    }
    let r = rig_with(
        th,
        at("2026-11-30T09:59:00Z"),
        "max_parallel = 8\nkeychain_service = \"nightshift-test-pool\"\n[[accounts]]\nemail = \"work@acme.dev\"\n[[accounts]]\nemail = \"me@home.dev\"\n",
    );
    r.tick_at(at("2026-11-30T09:59:00Z")).await;
    assert_eq!(r.tick_at(at("2026-11-30T10:00:00Z")).await.fired.len(), 3);
    let running = r.engine.store().list_runs(&RunQuery { status: Some(RunStatus::Running), limit: 10, ..Default::default() }).unwrap().runs;
    let queued = r.engine.store().list_runs(&RunQuery { status: Some(RunStatus::Queued), limit: 10, ..Default::default() }).unwrap().runs;
    let mut accounts: Vec<String> = running.iter().filter_map(|x| x.account.clone()).collect();
    accounts.sort();
    assert_eq!(accounts, vec!["me@home.dev", "work@acme.dev"], "two runs, one per account");
    assert_eq!(queued.len(), 1);
    assert_eq!(
        queued[0].message.as_deref(),
        Some("queued (position 1): waiting: all its accounts (work@acme.dev, me@home.dev) are busy with other runs (one run per account at a time)")
    );
    for x in running.iter().chain(queued.iter()) {
        r.engine.cancel(&x.id).await;
    }
    r.settle().await;
}

/// A notifier that records what it would show.
struct Recorder(std::sync::Mutex<Vec<nightshift_core::notify::Notice>>);
impl nightshift_core::notify::Notifier for Recorder {
    fn send(&self, n: &nightshift_core::notify::Notice) -> Result<(), String> {
        self.0.lock().unwrap().push(n.clone());
        Ok(())
    }
}

#[tokio::test]
async fn a_catch_up_run_says_so_in_its_notification() {
    let r = rig(&[("hourly", "schedule: \"0 * * * *\"\ntimezone: UTC\nnotify: always\ncommand: \"echo caught up\"\n")], at("2026-11-30T10:05:00Z"));
    let recorder = Arc::new(Recorder(std::sync::Mutex::new(Vec::new())));
    r.engine.enable_notifications(recorder.clone());
    r.tick_at(at("2026-11-30T10:05:00Z")).await;
    r.tick_at(at("2026-11-30T13:05:00Z")).await;
    r.settle().await;
    // Everything owed settled (a notice is recorded after it is sent): all that will be shown was.
    wait_until_async("nothing owed", secs(5), || r.engine.store().next_delivery_due(&nightshift_core::run::Channel::Notify).unwrap().is_none()).await;
    let sent = recorder.0.lock().unwrap().clone();
    assert_eq!(sent.len(), 1, "one run, one notification; the missed slots stay quiet: {sent:?}");
    assert!(sent[0].summary.starts_with("↻ hourly (catch-up) · "), "{sent:?}");
    assert_eq!(sent[0].body, "caught up");
}

#[tokio::test]
async fn an_account_turning_revoked_is_announced_once() {
    let th = TestHome::new();
    let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.332");
    th.script("claude", &format!("cat {}/logged-out.jsonl; exit 1", fx.display()));
    th.routine("review", "schedule: \"0 9 * * *\"\nagent: claude\nprompt: go\naccount: work@acme.dev\n");
    let r = rig_with(th, at("2026-11-30T10:00:00Z"), "keychain_service = \"nightshift-test-revoked\"\n[[accounts]]\nemail = \"work@acme.dev\"\n");
    let recorder = Arc::new(Recorder(std::sync::Mutex::new(Vec::new())));
    r.engine.enable_notifications(recorder.clone());
    let rec = r.engine.run_now("review", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(rec.reason, Some(Reason::AuthFailed));
    wait_until_async("two notifications", secs(5), || recorder.0.lock().unwrap().len() >= 2).await;
    let summaries: Vec<String> = recorder.0.lock().unwrap().iter().map(|n| n.summary.clone()).collect();
    assert!(summaries.contains(&"✗ review · login needed for work@acme.dev".to_string()), "{summaries:?}");
    assert!(summaries.contains(&"✗ work@acme.dev needs login".to_string()), "{summaries:?}");
    assert_eq!(summaries.len(), 2, "{summaries:?}");
}

/// A scheduled run that meets an overloaded API is tried again after its backoff, as the same
/// run; a retry still waiting when the next slot comes is left to that slot (superseded, its
/// tries kept) — never two runs of one routine doing the same night's work.
#[tokio::test]
async fn an_outage_is_tried_again_and_a_retry_still_waiting_at_the_next_slot_is_superseded() {
    let th = TestHome::new();
    let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.332");
    // Every try meets a 529, as the real CLI reports it.
    th.script("claude", &format!("cat {}/529.jsonl; exit 1", fx.display()));
    th.routine("nightly", "schedule: \"0 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: go\n");
    let r = rig_with(th, at("2026-12-02T08:59:00Z"), "");
    r.tick_at(at("2026-12-02T08:59:00Z")).await;
    r.tick_at(at("2026-12-02T09:00:00Z")).await;
    let waiting = |tries: usize| r.rows("nightly").into_iter().find(|x| x.status == RunStatus::Queued && x.attempts.len() == tries);
    wait_until_async("the first try to fail and wait for its retry", secs(20), || waiting(1).is_some()).await;
    let first = waiting(1).unwrap();
    assert_eq!(first.attempts[0].reason, Some(Reason::ApiUnavailable), "{first:?}");
    let due = first.due_at.expect("due");
    // 1 min ±20 %.
    assert!(due >= at("2026-12-02T09:00:48Z") && due <= at("2026-12-02T09:01:12Z"), "{due}");
    assert_eq!(first.attempts[0].next_at, Some(due));
    assert!(first.message.as_deref().unwrap().starts_with("api unavailable on try 1; try 2 of 3 at "), "{first:?}");
    // Nothing starts it before it is due.
    r.tick_at(at("2026-12-02T09:00:30Z")).await;
    assert!(waiting(1).is_some());
    // Due: the dispatch after the next pass starts it; it fails again and waits longer (2 min ±20 %).
    r.tick_at(at("2026-12-02T09:02:00Z")).await;
    wait_until_async("the second try to fail and wait", secs(20), || waiting(2).is_some()).await;
    let second = waiting(2).unwrap();
    assert_eq!(second.id, first.id, "the same run");
    assert!(second.due_at.unwrap() >= at("2026-12-02T09:03:36Z"), "{second:?}");
    // `why` says what the slot's run waits for.
    let why = |days| nightshift_core::view::why::why(&r.engine, "nightly", days).unwrap();
    let line = why(1).lines.into_iter().find(|l| l.at == at("2026-12-02T09:00:00Z")).unwrap();
    assert!(line.sentence.starts_with("queued — api unavailable on try 2; try 3 of 3 at "), "{}", line.sentence);
    // The next slot comes while it waits (the machine was busy elsewhere, say): that slot runs.
    r.tick_at(at("2026-12-02T10:00:00Z")).await;
    let rows = || r.rows("nightly");
    wait_until_async("the waiting run to be superseded", secs(20), || rows().iter().any(|x| x.id == first.id && x.status.is_final())).await;
    let old = rows().into_iter().find(|x| x.id == first.id).unwrap();
    assert_eq!((old.status, old.reason), (RunStatus::Failed, Some(Reason::ApiUnavailable)), "{old:?}");
    assert!(old.message.as_deref().unwrap().ends_with("not tried again: superseded by the run for 2026-12-02 10:00 UTC"), "{old:?}");
    assert_eq!(old.attempts.len(), 2, "its tries are kept: {old:?}");
    assert!(rows().iter().any(|x| x.id != first.id && x.scheduled_for == Some(at("2026-12-02T10:00:00Z"))), "{:?}", rows());
    let line = why(1).lines.into_iter().find(|l| l.at == at("2026-12-02T09:00:00Z")).unwrap();
    assert_eq!(line.sentence, "ran — failed after a retry; not tried again: superseded by the run for 2026-12-02 10:00 UTC");
}

/// A retry due while the machine was off is not tried after the routine's next slot has come
/// (the rule its wait was planned by): the engine that starts later settles it, saying so, and the
/// newest slot is made up — found by the simulation (seed 1), where the new engine's first
/// dispatch started the day-old retry and the newest slot was skipped behind it.
#[tokio::test]
async fn a_retry_that_was_due_while_the_machine_was_off_gives_way_to_the_slot_that_came_since() {
    let th = TestHome::new();
    let tries = th.path().join("tries");
    // It fails its first try only.
    th.script("flaky", &format!("echo try >> {0}; [ $(wc -l < {0}) -ge 2 ]", tries.display()));
    th.routine("every2h", "schedule: \"20 */2 * * *\"\ntimezone: UTC\ncommand: flaky\nretries: 1\nretry_backoff: 1h\n");
    let r = rig_with(th, at("2026-12-02T02:19:00Z"), "");
    r.tick_at(at("2026-12-02T02:19:00Z")).await;
    r.tick_at(at("2026-12-02T02:20:00Z")).await;
    let first = || r.rows("every2h").into_iter().next().unwrap();
    wait_until_async("the first try to fail and wait", secs(20), || first().status == RunStatus::Queued && first().attempts.len() == 1).await;
    assert!(first().due_at.unwrap() < at("2026-12-02T04:20:00Z"), "planned before the next slot: {:?}", first());
    // The machine is off from 02:21 until 13:17 the next day; the engine starts and dispatches
    // what is due before its scheduler's first pass.
    r.clock.set(at("2026-12-03T13:17:00Z"));
    r.engine.recover(nightshift_core::RecoveryMode::Adopt).await.unwrap();
    wait_until_async("the waiting run to be settled", secs(20), || first().status.is_final()).await;
    let old = first();
    assert_eq!((old.status, old.reason, old.attempts.len()), (RunStatus::Failed, Some(Reason::ExitNonzero), 1), "{old:?}");
    let said = old.message.as_deref().unwrap();
    assert!(said.contains("not tried again: its next try was due at 2026-12-02 0") && said.ends_with("and the routine's next slot (2026-12-02 04:20 UTC) came before it could start, which runs instead"), "{said}");
    assert_eq!(std::fs::read_to_string(&tries).unwrap().lines().count(), 1, "the day-old retry never ran");
    // The scheduler's first pass makes up the newest slot: it runs, nothing is skipped behind it.
    let report = r.tick_at(at("2026-12-03T13:17:00Z")).await;
    assert_eq!(report.fired.len(), 1, "{report:?}");
    assert_eq!(report.fired[0].2, Trigger::Catchup);
    r.settle().await;
    let rows = r.rows("every2h");
    let newest = rows.iter().find(|x| x.scheduled_for == Some(at("2026-12-03T12:20:00Z"))).unwrap();
    assert_eq!(newest.status, RunStatus::Completed, "it ran: {newest:?}");
    assert!(!rows.iter().any(|x| x.status == RunStatus::Skipped), "{rows:?}");
    assert_eq!(std::fs::read_to_string(&tries).unwrap().lines().count(), 2);
}

/// A run that only ever waited for its account's limit to reset — its agent never started — and
/// is superseded by the next slot ends `blocked · rate_limited`, not `failed`: nothing ran. (It
/// ended `failed`, found by the simulation, whose oracle holds that a failed run's agent ran.)
#[tokio::test]
async fn a_run_that_only_waited_for_a_limit_and_was_superseded_is_blocked_not_failed() {
    let th = TestHome::new();
    let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.332");
    let tries = th.path().join("tries");
    // Every try meets the five-hour limit, which resets at 09:30 (the real CLI's stream).
    let reset = at("2026-12-02T09:30:00Z").timestamp();
    // work@ is busy with a long run; me@ meets the five-hour limit, which resets at 09:30 (the
    // real CLI's stream).
    th.script(
        "claude",
        &format!("case \"$CLAUDE_CODE_OAUTH_TOKEN\" in tok-work-for-tests) exec sleep 60;; esac\necho try >> {}; sed 's/1796004000/{reset}/g' {}/unified.jsonl; exit 1", tries.display(), fx.display()),
    );
    th.routine("busy", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: go\naccount: work@acme.dev\ntimeout: 2m\n");
    th.routine("limited", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: go\naccount: me@home.dev\n");
    th.routine("hourly", "schedule: \"0 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: go\naccounts: [work@acme.dev, me@home.dev]\n");
    let r = rig_with(th, at("2026-12-02T08:50:00Z"), "max_parallel = 4\n[[accounts]]\nemail = \"work@acme.dev\"\n[[accounts]]\nemail = \"me@home.dev\"\n");
    let busy = r.engine.run_now("busy", Trigger::Manual).await.unwrap();
    let manual = r.engine.run_now("limited", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((manual.status, manual.reason), (RunStatus::Failed, Some(Reason::RateLimited)), "{manual:?}");
    // 09:00: the slot's run finds no account that can run, and waits for the reset.
    r.tick_at(at("2026-12-02T08:59:00Z")).await;
    r.tick_at(at("2026-12-02T09:00:00Z")).await;
    let slot = || r.rows("hourly").into_iter().find(|x| x.scheduled_for == Some(at("2026-12-02T09:00:00Z"))).unwrap();
    wait_until_async("the slot's run to wait for the reset", secs(20), || slot().status == RunStatus::Queued && slot().due_at.is_some()).await;
    assert_eq!(slot().attempts.iter().map(|a| a.status).collect::<Vec<_>>(), [RunStatus::Blocked], "a wait is a try that did not run: {:?}", slot());
    // The machine sleeps through 09:30; at 10:00 the new slot does the work instead.
    r.tick_at(at("2026-12-02T10:00:00Z")).await;
    wait_until_async("the waiting run to be superseded", secs(20), || slot().status.is_final()).await;
    let old = slot();
    assert_eq!((old.status, old.reason), (RunStatus::Blocked, Some(Reason::RateLimited)), "{old:?}");
    assert!(old.message.as_deref().unwrap().ends_with("not tried again: superseded by the run for 2026-12-02 10:00 UTC"), "{old:?}");
    assert_eq!(std::fs::read_to_string(&tries).unwrap().lines().count(), 1, "only the manual run's agent ran");
    assert!(r.engine.cancel(&busy.id).await);
}

/// A pool run whose one account's sign-in was refused and whose other is busy waits for the busy
/// one, and runs on it — it was started at once, found no account and ended `blocked ·
/// auth_preflight` (found by the simulation: a retry meeting another routine's run on the good
/// account).
#[tokio::test]
async fn a_pool_run_waits_for_its_busy_account_rather_than_being_blocked_on_a_revoked_one() {
    let th = TestHome::new();
    let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.332");
    // me@'s login is gone; work@ works, and "busy" keeps it for two seconds.
    th.script(
        "claude",
        &format!(
            "case \"$CLAUDE_CODE_OAUTH_TOKEN\" in tok-me-for-tests) cat {f}/logged-out.jsonl; exit 1;; esac\n[ \"$NIGHTSHIFT_ROUTINE\" = busy ] && sleep 2\ncat {f}/success.jsonl\n",
            f = fx.display()
        ),
    );
    th.routine("busy", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: go\naccount: work@acme.dev\n");
    th.routine("mine", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: go\naccount: me@home.dev\n");
    th.routine("pool", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: go\naccounts: [me@home.dev, work@acme.dev]\n");
    let r = rig_with(th, at("2026-12-02T08:50:00Z"), "max_parallel = 4\n[[accounts]]\nemail = \"work@acme.dev\"\n[[accounts]]\nemail = \"me@home.dev\"\n");
    let mine = r.engine.run_now("mine", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((mine.status, mine.reason), (RunStatus::Failed, Some(Reason::AuthFailed)), "me@ is found revoked: {mine:?}");
    let busy = r.engine.run_now("busy", Trigger::Manual).await.unwrap();
    wait_until_async("work@ to be busy", secs(10), || r.rows("busy").first().is_some_and(|x| x.status == RunStatus::Running)).await;
    let pool = r.engine.run_now("pool", Trigger::Manual).await.unwrap();
    let queued = r.engine.store().get_run(&pool.id).unwrap();
    assert_eq!(queued.status, RunStatus::Queued, "it waits for work@: {queued:?}");
    let done = pool.wait().await.unwrap();
    assert_eq!((done.status, done.account.as_deref()), (RunStatus::Completed, Some("work@acme.dev")), "{done:?}");
    assert_eq!(busy.wait().await.unwrap().status, RunStatus::Completed);
}

/// A routine resumed after the clock was set back owes the slots after the resume, by the
/// clock — also one a pass made while it was paused had already looked at before the step back.
/// That slot had no record at all, and `why` said Nightshift was running and recorded nothing
/// (found by the simulation).
#[tokio::test]
async fn a_resume_after_the_clock_was_set_back_owes_the_slots_after_it() {
    let r = rig(&[("every2h", "schedule: \"20 */2 * * *\"\ntimezone: UTC\ncommand: \"true\"\n")], at("2026-12-02T21:00:00Z"));
    r.tick_at(at("2026-12-02T21:00:00Z")).await;
    r.engine.set_routine_paused("every2h", true).unwrap();
    // 22:20 passes while it is paused: nothing is owed.
    assert!(r.tick_at(at("2026-12-02T22:20:00Z")).await.fired.is_empty());
    // The clock is set back 18 minutes; the user resumes it at 22:02.
    r.tick_at(at("2026-12-02T22:02:00Z")).await;
    r.engine.set_routine_paused("every2h", false).unwrap();
    // The next pass is at 00:25: the 22:20 slot came after the resume, so it is one of the
    // slots made up (the newest runs, the older is missed).
    let report = r.tick_at(at("2026-12-03T00:25:00Z")).await;
    assert_eq!((report.fired.len(), report.missed), (1, 1), "{report:?}");
    r.settle().await;
    let rows = r.rows("every2h");
    let slot = |t: &str| rows.iter().find(|x| x.scheduled_for == Some(at(t))).map(|x| (x.status, x.reason));
    assert_eq!(slot("2026-12-02T22:20:00Z"), Some((RunStatus::Missed, Some(Reason::Superseded))), "{rows:?}");
    assert_eq!(slot("2026-12-03T00:20:00Z"), Some((RunStatus::Completed, None)), "{rows:?}");
    let why = nightshift_core::view::why::why(&r.engine, "every2h", 1).unwrap();
    assert!(!why.lines.iter().any(|l| l.fate == nightshift_core::view::why::Fate::NoRecord), "{:?}", why.lines);
    // Resumed at the very instant of a slot a paused pass had just looked at: that slot is owed.
    r.engine.set_routine_paused("every2h", true).unwrap();
    assert!(r.tick_at(at("2026-12-03T02:20:00Z")).await.fired.is_empty());
    r.engine.set_routine_paused("every2h", false).unwrap();
    let report = r.tick_at(at("2026-12-03T02:25:00Z")).await;
    assert_eq!(report.fired.len(), 1, "{report:?}");
    r.settle().await;
    assert!(r.rows("every2h").iter().any(|x| x.scheduled_for == Some(at("2026-12-03T02:20:00Z"))));
}

/// `catchup: 1h`: after a 3-hour sleep the 02:00 report is not worth running; after a
/// 30-minute one it is made up, once.
#[tokio::test]
async fn catchup_with_a_duration_makes_up_only_slots_that_late() {
    let r = rig(&[("report", "schedule: \"0 2 * * *\"\ntimezone: UTC\ncatchup: 1h\ncommand: \"true\"\n")], at("2026-11-30T01:00:00Z"));
    r.tick_at(at("2026-11-30T01:00:00Z")).await;
    let report = r.tick_at(at("2026-11-30T05:00:00Z")).await;
    assert_eq!((report.fired.len(), report.missed), (0, 1));
    let rows = r.rows("report");
    assert_eq!((rows[0].status, rows[0].reason), (RunStatus::Missed, None), "{rows:?}");
    assert_eq!(rows[0].message.as_deref(), Some("missed: Nightshift was not running at this time, and the slot was 3h 00m late — more than `catchup: 1h` makes up"));
    // The next night the machine wakes at 02:30: half an hour late is made up.
    r.tick_at(at("2026-12-01T01:00:00Z")).await;
    let report = r.tick_at(at("2026-12-01T02:30:00Z")).await;
    assert_eq!(report.fired.len(), 1);
    assert_eq!(report.fired[0].2, Trigger::Catchup);
    r.settle().await;
    assert_eq!(r.rows("report").last().unwrap().status, RunStatus::Completed);
}

/// `overlap: queue` puts one run behind the running one (a third slot meanwhile is skipped);
/// `overlap: replace` cancels the running run, saying why, and starts the new one.
#[tokio::test]
async fn overlap_queue_waits_behind_the_running_run_and_replace_cancels_it() {
    let th = TestHome::new();
    th.routine("queued", "schedule: \"* * * * *\"\ntimezone: UTC\ncommand: \"sleep 3\"\noverlap: queue\n");
    // It ignores SIGTERM, so a cancel takes the whole grace (1 s) before SIGKILL: the next slot
    // surely comes while it still ends.
    th.routine("replaced", "schedule: \"* * * * *\"\ntimezone: UTC\ncommand: \"trap '' TERM; sleep 30\"\ntimeout: 1m\noverlap: replace\n");
    // Lanes for both routines' scheduled runs (they never take the last free one).
    let r = rig_with(th, at("2026-11-30T10:00:30Z"), "max_parallel = 4\n");
    r.tick_at(at("2026-11-30T10:00:30Z")).await;
    r.tick_at(at("2026-11-30T10:01:00Z")).await;
    let running = |name: &str| r.rows(name).into_iter().filter(|x| x.status == RunStatus::Running).count();
    wait_until_async("both first runs to run", secs(10), || running("queued") == 1 && running("replaced") == 1).await;
    let first_replaced = r.rows("replaced")[0].id.clone();
    r.tick_at(at("2026-11-30T10:02:00Z")).await;
    r.tick_at(at("2026-11-30T10:03:00Z")).await;
    // queue: one behind the running one, the third slot skipped.
    let q = r.rows("queued");
    assert_eq!(q.iter().map(|x| x.status).collect::<Vec<_>>(), [RunStatus::Running, RunStatus::Queued, RunStatus::Skipped], "{q:?}");
    // replace: the first run is cancelled with the reason, the newest slot's run goes.
    let rows = || r.rows("replaced");
    wait_until_async("the replaced run to be cancelled", secs(10), || rows().iter().any(|x| x.id == first_replaced && x.status == RunStatus::Cancelled)).await;
    let first = rows().into_iter().find(|x| x.id == first_replaced).unwrap();
    assert_eq!(first.message.as_deref(), Some("cancelled: replaced by the run for 2026-11-30 10:02 UTC (`overlap: replace`)"), "{first:?}");
    // The 10:03 slot came while the replacement still waited for the cancel: skipped, not a
    // second replacement.
    let statuses: Vec<_> = rows().iter().map(|x| x.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == RunStatus::Skipped).count(), 1, "{:?}", rows());
    assert_eq!(rows().len(), 3, "{:?}", rows());
    wait_until_async("the queued run to start once the first ended", secs(10), || r.rows("queued").iter().filter(|x| x.status == RunStatus::Completed).count() == 1 && running("queued") == 1).await;
    for x in rows().into_iter().filter(|x| !x.status.is_final()) {
        r.engine.cancel(&x.id).await;
    }
    r.settle().await;
    assert_eq!(r.rows("queued").iter().filter(|x| x.status == RunStatus::Completed).count(), 2);
}

/// `runOnce: true` (agents-cli): the schedule's first fire after the routine appeared is its
/// only one — later slots fire nothing, and the overview shows no next fire once it ran.
#[tokio::test]
async fn a_run_once_routine_fires_its_first_slot_only() {
    let r = rig(&[("once", "schedule: \"0 * * * *\"\ntimezone: UTC\ncommand: \"true\"\nrunOnce: true\n")], at("2026-11-30T09:30:00Z"));
    r.tick_at(at("2026-11-30T09:30:00Z")).await;
    let overview = || nightshift_core::view::routines::overview(&r.engine, r.clock.now_utc()).unwrap().into_iter().find(|o| o.name == "once").unwrap();
    assert_eq!(overview().next_fire, Some(at("2026-11-30T10:00:00Z")));
    assert_eq!(r.tick_at(at("2026-11-30T10:00:00Z")).await.fired.len(), 1);
    r.settle().await;
    for t in ["2026-11-30T11:00:00Z", "2026-11-30T12:00:00Z", "2026-12-01T09:00:00Z"] {
        let report = r.tick_at(at(t)).await;
        assert_eq!((report.fired.len(), report.missed), (0, 0), "{t}");
    }
    let rows = r.rows("once");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0].status, rows[0].scheduled_for), (RunStatus::Completed, Some(at("2026-11-30T10:00:00Z"))));
    assert_eq!(overview().next_fire, None, "its one slot came");
}

/// Before a scheduled run, the sign-in of the accounts it may take is checked live where the agent
/// offers a way — Claude's usage endpoint, with the login's own token — at most once an hour per
/// account: a refused login is `revoked` before any run meets it, so the pool's other account runs
/// the routine and a run pinned to it is held as sign-in work; a run that authenticated vouches
/// for its account as a check does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_sign_in_is_found_before_the_first_scheduled_run_and_the_pool_goes_on() {
    use nightshift_testkit::{FakeAnthropic, Reply};
    const REVOKED: &str = "sk-ant-oat01-sign-in-check-revoked-00000001";
    const GOOD: &str = "sk-ant-oat01-sign-in-check-good-0000000002";
    let fake = FakeAnthropic::start(None).await;
    fake.set(REVOKED, Reply::Unauthorized);
    fake.set(GOOD, Reply::Windows { five_hour: 0.1, five_hour_reset: at("2026-11-30T14:00:00Z").timestamp(), seven_day: 0.2, seven_day_reset: at("2026-12-04T10:00:00Z").timestamp(), text: String::new() });
    let th = TestHome::new();
    for (slug, token) in [("a-at-x.dev", REVOKED), ("b-at-x.dev", GOOD)] {
        let dir = th.path().join("accounts/claude").join(slug);
        std::fs::create_dir_all(&dir).unwrap();
        let expires = at("2026-12-30T00:00:00Z").timestamp_millis();
        std::fs::write(dir.join(".credentials.json"), format!("{{\"claudeAiOauth\":{{\"accessToken\":\"{token}\",\"refreshToken\":\"r\",\"expiresAt\":{expires},\"scopes\":[\"user:inference\",\"user:profile\"]}}}}")).unwrap();
        // Signed in before the night (a login written after a refusal would clear it).
        let before = std::time::SystemTime::from(at("2026-11-29T12:00:00Z"));
        std::fs::File::options().write(true).open(dir.join(".credentials.json")).unwrap().set_modified(before).unwrap();
    }
    th.script("claude", "echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\",\"session_id\":\"s\"}'");
    th.routine("pool", "schedule: \"0,30 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: hi\naccounts: [a@x.dev, b@x.dev]\n");
    th.routine("pinned", "schedule: \"0 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: hi\naccount: a@x.dev\n");
    let settings = format!("keychain_service = \"nightshift-test-sign-in\"\nusage_probe_url = \"{}/api/oauth/usage\"\n[[accounts]]\nemail = \"a@x.dev\"\n[[accounts]]\nemail = \"b@x.dev\"\n", fake.url());
    let r = rig_with(th, at("2026-11-30T09:59:00Z"), &settings);
    r.tick_at(at("2026-11-30T09:59:00Z")).await;
    assert_eq!(r.tick_at(at("2026-11-30T10:00:00Z")).await.fired.len(), 2);
    r.settle().await;
    let pool = &r.rows("pool")[0];
    assert_eq!((pool.status, pool.account.as_deref()), (RunStatus::Completed, Some("b@x.dev")), "{pool:?}");
    let pinned = &r.rows("pinned")[0];
    assert_eq!((pinned.status, pinned.reason), (RunStatus::Blocked, Some(Reason::AuthPreflight)), "held as sign-in work: {pinned:?}");
    let a = r.engine.account_health("a@x.dev").unwrap();
    assert_eq!(a.verdict.as_str(), "revoked");
    assert!(a.evidence.starts_with("its sign-in was refused when checked before a scheduled run: the usage endpoint answered HTTP 401"), "{}", a.evidence);
    let asked = || fake.requests().into_iter().filter(|q| q.path == "/api/oauth/usage").map(|q| q.credential.unwrap_or_default()).collect::<Vec<_>>();
    assert_eq!(asked(), [REVOKED, GOOD], "each account asked once (the pinned run found a@x.dev checked already)");
    // Half an hour later nobody is asked: a@x.dev is refused until a new login, b@x.dev's run
    // authenticated.
    assert_eq!(r.tick_at(at("2026-11-30T10:30:00Z")).await.fired.len(), 1);
    r.settle().await;
    assert_eq!(r.rows("pool")[1].account.as_deref(), Some("b@x.dev"));
    assert_eq!(asked().len(), 2, "{:?}", asked());
}
