//! The web UI end to end, in the real app (WebKitGTK through tauri-driver, under Xvfb): a test
//! home with a slow command routine, a failing one, a hostile one, an invalid file, an account
//! without a credential and 10,000 seeded runs. Routines lists them in words with next fires;
//! Run now → the run detail follows the log live → History shows the row running and turns it to
//! completed without a reload; the report is rendered; the failing run says why and what to do;
//! the hostile report is inert and the window never navigates away; History pages through 10k
//! runs; Accounts shows the verdict and a token field that never keeps the token, and the hosts
//! routines are placed on with a Check.
//! Screenshots of each view go to tests/artifacts (ui-*.png).

mod common;

use common::*;
use fantoccini::{Client, Locator};
use nightshift_testkit::git::{accept_pushes, git, init_bare, init_repo, refuse_pushes};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const SEEDED: usize = 10_000;


fn write_home(home: &Path) {
    nightshift_core::Home::at(home).bootstrap().unwrap();
    let routines = home.join("routines");
    let files = [
        ("slow.yaml", "name: slow\nschedule: \"0 9 * * 1-5\"\ntimezone: Europe/Berlin\ncommand: \"echo 'step 1'; sleep 3; echo 'step 2'; sleep 2; printf '## Slow done\\\\n\\\\n- **all** good\\\\n'\"\nnotify: never\n"),
        ("failing.yaml", "name: failing\nschedule: \"30 7 * * *\"\ncommand: \"echo checking; echo 'disk full' >&2; exit 3\"\nnotify: never\n"),
        (
            "hostile.yaml",
            "name: hostile\nschedule: \"0 3 1 1 *\"\nnotify: never\ncommand: |\n  echo '## Findings'\n  echo '<script>window.__pwned=1</script>'\n  echo\n  echo '<img src=x onerror=\"window.__pwned=2\">'\n  echo\n  echo '[click me](javascript:window.__pwned=3) and [docs](https://example.invalid/docs)'\n  echo\n  echo 'text <a href=\"#\" onclick=\"window.__pwned=4\">inline</a>'\n",
        ),
        ("broken.yaml", "name: broken\ncommand: echo hi\nschedule: \"0 9 * * *\"\nretrys: 3\n"),
    ];
    for (name, text) in files {
        std::fs::write(routines.join(name), text).unwrap();
    }
    // A routine placed on a host nobody answers for (port 1 on loopback refuses at once).
    std::fs::write(home.join("ssh_config"), "Host box\n  HostName 127.0.0.1\n  Port 1\n").unwrap();
    std::fs::write(routines.join("placed.yaml"), format!("name: placed\nschedule: \"0 3 1 1 *\"\nhost: box\ndevices: [{}]\ncommand: make\nnotify: never\n", nightshift_testkit::this_machine())).unwrap();
    let ssh_config = home.join("ssh_config");
    std::fs::write(home.join("nightshift.toml"), format!("ssh_config = \"{}\"\n[[accounts]]\nemail = \"work@acme.dev\"\n", ssh_config.display())).unwrap();
    seed_history(&home.join("nightshift.db"));
}

/// 10,000 finished runs of a routine `nightly`, one a minute until an hour ago (one transaction).
fn seed_history(db: &Path) {
    drop(nightshift_core::store::Store::open(db).unwrap()); // create and migrate
    let mut conn = rusqlite::Connection::open(db).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut stmt = tx
            .prepare("INSERT INTO runs (id, routine, trigger, agent, sort_ms, started_at, finished_at, status, reason, duration_ms, run_dir) VALUES (?1, 'nightly', 'schedule', 'command', ?2, ?3, ?3, ?4, ?5, 1500, ?6)")
            .unwrap();
        let t0 = chrono::Utc::now() - chrono::Duration::hours(1) - chrono::Duration::minutes(SEEDED as i64);
        for i in 0..SEEDED {
            let at = t0 + chrono::Duration::minutes(i as i64);
            let (status, reason) = if i % 7 == 0 { ("failed", Some("exit_nonzero")) } else { ("completed", None) };
            stmt.execute(rusqlite::params![format!("seed{i:022}"), at.timestamp_millis(), nightshift_core::words::fmt_time(&at), status, reason, format!("/nonexistent/{i}")]).unwrap();
        }
        // The account's usage windows, as a subscription's runs report them: five hours at 85 %,
        // seven days at 40 %.
        let now = chrono::Utc::now();
        for (window, used, resets) in [("five_hour", 85.0, now + chrono::Duration::hours(2)), ("seven_day", 40.0, now + chrono::Duration::days(3))] {
            tx.execute(
                "INSERT INTO account_windows (account, window, used_percent, resets_at, status, seen_at, run_id) VALUES ('work@acme.dev', ?1, ?2, ?3, 'allowed', ?4, NULL)",
                rusqlite::params![window, used, nightshift_core::words::fmt_time(&resets), nightshift_core::words::fmt_time(&now)],
            )
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// Start a routine from its Run now button; the window moves to the new run. Returns its id.
async fn run_now_from_routines(c: &Client, name: &str) -> String {
    go(c, "#/routines").await;
    click(c, &format!("#routines tr[data-routine='{name}'] button.primary")).await;
    let id = until(c, "the run detail", "return location.hash.startsWith('#/run/') && location.hash.slice(6)", 15).await;
    id.as_str().unwrap().to_string()
}

async fn wait_status(c: &Client, status: &str, secs: u64) {
    until(c, &format!("run status {status}"), &format!("const b = document.querySelector('#run-title .badge'); return b && b.classList.contains('badge-{status}')"), secs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_ui_in_the_real_app() {
    if !gui_available() {
        return;
    }
    let scene = Scene::new();
    let home = &scene.home;
    write_home(home);
    let _one = ONE_APP_AT_A_TIME.lock().await;
    let Some((driver, c)) = scene.open(&[]).await else { return };

    // --- Routines: every routine in words, with next fire; the invalid file with its position.
    let slow = text(&c, "#routines tr[data-routine='slow']").await;
    assert!(slow.contains("At 09:00 on weekdays, Europe/Berlin"), "{slow}");
    assert!(slow.contains("enabled") && slow.contains("never"), "{slow}");
    let next = js(&c, "return document.querySelector(\"#routines tr[data-routine='slow'] td:nth-child(3) span[title]\")?.title").await;
    assert!(next.as_str().is_some_and(|t| t.len() > 5), "slow has a next fire: {next}");
    let failing = text(&c, "#routines tr[data-routine='failing']").await;
    assert!(failing.contains("At 07:30"), "{failing}");
    let broken = text(&c, "#routines tr[data-routine='broken']").await;
    assert!(broken.contains("invalid") && broken.contains("routines/broken.yaml:4:1: unknown key `retrys`"), "{broken}");
    assert!(text(&c, "#routines tr[data-routine='pr-review']").await.contains("disabled"));
    let placed = text(&c, "#routines tr[data-routine='placed']").await;
    assert!(placed.contains("command on box · routines/placed.yaml"), "{placed}");
    let timing = js(&c, "const p = performance.getEntriesByName('first-contentful-paint')[0]; const n = performance.getEntriesByType('navigation')[0]; return { first_contentful_paint_ms: p ? p.startTime : null, dom_content_loaded_ms: n ? n.domContentLoadedEventEnd : null }").await;
    std::fs::write(artifacts().join("ui-timing.json"), timing.to_string()).unwrap();
    screenshot(&c, "ui-routines.png").await;

    // --- Durations read the same in the window as on the CLI and in notifications (one format).
    let samples = [0u64, 850, 42_400, 59_999, 60_000, 252_000, 3_599_999, 7_500_000];
    let shown = c
        .execute_async("const done = arguments[arguments.length - 1]; const ms = arguments[0]; import('./lib/format.js').then((m) => done(ms.map(m.duration)))", vec![json!(samples)])
        .await
        .unwrap();
    let engine_words: Vec<String> = samples.iter().map(|ms| nightshift_core::words::duration(*ms)).collect();
    assert_eq!(shown, json!(engine_words), "the window's durations differ from the engine's");

    // --- Keyboard: Tab reaches the views and Enter opens one; Esc closes the re-login panel.
    js(&c, "document.activeElement?.blur(); window.scrollTo(0, 0); return 1").await;
    let mut reached = false;
    for _ in 0..8 {
        bounded("Tab", async { c.active_element().await?.send_keys("\u{E004}").await }).await.unwrap(); // Tab
        if js(&c, "return document.activeElement?.dataset?.view === 'history'").await == json!(true) {
            reached = true;
            break;
        }
    }
    assert!(reached, "History is not reachable with Tab");
    bounded("Enter", async { c.active_element().await?.send_keys("\u{E007}").await }).await.unwrap(); // Enter
    until(&c, "History opened from the keyboard", "return location.hash.startsWith('#/history') && !!document.getElementById('history-rows')", 10).await;
    js(&c, "window.nightshiftUi.relogin({account: 'a@b.c', command: 'x'}); return 1").await;
    bounded("Escape", async { c.active_element().await?.send_keys("\u{E00C}").await }).await.unwrap(); // Escape
    until(&c, "Esc closing the panel", "return document.getElementById('relogin').hidden", 10).await;
    // A window the tray's Re-login opens starts at #/relogin/<account>: Accounts, with the panel.
    js(&c, "location.hash = '#/relogin/work%40acme.dev'; return 1").await;
    until(&c, "the re-login panel of a window opened for it", "return !document.getElementById('relogin').hidden && document.getElementById('relogin-account').textContent === 'work@acme.dev' && location.hash === '#/accounts'", 15).await;
    assert!(text(&c, "#relogin-command").await.contains("claude"), "the login command is shown");
    js(&c, "document.getElementById('relogin-close').click(); return 1").await;
    go(&c, "#/routines").await;
    text(&c, "#routines tr[data-routine='slow']").await;

    // --- Header: pause all and back.
    until(&c, "the scheduling header", "return document.getElementById('engine-state').textContent.startsWith('Scheduling')", 30).await;
    click(&c, "#pause-all").await;
    until(&c, "paused header", "return document.getElementById('engine-state').textContent.startsWith('Paused')", 30).await;
    assert_eq!(text(&c, "#pause-all").await, "Resume all");
    click(&c, "#pause-all").await;
    until(&c, "scheduling header", "return document.getElementById('engine-state').textContent.startsWith('Scheduling')", 30).await;

    // --- Run now: the detail follows the live log while the run is going.
    let id = run_now_from_routines(&c, "slow").await;
    until(&c, "step 1 in the live log", "return document.getElementById('run-log')?.textContent.includes('step 1')", 15).await;
    let still = js(&c, "return document.querySelector('#run-title .badge')?.textContent").await;
    assert_eq!(still, json!("running"), "the log followed the run while it was going");
    assert!(js(&c, "return !!document.getElementById('cancel-run')").await == json!(true), "a running run can be cancelled");

    // --- History: the row is there as running and turns completed in place, no reload.
    click(&c, "main a[href='#/history']").await;
    let row = format!("#history-rows tr[data-id='{id}']");
    let status = until(&c, "the running row", &format!("return document.querySelector(\"{row}\")?.dataset.status"), 10).await;
    assert_eq!(status, json!("running"));
    js(&c, "window.__historyBody = document.getElementById('history-rows'); return 1").await;
    until(&c, "the row turning completed", &format!("return document.querySelector(\"{row}\")?.dataset.status === 'completed'"), 30).await;
    let same = js(&c, "return window.__historyBody === document.getElementById('history-rows')").await;
    assert_eq!(same, json!(true), "the row changed live, without reloading the list");
    screenshot(&c, "ui-history.png").await;

    // --- Run detail: the report rendered as Markdown, the readable log, raw on a toggle.
    go(&c, &format!("#/run/{id}")).await;
    assert_eq!(text(&c, "#run-report h2").await, "Slow done");
    assert_eq!(text(&c, "#run-report li strong").await, "all");
    until(&c, "step 2 in the log", "return document.getElementById('run-log').textContent.includes('step 2')", 10).await;
    assert_eq!(text(&c, "#run-summary").await, "Completed.");
    screenshot(&c, "ui-run-completed.png").await;
    click(&c, "#log-raw").await;
    until(&c, "the raw log", "const l = document.getElementById('run-log'); return l.classList.contains('raw') && !l.querySelector('.entry') && l.textContent.startsWith('step 1\\nstep 2')", 10).await;

    // --- A failing run: its reason in plain words, and the fix.
    run_now_from_routines(&c, "failing").await;
    wait_status(&c, "failed", 20).await;
    assert_eq!(text(&c, "#run-summary").await, "The command failed: exited with code 3: disk full");
    assert_eq!(text(&c, "#run-fix").await, "The log below shows what it printed.");
    until(&c, "the failing output", "return document.getElementById('run-log').textContent.includes('checking')", 10).await;
    screenshot(&c, "ui-run-failed.png").await;

    // --- A hostile report is inert: nothing runs, nothing loads, the window never navigates.
    run_now_from_routines(&c, "hostile").await;
    wait_status(&c, "completed", 20).await;
    assert_eq!(text(&c, "#run-report h2").await, "Findings");
    let report = js(&c, "const r = document.getElementById('run-report'); return { pwned: window.__pwned ?? null, active: r.querySelectorAll('script, img, iframe, [onerror], [onclick], form, style').length, text: r.textContent, hrefs: [...r.querySelectorAll('a')].map(a => a.getAttribute('href')) }").await;
    assert_eq!(report["pwned"], Value::Null, "{report}");
    assert_eq!(report["active"], json!(0), "{report}");
    assert!(report["text"].as_str().unwrap().contains("<script>window.__pwned=1</script>"), "raw HTML shows as text: {report}");
    assert_eq!(report["hrefs"], json!([null, "https://example.invalid/docs"]), "{report}");
    for i in 0..2 {
        js(&c, &format!("document.querySelectorAll('#run-report a')[{i}].click(); return 1")).await;
    }
    js(&c, "setTimeout(() => { location.href = 'https://example.invalid/escape'; }, 0); return 1").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = js(&c, "return { href: location.href, pwned: window.__pwned ?? null, report: !!document.getElementById('run-report') }").await;
    let href = after["href"].as_str().unwrap();
    assert!(href.starts_with("tauri://localhost#/run/") || href.starts_with("tauri://localhost/"), "the window navigated away: {after}");
    assert_eq!((after["pwned"].clone(), after["report"].clone()), (Value::Null, json!(true)), "{after}");
    screenshot(&c, "ui-run-hostile.png").await;

    // --- History pages through 10,000 runs a page at a time, newest first, none twice.
    go(&c, "#/history?routine=nightly").await;
    until(&c, "the first page", "return document.querySelectorAll('#history-rows tr').length >= 50", 15).await;
    for target in [100, 150] {
        js(&c, "const b = document.getElementById('history-box'); b.scrollTop = b.scrollHeight; return 1").await;
        until(&c, &format!("{target} rows"), &format!("return document.querySelectorAll('#history-rows tr').length >= {target}"), 15).await;
    }
    // The button below the list loads the next page. Back at the top nothing loads by itself, so
    // the page that comes is the click's.
    js(&c, "document.getElementById('history-box').scrollTop = 0; return 1").await;
    let before = until(&c, "the footer at rest", "const b = document.getElementById('load-more'); return b && !b.disabled && !b.hidden && document.querySelectorAll('#history-rows tr').length", 15).await;
    click(&c, "#load-more").await;
    let after = before.as_u64().unwrap() + 50;
    until(&c, &format!("{after} rows after Load older runs"), &format!("return location.hash.startsWith('#/history') && document.querySelectorAll('#history-rows tr').length >= {after}"), 15).await;
    let ids = js(&c, "return [...document.querySelectorAll('#history-rows tr')].map(r => r.dataset.id)").await;
    let ids: Vec<&str> = ids.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(ids.len() < 400, "pages load as needed, not the whole history: {}", ids.len());
    let mut sorted = ids.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    sorted.dedup();
    assert_eq!(ids, sorted, "newest first, none twice");
    assert_eq!(ids[0], format!("seed{:022}", SEEDED - 1));
    assert!(text(&c, "#history-footer").await.contains(&format!("{} runs shown", ids.len())));
    screenshot(&c, "ui-history-10k.png").await;
    // Filter by status: only failed runs of `nightly` (every 7th).
    js(&c, "const s = document.getElementById('filter-status'); s.value = 'failed'; s.dispatchEvent(new Event('change')); return 1").await;
    until(&c, "the failed filter", "const rows = [...document.querySelectorAll('#history-rows tr')]; return rows.length >= 50 && rows.every(r => r.dataset.status === 'failed')", 15).await;
    let first = js(&c, "return document.querySelector('#history-rows tr').dataset.id").await;
    assert_eq!(first, json!(format!("seed{:022}", (SEEDED - 1) / 7 * 7)));

    // --- Accounts: the verdict with its evidence; a token field that never keeps the token.
    go(&c, "#/accounts").await;
    let card = "#accounts .account[data-account='work@acme.dev']";
    let verdict = until(&c, "the account card", &format!("return document.querySelector(\"{card}\")?.dataset.verdict"), 20).await;
    assert_eq!(verdict, json!("unconfigured"));
    let card_text = text(&c, card).await;
    assert!(card_text.contains("Credential: no credential") && card_text.contains("keychain"), "{card_text}");
    // Its usage windows: a meter each, with the countdown to the reset.
    let windows = js(&c, &format!("return [...document.querySelectorAll(\"{card} .limit-window\")].map(p => [p.dataset.window, p.querySelector('meter').value, p.textContent])")).await;
    let windows = windows.as_array().unwrap();
    assert_eq!((windows[0][0].as_str(), windows[0][1].as_f64(), windows[1][0].as_str(), windows[1][1].as_f64()), (Some("five_hour"), Some(85.0), Some("seven_day"), Some(40.0)), "{windows:?}");
    assert!(windows[0][2].as_str().unwrap().starts_with("5-hour window 85 % used · resets in "), "{windows:?}");
    click(&c, &format!("{card} .actions button:nth-child(2)")).await;
    bounded("typing the token", async { c.find(Locator::Css(&format!("{card} input.token"))).await?.send_keys("sk-ant-oat01-ui-test-token-do-not-show").await }).await.unwrap();
    click(&c, &format!("{card} .token-form button")).await;
    let said = until(&c, "the set-token result", "return document.getElementById('accounts-status').textContent", 20).await;
    assert!(said.as_str().unwrap().to_lowercase().contains("keychain") || said.as_str().unwrap().contains("Secret Service"), "{said}");
    let value = js(&c, &format!("return document.querySelector(\"{card} input.token\").value")).await;
    assert_eq!(value, json!(""), "the token is cleared from the field at once");
    let page = js(&c, "return document.documentElement.outerHTML").await;
    assert!(!page.as_str().unwrap().contains("ui-test-token"), "the token is nowhere in the page");
    // Its reserve and the opt-in usage probe, written to nightshift.toml.
    js(&c, &format!("const f = document.querySelector(\"{card} .window-options\"); f.querySelector('input.reserve').value = '20'; f.querySelector('input.usage-probe').checked = true; return 1")).await;
    click(&c, &format!("{card} .window-options button")).await;
    let said = until(&c, "the options saved", "const s = document.getElementById('accounts-status').textContent; return s.includes('saved') ? s : null", 20).await;
    assert_eq!(said, json!("work@acme.dev: reserve 20 %, usage probe on — saved to nightshift.toml."));
    let toml = std::fs::read_to_string(home.join("nightshift.toml")).unwrap();
    assert!(toml.contains("email = \"work@acme.dev\"\nreserve = 20\nusage_probe = true\n"), "{toml}");
    until(&c, "the card to show the saved reserve", &format!("return document.querySelector(\"{card} input.reserve\")?.value === '20' && document.querySelector(\"{card} input.usage-probe\")?.checked"), 20).await;
    // Hosts, next to the accounts: the one a routine is placed on, not tried yet; Check tries it.
    let host = "#hosts .host[data-host='box']";
    let state = until(&c, "the host card", &format!("return document.querySelector(\"{host}\")?.dataset.state"), 20).await;
    assert_eq!(state, json!("not tried yet"));
    assert!(text(&c, host).await.contains("Routines: placed"), "{}", text(&c, host).await);
    // (Saving the options changed nightshift.toml: the view re-renders on the settings change and
    // on the usage probe it turned on — a click may land while the cards move.)
    click_until(&c, &format!("{host} .actions button"), "the host check to start", "const s = document.getElementById('accounts-status').textContent; return s.startsWith('Checking box') || s.startsWith('box: unreachable')", 20).await;
    let said = until(&c, "the host check", "const s = document.getElementById('accounts-status').textContent; return s.startsWith('box: unreachable') ? s : null", 20).await;
    assert!(said.as_str().unwrap().contains("Connection refused"), "{said}");
    until(&c, "the host card to show the failure", &format!("return document.querySelector(\"{host}\")?.dataset.state === 'unreachable'"), 20).await;
    assert!(text(&c, host).await.contains("Connection refused") && text(&c, host).await.contains("Last seen: never"), "{}", text(&c, host).await);
    screenshot(&c, "ui-accounts.png").await;

    close(c).await;
    drop(driver);
}

/// Light and dark follow the system: with a dark GTK theme the page sees `prefers-color-scheme:
/// dark` and paints dark; the default theme paints light (checked in the test above's screenshots).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_follows_a_dark_system_theme() {
    if !gui_available() {
        return;
    }
    let _one = ONE_APP_AT_A_TIME.lock().await;
    let scene = Scene::new();
    let Some((driver, c)) = scene.open(&[("GTK_THEME", "Adwaita:dark")]).await else { return };
    text(&c, "#routines tr[data-routine='hello']").await;
    let look = js(&c, "return { dark: matchMedia('(prefers-color-scheme: dark)').matches, bg: getComputedStyle(document.body).backgroundColor }").await;
    assert_eq!(look["dark"], json!(true), "{look}");
    assert_eq!(look["bg"], json!("rgb(20, 20, 29)"), "the dark palette is used: {look}");
    screenshot(&c, "ui-dark.png").await;
    close(c).await;
    drop(driver);
}

/// A damaged database: the app refuses to schedule on it and says so atop the window — which
/// file, what is wrong, what to do — instead of only in its log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_database_is_shown_atop_the_window() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let home = &scene.home;
    let db = home.join("nightshift.db");
    drop(nightshift_core::store::Store::open(&db).unwrap());
    // Pages beyond the schema, checkpointed into the file; then one of them overwritten.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE filler(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 2000) INSERT INTO filler SELECT randomblob(100) FROM n;").unwrap();
    let _ = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
    drop(conn);
    use std::os::unix::fs::FileExt;
    // The filler's last pages: the engine opens, `quick_check` finds the damage.
    let pages = std::fs::metadata(&db).unwrap().len() / 4096;
    std::fs::OpenOptions::new().write(true).open(&db).unwrap().write_all_at(&[0xAB; 4096], (pages - 2) * 4096).unwrap();

    let Some((driver, c)) = scene.open(&[]).await else { return };
    let shown = until(&c, "the problem atop the window", "const p = document.getElementById('problems'); return p && !p.hidden && p.textContent.includes('is damaged') ? p.textContent : null", 20).await;
    let shown = shown.as_str().unwrap();
    assert!(shown.contains(&db.display().to_string()) && shown.contains("Move it aside"), "{shown}");
    let header = text(&c, "#engine-state").await;
    assert!(header.starts_with("Not scheduling"), "the header does not claim to schedule: {header}");
    screenshot(&c, "ui-damaged-database.png").await;
    close(c).await;
    drop(driver);
}

/// A run's webhook deliveries in its detail: one receiver accepted, one refused with its answer
/// shown (as text, never markup).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_detail_shows_its_webhook_deliveries() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let home = &scene.home;
    let team = nightshift_testkit::WebhookReceiver::start(vec![nightshift_testkit::Answer::Accept], None).await;
    let picky = nightshift_testkit::WebhookReceiver::start(vec![nightshift_testkit::Answer::Status(400)], None).await;
    std::fs::write(home.join("routines/hook.yaml"), "name: hook\nschedule: \"0 3 1 1 *\"\ncommand: echo posted\nnotify: never\nwebhooks: [team, picky]\n").unwrap();
    std::fs::write(home.join("nightshift.toml"), format!("[[webhooks]]\nname = \"team\"\nurl = \"{}\"\n[[webhooks]]\nname = \"picky\"\nurl = \"{}\"\n", team.url(), picky.url())).unwrap();
    let Some((driver, c)) = scene.open(&[]).await else { return };
    text(&c, "#routines tr[data-routine='hook']").await;
    let id = run_now_from_routines(&c, "hook").await;
    wait_status(&c, "completed", 20).await;
    // Deliveries are not run events: open the run again until both are settled.
    let start = std::time::Instant::now();
    let shown = loop {
        go(&c, "#/history").await;
        go(&c, &format!("#/run/{id}")).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let v = js(&c, "const d = document.querySelector('#run-deliveries li[data-webhook=picky][data-state=not_delivered]'); const t = document.querySelector('#run-deliveries li[data-webhook=team][data-state=delivered]'); return d && t ? document.getElementById('run-deliveries').textContent : null").await;
        if !v.is_null() {
            break v;
        }
        let now = js(&c, "return document.getElementById('run-deliveries')?.textContent ?? '(none)'").await;
        assert!(start.elapsed() < Duration::from_secs(30), "deliveries not settled: {now}; team got {}, picky got {}", team.received().len(), picky.received().len());
    };
    let shown = shown.as_str().unwrap();
    assert!(shown.contains("picky not delivered after 1 try") && shown.contains("HTTP 400"), "{shown}");
    assert_eq!(team.accepted().get(&id), Some(&1));
    screenshot(&c, "ui-webhooks.png").await;
    close(c).await;
    drop(driver);
}

/// A worktree run's changes in its detail: the summary line, the branch with Copy, the files with
/// +/− (a hostile file name stays text), the commits, a refused push that "Push again" pushes
/// once the remote takes it, and then the pull request the app opens (`push.pr`, on the fake
/// GitHub) with its link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_detail_shows_what_a_worktree_run_changed() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let home = &scene.home;
    let repo = scene.tmp.path().join("repo");
    let remote = scene.tmp.path().join("remote.git");
    init_repo(&repo, &[("notes.txt", "one\ntwo\n")]);
    init_bare(&remote);
    git(&repo, &["remote", "add", "origin", remote.to_str().unwrap()]);
    refuse_pushes(&remote, "frozen");
    const TOKEN: &str = "ghp_UiPullRequestToken000000000000000001";
    let github = nightshift_testkit::FakeGithub::start(TOKEN).await;
    std::fs::write(home.join("nightshift.toml"), format!("{}\n[github]\napi_url = \"{}\"\n", std::fs::read_to_string(home.join("nightshift.toml")).unwrap_or_default(), github.url())).unwrap();
    let command = "printf 'three\\\\n' >> notes.txt; echo x > '<img src=x onerror=window.__pwned=5>.txt'";
    std::fs::write(
        home.join("routines/wt.yaml"),
        format!("name: wt\nschedule: \"0 3 1 1 *\"\nnotify: never\ncwd: {}\nworkspace: worktree\npush: {{remote: origin, pr: draft, base: main, repo: acme/app}}\ncommand: \"{command}\"\n", repo.display()),
    )
    .unwrap();
    let Some((driver, c)) = scene.open(&[("GH_TOKEN", TOKEN)]).await else { return };
    text(&c, "#routines tr[data-routine='wt']").await;
    let id = run_now_from_routines(&c, "wt").await;
    wait_status(&c, "completed", 20).await;
    let branch = format!("nightshift/wt/{id}");
    let summary = until(&c, "the change summary", "return document.getElementById('changes-summary')?.textContent", 10).await;
    assert_eq!(summary, json!(format!("2 files changed, +2 \u{2212}0 on {branch}")));
    assert_eq!(js(&c, "return document.getElementById('changes-branch').textContent").await, json!(branch));
    let files = js(&c, "return [...document.querySelectorAll('#changes-files tr')].map(r => r.textContent)").await;
    assert_eq!(files, json!(["+1 \u{2212}0<img src=x onerror=window.__pwned=5>.txt", "+1 \u{2212}0notes.txt"]));
    assert_eq!(js(&c, "return document.querySelectorAll('#run-changes img').length + (window.__pwned ?? 0)").await, json!(0));
    assert_eq!(js(&c, "return [...document.querySelectorAll('#changes-commits li')].map(l => l.dataset.by)").await, json!(["nightshift"]));
    // The app tried the push and the remote refused; once it takes pushes, Push again pushes.
    let refused = until(&c, "a refused push", "const p = document.getElementById('changes-push'); return p && p.dataset.state === 'pending' && p.textContent.includes('try 1 failed') && p.textContent", 30).await;
    assert!(refused.as_str().unwrap().contains("frozen"), "{refused}");
    screenshot(&c, "ui-changes.png").await;
    accept_pushes(&remote);
    click(&c, "#push-again").await;
    until(&c, "the push", "return document.getElementById('changes-push')?.dataset.state === 'pushed'", 20).await;
    assert_eq!(git(&remote, &["rev-parse", &branch]), git(&repo, &["rev-parse", &branch]));
    // The pull request follows the push, and its line links to it.
    let pr = until(&c, "the pull request", "const p = document.getElementById('changes-pr'); return p && p.dataset.state === 'opened' && p.textContent", 20).await;
    assert!(pr.as_str().unwrap().starts_with("Opened pull request #1"), "{pr}");
    assert_eq!(js(&c, "return document.getElementById('pull-request-link').getAttribute('href')").await, json!("https://github.com/acme/app/pull/1"));
    assert_eq!(github.pulls("acme/app")[0]["head"]["ref"], json!(branch));
    close(c).await;
    drop(driver);
}

/// Tokens and model in the run detail, as the agent's final event gave them ("–" where it gave
/// none), whether it was sandboxed, and the tool calls it was refused — an input that looks like
/// HTML shown as text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_detail_shows_tokens_model_and_refused_calls() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let home = &scene.home;
    // A stand-in Claude Code on the app's PATH that ends with the result event the real CLI writes.
    let bin = scene.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","total_cost_usd":0.01,"usage":{"input_tokens":1234,"output_tokens":56,"cache_read_input_tokens":7},"modelUsage":{"claude-sonnet-5-5":{"outputTokens":56}},"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"git push <img src=x onerror=alert(1)>"}}]}"#;
    std::fs::write(bin.join("claude"), format!("#!/bin/sh\necho '{result}'\n")).unwrap();
    std::fs::set_permissions(bin.join("claude"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(home.join("routines/ask.yaml"), "name: ask\nschedule: \"0 3 1 1 *\"\nnotify: never\nagent: claude\nprompt: hi\n").unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let Some((driver, c)) = scene.open(&[("PATH", &path)]).await else { return };
    text(&c, "#routines tr[data-routine='ask']").await;
    run_now_from_routines(&c, "ask").await;
    wait_status(&c, "completed", 20).await;
    let facts = js(&c, "return Object.fromEntries([...document.querySelectorAll('#run-facts dt')].map(dt => [dt.textContent, dt.nextElementSibling.textContent]))").await;
    assert_eq!(facts["Tokens"], json!("in 1,234 · out 56 · cache read 7 · cache write \u{2013}"), "{facts}");
    assert_eq!(facts["Model"], json!("claude-sonnet-5-5"), "{facts}");
    // An agent run in the app goes in the machine's sandbox where it can be built, and says so.
    assert_eq!(facts["Sandbox"], json!("on"), "{facts}");
    let refused = js(&c, "return [...document.querySelectorAll('#run-denials li')].map(li => li.textContent)").await;
    assert_eq!(refused, json!(["Bash(git push <img src=x onerror=alert(1)>)"]), "inert text, not markup");
    assert_eq!(js(&c, "return document.querySelectorAll('#run-refusals img').length").await, json!(0));
    close(c).await;
    drop(driver);
}

/// A run whose files retention removed: the detail still shows the record, and says where the
/// report and the log went.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pruned_run_keeps_its_record_in_the_window() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let home = &scene.home;
    std::fs::write(home.join("nightshift.toml"), "keep_runs_days = 30\n").unwrap();
    std::fs::write(home.join("routines/old.yaml"), "name: old\nschedule: \"0 3 1 1 *\"\nnotify: never\ncommand: echo from long ago\n").unwrap();
    let id = {
        let engine = nightshift_core::Engine::open(nightshift_core::EngineOptions::new(nightshift_core::Home::at(home))).unwrap();
        let first = engine.run_now("old", nightshift_core::run::Trigger::Manual).await.unwrap().wait().await.unwrap().id;
        engine.run_now("old", nightshift_core::run::Trigger::Manual).await.unwrap().wait().await.unwrap();
        // Forty days back (a fake clock cannot reach the app), then pruned as the app would.
        let db = rusqlite::Connection::open(home.join("nightshift.db")).unwrap();
        let old = chrono::Utc::now() - chrono::Duration::days(40);
        db.execute("UPDATE runs SET sort_ms = sort_ms - ?1, finished_at = ?2", rusqlite::params![chrono::Duration::days(40).num_milliseconds(), nightshift_core::words::fmt_time(&old)]).unwrap();
        assert_eq!(engine.prune_runs(false).await.len(), 1);
        first
    };
    let Some((driver, c)) = scene.open(&[]).await else { return };
    text(&c, "#routines tr[data-routine='old']").await;
    go(&c, &format!("#/run/{id}")).await;
    let said = until(&c, "the pruned run's detail", "return document.getElementById('run-pruned')?.textContent", 15).await;
    assert!(said.as_str().unwrap().starts_with("Its report and log were removed ") && said.as_str().unwrap().ends_with("this record stays."), "{said}");
    assert_eq!(js(&c, "return document.querySelector('#run-title .badge')?.textContent").await, json!("completed"));
    let log = until(&c, "the log's status", "return document.getElementById('log-status')?.textContent", 10).await;
    assert!(log.as_str().unwrap().contains("by retention"), "{log}");
    close(c).await;
    drop(driver);
}

/// History keeps its place while the engine is busy: a person paged down to the fifth page and
/// is reading part way down when runs start and finish, a routine file appears, and an event
/// storm (an agent printing 50,000 retry lines at once) overflows the window's events, so the
/// page is told to `resync`. The rows loaded, the row at the top of the list and the footer stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_keeps_its_place_while_events_arrive() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let home = &scene.home;
    seed_history(&home.join("nightshift.db"));
    // A stand-in Claude Code that says "API retry" 50,000 times in one burst, then completes.
    let bin = scene.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let retry = r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":500,"error_status":529,"error":"overloaded"}"#;
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"weathered it","session_id":"s","total_cost_usd":0.01}"#;
    std::fs::write(bin.join("claude"), format!("#!/bin/sh\nyes '{retry}' | head -n 50000\nsleep 1\necho '{result}'\n")).unwrap();
    std::fs::set_permissions(bin.join("claude"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(home.join("routines/storm.yaml"), "name: storm\nschedule: \"0 3 1 1 *\"\nnotify: never\nagent: claude\nprompt: hi\n").unwrap();
    std::fs::write(home.join("routines/tick.yaml"), "name: tick\nschedule: \"0 3 1 1 *\"\nnotify: never\ncommand: echo tick\n").unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let Some((driver, c)) = scene.open(&[("PATH", &path)]).await else { return };
    text(&c, "#routines tr[data-routine='storm']").await;

    go(&c, "#/history").await;
    until(&c, "the first page", "return document.querySelectorAll('#history-rows tr').length >= 50", 15).await;
    for target in [100, 150, 200, 250] {
        js(&c, "const b = document.getElementById('history-box'); b.scrollTop = b.scrollHeight; return 1").await;
        until(&c, &format!("{target} rows"), &format!("return document.querySelectorAll('#history-rows tr').length >= {target}"), 15).await;
    }
    // Reading part way down: the 150th row at the top of the list.
    let place = "const b = document.getElementById('history-box'); const r = document.querySelector(`#history-rows tr[data-id='${arguments[0]}']`); return r ? r.getBoundingClientRect().top - b.getBoundingClientRect().top : null";
    let anchor = js(&c, "return document.querySelectorAll('#history-rows tr')[150].dataset.id").await;
    bounded("scrolling to the anchor", c.execute("const b = document.getElementById('history-box'); const r = document.querySelector(`#history-rows tr[data-id='${arguments[0]}']`); b.scrollTop += r.getBoundingClientRect().top - b.getBoundingClientRect().top - 40; return 1", vec![anchor.clone()])).await.unwrap();
    let at_rest = "const b = document.getElementById('load-more'); return b && !b.disabled && document.querySelectorAll('#history-rows tr').length";
    let loaded = until(&c, "the footer at rest", at_rest, 15).await.as_u64().unwrap();
    let offset = bounded("the anchor's place", c.execute(place, vec![anchor.clone()])).await.unwrap().as_f64().unwrap();

    // Count the resyncs the page is told; then start the storm and a quick run, and add a routine.
    let counting = "const done = arguments[arguments.length - 1]; import('./lib/api.js').then((m) => { window.__resyncs = 0; m.onEngine((ev) => { if (ev.type === 'resync') window.__resyncs += 1; }); done(1); })";
    bounded("counting resyncs", c.execute_async(counting, vec![])).await.unwrap();
    let start = "const done = arguments[arguments.length - 1]; import('./lib/api.js').then((m) => Promise.all([m.call('run_now', { name: 'storm' }), m.call('run_now', { name: 'tick' })])).then(done, (e) => done(String(e?.message ?? e)))";
    let ids = bounded("run now of storm and tick", c.execute_async(start, vec![])).await.unwrap();
    let (storm, tick) = (ids[0].as_str().unwrap_or_else(|| panic!("run now: {ids}")).to_string(), ids[1].as_str().unwrap().to_string());
    std::fs::write(home.join("routines/later.yaml"), "name: later\nschedule: \"0 4 1 1 *\"\ncommand: echo later\nnotify: never\n").unwrap();

    until(&c, "the page to be told to resync (the storm overflowed its events)", "return window.__resyncs > 0", 60).await;
    // The storm's 50,000 lines take the debug-build engine a while on a loaded 2-core machine
    // (a CI run saw it still going at 60 s); what is tested is the list, not the speed.
    for id in [&storm, &tick] {
        until(&c, &format!("run {id} completed in the list"), &format!("return document.querySelector(\"#history-rows tr[data-id='{id}']\")?.dataset.status === 'completed'"), 150).await;
    }
    let now = until(&c, "the footer at rest after the storm", at_rest, 15).await.as_u64().unwrap();

    assert!(js(&c, "return location.hash").await.as_str().unwrap().starts_with("#/history"), "still on History");
    assert!(now >= loaded, "the rows loaded stay: {now} shown, {loaded} before");
    let kept = bounded("the anchor's place after the storm", c.execute(place, vec![anchor.clone()])).await.unwrap();
    let Some(kept) = kept.as_f64() else { panic!("row {anchor} is gone from the list; the window shows {}", what_it_shows(&c).await) };
    assert!((kept - offset).abs() < 2.0, "the row read at {offset:.0} px below the list's top moved to {kept:.0} px");
    let footer = text(&c, "#history-footer").await;
    assert!(footer.contains(&format!("{now} runs shown")), "{footer}");
    screenshot(&c, "ui-history-kept-place.png").await;
    close(c).await;
    drop(driver);
}

/// A run that waits for its retry is a row of its own: its detail says when it starts and why,
/// lists the try it made with when the next is due, History shows it waiting, and Cancel drops
/// it — its try kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_for_its_retry_shows_its_tries_and_is_cancelled_from_the_window() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let home = &scene.home;
    // A command that fails; `retries: 1` asks for a second try an hour (±20 %) later. Its daily
    // slot is twelve hours from now whenever the test runs: a retry past the next slot is not made
    // (that slot does the work), so a fixed slot would fail the test in the hours before it.
    let hour = { use chrono::Timelike; (chrono::Local::now() + chrono::Duration::hours(12)).hour() };
    std::fs::write(home.join("routines/flaky.yaml"), format!("name: flaky\nschedule: \"0 {hour} * * *\"\ncommand: \"exit 3\"\nretries: 1\nretry_backoff: 1h\nnotify: never\n")).unwrap();
    let Some((driver, c)) = scene.open(&[]).await else { return };
    text(&c, "#routines tr[data-routine='flaky']").await;
    let id = run_now_from_routines(&c, "flaky").await;
    let starts = until(&c, "the run to wait for its retry", "const d = [...document.querySelectorAll('#run-facts dt')].find(dt => dt.textContent === 'Starts at'); return d ? d.nextElementSibling.textContent : null", 20).await;
    let starts = starts.as_str().unwrap();
    assert!(starts.contains("(waiting: exit nonzero on try 1; try 2 of 2 at "), "{starts}");
    let tries = js(&c, "return [...document.querySelectorAll('#run-attempts ol.attempts li')].map(li => li.textContent)").await;
    let tries = tries.as_array().unwrap();
    assert_eq!(tries.len(), 1, "{tries:?}");
    assert!(tries[0].as_str().unwrap().contains("exit nonzero") && tries[0].as_str().unwrap().contains("next try at "), "{tries:?}");
    screenshot(&c, "ui-run-waiting-for-retry.png").await;
    // History: the row waits, saying until when (and why, on hover).
    go(&c, "#/history").await;
    let row = until(&c, "the waiting row in History", &format!("const s = document.querySelector(\"#history-rows tr[data-id='{id}'] .waiting\"); return s ? [s.textContent, s.title] : null"), 15).await;
    assert!(row[0].as_str().unwrap().starts_with("waiting until "), "{row}");
    assert!(row[1].as_str().unwrap().starts_with("exit nonzero on try 1; try 2 of 2 at "), "{row}");
    // Cancelled from its detail: final, the try it made kept.
    go(&c, &format!("#/run/{id}")).await;
    click(&c, "#cancel-run").await;
    wait_status(&c, "cancelled", 20).await;
    let kept = until(&c, "the kept try", "return document.querySelectorAll('#run-attempts ol.attempts li').length", 10).await;
    assert_eq!(kept, json!(1));
    let record = nightshift_core::store::Store::open(&home.join("nightshift.db")).unwrap().get_run(&id).unwrap();
    assert_eq!((record.status, record.attempts.len()), (nightshift_core::run::RunStatus::Cancelled, 1), "{record:?}");
    close(c).await;
    drop(driver);
}


/// A run another process of this home starts and settles — the CLI's `run --wait` beside the
/// running app — reaches the window live: the app hears the home's wake file, as its tray does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_the_cli_settles_beside_the_app_shows_in_history_live() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let home = &scene.home;
    std::fs::write(home.join("routines/beside.yaml"), "schedule: \"0 3 * * *\"\nnotify: never\ncommand: echo from the cli\n").unwrap();
    let Some((driver, c)) = scene.open(&[]).await else { return };
    text(&c, "#routines tr[data-routine='beside']").await;
    go(&c, "#/history").await;
    until(&c, "History", "return !!document.getElementById('history-rows')", 10).await;
    let ctl = Path::new(env!("CARGO_BIN_EXE_nightshift")).with_file_name("nightshiftctl");
    let ran = std::process::Command::new(&ctl).env("NIGHTSHIFT_HOME", home).args(["run", "beside", "--wait", "--json"]).output().unwrap();
    let run: Value = serde_json::from_slice(&ran.stdout).unwrap_or_default();
    assert_eq!(run["status"], "completed", "{}", String::from_utf8_lossy(&ran.stderr));
    let row = format!("#history-rows tr[data-id='{}']", run["id"].as_str().unwrap());
    let shown = until(&c, "the CLI's run in History, without a reload", &format!("const r = document.querySelector(\"{row}\"); return !!r && r.textContent.includes('completed')"), 15).await;
    assert_eq!(shown, json!(true));
    close(c).await;
    drop(driver);
}

/// `on_denial: ask` in the window: a run that holds a call shows it under "Waiting for your
/// approval" (inert text) with Approve, Allow for this run and Deny; Approve answers it (the
/// stand-in Claude Code below asks through the run's real approvals socket, as the real CLI's
/// `--permission-prompt-tool` does, and ends with what it was told), and the detail then says how.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_for_approval_is_approved_from_the_run_detail() {
    let Some((_one, scene)) = Scene::bootstrapped().await else { return };
    let home = &scene.home;
    let bin = scene.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // Claude Code's side of the permission prompt: the MCP server its --mcp-config names, the
    // tool --permission-prompt-tool names, called with the call it wants; its answer printed as
    // the result event.
    let stand_in = r#"#!/usr/bin/python3
import json, subprocess, sys
args = sys.argv[1:]
config = json.loads(args[args.index("--mcp-config") + 1])
tool = args[args.index("--permission-prompt-tool") + 1]
server = list(config["mcpServers"].values())[0]
p = subprocess.Popen([server["command"]] + server["args"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def send(m):
    p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "stand-in", "version": "1"}}})
p.stdout.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool.split("__")[-1], "arguments": {"tool_name": "Bash", "input": {"command": "git push <b>origin</b>"}, "tool_use_id": "toolu_1"}}})
answer = json.loads(json.loads(p.stdout.readline())["result"]["content"][0]["text"])
p.stdin.close()
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "told: " + answer["behavior"], "session_id": "s", "total_cost_usd": 0.0, "usage": {"input_tokens": 1, "output_tokens": 1}}))
"#;
    std::fs::write(bin.join("claude"), stand_in).unwrap();
    std::fs::set_permissions(bin.join("claude"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(home.join("routines/push.yaml"), "name: push\nschedule: \"0 3 1 1 *\"\nnotify: never\nagent: claude\nprompt: push\non_denial: ask\nsandbox: off\n").unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let Some((driver, c)) = scene.open(&[("PATH", &path)]).await else { return };
    text(&c, "#routines tr[data-routine='push']").await;
    run_now_from_routines(&c, "push").await;
    until(&c, "the ask in the run detail", "return !!document.getElementById('ask-approve')", 30).await;
    let asked = js(&c, "return [document.querySelector('#run-refusals h3').textContent, [...document.querySelectorAll('#run-asks li')].map(li => li.textContent), document.querySelectorAll('#run-asks b').length]").await;
    assert_eq!(asked[0], json!("Waiting for your approval"), "{asked}");
    assert!(asked[1][0].as_str().unwrap().starts_with("Bash(git push <b>origin</b>) — waiting for approval until "), "inert text: {asked}");
    assert_eq!(asked[2], json!(0), "no markup from the agent's words");
    // History marks it as waiting (read on arrival; events keep it).
    let run_id = js(&c, "return location.hash.slice('#/run/'.length)").await;
    let run_id = run_id.as_str().unwrap().to_string();
    js(&c, "location.hash = '#/history'; return true").await;
    let mark = until(&c, "the waiting mark in History", &format!("const r = document.querySelector(\"#history tr[data-id='{run_id}'] [data-asks]\"); return r && r.textContent"), 10).await;
    assert_eq!(mark, json!("waiting for approval"));
    js(&c, &format!("location.hash = '#/run/{run_id}'; return true")).await;
    until(&c, "the ask in the run detail again", "return !!document.getElementById('ask-approve')", 10).await;
    click(&c, "#ask-approve").await;
    wait_status(&c, "completed", 30).await;
    let said = js(&c, "return [[...document.querySelectorAll('#run-asks li')].map(li => li.textContent), document.getElementById('ask-approve') === null]").await;
    assert!(said[0][0].as_str().unwrap().starts_with("Bash(git push <b>origin</b>) — approved (window, "), "{said}");
    assert_eq!(said[1], json!(true), "nothing left to answer");
    let store = nightshift_core::store::Store::open(&home.join("nightshift.db")).unwrap();
    let run = store.list_runs(&nightshift_core::store::RunQuery { routine: Some("push".into()), status: None, cursor: None, limit: 1 }).unwrap().runs.remove(0);
    assert_eq!(std::fs::read_to_string(run.report_path.unwrap()).unwrap(), "told: allow", "the agent was told yes");
    close(c).await;
    drop(driver);
}
