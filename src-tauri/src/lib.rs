//! The Nightshift tray app: a thin Tauri shell over `nightshift-core`.
//!
//! It hosts the engine in-process on Tauri's tokio runtime: the scheduler (unless a
//! `nightshiftctl daemon` already schedules this home), crash recovery, desktop notifications.
//! Users meet it as a status icon (idle / running / attention) with a menu, and as finish
//! notifications.
//!
//! Two processes of this one binary: the **resident** process (engine, scheduler, notifications,
//! tray icon and menu) lives all day and never loads a webview; the **window** is a process of its
//! own ([`window`], started by [`window_host`] when the window should appear, talking to the
//! resident over a pipe: [`bridge`]) that exits when the window is closed, taking all of WebKit's
//! memory and processes with it.

mod bridge;
mod face;
#[cfg(all(test, unix))]
mod ipc_tests;
mod relogin;
pub mod tray;
mod tray_shell;
mod window;
mod window_host;

use nightshift_core::engine::NotTaken;
use nightshift_core::{Engine, EngineEvent, EngineOptions, Home, RecoveryMode, Scheduler, SchedulerLock};
use nightshift_desktop::DesktopNotifier;
use std::sync::{Arc, Mutex};
use tauri::{AppHandle, Manager, RunEvent, Runtime};
use tray_shell::{install_tray, on_menu, refresh_tray, run_now};
use window_host::WindowHost;

/// What the shell keeps: the engine, and who schedules this home if not us.
pub struct AppState {
    pub engine: Engine,
    pub scheduled_elsewhere: Mutex<Option<String>>,
    /// This app runs the scheduler now (false while starting, on a damaged database, or when
    /// another process schedules the home).
    pub scheduling: std::sync::atomic::AtomicBool,
    /// The window process, when the window is up.
    pub windows: Arc<WindowHost>,
}

impl AppState {
    pub fn new(engine: Engine) -> AppState {
        AppState { engine, scheduled_elsewhere: Mutex::new(None), scheduling: Default::default(), windows: Default::default() }
    }
}

/// The app's Tauri context (config, embedded pages, icons), made once for both processes.
fn context<R: Runtime>() -> tauri::Context<R> {
    tauri::generate_context!()
}

/// Start in the tray without a window (what Start at login launches).
pub(crate) const MINIMIZED: &str = "--minimized";

/// Quit the running app (asks first when runs are going, like the tray's Quit).
const QUIT: &str = "--quit";

/// `--run-now NAME` on the command line (also sent to the running instance by a second launch).
fn run_now_arg(argv: &[String]) -> Option<String> {
    argv.iter().position(|a| a == "--run-now").and_then(|i| argv.get(i + 1)).cloned()
}

pub fn run() {
    // A run's wrapper asking this binary to scrub its logs (before anything else is set up).
    nightshift_core::runner::scrub::serve_wrapper_request();
    // Before any thread exists: the resident lives all day (see `allocator`).
    nightshift_core::allocator::limit_arenas();
    init_tracing();
    let argv: Vec<String> = std::env::args().collect();
    if let Some(i) = argv.iter().position(|a| a == window::FLAG) {
        let open = argv.get(i + 1).and_then(|a| serde_json::from_str(a).ok()).unwrap_or_default();
        return window::run(open);
    }
    // The resident never draws with OpenGL, yet GTK on X11 loads the GL driver at start to pick
    // visuals (Mesa with LLVM: ~50 MB resident) unless told not to. The window process, which
    // does draw, gets the user's own setting back.
    let users_gdk_gl = std::env::var_os("GDK_GL");
    std::env::set_var("GDK_GL", "disable");
    let home = match Home::from_env().and_then(|home| home.bootstrap().map(|b| (home, b))) {
        Ok((home, boot)) => {
            if boot.created {
                tracing::info!(home = %home.config_dir().display(), "first launch: created a home with example routines");
            }
            home
        }
        Err(e) => {
            eprintln!("error: {}", e.message);
            std::process::exit(2);
        }
    };

    let app = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, argv, _cwd| {
            // A second launch: quit or run a routine if asked, else bring the window up.
            if argv.iter().any(|a| a == QUIT) {
                return on_menu(app, "quit");
            }
            match run_now_arg(&argv) {
                Some(name) => run_now(app, name),
                None => show_window(app),
            }
        }))
        .plugin(tauri_plugin_autostart::init(tauri_plugin_autostart::MacosLauncher::LaunchAgent, Some(vec![MINIMIZED])))
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        .setup(move |app| {
            if argv.iter().any(|a| a == QUIT) {
                // Nothing to quit: this is the only instance (a running one would have got the request).
                eprintln!("Nightshift is not running.");
                std::process::exit(0);
            }
            let engine = match Engine::open(EngineOptions::new(home).scrubbing_with_this_binary()) {
                Ok(engine) => engine,
                Err(e) => {
                    cannot_start(app.handle(), &e.message);
                    return Ok(());
                }
            };
            let handle = app.handle().clone();
            let on_open: nightshift_desktop::OpenRun = Arc::new(move |run_id: String| show(&handle, bridge::Open::Run(run_id)));
            // The engine spawns its listeners on Tauri's tokio runtime.
            let runtime = tauri::async_runtime::handle();
            let _entered = runtime.inner().enter();
            engine.enable_notifications(Arc::new(DesktopNotifier::new(Some(notification_icon(app.handle())), Some(on_open))));
            engine.enable_webhooks();
            app.manage(AppState { windows: Arc::new(WindowHost::new(users_gdk_gl)), ..AppState::new(engine.clone()) });
            install_tray(app.handle())?;
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move { run_engine(handle, engine).await });
            quit_on_sigterm(app.handle());
            // Started at login: straight to the tray. Otherwise the user launched it: show the window.
            if !argv.iter().any(|a| a == MINIMIZED) {
                show_window(app.handle());
            }
            if let Some(name) = run_now_arg(&argv) {
                run_now(app.handle(), name);
            }
            Ok(())
        })
        .build(context())
        .unwrap_or_else(|e| {
            eprintln!("error: Nightshift could not start: {e}");
            std::process::exit(1);
        });
    app.run(|app, event| match event {
        // Only Quit (an explicit exit code) ends the app; it has no window of its own to close.
        RunEvent::ExitRequested { code: None, api, .. } => api.prevent_exit(),
        // Quit closes the window too (its process would see the pipe close anyway).
        RunEvent::Exit => {
            if let Some(state) = app.try_state::<AppState>() {
                state.windows.close();
            }
        }
        _ => {}
    });
}

/// Recovery, the scheduler (if this home is not scheduled elsewhere) and tray updates from events.
async fn run_engine<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    match engine.recover(RecoveryMode::Adopt).await {
        Ok(ids) if !ids.is_empty() => tracing::info!(count = ids.len(), "settled or re-adopted runs left by a previous engine"),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "crash recovery failed"),
    }
    forward_events_to_window(&app, &engine);
    let mut events = engine.subscribe();
    let tray_app = app.clone();
    tauri::async_runtime::spawn(async move {
        refresh_tray(&tray_app).await;
        loop {
            match events.recv().await {
                Ok(EngineEvent::RunProgress { .. }) => continue,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    // Coalesce bursts (a catch-up pass emits many events at once).
                    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
                    while events.try_recv().is_ok() {}
                    refresh_tray(&tray_app).await;
                }
                Err(_) => return,
            }
        }
    });
    // Never schedule on a damaged database: the app stays a viewer and says why — in its log,
    // the tray (attention, the sentence atop the menu) and the window's header.
    if let Err(e) = engine.check_database() {
        tracing::error!("{}", e.message);
        announce_state(&app).await;
        return;
    }
    match SchedulerLock::take(engine.home(), "the Nightshift app") {
        Ok(lock) => {
            app.state::<AppState>().scheduling.store(true, std::sync::atomic::Ordering::SeqCst);
            announce_state(&app).await;
            // The first pass now, so what start-up allocated and dropped is handed back before
            // the app settles into idling (as the daemon does).
            let scheduler = Scheduler::new(engine.clone());
            if let Err(e) = scheduler.tick().await {
                tracing::warn!(error = %e, "the first scheduler pass failed; the loop retries");
            }
            nightshift_core::allocator::release_freed();
            scheduler.run(Arc::new(tokio::sync::Notify::new())).await;
            app.state::<AppState>().scheduling.store(false, std::sync::atomic::Ordering::SeqCst);
            drop(lock);
        }
        Err(NotTaken::Held { holder }) => {
            // A daemon schedules this home: this app views and controls (Run now still works).
            tracing::warn!("{holder} schedules this home; the app views and controls it");
            *app.state::<AppState>().scheduled_elsewhere.lock().unwrap_or_else(|e| e.into_inner()) = Some(holder);
            announce_state(&app).await;
        }
        Err(NotTaken::Failed(e)) => {
            // An unusable data folder: not scheduling, and the storage trouble is a problem the
            // tray and the window show.
            tracing::error!("cannot schedule: {}", e.message);
            announce_state(&app).await;
        }
    }
}

/// The window's one event channel: every engine event as it happens (`{"type": "run_started", …}`),
/// so History turns rows from queued to running to final without a reload and nothing polls.
pub const WINDOW_EVENT: &str = "engine";

/// Tell the window (its process, when one is up) and the tray that the engine's state changed
/// (scheduling here or elsewhere, or unusable); the window reads `engine_state` again.
async fn announce_state<R: Runtime>(app: &AppHandle<R>) {
    app.state::<AppState>().windows.emit(WINDOW_EVENT, || Some(serde_json::json!({ "type": "engine_state" })));
    refresh_tray(app).await;
}

fn forward_events_to_window<R: Runtime>(app: &AppHandle<R>, engine: &Engine) {
    let mut events = engine.subscribe();
    let windows = Arc::clone(&app.state::<AppState>().windows);
    tauri::async_runtime::spawn(async move {
        loop {
            match events.recv().await {
                Ok(event) => windows.emit(WINDOW_EVENT, || serde_json::to_value(&event).ok()),
                // The window missed some: it reloads what it shows.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => windows.resync(),
                Err(_) => return,
            }
        }
    });
}

fn notification_icon<R: Runtime>(app: &AppHandle<R>) -> std::path::PathBuf {
    app.path()
        .resource_dir()
        .ok()
        .map(|d| d.join("icons/notification.png"))
        .filter(|p| p.exists())
        .unwrap_or_else(DesktopNotifier::bundled_icon)
}

/// Show the window (in a window process of its own: [`window_host`]).
pub fn show_window<R: Runtime>(app: &AppHandle<R>) {
    show(app, bridge::Open::Front);
}

/// Show the window with `open`: a run, the re-login panel.
pub(crate) fn show<R: Runtime>(app: &AppHandle<R>, open: bridge::Open) {
    let state = app.state::<AppState>();
    let backend = window_host::Backend {
        engine: state.engine.clone(),
        face: Arc::new(face::AppFace(app.clone())),
        runtime: tauri::async_runtime::handle().inner().clone(),
        exe: window_host::this_binary(),
    };
    state.windows.open(&backend, open);
}

/// SIGTERM (a package upgrade or removal asking it to quit, a session ending, `kill`) quits like the
/// tray's Quit without the question: runs keep going in their own process groups and the next start
/// picks them up; the scheduler lock and the tray item are released on the way out.
fn quit_on_sigterm<R: Runtime>(app: &AppHandle<R>) {
    #[cfg(unix)]
    {
        let app = app.clone();
        tauri::async_runtime::spawn(async move {
            let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else { return };
            if term.recv().await.is_some() {
                tracing::info!("SIGTERM: quitting");
                app.exit(0);
            }
        });
    }
}

/// The home cannot be opened (a damaged database, a read-only or full disk): say which file,
/// what is wrong and what to do — on stderr and in a dialog, since a tray app started at login has
/// no terminal — and quit when it is closed (exit code 2, as `nightshiftctl`).
pub const CANNOT_START_TITLE: &str = "Nightshift cannot start";

fn cannot_start<R: Runtime>(app: &AppHandle<R>, message: &str) {
    use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
    tracing::error!("{message}");
    eprintln!("error: Nightshift could not start: {message}");
    let app2 = app.clone();
    app.dialog()
        .message(message)
        .title(CANNOT_START_TITLE)
        .kind(MessageDialogKind::Error)
        .buttons(MessageDialogButtons::OkCustom("Quit".into()))
        .show(move |_| app2.exit(2));
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NIGHTSHIFT_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use nightshift_core::run::{RunStatus, Trigger};
    use nightshift_core::records::RunQuery;

    fn app_with_engine(home: &std::path::Path) -> (tauri::App<tauri::test::MockRuntime>, Engine) {
        let home = Home::at(home);
        home.bootstrap().unwrap();
        let engine = Engine::open(EngineOptions::new(home)).unwrap();
        let app = tauri::test::mock_builder().build(tauri::test::mock_context(tauri::test::noop_assets())).unwrap();
        app.manage(AppState::new(engine.clone()));
        (app, engine)
    }

    #[test]
    fn pause_and_resume_from_the_menu() {
        let dir = tempfile::tempdir().unwrap();
        let (app, engine) = app_with_engine(dir.path());
        on_menu(app.handle(), "pause");
        assert!(engine.store().global_paused().unwrap());
        on_menu(app.handle(), "resume");
        assert!(!engine.store().global_paused().unwrap());
    }

    #[test]
    fn run_now_from_the_menu_starts_the_routine_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (app, engine) = app_with_engine(dir.path());
        on_menu(app.handle(), "run:hello");
        let settled = || engine.store().list_runs(&RunQuery { limit: 5, ..Default::default() }).unwrap().runs.into_iter().next().filter(|r| r.status.is_final());
        nightshift_testkit::wait_until("Run now to start the routine and settle it", std::time::Duration::from_secs(20), || settled().is_some());
        let r = settled().unwrap();
        assert_eq!((r.routine.as_str(), r.trigger, r.status), ("hello", Trigger::Manual, RunStatus::Completed));
    }

    #[test]
    fn second_launch_arguments() {
        let argv: Vec<String> = ["nightshift", "--run-now", "pr-review"].iter().map(|s| s.to_string()).collect();
        assert_eq!(run_now_arg(&argv).as_deref(), Some("pr-review"));
        assert_eq!(run_now_arg(&["nightshift".to_string()]), None);
    }
}
