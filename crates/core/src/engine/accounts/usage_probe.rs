//! The opt-in usage probe: `[[accounts]] usage_probe = true` on an account whose agent has a
//! usage endpoint ([`crate::agents::UsageEndpoint`], said in the agent's own file — today
//! Claude's) reads its windows from it — at most every [`PROBE_EVERY`] per account, and only while
//! a scheduler runs (the app, `nightshiftctl daemon`, `serve`). Off by default: it is a request the
//! user did not otherwise make. What it reads is stored like a run's report of the windows (no run
//! named), and a mark it is the first to pass is told as a notice.
//!
//! The token is the account's own sign-in: the access token of its login file, else its stored
//! token. Nothing is refreshed: an expired login is reported and waits for the agent's next run.

use crate::engine::state::Core;
use crate::events::EngineEvent;
use crate::agents::UsageEndpoint;
use crate::run::LimitWindow;
use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;

/// The least time between two probes of one account.
pub const PROBE_EVERY: Duration = Duration::minutes(10);

/// Probe every opted-in account that is due, for as long as the returned handle lives.
pub(crate) fn start(core: &Arc<Core>) -> crate::engine::signal::AbortOnDrop {
    let core = Arc::clone(core);
    crate::engine::signal::AbortOnDrop::spawn(async move {
        let http = crate::webhook::agent();
        let mut changes = core.events.subscribe();
        loop {
            // No account opted in: nothing to do until the settings change.
            let wanted = core.settings().accounts.iter().any(|a| a.usage_probe);
            if wanted {
                let (c, h) = (Arc::clone(&core), http.clone());
                let _ = tokio::task::spawn_blocking(move || probe_due(&c, &h)).await;
            }
            let look = if wanted { std::time::Duration::from_secs(60) } else { crate::engine::signal::FALLBACK };
            crate::engine::signal::sleep_or_settings_change(&mut changes, look).await;
        }
    })
}

/// Probe each opted-in account not probed in the last [`PROBE_EVERY`]; returns the
/// accounts probed.
pub(crate) fn probe_due(core: &Core, http: &ureq::Agent) -> Vec<String> {
    let settings = core.settings();
    let now = core.clock.now();
    let mut probed = Vec::new();
    for wanted in settings.accounts.iter().filter(|a| a.usage_probe) {
        let Some(endpoint) = crate::agents::driver(wanted.agent).usage_endpoint() else { continue };
        let was_failing = {
            let mut last = core.probed_at.lock().unwrap_or_else(|e| e.into_inner());
            let before = last.get(&wanted.email).copied();
            if before.is_some_and(|(t, _)| now - t < PROBE_EVERY) {
                continue;
            }
            let failing = before.is_some_and(|(_, failing)| failing);
            last.insert(wanted.email.clone(), (now, failing));
            failing
        };
        let Some(account) = core.accounts().into_iter().find(|a| a.email == wanted.email && a.agent == wanted.agent) else { continue };
        probed.push(account.email.clone());
        let result = token_of(core, endpoint, &account, now).and_then(|token| ask(core, http, endpoint, &settings.usage_probe_url, &token, now).map_err(|r| r.words));
        if let Some(entry) = core.probed_at.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&account.email) {
            entry.1 = result.is_err();
        }
        match result {
            Ok(windows) => record(core, &account.email, &windows),
            Err(words) => {
                tracing::warn!(account = %account.email, problem = %words, "the usage probe could not read the account's windows");
                // Told once until it works again (every 10 minutes would be noise).
                if !was_failing {
                    core.emit(EngineEvent::AccountNotice { account: account.email.clone(), summary: format!("✗ usage probe of {}", account.email), body: words });
                }
            }
        }
    }
    probed
}

/// Store what the probe read, and tell each mark it is the first to pass in its period.
pub(super) fn record(core: &Core, account: &str, windows: &[LimitWindow]) {
    match core.store.record_windows(account, windows) {
        Ok(before) => {
            core.emit(EngineEvent::AccountsChanged);
            let tz = crate::schedule::local_tz();
            for (w, before) in windows.iter().zip(before) {
                if let Some(mark) = w.mark_passed(before) {
                    let body = super::windows::mark_words(account, w, mark, tz);
                    core.emit(EngineEvent::AccountNotice { account: account.into(), summary: format!("◔ {account} · {} {:.0} %", w.short_name(), w.used_percent.floor()), body });
                }
            }
        }
        Err(e) => tracing::error!(account, error = %e, "could not record the usage probe's windows"),
    }
}

/// Why the usage endpoint gave no windows: its HTTP status when it answered one (401: the
/// sign-in was refused), and the words (never the token).
pub(super) struct Refusal {
    pub status: Option<u16>,
    pub words: String,
}

impl From<String> for Refusal {
    fn from(words: String) -> Refusal {
        Refusal { status: None, words }
    }
}

/// One request with `token`: the account's windows now, or why not.
pub(super) fn ask(core: &Core, http: &ureq::Agent, endpoint: &dyn UsageEndpoint, url: &str, token: &str, now: DateTime<Utc>) -> Result<Vec<LimitWindow>, Refusal> {
    core.redactor.register(token);
    let mut request = http.get(url).set("Authorization", &format!("Bearer {token}")).set("Accept", "application/json");
    for (name, value) in endpoint.headers() {
        request = request.set(name, value);
    }
    let body = match request.call() {
        Ok(r) => r.into_string().map_err(|e| format!("could not read the usage endpoint's answer: {e}"))?,
        Err(ureq::Error::Status(code, r)) => {
            let said: String = r.into_string().unwrap_or_default().chars().take(200).collect();
            let words = core.redactor.redact(&format!("the usage endpoint answered HTTP {code}: {}{}", said.trim(), endpoint.refusal_hint(code)));
            return Err(Refusal { status: Some(code), words });
        }
        Err(ureq::Error::Transport(t)) => return Err(format!("could not reach the usage endpoint {url}: {t}").into()),
    };
    let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| format!("the usage endpoint's answer is not JSON: {e}"))?;
    let windows = endpoint.windows(&v, now);
    if windows.is_empty() {
        return Err(String::from("the usage endpoint's answer holds no five-hour or seven-day window").into());
    }
    Ok(windows)
}

/// The access token of the account's own login (its login file), as the endpoint reads it.
pub(super) fn login_token(endpoint: &dyn UsageEndpoint, account: &crate::accounts::Account, now: DateTime<Utc>) -> Option<crate::agents::LoginToken> {
    let login = std::fs::read_to_string(account.config_dir.join(account.auth().login_file)).ok()?;
    endpoint.login_token(&serde_json::from_str(&login).ok()?, now)
}

/// The account's access token: its login's (unless expired), else its stored token.
fn token_of(core: &Core, endpoint: &dyn UsageEndpoint, account: &crate::accounts::Account, now: DateTime<Utc>) -> Result<String, String> {
    let from_login = login_token(endpoint, account, now);
    if let Some(login) = from_login.as_ref().filter(|l| !l.expired) {
        return Ok(login.token.clone());
    }
    // The stored token (a keychain read), only when the login cannot serve.
    match core.credential(account).token {
        Some(stored) => Ok(stored),
        None => Err(endpoint.no_token(&account.email, &account.config_dir, from_login.is_some())),
    }
}
