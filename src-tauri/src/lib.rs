//! Nightshift's desktop app (`nightshift`): one Tauri 2 app that hosts the routine engine
//! in-process.
//!
//! The engine runs on this process's tokio runtime: the scheduler (unless a `nightshiftctl
//! daemon` already schedules this home), crash recovery, desktop notifications from the
//! run-settle hook, webhooks. Users meet it as a status icon (idle / running / attention) with a
//! menu ([`tray_shell`]), as finish notifications, and as a small window ([`window`]): a webview
//! of this process, made on "Open" and destroyed when closed, whose commands are the engine's own.
//! Runs live in their own process groups, so quitting — or a crash — never ends one; the next
//! start re-adopts them.
//!
//! What a desktop app needs besides its window comes from Tauri's plugins: one app per home
//! (`single-instance`: a second launch hands its arguments over — `--run-now NAME`, `--quit` — and
//! exits), Start at login (`autostart`), the Quit question and "cannot start" (`dialog`), links and
//! folders (`opener`).

mod desk;
mod engine_loop;
mod homes_view;
#[cfg(target_os = "linux")]
pub mod first_paint;
#[cfg(all(test, unix))]
mod ipc_tests;
mod open;
mod relogin;
pub mod shell;
pub mod tray;
mod tray_shell;
mod window;

pub use open::Open;

use nightshift_core::{Engine, EngineOptions, Home};
use nightshift_desktop::DesktopNotifier;
use shell::Shell;
use std::sync::Arc;
use tauri::{Manager, RunEvent, Runtime};

/// Start in the tray without a window (what Start at login launches).
pub const MINIMIZED: &str = "--minimized";

/// Quit the running app (asks first when runs are going, like the tray's Quit).
pub const QUIT: &str = "--quit";

/// `--run-now NAME` on the command line (also sent to the running instance by a second launch).
pub fn run_now_arg(argv: &[String]) -> Option<String> {
    argv.iter().position(|a| a == "--run-now").and_then(|i| argv.get(i + 1)).cloned()
}

/// The app's Tauri context (config, embedded pages, icons).
fn context<R: Runtime>() -> tauri::Context<R> {
    tauri::generate_context!()
}

pub fn run() {
    // A run's wrapper asking this binary to scrub its logs (before anything else is set up).
    nightshift_core::runner::scrub::serve_wrapper_request();
    nightshift_core::runner::sandbox::helper::serve_helper_request();
    // A run's agent reaching Nightshift's MCP through this binary (`on_denial: ask`).
    nightshift_core::mcp::per_run::serve_bridge_request();
    // Before any thread exists: the app lives all day (see `allocator`).
    nightshift_core::allocator::limit_arenas();
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
    // Without a display GTK cannot start (Tauri's event loop would panic): say what to do instead.
    #[cfg(target_os = "linux")]
    if let Err(e) = gtk::init() {
        let tried = ["WAYLAND_DISPLAY", "DISPLAY"]
            .iter()
            .filter_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()).map(|v| format!("{k}={v}")))
            .collect::<Vec<_>>();
        let tried = if tried.is_empty() { "neither DISPLAY nor WAYLAND_DISPLAY is set".to_string() } else { tried.join(", ") };
        eprintln!("error: Nightshift's tray app needs a desktop session, and no display could be opened ({e}; {tried}). On a server, use the headless CLI: `nightshiftctl daemon` schedules the routines and `nightshiftctl run NAME --wait` runs one.");
        std::process::exit(1);
    }
    // One runtime for the engine and Tauri's own tasks, its threads named after the app.
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("nightshift").build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: Nightshift could not start its runtime: {e}");
            std::process::exit(1);
        }
    };
    tauri::async_runtime::set(runtime.handle().clone());
    let _entered = runtime.enter();
    let handle = runtime.handle().clone();
    let instance = single_instance_id(&home);

    let app = tauri::Builder::default()
        // First: a second launch hands its arguments to the running app and exits here, before
        // anything else starts.
        .plugin(tauri_plugin_single_instance::Builder::new().dbus_id(instance).callback(second_launch).build())
        .plugin(tauri_plugin_autostart::init(tauri_plugin_autostart::MacosLauncher::LaunchAgent, Some(vec![MINIMIZED])))
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        // The window opens where it was left (size, place, maximized — not whether it shows).
        .plugin(window::remembered(&home))
        .invoke_handler(window::invoke_handler())
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::Destroyed = event {
                window::closed(window.app_handle());
            }
        })
        .setup(move |app| {
            if argv.iter().any(|a| a == QUIT) {
                // Nothing to quit: this is the only instance (a running one would have got the request).
                eprintln!("Nightshift is not running.");
                std::process::exit(0);
            }
            app.add_capability(window::capability())?;
            let engine = match Engine::open(EngineOptions::new(home).scrubbing_with_this_binary()) {
                Ok(engine) => engine,
                Err(e) => {
                    desk::cannot_start(app.handle(), &e.message);
                    return Ok(());
                }
            };
            start(app, engine, handle, &argv);
            Ok(())
        })
        .build(context())
        .unwrap_or_else(|e| {
            eprintln!("error: Nightshift could not start: {e}");
            std::process::exit(1);
        });
    app.run(|_app, event| {
        // Closing the window keeps the app in the tray; only Quit (an explicit exit code) ends it.
        if let RunEvent::ExitRequested { code: None, api, .. } = event {
            api.prevent_exit();
        }
    });
}

/// The engine is open: the shell around it, notifications, webhooks, the tray, the engine's
/// loop, and the window unless started at login.
fn start(app: &mut tauri::App, engine: Engine, runtime: tokio::runtime::Handle, argv: &[String]) {
    let desk = Arc::new(desk::TauriDesk::new(app.handle().clone()));
    let shell = Shell::new(engine.clone(), runtime.clone(), desk.clone());
    app.manage(Arc::clone(&shell));
    let on_open: nightshift_desktop::OpenRun = {
        let shell = Arc::clone(&shell);
        Arc::new(move |run_id: String| shell.show(Open::Run(run_id)))
    };
    let on_answer: nightshift_desktop::AnswerAsk = {
        let engine = engine.clone();
        Arc::new(move |run_id: String, allow: bool| {
            if let Err(e) = engine.answer_ask(&run_id, allow, false, "desktop") {
                tracing::warn!(run = %run_id, error = %e.message, "the notification's answer was not taken");
            }
        })
    };
    engine.enable_notifications(Arc::new(DesktopNotifier::new(Some(notification_icon(app.handle())), Some(on_open)).answering(on_answer)));
    // Other homes (`[[homes]]`): their finish notifications, each told once on this machine; their
    // routines and troubles in the tray; their events to the window showing them.
    let viewers = {
        let _inside = runtime.enter();
        nightshift_core::homes::viewer::start(&engine, Arc::new(DesktopNotifier::new(Some(notification_icon(app.handle())), None)))
    };
    homes_view::follow(&shell, viewers.subscribe());
    app.manage(viewers);
    engine.enable_webhooks();
    {
        let shell = Arc::clone(&shell);
        desk.install_tray(move |id| shell.on_menu(id));
    }
    runtime.spawn(engine_loop::run(Arc::clone(&shell)));
    engine_loop::quit_on_sigterm(&shell);
    // Started at login: straight to the tray. Otherwise the user launched it: show the window.
    if !argv.iter().any(|a| a == MINIMIZED) {
        shell.show(Open::Front);
    }
    if let Some(name) = run_now_arg(argv) {
        shell.run_now(name);
    }
}

/// A second launch of `nightshift` (the single-instance plugin hands its arguments here).
fn second_launch<R: Runtime>(app: &tauri::AppHandle<R>, argv: Vec<String>, _cwd: String) {
    match app.try_state::<Arc<Shell>>() {
        Some(shell) => shell.second_launch(&argv),
        // The engine could not open ("cannot start" is on screen, saying why): `--quit` quits;
        // anything else finds that dialog already answering it.
        None if argv.iter().any(|a| a == QUIT) => app.exit(2),
        None => {}
    }
}

/// One app per home: the single-instance name carries a digest of the home's data folder, so two
/// homes (`NIGHTSHIFT_HOME`) are two apps, and every build of the app agrees on it.
fn single_instance_id(home: &Home) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(home.data_dir().to_string_lossy().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("dev.nightshift.Nightshift.home_{hex}")
}

fn notification_icon<R: Runtime>(app: &tauri::AppHandle<R>) -> std::path::PathBuf {
    app.path().resource_dir().ok().map(|d| d.join("icons/notification.png")).filter(|p| p.exists()).unwrap_or_else(DesktopNotifier::bundled_icon)
}

/// Logs go to stderr, `info` by default (`NIGHTSHIFT_LOG` takes any tracing filter).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NIGHTSHIFT_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init();
}

#[cfg(test)]
mod tests {
    #[test]
    fn second_launch_arguments() {
        let argv: Vec<String> = ["nightshift", "--run-now", "pr-review"].iter().map(|s| s.to_string()).collect();
        assert_eq!(super::run_now_arg(&argv).as_deref(), Some("pr-review"));
        assert_eq!(super::run_now_arg(&["nightshift".to_string()]), None);
    }

    #[test]
    fn two_homes_are_two_apps() {
        let (a, b) = (nightshift_core::Home::at("/tmp/a"), nightshift_core::Home::at("/tmp/b"));
        assert_ne!(super::single_instance_id(&a), super::single_instance_id(&b));
        assert_eq!(super::single_instance_id(&a), super::single_instance_id(&nightshift_core::Home::at("/tmp/a")));
        let id = super::single_instance_id(&a);
        assert!(id.split('.').all(|part| !part.is_empty() && !part.starts_with(|c: char| c.is_ascii_digit()) && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')), "a D-Bus name: {id}");
    }
}
