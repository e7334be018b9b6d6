//! The window process (`nightshift-window`): the only process that ever loads a webview.
//!
//! The resident process (engine, scheduler, tray) starts it when the window should appear and
//! talks to it over its stdin/stdout ([`crate::bridge`]). It holds no engine: every command the
//! page calls runs in the resident, and the resident sends every engine event on. It lives as long
//! as its window: closing the window tells the resident, which closes the pipe, and the process
//! exits — within milliseconds, with all WebKit's memory and processes. If the resident goes away
//! (Quit, a crash), the pipe closes and the window closes with it.

use nightshift_tray::bridge::{self, FromWindow, Link, Open, ToWindow};
use serde_json::Value;
use std::sync::Arc;
use std::time::SystemTime;
use tauri::{AppHandle, Emitter, Manager, RunEvent, Runtime, WebviewUrl, WebviewWindowBuilder};

/// The window's label (its [`capability`] is granted to this label only).
pub const LABEL: &str = "main";

/// What the window may call, derived from the one list of window commands
/// ([`nightshift_core::api::COMMANDS`]; `build.rs` declares a permission for each): each of them,
/// and listening to events — no plugin command (no shell, no fs, no http, no opener from JS: links
/// go through `open_link`, which opens only http/https/mailto), nothing for any other window.
pub fn capability() -> tauri::ipc::CapabilityBuilder {
    let base = tauri::ipc::CapabilityBuilder::new("main").window(LABEL).permission("core:event:allow-listen").permission("core:event:allow-unlisten");
    nightshift_core::api::COMMANDS.iter().fold(base, |c, name| c.permission(format!("allow-{}", name.replace('_', "-"))))
}

/// Run the window process until its window is closed or the resident goes away. `started` is when
/// the process started (what its first paint is timed from).
pub fn run(open: Open, started: SystemTime) {
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprintln!("error: `nightshift-window` is started by the running app; run `nightshift` to open the window");
        std::process::exit(2);
    }
    let (from_resident, to_resident) = stdio();
    let link = Link::new(to_resident);
    let closing = Arc::clone(&link);
    let app = tauri::Builder::default()
        .invoke_handler(invoke_handler(Arc::clone(&link)))
        .setup(move |app| {
            // A menu-bar app on macOS has no Dock icon; the window process is the window, so it has one.
            #[cfg(target_os = "macos")]
            let _ = app.set_activation_policy(tauri::ActivationPolicy::Regular);
            app.add_capability(capability())?;
            build(app.handle(), &open, started)?;
            let handle = app.handle().clone();
            std::thread::Builder::new().name("from-resident".into()).spawn(move || {
                bridge::receive(std::io::BufReader::new(from_resident), |message: ToWindow| {
                    if let Some(message) = link.settle(message) {
                        act(&handle, &link, message);
                    }
                });
                // The resident closed the pipe: after our window closed, or because it quit or died.
                link.fail_pending();
                handle.exit(0);
            })?;
            Ok(())
        })
        .build(crate::context())
        .unwrap_or_else(|e| {
            eprintln!("error: the Nightshift window could not start: {e}");
            std::process::exit(1);
        });
    app.run(move |_, event| {
        // The window closed: say so and wait for the resident to close the pipe, so a "show" it
        // sent meanwhile is read (and handed back) rather than lost with this process.
        if let RunEvent::ExitRequested { code: None, api, .. } = event {
            api.prevent_exit();
            if !closing.tell(&FromWindow::Closed) {
                std::process::exit(0);
            }
        }
    });
}

/// The window's command handler in the window process: every command the page may call
/// ([`nightshift_core::api::COMMANDS`]; Tauri's capability check comes first) goes to the
/// resident over `link`.
pub fn invoke_handler<R: tauri::Runtime>(link: Arc<Link>) -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
    move |invoke| {
        let command = invoke.message.command().to_string();
        if !nightshift_core::api::COMMANDS.contains(&command.as_str()) {
            return false;
        }
        let args = match invoke.message.payload() {
            tauri::ipc::InvokeBody::Json(v) => v.clone(),
            tauri::ipc::InvokeBody::Raw(_) => Value::Null,
        };
        let link = Arc::clone(&link);
        invoke.resolver.respond_async(async move { link.call(&command, args).await.map_err(tauri::ipc::InvokeError::from) });
        true
    }
}

/// The resident's messages other than answers.
fn act<R: Runtime>(app: &AppHandle<R>, link: &Link, message: ToWindow) {
    match message {
        ToWindow::Emit { event, payload } => {
            let _ = app.emit(&event, payload);
        }
        ToWindow::Show(open) => match app.get_webview_window(LABEL) {
            Some(w) => {
                let _ = w.show();
                let _ = w.unminimize();
                let _ = w.set_focus();
                if let Some((event, payload)) = open.event() {
                    let _ = app.emit(event, payload);
                }
            }
            None => {
                link.tell(&FromWindow::Missed(open));
            }
        },
        ToWindow::Reply { .. } => {}
    }
}

fn build<R: Runtime>(app: &AppHandle<R>, open: &Open, started: SystemTime) -> tauri::Result<()> {
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
                tracing::debug!(target: "nightshift_app::window", since_start_ms = ms_between(started, SystemTime::now()), "window page loaded");
                // The moment the window shows the app: "Open" → this is what a user waits for (the
                // tray benchmark reads `at_ms` and times it from the click).
                #[cfg(target_os = "linux")]
                let _ = window.with_webview(move |webview| {
                    crate::first_paint::watch(&webview.inner(), move |painted| match painted {
                        Ok(at) => tracing::debug!(target: "nightshift_app::window", at_ms = crate::first_paint::epoch_ms(at), since_start_ms = ms_between(started, at), "window first paint"),
                        Err(why) => tracing::debug!(target: "nightshift_app::window", "window first paint unknown: {why}"),
                    })
                });
                #[cfg(not(target_os = "linux"))]
                let _ = window;
            }
        })
        .title("Nightshift")
        .inner_size(920.0, 640.0)
        .min_inner_size(560.0, 420.0)
        .build()
        .map(|_| ())
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

/// The pipe to the resident: stdin, and stdout moved to a descriptor of its own. The process's
/// stdout then points at stderr, so a library that prints to stdout (GTK and WebKit may) cannot
/// corrupt a message.
fn stdio() -> (Box<dyn std::io::Read + Send>, Box<dyn std::io::Write + Send>) {
    #[cfg(unix)]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: dup/dup2 on this process's standard descriptors; the new descriptor is owned by
        // the File from here on and nothing else uses it.
        unsafe {
            let out = libc::dup(1);
            if out >= 0 && libc::dup2(2, 1) >= 0 {
                return (Box::new(std::io::stdin()), Box::new(std::fs::File::from_raw_fd(out)));
            }
        }
    }
    (Box::new(std::io::stdin()), Box::new(std::io::stdout()))
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
