//! The running app: its engine, who schedules the home, and what the tray's clicks, a second
//! launch and a notification's "Open" do. What it asks of the desktop — the window, the tray, a
//! dialog, quitting — goes through [`Desk`]: the Tauri app ([`crate::desk`]) in the product, a
//! recorder in the tests here, which need no display.

use crate::open::Open;
use crate::tray::{TrayFacts, TrayView};
use crate::{relogin, tray};
use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::Engine;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What the shell asks of the desktop it runs on. Everything may be called from any thread.
pub trait Desk: Send + Sync {
    /// Show the window with `open`: the one that is up, else a new one.
    fn show(&self, open: Open);
    /// An event for the page (`{"type": …}` on the window's one channel), if a window is up.
    fn emit(&self, event: &dyn Fn() -> Option<Value>);
    /// Show `view` in the tray (icon, tooltip, menu).
    fn show_in_tray(&self, view: TrayView);
    /// Ask `text` under `title` with the buttons `yes` and `no`; `answer(true)` only for `yes`.
    fn ask(&self, title: &str, text: &str, yes: &str, no: &str, answer: Box<dyn FnOnce(bool) + Send>);
    /// Whether Start at login is on, and turning it over.
    fn autostart(&self) -> bool;
    fn toggle_autostart(&self) -> Result<(), String>;
    /// Open a web link or a file in the system's handler.
    fn open_external(&self, what: &str) -> Result<(), String>;
    /// Quit with this exit code.
    fn exit(&self, code: i32);
}

/// The app's state, shared by the tray, the engine's tasks and the window's commands.
pub struct Shell {
    pub engine: Engine,
    /// Who schedules this home, when another process does (a `nightshiftctl daemon`).
    scheduled_elsewhere: Mutex<Option<String>>,
    /// This app runs the scheduler now (false while starting, on a damaged database, or when
    /// another process schedules the home).
    scheduling: AtomicBool,
    runtime: tokio::runtime::Handle,
    desk: Arc<dyn Desk>,
    /// Other homes as the tray shows them, by name (kept from their events: [`crate::homes_view`]).
    homes: Mutex<std::collections::BTreeMap<String, tray::HomeLine>>,
}

impl Shell {
    pub fn new(engine: Engine, runtime: tokio::runtime::Handle, desk: Arc<dyn Desk>) -> Arc<Shell> {
        Arc::new(Shell { engine, scheduled_elsewhere: Mutex::new(None), scheduling: AtomicBool::new(false), runtime, desk, homes: Mutex::default() })
    }

    pub fn scheduled_elsewhere(&self) -> Option<String> {
        self.scheduled_elsewhere.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set_scheduled_elsewhere(&self, holder: Option<String>) {
        *self.scheduled_elsewhere.lock().unwrap_or_else(|e| e.into_inner()) = holder;
    }

    pub fn scheduling(&self) -> bool {
        self.scheduling.load(Ordering::SeqCst)
    }

    pub(crate) fn set_scheduling(&self, on: bool) {
        self.scheduling.store(on, Ordering::SeqCst);
    }

    /// Set what the tray shows of another home (`None`: it is no longer listed).
    pub(crate) fn set_home_line(&self, name: &str, line: Option<tray::HomeLine>) {
        let mut homes = self.homes.lock().unwrap_or_else(|e| e.into_inner());
        match line {
            Some(line) => homes.insert(name.to_string(), line),
            None => homes.remove(name),
        };
    }

    /// The other homes the tray shows.
    pub(crate) fn home_names(&self) -> Vec<String> {
        self.homes.lock().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect()
    }

    /// What the tray shows of another home now.
    pub(crate) fn home_line(&self, name: &str) -> Option<tray::HomeLine> {
        self.homes.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    pub(crate) fn desk(&self) -> &Arc<dyn Desk> {
        &self.desk
    }

    pub(crate) fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    /// Quit the app (runs keep going in their own process groups; the next start picks them up).
    pub fn exit(&self, code: i32) {
        self.desk.exit(code);
    }

    /// Show the window with `open`.
    pub fn show(&self, open: Open) {
        self.desk.show(open);
    }

    /// Start a routine now (a manual run never waits silently: it starts, or is visibly queued).
    pub fn run_now(&self, name: String) {
        let engine = self.engine.clone();
        self.runtime.spawn(async move {
            if let Err(e) = engine.run_now(&name, Trigger::Manual).await {
                tracing::error!(routine = %name, "Run now failed: {}", e.message);
            }
        });
    }

    /// Start a routine of another home now, there (its engine runs it; its finish is told here
    /// by the homes' viewer).
    pub fn run_there(&self, home: String, name: String) {
        let engine = self.engine.clone();
        self.runtime.spawn(async move {
            let started = async {
                let client = nightshift_core::homes::client(&engine, &home)?;
                client.call::<String>("run_now", serde_json::json!({ "name": name })).await
            };
            match started.await {
                Ok(id) => tracing::info!(home = %home, routine = %name, run = %id, "started on another home"),
                Err(e) => tracing::error!(home = %home, routine = %name, "Run now there failed: {}", e.message),
            }
        });
    }

    /// A second launch of `nightshift` handed its arguments here: quit or run a routine if asked,
    /// else bring the window up.
    pub fn second_launch(self: &Arc<Self>, argv: &[String]) {
        if argv.iter().any(|a| a == crate::QUIT) {
            return self.on_menu("quit");
        }
        match crate::run_now_arg(argv) {
            Some(name) => self.run_now(name),
            None => self.show(Open::Front),
        }
    }

    /// Gather what the tray shows (reads the keychain for account health: off the UI thread).
    pub async fn tray_facts(self: &Arc<Self>) -> TrayFacts {
        let autostart = self.desk.autostart();
        // The same read the window's header, its Routines view and `nightshiftctl` use.
        let Ok(glance) = nightshift_core::api::glance(&self.engine, &**self).await else { return TrayFacts::default() };
        let routines = glance
            .routines
            .into_iter()
            .map(|r| tray::RoutineLine { last: r.last_run.map(|l| l.status).filter(|s| *s != RunStatus::Missed), next: r.next_fire, valid: r.valid, quiet: r.quiet, push_failed: r.push_failed, name: r.name })
            .collect();
        let state = glance.state;
        TrayFacts {
            running: state.running,
            queued: state.queued,
            paused: state.paused,
            scheduled_elsewhere: state.scheduled_elsewhere,
            routines,
            accounts: glance.accounts,
            autostart,
            problems: state.problems,
            homes: self.homes.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect(),
            asks: glance.asks.iter().map(|a| (a.run_id.clone(), a.routine.clone(), nightshift_core::engine::ask_words(&a.tool, &a.input))).collect(),
        }
    }

    /// Gather what the tray shows and show it (off the UI thread: it reads the keychain).
    pub async fn refresh_tray(self: &Arc<Self>) {
        let view = tray::view(&self.tray_facts().await);
        self.desk.show_in_tray(view);
    }

    /// Tell the window and the tray that the engine's state changed (scheduling here or
    /// elsewhere, or unusable); the window reads `engine_state` again.
    pub(crate) async fn announce_state(self: &Arc<Self>) {
        self.desk.emit(&|| Some(serde_json::json!({ "type": "engine_state" })));
        self.refresh_tray().await;
    }

    /// A tray menu click.
    pub fn on_menu(self: &Arc<Self>, id: &str) {
        if let Some(run) = id.strip_prefix(tray::ASK_PREFIX) {
            return self.show(Open::Run(run.to_string()));
        }
        if let Some(name) = id.strip_prefix(tray::RUN_PREFIX) {
            return self.run_now(name.to_string());
        }
        if let Some((home, name)) = id.strip_prefix(tray::HOME_RUN_PREFIX).and_then(|rest| rest.split_once(':')) {
            return self.run_there(home.to_string(), name.to_string());
        }
        if let Some((home, email)) = id.strip_prefix(tray::HOME_RELOGIN_PREFIX).and_then(|rest| rest.split_once(':')) {
            // The window shows that home and asks it for the login command (its own machine's
            // terminal cannot be opened from here: the command is said, to run there).
            return self.show(Open::Relogin { account: email.to_string(), command: String::new(), home: Some(home.to_string()) });
        }
        if let Some(email) = id.strip_prefix(tray::RELOGIN_PREFIX) {
            let Ok(account) = self.engine.account(email) else { return };
            if let Err(command) = relogin::open_terminal(&account) {
                // No terminal here: the window shows the exact command (and a field for a setup token).
                self.show(Open::Relogin { account: email.to_string(), command, home: None });
            }
            return;
        }
        match id {
            "pause" | "resume" => {
                if let Err(e) = self.engine.set_paused(id == "pause") {
                    tracing::error!("{}", e.message);
                }
            }
            "autostart" => {
                if let Err(e) = self.desk.toggle_autostart() {
                    tracing::error!("could not change Start at login: {e}");
                }
                let me = Arc::clone(self);
                self.runtime.spawn(async move { me.refresh_tray().await });
            }
            "open" => self.show(Open::Front),
            "quit" => self.quit_or_ask(),
            _ => {}
        }
    }

    /// Runs keep going in their own process groups and are re-adopted at the next start; still,
    /// quitting while they run is worth a question.
    fn quit_or_ask(self: &Arc<Self>) {
        let running = self.engine.running_count().unwrap_or(0);
        if running == 0 {
            return self.exit(0);
        }
        let text = format!(
            "{running} run{} still going. If you quit, {} running and Nightshift picks {} up (records, notifications) at its next start.",
            if running == 1 { " is" } else { "s are" },
            if running == 1 { "it keeps" } else { "they keep" },
            if running == 1 { "it" } else { "them" },
        );
        let me = Arc::clone(self);
        self.desk.ask(QUIT_TITLE, &text, "Quit", "Keep Nightshift running", Box::new(move |quit| if quit { me.exit(0) }));
    }
}

/// The app as the host of the window's commands: the commands are defined once in
/// `nightshift_core::api` (the same definitions answer `nightshiftctl serve`'s HTTP); what differs
/// per host — who schedules, opening a terminal, a link or a file — is this.
impl nightshift_core::api::Face for Shell {
    fn scheduled_elsewhere(&self) -> Option<String> {
        Shell::scheduled_elsewhere(self)
    }
    fn scheduling(&self) -> bool {
        Shell::scheduling(self)
    }
    fn open_terminal(&self, account: &nightshift_core::accounts::Account) -> Result<String, String> {
        relogin::open_terminal(account)
    }
    fn open_link(&self, url: &str) -> Result<(), nightshift_core::Error> {
        self.desk.open_external(url).map_err(|e| nightshift_core::Error::new(nightshift_core::ErrorCode::Io, format!("could not open the link in a browser: {e}")))
    }
    fn open_file(&self, path: &std::path::Path) -> Result<(), nightshift_core::Error> {
        self.desk.open_external(&path.to_string_lossy()).map_err(|e| nightshift_core::Error::new(nightshift_core::ErrorCode::Io, format!("could not open {}: {e}; open it by hand", path.display())))
    }
}

/// Who schedules, for the callers of `[serve] listen` (`nightshift_core::serve`).
impl nightshift_core::serve::Scheduling for Shell {
    fn scheduled_elsewhere(&self) -> Option<String> {
        Shell::scheduled_elsewhere(self)
    }
    fn scheduling(&self) -> bool {
        Shell::scheduling(self)
    }
}

/// The question Quit asks while runs are going.
pub const QUIT_TITLE: &str = "Quit Nightshift?";

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nightshift_core::records::RunQuery;
    use nightshift_core::run::RunStatus;

    /// A desktop that records what it was asked (and answers a question with `answer`).
    #[derive(Default)]
    pub struct Recorder {
        pub shown: Mutex<Vec<Open>>,
        pub asked: Mutex<Vec<String>>,
        pub exits: Mutex<Vec<i32>>,
        pub answer: bool,
    }

    impl Desk for Recorder {
        fn show(&self, open: Open) {
            self.shown.lock().unwrap().push(open);
        }
        fn emit(&self, _: &dyn Fn() -> Option<Value>) {}
        fn show_in_tray(&self, _: TrayView) {}
        fn ask(&self, title: &str, text: &str, _: &str, _: &str, answer: Box<dyn FnOnce(bool) + Send>) {
            self.asked.lock().unwrap().push(format!("{title} {text}"));
            answer(self.answer);
        }
        fn autostart(&self) -> bool {
            false
        }
        fn toggle_autostart(&self) -> Result<(), String> {
            Ok(())
        }
        fn open_external(&self, _: &str) -> Result<(), String> {
            Ok(())
        }
        fn exit(&self, code: i32) {
            self.exits.lock().unwrap().push(code);
        }
    }

    /// A shell on a fresh home (with the example routines), on a desktop that records; the
    /// runtime and the home's folder live as long as it is used.
    pub struct Fixture {
        pub shell: Arc<Shell>,
        pub desk: Arc<Recorder>,
        _runtime: tokio::runtime::Runtime,
        _dir: tempfile::TempDir,
    }

    pub fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        nightshift_core::Home::at(dir.path()).bootstrap().unwrap();
        let engine = nightshift_core::EngineOptions::for_test(dir.path()).open();
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let desk = Arc::new(Recorder::default());
        Fixture { shell: Shell::new(engine, runtime.handle().clone(), desk.clone()), desk, _runtime: runtime, _dir: dir }
    }

    /// The home's latest runs, newest first.
    fn latest_runs(s: &Shell) -> Vec<nightshift_core::run::RunRecord> {
        s.engine.store().list_runs(&RunQuery { limit: 5, ..Default::default() }).unwrap().runs
    }

    #[test]
    fn pause_and_resume_from_the_menu() {
        let f = fixture();
        let s = &f.shell;
        s.on_menu("pause");
        assert!(s.engine.activity().unwrap().paused);
        s.on_menu("resume");
        assert!(!s.engine.activity().unwrap().paused);
    }

    #[test]
    fn run_now_from_the_menu_starts_the_routine_at_once() {
        let f = fixture();
        let s = &f.shell;
        s.on_menu("run:hello");
        let settled = || latest_runs(s).into_iter().next().filter(|r| r.status.is_final());
        nightshift_testkit::wait_until("Run now to start the routine and settle it", std::time::Duration::from_secs(20), || settled().is_some());
        let run = settled().unwrap();
        assert_eq!((run.routine.as_str(), run.trigger, run.status), ("hello", Trigger::Manual, RunStatus::Completed));
    }

    #[test]
    fn a_second_launch_runs_a_routine_quits_or_brings_the_window_up() {
        let f = fixture();
        let s = &f.shell;
        s.second_launch(&["nightshift".into(), "--run-now".into(), "hello".into()]);
        let ran = || latest_runs(s).into_iter().any(|r| r.routine == "hello" && r.trigger == Trigger::Manual);
        nightshift_testkit::wait_until("the handed-over Run now", std::time::Duration::from_secs(20), ran);
        assert!(f.desk.shown.lock().unwrap().is_empty(), "--run-now runs; it does not open the window");
        s.second_launch(&["nightshift".into()]);
        assert_eq!(*f.desk.shown.lock().unwrap(), vec![Open::Front]);
        // Nothing going: --quit quits at once, without a question.
        s.second_launch(&["nightshift".into(), "--quit".into()]);
        assert_eq!(*f.desk.exits.lock().unwrap(), vec![0]);
        assert!(f.desk.asked.lock().unwrap().is_empty());
    }
}
