//! Shared by the end-to-end tests: tauri-driver + WebKitWebDriver around the real app binary.
#![allow(dead_code)]

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn tauri_driver() -> Option<PathBuf> {
    let candidates = [std::env::var_os("CARGO_HOME").map(PathBuf::from), std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo"))];
    let found = candidates.into_iter().flatten().map(|d| d.join("bin/tauri-driver")).find(|p| p.exists());
    match found {
        Some(p) => Some(p),
        None if std::env::var("NIGHTSHIFT_SKIP_GUI").as_deref() == Ok("1") => None,
        None => panic!("tauri-driver is not installed: `cargo install tauri-driver --locked` (scripts/test.sh does it), or NIGHTSHIFT_SKIP_GUI=1"),
    }
}

/// Stops tauri-driver with SIGTERM (SIGKILL would orphan WebKitWebDriver, which keeps its port).
/// Holds the session's watchdog: dropping the driver ends it.
pub struct Driver {
    pub child: Child,
    _watchdog: std::sync::mpsc::Sender<()>,
}

impl Drop for Driver {
    /// tauri-driver, and then whatever it started (WebKitWebDriver, the app): the app keeps
    /// running in the tray when its window closes, so an app left over would hold this home's
    /// single-instance name on the test's bus, and the next launch would hand its arguments to it
    /// and never open a session.
    fn drop(&mut self) {
        let started = descendants(self.child.id());
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let start = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in &started {
            unsafe { libc::kill(*pid as i32, libc::SIGTERM) };
        }
        let start = Instant::now();
        while started.iter().any(|p| alive(*p)) && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        for pid in started.iter().filter(|p| alive(**p)) {
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
    }
}

/// A process's (parent pid, state) from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(u32, char)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = text[text.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    Some((rest.next()?.parse().ok()?, state))
}

/// Running (a zombie has ended; whoever adopted it reaps it).
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(_, state)| state != 'Z')
}

/// Every process below `root`, at this moment.
fn descendants(root: u32) -> Vec<u32> {
    let all: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?.0)))
        .collect();
    let mut out = vec![];
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (pid, _) in all.iter().filter(|(_, pp)| *pp == parent) {
            out.push(*pid);
            frontier.push(*pid);
        }
    }
    out
}

/// The longest one app session of a test may last. Every WebDriver step is bounded on its own
/// ([`STEP`]); this catches what is not (a step outside the helpers, a test that loops): the
/// binary then ends at once, naming the test, its last step and the app's log — instead of
/// holding the suite until the runner's own bound.
const SESSION_LIMIT: Duration = Duration::from_secs(300);
/// The longest one WebDriver request may take before the test fails saying which.
const STEP: Duration = Duration::from_secs(60);

/// The step the current app session last began, for the watchdog's message.
static LAST_STEP: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

fn step(what: &str) {
    *LAST_STEP.lock().unwrap_or_else(|e| e.into_inner()) = what.chars().take(300).collect();
}

fn watchdog() -> std::sync::mpsc::Sender<()> {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(SESSION_LIMIT) {
            let last = LAST_STEP.lock().unwrap_or_else(|e| e.into_inner()).clone();
            eprintln!("\nerror: {test}: its app session ran for more than {} s; its last WebDriver step: {last}{}", SESSION_LIMIT.as_secs(), app_log_tail());
            println!("test {test} ... FAILED");
            std::process::exit(101);
        }
    });
    tx
}

/// A WebDriver request with its bound: past [`STEP`] the test fails naming the request.
pub async fn bounded<T>(what: &str, request: impl std::future::Future<Output = T>) -> T {
    step(what);
    match tokio::time::timeout(STEP, request).await {
        Ok(v) => v,
        Err(_) => panic!("no answer from WebDriver within {} s to {what}{}", STEP.as_secs(), app_log_tail()),
    }
}

/// End the WebDriver session (tauri-driver then stops the app).
pub async fn close(c: Client) {
    bounded("closing the session", c.close()).await.unwrap();
}

pub fn latest_run_id(home: &std::path::Path) -> String {
    let out = Command::new("/usr/bin/python3")
        .args(["-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select id from runs order by sort_ms desc limit 1').fetchone()[0])"])
        .arg(home.join("nightshift.db"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn artifacts() -> PathBuf {
    let dir = std::env::var_os("NIGHTSHIFT_ARTIFACTS").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/artifacts"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}


/// Whether this run can drive the real app (an X display); without one only NIGHTSHIFT_SKIP_GUI=1
/// may skip, so CI never passes by skipping silently.
pub fn gui_available() -> bool {
    if std::env::var_os("DISPLAY").is_none() {
        assert_eq!(std::env::var("NIGHTSHIFT_SKIP_GUI").as_deref(), Ok("1"), "no X display: run through scripts/test.sh");
        return false;
    }
    true
}

/// One app at a time on the shared display (keyboard focus, window lookup), per test binary.
pub static ONE_APP_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Where a window test starts: a home in a temporary directory (not created yet: the app's first
/// launch creates it, or the test writes it first) and a private D-Bus session with the real
/// notification server.
pub struct Scene {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub bus: nightshift_testkit::dbus::NotificationBus,
}

impl Scene {
    /// The start of most window tests: `None` without a display (the test then passes over);
    /// else this binary's one-app lock and a scene whose home is bootstrapped (example routines).
    pub async fn bootstrapped() -> Option<(tokio::sync::MutexGuard<'static, ()>, Scene)> {
        if !gui_available() {
            return None;
        }
        let one = ONE_APP_AT_A_TIME.lock().await;
        let scene = Scene::new();
        nightshift_core::Home::at(&scene.home).bootstrap().unwrap();
        Some((one, scene))
    }

    pub fn new() -> Scene {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let bus = nightshift_testkit::dbus::NotificationBus::start(tmp.path(), "record");
        Scene { tmp, home, bus }
    }

    /// The real app on this home and bus, through WebDriver (`env`: e.g. a GTK theme).
    pub async fn open(&self, env: &[(&str, &str)]) -> Option<(Driver, Client)> {
        launch_with(&self.home, &self.bus.address, env).await
    }
}

/// Start tauri-driver (the app inherits its environment: the home and the private bus) and open
/// a WebDriver session with the real app.
pub async fn launch(home: &Path, bus_address: &str) -> Option<(Driver, Client)> {
    launch_with(home, bus_address, &[]).await
}

/// [`launch`] with extra environment for the app (e.g. a GTK theme).
pub async fn launch_with(home: &Path, bus_address: &str, env: &[(&str, &str)]) -> Option<(Driver, Client)> {
    let driver_bin = tauri_driver()?;
    let (port, native) = (free_port(), free_port());
    // The app's log (it inherits tauri-driver's stderr), for a failed wait to show.
    let log_path = PathBuf::from(format!("{}.log", home.display()));
    let log = std::fs::File::create(&log_path).unwrap();
    *APP_LOG.lock().unwrap_or_else(|e| e.into_inner()) = Some(log_path.clone());
    step("starting tauri-driver");
    let driver = Driver {
        _watchdog: watchdog(),
        child: Command::new(driver_bin)
            .args(["--port", &port.to_string(), "--native-port", &native.to_string()])
            .env("NIGHTSHIFT_HOME", home)
            .env("DBUS_SESSION_BUS_ADDRESS", bus_address)
            .env("NO_AT_BRIDGE", "1")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    };
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(20), "tauri-driver did not listen within 20 s{}", app_log_tail());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut caps = serde_json::Map::new();
    caps.insert("browserName".into(), "wry".into());
    caps.insert("tauri:options".into(), serde_json::json!({ "application": env!("CARGO_BIN_EXE_nightshift") }));
    let client = bounded("opening a WebDriver session with the app", ClientBuilder::native().capabilities(caps).connect(&format!("http://127.0.0.1:{port}")))
        .await
        .unwrap_or_else(|e| panic!("no WebDriver session with the app: {e}{}", app_log_tail()));
    Some((driver, client))
}

// WebDriver helpers for the window's tests.

pub async fn js(c: &Client, script: &str) -> Value {
    match bounded(script, c.execute(script, vec![])).await {
        Ok(v) => v,
        Err(e) => panic!("{script}: {e};\nthe window shows {}{}", what_it_shows(c).await, app_log_tail()),
    }
}

/// The log of the app the last [`launch`] started (one app at a time per test binary).
static APP_LOG: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// The end of the app's log, for a failure's message; the whole log is copied to the artifacts
/// (the test's temporary directory goes with the failure).
pub fn app_log_tail() -> String {
    let Some(path) = APP_LOG.lock().unwrap_or_else(|e| e.into_inner()).clone() else { return String::new() };
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let kept = artifacts().join(format!("app-log-{}.txt", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis()));
    let _ = std::fs::write(&kept, &text);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    format!("\n--- the app's log (last 40 of {} lines; all of it in {}):\n{tail}", lines.len(), kept.display())
}

/// What the window shows — where it is, which view, its text — for a failed wait's message, with
/// a screenshot kept in the artifacts. Never throws in the page, whatever state it is in.
pub async fn what_it_shows(c: &Client) -> String {
    let script = "try { const v = document.getElementById('view'); const t = (v ? v.innerText : (document.body ? document.body.innerText : '')) || ''; return `at ${location.href} (view ${v ? v.dataset.view : 'none'}): ${t.slice(0, 1500)}`; } catch (e) { return `the page could not be read: ${e}`; }";
    let quick = Duration::from_secs(10);
    let shows = match tokio::time::timeout(quick, c.execute(script, vec![])).await {
        Ok(Ok(Value::String(s))) => s,
        Ok(Ok(other)) => other.to_string(),
        Ok(Err(e)) => format!("the page could not be read: {e}"),
        Err(_) => "the page did not answer within 10 s".to_string(),
    };
    let shot = artifacts().join(format!("failed-wait-{}.png", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis()));
    match tokio::time::timeout(quick, c.screenshot()).await.map(|png| png.map(|png| std::fs::write(&shot, png))) {
        Ok(Ok(Ok(()))) => format!("{shows}\n(screenshot: {})", shot.display()),
        _ => shows,
    }
}

fn truthy(v: &Value) -> bool {
    !(v.is_null() || *v == json!(false) || *v == json!(0) || *v == json!(""))
}

/// The script's answer once, when truthy; else what it said, for a failure message (its answer,
/// or why it threw).
async fn answered(c: &Client, what: &str, script: &str) -> Result<Value, String> {
    match bounded(what, c.execute(script, vec![])).await {
        Ok(v) if truthy(&v) => Ok(v),
        Ok(v) => Err(format!("its last answer was {v}")),
        Err(e) => Err(format!("it last failed: {e}")),
    }
}

/// Wait until a script returns something truthy; return it. A script that throws (the element it
/// reads is gone) counts as "not yet". Past `secs`, fail with the script's last answer, what the
/// window shows and the app's log.
pub async fn until(c: &Client, what: &str, script: &str, secs: u64) -> Value {
    let start = Instant::now();
    loop {
        let last = match answered(c, what, script).await {
            Ok(v) => return v,
            Err(last) => last,
        };
        if start.elapsed() >= Duration::from_secs(secs) {
            panic!("timed out after {secs} s waiting for {what} ({last});\nthe window shows {}{}", what_it_shows(c).await, app_log_tail());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn text(c: &Client, css: &str) -> String {
    // Read through JS: views re-render on engine events, so a held element can go stale.
    let script = format!("const e = document.querySelector({}); return e && e.innerText", json!(css));
    until(c, css, &script, 15).await.as_str().unwrap().to_string()
}

/// A real WebDriver click, retried when a re-render replaced the element in between.
pub async fn click(c: &Client, css: &str) {
    let start = Instant::now();
    loop {
        let tried = match bounded(&format!("finding {css}"), c.find(Locator::Css(css))).await {
            Ok(el) => bounded(&format!("clicking {css}"), el.click()).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match tried {
            Ok(_) => return,
            Err(e) if start.elapsed() >= Duration::from_secs(15) => panic!("could not click {css} within 15 s: {e};\nthe window shows {}{}", what_it_shows(c).await, app_log_tail()),
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Click, then wait for `script` (the click's first visible effect) to answer something truthy;
/// click again when it does not within 3 s. A view re-renders on engine events (a settings change,
/// a usage probe, a run settling): a click that lands while the layout moves hits the old place
/// and does nothing, which a user would answer by clicking again. Only for idempotent actions.
pub async fn click_until(c: &Client, css: &str, what: &str, script: &str, secs: u64) -> Value {
    let start = Instant::now();
    loop {
        click(c, css).await;
        let tried = Instant::now();
        let last = loop {
            let last = match answered(c, what, script).await {
                Ok(v) => return v,
                Err(last) => last,
            };
            if tried.elapsed() >= Duration::from_secs(3) {
                break last;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        if start.elapsed() >= Duration::from_secs(secs) {
            panic!("timed out after {secs} s clicking {css} and waiting for {what} ({last});\nthe window shows {}{}", what_it_shows(c).await, app_log_tail());
        }
    }
}

pub async fn screenshot(c: &Client, name: &str) {
    std::fs::write(artifacts().join(name), bounded("a screenshot", c.screenshot()).await.unwrap()).unwrap();
}

pub async fn go(c: &Client, hash: &str) {
    bounded(&format!("going to {hash}"), c.execute("window.nightshiftUi.go(arguments[0])", vec![json!(hash)])).await.unwrap();
}

/// The process of the X client whose window is titled `title` (its `_NET_WM_PID`), if one is mapped.
pub fn window_pid(title: &str) -> Option<u32> {
    let info = std::process::Command::new("xwininfo").args(["-name", title]).output().ok()?;
    let info = String::from_utf8_lossy(&info.stdout);
    let id = info.lines().find_map(|l| l.split("Window id: ").nth(1))?.split_whitespace().next()?.to_string();
    let prop = std::process::Command::new("xprop").args(["-id", &id, "_NET_WM_PID"]).output().ok()?;
    String::from_utf8_lossy(&prop.stdout).rsplit(" = ").next()?.trim().parse().ok()
}
