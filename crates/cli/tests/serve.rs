//! `nightshiftctl serve`: the window in a real browser (Debian's Chromium through chromedriver,
//! headless) — the views load, Run now works and the run turns completed live, and the home switcher
//! shows another home through this server (a run there turning completed live) — and the server's
//! refusals, over raw HTTP so every header is ours: no token, a wrong token, a foreign `Host`, a
//! foreign `Origin`, too many bad tokens, a non-loopback address without `--insecure`.

mod common;

use common::{ctl, ctl_bus, Served};
use nightshift_testkit::TestHome;
use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn serve(th: &TestHome) -> Served {
    common::serve(th, "127.0.0.1:0", &[])
}

/// One raw HTTP/1.1 request with an empty JSON body; (status, body).
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    http_body(addr, method, path, headers, "{}")
}

/// A command with arguments, as the page calls it.
fn call(s: &Served, command: &str, args: serde_json::Value) -> (u16, serde_json::Value) {
    let bearer = format!("Bearer {}", s.token);
    let (code, body) = http_body(&s.addr, "POST", &format!("/api/{command}"), &[("Authorization", &bearer), ("Content-Type", "application/json")], &args.to_string());
    (code, serde_json::from_str(&body).unwrap_or(serde_json::Value::Null))
}

fn http_body(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req += &format!("Host: {addr}\r\n");
    }
    for (k, v) in headers {
        req += &format!("{k}: {v}\r\n");
    }
    req += "\r\n";
    req += body;
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

#[test]
fn the_server_refuses_what_it_must() {
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 3 * * *\"\ncommand: echo hi\n");
    th.routine("long", "schedule: \"0 3 * * *\"\ncommand: sleep 60\n");
    std::fs::write(th.path().join("nightshift.toml"), "kill_grace_secs = 1\n[[accounts]]\nemail = \"me@home.dev\"\n").unwrap();
    let s = serve(&th);
    let bearer = format!("Bearer {}", s.token);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(th.path().join("serve-token")).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the token file is private");

    let (code, body) = http(&s.addr, "POST", "/api/list_routines", &[("Authorization", &bearer)]);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"name\":\"hello\""), "{body}");
    assert_eq!(http(&s.addr, "POST", "/api/list_routines", &[]).0, 401);
    assert_eq!(http(&s.addr, "POST", "/api/list_routines", &[("Authorization", "Bearer nope")]).0, 401);
    assert_eq!(http(&s.addr, "GET", "/api/events", &[]).0, 401);
    // DNS rebinding: a page of another name resolved to 127.0.0.1.
    assert_eq!(http(&s.addr, "POST", "/api/list_routines", &[("Authorization", &bearer), ("Host", "evil.example")]).0, 421);
    assert_eq!(http(&s.addr, "GET", "/", &[("Host", "evil.example")]).0, 421);
    // Another origin, even with the token (a page that learned it).
    assert_eq!(http(&s.addr, "POST", "/api/run_now", &[("Authorization", &bearer), ("Origin", "http://evil.example")]).0, 403);
    // What the window does, through the same commands: pause all and back, re-login shows the
    // command (a browser cannot open a terminal on the server), links are the page's own business.
    assert_eq!(http(&s.addr, "POST", "/api/set_paused", &[("Authorization", &bearer)]).0, 400, "missing argument");
    assert_eq!(call(&s, "set_paused", serde_json::json!({ "paused": true })).0, 200);
    assert_eq!(call(&s, "engine_state", serde_json::json!({})).1["paused"], true);
    assert_eq!(call(&s, "set_paused", serde_json::json!({ "paused": false })).0, 200);
    // Run now, then cancel it.
    let (code, id) = call(&s, "run_now", serde_json::json!({ "name": "long" }));
    assert_eq!(code, 200, "{id}");
    let id = id.as_str().unwrap().to_string();
    assert_eq!(call(&s, "cancel_run", serde_json::json!({ "id": id })).1, true);
    let start = Instant::now();
    while call(&s, "get_run", serde_json::json!({ "id": id })).1["run"]["status"] != "cancelled" {
        assert!(start.elapsed() < Duration::from_secs(15), "the run was not cancelled");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Re-login: no terminal on a server, the command to copy instead.
    let (code, relogin) = call(&s, "relogin", serde_json::json!({ "email": "me@home.dev" }));
    assert_eq!(code, 200, "{relogin}");
    assert!(relogin["opened"].is_null() && relogin["command"].as_str().unwrap().contains("claude"), "{relogin}");
    // A token pasted in the page is stored in the server's keychain (here: its error, in words,
    // when the test runs without one — never the token).
    let (code, answer) = call(&s, "set_token", serde_json::json!({ "email": "me@home.dev", "token": "sk-ant-oat01-serve-test-token-000000000000" }));
    if code != 200 {
        let said = answer["message"].as_str().unwrap_or("");
        assert!(said.contains("keychain") && !said.contains("serve-test-token"), "{answer}");
    }
    // The page itself: public, with the app's CSP.
    let (code, page) = http(&s.addr, "GET", "/", &[]);
    assert_eq!(code, 200);
    assert!(page.contains("<script type=\"module\" src=\"app.js\">"));
    // Guessing: after 20 wrong tokens a minute, even the right one waits.
    for _ in 0..20 {
        http(&s.addr, "POST", "/api/engine_state", &[("Authorization", "Bearer guess")]);
    }
    assert_eq!(http(&s.addr, "POST", "/api/engine_state", &[("Authorization", &bearer)]).0, 429);

    let out = ctl(&th).args(["serve", "--addr", "0.0.0.0:0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a loopback address"), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = s.base;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_works_in_a_real_browser() {
    let Some(driver_bin) = which("chromedriver") else {
        assert_eq!(std::env::var("NIGHTSHIFT_SKIP_BROWSER").as_deref(), Ok("1"), "chromedriver is missing: scripts/test.sh installs Debian's chromium and chromium-driver (or set NIGHTSHIFT_SKIP_BROWSER=1)");
        return;
    };
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 3 * * *\"\ncommand: \"sleep 1; echo '## Hello from serve'\"\nnotify: never\n");
    let s = serve(&th);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut driver = std::process::Command::new(driver_bin).arg(format!("--port={port}")).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(20), "chromedriver did not listen");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let profile = tempfile::tempdir().unwrap();
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({ "binary": "/usr/bin/chromium", "args": [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", format!("--user-data-dir={}", profile.path().display())
        ]}),
    );
    let c = fantoccini::ClientBuilder::native().capabilities(caps).connect(&format!("http://127.0.0.1:{port}")).await.expect("a WebDriver session");
    let result = async {
        c.goto(&format!("{}/?token={}", s.base, s.token)).await.unwrap();
        let js = |script: &'static str| {
            let c = c.clone();
            async move { c.execute(script, vec![]).await.unwrap() }
        };
        let until = |what: &'static str, script: &'static str, secs: u64| {
            let c = c.clone();
            async move {
                let start = Instant::now();
                loop {
                    let v = c.execute(script, vec![]).await.unwrap();
                    if !(v.is_null() || v == serde_json::json!(false)) {
                        return v;
                    }
                    assert!(start.elapsed() < Duration::from_secs(secs), "timed out waiting for {what}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        until("the routines view", "return document.querySelector(\"#routines tr[data-routine='hello']\")?.textContent", 20).await;
        // The token left the address bar (kept for this tab only).
        assert_eq!(js("return location.search").await, serde_json::json!(""));
        until("the header", "return document.getElementById('engine-state').textContent.startsWith('Scheduling')", 10).await;
        c.execute("document.querySelector(\"#routines tr[data-routine='hello'] button.primary\").click()", vec![]).await.unwrap();
        until("the run detail", "return location.hash.startsWith('#/run/')", 10).await;
        // Live: the page turns the run to completed from the event stream, with its report.
        until("the run completed", "const b = document.querySelector('#run-title .badge'); return b && b.classList.contains('badge-completed')", 20).await;
        until("the report", "return document.getElementById('run-report')?.textContent.includes('Hello from serve')", 10).await;
        // History shows it without a reload.
        c.execute("window.nightshiftUi.go('#/history')", vec![]).await.unwrap();
        until("the history row", "return document.querySelector('#history tbody tr')?.textContent.includes('hello')", 10).await;
        // A run the home's own CLI starts and settles (a process whose events serve never sees)
        // shows too, without a reload.
        let ran = ctl(&th).args(["run", "hello", "--wait"]).output().unwrap();
        assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
        until("the CLI's run in History, live", "return document.querySelectorAll('#history tbody tr').length === 2", 10).await;

        // Another home this one lists: the switcher shows its routines through this server, a
        // Run now there turns completed live from its relayed event stream.
        let boxed = TestHome::new();
        boxed.routine("boxjob", "schedule: \"0 3 * * *\"\ncommand: \"sleep 1; echo '## Hello from the box'\"\nnotify: never\n");
        let b = serve(&boxed);
        let mut add = ctl_bus(&th).args(["homes", "add", "box", &b.base]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        add.stdin.take().unwrap().write_all(format!("{}\n", b.token).as_bytes()).unwrap();
        let added = add.wait_with_output().unwrap();
        assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
        // (A running engine reads its settings again within a second of their change.)
        let start = Instant::now();
        while call(&s, "list_homes", serde_json::json!({})).1.as_array().is_none_or(|h| h.is_empty()) {
            assert!(start.elapsed() < Duration::from_secs(10), "the server never listed the box");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        c.refresh().await.unwrap();
        until("the switcher offering the box", "return !document.getElementById('home-switch-label').hidden && [...document.querySelectorAll('#home-switch option')].some(o => o.value === 'box')", 20).await;
        c.execute("const s = document.getElementById('home-switch'); s.value = 'box'; s.dispatchEvent(new Event('change'))", vec![]).await.unwrap();
        c.execute("window.nightshiftUi.go('#/routines')", vec![]).await.unwrap();
        until("the box's routine", "return document.querySelector(\"#routines tr[data-routine='boxjob']\") && !document.querySelector(\"#routines tr[data-routine='hello']\")", 20).await;
        c.execute("document.querySelector(\"#routines tr[data-routine='boxjob'] button.primary\").click()", vec![]).await.unwrap();
        until("the box's run detail", "return location.hash.startsWith('#/run/')", 10).await;
        until("the box's run completed, live", "const b = document.querySelector('#run-title .badge'); return b && b.classList.contains('badge-completed')", 20).await;
        until("its report", "return document.getElementById('run-report')?.textContent.includes('Hello from the box')", 10).await;
        drop(b);
    }
    .await;
    let _ = c.close().await;
    let _ = driver.kill();
    let _ = driver.wait();
    result
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|f| f.exists())).or_else(|| {
        let f = std::path::Path::new("/usr/bin").join(name);
        f.exists().then_some(f)
    })
}

/// Routines written from a browser: the same commands as the app's window, over HTTP — the form's
/// check and create, the editor's read/check/save with its version, the folder picker, and "open
/// in editor" answered in words (the file is on the server).
#[test]
fn routines_are_written_over_http() {
    let th = TestHome::new();
    let s = serve(&th);
    let draft = serde_json::json!({ "name": "served", "command": "echo from the browser", "schedule": "0 9 * * *", "timezone": "UTC" });
    let (code, check) = call(&s, "check_routine_draft", serde_json::json!({ "draft": draft }));
    assert_eq!(code, 200, "{check}");
    assert_eq!(check["problems"], serde_json::json!([]));
    assert_eq!(check["preview"]["fires"].as_array().map(Vec::len), Some(5));
    let (code, created) = call(&s, "create_routine", serde_json::json!({ "draft": draft, "runNow": true }));
    assert_eq!(code, 200, "{created}");
    assert_eq!(created["file"], "routines/served.yaml");
    assert!(created["run_id"].is_string(), "{created}");
    let (code, again) = call(&s, "create_routine", serde_json::json!({ "draft": draft }));
    assert_eq!((code, again["code"].as_str()), (400, Some("routine_invalid")), "{again}");

    let (_, source) = call(&s, "routine_source", serde_json::json!({ "name": "served" }));
    let text = source["text"].as_str().unwrap().replace("from the browser", "edited");
    let (code, saved) = call(&s, "save_routine_text", serde_json::json!({ "name": "served", "text": text, "version": source["version"] }));
    assert_eq!(code, 200, "{saved}");
    let (code, stale) = call(&s, "save_routine_text", serde_json::json!({ "name": "served", "text": text, "version": source["version"] }));
    assert_eq!((code, stale["code"].as_str()), (409, Some("conflict")), "{stale}");
    assert!(std::fs::read_to_string(th.path().join("routines/served.yaml")).unwrap().contains("echo edited"));

    let (code, folders) = call(&s, "list_folders", serde_json::json!({ "path": th.path() }));
    assert_eq!(code, 200, "{folders}");
    assert!(folders["folders"].as_array().unwrap().iter().any(|f| f == "routines"), "{folders}");
    let (code, opened) = call(&s, "open_routine_file", serde_json::json!({ "name": "served" }));
    assert_eq!(code, 400);
    assert!(opened["message"].as_str().unwrap().contains("the file is on the server"), "{opened}");
}

/// A worktree run's changes over HTTP: the detail's one-line summary, Push again and Open folder
/// (which says the folder is on the server).
#[test]
fn a_runs_changes_push_and_folder_over_http() {
    let th = TestHome::new();
    let repo = th.path().join("repo");
    nightshift_testkit::git::init_repo(&repo, &[]);
    nightshift_testkit::git::init_bare(&th.path().join("remote.git"));
    nightshift_testkit::git::git(&repo, &["remote", "add", "origin", th.path().join("remote.git").to_str().unwrap()]);
    th.routine("wt", &format!("schedule: \"0 3 * * *\"\ncommand: \"echo x > x.txt\"\ncwd: {}\nworkspace: worktree\npush: origin\n", repo.display()));
    th.routine("plain", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    assert!(ctl(&th).args(["run", "wt", "--wait"]).output().unwrap().status.success());
    assert!(ctl(&th).args(["run", "plain", "--wait"]).output().unwrap().status.success());
    let runs: serde_json::Value = serde_json::from_slice(&ctl(&th).args(["runs", "--json"]).output().unwrap().stdout).unwrap();
    let (plain, wt) = (runs[0]["id"].as_str().unwrap().to_string(), runs[1]["id"].as_str().unwrap().to_string());

    let s = serve(&th);
    let (code, detail) = call(&s, "get_run", serde_json::json!({ "id": wt }));
    assert_eq!(code, 200, "{detail}");
    assert_eq!(detail["changes_summary"], format!("1 file changed, +1 \u{2212}0 on nightshift/wt/{wt}"));
    assert_eq!(detail["run"]["changes"]["push"]["state"], "pushed");
    let (code, pushed) = call(&s, "push_branch", serde_json::json!({ "id": wt }));
    assert_eq!((code, &pushed["changes"]["push"]["state"]), (200, &serde_json::json!("pushed")), "{pushed}");
    let (code, none) = call(&s, "push_branch", serde_json::json!({ "id": plain }));
    assert_eq!((code, none["code"].as_str()), (400, Some("usage")), "{none}");
    assert!(none["message"].as_str().unwrap().contains("has no branch to push"), "{none}");
    let (code, opened) = call(&s, "open_workspace", serde_json::json!({ "id": wt }));
    assert_eq!(code, 400);
    assert!(opened["message"].as_str().unwrap().contains(&format!("the file is on the server ({})", th.path().join("worktrees").join(&wt).display())), "{opened}");
}
