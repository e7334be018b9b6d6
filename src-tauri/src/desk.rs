//! The desktop the shell runs on, as the Tauri app: the window ([`crate::window`]), the tray
//! ([`crate::tray_shell`]), dialogs (`tauri-plugin-dialog`), Start at login
//! (`tauri-plugin-autostart`), links and folders (`tauri-plugin-opener`).

use crate::open::Open;
use crate::shell::Desk;
use crate::tray::TrayView;
use crate::tray_shell::TrayUi;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
use tauri_plugin_opener::OpenerExt;

pub struct TauriDesk<R: Runtime> {
    app: AppHandle<R>,
    /// The tray, once installed (it lives on the UI thread's side; set from there).
    tray: Arc<Mutex<Option<TrayUi<R>>>>,
}

impl<R: Runtime> TauriDesk<R> {
    pub fn new(app: AppHandle<R>) -> TauriDesk<R> {
        TauriDesk { app, tray: Arc::default() }
    }

    /// Put the tray icon up; its clicks go to `on_menu`. Without a tray host the app still runs,
    /// notifies and opens its window from a second launch.
    pub fn install_tray(&self, on_menu: impl Fn(&str) + Send + Sync + 'static) {
        match TrayUi::install(&self.app, on_menu) {
            Ok(tray) => *self.tray.lock().unwrap_or_else(|e| e.into_inner()) = Some(tray),
            Err(e) => tracing::error!("could not show the tray icon: {e}"),
        }
    }
}

impl<R: Runtime> Desk for TauriDesk<R> {
    fn show(&self, open: Open) {
        let app = self.app.clone();
        let _ = self.app.run_on_main_thread(move || crate::window::show(&app, open));
    }

    fn emit(&self, event: &dyn Fn() -> Option<Value>) {
        // Built only while a window is up: with none, an event costs nothing.
        if self.app.get_webview_window(crate::window::LABEL).is_none() {
            return;
        }
        if let Some(payload) = event() {
            let _ = self.app.emit_to(crate::window::LABEL, crate::window::WINDOW_EVENT, payload);
        }
    }

    fn show_in_tray(&self, view: TrayView) {
        let (app, tray) = (self.app.clone(), Arc::clone(&self.tray));
        let _ = self.app.run_on_main_thread(move || {
            if let Some(tray) = tray.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                tray.show(&app, view);
            }
        });
    }

    fn ask(&self, title: &str, text: &str, yes: &str, no: &str, answer: Box<dyn FnOnce(bool) + Send>) {
        self.app.dialog().message(text).title(title).kind(MessageDialogKind::Warning).buttons(MessageDialogButtons::OkCancelCustom(yes.into(), no.into())).show(answer);
    }

    fn autostart(&self) -> bool {
        self.app.autolaunch().is_enabled().unwrap_or(false)
    }

    fn toggle_autostart(&self) -> Result<(), String> {
        let entry = self.app.autolaunch();
        let on = entry.is_enabled().map_err(|e| e.to_string())?;
        if on { entry.disable() } else { entry.enable() }.map_err(|e| e.to_string())
    }

    fn open_external(&self, what: &str) -> Result<(), String> {
        let opener = self.app.opener();
        if what.contains("://") || what.starts_with("mailto:") { opener.open_url(what, None::<&str>) } else { opener.open_path(what, None::<&str>) }.map_err(|e| e.to_string())
    }

    fn exit(&self, code: i32) {
        self.app.exit(code);
    }
}

/// The title of the dialog shown when the home cannot be opened.
pub const CANNOT_START_TITLE: &str = "Nightshift cannot start";

/// Say that the app cannot start, and why; closing the dialog quits with exit code 2.
pub fn cannot_start<R: Runtime>(app: &AppHandle<R>, message: &str) {
    tracing::error!("{message}");
    eprintln!("error: Nightshift could not start: {message}");
    let quit = app.clone();
    app.dialog().message(message).title(CANNOT_START_TITLE).kind(MessageDialogKind::Error).buttons(MessageDialogButtons::OkCustom("Quit".into())).show(move |_| quit.exit(2));
}
