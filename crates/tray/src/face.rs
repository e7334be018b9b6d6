//! The running app as the host of the window's commands: the window's commands are defined once
//! in `nightshift_core::api` (the same definitions answer `nightshiftctl serve`'s HTTP) and run in
//! the resident process ([`crate::bridge`]); what differs per host — who schedules, opening a
//! terminal, a link or a file — is this [`Face`].

use crate::Resident;
use nightshift_core::api::Face;
use nightshift_core::{Error, ErrorCode};
use std::sync::Arc;

/// The resident as the window's host.
pub struct ResidentFace(pub Arc<Resident>);

impl Face for ResidentFace {
    fn scheduled_elsewhere(&self) -> Option<String> {
        self.0.scheduled_elsewhere()
    }
    fn scheduling(&self) -> bool {
        self.0.scheduling()
    }
    fn open_terminal(&self, account: &nightshift_core::accounts::Account) -> Result<String, String> {
        crate::relogin::open_terminal(account)
    }
    fn open_link(&self, url: &str) -> Result<(), Error> {
        open::that_detached(url).map_err(|e| Error::new(ErrorCode::Io, format!("could not open the link in a browser: {e}")))
    }
    fn open_file(&self, path: &std::path::Path) -> Result<(), Error> {
        open::that_detached(path).map_err(|e| Error::new(ErrorCode::Io, format!("could not open {}: {e}; open it by hand", path.display())))
    }
}
