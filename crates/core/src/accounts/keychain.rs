//! Setup tokens in the OS keychain (`keyring` 4: Secret Service on Linux, Keychain on macOS,
//! Credential Manager on Windows).
//!
//! Every failure comes back as words a user can act on — no bus, no Secret Service, a locked
//! keyring — and never as a hang: each call runs on its own thread with a time limit.

use super::Account;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(5);

/// Why the keychain could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn describe(err: &keyring::Error, account: &Account) -> String {
    use keyring::Error as E;
    let fallback = format!("or set {}", account.env_token_var());
    match err {
        E::NoDefaultStore => {
            let cause = match keyring::Entry::store_status() {
                Err(e) => e.to_string(),
                Ok(()) => "no credential store".into(),
            };
            let cause = if cause.contains("ServiceUnknown") || cause.contains("was not provided by any .service files") {
                "no Secret Service on the session bus".to_string()
            } else if cause.contains("DBUS_SESSION_BUS_ADDRESS") || cause.to_lowercase().contains("bus") {
                format!("no D-Bus session bus ({cause})")
            } else {
                cause
            };
            format!("OS keychain unavailable: {cause} — start gnome-keyring (or another Secret Service) {fallback}")
        }
        E::NoStorageAccess(e) => format!("OS keychain is locked or refused access ({e}) — unlock it, {fallback}"),
        E::PlatformFailure(e) => {
            let text = e.to_string();
            if text.contains("ServiceUnknown") || text.contains("org.freedesktop.secrets") {
                format!("OS keychain unavailable: no Secret Service on the session bus — start gnome-keyring {fallback}")
            } else {
                format!("OS keychain error: {text} — {fallback}")
            }
        }
        other => format!("OS keychain error: {other}"),
    }
}

/// Run a keychain call off the caller's thread, bounded by [`LIMIT`].
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(LIMIT).ok()
}

fn timeout_message() -> String {
    format!("OS keychain did not answer within {} s (a keyring prompt may be waiting, or the Secret Service hangs)", LIMIT.as_secs())
}

/// The account's setup token, `Ok(None)` when none is stored.
pub fn get_token(service: &str, account: &Account) -> Result<Option<String>, Unavailable> {
    let (service, user, acc) = (service.to_string(), account.keychain_user(), account.clone());
    bounded(move || match keyring::Entry::new(&service, &user).and_then(|e| e.get_password()) {
        Ok(token) => Ok(Some(token)),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(Unavailable(describe(&e, &acc))),
    })
    .unwrap_or_else(|| Err(Unavailable(timeout_message())))
}

/// Store (or replace) the account's setup token.
pub fn set_token(service: &str, account: &Account, token: &str) -> Result<(), Unavailable> {
    let (service, user, acc, token) = (service.to_string(), account.keychain_user(), account.clone(), token.to_string());
    bounded(move || {
        keyring::Entry::new(&service, &user).and_then(|e| e.set_password(&token)).map_err(|e| Unavailable(describe(&e, &acc)))
    })
    .unwrap_or_else(|| Err(Unavailable(timeout_message())))
}

/// Remove the account's setup token; `Ok(false)` when there was none.
pub fn delete_token(service: &str, account: &Account) -> Result<bool, Unavailable> {
    let (service, user, acc) = (service.to_string(), account.keychain_user(), account.clone());
    bounded(move || match keyring::Entry::new(&service, &user).and_then(|e| e.delete_credential()) {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(Unavailable(describe(&e, &acc))),
    })
    .unwrap_or_else(|| Err(Unavailable(timeout_message())))
}
