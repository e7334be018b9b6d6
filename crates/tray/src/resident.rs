//! The running app: its engine, who schedules the home, the window process, and what the tray's
//! clicks and a second launch do. Everything here may be called from any thread; what must happen
//! on the UI thread (the tray, dialogs, quitting) is sent there as a [`UiEvent`].

use crate::bridge::Open;
use crate::window_host::{Backend, WindowHost};
use crate::{autostart, dialog, relogin, tray, tray_shell};
use nightshift_core::run::Trigger;
use nightshift_core::Engine;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tao::event_loop::EventLoopProxy;

/// What the UI thread is asked to do.
pub enum UiEvent {
    /// A tray menu entry was clicked (its id).
    Menu(String),
    /// Run this on the UI thread (tray updates, dialogs).
    Do(Box<dyn FnOnce(&mut Ui) + Send>),
    /// Quit with this exit code.
    Quit(i32),
}

/// What lives on the UI thread: the tray icon and its menu (GTK objects, not `Send`).
#[derive(Default)]
pub struct Ui {
    tray: Option<tray_shell::TrayUi>,
}

impl Ui {
    pub(crate) fn install_tray(&mut self) {
        match tray_shell::TrayUi::install() {
            Ok(tray) => self.tray = Some(tray),
            // The app still runs, notifies and opens its window from a second launch.
            Err(e) => tracing::error!("could not show the tray icon: {e}"),
        }
    }

    pub(crate) fn remove_tray(&mut self) {
        self.tray = None;
    }

    fn show_in_tray(&mut self, view: tray::TrayView) {
        if let Some(tray) = self.tray.as_mut() {
            tray.show(view);
        }
    }
}

/// The app's state, shared by the UI thread, the engine's tasks and the window's pipe.
pub struct Resident {
    pub engine: Engine,
    /// Who schedules this home, when another process does (a `nightshiftctl daemon`).
    scheduled_elsewhere: Mutex<Option<String>>,
    /// This app runs the scheduler now (false while starting, on a damaged database, or when
    /// another process schedules the home).
    scheduling: AtomicBool,
    windows: Arc<WindowHost>,
    runtime: tokio::runtime::Handle,
    /// The way to the UI thread; `None` without one (tests drive the rest without a display).
    ui: Option<Mutex<EventLoopProxy<UiEvent>>>,
}

impl Resident {
    /// `users_gdk_gl`: `GDK_GL` as the user had it (the resident turns GL off for itself only).
    pub fn new(engine: Engine, runtime: tokio::runtime::Handle, ui: Option<EventLoopProxy<UiEvent>>, users_gdk_gl: Option<std::ffi::OsString>) -> Arc<Resident> {
        Arc::new(Resident {
            engine,
            scheduled_elsewhere: Mutex::new(None),
            scheduling: AtomicBool::new(false),
            windows: Arc::new(WindowHost::new(users_gdk_gl)),
            runtime,
            ui: ui.map(Mutex::new),
        })
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

    pub(crate) fn windows(&self) -> &Arc<WindowHost> {
        &self.windows
    }

    pub(crate) fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    fn to_ui(&self, event: UiEvent) {
        match &self.ui {
            Some(proxy) => {
                if proxy.lock().unwrap_or_else(|e| e.into_inner()).send_event(event).is_err() {
                    tracing::debug!("the UI thread has ended");
                }
            }
            None => tracing::debug!("no UI thread to send to"),
        }
    }

    /// Run `task` on the UI thread.
    pub(crate) fn on_ui(&self, task: impl FnOnce(&mut Ui) + Send + 'static) {
        self.to_ui(UiEvent::Do(Box::new(task)));
    }

    /// Quit the app (runs keep going in their own process groups; the next start picks them up).
    pub fn exit(&self, code: i32) {
        self.to_ui(UiEvent::Quit(code));
    }

    /// Show the window with `open` (in a window process of its own: [`WindowHost`]).
    pub fn show(self: &Arc<Self>, open: Open) {
        let backend = Backend {
            engine: self.engine.clone(),
            face: Arc::new(crate::face::ResidentFace(Arc::clone(self))),
            runtime: self.runtime.clone(),
            exe: crate::window_host::window_binary(),
        };
        self.windows.open(&backend, open);
    }

    pub(crate) fn close_window(&self) {
        self.windows.close();
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

    /// Gather what the tray shows and show it (off the UI thread: it reads the keychain).
    pub async fn refresh_tray(self: &Arc<Self>) {
        let view = tray::view(&tray_shell::facts(self).await);
        self.on_ui(move |ui| ui.show_in_tray(view));
    }

    /// Tell the window (its process, when one is up) and the tray that the engine's state changed
    /// (scheduling here or elsewhere, or unusable); the window reads `engine_state` again.
    pub(crate) async fn announce_state(self: &Arc<Self>) {
        self.windows.emit(crate::bridge::WINDOW_EVENT, || Some(serde_json::json!({ "type": "engine_state" })));
        self.refresh_tray().await;
    }

    /// A tray menu click.
    pub fn on_menu(self: &Arc<Self>, id: &str) {
        if let Some(name) = id.strip_prefix(tray::RUN_PREFIX) {
            return self.run_now(name.to_string());
        }
        if let Some(email) = id.strip_prefix(tray::RELOGIN_PREFIX) {
            let Ok(account) = self.engine.account(email) else { return };
            if let Err(command) = relogin::open_terminal(&account) {
                // No terminal here: the window shows the exact command (and a field for a setup token).
                self.show(Open::Relogin { account: email.to_string(), command });
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
                if let Err(e) = autostart::toggle() {
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
        self.on_ui(move |_| {
            dialog::ask("Quit Nightshift?", &text, "Quit", "Keep Nightshift running", move |quit| {
                if quit {
                    me.exit(0);
                }
            })
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nightshift_core::records::RunQuery;
    use nightshift_core::run::RunStatus;

    /// A resident on a fresh home (with the example routines), without a UI thread; the runtime
    /// and the home's folder live as long as it is used.
    struct Fixture {
        resident: Arc<Resident>,
        _runtime: tokio::runtime::Runtime,
        _dir: tempfile::TempDir,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        nightshift_core::Home::at(dir.path()).bootstrap().unwrap();
        let engine = nightshift_core::EngineOptions::for_test(dir.path()).open();
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        Fixture { resident: Resident::new(engine, runtime.handle().clone(), None, None), _runtime: runtime, _dir: dir }
    }

    /// The home's latest runs, newest first.
    fn latest_runs(r: &Resident) -> Vec<nightshift_core::run::RunRecord> {
        r.engine.store().list_runs(&RunQuery { limit: 5, ..Default::default() }).unwrap().runs
    }

    #[test]
    fn pause_and_resume_from_the_menu() {
        let f = fixture();
        let r = &f.resident;
        r.on_menu("pause");
        assert!(r.engine.activity().unwrap().paused);
        r.on_menu("resume");
        assert!(!r.engine.activity().unwrap().paused);
    }

    #[test]
    fn run_now_from_the_menu_starts_the_routine_at_once() {
        let f = fixture();
        let r = &f.resident;
        r.on_menu("run:hello");
        let settled = || latest_runs(r).into_iter().next().filter(|r| r.status.is_final());
        nightshift_testkit::wait_until("Run now to start the routine and settle it", std::time::Duration::from_secs(20), || settled().is_some());
        let run = settled().unwrap();
        assert_eq!((run.routine.as_str(), run.trigger, run.status), ("hello", Trigger::Manual, RunStatus::Completed));
    }

    #[test]
    fn a_second_launch_with_run_now_runs_the_routine() {
        let f = fixture();
        let r = &f.resident;
        r.second_launch(&["nightshift".into(), "--run-now".into(), "hello".into()]);
        let ran = || latest_runs(r).into_iter().any(|r| r.routine == "hello" && r.trigger == Trigger::Manual);
        nightshift_testkit::wait_until("the handed-over Run now", std::time::Duration::from_secs(20), ran);
    }
}
