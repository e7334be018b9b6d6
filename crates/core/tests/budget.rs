//! Budgets: a day's or month's spend (what the agent reported, the run records' cost) reached
//! blocks the next run before anything is spawned, saying what was spent of what and when it
//! frees — the routine's, `[budget]`'s for all runs, an account's — and frees at midnight, or on
//! the 1st, in the routine's zone (a fake clock: no sleeping). A person may start a run anyway.

use chrono::{DateTime, Duration, Utc};
use nightshift_core::run::{Reason, RunAsks, RunRecord, RunStatus, Trigger};
use nightshift_core::{Engine, EngineOptions, ManualClock};
use nightshift_testkit::TestHome;
use std::sync::Arc;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// A stand-in Claude Code that reports spending `cost` dollars, as its final event does.
fn spender(th: &TestHome, cost: f64) {
    let result = format!(r#"{{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","total_cost_usd":{cost}}}"#);
    th.script("claude", &format!("echo '{result}'"));
}

fn engine(th: &TestHome, clock: &Arc<ManualClock>, settings: &str) -> Engine {
    EngineOptions::for_test(th.path()).settings(settings).path_first(&th.bin_dir()).env("CLAUDE_CODE_OAUTH_TOKEN", "tok-for-tests").clock(Arc::clone(clock) as _).open()
}

async fn run(engine: &Engine, name: &str, asks: RunAsks) -> RunRecord {
    engine.run_now_with(name, Trigger::Manual, asks).await.unwrap().wait().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_day_or_month_blocks_the_next_run_until_it_frees_in_the_routines_zone() {
    let th = TestHome::new();
    spender(&th, 6.0);
    th.routine("nightly", "schedule: \"0 3 * * *\"\ntimezone: Europe/Berlin\nagent: claude\nprompt: hi\nbudget: {day: 10, month: 15}\n");
    let clock = Arc::new(ManualClock::new(at("2026-12-03T10:00:00Z")));
    let engine = engine(&th, &clock, "");
    let none = RunAsks::default();
    for _ in 0..2 {
        assert_eq!(run(&engine, "nightly", none).await.status, RunStatus::Completed);
        clock.advance(Duration::minutes(1));
    }
    // $12 of $10 today: blocked before anything is spawned, saying until when.
    let blocked = run(&engine, "nightly", none).await;
    assert_eq!((blocked.status, blocked.reason), (RunStatus::Blocked, Some(Reason::Budget)));
    assert_eq!(
        blocked.message.as_deref(),
        Some("not started: spent $12 of $10 today (routine nightly); frees at midnight Europe/Berlin; `nightshiftctl run nightly --ignore-budget` starts it anyway")
    );
    assert_eq!(blocked.resets_at, Some(at("2026-12-03T23:00:00Z")));
    assert!(!th.path().join("runs/nightly").join(&blocked.id).join("stdout.log").exists(), "nothing was spawned");
    // A person at the keyboard may.
    assert_eq!(run(&engine, "nightly", RunAsks { ignore_budget: true, ..none }).await.status, RunStatus::Completed);

    // Midnight in Berlin (23:00 UTC) frees the day; the month ($18 of $15) still holds.
    clock.set(at("2026-12-03T23:00:01Z"));
    let month = run(&engine, "nightly", none).await;
    assert_eq!(month.reason, Some(Reason::Budget));
    assert!(month.message.as_deref().unwrap().starts_with("not started: spent $18 of $15 this month (routine nightly); frees on 1 January Europe/Berlin"), "{:?}", month.message);
    // 1 January 00:30 in Berlin is still 31 December in UTC: the month rolled over in the zone.
    clock.set(at("2026-12-31T23:30:00Z"));
    assert_eq!(run(&engine, "nightly", none).await.status, RunStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_budget_caps_all_runs_and_an_accounts_its_own() {
    let th = TestHome::new();
    spender(&th, 4.0);
    th.routine("a", "schedule: \"0 3 * * *\"\ntimezone: UTC\nagent: claude\nprompt: hi\n");
    th.routine("b", "schedule: \"0 3 * * *\"\ntimezone: UTC\nagent: claude\nprompt: hi\n");
    let clock = Arc::new(ManualClock::new(at("2026-12-03T10:00:00Z")));
    let engine = engine(&th, &clock, "[budget]\nday = 7.5\n");
    assert_eq!(run(&engine, "a", RunAsks::default()).await.status, RunStatus::Completed);
    assert_eq!(run(&engine, "b", RunAsks::default()).await.status, RunStatus::Completed);
    let blocked = run(&engine, "a", RunAsks::default()).await;
    // `[budget]` is not any one routine's: its days are this machine's.
    let here = nightshift_core::schedule::local_tz();
    let expected = format!("not started: spent $8 of $7.50 today (all runs); frees at midnight {}", here.name());
    assert!(blocked.message.as_deref().unwrap().starts_with(&expected), "{:?}", blocked.message);
    drop(engine);

    // An account's budget: its runs only.
    let th = TestHome::new();
    spender(&th, 3.0);
    th.routine("pinned", "schedule: \"0 3 * * *\"\ntimezone: UTC\nagent: claude\nprompt: hi\naccount: work@acme.dev\n");
    let engine = EngineOptions::for_test(th.path())
        .settings("[[accounts]]\nemail = \"work@acme.dev\"\nbudget = { day = 5 }\n")
        .path_first(&th.bin_dir())
        .env("CLAUDE_CODE_OAUTH_TOKEN_WORK_AT_ACME_DOT_DEV", "tok-work")
        .clock(Arc::clone(&clock) as _)
        .open();
    for _ in 0..2 {
        let done = run(&engine, "pinned", RunAsks::default()).await;
        assert_eq!(done.status, RunStatus::Completed, "{:?}", done.message);
    }
    let blocked = run(&engine, "pinned", RunAsks::default()).await;
    assert_eq!((blocked.reason, blocked.account.as_deref()), (Some(Reason::Budget), Some("work@acme.dev")));
    assert!(blocked.message.as_deref().unwrap().starts_with("not started: spent $6 of $5 today (account work@acme.dev)"), "{:?}", blocked.message);
}

/// A budget is checked where it is written: amounts in dollars, a run cap only where the agent
/// reports its cost.
#[test]
fn budgets_are_checked_where_they_are_written() {
    let th = TestHome::new();
    th.routine("codex", "schedule: \"0 2 * * *\"\nagent: codex\nprompt: hi\nbudget: {run: 1, day: 5}\n");
    th.routine("bad", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: hi\nbudget: {day: lots, week: 3}\n");
    let set = nightshift_core::routine::load_dir(&nightshift_core::Home::at(th.path()), &[]);
    let codex: Vec<String> = set.get_invalid("codex").unwrap().errors.iter().map(ToString::to_string).collect();
    assert_eq!(codex[0], "routines/codex.yaml:4:10: `budget.run` cannot be enforced for codex: nothing stops it at a cost while it runs (only Claude Code does)");
    th.routine("gem", "schedule: \"0 2 * * *\"\nagent: gemini\nprompt: hi\nbudget: {day: 5}\n");
    let set = nightshift_core::routine::load_dir(&nightshift_core::Home::at(th.path()), &[]);
    assert_eq!(set.get("gem").unwrap().warnings[0].to_string(), "routines/gem.yaml:4:10: warning: `budget.day` counts only reported costs, and gemini reports none: its runs add nothing to it");
    // OpenCode reports each step's cost: a day counts it, a run cap has nothing to stop it.
    th.routine("oc", "schedule: \"0 2 * * *\"\nagent: opencode\nprompt: hi\nbudget: {day: 5}\n");
    th.routine("oc-run", "schedule: \"0 2 * * *\"\nagent: opencode\nprompt: hi\nbudget: {run: 1}\n");
    let set = nightshift_core::routine::load_dir(&nightshift_core::Home::at(th.path()), &[]);
    assert!(set.get("oc").unwrap().warnings.is_empty(), "{:?}", set.get("oc").unwrap().warnings);
    assert!(set.get_invalid("oc-run").unwrap().errors[0].to_string().contains("cannot be enforced for opencode"));
    let bad: Vec<String> = set.get_invalid("bad").unwrap().errors.iter().map(ToString::to_string).collect();
    assert_eq!(bad, ["routines/bad.yaml:4:15: `budget.day` must be an amount in US dollars, such as 2.50", "routines/bad.yaml:4:21: unknown key `budget.week` (expected `budget.run`, `budget.day` or `budget.month`)"]);
    let settings = th.path().join("nightshift.toml");
    std::fs::write(&settings, "[budget]\nday = -3\n").unwrap();
    let err = nightshift_core::settings::Settings::load(&settings).unwrap_err().to_string();
    assert!(err.contains("nightshift.toml:1:1: `budget.day` must be a positive amount in US dollars, found -3"), "{err}");
}
