//! End to end: the real app in a real WebKitGTK webview, driven through tauri-driver +
//! WebKitWebDriver under Xvfb (scripts/test.sh installs and starts them). The window shows, a run
//! started in the running app completes in its in-process engine, and its finish notification
//! reaches a real D-Bus notification server. A screenshot is kept in tests/artifacts.

use fantoccini::{ClientBuilder, Locator};
use nightshift_testkit::dbus::NotificationBus;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn tauri_driver() -> Option<PathBuf> {
    let candidates = [std::env::var_os("CARGO_HOME").map(PathBuf::from), std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo"))];
    let found = candidates.into_iter().flatten().map(|d| d.join("bin/tauri-driver")).find(|p| p.exists());
    match found {
        Some(p) => Some(p),
        None if std::env::var("NIGHTSHIFT_SKIP_GUI").as_deref() == Ok("1") => None,
        None => panic!("tauri-driver is not installed: `cargo install tauri-driver --locked` (scripts/test.sh does it), or NIGHTSHIFT_SKIP_GUI=1"),
    }
}

/// Stops tauri-driver with SIGTERM (SIGKILL would orphan WebKitWebDriver, which keeps its port).
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let start = Instant::now();
        while self.0.try_wait().ok().flatten().is_none() && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
    }
}

fn latest_run_id(home: &std::path::Path) -> String {
    let out = Command::new("/usr/bin/python3")
        .args(["-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select id from runs order by sort_ms desc limit 1').fetchone()[0])"])
        .arg(home.join("nightshift.db"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn artifacts() -> PathBuf {
    let dir = std::env::var_os("NIGHTSHIFT_ARTIFACTS").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/artifacts"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_app_in_webkit_runs_a_routine_and_notifies() {
    if std::env::var_os("DISPLAY").is_none() {
        assert_eq!(std::env::var("NIGHTSHIFT_SKIP_GUI").as_deref(), Ok("1"), "no X display: run through scripts/test.sh");
        return;
    }
    let Some(driver_bin) = tauri_driver() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let bus = NotificationBus::start(tmp.path(), "record");
    let (port, native) = (free_port(), free_port());
    // The app inherits tauri-driver's environment: its home and the private bus.
    let driver = Driver(
        Command::new(driver_bin)
            .args(["--port", &port.to_string(), "--native-port", &native.to_string()])
            .env("NIGHTSHIFT_HOME", &home)
            .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
            .env("NO_AT_BRIDGE", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(20), "tauri-driver did not listen");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut caps = serde_json::Map::new();
    caps.insert("browserName".into(), "wry".into());
    caps.insert("tauri:options".into(), serde_json::json!({ "application": env!("CARGO_BIN_EXE_nightshift") }));
    let client = ClientBuilder::native().capabilities(caps).connect(&format!("http://127.0.0.1:{port}")).await.expect("a WebDriver session with the app");

    let h1 = client.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("h1")).await.unwrap();
    assert_eq!(h1.text().await.unwrap(), "Nightshift");
    assert_eq!(client.title().await.unwrap(), "Nightshift");
    assert!(home.join("routines/hello.yaml").exists(), "first launch created the home");

    // Run the example routine in the running app (a second launch hands it over).
    let status = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .args(["--run-now", "hello"])
        .env("NIGHTSHIFT_HOME", &home)
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .env("NO_AT_BRIDGE", "1")
        .status()
        .unwrap();
    assert!(status.success());
    let got = bus.wait_for(1, Duration::from_secs(30));
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0]["app_name"], "Nightshift");
    assert!(got[0]["summary"].as_str().unwrap().starts_with("✓ hello · "), "{got:#?}");

    // "Open" on the notification shows that run in the window: its report as inert text.
    let id = latest_run_id(&home);
    client.execute("window.nightshiftUi.openRun(arguments[0])", vec![serde_json::json!(id)]).await.unwrap();
    let title = client.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("#run:not([hidden]) #run-title")).await.unwrap();
    assert_eq!(title.text().await.unwrap(), "hello · completed");
    let report = client.find(Locator::Id("run-report")).await.unwrap().text().await.unwrap();
    assert!(report.starts_with("Hello from Nightshift on "), "{report}");

    // Re-login without a terminal: the exact command, and a token field that says what went wrong
    // (this private bus has no Secret Service) and never keeps the token on screen.
    client
        .execute("window.nightshiftUi.relogin(arguments[0])", vec![serde_json::json!({"account": "work@acme.dev", "command": "CLAUDE_CONFIG_DIR='/x' claude /login"})])
        .await
        .unwrap();
    assert_eq!(client.find(Locator::Id("relogin-command")).await.unwrap().text().await.unwrap(), "CLAUDE_CONFIG_DIR='/x' claude /login");
    let field = client.find(Locator::Id("token")).await.unwrap();
    field.send_keys("nightshift-test-token-ui-0010").await.unwrap();
    client.find(Locator::Css("#token-form button")).await.unwrap().click().await.unwrap();
    let result = client.wait().at_most(Duration::from_secs(10)).for_element(Locator::XPath("//p[@id='token-result' and string-length(normalize-space()) > 0]")).await.unwrap();
    assert_eq!(result.text().await.unwrap(), "no account work@acme.dev; add it with `nightshiftctl accounts add claude work@acme.dev`");
    let value = client.execute("return document.getElementById('token').value", vec![]).await.unwrap();
    assert_eq!(value, serde_json::json!(""), "the field is cleared at once");
    let _ = field;

    let png = client.screenshot().await.unwrap();
    std::fs::write(artifacts().join("e2e-window.png"), png).unwrap();
    client.close().await.unwrap();
    drop(driver);
}
