//! A private D-Bus session bus (starting no services) with the real test notification server
//! (tests/support/notification_server.py) on it, recording every Notify call; and, on the same
//! bus, a StatusNotifier host (tests/support/status_notifier_host.py) that records the app's tray
//! item and its menu as a desktop panel reads them.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Start one of the test D-Bus services in tests/support (`script`, with `args`) on the bus at
/// `address`, and wait until it has written its `{"ready": true}` line to `log` (it owns its name
/// then). `what` names it if it never does.
fn start_service(script: &str, args: &[&str], address: &str, log: &std::path::Path, stderr: Stdio, what: &str) -> Child {
    let child = Command::new("/usr/bin/python3")
        .arg(crate::home::workspace_root().join("tests/support").join(script))
        .args(args)
        .env("DBUS_SESSION_BUS_ADDRESS", address)
        .stderr(stderr)
        .spawn()
        .expect("python3 with python3-dbus and python3-gi");
    let start = Instant::now();
    while !std::fs::read_to_string(log).unwrap_or_default().contains("ready") {
        assert!(start.elapsed() < Duration::from_secs(15), "{what} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

pub struct NotificationBus {
    /// The private bus, when this started one (`None`: the notification server joined a bus
    /// that was there, [`NotificationBus::join`]).
    daemon: Option<Child>,
    server: Child,
    /// Pass as `DBUS_SESSION_BUS_ADDRESS` to the process under test.
    pub address: String,
    log: std::path::PathBuf,
}

impl Drop for NotificationBus {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        if let Some(daemon) = self.daemon.as_mut() {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

impl NotificationBus {
    /// `mode`: "record" answers every call, "hang" never replies, "refuse:N" answers the first N
    /// calls with an error, "open" clicks each notification's "Open" half a second after showing
    /// it. Files go into `dir`.
    pub fn start(dir: &std::path::Path, mode: &str) -> NotificationBus {
        let conf = std::fs::read_to_string("/usr/share/dbus-1/session.conf").expect("dbus session.conf (apt: dbus)");
        let bare: String = conf.lines().filter(|l| !l.contains("servicedir") && !l.contains("standard_session_servicedirs")).collect::<Vec<_>>().join("\n");
        let tag = mode.replace(':', "-");
        let conf_path = dir.join(format!("bus-{tag}.conf"));
        std::fs::write(&conf_path, bare).unwrap();
        let mut daemon = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", conf_path.display()))
            .args(["--nofork", "--print-address"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon (apt: dbus)");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(daemon.stdout.take().unwrap()), &mut line).unwrap();
        let address = line.trim().to_string();
        let log = dir.join(format!("notifications-{tag}.jsonl"));
        let server = start_service("notification_server.py", &[mode, &log.display().to_string()], &address, &log, Stdio::inherit(), "the notification server");
        NotificationBus { daemon: Some(daemon), server, address, log }
    }

    /// The notification server on the bus at `address` (the test's own session bus, where its
    /// keychain is too: a process under test that needs both reaches them at one address). One
    /// per bus: the server owns `org.freedesktop.Notifications` there.
    pub fn join(address: &str, dir: &std::path::Path, mode: &str) -> NotificationBus {
        let log = dir.join(format!("notifications-{}.jsonl", mode.replace(':', "-")));
        let server = start_service("notification_server.py", &[mode, &log.display().to_string()], address, &log, Stdio::inherit(), "the notification server");
        NotificationBus { daemon: None, server, address: address.to_string(), log }
    }

    /// Every Notify call so far.
    pub fn notifications(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v.get("ready").is_none() && v.get("refused").is_none() && v.get("clicked").is_none())
            .collect()
    }

    /// Wait until at least `n` notifications arrived (or `limit` passed).
    pub fn wait_for(&self, n: usize, limit: Duration) -> Vec<serde_json::Value> {
        self.wait_for_where(n, limit, |_| true)
    }

    /// [`NotificationBus::wait_for`], counting only the finish notifications of `routine` (its
    /// summary is "<mark> <routine> · …"): a test home's example routine fires on the hour, and a
    /// test that runs across one must not mistake it for the run it waits for.
    pub fn wait_for_routine(&self, routine: &str, n: usize, limit: Duration) -> Vec<serde_json::Value> {
        let needle = format!(" {routine} · ");
        self.wait_for_where(n, limit, |v| v["summary"].as_str().is_some_and(|s| s.contains(&needle)))
    }

    /// Click "Open" on the `n`th notification shown (from 1), as a person would — when the test
    /// chooses, whatever the server's mode.
    pub fn click_open(&self, n: usize) {
        self.click(n, "open");
    }

    /// Click action `action` ("open", "approve", "deny") of notification `n` (from 1), as a
    /// person does: the server sends `ActionInvoked`.
    pub fn click(&self, n: usize, action: &str) {
        let ok = Command::new("dbus-send")
            .args(["--session", "--print-reply", "--dest=org.freedesktop.Notifications", "/org/freedesktop/Notifications", "dev.nightshift.TestServer.Click", &format!("uint32:{n}"), &format!("string:{action}")])
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .status()
            .expect("dbus-send (apt: dbus)")
            .success();
        assert!(ok, "the notification server did not take the click on {action} of notification {n}");
    }

    /// The well-known names owned on this bus now (`org.freedesktop.DBus.ListNames`), e.g. the
    /// app's single-instance name while it runs.
    pub fn names(&self) -> Vec<String> {
        let out = Command::new("dbus-send")
            .args(["--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"])
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .output()
            .expect("dbus-send (apt: dbus)");
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().strip_prefix("string \"")?.strip_suffix('"').map(str::to_string)).filter(|n| !n.starts_with(':')).collect()
    }

    fn wait_for_where(&self, n: usize, limit: Duration, keep: impl Fn(&serde_json::Value) -> bool) -> Vec<serde_json::Value> {
        let start = Instant::now();
        loop {
            let got: Vec<serde_json::Value> = self.notifications().into_iter().filter(|v| keep(v)).collect();
            if got.len() >= n || start.elapsed() > limit {
                return got;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A StatusNotifier host (what a desktop panel is) on a test bus: the app's tray icon registers
/// with it over D-Bus, and every state of the tray's menu is recorded.
pub struct TrayHost {
    host: Child,
    log: std::path::PathBuf,
}

impl Drop for TrayHost {
    fn drop(&mut self) {
        let _ = self.host.kill();
        let _ = self.host.wait();
    }
}

/// One entry of a tray menu: its label, whether it can be chosen, its submenu.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct MenuEntry {
    /// The dbusmenu item id ([`TrayHost::click`]).
    #[serde(default)]
    pub id: i32,
    pub label: String,
    #[serde(default)]
    pub enabled: bool,
    /// A check item that is on (dbusmenu's `toggle-state`).
    #[serde(default)]
    pub checked: bool,
    #[serde(default)]
    pub children: Vec<MenuEntry>,
}

impl TrayHost {
    /// Start the host on `bus_address` (before the app, as a panel is there before it).
    pub fn start(dir: &std::path::Path, bus_address: &str) -> TrayHost {
        let log = dir.join("tray.jsonl");
        // dbus-python logs items that went away (an app that quit) on stderr: kept beside the log.
        let stderr = Stdio::from(std::fs::File::create(dir.join("tray-host.stderr")).unwrap());
        let host = start_service("status_notifier_host.py", &[&log.display().to_string()], bus_address, &log, stderr, "the StatusNotifier host");
        TrayHost { host, log }
    }

    /// The tray's item as last read (`None` before the app's item registered): the item that
    /// registered last — a read of an item of an app that quit, logged after a newer app's
    /// registration (its last signals), is not it.
    fn last(&self) -> Option<serde_json::Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<serde_json::Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let newest = lines.iter().rev().find_map(|v| v["registered"].as_str().map(str::to_string));
        let is_newest = |v: &serde_json::Value| newest.as_deref().is_none_or(|n| Some(n) == v["service"].as_str().zip(v["path"].as_str()).map(|(s, p)| format!("{s}{p}")).as_deref());
        lines.into_iter().rev().find(|v| v.get("menu").is_some() && is_newest(v))
    }

    /// The tray's menu as last read (`None` before the app's item registered).
    pub fn menu(&self) -> Option<Vec<MenuEntry>> {
        serde_json::from_value(self.last()?["menu"].clone()).ok()
    }

    /// When each item registered with the host (seconds since the epoch), in order.
    pub fn registrations(&self) -> Vec<f64> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).filter(|v| v.get("registered").is_some()).filter_map(|v| v["t"].as_f64()).collect()
    }

    /// Click the top-level menu entry labelled `label`, as a panel does when the user picks it
    /// (com.canonical.dbusmenu.Event "clicked", through `gdbus`). The app rebuilds its menu on
    /// engine events (new item ids): a click that lands on an id just replaced is tried again on
    /// the menu as the host now has it, as a panel would show it.
    pub fn click(&self, bus_address: &str, label: &str) {
        self.click_path(bus_address, &[label]);
    }

    /// Click the entry at `path` of labels through submenus (`["Run now", "mac-mini", "nightly"]`),
    /// as [`TrayHost::click`] clicks a top-level one.
    pub fn click_path(&self, bus_address: &str, path: &[&str]) {
        let start = Instant::now();
        loop {
            let item = self.last().expect("the tray item registered");
            let menu: Vec<MenuEntry> = serde_json::from_value(item["menu"].clone()).unwrap();
            let mut level = &menu;
            let mut found = None;
            for label in path {
                let entry = level.iter().find(|e| e.label == *label).unwrap_or_else(|| panic!("no {label:?} in the tray menu at {path:?}: {menu:?}"));
                level = &entry.children;
                found = Some(entry);
            }
            let (entry, label) = (found.expect("a path of at least one label"), path.join(" ▸ "));
            let out = Command::new("gdbus")
                .args(["call", "--session", "--dest", item["service"].as_str().unwrap(), "--object-path", item["menu_path"].as_str().unwrap()])
                .args(["--method", "com.canonical.dbusmenu.Event", &entry.id.to_string(), "clicked", "<int32 0>", "0"])
                .env("DBUS_SESSION_BUS_ADDRESS", bus_address)
                .output()
                .expect("gdbus (apt: libglib2.0-bin)");
            if out.status.success() {
                return;
            }
            let said = String::from_utf8_lossy(&out.stderr);
            let replaced = said.contains("does not refer to a menu item");
            assert!(replaced && start.elapsed() < Duration::from_secs(10), "clicking {label:?} in the tray menu failed: {said}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The labels of a submenu (e.g. "Run now"), as last read.
    pub fn submenu(&self, label: &str) -> Vec<String> {
        self.menu().unwrap_or_default().into_iter().find(|e| e.label == label).map(|e| e.children.into_iter().map(|c| c.label).collect()).unwrap_or_default()
    }

    /// Wait until the menu satisfies `ok` (panics with the last menu after `limit`).
    pub fn wait_for(&self, what: &str, limit: Duration, ok: impl Fn(&[MenuEntry]) -> bool) {
        let start = Instant::now();
        loop {
            let menu = self.menu();
            if menu.as_deref().is_some_and(&ok) {
                return;
            }
            assert!(start.elapsed() < limit, "the tray menu never showed {what}: {menu:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A stand-in logind (tests/support/logind.py) on a test bus: answers `Inhibit` with a file
/// descriptor like systemd-logind and records each call and when its descriptor was closed.
pub struct Logind {
    server: Child,
    log: std::path::PathBuf,
}

impl Drop for Logind {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

impl Logind {
    /// On the bus at `address` (e.g. a [`NotificationBus`]'s); its record goes into `dir`.
    pub fn start(dir: &std::path::Path, address: &str) -> Logind {
        let log = dir.join("logind.jsonl");
        let server = start_service("logind.py", &[&log.display().to_string()], address, &log, Stdio::inherit(), "the stand-in logind");
        Logind { server, log }
    }

    fn lines(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.log).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    /// Say the machine is about to sleep (`going`: `PrepareForSleep(true)`) or has woken
    /// (`PrepareForSleep(false)`), as logind does; returns once the signal is sent.
    pub fn prepare_for_sleep(&self, going: bool) {
        let sent = |lines: &[serde_json::Value]| lines.iter().filter(|v| v.get("prepare_for_sleep").is_some()).count();
        let before = sent(&self.lines());
        // SAFETY: a signal to the stand-in's own process, which handles both.
        unsafe { libc::kill(self.server.id() as i32, if going { libc::SIGUSR1 } else { libc::SIGUSR2 }) };
        crate::wait_until("the stand-in logind to send PrepareForSleep", crate::secs(10), || sent(&self.lines()) > before);
    }

    /// Every `Inhibit` call's arguments (what, who, why, mode), in order.
    pub fn inhibits(&self) -> Vec<serde_json::Value> {
        self.lines().into_iter().filter_map(|v| v.get("inhibit").cloned()).collect()
    }

    /// How many of the inhibitors handed out have been released (their descriptor closed).
    pub fn released(&self) -> usize {
        self.lines().iter().filter(|v| v.get("released").is_some()).count()
    }
}
