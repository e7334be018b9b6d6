//! Accounts: which login a run uses, where its credential comes from, and how healthy it is.
//!
//! An account is an agent plus an identity (email) plus a config dir of its own
//! (`CLAUDE_CONFIG_DIR` / `CODEX_HOME`). Credentials, strongest first: a setup token in the OS
//! keychain (service `nightshift`, user `claude:<email>`), a setup token in the environment
//! variable `CLAUDE_CODE_OAUTH_TOKEN_<SLUG>` (headless machines without a keychain), or Claude's
//! own login in the account's config dir (read for health facts only — never refreshed, never
//! written, never copied).

pub mod claude_login;
mod config;
pub mod keychain;
pub mod redact;

pub use config::{add_account, remove_account};

use crate::home::Home;
use crate::routine::AgentKind;
use crate::settings::Settings;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Account {
    pub agent: AgentKind,
    pub email: String,
    pub config_dir: PathBuf,
}

impl Account {
    /// `claude:me@home.dev` — the keychain user name.
    pub fn keychain_user(&self) -> String {
        format!("{}:{}", self.agent.as_str(), self.email)
    }

    /// The environment variable that may hold this account's setup token.
    pub fn env_token_var(&self) -> String {
        format!("CLAUDE_CODE_OAUTH_TOKEN_{}", env_slug(&self.email))
    }
}

/// Every configured account (settings order).
pub fn accounts(home: &Home, settings: &Settings) -> Vec<Account> {
    settings
        .accounts
        .iter()
        .filter_map(|a| {
            let agent = AgentKind::from_name(&a.agent)?;
            let config_dir = a
                .config_dir
                .clone()
                .map(|p| crate::fsutil::expand_tilde(&p.display().to_string()))
                .unwrap_or_else(|| home.accounts_dir().join(agent.as_str()).join(dir_slug(&a.email)));
            Some(Account { agent, email: a.email.clone(), config_dir })
        })
        .collect()
}

/// `me@home.dev` → `ME_AT_HOME_DOT_DEV`: upper-cased, `@`→`_AT_`, `.`→`_DOT_`, any other
/// non-alphanumeric → `_`.
pub fn env_slug(email: &str) -> String {
    let mut out = String::new();
    for c in email.chars() {
        match c {
            '@' => out.push_str("_AT_"),
            '.' => out.push_str("_DOT_"),
            c if c.is_ascii_alphanumeric() => out.push(c.to_ascii_uppercase()),
            _ => out.push('_'),
        }
    }
    out
}

/// A directory name for an account: `me@home.dev` → `me-at-home.dev`.
pub fn dir_slug(email: &str) -> String {
    email
        .chars()
        .map(|c| match c {
            '@' => '+',
            c if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' => c.to_ascii_lowercase(),
            _ => '_',
        })
        .collect::<String>()
        .replace('+', "-at-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(env_slug("me@home.dev"), "ME_AT_HOME_DOT_DEV");
        assert_eq!(env_slug("first.last+x@acme-corp.io"), "FIRST_DOT_LAST_X_AT_ACME_CORP_DOT_IO");
        assert_eq!(dir_slug("Work@Acme.dev"), "work-at-acme.dev");
    }
}
