//! End to end: the real app in a real WebKitGTK webview, driven through tauri-driver +
//! WebKitWebDriver under Xvfb (scripts/test.sh installs and starts them). The window shows, a run
//! started in the running app completes in its in-process engine, and its finish notification
//! reaches a real D-Bus notification server. Screenshots are kept in tests/artifacts
//! (`app-first-launch.png`: the first launch's window, once painted with the example routines).

mod common;

use common::*;
use fantoccini::Locator;
use std::process::Command;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_app_in_webkit_runs_a_routine_and_notifies() {
    if !gui_available() {
        return;
    }
    let scene = Scene::new();
    let (home, bus) = (&scene.home, &scene.bus);
    let Some((driver, client)) = scene.open(&[]).await else { return };

    let h1 = client.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("h1")).await.unwrap();
    assert_eq!(h1.text().await.unwrap(), "Nightshift");
    assert_eq!(client.title().await.unwrap(), "Nightshift");
    assert!(home.join("routines/hello.yaml").exists(), "first launch created the home");
    // The first launch's picture shows the first launch: taken once the page has painted and the
    // Routines view lists the example routines.
    until(&client, "the page's first paint", "return performance.getEntriesByName('first-contentful-paint').length > 0", 30).await;
    let listed = until(&client, "the example routines listed", "const names = [...document.querySelectorAll('#routines tr[data-routine]')].map(r => r.dataset.routine); return names.includes('hello') && names.includes('pr-review') && names", 30).await;
    assert_eq!(listed, serde_json::json!(["hello", "pr-review"]), "the first launch's routines");
    let png = client.screenshot().await.unwrap();
    std::fs::write(artifacts().join("app-first-launch.png"), png).unwrap();

    // Run the example routine in the running app (a second launch hands it over).
    let status = Command::new(env!("CARGO_BIN_EXE_nightshift"))
        .args(["--run-now", "hello"])
        .env("NIGHTSHIFT_HOME", home)
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
    let id = latest_run_id(home);
    client.execute("window.nightshiftUi.openRun(arguments[0])", vec![serde_json::json!(id)]).await.unwrap();
    // (Read in one step each: the view is drawn again on its run's events, and an element found
    // before a redraw is gone after it.)
    let title = until(&client, "the run's title", "return document.querySelector(\"[data-view='run'] #run-title\")?.textContent", 10).await;
    assert_eq!(title, "hello completed");
    let report = until(&client, "the run's report", "return document.querySelector('#run-report p')?.textContent", 10).await;
    assert!(report.as_str().unwrap().starts_with("Hello from Nightshift on "), "{report}");

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
    assert_eq!(result.text().await.unwrap(), "no account work@acme.dev; add it with `nightshiftctl accounts add claude|codex|gemini work@acme.dev`");
    let value = client.execute("return document.getElementById('token').value", vec![]).await.unwrap();
    assert_eq!(value, serde_json::json!(""), "the field is cleared at once");
    let _ = field;

    let png = client.screenshot().await.unwrap();
    std::fs::write(artifacts().join("e2e-window.png"), png).unwrap();
    close(client).await;
    drop(driver);
}
