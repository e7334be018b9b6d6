//! The tray app as the host of the window's commands: the window's commands are defined once in
//! `nightshift_core::api` (the same definitions answer `nightshiftctl serve`'s HTTP) and run in
//! the resident process ([`crate::bridge`]); what differs per host — who schedules, opening a
//! terminal, a link or a file — is this [`Face`].

use crate::AppState;
use nightshift_core::api::Face;
use nightshift_core::{Error, ErrorCode};
use tauri::{AppHandle, Manager, Runtime};

/// The app as the window's host.
pub struct AppFace<R: Runtime>(pub AppHandle<R>);

impl<R: Runtime> Face for AppFace<R> {
    fn scheduled_elsewhere(&self) -> Option<String> {
        self.0.state::<AppState>().scheduled_elsewhere.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    fn scheduling(&self) -> bool {
        self.0.state::<AppState>().scheduling.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn open_terminal(&self, account: &nightshift_core::accounts::Account) -> Result<String, String> {
        crate::relogin::open_terminal(account)
    }
    fn open_link(&self, url: &str) -> Result<(), Error> {
        use tauri_plugin_opener::OpenerExt;
        self.0.opener().open_url(url, None::<&str>).map_err(|e| Error::new(ErrorCode::Io, format!("could not open the link in a browser: {e}")))
    }
    fn open_file(&self, path: &std::path::Path) -> Result<(), Error> {
        use tauri_plugin_opener::OpenerExt;
        self.0
            .opener()
            .open_path(path.display().to_string(), None::<&str>)
            .map_err(|e| Error::new(ErrorCode::Io, format!("could not open {}: {e}; open it by hand", path.display())))
    }
}
