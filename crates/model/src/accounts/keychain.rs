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

/// `fallback`: what else the user can do ("or set CLAUDE_CODE_OAUTH_TOKEN_…").
fn describe(err: &keyring::Error, fallback: &str) -> String {
    use keyring::Error as E;
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
    crate::bounded::within(LIMIT, f)
}

fn timeout_message() -> String {
    format!("OS keychain did not answer within {} s (a keyring prompt may be waiting, or the Secret Service hangs)", LIMIT.as_secs())
}

/// The account's setup token, `Ok(None)` when none is stored.
pub fn get_token(service: &str, account: &Account) -> Result<Option<String>, Unavailable> {
    get_secret(service, &account.keychain_user(), &format!("or set {}", account.env_token_var()))
}

/// Store (or replace) the account's setup token.
pub fn set_token(service: &str, account: &Account, token: &str) -> Result<(), Unavailable> {
    set_secret(service, &account.keychain_user(), token, &format!("or set {}", account.env_token_var()))
}

/// Remove the account's setup token; `Ok(false)` when there was none.
pub fn delete_token(service: &str, account: &Account) -> Result<bool, Unavailable> {
    delete_secret(service, &account.keychain_user(), &format!("or set {}", account.env_token_var()))
}

/// A secret stored under `user` (an account's token, a webhook's signing secret), `Ok(None)` when
/// none is stored. `fallback` completes the error's advice.
pub fn get_secret(service: &str, user: &str, fallback: &str) -> Result<Option<String>, Unavailable> {
    let (service, user, fallback) = (service.to_string(), user.to_string(), fallback.to_string());
    bounded(move || {
        #[cfg(target_os = "linux")]
        if let Some(found) = plain::read(&service, &user) {
            return Ok(found);
        }
        match keyring::Entry::new(&service, &user).and_then(|e| e.get_password()) {
            Ok(secret) => Ok(Some(secret)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(Unavailable(describe(&e, &fallback))),
        }
    })
    .unwrap_or_else(|| Err(Unavailable(timeout_message())))
}

/// Reading through the Secret Service in a *plain* session. `keyring` opens an encrypted one —
/// a Diffie-Hellman exchange, about 9 of a one-shot `--home` command's 10 ms in the keychain —
/// which guards the secret only from a monitor of the user's own session bus, one that could as
/// well ask the Secret Service itself. The items are `keyring`'s own (attributes `service` and
/// `username`); anything but an unlocked match or none at all — a locked collection to unlock,
/// no Secret Service, an odd item — is left to `keyring`, whose errors are the ones explained.
#[cfg(target_os = "linux")]
mod plain {
    use secret_service::blocking::SecretService;
    use secret_service::EncryptionType;
    use std::collections::HashMap;

    /// `Some(found)` when the Secret Service answered plainly; `None`: ask `keyring`.
    pub(super) fn read(service: &str, user: &str) -> Option<Option<String>> {
        let ss = SecretService::connect(EncryptionType::Plain).ok()?;
        let found = ss.search_items(HashMap::from([("service", service), ("username", user)])).ok()?;
        if !found.locked.is_empty() {
            return None;
        }
        match found.unlocked.first() {
            None => Some(None),
            Some(item) => String::from_utf8(item.get_secret().ok()?).ok().map(Some),
        }
    }
}

/// Store (or replace) a secret under `user`.
pub fn set_secret(service: &str, user: &str, secret: &str, fallback: &str) -> Result<(), Unavailable> {
    let (service, user, secret, fallback) = (service.to_string(), user.to_string(), secret.to_string(), fallback.to_string());
    bounded(move || keyring::Entry::new(&service, &user).and_then(|e| e.set_password(&secret)).map_err(|e| Unavailable(describe(&e, &fallback))))
        .unwrap_or_else(|| Err(Unavailable(timeout_message())))
}

/// Remove the secret under `user`; `Ok(false)` when there was none.
pub fn delete_secret(service: &str, user: &str, fallback: &str) -> Result<bool, Unavailable> {
    let (service, user, fallback) = (service.to_string(), user.to_string(), fallback.to_string());
    bounded(move || match keyring::Entry::new(&service, &user).and_then(|e| e.delete_credential()) {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(Unavailable(describe(&e, &fallback))),
    })
    .unwrap_or_else(|| Err(Unavailable(timeout_message())))
}
