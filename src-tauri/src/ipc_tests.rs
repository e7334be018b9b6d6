//! The command layer through Tauri's real IPC path (mock runtime, no display): the app's own
//! capabilities decide what the window may call, each call reaches the app's command handler and
//! the engine in this process as in the app, payloads are what the UI receives, errors are
//! `{code, message}`, and no token ever appears in a payload.

use crate::shell::tests::Recorder;
use crate::shell::Shell;
use nightshift_core::{Engine, EngineOptions, Home};
use serde_json::{json, Value};
use std::sync::Arc;

use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{Manager, WebviewWindow, WebviewWindowBuilder};

const TOKEN: &str = "sk-ant-oat01-ipc-test-secret-0042-XYZ";

struct Fixture {
    _dir: tempfile::TempDir,
    engine: Engine,
    _app: tauri::App<MockRuntime>,
    main: WebviewWindow<MockRuntime>,
    other: WebviewWindow<MockRuntime>,
}

fn fixture() -> Fixture {
    fixture_with(|_| String::new())
}

/// The fixture with more settings at the top of `nightshift.toml` (given the home's path).
fn fixture_with(settings: impl Fn(&std::path::Path) -> String) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home_dir = dir.path().join("home");
    let home = Home::at(&home_dir);
    home.bootstrap().unwrap();
    let extra = settings(&home_dir);
    std::fs::write(home_dir.join("nightshift.toml"), format!("{extra}keychain_service = \"nightshift-ipc-test\"\n\n[[accounts]]\nemail = \"work@acme.dev\"\n")).unwrap();
    std::fs::write(home_dir.join("routines/broken.yaml"), "name: broken\ncommand: echo hi\nschedul: \"0 9 * * *\"\n").unwrap();
    std::fs::write(
        home_dir.join("routines/fails.yaml"),
        "name: fails\ncommand: \"echo checking; echo 'disk full' >&2; exit 3\"\nschedule: \"0 9 * * 1-5\"\ntimezone: Europe/Berlin\n",
    )
    .unwrap();
    std::fs::write(
        home_dir.join("routines/hostile.yaml"),
        "name: hostile\nschedule: \"0 3 1 1 *\"\ncommand: |\n  echo '## Report'\n  echo '<script>window.__pwned=1</script>'\n  echo '<img src=x onerror=\"window.__pwned=2\">'\n  echo '[x](javascript:window.__pwned=3)'\n",
    )
    .unwrap();
    std::fs::write(home_dir.join("routines/sleepy.yaml"), "name: sleepy\nschedule: \"0 3 1 1 *\"\ncommand: \"echo started; sleep 60\"\n").unwrap();
    // A run that echoes the token: its log and record must reach the window masked.
    std::fs::write(home_dir.join("routines/leak.yaml"), format!("name: leak\nschedule: \"0 3 1 1 *\"\ncommand: \"echo token={TOKEN}; echo {TOKEN} >&2; exit 1\"\n")).unwrap();
    let mut opts = EngineOptions::new(home);
    // The account's token comes from the environment: it must never reach a payload.
    opts.env.push(("CLAUDE_CODE_OAUTH_TOKEN_WORK_AT_ACME_DOT_DEV".into(), TOKEN.into()));
    // A routine secret from the environment: its name reaches the window, never its value.
    opts.env.push(("NIGHTSHIFT_SECRET_DEPLOY_KEY".into(), "ipc-test-secret-deploy".into()));
    let engine = Engine::open(opts).unwrap();
    // The app's shell around the engine, on a desktop that records what it is asked.
    let shell = Shell::new(engine.clone(), tauri::async_runtime::handle().inner().clone(), Arc::new(Recorder::default()));
    let app = mock_builder().invoke_handler(crate::window::invoke_handler()).build(crate::context()).unwrap();
    app.manage(shell);
    app.add_capability(crate::window::capability()).unwrap();
    let main = WebviewWindowBuilder::new(&app, "main", Default::default()).build().unwrap();
    let other = WebviewWindowBuilder::new(&app, "other", Default::default()).build().unwrap();
    Fixture { _dir: dir, engine, _app: app, main, other }
}

fn ipc(w: &WebviewWindow<MockRuntime>, cmd: &str, args: Value) -> Result<Value, Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(args),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_string(),
    };
    get_ipc_response(w, request).map(|b| b.deserialize::<Value>().unwrap())
}

fn wait_final(f: &Fixture, id: &str) -> Value {
    let start = std::time::Instant::now();
    loop {
        let detail = ipc(&f.main, "get_run", json!({ "id": id })).unwrap();
        let status = detail["run"]["status"].as_str().unwrap().to_string();
        if !["queued", "running"].contains(&status.as_str()) {
            return detail;
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "run {id} never finished");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn routines_in_words_with_invalid_files_and_their_positions() {
    let f = fixture();
    let rows = ipc(&f.main, "list_routines", json!({})).unwrap();
    let by_name = |n: &str| rows.as_array().unwrap().iter().find(|r| r["name"] == n).cloned().unwrap_or_else(|| panic!("{n} missing: {rows:#}"));
    let fails = by_name("fails");
    assert_eq!(fails["schedule_words"], "At 09:00 on weekdays, Europe/Berlin");
    assert_eq!(fails["state"], "enabled");
    assert!(fails["next_fire"].as_str().is_some_and(|t| t.ends_with('Z')), "{fails:#}");
    assert_eq!(by_name("pr-review")["state"], "disabled");
    let broken = by_name("broken");
    assert_eq!((broken["valid"].clone(), broken["state"].clone()), (json!(false), json!("invalid")));
    let errors: Vec<&str> = broken["errors"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert!(errors.contains(&"routines/broken.yaml:3:1: unknown key `schedul`; did you mean `schedule`?"), "{errors:#?}");
}

#[test]
fn run_now_then_history_detail_and_log() {
    let f = fixture();
    let id = ipc(&f.main, "run_now", json!({ "name": "hello" })).unwrap();
    let id = id.as_str().unwrap().to_string();
    let detail = wait_final(&f, &id);
    assert_eq!(detail["run"]["status"], "completed");
    assert_eq!(detail["explanation"]["summary"], "Completed.");
    assert_eq!(detail["routine_exists"], true);
    assert!(detail["report_html"].as_str().unwrap().starts_with("<p>Hello from Nightshift on "), "{detail:#}");
    let page = ipc(&f.main, "list_runs", json!({ "routine": "hello", "status": null, "cursor": null, "limit": 10 })).unwrap();
    assert_eq!(page["runs"][0]["id"], id.as_str());
    let log = ipc(&f.main, "read_log", json!({ "id": id, "stream": "stdout", "offset": 0, "readable": true })).unwrap();
    assert_eq!(log["entries"][0]["kind"], "output");
    assert!(log["entries"][0]["text"].as_str().unwrap().starts_with("Hello from Nightshift"));
    assert_eq!(log["next_offset"], log["size"]);

    // A failing command: its reason in plain words and what to do.
    let id = ipc(&f.main, "run_now", json!({ "name": "fails" })).unwrap();
    let detail = wait_final(&f, id.as_str().unwrap());
    assert_eq!((detail["run"]["status"].clone(), detail["run"]["reason"].clone()), (json!("failed"), json!("exit_nonzero")));
    assert_eq!(detail["explanation"]["summary"], "The command failed: exited with code 3: disk full");
    assert_eq!(detail["explanation"]["fix"], "The log below shows what it printed.");
    // Its report explains the verdict, with what it printed last as (inert) evidence.
    let report = detail["report_html"].as_str().expect("a failed run's report");
    assert!(report.starts_with("<h1>fails · failed · exit_nonzero</h1>") && report.contains("<pre><code>disk full"), "{report}");
}

#[test]
fn cancel_a_running_run_from_the_window() {
    let f = fixture();
    let id = ipc(&f.main, "run_now", json!({ "name": "sleepy" })).unwrap();
    let id = id.as_str().unwrap().to_string();
    let start = std::time::Instant::now();
    while ipc(&f.main, "read_log", json!({ "id": id, "stream": "stdout", "offset": 0, "readable": false })).unwrap()["raw"] != "started\n" {
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let running = ipc(&f.main, "get_run", json!({ "id": id })).unwrap();
    assert_eq!(running["run"]["status"], "running");
    assert_eq!(running["explanation"]["summary"], "Running now. The log below follows it live.");
    assert_eq!(ipc(&f.main, "cancel_run", json!({ "id": id })).unwrap(), json!(true));
    let detail = wait_final(&f, &id);
    assert_eq!(detail["run"]["status"], "cancelled", "{detail:#}");
    assert_eq!(ipc(&f.main, "cancel_run", json!({ "id": id })).unwrap(), json!(false), "nothing left to cancel");
    assert_eq!(ipc(&f.main, "cancel_run", json!({ "id": "01nope" })).unwrap_err()["code"], "run_not_found");
}

#[test]
fn history_pages_by_cursor_without_overlap() {
    let f = fixture();
    for _ in 0..3 {
        let id = ipc(&f.main, "run_now", json!({ "name": "hello" })).unwrap();
        wait_final(&f, id.as_str().unwrap());
    }
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = ipc(&f.main, "list_runs", json!({ "routine": null, "status": "completed", "cursor": cursor, "limit": 2 })).unwrap();
        seen.extend(page["runs"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()));
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted, "newest first");
    let err = ipc(&f.main, "list_runs", json!({ "status": "exploded" })).unwrap_err();
    assert_eq!(err, json!({ "code": "usage", "message": "unknown status \"exploded\"" }));
}

#[test]
fn errors_are_code_and_message() {
    let f = fixture();
    let err = ipc(&f.main, "get_run", json!({ "id": "01nope" })).unwrap_err();
    assert_eq!(err["code"], "run_not_found");
    assert!(err["message"].as_str().unwrap().contains("01nope"), "{err}");
    let err = ipc(&f.main, "run_now", json!({ "name": "nope" })).unwrap_err();
    assert_eq!(err["code"], "routine_not_found");
    let err = ipc(&f.main, "set_routine_paused", json!({ "name": "broken", "paused": true })).unwrap_err();
    assert_eq!(err["code"], "routine_invalid", "{err}");
    let err = ipc(&f.main, "open_link", json!({ "url": "javascript:alert(1)" })).unwrap_err();
    assert_eq!(err, json!({ "code": "usage", "message": "only http, https and mailto links are opened" }));
}

#[test]
fn only_the_main_window_and_only_the_apps_commands() {
    let f = fixture();
    // Another window gets nothing; the main window gets no plugin command it was not granted.
    let denied = ipc(&f.other, "list_routines", json!({})).unwrap_err();
    assert!(denied.to_string().contains("not allowed"), "{denied}");
    let denied = ipc(&f.main, "plugin:opener|open_url", json!({ "url": "https://example.com" })).unwrap_err();
    assert!(denied.to_string().contains("not allowed"), "{denied}");
    let denied = ipc(&f.main, "plugin:dialog|message", json!({ "message": "x" })).unwrap_err();
    assert!(denied.to_string().contains("not allowed"), "{denied}");
}

/// The window's commands are defined once in `nightshift_core::api`, whose list `build.rs`
/// includes (the app manifest) and the window's capability is derived from; each must answer in
/// the real app (not "not found", not "not allowed").
#[test]
fn every_command_is_defined_once_and_answers() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let build = std::fs::read_to_string(root.join("src-tauri/build.rs")).unwrap();
    assert!(build.contains("include!(\"../crates/core/src/api_commands.rs\")"), "build.rs takes the API's own list");
    assert!(!root.join("capabilities").exists(), "no hand-kept capability file beside the derived one");
    let f = fixture();
    for name in nightshift_core::api::COMMANDS {
        if let Err(e) = ipc(&f.main, name, json!({})) {
            let said = e.to_string();
            assert!(!said.contains("not found") && !said.contains("not allowed"), "{name}: {said}");
        }
    }
}

#[test]
fn pause_all_and_one_routine() {
    let f = fixture();
    ipc(&f.main, "set_paused", json!({ "paused": true })).unwrap();
    assert_eq!(ipc(&f.main, "engine_state", json!({})).unwrap()["paused"], true);
    ipc(&f.main, "set_paused", json!({ "paused": false })).unwrap();
    ipc(&f.main, "set_routine_paused", json!({ "name": "hello", "paused": true })).unwrap();
    let rows = ipc(&f.main, "list_routines", json!({})).unwrap();
    let hello = rows.as_array().unwrap().iter().find(|r| r["name"] == "hello").unwrap();
    assert_eq!((hello["state"].clone(), hello["next_fire"].clone()), (json!("paused"), Value::Null));
}

#[test]
fn a_hostile_report_reaches_the_window_only_as_sanitized_html() {
    let f = fixture();
    let id = ipc(&f.main, "run_now", json!({ "name": "hostile" })).unwrap();
    let detail = wait_final(&f, id.as_str().unwrap());
    let html = detail["report_html"].as_str().unwrap();
    assert!(html.starts_with("<h2>Report</h2>"), "{html}");
    assert!(!html.contains("<script") && !html.contains("<img") && !html.contains("href=\"javascript"), "{html}");
    assert!(html.contains("&lt;script&gt;"), "shown as text: {html}");
}

#[test]
fn no_token_in_any_payload() {
    let f = fixture();
    let accounts = ipc(&f.main, "list_accounts", json!({})).unwrap();
    assert_eq!(accounts[0]["health"]["account"], "work@acme.dev");
    assert_eq!(accounts[0]["health"]["source"], "env");
    let checked = ipc(&f.main, "check_account", json!({ "email": "work@acme.dev" })).unwrap();
    let id = ipc(&f.main, "run_now", json!({ "name": "leak" })).unwrap();
    let id = id.as_str().unwrap().to_string();
    let detail = wait_final(&f, &id);
    let secrets = ipc(&f.main, "list_secrets", json!({})).unwrap();
    assert_eq!((secrets[0]["name"].as_str(), secrets[0]["source"].as_str()), (Some("DEPLOY_KEY"), Some("environment")), "{secrets}");
    let mut payloads = vec![accounts, checked, detail, secrets, ipc(&f.main, "list_runs", json!({})).unwrap(), ipc(&f.main, "list_routines", json!({})).unwrap()];
    for stream in ["stdout", "stderr"] {
        for readable in [true, false] {
            payloads.push(ipc(&f.main, "read_log", json!({ "id": id, "stream": stream, "offset": 0, "readable": readable })).unwrap());
        }
    }
    let all = serde_json::to_string(&payloads).unwrap();
    assert!(!all.contains(TOKEN) && !all.contains("ipc-test-secret"), "a token reached the window: {all}");
    assert!(all.contains("token="), "the run's output is there, masked: {all}");
    // Nothing of it on disk either (the run's logs are scrubbed after the run).
    for file in ["stdout.log", "stderr.log"] {
        let text = std::fs::read_to_string(std::path::Path::new(f.engine.store().get_run(&id).unwrap().run_dir.as_str()).join(file)).unwrap();
        assert!(!text.contains(TOKEN), "{file}: {text}");
    }
}

#[test]
fn hosts_and_their_health_reach_the_window() {
    let f = fixture_with(|home| format!("ssh_config = \"{}\"\n", home.join("ssh_config").display()));
    let home = f._dir.path().join("home");
    // A host nobody listens for: port 1 on loopback refuses at once.
    std::fs::write(home.join("ssh_config"), "Host box\n  HostName 127.0.0.1\n  Port 1\n").unwrap();
    std::fs::write(home.join("routines/placed.yaml"), format!("name: placed\nschedule: \"0 3 1 1 *\"\nhost: box\ndevices: [{}]\ncommand: make\n", nightshift_testkit::this_machine())).unwrap();
    nightshift_testkit::wait_until("the placed routine to be read", std::time::Duration::from_secs(10), || {
        ipc(&f.main, "list_hosts", json!({})).unwrap().as_array().is_some_and(|h| h.len() == 1)
    });
    let hosts = ipc(&f.main, "list_hosts", json!({})).unwrap();
    assert_eq!(hosts, json!([{ "host": "box", "github": null, "routines": ["placed"], "checked_at": null, "last_seen": null, "last_error": null }]), "an SSH host names no repository");
    let check = ipc(&f.main, "check_host", json!({ "host": "box" })).unwrap();
    assert_eq!(check["reachable"], false, "{check:#}");
    assert!(check["message"].as_str().unwrap().starts_with("box: unreachable — box: ssh: connect to host 127.0.0.1 port 1: Connection refused"), "{check:#}");
    let hosts = ipc(&f.main, "list_hosts", json!({})).unwrap();
    assert!(hosts[0]["checked_at"].is_string() && hosts[0]["last_seen"].is_null(), "{hosts:#}");
    assert!(hosts[0]["last_error"].as_str().unwrap().contains("Connection refused"), "{hosts:#}");
}
