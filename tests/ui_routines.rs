//! Routines from the window, in the real app (WebKitGTK through tauri-driver, under Xvfb): a
//! command routine made with a preset schedule, its next fires shown as it is typed, problems on
//! their fields in the validator's words, saved and run; an agent routine with an account; one
//! placed on another machine (its folder one there); a file with comments edited in place (comments kept), a problem shown at its line, a save racing a
//! change on disk refused with a choice; duplicate, rename (history follows), remove and restore —
//! and the tray's Run now menu (read over D-Bus as a desktop panel reads it) follows each change.
//! Screenshots of the form (light and dark) and the editor go to tests/artifacts.

mod common;

use common::*;
use fantoccini::{Client, Locator};
use nightshift_testkit::dbus::{MenuEntry, TrayHost};
use std::time::Duration;
use serde_json::json;
use std::path::Path;


const COMMENTED: &str = "# Tidy the downloads folder — written by hand, keep this note\nname: tidy\nschedule: \"0 3 * * *\" # at three\ncommand: echo one # the first step\nnotify: never\n";

fn write_home(home: &Path) {
    nightshift_core::Home::at(home).bootstrap().unwrap();
    std::fs::write(home.join("routines/tidy.yaml"), COMMENTED).unwrap();
    std::fs::write(home.join("nightshift.toml"), "[[accounts]]\nemail = \"work@acme.dev\"\n\n[hosts.buildbox]\nagent_path = \"/opt/bin/claude\"\n").unwrap();
}

async fn type_into(c: &Client, css: &str, text: &str) {
    bounded(&format!("typing into {css}"), async { c.find(Locator::Css(css)).await?.send_keys(text).await }).await.unwrap_or_else(|e| panic!("{css}: {e}"));
}

/// On the New routine form: a shell command routine named `name`.
async fn command_routine(c: &Client, name: &str, command: &str) {
    click(c, "#kind-command").await;
    type_into(c, "#f-name", name).await;
    type_into(c, "#f-command", command).await;
}

/// Set a field the way a user's change would (selects, time inputs), firing its events.
async fn set(c: &Client, css: &str, value: &str) {
    let script = "const e = document.querySelector(arguments[0]); e.value = arguments[1]; e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); return 1";
    bounded(&format!("setting {css}"), c.execute(script, vec![json!(css), json!(value)])).await.unwrap_or_else(|e| panic!("{css}: {e}"));
}

async fn problem(c: &Client, field: &str, contains: &str) {
    let script = format!("return document.getElementById('problem-{field}').textContent.includes({})", json!(contains));
    until(c, &format!("the problem on {field}: {contains}"), &script, 10).await;
}

/// The form checked what is in it now (no edit waiting: `aria-busy` gone) and shows no problem.
async fn no_problems(c: &Client) {
    until(c, "a form checked and without problems", "return !document.getElementById('routine-form').hasAttribute('aria-busy') && [...document.querySelectorAll('.field-problem')].every(p => !p.textContent) && !document.getElementById('save-routine').disabled", 10).await;
}

/// Open a routine's ⋯ menu and choose `action` with real clicks; again if the list re-rendered
/// in between (an engine event reloads it) and closed the menu.
async fn menu_action(c: &Client, routine: &str, action: &str) {
    let row = format!("#routines tr[data-routine='{routine}']");
    let start = std::time::Instant::now();
    loop {
        let open = js(c, &format!("return !!document.querySelector(\"{row} details.more[open]\")")).await == json!(true);
        if !open {
            if let Ok(summary) = bounded("finding the menu", c.find(Locator::Css(&format!("{row} details.more summary")))).await {
                let _ = bounded("opening the menu", summary.click()).await;
            }
        } else if let Ok(item) = bounded("finding the menu item", c.find(Locator::Css(&format!("{row} details.more[open] button[data-action='{action}']")))).await {
            if bounded("clicking the menu item", item.click()).await.is_ok() && js(c, "return !!document.querySelector('#routines tr.inline-form')").await == json!(true) {
                return;
            }
        }
        assert!(start.elapsed() < Duration::from_secs(15), "{action} from the menu of {routine}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The routine names under the tray's "Run now" (a label may lead with its last run's mark).
fn run_now_menu(menu: &[MenuEntry]) -> Vec<String> {
    run_now_labels(menu).iter().map(|l| l.rsplit(' ').next().unwrap_or_default().to_string()).collect()
}

fn run_now_labels(menu: &[MenuEntry]) -> Vec<String> {
    menu.iter().find(|e| e.label == "Run now").map(|e| e.children.iter().map(|c| c.label.clone()).collect()).unwrap_or_default()
}

fn file(home: &Path, name: &str) -> String {
    std::fs::read_to_string(home.join("routines").join(name)).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routines_are_made_edited_and_removed_from_the_window() {
    if !gui_available() {
        return;
    }
    let _one = ONE_APP_AT_A_TIME.lock().await;
    let scene = Scene::new();
    let home = &scene.home;
    write_home(home);
    let tray = TrayHost::start(scene.tmp.path(), &scene.bus.address);
    let Some((driver, c)) = scene.open(&[]).await else { return };
    text(&c, "#routines tr[data-routine='tidy']").await;
    tray.wait_for("the routines under Run now", Duration::from_secs(15), |m| run_now_menu(m).contains(&"tidy".to_string()));

    // --- New: a command routine with a preset schedule; next fires as it is typed.
    click(&c, "#new-routine").await;
    until(&c, "the form", "return location.hash === '#/new' && [...document.querySelectorAll('#f-agent option')].map(o => o.value).join() === 'claude,codex,gemini,opencode,copilot'", 10).await;
    command_routine(&c, "nightly-check", "echo made in the form").await;
    set(&c, "#f-preset", "daily").await;
    set(&c, "#f-time", "07:30").await;
    set(&c, "#f-timezone", "Europe/Berlin").await;
    until(&c, "the schedule in words", "return document.getElementById('schedule-preview').textContent.includes('At 07:30')", 10).await;
    assert_eq!(js(&c, "return document.getElementById('f-schedule').value").await, json!("30 7 * * *"));
    let fires = js(&c, "return [...document.querySelectorAll('#schedule-preview .fires li')].map(li => li.textContent)").await;
    let fires = fires.as_array().unwrap();
    assert_eq!(fires.len(), 5, "{fires:?}");
    assert!(fires.iter().all(|f| f.as_str().unwrap().contains("07:30 CET") || f.as_str().unwrap().contains("07:30 CEST")), "{fires:?}");
    no_problems(&c).await;
    screenshot(&c, "ui-new-routine.png").await;

    // Problems on their fields, in the validator's words; Save is off until they are fixed.
    set(&c, "#f-schedule", "61 7 * * *").await;
    problem(&c, "schedule", "invalid cron expression \"61 7 * * *\"").await;
    set(&c, "#f-timezone", "Mars/Olympus").await;
    problem(&c, "timezone", "unknown time zone \"Mars/Olympus\"").await;
    assert_eq!(js(&c, "return document.getElementById('save-routine').disabled").await, json!(true));
    assert_eq!(js(&c, "return document.getElementById('f-schedule').getAttribute('aria-invalid')").await, json!("true"));
    screenshot(&c, "ui-new-routine-problems.png").await;
    set(&c, "#f-schedule", "30 7 * * *").await;
    set(&c, "#f-timezone", "Europe/Berlin").await;
    no_problems(&c).await;

    // Save: the file is written, the list shows it at once, it runs.
    click(&c, "#save-routine").await;
    until(&c, "the routines list", "return location.hash.startsWith('#/routines') && !!document.querySelector(\"#routines tr[data-routine='nightly-check']\")", 10).await;
    assert_eq!(file(home, "nightly-check.yaml"), "name: nightly-check\ncommand: echo made in the form\nschedule: 30 7 * * *\ntimezone: Europe/Berlin\n");
    assert!(text(&c, "#routines tr[data-routine='nightly-check']").await.contains("At 07:30, Europe/Berlin"));
    tray.wait_for("nightly-check under Run now", Duration::from_secs(5), |m| run_now_menu(m).contains(&"nightly-check".to_string()));
    click(&c, "#routines tr[data-routine='nightly-check'] button.primary").await;
    until(&c, "the run", "return location.hash.startsWith('#/run/')", 10).await;
    until(&c, "the run completed", "const b = document.querySelector('#run-title .badge'); return b && b.classList.contains('badge-completed')", 20).await;
    until(&c, "its output", "return document.getElementById('run-log')?.textContent.includes('made in the form')", 10).await;

    // --- New: an agent routine with an account, tried out: saved disabled, run now.
    go(&c, "#/new").await;
    until(&c, "the form", "return document.querySelectorAll('#f-account option').length === 2", 10).await;
    // A fresh form is not a page of errors; Save says what is missing. (Clicked once the form's
    // first check has answered: its preview then fills in and moves Save down — a click while
    // that happens lands on whatever moved under it, and nothing is saved or said.)
    no_problems(&c).await;
    click(&c, "#save-routine").await;
    problem(&c, "name", "give the routine a name").await;
    problem(&c, "prompt", "an agent routine needs a `prompt`").await;
    assert_eq!(js(&c, "return location.hash").await, json!("#/new"), "nothing saved");
    type_into(&c, "#f-name", "pr-notes").await;
    set(&c, "#f-agent", "claude").await;
    set(&c, "#f-account", "work@acme.dev").await;
    type_into(&c, "#f-prompt", "Summarise the open pull requests.").await;
    set(&c, "#f-mode", "plan").await;
    set(&c, "#f-preset", "weekdays").await;
    no_problems(&c).await;
    click(&c, "#save-routine").await;
    until(&c, "the agent routine listed", "return !!document.querySelector(\"#routines tr[data-routine='pr-notes']\")", 10).await;
    let written = file(home, "pr-notes.yaml");
    for line in ["agent: claude\n", "account: work@acme.dev\n", "prompt: Summarise the open pull requests.\n", "mode: plan\n", "schedule: 0 9 * * 1-5\n"] {
        assert!(written.contains(line), "{line} in {written}");
    }
    // Tried before it is scheduled: saved disabled and run now.
    go(&c, "#/new").await;
    until(&c, "the form", "return document.querySelectorAll('#f-agent option').length === 5", 10).await;
    command_routine(&c, "try-me", "echo tried first").await;
    no_problems(&c).await;
    click(&c, "#try-routine").await;
    until(&c, "the tried run completed", "const b = document.querySelector('#run-title .badge'); return location.hash.startsWith('#/run/') && b && b.classList.contains('badge-completed')", 20).await;
    assert!(file(home, "try-me.yaml").contains("enabled: false\n"), "{}", file(home, "try-me.yaml"));

    // A taken name is refused on its field.
    go(&c, "#/new").await;
    until(&c, "the form", "return document.querySelectorAll('#f-agent option').length === 5", 10).await;
    type_into(&c, "#f-name", "tidy").await;
    problem(&c, "name", "a routine named \"tidy\" already exists (routines/tidy.yaml)").await;

    // --- New: on another machine. The machines nightshift.toml names are suggested; the folder is
    // then one on that machine (the local one and its picker give way).
    go(&c, "#/new").await;
    until(&c, "the form", "return document.querySelectorAll('#f-agent option').length === 5 && [...document.querySelectorAll('#known-hosts option')].map(o => o.value).join() === 'buildbox'", 10).await;
    command_routine(&c, "remote-uptime", "uptime").await;
    type_into(&c, "#f-host", "buildbox").await;
    until(&c, "the folder there", "return document.querySelector(\"[data-field='cwd']\").hidden && !document.querySelector(\"[data-field='remote_cwd']\").hidden", 10).await;
    type_into(&c, "#f-remote_cwd", "/srv/app").await;
    no_problems(&c).await;
    until(&c, "the file it writes", "return document.getElementById('yaml-preview').textContent.includes('host: buildbox\\nremote_cwd: /srv/app\\n')", 10).await;
    screenshot(&c, "ui-new-routine-on-a-host.png").await;
    click(&c, "#save-routine").await;
    until(&c, "the remote routine listed", "return !!document.querySelector(\"#routines tr[data-routine='remote-uptime']\")", 10).await;
    assert!(file(home, "remote-uptime.yaml").contains("command: uptime\nhost: buildbox\nremote_cwd: /srv/app\n"), "{}", file(home, "remote-uptime.yaml"));

    // --- Edit the file itself: comments survive, a problem is shown at its line.
    go(&c, "#/edit/tidy").await;
    until(&c, "the file in the editor", &format!("return document.getElementById('routine-text').value === {}", json!(COMMENTED)), 10).await;
    set(&c, "#routine-text", &COMMENTED.replace("0 3 * * *", "0 3 * *")).await;
    until(&c, "the problem at line 3", "const li = document.querySelector('#edit-problems li'); return li && li.dataset.line === '3' && li.dataset.col === '11' && li.textContent.includes('expected 5 fields')", 10).await;
    assert!(js(&c, "return document.querySelectorAll('#gutter .bad').length").await == json!(1));
    assert_eq!(js(&c, "return document.getElementById('edit-save').disabled").await, json!(true));
    screenshot(&c, "ui-edit-routine.png").await;
    // A warning (a key agents-cli writes) is shown at its line and does not block saving.
    let edited = format!("{}sandbox: false\n", COMMENTED.replace("echo one", "echo two"));
    set(&c, "#routine-text", &edited).await;
    let warned = until(&c, "the warning", "const li = document.querySelector('#edit-problems li[data-severity=warning]'); return li && !document.getElementById('edit-save').disabled && [li.dataset.line, li.textContent]", 10).await;
    assert_eq!(warned[0], json!(edited.lines().count().to_string()), "{warned}");
    assert!(warned[1].as_str().unwrap().contains("warning: agents-cli's `sandbox: false` is not taken as `sandbox: off`"), "{warned}");
    assert_eq!(js(&c, "return [document.querySelectorAll('#gutter .warn').length, document.querySelectorAll('#gutter .bad').length]").await, json!([1, 0]));
    click(&c, "#edit-save").await;
    until(&c, "saved", "return document.getElementById('edit-status').textContent.startsWith('Saved')", 10).await;
    assert_eq!(file(home, "tidy.yaml"), edited, "the comments are still there");
    // The Routines view lists the warning under the routine.
    go(&c, "#/routines").await;
    let listed = until(&c, "the warning in the list", "const w = document.querySelector(\"#routines tr[data-routine='tidy'] ul.warnings li\"); return w && w.textContent", 10).await;
    assert!(listed.as_str().unwrap().contains("warning: agents-cli's `sandbox: false` is not taken as `sandbox: off`"), "{listed}");
    go(&c, "#/edit/tidy").await;
    until(&c, "the file in the editor again", &format!("return document.getElementById('routine-text').value === {}", json!(edited)), 10).await;

    // A change on disk meanwhile (a sync): the save is refused with a clear choice.
    let theirs = edited.replace("at three", "three o'clock");
    std::fs::write(home.join("routines/tidy.yaml"), &theirs).unwrap();
    let mine = edited.replace("echo two", "echo mine");
    set(&c, "#routine-text", &mine).await;
    until(&c, "Save enabled", "return !document.getElementById('edit-save').disabled", 10).await;
    click(&c, "#edit-save").await;
    let said = until(&c, "the conflict", "const b = document.getElementById('edit-conflict'); return !b.hidden && b.textContent", 10).await;
    assert!(said.as_str().unwrap().contains("routines/tidy.yaml changed on disk since you opened it"), "{said}");
    assert_eq!(file(home, "tidy.yaml"), theirs, "nothing was overwritten");
    click(&c, "#conflict-reload").await;
    until(&c, "their text loaded", &format!("return document.getElementById('routine-text').value === {}", json!(theirs)), 10).await;
    std::fs::write(home.join("routines/tidy.yaml"), &edited).unwrap();
    set(&c, "#routine-text", &mine).await;
    until(&c, "Save enabled", "return !document.getElementById('edit-save').disabled", 10).await;
    click(&c, "#edit-save").await;
    until(&c, "the conflict", "return !document.getElementById('edit-conflict').hidden", 10).await;
    click(&c, "#conflict-overwrite").await;
    until(&c, "saved", "return document.getElementById('edit-status').textContent.startsWith('Saved')", 10).await;
    assert_eq!(file(home, "tidy.yaml"), mine);

    // --- Duplicate, rename (the history follows), remove and restore.
    go(&c, "#/routines").await;
    menu_action(&c, "nightly-check", "duplicate").await;
    click(&c, "#inline-confirm").await;
    until(&c, "the copy", "return !!document.querySelector(\"#routines tr[data-routine='nightly-check-copy']\")", 10).await;
    assert!(file(home, "nightly-check-copy.yaml").starts_with("name: nightly-check-copy\n"));

    menu_action(&c, "nightly-check", "rename").await;
    set(&c, "#new-name", "morning-check").await;
    click(&c, "#inline-confirm").await;
    let renamed = until(&c, "the renamed routine", "const r = document.querySelector(\"#routines tr[data-routine='morning-check']\"); return r && r.textContent", 10).await;
    assert!(renamed.as_str().unwrap().contains("completed"), "its last run followed it: {renamed}");
    assert!(!home.join("routines/nightly-check.yaml").exists());
    tray.wait_for("the new name under Run now", Duration::from_secs(5), |m| {
        let names = run_now_menu(m);
        names.contains(&"morning-check".to_string()) && !names.contains(&"nightly-check".to_string())
    });
    assert!(run_now_labels(&tray.menu().unwrap()).contains(&"✓ morning-check".to_string()), "its last run's mark followed it too");

    menu_action(&c, "morning-check", "remove").await;
    click(&c, "#inline-confirm").await;
    until(&c, "the routine gone and in the trash", "return !document.querySelector(\"#routines tr[data-routine='morning-check']\") && document.getElementById('removed-routines').textContent.includes('morning-check')", 10).await;
    tray.wait_for("morning-check gone from Run now", Duration::from_secs(5), |m| !run_now_menu(m).contains(&"morning-check".to_string()));
    // The list is drawn again when the removal is announced (by the window's write, and once more
    // when the scheduler's watch sees the file go): a click that lands on a list being replaced
    // does nothing, so it is made again until the routine is back.
    click_until(&c, "#removed-routines button", "restored", "return !!document.querySelector(\"#routines tr[data-routine='morning-check']\") && document.getElementById('removed-routines').hidden", 20).await;
    assert!(home.join("routines/morning-check.yaml").is_file());

    close(c).await;
    drop(driver);
}

/// "On a GitHub or Linear event": the trigger's fields follow its type, a bad value shows on the
/// trigger field in the validator's words, and the file gets the `trigger:` block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routine_on_an_event_from_the_form() {
    if !gui_available() {
        return;
    }
    let _one = ONE_APP_AT_A_TIME.lock().await;
    let scene = Scene::new();
    write_home(&scene.home);
    let Some((driver, c)) = scene.open(&[]).await else { return };
    text(&c, "#routines tr[data-routine='tidy']").await;
    go(&c, "#/new").await;
    until(&c, "the form", "return document.querySelectorAll('#f-agent option').length === 5", 10).await;
    command_routine(&c, "pr-gate", "./scripts/gate.sh").await;
    set(&c, "#f-preset", "event").await;
    let shown = js(&c, "return [document.getElementById('f-trigger').closest('.field').hidden, document.querySelector(\"[data-field='schedule']\").hidden, [...document.querySelectorAll('#f-trigger-event option')].map(o => o.value).join()]").await;
    assert_eq!(shown, json!([false, true, "pull_request,push,issue_comment,workflow_run"]));
    set(&c, "#f-trigger-repo", "acme").await;
    problem(&c, "trigger", "`trigger.repo` is owner/name, such as acme/app (found \"acme\")").await;
    set(&c, "#f-trigger-repo", "acme/app").await;
    set(&c, "#f-trigger-action", "opened").await;
    no_problems(&c).await;
    until(&c, "the preview", "return document.getElementById('schedule-preview').textContent.includes('On github:pull_request (acme/app, action=opened)')", 10).await;
    // Linear's fields are its own.
    set(&c, "#f-trigger-type", "linear_event").await;
    let linear = js(&c, "return [document.getElementById('f-trigger-repo').hidden, document.getElementById('f-trigger-team').hidden, document.getElementById('f-trigger-event').value]").await;
    assert_eq!(linear, json!([true, false, "Issue"]));
    set(&c, "#f-trigger-team", "ENG").await;
    set(&c, "#f-trigger-state-to", "Todo").await;
    set(&c, "#f-trigger-action", "").await;
    no_problems(&c).await;
    click(&c, "#save-routine").await;
    until(&c, "the routines list", "return location.hash.startsWith('#/routines') && !!document.querySelector(\"#routines tr[data-routine='pr-gate']\")", 10).await;
    let written = file(&scene.home, "pr-gate.yaml");
    assert!(written.ends_with("trigger:\n  type: linear_event\n  event: Issue\n  teamKey: ENG\n  stateTo: Todo\n") && !written.contains("schedule:"), "{written}");
    close(c).await;
    drop(driver);
}

/// Run now on a routine whose `devices:` does not list this machine is refused in words, with
/// "Run here anyway" beside them; that runs it here, and the run says so. (And a routine that
/// opted out of the sandbox is shown so in the list, as is one an agent wrote.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_now_elsewhere_is_refused_and_run_here_anyway_runs_it() {
    if !gui_available() {
        return;
    }
    let _one = ONE_APP_AT_A_TIME.lock().await;
    let scene = Scene::new();
    write_home(&scene.home);
    std::fs::write(scene.home.join("routines/studio.yaml"), "name: studio\nschedule: \"0 3 1 1 *\"\ncommand: echo from the studio\ndevices: [studio-mac]\nnotify: never\n").unwrap();
    std::fs::write(scene.home.join("routines/unboxed.yaml"), "schedule: \"0 3 1 1 *\"\nagent: claude\nprompt: Tidy up\nsandbox: off\nnotify: never\n").unwrap();
    std::fs::write(scene.home.join("routines/followup.yaml"), "at: 2030-01-02T09:00:00Z\ncommand: echo later\ncreated_by: mcp\nparent_run: 01jparentrunpruned00000000\nnotify: never\n").unwrap();
    let Some((driver, c)) = scene.open(&[]).await else { return };
    text(&c, "#routines tr[data-routine='studio']").await;
    // An agent routine that opted out of the sandbox says so in the list; a command does not.
    let unboxed = js(&c, "return [!!document.querySelector(\"#routines tr[data-routine='unboxed'] [data-sandbox-off]\"), !!document.querySelector(\"#routines tr[data-routine='studio'] [data-sandbox-off]\"), document.querySelector(\"#routines tr[data-routine='unboxed'] td\").textContent]").await;
    assert_eq!((&unboxed[0], &unboxed[1]), (&json!(true), &json!(false)), "{unboxed}");
    assert!(unboxed[2].as_str().unwrap().contains("claude · sandbox off · routines/unboxed.yaml"), "{unboxed}");
    // A routine an agent wrote through MCP says so, and whose follow-up it is.
    let by_agent = js(&c, "const r = document.querySelector(\"#routines tr[data-routine='followup']\"); return [r.querySelector('[data-created-by]')?.textContent, r.querySelector('[data-scheduled-by]')?.textContent, !!document.querySelector(\"#routines tr[data-routine='studio'] [data-created-by]\")]").await;
    assert_eq!(by_agent, json!([" · by an agent (mcp)", "scheduled by run 01jparentrunpruned00000000 (no longer on record)", false]));
    click(&c, "#routines tr[data-routine='studio'] button.primary").await;
    let said = until(&c, "the refusal", "const s = document.getElementById('routines-status'); return !!document.getElementById('run-here-anyway') && s.textContent", 10).await;
    assert!(said.as_str().unwrap().starts_with("Could not start studio: studio runs on studio-mac (its `devices:`), not on this machine"), "{said}");
    click(&c, "#run-here-anyway").await;
    until(&c, "the run's view", "return location.hash.startsWith('#/run/')", 10).await;
    let id = js(&c, "return location.hash.slice('#/run/'.length)").await;
    let id = id.as_str().unwrap().to_string();
    let store = nightshift_core::store::Store::open(&scene.home.join("nightshift.db")).unwrap();
    nightshift_testkit::wait_until("the run to end", Duration::from_secs(20), || store.get_run(&id).is_ok_and(|r| r.status.is_final()));
    let run = store.get_run(&id).unwrap();
    assert_eq!((run.status.as_str(), run.here), ("completed", true), "recorded as run here by hand: {run:?}");
    close(c).await;
    drop(driver);
}

/// The form in a dark system theme (GTK_THEME=Adwaita:dark → prefers-color-scheme: dark).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_form_in_a_dark_theme() {
    if !gui_available() {
        return;
    }
    let _one = ONE_APP_AT_A_TIME.lock().await;
    let scene = Scene::new();
    write_home(&scene.home);
    let Some((driver, c)) = scene.open(&[("GTK_THEME", "Adwaita:dark")]).await else { return };
    text(&c, "#routines tr[data-routine='tidy']").await;
    go(&c, "#/new").await;
    until(&c, "the form", "return document.querySelectorAll('#f-agent option').length === 5 && document.getElementById('schedule-preview').textContent.includes('weekdays')", 10).await;
    set(&c, "#f-schedule", "0 25 * * *").await;
    problem(&c, "schedule", "invalid cron expression").await;
    let bg = js(&c, "return getComputedStyle(document.querySelector('.routine-form')).backgroundColor").await;
    assert_eq!(bg, json!("rgb(29, 29, 41)"), "the dark card colour");
    screenshot(&c, "ui-new-routine-dark.png").await;
    close(c).await;
    drop(driver);
}

/// What an agent may do, spend and be given, from the window: the New routine form writes
/// `allow`, `deny`, `effort`, `budget` and `secrets` (tools ticked from the common ones plus a
/// rule, secrets chosen from the stored names, a budget that is not an amount shown on its field
/// in the validator's words); the Accounts view lists the secrets by name — where each is kept, or
/// that it is missing and how to set it — never a value; the Usage view shows each budget, spent
/// of how much.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guardrails_budgets_and_secrets_in_the_window() {
    if !gui_available() {
        return;
    }
    let _one = ONE_APP_AT_A_TIME.lock().await;
    let scene = Scene::new();
    let home = &scene.home;
    write_home(home);
    std::fs::write(home.join("routines/spender.yaml"), "schedule: \"0 3 * * *\"\ntimezone: UTC\nagent: claude\nprompt: hi\nbudget: {day: 10}\nsecrets: [GITHUB_TOKEN]\n").unwrap();
    let settings = std::fs::read_to_string(home.join("nightshift.toml")).unwrap();
    std::fs::write(home.join("nightshift.toml"), format!("{settings}\n[budget]\nmonth = 50\n")).unwrap();
    let Some((driver, c)) = scene.open(&[("NIGHTSHIFT_SECRET_DEPLOY_KEY", "s3cr3t-deploy-value")]).await else { return };
    text(&c, "#routines tr[data-routine='spender']").await;

    // Accounts: the secrets by name, never a value.
    go(&c, "#/accounts").await;
    until(&c, "the secrets", "return document.querySelectorAll('#secrets-list tbody tr').length === 2", 15).await;
    let rows = js(&c, "return [...document.querySelectorAll('#secrets-list tbody tr')].map(r => [r.dataset.secret, r.dataset.source, r.textContent])").await;
    let rows = rows.as_array().unwrap();
    assert_eq!((rows[0][0].as_str(), rows[0][1].as_str()), (Some("DEPLOY_KEY"), Some("environment")), "{rows:?}");
    assert_eq!((rows[1][0].as_str(), rows[1][1].as_str()), (Some("GITHUB_TOKEN"), Some("missing")), "{rows:?}");
    assert!(rows[1][2].as_str().unwrap().contains("nightshiftctl secrets set GITHUB_TOKEN") && rows[1][2].as_str().unwrap().ends_with("spender"), "{rows:?}");
    let page = js(&c, "return document.documentElement.outerHTML").await;
    assert!(!page.as_str().unwrap().contains("s3cr3t-deploy-value"), "a secret's value reached the window");

    // Usage: each budget, spent of how much.
    go(&c, "#/usage").await;
    until(&c, "the budgets", "return document.querySelectorAll('#usage-budgets tbody tr').length === 2", 15).await;
    let budgets = js(&c, "return [...document.querySelectorAll('#usage-budgets tbody tr')].map(r => [r.dataset.scope, r.dataset.period, r.children[2].textContent, r.children[3].textContent])").await;
    assert_eq!(budgets, json!([["all runs", "month", "$0", "$50.00"], ["routine spender", "day", "$0", "$10.00"]]));

    // New routine: guardrails, budget and secrets from the form.
    go(&c, "#/new").await;
    until(&c, "the form", "return document.querySelectorAll('#f-agent option').length === 5 && document.querySelectorAll('#f-secrets input').length === 1", 10).await;
    // The tools to tick are the agent's own.
    set(&c, "#f-agent", "gemini").await;
    let tools = js(&c, "return [[...document.querySelectorAll('#tool-checks input')].map(i => i.value).slice(0, 2), document.querySelector('#f-more-tools').placeholder]").await;
    assert_eq!(tools, json!([["read_file", "grep_search"], "run_shell_command(git status)"]));
    set(&c, "#f-agent", "opencode").await;
    let tools = js(&c, "return [[...document.querySelectorAll('#tool-checks input')].map(i => i.value).slice(0, 2), document.querySelector('#f-more-tools').placeholder]").await;
    assert_eq!(tools, json!([["read", "grep"], "bash(git status), bash(npm test)"]));
    set(&c, "#f-agent", "copilot").await;
    let tools = js(&c, "return [[...document.querySelectorAll('#tool-checks input')].map(i => i.value), document.querySelector('#f-more-tools').placeholder]").await;
    assert_eq!(tools, json!([["write", "shell", "url"], "shell(git:*), shell(npm test), url(github.com)"]));
    set(&c, "#f-agent", "claude").await;
    type_into(&c, "#f-name", "guarded").await;
    type_into(&c, "#f-prompt", "Summarise the repository").await;
    click(&c, "#tool-checks input[data-tool='Read']").await;
    click(&c, "#tool-checks input[data-tool='Grep']").await;
    type_into(&c, "#f-more-tools", "Bash(git status)").await;
    set(&c, "#f-deny_tools", "WebFetch").await;
    set(&c, "#f-effort", "high").await;
    set(&c, "#f-budget-day", "lots").await;
    problem(&c, "budget", "`budget.day` must be an amount in US dollars").await;
    set(&c, "#f-budget-day", "5").await;
    set(&c, "#f-budget-run", "0.50").await;
    click(&c, "#f-secrets input[data-secret='DEPLOY_KEY']").await;
    no_problems(&c).await;
    click(&c, "#save-routine").await;
    until(&c, "the routines list", "return location.hash.startsWith('#/routines') && !!document.querySelector(\"#routines tr[data-routine='guarded']\")", 10).await;
    let written = file(home, "guarded.yaml");
    let timezone = nightshift_core::schedule::local_tz().name().to_string();
    assert_eq!(
        written,
        format!(
            "name: guarded\nagent: claude\nprompt: Summarise the repository\nschedule: 0 9 * * 1-5\ntimezone: {timezone}\neffort: high\nallow:\n  tools: [\"Read\", \"Grep\", \"Bash(git status)\"]\ndeny:\n  tools: [\"WebFetch\"]\nbudget:\n  run: 0.50\n  day: 5\nsecrets: [\"DEPLOY_KEY\"]\n"
        )
    );
    close(c).await;
    drop(driver);
}
