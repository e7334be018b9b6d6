//! The Nightshift tray app: a thin Tauri shell over `nightshift-core`.
//!
//! It hosts the engine in-process on Tauri's tokio runtime: the scheduler (unless a
//! `nightshiftctl daemon` already schedules this home), crash recovery, desktop notifications.
//! Users meet it as a status icon (idle / running / attention) with a menu, and as finish
//! notifications. Closing the window destroys it (an idle tray app should not keep a webview
//! alive); the app lives on in the tray until Quit.

mod commands;
mod idle;
#[cfg(test)]
mod ipc_tests;
mod relogin;
pub mod tray;

use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::{Engine, EngineEvent, EngineOptions, Home, RecoveryMode, Scheduler, SchedulerLock};
use nightshift_desktop::DesktopNotifier;
use std::sync::{Arc, Mutex};
use tauri::menu::{CheckMenuItem, IsMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Emitter, Manager, RunEvent, Runtime, WebviewUrl, WebviewWindowBuilder};
use tauri_plugin_autostart::ManagerExt;
use tray::{MenuEntry, TrayFacts};

const TRAY_ID: &str = "nightshift";

/// What the shell keeps: the engine, and who schedules this home if not us.
pub struct AppState {
    pub engine: Engine,
    pub scheduled_elsewhere: Mutex<Option<String>>,
    /// This app runs the scheduler now (false while starting, on a damaged database, or when
    /// another process schedules the home).
    pub scheduling: std::sync::atomic::AtomicBool,
}

impl AppState {
    pub fn new(engine: Engine) -> AppState {
        AppState { engine, scheduled_elsewhere: Mutex::new(None), scheduling: Default::default() }
    }
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
    init_tracing();
    let argv: Vec<String> = std::env::args().collect();
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

    let app = with_commands(tauri::Builder::default())
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
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::Destroyed = event {
                #[cfg(target_os = "macos")]
                let _ = window.app_handle().set_activation_policy(tauri::ActivationPolicy::Accessory);
                rest_when_idle(window.app_handle());
            }
        })
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
            let on_open: nightshift_desktop::OpenRun = Arc::new(move |run_id: String| {
                show_window(&handle);
                let _ = handle.emit("open-run", run_id);
            });
            // The engine spawns its listeners on Tauri's tokio runtime.
            let runtime = tauri::async_runtime::handle();
            let _entered = runtime.inner().enter();
            engine.enable_notifications(Arc::new(DesktopNotifier::new(Some(notification_icon(app.handle())), Some(on_open))));
            engine.enable_webhooks();
            app.manage(AppState::new(engine.clone()));
            install_tray(app.handle())?;
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move { run_engine(handle, engine).await });
            quit_on_sigterm(app.handle());
            // Started at login: straight to the tray. Otherwise the user launched it: show the window.
            if argv.iter().any(|a| a == MINIMIZED) {
                release_when_idle(app.handle(), IDLE_AFTER_START);
            } else {
                show_window(app.handle());
            }
            if let Some(name) = run_now_arg(&argv) {
                run_now(app.handle(), name);
            }
            Ok(())
        })
        .build(tauri::generate_context!())
        .unwrap_or_else(|e| {
            eprintln!("error: Nightshift could not start: {e}");
            std::process::exit(1);
        });
    app.run(|_app, event| {
        // Closing the last window keeps the app in the tray; only Quit (an explicit exit code) ends it.
        if let RunEvent::ExitRequested { code: None, api, .. } = event {
            api.prevent_exit();
        }
    });
}

/// The window's commands (their permissions: build.rs and capabilities/main.json).
pub fn with_commands<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    builder
        .invoke_handler(tauri::generate_handler![
            commands::engine_state,
            commands::list_routines,
            commands::run_now,
            commands::set_routine_paused,
            commands::set_paused,
            commands::list_runs,
            commands::get_run,
            commands::read_log,
            commands::cancel_run,
            commands::list_accounts,
            commands::check_account,
            commands::set_token,
            commands::relogin,
            commands::open_link,
            commands::routine_form,
            commands::check_routine_draft,
            commands::create_routine,
            commands::routine_source,
            commands::check_routine_text,
            commands::save_routine_text,
            commands::duplicate_routine,
            commands::rename_routine,
            commands::remove_routine,
            commands::removed_routines,
            commands::restore_routine,
            commands::open_routine_file,
            commands::list_folders,
            commands::push_branch,
            commands::open_workspace,
            commands::routine_why,
            commands::routine_strips,
            commands::usage_report,
            commands::disk_usage,
        ])
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
        let _ = app.emit(WINDOW_EVENT, serde_json::json!({ "type": "engine_state" }));
        refresh_tray(&app).await;
        return;
    }
    match SchedulerLock::acquire(engine.home(), "the Nightshift app") {
        Ok(lock) => {
            app.state::<AppState>().scheduling.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = app.emit(WINDOW_EVENT, serde_json::json!({ "type": "engine_state" }));
            Scheduler::new(engine.clone()).run(Arc::new(tokio::sync::Notify::new())).await;
            app.state::<AppState>().scheduling.store(false, std::sync::atomic::Ordering::SeqCst);
            drop(lock);
        }
        Err(e) => {
            // A daemon schedules this home: this app views and controls (Run now still works).
            tracing::warn!("{}", e.message);
            let who = SchedulerLock::holder(engine.home()).unwrap_or_else(|| "another process".to_string());
            *app.state::<AppState>().scheduled_elsewhere.lock().unwrap_or_else(|e| e.into_inner()) = Some(who);
            let _ = app.emit(WINDOW_EVENT, serde_json::json!({ "type": "engine_state" }));
            refresh_tray(&app).await;
        }
    }
}

/// The window's one event channel: every engine event as it happens (`{"type": "run_started", …}`),
/// so History turns rows from queued to running to final without a reload and nothing polls.
pub const WINDOW_EVENT: &str = "engine";

fn forward_events_to_window<R: Runtime>(app: &AppHandle<R>, engine: &Engine) {
    let mut events = engine.subscribe();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            match events.recv().await {
                Ok(event) => {
                    let _ = app.emit(WINDOW_EVENT, &event);
                }
                // The window missed some: it reloads what it shows.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    let _ = app.emit(WINDOW_EVENT, serde_json::json!({ "type": "resync" }));
                }
                Err(_) => return,
            }
        }
    });
}

/// The window shows only the app's own pages: any other navigation (a link in a report that
/// slipped past everything else, a script setting `location`) is refused. Links open in the
/// system browser through the `open_link` command instead.
fn own_page(url: &tauri::Url) -> bool {
    url.scheme() == "tauri" || url.host_str() == Some("tauri.localhost")
}

fn notification_icon<R: Runtime>(app: &AppHandle<R>) -> std::path::PathBuf {
    app.path()
        .resource_dir()
        .ok()
        .map(|d| d.join("icons/notification.png"))
        .filter(|p| p.exists())
        .unwrap_or_else(DesktopNotifier::bundled_icon)
}

/// How long after the window closed (WebKit finishes tearing the page down) and after a start
/// without a window (startup work done) the app gives back what an idle tray app does not need.
const IDLE_AFTER_CLOSE: std::time::Duration = std::time::Duration::from_secs(3);
const IDLE_AFTER_START: std::time::Duration = std::time::Duration::from_secs(10);

/// The window closed. Once nothing needs this image — no window came back, no run is queued or
/// going (in any process: a run's row must be final first) — restart tray-only ([`idle`]); until
/// then trim, and look again whenever a run finishes.
fn rest_when_idle<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(IDLE_AFTER_CLOSE).await;
        let engine = app.state::<AppState>().engine.clone();
        let mut events = engine.subscribe();
        loop {
            if !app.webview_windows().is_empty() {
                return; // reopened: its own close starts this again
            }
            let open_runs = engine.open_run_count().unwrap_or(usize::MAX);
            if open_runs == 0 && engine.queued().await == 0 {
                #[cfg(target_os = "linux")]
                {
                    let err = idle::restart_in_tray();
                    tracing::warn!(error = %err, "could not restart in the tray; trimming memory instead");
                }
                return tauri::async_runtime::spawn_blocking(idle::release).await.unwrap_or(());
            }
            let _ = tauri::async_runtime::spawn_blocking(idle::release).await;
            loop {
                match events.recv().await {
                    Ok(EngineEvent::RunFinished { .. }) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                    Ok(_) => continue,
                    Err(_) => return,
                }
            }
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    });
}

/// After `delay`, if no window exists, release WebKit's leftovers and clean pages ([`idle`]).
fn release_when_idle<R: Runtime>(app: &AppHandle<R>, delay: std::time::Duration) {
    let app = app.clone();
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        if app.webview_windows().is_empty() {
            idle::release();
        }
    });
}

/// Show the window, recreating it if it was closed (closing destroys it to free the webview).
pub fn show_window<R: Runtime>(app: &AppHandle<R>) {
    // A menu-bar app on macOS (LSUIElement in packaging/macos/Info.plist): a Dock icon only while
    // the window is open.
    #[cfg(target_os = "macos")]
    let _ = app.set_activation_policy(tauri::ActivationPolicy::Regular);
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
        return;
    }
    let built = WebviewWindowBuilder::new(app, "main", WebviewUrl::App("index.html".into()))
        .on_navigation(|url| {
            let ok = own_page(url);
            if !ok {
                tracing::warn!(%url, "refused to navigate the window away from the app");
            }
            ok
        })
        .title("Nightshift")
        .inner_size(920.0, 640.0)
        .min_inner_size(560.0, 420.0)
        .build();
    if let Err(e) = built {
        tracing::error!(error = %e, "could not open the window");
    }
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

/// Start a routine now (a manual run never waits silently: it starts, or is visibly queued).
fn run_now<R: Runtime>(app: &AppHandle<R>, name: String) {
    let engine = app.state::<AppState>().engine.clone();
    tauri::async_runtime::spawn(async move {
        if let Err(e) = engine.run_now(&name, Trigger::Manual).await {
            tracing::error!(routine = %name, "Run now failed: {}", e.message);
        }
    });
}

/// Gather what the tray shows (reads the keychain for account health: off the UI thread).
async fn facts<R: Runtime>(app: &AppHandle<R>) -> TrayFacts {
    let state = app.state::<AppState>();
    let engine = state.engine.clone();
    let elsewhere = state.scheduled_elsewhere.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let autostart = app.autolaunch().is_enabled().unwrap_or(false);
    let queued = engine.queued().await;
    tauri::async_runtime::spawn_blocking(move || {
        let paused = engine.is_paused().unwrap_or(false);
        // The same overview the window and `nightshiftctl routines list` show.
        let routines = nightshift_core::view::routines::overview(&engine, chrono::Utc::now())
            .unwrap_or_default()
            .into_iter()
            .map(|r| tray::RoutineLine {
                last: r.last_run.map(|l| l.status).filter(|s| *s != RunStatus::Missed),
                next: r.next_fire,
                valid: r.valid,
                name: r.name,
            })
            .collect();
        TrayFacts {
            running: engine.running_count().unwrap_or(0),
            queued,
            paused,
            scheduled_elsewhere: elsewhere,
            routines,
            accounts: engine.accounts_health(),
            autostart,
            problems: engine.problems(),
        }
    })
    .await
    .unwrap_or_default()
}

async fn refresh_tray<R: Runtime>(app: &AppHandle<R>) {
    let view = tray::view(&facts(app).await);
    let handle = app.clone();
    let _ = app.run_on_main_thread(move || {
        let Some(tray) = handle.tray_by_id(TRAY_ID) else { return };
        if let Ok(img) = tauri::image::Image::from_bytes(view.icon.png()) {
            let _ = tray.set_icon(Some(img));
        }
        let _ = tray.set_tooltip(Some(&view.tooltip));
        match build_menu(&handle, &view.menu) {
            Ok(menu) => {
                let _ = tray.set_menu(Some(menu));
            }
            Err(e) => tracing::error!(error = %e, "could not build the tray menu"),
        }
    });
}

fn install_tray<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let initial = tray::view(&TrayFacts::default());
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(tauri::image::Image::from_bytes(initial.icon.png())?)
        .tooltip(&initial.tooltip)
        .menu(&build_menu(app, &initial.menu)?)
        .show_menu_on_left_click(true)
        .on_menu_event(|app, event| on_menu(app, event.id().as_ref()))
        .build(app)?;
    Ok(())
}

fn build_menu<R: Runtime>(app: &AppHandle<R>, entries: &[MenuEntry]) -> tauri::Result<Menu<R>> {
    let menu = Menu::new(app)?;
    for e in entries {
        let item = menu_item(app, e)?;
        menu.append(&*item)?;
    }
    Ok(menu)
}

fn menu_item<R: Runtime>(app: &AppHandle<R>, e: &MenuEntry) -> tauri::Result<Box<dyn IsMenuItem<R>>> {
    Ok(match e {
        MenuEntry::Item { id, text, enabled } => Box::new(MenuItem::with_id(app, id, text, *enabled, None::<&str>)?),
        MenuEntry::Check { id, text, checked } => Box::new(CheckMenuItem::with_id(app, id, text, true, *checked, None::<&str>)?),
        MenuEntry::Separator => Box::new(PredefinedMenuItem::separator(app)?),
        MenuEntry::Submenu { text, items } => {
            let sub = Submenu::new(app, text, true)?;
            for i in items {
                sub.append(&*menu_item(app, i)?)?;
            }
            Box::new(sub)
        }
    })
}

/// Tray menu clicks. Kept here (not in the model) because they act on the running app.
pub fn on_menu<R: Runtime>(app: &AppHandle<R>, id: &str) {
    let engine = app.state::<AppState>().engine.clone();
    if let Some(name) = id.strip_prefix(tray::RUN_PREFIX) {
        return run_now(app, name.to_string());
    }
    if let Some(email) = id.strip_prefix(tray::RELOGIN_PREFIX) {
        let Ok(account) = engine.account(email) else { return };
        if let Err(command) = relogin::open_terminal(&account) {
            // No terminal here: the window shows the exact command (and a field for a setup token).
            show_window(app);
            let _ = app.emit("relogin", serde_json::json!({ "account": email, "command": command }));
        }
        return;
    }
    match id {
        "pause" | "resume" => {
            if let Err(e) = engine.set_paused(id == "pause") {
                tracing::error!("{}", e.message);
            }
        }
        "autostart" => {
            let al = app.autolaunch();
            let on = al.is_enabled().unwrap_or(false);
            let _ = if on { al.disable() } else { al.enable() };
            let app = app.clone();
            tauri::async_runtime::spawn(async move { refresh_tray(&app).await });
        }
        "open" => show_window(app),
        "quit" => {
            // Runs keep going in their own process groups and are re-adopted at the next start;
            // still, quitting while they run is worth a question.
            let running = engine.running_count().unwrap_or(0);
            if running == 0 {
                return app.exit(0);
            }
            use tauri_plugin_dialog::{DialogExt, MessageDialogButtons};
            let app2 = app.clone();
            app.dialog()
                .message(format!(
                    "{running} run{} still going. If you quit, {} running and Nightshift picks {} up (records, notifications) at its next start.",
                    if running == 1 { " is" } else { "s are" },
                    if running == 1 { "it keeps" } else { "they keep" },
                    if running == 1 { "it" } else { "them" },
                ))
                .title("Quit Nightshift?")
                .buttons(MessageDialogButtons::OkCancelCustom("Quit".into(), "Keep Nightshift running".into()))
                .show(move |quit| {
                    if quit {
                        app2.exit(0);
                    }
                });
        }
        _ => {}
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
    use nightshift_core::store::RunQuery;

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
        let start = std::time::Instant::now();
        loop {
            let runs = engine.store().list_runs(&RunQuery { limit: 5, ..Default::default() }).unwrap().runs;
            if let Some(r) = runs.first().filter(|r| r.status.is_final()) {
                assert_eq!((r.routine.as_str(), r.trigger, r.status), ("hello", Trigger::Manual, RunStatus::Completed));
                break;
            }
            assert!(start.elapsed() < std::time::Duration::from_secs(20), "Run now did nothing");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    #[test]
    fn second_launch_arguments() {
        let argv: Vec<String> = ["nightshift", "--run-now", "pr-review"].iter().map(|s| s.to_string()).collect();
        assert_eq!(run_now_arg(&argv).as_deref(), Some("pr-review"));
        assert_eq!(run_now_arg(&["nightshift".to_string()]), None);
    }
}
