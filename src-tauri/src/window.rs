//! The window: a Tauri webview window of this process, made on "Open" (the tray, a notification,
//! Re-login, a second launch) and destroyed when it is closed — WebKit's web process goes with
//! it, while the app lives on in the tray. Its commands are the engine's own
//! ([`nightshift_core::api`], answered here in-process); engine events reach the page on one
//! channel ([`WINDOW_EVENT`]).

use crate::open::Open;
use crate::shell::Shell;
use serde_json::Value;
use std::sync::Arc;
use std::time::SystemTime;
use tauri::{AppHandle, Emitter, Manager, Runtime, WebviewUrl, WebviewWindowBuilder};

/// The window's label (its [`capability`] is granted to this label only).
pub const LABEL: &str = "main";

/// The window's one event channel: every engine event as it happens (`{"type": "run_started", …}`),
/// so History turns rows from queued to running to final without a reload and nothing polls.
pub const WINDOW_EVENT: &str = "engine";

/// What the window may call, derived from the one list of window commands
/// ([`nightshift_core::api::COMMANDS`]; `build.rs` declares a permission for each): each of them,
/// and listening to events — no plugin command (no shell, no fs, no http, no opener or dialog from
/// JS: links go through `open_link`, which opens only http/https/mailto), nothing for any other
/// window.
pub fn capability() -> tauri::ipc::CapabilityBuilder {
    let base = tauri::ipc::CapabilityBuilder::new("main").window(LABEL).permission("core:event:allow-listen").permission("core:event:allow-unlisten");
    nightshift_core::api::COMMANDS.iter().fold(base, |c, name| c.permission(format!("allow-{}", name.replace('_', "-"))))
}

/// The window's command handler: every command the page may call
/// ([`nightshift_core::api::COMMANDS`]; Tauri's capability check comes first) runs against the
/// engine in this process. Errors reach the page as `{code, message}`.
pub fn invoke_handler<R: Runtime>() -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
    move |invoke| {
        let command = invoke.message.command().to_string();
        if !nightshift_core::api::COMMANDS.contains(&command.as_str()) {
            return false;
        }
        let args = match invoke.message.payload() {
            tauri::ipc::InvokeBody::Json(v) => v.clone(),
            tauri::ipc::InvokeBody::Raw(_) => Value::Null,
        };
        let shell = invoke.message.webview().app_handle().try_state::<Arc<Shell>>().map(|s| Arc::clone(&s));
        invoke.resolver.respond_async(async move {
            let Some(shell) = shell else {
                return Err(tauri::ipc::InvokeError::from(nightshift_core::Error::new(nightshift_core::ErrorCode::Io, "the engine is not running (see the message Nightshift showed at start)")));
            };
            nightshift_core::api::call(&shell.engine, &*shell, &command, args).await.map_err(tauri::ipc::InvokeError::from)
        });
        true
    }
}

/// Show the window with `open`: raise the one that is up (and show `open` in it), else make one
/// that starts there. On the UI thread.
pub fn show<R: Runtime>(app: &AppHandle<R>, open: Open) {
    // A menu-bar app on macOS (LSUIElement in packaging/macos/Info.plist): a Dock icon only while
    // the window is open.
    #[cfg(target_os = "macos")]
    let _ = app.set_activation_policy(tauri::ActivationPolicy::Regular);
    if let Some(w) = app.get_webview_window(LABEL) {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
        if let Some((event, payload)) = open.event() {
            let _ = app.emit_to(LABEL, event, payload);
        }
        tracing::info!(url = %open.start_url(), "raised the window that is up");
        return;
    }
    let opened = SystemTime::now();
    match build(app, &open, opened) {
        Ok(()) => tracing::info!(url = %open.start_url(), "opened the window"),
        Err(e) => tracing::error!(error = %e, "could not open the window"),
    }
}

fn build<R: Runtime>(app: &AppHandle<R>, open: &Open, opened: SystemTime) -> tauri::Result<()> {
    WebviewWindowBuilder::new(app, LABEL, WebviewUrl::App(open.start_url().into()))
        .on_navigation(|url| {
            let ok = own_page(url);
            if !ok {
                tracing::warn!(%url, "refused to navigate the window away from the app");
            }
            ok
        })
        .on_page_load(move |window, load| {
            if matches!(load.event(), tauri::webview::PageLoadEvent::Finished) {
                tracing::debug!(target: "nightshift_app::window", since_open_ms = ms_between(opened, SystemTime::now()), "window page loaded");
                // The moment the window shows the app: "Open" → this is what a user waits for (the
                // tray benchmark reads `at_ms` and times it from the click).
                #[cfg(target_os = "linux")]
                let _ = window.with_webview(move |webview| {
                    crate::first_paint::watch(&webview.inner(), move |painted| match painted {
                        Ok(at) => tracing::debug!(target: "nightshift_app::window", at_ms = crate::first_paint::epoch_ms(at), since_open_ms = ms_between(opened, at), "window first paint"),
                        Err(why) => tracing::debug!(target: "nightshift_app::window", "window first paint unknown: {why}"),
                    })
                });
                #[cfg(not(target_os = "linux"))]
                let _ = window;
            }
        })
        .title("Nightshift")
        // The first time; then where it was left (`remembered`).
        .inner_size(920.0, 640.0)
        .min_inner_size(560.0, 420.0)
        .build()
        .map(|_| ())
}

/// What of the window is remembered between openings (not whether it shows: the tray decides).
fn remembered_flags() -> tauri_plugin_window_state::StateFlags {
    use tauri_plugin_window_state::StateFlags;
    StateFlags::SIZE | StateFlags::POSITION | StateFlags::MAXIMIZED
}

/// Tauri's window-state plugin, keeping the window's size and place in the home's own folder
/// (`window-state.json`) rather than one file per user: each home — and each test's — opens its
/// own window where it was left.
pub fn remembered<R: Runtime>(home: &nightshift_core::Home) -> tauri::plugin::TauriPlugin<R> {
    let file = home.data_dir().join("window-state.json");
    tauri_plugin_window_state::Builder::default().with_state_flags(remembered_flags()).with_filename(file.to_string_lossy()).build()
}

/// The window closed (and was destroyed): where it was is written now — the app lives on in the
/// tray and may be stopped without an orderly exit (a logout) —; on macOS the Dock icon goes with
/// it, and what the webview freed in this process is handed back to the system once WebKit has
/// torn it down.
pub fn closed<R: Runtime>(app: &AppHandle<R>) {
    use tauri_plugin_window_state::AppHandleExt;
    if let Err(e) = app.save_window_state(remembered_flags()) {
        tracing::warn!(error = %e, "could not keep where the window was");
    }
    #[cfg(target_os = "macos")]
    let _ = app.set_activation_policy(tauri::ActivationPolicy::Accessory);
    tracing::info!("the window closed");
    tauri::async_runtime::spawn(async {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        nightshift_core::allocator::release_freed();
    });
}

/// Whole milliseconds from `from` to `to` (0 if the clock went back).
fn ms_between(from: SystemTime, to: SystemTime) -> u64 {
    to.duration_since(from).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The window shows only the app's own pages: any other navigation (a link in a report that
/// slipped past everything else, a script setting `location`) is refused. Links open in the
/// system browser through the `open_link` command instead.
pub(crate) fn own_page(url: &tauri::Url) -> bool {
    url.scheme() == "tauri" || url.host_str() == Some("tauri.localhost")
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_apps_own_pages() {
        for (url, ok) in [("tauri://localhost/index.html", true), ("http://tauri.localhost/#/run/1", true), ("https://evil.example/", false), ("file:///etc/passwd", false)] {
            assert_eq!(super::own_page(&url.parse().unwrap()), ok, "{url}");
        }
    }
}
