//! Nightshift's resident process — the tray app users leave running all day (`nightshift`).
//!
//! It hosts the engine in-process on its own tokio runtime: the scheduler (unless a
//! `nightshiftctl daemon` already schedules this home), crash recovery, desktop notifications,
//! webhooks. Users meet it as a status icon (idle / running / attention) with a menu, and as
//! finish notifications.
//!
//! It never loads a webview, and does not even link WebKit: the tray is drawn with the same event
//! loop, tray and menu crates Tauri uses (`tao`, `tray-icon`, `muda`), and the window is another
//! binary, `nightshift-window` (the Tauri app), started by [`window_host`] when the window should
//! appear and talking to this process over a pipe ([`bridge`]). It exits when its window closes,
//! taking all of WebKit's memory and processes with it; this process's pid never changes.

pub mod bridge;
mod autostart;
mod dialog;
mod engine_loop;
pub mod face;
mod instance;
mod relogin;
pub mod resident;
pub mod tray;
mod tray_shell;
pub mod window_host;

pub use resident::{Resident, UiEvent};

use nightshift_core::{Engine, EngineOptions, Home};
use nightshift_desktop::DesktopNotifier;
use std::sync::Arc;
use tao::event::{Event, StartCause};
use tao::event_loop::{ControlFlow, EventLoopBuilder};

/// Start in the tray without a window (what Start at login launches).
pub const MINIMIZED: &str = "--minimized";

/// Quit the running app (asks first when runs are going, like the tray's Quit).
pub const QUIT: &str = "--quit";

/// `--run-now NAME` on the command line (also sent to the running instance by a second launch).
pub fn run_now_arg(argv: &[String]) -> Option<String> {
    argv.iter().position(|a| a == "--run-now").and_then(|i| argv.get(i + 1)).cloned()
}

pub fn run() {
    // A run's wrapper asking this binary to scrub its logs (before anything else is set up).
    nightshift_core::runner::scrub::serve_wrapper_request();
    // Before any thread exists: the resident lives all day (see `allocator`).
    nightshift_core::allocator::limit_arenas();
    init_tracing();
    let argv: Vec<String> = std::env::args().collect();
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
    // One resident per home: a second launch hands its arguments to the running one and exits.
    let listener = match instance::claim(&home, &argv) {
        Ok(instance::Claim::First(listener)) => listener,
        Ok(instance::Claim::Handed) => std::process::exit(0),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    if argv.iter().any(|a| a == QUIT) {
        // Nothing to quit: this is the only instance (a running one would have got the request).
        eprintln!("Nightshift is not running.");
        std::process::exit(0);
    }

    // Without a display GTK cannot start (the event loop would panic): say what to do instead.
    #[cfg(target_os = "linux")]
    if let Err(e) = gtk::init() {
        eprintln!("error: Nightshift's tray app needs a desktop session, and no display could be opened ({e}). On a server, use the headless CLI: `nightshiftctl daemon` schedules the routines and `nightshiftctl run NAME --wait` runs one.");
        std::process::exit(1);
    }
    let event_loop = EventLoopBuilder::<UiEvent>::with_user_event().build();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("nightshift").build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: Nightshift could not start its runtime: {e}");
            std::process::exit(1);
        }
    };
    // The engine spawns its listeners on this runtime; the main thread stays inside it for good
    // (the event loop below never returns).
    let _entered = runtime.enter();
    let proxy = event_loop.create_proxy();
    let engine = match Engine::open(EngineOptions::new(home).scrubbing_with_this_binary()) {
        Ok(engine) => engine,
        Err(e) => {
            let quit = proxy.clone();
            dialog::cannot_start(&e.message, move || {
                let _ = quit.send_event(UiEvent::Quit(2));
            });
            // A second launch meanwhile gets its answer at once: `--quit` quits; anything else
            // finds the dialog already saying why nothing else can happen.
            let quit = proxy.clone();
            let leaving = listener.serve(move |argv| {
                if argv.iter().any(|a| a == QUIT) {
                    let _ = quit.send_event(UiEvent::Quit(2));
                }
            });
            event_loop.run(move |event, _, flow| match event {
                Event::UserEvent(UiEvent::Quit(code)) => {
                    leaving.leave();
                    *flow = ControlFlow::ExitWithCode(code)
                }
                _ => *flow = ControlFlow::Wait,
            })
        }
    };
    let resident = Resident::new(engine.clone(), runtime.handle().clone(), Some(proxy.clone()), users_gdk_gl);
    let on_open: nightshift_desktop::OpenRun = {
        let resident = Arc::clone(&resident);
        Arc::new(move |run_id: String| resident.show(bridge::Open::Run(run_id)))
    };
    engine.enable_notifications(Arc::new(DesktopNotifier::new(Some(DesktopNotifier::bundled_icon()), Some(on_open))));
    engine.enable_webhooks();
    let leaving = {
        let resident = Arc::clone(&resident);
        listener.serve(move |argv| resident.second_launch(&argv))
    };
    tray_icon::menu::MenuEvent::set_event_handler(Some(move |e: tray_icon::menu::MenuEvent| {
        let _ = proxy.send_event(UiEvent::Menu(e.id.0));
    }));
    runtime.spawn(engine_loop::run(Arc::clone(&resident)));
    engine_loop::quit_on_sigterm(&resident);
    // Started at login: straight to the tray. Otherwise the user launched it: show the window.
    if !argv.iter().any(|a| a == MINIMIZED) {
        resident.show(bridge::Open::Front);
    }
    if let Some(name) = run_now_arg(&argv) {
        resident.run_now(name);
    }

    let mut ui = resident::Ui::default();
    event_loop.run(move |event, _, flow| {
        *flow = ControlFlow::Wait;
        match event {
            Event::NewEvents(StartCause::Init) => ui.install_tray(),
            Event::UserEvent(UiEvent::Menu(id)) => resident.on_menu(&id),
            Event::UserEvent(UiEvent::Do(task)) => task(&mut ui),
            Event::UserEvent(UiEvent::Quit(code)) => {
                // Quit closes the window too (its process would see the pipe close anyway), and
                // takes the tray item off the panel before the process goes.
                resident.close_window();
                ui.remove_tray();
                leaving.leave();
                *flow = ControlFlow::ExitWithCode(code);
            }
            _ => {}
        }
    })
}

/// Logs go to stderr, `info` by default (`NIGHTSHIFT_LOG` takes any tracing filter) — for both of
/// the app's processes, the resident and its window.
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
}
