//! The Linux packages as a user meets them. `scripts/package.sh` builds them into `dist/` (and
//! `scripts/test.sh` runs this with `NIGHTSHIFT_PACKAGES=dist`): lintian and rpmlint find no
//! errors; the .deb installs with apt (its dependencies resolved) and puts the app and the CLI in
//! /usr/bin (and no other binary) with a .desktop entry and the icons in every size; the
//! **installed** app, started from the entry's `Exec` line under Xvfb, registers its tray icon
//! (read over D-Bus, as a panel does), opens its window as a webview of its own process, and
//! migrates an older home's database; the installed `nightshiftctl` runs a routine; Start at login
//! points at the installed binary; installing a higher version over it asks the running app to
//! quit and keeps the home; removing it leaves no program file behind and the user's data in place.
//! It installs into the machine, so it needs root (CI is root).

mod common;

use common::gui_available;
use nightshift_testkit::dbus::{NotificationBus, TrayHost};
use nightshift_testkit::{secs, wait_until};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Where the packages are, or `None` when this run is told to skip them.
fn packages() -> Option<PathBuf> {
    match std::env::var_os("NIGHTSHIFT_PACKAGES") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var("NIGHTSHIFT_SKIP_PACKAGES").as_deref() == Ok("1") => None,
        None => panic!("no packages to test: run scripts/package.sh and set NIGHTSHIFT_PACKAGES=dist (scripts/test.sh does), or NIGHTSHIFT_SKIP_PACKAGES=1"),
    }
}

fn is_root() -> bool {
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert_eq!(std::env::var("NIGHTSHIFT_SKIP_ROOT_TESTS").as_deref(), Ok("1"), "installing packages needs root (CI runs as root); NIGHTSHIFT_SKIP_ROOT_TESTS=1 skips it");
    false
}

/// The one file with `ext` directly in `dir`.
fn one(dir: &Path, ext: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == ext)).collect();
    assert_eq!(found.len(), 1, "one .{ext} in {}: {found:?}", dir.display());
    found.into_iter().next().unwrap()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

fn apt(args: &[&str]) -> String {
    run(Command::new("apt-get").args(["-y", "-q", "--no-install-recommends"]).args(args).env("DEBIAN_FRONTEND", "noninteractive"))
}

fn installed_version() -> Option<String> {
    let out = Command::new("dpkg-query").args(["-W", "-f", "${Status} ${Version}", "nightshift"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.starts_with("install ok installed").then(|| text.rsplit(' ').next().unwrap_or_default().to_string())
}

fn purge() {
    let _ = Command::new("dpkg").args(["--purge", "nightshift"]).env("DEBIAN_FRONTEND", "noninteractive").output();
}

/// Purges the package when dropped: the machine is left as it was, also when the test fails.
struct PurgeAtEnd;
impl Drop for PurgeAtEnd {
    fn drop(&mut self) {
        purge();
    }
}

fn alive(child: &mut Child) -> bool {
    child.try_wait().unwrap().is_none()
}

/// The installed app as the desktop starts it: the `.desktop` entry's `Exec` line (field codes
/// such as %U dropped), run through the shell with the test's home, bus and config dirs.
fn start_from_desktop_entry(exec: &str, home: &Path, user: &Path, bus: &str) -> Child {
    let line: Vec<&str> = exec.split_whitespace().filter(|w| !w.starts_with('%')).collect();
    Command::new("sh")
        .arg("-c")
        .arg(format!("exec {}", line.join(" ")))
        .env("NIGHTSHIFT_HOME", home)
        .env("HOME", user)
        .env("XDG_CONFIG_HOME", user.join(".config"))
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .env("NO_AT_BRIDGE", "1")
        .env("NIGHTSHIFT_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(user.join("app.log")).unwrap())
        .spawn()
        .unwrap()
}

/// A home as an older Nightshift left it: a database at schema 5 (before the routine+status
/// index and the routine-name index) with one finished run.
fn older_home(home: &Path) -> PathBuf {
    nightshift_core::Home::at(home).bootstrap().unwrap();
    std::fs::write(home.join("routines/announced.yaml"), "schedule: \"0 3 1 1 *\"\ncommand: echo announced\nnotify: always\n").unwrap();
    let db = home.join("nightshift.db");
    drop(nightshift_core::store::Store::open(&db).unwrap());
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        // What migrations 6 to 28 added, undone: the home of a release with schema 5 (a new
        // migration is undone here too, or the installed app finds its table already there).
        "DROP INDEX runs_queue; DROP TABLE presence; DROP TABLE routine_events; DROP INDEX runs_usage; DROP INDEX runs_slot_facts; DROP INDEX runs_unpruned;
         DROP INDEX runs_by_routine_status; DROP TABLE routine_files;
         DROP INDEX runs_with_worktree; ALTER TABLE runs DROP COLUMN changes; ALTER TABLE runs DROP COLUMN worktree;
         ALTER TABLE runs DROP COLUMN input_tokens; ALTER TABLE runs DROP COLUMN output_tokens;
         ALTER TABLE runs DROP COLUMN cache_read_tokens; ALTER TABLE runs DROP COLUMN cache_write_tokens; ALTER TABLE runs DROP COLUMN model;
         ALTER TABLE runs DROP COLUMN pruned_at;
         ALTER TABLE runs DROP COLUMN host; ALTER TABLE runs DROP COLUMN remote; DROP TABLE host_health;
         ALTER TABLE runs DROP COLUMN not_before_ms; ALTER TABLE runs DROP COLUMN wait_for_limit; ALTER TABLE runs DROP COLUMN retried; DROP TABLE secrets; ALTER TABLE runs DROP COLUMN denials; ALTER TABLE runs DROP COLUMN ignore_budget;
         DROP INDEX account_windows_latest; DROP TABLE account_windows;
         ALTER TABLE runs DROP COLUMN premium_requests;
         DROP INDEX event_runs_identity; DROP TABLE github_cursors;
         ALTER TABLE runs DROP COLUMN event; DROP TABLE event_runs; DROP TABLE deliveries; DROP TABLE linear_states;
         ALTER TABLE runs DROP COLUMN remote_url;
         DROP TABLE home_views; DROP TABLE home_told;
         ALTER TABLE runs DROP COLUMN here;
         DROP INDEX mcp_created_by_time; DROP TABLE mcp_created;
         DROP INDEX asks_by_rerun; DROP INDEX asks_open; DROP TABLE asks;
         ALTER TABLE runs DROP COLUMN pull_request; DROP TABLE routine_prs;
         PRAGMA user_version = 5;
         INSERT INTO runs (id, routine, trigger, agent, sort_ms, started_at, finished_at, status, run_dir)
         VALUES ('old-run-0000000000000000', 'hello', 'manual', 'command', 1, '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', 'completed', '/nonexistent');",
    )
    .unwrap();
    db
}

fn schema_version(db: &Path) -> i64 {
    rusqlite::Connection::open(db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap()
}

#[test]
fn the_packages_lint_clean() {
    let Some(dir) = packages() else { return };
    let (deb, rpm) = (one(&dir, "deb"), one(&dir, "rpm"));
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    let sizes = serde_json::json!({ "deb_bytes": size(&deb), "rpm_bytes": size(&rpm), "nightshiftctl_bytes": size(&dir.join("stage/nightshiftctl")) });
    std::fs::write(common::artifacts().join("package-sizes.json"), sizes.to_string()).unwrap();
    let lintian = Command::new("lintian").args(["--fail-on", "error", "--no-tag-display-limit"]).arg(&deb).output().expect("lintian (apt: lintian)");
    let said = String::from_utf8_lossy(&lintian.stdout).to_string();
    std::fs::write(common::artifacts().join("lintian.txt"), &said).unwrap();
    assert!(lintian.status.success(), "lintian reports errors on {}:\n{said}", deb.display());
    assert!(!said.contains("no-manual-page"), "both programs have their manual page:\n{said}");
    // With the filters in packaging/rpmlint.toml (tags Tauri's bundler cannot write; each says why).
    let filters = concat!(env!("CARGO_MANIFEST_DIR"), "/packaging/rpmlint.toml");
    let rpmlint = Command::new("rpmlint").args(["-c", filters]).arg(&rpm).output().expect("rpmlint (apt: rpmlint)");
    let said = String::from_utf8_lossy(&rpmlint.stdout).to_string();
    std::fs::write(common::artifacts().join("rpmlint.txt"), &said).unwrap();
    assert!(said.contains(" 0 errors"), "rpmlint reports errors on {}:\n{said}", rpm.display());
    // The .rpm holds the same programs, entry and icons as the .deb.
    let files = run(Command::new("rpm").args(["-qlp"]).arg(&rpm));
    for f in [
        "/usr/bin/nightshift",
        "/usr/bin/nightshiftctl",
        "/usr/share/applications/Nightshift.desktop",
        "/usr/share/icons/hicolor/512x512/apps/nightshift.png",
        "/usr/share/man/man1/nightshift.1.gz",
        "/usr/share/man/man1/nightshiftctl.1.gz",
        "/usr/share/man/man1/nightshiftctl-run.1.gz",
        "/usr/share/bash-completion/completions/nightshiftctl",
        "/usr/share/zsh/site-functions/_nightshiftctl",
        "/usr/share/fish/vendor_completions.d/nightshiftctl.fish",
    ] {
        assert!(files.lines().any(|l| l == f), "{f} in the rpm:\n{files}");
    }
    assert!(!files.contains("nightshift-window"), "one app, no window binary:\n{files}");
    let requires = run(Command::new("rpm").args(["-qpR"]).arg(&rpm));
    for lib in ["libwebkit2gtk-4.1.so.0()(64bit)", "libgtk-3.so.0()(64bit)", "libayatana-appindicator3.so.1()(64bit)", "bubblewrap"] {
        assert!(requires.contains(lib), "{lib} in Requires: {requires}");
    }
}

#[test]
fn the_deb_installs_starts_upgrades_and_removes_cleanly() {
    let Some(dir) = packages() else { return };
    if !is_root() || !gui_available() {
        return;
    }
    let deb = one(&dir, "deb");
    let upgrade_dir = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_dir() && p.file_name().is_some_and(|n| n != "stage")).expect("a higher version in a subdirectory (scripts/package.sh --rebundle VERSION)");
    let upgrade = one(&upgrade_dir, "deb");
    purge(); // from a machine without it
    let _purge = PurgeAtEnd;

    // --- Install: apt resolves the declared dependencies.
    apt(&["install", deb.to_str().unwrap()]);
    let first = installed_version().expect("installed");
    let files = run(Command::new("dpkg").args(["-L", "nightshift"]));
    for f in ["/usr/bin/nightshift", "/usr/bin/nightshiftctl", "/usr/share/applications/Nightshift.desktop", "/usr/share/doc/nightshift/copyright"] {
        assert!(files.lines().any(|l| l == f), "{f} installed:\n{files}");
    }
    assert!(!files.contains("nightshift-window"), "one app, no window binary:\n{files}");
    // The manual pages render, and bash completes the CLI from the installed script.
    for page in ["/usr/share/man/man1/nightshift.1.gz", "/usr/share/man/man1/nightshiftctl.1.gz", "/usr/share/man/man1/nightshiftctl-routines-new.1.gz"] {
        assert!(files.lines().any(|l| l == page), "{page} installed:\n{files}");
        let shown = Command::new("man").arg("-l").arg(page).env("MANPAGER", "cat").env("MANWIDTH", "100").output().expect("man (apt: man-db)");
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.status.success() && text.contains("SYNOPSIS"), "{page}: {text}{}", String::from_utf8_lossy(&shown.stderr));
    }
    let bash = run(Command::new("bash").args(["--norc", "-c", ". /usr/share/bash-completion/completions/nightshiftctl && complete -p nightshiftctl"]));
    assert!(bash.contains("-F _nightshiftctl nightshiftctl"), "{bash}");
    for size in ["32x32", "64x64", "128x128", "256x256", "512x512"] {
        let icon = format!("/usr/share/icons/hicolor/{size}/apps/nightshift.png");
        assert!(Path::new(&icon).is_file(), "{icon}");
    }
    let depends = run(Command::new("dpkg-query").args(["-W", "-f", "${Depends}", "nightshift"]));
    for d in ["libwebkit2gtk-4.1-0", "libgtk-3-0", "libayatana-appindicator3-1", "bubblewrap"] {
        assert!(depends.contains(d), "{d} in Depends: {depends}");
    }
    let recommends = run(Command::new("dpkg-query").args(["-W", "-f", "${Recommends}", "nightshift"]));
    for r in ["gnome-keyring | kwalletmanager", "xdg-utils", "git"] {
        assert!(recommends.split(", ").any(|x| x == r), "{r} in Recommends: {recommends}");
    }
    let entry = std::fs::read_to_string("/usr/share/applications/Nightshift.desktop").unwrap();
    let exec = entry.lines().find_map(|l| l.strip_prefix("Exec=")).expect("an Exec line").to_string();
    assert!(entry.contains("Icon=nightshift") && entry.contains("Categories=Development;"), "{entry}");

    // --- The installed app, from the menu entry, on an older home: tray icon up, database migrated.
    let tmp = tempfile::tempdir().unwrap();
    let (home, user) = (tmp.path().join("home"), tmp.path().join("user"));
    std::fs::create_dir_all(&user).unwrap();
    let db = older_home(&home);
    let bus = NotificationBus::start(tmp.path(), "record");
    let tray = TrayHost::start(tmp.path(), &bus.address);
    let mut app = start_from_desktop_entry(&exec, &home, &user, &bus.address);
    tray.wait_for("the installed app's tray icon with its routines", Duration::from_secs(30), |m| m.iter().any(|e| e.label == "Run now" && e.children.iter().any(|c| c.label.ends_with("hello"))));
    assert_eq!(std::fs::read_link(format!("/proc/{}/exe", app.id())).unwrap(), Path::new("/usr/bin/nightshift"), "the installed binary runs");
    // Started from the menu, it shows its window: a webview of the installed app itself.
    wait_until("the installed app's window", secs(30), || common::window_pid("Nightshift") == Some(app.id()));
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", app.id())).unwrap();
    assert!(maps.contains("libwebkit2gtk"), "the window's webview is in the app's own process");
    let latest = {
        let fresh = tmp.path().join("fresh.db");
        drop(nightshift_core::store::Store::open(&fresh).unwrap());
        schema_version(&fresh)
    };
    wait_until("the migrations", secs(10), || schema_version(&db) == latest);
    let old_rows: i64 = rusqlite::Connection::open(&db).unwrap().query_row("SELECT count(*) FROM runs WHERE id = 'old-run-0000000000000000'", [], |r| r.get(0)).unwrap();
    assert_eq!(old_rows, 1, "the older history is kept");

    // --- The installed CLI runs a routine (the app schedules; a manual run from the CLI); its
    // finish notification carries the packaged brand icon (not a path on the build machine).
    let out = run(Command::new("/usr/bin/nightshiftctl").args(["run", "announced", "--wait", "--notify"]).env("NIGHTSHIFT_HOME", &home).env("DBUS_SESSION_BUS_ADDRESS", &bus.address));
    assert!(out.contains("completed"), "{out}");
    let shown = bus.wait_for(1, Duration::from_secs(15));
    let icon = shown.first().and_then(|n| n["icon"].as_str()).unwrap_or_default().to_string();
    assert_eq!(icon, "/usr/share/icons/hicolor/256x256/apps/nightshift.png", "{shown:?}");

    // --- Start at login, chosen in the tray, points at the installed binary.
    tray.click(&bus.address, "Start at login");
    let autostart = user.join(".config/autostart/Nightshift.desktop");
    // Whole, not just created (it is created, then written: a look in between reads it empty).
    wait_until("the autostart entry", secs(10), || std::fs::read_to_string(&autostart).is_ok_and(|t| t.contains("\nExec=") && t.trim_end().ends_with("Terminal=false")));
    let login = std::fs::read_to_string(&autostart).unwrap();
    assert!(login.contains("/usr/bin/nightshift") && login.contains("--minimized"), "{login}");

    // --- Upgrade while it runs: the app is asked to quit first; the home is kept.
    apt(&["install", upgrade.to_str().unwrap()]);
    let second = installed_version().expect("still installed");
    assert_ne!(first, second, "a higher version was installed");
    wait_until("the running app to quit for the upgrade", secs(15), || !alive(&mut app));
    assert!(home.join("routines/hello.yaml").is_file(), "routines kept");
    let runs: i64 = rusqlite::Connection::open(&db).unwrap().query_row("SELECT count(*) FROM runs", [], |r| r.get(0)).unwrap();
    assert!(runs >= 2, "history kept across the upgrade: {runs} runs");
    let mut app = start_from_desktop_entry(&exec, &home, &user, &bus.address);
    let before = std::fs::read_to_string(tmp.path().join("tray.jsonl")).unwrap().lines().count();
    wait_until("the upgraded app's tray icon", secs(30), || {
        std::fs::read_to_string(tmp.path().join("tray.jsonl")).unwrap().lines().skip(before).any(|l| l.contains("\"Run now\""))
    });

    // --- Remove while it runs: it quits, no program file stays, the user's data does.
    let listed: Vec<String> = run(Command::new("dpkg").args(["-L", "nightshift"])).lines().map(str::to_string).filter(|p| Path::new(p).is_file()).collect();
    assert!(listed.len() >= 8, "{listed:?}");
    apt(&["remove", "nightshift"]);
    wait_until("the running app to quit for the removal", secs(15), || !alive(&mut app));
    let left: Vec<&String> = listed.iter().filter(|p| Path::new(p).exists()).collect();
    assert!(left.is_empty(), "program files left behind: {left:?}");
    assert!(installed_version().is_none());
    assert!(db.is_file() && home.join("routines/hello.yaml").is_file() && autostart.is_file(), "the user's data stays");
}
