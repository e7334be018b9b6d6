//! Account commands: health with the verdicts and usage windows behind it, a fresh check, storing a
//! token, re-login, and opening a link (only http, https and mailto).

use super::{blocking, Face};
use crate::error::{Error, ErrorCode, Result};
use crate::Engine;
use serde::Serialize;
use crate::health::AccountHealth;
use crate::store::{HealthRecord, UsageRow};

/// An account for the Accounts view: its health and the verdicts behind it.
#[derive(Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct AccountView {
    pub health: AccountHealth,
    pub history: Vec<HealthRecord>,
    /// Runs and tokens in the last 5 hours and 7 days (`None`: no run in that window).
    pub last_5h: Option<UsageRow>,
    pub last_7d: Option<UsageRow>,
    /// When it hit a rate limit in the last 30 days (and when that limit reset), newest first.
    pub limits: Vec<HealthRecord>,
    /// `reserve` (percent of its windows kept from scheduled runs) and `usage_probe`, as set.
    pub reserve: Option<u8>,
    pub usage_probe: bool,
}

fn account_view(e: &Engine, health: AccountHealth, windows: &AccountWindows) -> Result<AccountView> {
    let history = e.account_history(&health.account, 5)?;
    let limits = e.rate_limits_since(&health.account, e.clock_now() - chrono::Duration::days(30))?;
    let (last_5h, last_7d) = (windows.0.get(&health.account).cloned(), windows.1.get(&health.account).cloned());
    let settings = e.settings();
    let set = settings.accounts.iter().find(|a| a.email == health.account && a.agent == health.agent);
    let (reserve, usage_probe) = (set.and_then(|a| a.reserve), set.is_some_and(|a| a.usage_probe));
    Ok(AccountView { health, history, last_5h, last_7d, limits, reserve, usage_probe })
}

/// Set an account's `reserve` and `usage_probe` (written to nightshift.toml).
pub async fn set_account_options(engine: &Engine, email: &str, reserve: Option<u8>, usage_probe: bool) -> Result<()> {
    let email = email.to_string();
    blocking(engine, move |e| e.set_account_options(&email, reserve, usage_probe)).await
}

type AccountWindows = (std::collections::BTreeMap<String, UsageRow>, std::collections::BTreeMap<String, UsageRow>);

/// Every account with its health (reads the keychain: bounded, off the async workers).
pub async fn list_accounts(engine: &Engine) -> Result<Vec<AccountView>> {
    blocking(engine, |e| {
        let windows = crate::view::usage::account_windows(&e, e.clock_now())?;
        e.accounts_health().into_iter().map(|h| account_view(&e, h, &windows)).collect()
    })
    .await
}

/// Check one account again now.
pub async fn check_account(engine: &Engine, email: &str) -> Result<AccountView> {
    let email = email.to_string();
    blocking(engine, move |e| {
        let h = e.account_health(&email)?;
        let windows = crate::view::usage::account_windows(&e, e.clock_now())?;
        account_view(&e, h, &windows)
    })
    .await
}

/// Store a pasted setup token in the OS keychain (the field is cleared by the UI right after).
pub async fn set_token(engine: &Engine, email: &str, token: &str) -> Result<()> {
    engine.set_token(email, token).await
}

#[derive(Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Relogin {
    /// A terminal was opened running the login.
    pub opened: Option<String>,
    /// The exact command, to show and copy.
    pub command: String,
    /// What can be pasted instead ("setup token", "OpenAI API key", …) and where to get one.
    pub secret: &'static str,
    pub secret_how: &'static str,
}

/// Re-login: a terminal with the agent's own login for the account's config dir where the host
/// can open one, else the command to copy.
pub fn relogin(engine: &Engine, face: &dyn Face, email: &str) -> Result<Relogin> {
    let account = engine.account(email)?;
    let (secret, secret_how) = account.secret_words();
    Ok(match face.open_terminal(&account) {
        Ok(terminal) => Relogin { opened: Some(terminal), command: account.login_command_line(), secret, secret_how },
        Err(command) => Relogin { opened: None, command, secret, secret_how },
    })
}

/// Open a link from a report outside the window. Only web and mail links.
pub fn open_link(face: &dyn Face, url: &str) -> Result<()> {
    if !safe_link(url) {
        return Err(Error::new(ErrorCode::Usage, "only http, https and mailto links are opened"));
    }
    face.open_link(url)
}

pub fn safe_link(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    ["https://", "http://", "mailto:"].iter().any(|p| lower.starts_with(p)) && !url.chars().any(char::is_control)
}

/// Every host routines are placed on, with its health (for the Accounts view's Hosts list).
pub async fn list_hosts(engine: &Engine) -> Result<Vec<crate::engine::HostView>> {
    blocking(engine, |e| e.hosts()).await
}

/// A routine secret for the Accounts view: its name and where it is kept — never its value — and
/// the routines that name it.
#[derive(Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct SecretView {
    pub name: String,
    /// `keychain` (`nightshiftctl secrets set`), `environment` (`NIGHTSHIFT_SECRET_<NAME>`), or
    /// `missing` (a routine names it and nothing holds it: its runs are blocked).
    #[cfg_attr(feature = "typescript", ts(type = "\"keychain\" | \"environment\" | \"missing\""))]
    pub source: &'static str,
    /// RFC 3339: when it was stored (keychain secrets).
    pub set_at: Option<String>,
    pub used_by: Vec<String>,
}

/// The routines' secrets by name, stored or missing (no value is read).
pub async fn list_secrets(engine: &Engine) -> Result<Vec<SecretView>> {
    blocking(engine, |e| {
        let routines = e.routines();
        let used_by = |name: &str| routines.routines.iter().filter(|r| r.secrets.iter().any(|s| s == name)).map(|r| r.name.clone()).collect::<Vec<_>>();
        let mut all: Vec<SecretView> = e
            .secrets()?
            .into_iter()
            .map(|s| SecretView {
                source: s.source.as_str(),
                set_at: s.set_at.map(|t| crate::words::fmt_time(&t)),
                used_by: used_by(&s.name),
                name: s.name,
            })
            .collect();
        for r in &routines.routines {
            for name in &r.secrets {
                if !all.iter().any(|s| &s.name == name) {
                    all.push(SecretView { name: name.clone(), source: "missing", set_at: None, used_by: used_by(name) });
                }
            }
        }
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(all)
    })
    .await
}
