//! Why and what it cost, in the real app (WebKitGTK through tauri-driver, under Xvfb): the
//! Routines view's strip and a routine's detail explain every slot (ran, missed while asleep)
//! from a seeded history and presence; a missed run's detail says why; the Usage view draws cost,
//! tokens and runs per day with a table for each and the disk each routine takes; Accounts shows
//! the 5-hour and 7-day windows and the rate limits hit. Screenshots (light and dark) go to
//! tests/artifacts (ui-why.png, ui-usage.png, ui-usage-windows.png, ui-usage-dark.png).

mod common;

use chrono::{DateTime, Duration, Local, Utc};
use common::*;
use nightshift_core::words::fmt_time;
use serde_json::json;
use std::path::Path;

/// `tick` fires hourly; its last three days: ran every hour while awake, the machine asleep from
/// 30 h to 20 h ago (those slots recorded missed, the newest caught up), the app quit 2 h ago
/// and starts again now. Returns a run that ran and one that was missed.
fn seed_tick(home: &Path, now: DateTime<Utc>) -> (String, String) {
    std::fs::write(home.join("routines/tick.yaml"), "name: tick\nschedule: \"0 * * * *\"\ntimezone: UTC\nnotify: never\ncommand: \"true\"\n").unwrap();
    let db = rusqlite::Connection::open(home.join("nightshift.db")).unwrap();
    let hour = |h: i64| DateTime::<Utc>::from_timestamp((now.timestamp() / 3600 - h) * 3600, 0).unwrap();
    let device = nightshift_core::Engine::open(nightshift_core::EngineOptions::new(nightshift_core::Home::at(home))).unwrap().device_name();
    db.execute("INSERT INTO routine_state (routine, first_seen, checked_until) VALUES ('tick', ?1, ?2)", rusqlite::params![fmt_time(&hour(72)), fmt_time(&now)]).unwrap();
    // Awake from 72 h ago until 30 h ago, then asleep until a minute after 20 h ago, awake again
    // until 2 h ago (the app quit then).
    for (from, to, ended) in [(hour(72) - Duration::minutes(1), hour(30) + Duration::minutes(1), "asleep"), (hour(20) + Duration::minutes(1), hour(2) + Duration::minutes(1), "stopped")] {
        db.execute(
            "INSERT INTO presence (device, who, pid, started_at, last_seen, ended) VALUES (?1, 'the Nightshift app (pid 1)', 1, ?2, ?3, ?4)",
            rusqlite::params![device, fmt_time(&from), fmt_time(&to), ended],
        )
        .unwrap();
    }
    let (mut ran, mut missed) = (String::new(), String::new());
    for h in 2..=72 {
        let slot = hour(h);
        let id = format!("why{h:023}");
        let (status, reason, trigger, message) = match h {
            21..=29 => ("missed", Some("superseded"), "schedule", Some("missed while Nightshift was not running; superseded by the run for later")),
            20 => ("completed", None, "catchup", None),
            _ => ("completed", None, "schedule", None),
        };
        db.execute(
            "INSERT INTO runs (id, routine, trigger, agent, sort_ms, scheduled_for, started_at, finished_at, status, reason, message, duration_ms, run_dir)
             VALUES (?1, 'tick', ?2, 'command', ?3, ?4, ?5, ?5, ?6, ?7, ?8, 1200, '/nonexistent')",
            rusqlite::params![id, trigger, slot.timestamp_millis(), fmt_time(&slot), fmt_time(&(slot + Duration::minutes(if h == 20 { 1 } else { 0 }))), status, reason, message],
        )
        .unwrap();
        if h == 5 {
            ran = id.clone();
        }
        if h == 25 {
            missed = id;
        }
    }
    (ran, missed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_slot_is_explained_in_the_strip_the_routine_and_the_run() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let (ran, missed) = seed_tick(&scene.home, Utc::now());
    let Some((driver, c)) = scene.open(&[]).await else { return };
    text(&c, "#routines tr[data-routine='tick']").await;
    // The strip: one mark per slot of the three days it has been known (72, give or take the hour).
    let marks = until(&c, "tick's strip", "return document.querySelectorAll(\"tr[data-routine='tick'] .strip .mark\").length", 20).await;
    let marks = marks.as_u64().unwrap();
    assert!((70..=74).contains(&marks), "{marks} marks");
    let tones = js(&c, "return [...document.querySelectorAll(\"tr[data-routine='tick'] .strip .mark\")].map(m => m.className.split(' ').find(c => c.startsWith('tone-')))").await;
    let tones: Vec<&str> = tones.as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(tones.iter().filter(|t| **t == "tone-bad").count(), 9 + 2, "nine missed slots and the two since the app quit: {tones:?}");
    assert!(tones.contains(&"tone-warn"), "the catch-up: {tones:?}");
    assert!(tones.contains(&"tone-ok"));
    // Focusing a mark says its sentence; a mark with a run opens it.
    let said = js(&c, &format!("const m = document.querySelector(\"tr[data-routine='tick'] a.mark[href='#/run/{missed}']\"); m.focus(); return [m.getAttribute('aria-label'), document.querySelector(\"tr[data-routine='tick'] .strip-says\").textContent]")).await;
    let label = said[0].as_str().unwrap();
    assert!(label.contains(": missed — machine asleep "), "{label}");
    assert!(label.ends_with("; superseded by a later slot"), "{label}");
    assert_eq!(said[1], said[0], "the sentence is shown below the strip");
    click(&c, &format!("tr[data-routine='tick'] a.mark[href='#/run/{ran}']")).await;
    until(&c, "the run's detail", &format!("return location.hash === '#/run/{ran}' && document.getElementById('run-title')"), 15).await;

    // A missed run's detail says why, with the evidence.
    go(&c, &format!("#/run/{missed}")).await;
    let why = text(&c, "#run-slot-why").await;
    assert!(why.starts_with("Why: missed — machine asleep "), "{why}");

    // The routine's detail: the same sentences, newest first, and the next fire.
    go(&c, "#/routine/tick").await;
    let next = text(&c, "#why-next").await;
    assert!(next.starts_with("Next: ") && next.ends_with("if this machine is awake and the app or the daemon runs"), "{next}");
    let lines = until(&c, "the routine's slots", "const rows = [...document.querySelectorAll('#why-lines tbody tr')]; return rows.length && rows.map(r => [r.dataset.fate, r.cells[1].innerText])", 15).await;
    let lines = lines.as_array().unwrap();
    let fates: Vec<&str> = lines.iter().map(|l| l[0].as_str().unwrap()).collect();
    assert!(fates.contains(&"caught_up") && fates.contains(&"missed") && fates.contains(&"ran"), "{fates:?}");
    let caught = lines.iter().find(|l| l[0] == "caught_up").unwrap()[1].as_str().unwrap();
    assert!(caught.starts_with("caught up later at ") && caught.contains("— machine asleep "), "{caught}");
    screenshot(&c, "ui-why.png").await;
    close(c).await;
    drop(driver);
}

/// Runs with usage over the last days: two routines, two accounts, one run that gave no figures.
fn seed_usage(home: &Path, now: DateTime<Utc>) {
    std::fs::write(home.join("nightshift.toml"), "[[accounts]]\nemail = \"work@acme.dev\"\n[[accounts]]\nemail = \"me@home.dev\"\n").unwrap();
    drop(nightshift_core::store::Store::open(&home.join("nightshift.db")).unwrap()); // created and migrated
    let db = rusqlite::Connection::open(home.join("nightshift.db")).unwrap();
    // (routine, account, days ago, status, input tokens, cost)
    type Seeded<'a> = (&'a str, &'a str, i64, &'a str, Option<i64>, Option<f64>);
    let rows: [Seeded; 6] = [
        ("review", "work@acme.dev", 0, "completed", Some(1000), Some(1.5)),
        ("review", "work@acme.dev", 1, "completed", Some(2000), Some(0.5)),
        ("triage", "me@home.dev", 1, "failed", Some(500), Some(0.25)),
        ("triage", "me@home.dev", 2, "completed", None, None),
        ("review", "work@acme.dev", 2, "missed", None, None),
        ("review", "work@acme.dev", 40, "completed", Some(9999), Some(9.0)),
    ];
    for (i, (routine, account, days_ago, status, tokens, cost)) in rows.into_iter().enumerate() {
        let at = now - Duration::days(days_ago) - Duration::minutes(1);
        db.execute(
            "INSERT INTO runs (id, routine, trigger, agent, sort_ms, started_at, finished_at, status, account, input_tokens, output_tokens, cost_usd, run_dir)
             VALUES (?1, ?2, 'schedule', 'claude', ?3, ?4, ?4, ?5, ?6, ?7, ?8, ?9, '/nonexistent')",
            rusqlite::params![format!("use{i:023}"), routine, at.timestamp_millis(), fmt_time(&at), status, account, tokens, tokens.map(|t| t / 10), cost],
        )
        .unwrap();
    }
    // A rate limit two days ago, reset an hour later.
    let hit = now - Duration::days(2);
    db.execute(
        "INSERT INTO account_health_history (account, verdict, evidence, at, resets_at) VALUES ('work@acme.dev', 'rate_limited', 'rate limited by the API', ?1, ?2)",
        rusqlite::params![fmt_time(&hit), fmt_time(&(hit + Duration::hours(1)))],
    )
    .unwrap();
    // The windows its runs reported: five hours at 40 % then 85 % two days ago, 30 % yesterday;
    // the week at 50 % yesterday (around local noon, so each day is plain whenever the test runs).
    for (window, used, days_ago, minutes) in [("five_hour", 40.0, 2, 30), ("five_hour", 85.0, 2, 20), ("five_hour", 30.0, 1, 0), ("seven_day", 50.0, 1, 0)] {
        let seen = window_seen(now, days_ago, minutes);
        db.execute(
            "INSERT INTO account_windows (account, window, used_percent, resets_at, status, seen_at) VALUES ('work@acme.dev', ?1, ?2, NULL, 'allowed', ?3)",
            rusqlite::params![window, used, fmt_time(&seen)],
        )
        .unwrap();
    }
    // Run files on disk for the disk-use table.
    let dir = home.join("runs/review/use00000000000000000000000");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("stdout.log"), vec![b'x'; 3 * 1024 * 1024]).unwrap();
}

/// Local noon `days_ago` days before `now`, less `minutes`.
fn window_seen(now: DateTime<Utc>, days_ago: i64, minutes: i64) -> DateTime<Utc> {
    let day = (now.with_timezone(&Local) - Duration::days(days_ago)).date_naive();
    day.and_hms_opt(12, 0, 0).unwrap().and_local_timezone(Local).earliest().unwrap().with_timezone(&Utc) - Duration::minutes(minutes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_in_charts_with_tables_and_the_accounts_windows() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let now = Utc::now();
    seed_usage(&scene.home, now);
    let Some((driver, c)) = scene.open(&[]).await else { return };
    text(&c, "#routines tr[data-routine='hello']").await;
    go(&c, "#/usage").await;
    until(&c, "the cost chart", "return document.querySelectorAll('#chart-cost svg rect').length", 15).await;
    let day = |ago: i64| (now - Duration::days(ago) - Duration::minutes(1)).with_timezone(&Local).format("%Y-%m-%d").to_string();
    // The cost chart's table: a row per day (30), a column per routine; "–" where no run reported.
    let table = js(&c, "return [...document.querySelectorAll('#chart-cost table tr')].map(r => [...r.cells].map(c => c.textContent))").await;
    let table = table.as_array().unwrap();
    assert_eq!(table[0], json!(["Day", "review", "triage"]), "{table:?}");
    assert_eq!(table.len(), 31, "a header and 30 days");
    let row = |d: String| table.iter().find(|r| r[0] == json!(d)).cloned().unwrap();
    assert_eq!(row(day(0)), json!([day(0), "$1.50", "–"]));
    assert_eq!(row(day(1)), json!([day(1), "$0.50", "$0.25"]));
    assert_eq!(row(day(2)), json!([day(2), "–", "–"]), "no run that day reported a cost");
    let svg_label = js(&c, "return document.querySelector('#chart-cost svg').getAttribute('aria-label')").await;
    assert_eq!(svg_label, json!("Cost per day by routine: $2.25 in all over 30 days; highest day $1.50."));
    // Runs per day by final status counts every final run (the missed slot too).
    let runs = js(&c, "return [...document.querySelectorAll('#chart-runs thead th')].map(c => c.textContent)").await;
    assert_eq!(runs, json!(["Day", "completed", "failed", "missed"]));
    let top = js(&c, "return [...document.querySelectorAll('#usage-top tbody tr')].map(r => [...r.cells].map(c => c.textContent).slice(0, 3))").await;
    assert_eq!(top, json!([["review", "2", "$2.00"], ["triage", "2", "$0.25"]]));
    let disk = text(&c, "#disk-usage tr[data-routine='review']").await;
    assert!(disk.contains("3.0 MiB"), "{disk}");
    // The windows' history: each day's highest share, a line per account and window.
    let windows = js(&c, "return [...document.querySelectorAll('#chart-windows table tr')].map(r => [...r.cells].map(c => c.textContent))").await;
    let windows = windows.as_array().unwrap();
    assert_eq!(windows[0], json!(["Day", "work@acme.dev · 5h", "work@acme.dev · 7d"]), "{windows:?}");
    let of = |ago: i64| {
        let d = window_seen(now, ago, 0).with_timezone(&Local).format("%Y-%m-%d").to_string();
        windows.iter().find(|r| r[0] == json!(d)).and_then(|r| r.as_array()).unwrap()[1..].to_vec()
    };
    assert_eq!((of(2), of(1), of(0)), (vec![json!("85 %"), json!("–")], vec![json!("30 %"), json!("50 %")], vec![json!("–"), json!("–")]), "{windows:?}");
    let drawn = js(&c, "return [document.querySelectorAll('#chart-windows circle').length, document.querySelectorAll('#chart-windows line.mark').length]").await;
    assert_eq!(drawn, json!([3, 2]), "a dot per day with a figure, and the 80 % and 95 % marks");
    js(&c, "document.getElementById('chart-windows').scrollIntoView()").await;
    screenshot(&c, "ui-usage-windows.png").await;
    js(&c, "window.scrollTo(0, 0)").await;
    screenshot(&c, "ui-usage.png").await;
    // 90 days, stacked by account: the old run counts now.
    js(&c, "const s = document.getElementById('usage-days'); s.value = '90'; s.dispatchEvent(new Event('change'))").await;
    until(&c, "90 days", "return document.querySelectorAll('#chart-cost tbody tr').length === 90", 15).await;
    js(&c, "const s = document.getElementById('usage-by'); s.value = 'account'; s.dispatchEvent(new Event('change'))").await;
    let head = until(&c, "by account", "const h = [...document.querySelectorAll('#chart-cost thead th')].map(c => c.textContent); return h[1] === 'work@acme.dev' && h", 15).await;
    assert_eq!(head, json!(["Day", "work@acme.dev", "me@home.dev"]));

    // Accounts: the 5-hour and 7-day windows, and the rate limit hit.
    go(&c, "#/accounts").await;
    let work = text(&c, "section.account[data-account='work@acme.dev'] .windows").await;
    // (The missed slot two days ago ran nothing: it is not a run in these windows.)
    assert_eq!(work, "Last 5 hours: 1 run · 1.0k tokens in, 100 out · last 7 days: 2 runs · 3.0k tokens in, 300 out");
    let me = text(&c, "section.account[data-account='me@home.dev'] .windows").await;
    assert_eq!(me, "Last 5 hours: no runs · last 7 days: 2 runs · 500 tokens in, 50 out");
    let limits = text(&c, "section.account[data-account='work@acme.dev'] .limits summary").await;
    assert_eq!(limits, "Rate limits in the last 30 days: 1");
    close(c).await;
    drop(driver);

    // The same charts in the dark theme.
    let Some((driver, c)) = scene.open(&[("GTK_THEME", "Adwaita:dark")]).await else { return };
    text(&c, "#routines tr[data-routine='hello']").await;
    go(&c, "#/usage").await;
    until(&c, "the cost chart", "return document.querySelectorAll('#chart-cost svg rect').length", 15).await;
    let fill = js(&c, "return getComputedStyle(document.querySelector('#chart-cost rect.series-0')).fill").await;
    assert_eq!(fill, json!("rgb(141, 132, 255)"), "the dark palette");
    screenshot(&c, "ui-usage-dark.png").await;
    close(c).await;
    drop(driver);
}
