//! The Nightshift window (`nightshift-window`): the Tauri app, the only process that ever loads a
//! webview.
//!
//! Nightshift runs as two processes. The **resident** (`nightshift`, the crate
//! `nightshift-tray`: engine, scheduler, notifications, tray icon and menu) lives all day and
//! does not link WebKit. It starts this binary when the window should appear and talks to it over
//! its stdin and stdout (`nightshift_tray::bridge`); this process exits when the window is closed,
//! taking all of WebKit's memory and processes with it. See [`window`].

#[cfg(target_os = "linux")]
pub mod first_paint;
#[cfg(all(test, unix))]
mod ipc_tests;
mod window;

/// The app's Tauri context (config, embedded pages, icons).
fn context<R: tauri::Runtime>() -> tauri::Context<R> {
    tauri::generate_context!()
}

/// Run the window process: `nightshift-window --open <Open as JSON>`, started by the resident.
pub fn run() {
    let started = std::time::SystemTime::now();
    nightshift_tray::init_tracing();
    let argv: Vec<String> = std::env::args().collect();
    let open = argv.iter().position(|a| a == nightshift_tray::bridge::OPEN_FLAG).and_then(|i| argv.get(i + 1)).and_then(|a| serde_json::from_str(a).ok()).unwrap_or_default();
    window::run(open, started)
}
