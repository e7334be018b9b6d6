//! The opt-in usage probe: `[[accounts]] usage_probe = true` on a Claude account reads its
//! windows from Claude's OAuth usage endpoint (`GET /api/oauth/usage`, `anthropic-beta:
//! oauth-2025-04-20`, the request CodexBar makes) — at most every [`PROBE_EVERY`] per account, and
//! only while a scheduler runs (the app, `nightshiftctl daemon`, `serve`). Off by default: it is a
//! request the user did not otherwise make. What it reads is stored like a run's report of the
//! windows (no run named), and a mark it is the first to pass is told as a notice.
//!
//! The token is the account's own sign-in: the access token of its Claude login
//! (`.credentials.json` in its config dir), else its stored setup token. Nothing is refreshed:
//! an expired login is reported and waits for Claude Code's next run to refresh it.

use crate::engine::state::Core;
use crate::events::EngineEvent;
use crate::run::LimitWindow;
use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;

/// The least time between two probes of one account.
pub const PROBE_EVERY: Duration = Duration::minutes(10);
/// Claude's usage endpoint wants this beta flag with an OAuth token.
const BETA: &str = "oauth-2025-04-20";

/// Probe every opted-in account that is due, for as long as the returned handle lives.
pub(crate) fn start(core: &Arc<Core>) -> crate::engine::signal::AbortOnDrop {
    let core = Arc::clone(core);
    crate::engine::signal::AbortOnDrop::spawn(async move {
        let http = crate::webhook::agent();
        loop {
            let (c, h) = (Arc::clone(&core), http.clone());
            let _ = tokio::task::spawn_blocking(move || probe_due(&c, &h)).await;
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        }
    })
}

/// Probe each opted-in Claude account not probed in the last [`PROBE_EVERY`]; returns the
/// accounts probed.
pub(crate) fn probe_due(core: &Core, http: &ureq::Agent) -> Vec<String> {
    let settings = core.settings();
    let now = core.clock.now();
    let mut probed = Vec::new();
    for wanted in settings.accounts.iter().filter(|a| a.usage_probe && crate::agents::driver(a.agent).has_usage_endpoint()) {
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
        let result = probe(core, http, &settings.usage_probe_url, &account, now);
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
fn record(core: &Core, account: &str, windows: &[LimitWindow]) {
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

/// One request: the account's windows now, or why not in words (never the token).
fn probe(core: &Core, http: &ureq::Agent, url: &str, account: &crate::accounts::Account, now: DateTime<Utc>) -> Result<Vec<LimitWindow>, String> {
    let token = token_of(core, account, now)?;
    core.redactor.register(&token);
    let response = http.get(url).set("Authorization", &format!("Bearer {token}")).set("anthropic-beta", BETA).set("Accept", "application/json").call();
    let body = match response {
        Ok(r) => r.into_string().map_err(|e| format!("could not read the usage endpoint's answer: {e}"))?,
        Err(ureq::Error::Status(code, r)) => {
            let said: String = r.into_string().unwrap_or_default().chars().take(200).collect();
            let hint = match code {
                401 => " — the sign-in was refused; sign in again (`claude /login` in the account's config dir)",
                403 => " — the token may not read usage (a `claude setup-token` token cannot: it lacks the user:profile scope; sign in with `claude /login` in the account's config dir)",
                _ => "",
            };
            return Err(core.redactor.redact(&format!("the usage endpoint answered HTTP {code}: {}{hint}", said.trim())));
        }
        Err(ureq::Error::Transport(t)) => return Err(format!("could not reach the usage endpoint {url}: {t}")),
    };
    let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| format!("the usage endpoint's answer is not JSON: {e}"))?;
    let windows = windows_of(&v, now);
    if windows.is_empty() {
        return Err("the usage endpoint's answer holds no five-hour or seven-day window".into());
    }
    Ok(windows)
}

/// The account's OAuth access token: its Claude login's (unless expired), else its stored token.
fn token_of(core: &Core, account: &crate::accounts::Account, now: DateTime<Utc>) -> Result<String, String> {
    let login = std::fs::read_to_string(account.config_dir.join(account.auth().login_file)).ok().and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    let oauth = login.as_ref().map(|l| &l["claudeAiOauth"]);
    let login_token = oauth.and_then(|o| o["accessToken"].as_str()).filter(|t| !t.is_empty());
    let expired = oauth.and_then(|o| o["expiresAt"].as_i64()).and_then(DateTime::from_timestamp_millis).is_some_and(|t| t <= now);
    if let Some(token) = login_token.filter(|_| !expired) {
        return Ok(token.to_string());
    }
    // The stored token (a keychain read), only when the login cannot serve.
    match (core.credential(account).token, login_token) {
        (Some(stored), _) => Ok(stored),
        (None, Some(_)) => Err(format!("the Claude login in {} has expired (Claude Code refreshes it on its next run; Nightshift refreshes nothing)", account.config_dir.display())),
        (None, None) => Err(format!("{} has no sign-in to ask with: sign in with `claude /login` in {}", account.email, account.config_dir.display())),
    }
}

/// The endpoint's windows: `five_hour`, `seven_day` and each model's weekly one
/// (`seven_day_opus`, …) that is not null; `utilization` is a percent, `resets_at` a time.
fn windows_of(v: &serde_json::Value, now: DateTime<Utc>) -> Vec<LimitWindow> {
    let Some(all) = v.as_object() else { return Vec::new() };
    let mut out: Vec<LimitWindow> = all
        .iter()
        .filter(|(k, _)| *k == "five_hour" || k.starts_with("seven_day"))
        .filter_map(|(k, w)| {
            let used = w["utilization"].as_f64()?.clamp(0.0, 100.0);
            Some(LimitWindow {
                window: k.clone(),
                used_percent: used,
                resets_at: w["resets_at"].as_str().and_then(crate::words::parse_time),
                // The endpoint gives no status word: the share says it.
                status: LimitWindow::status_for_share(used).into(),
                seen_at: now,
                run_id: None,
            })
        })
        .collect();
    out.sort_by_key(|w| (w.window != "five_hour", w.window != "seven_day", w.window.clone()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoints_windows_are_read_as_percent_with_their_resets() {
        let v = serde_json::json!({
            "five_hour": {"utilization": 61.0, "resets_at": "2026-12-03T23:59:59.571404+00:00"},
            "seven_day": {"utilization": 22.0, "resets_at": "2026-12-08T09:59:59.571468+00:00"},
            "seven_day_opus": null,
            "seven_day_sonnet": {"utilization": 101.0, "resets_at": null},
            "extra_usage": {"is_enabled": false, "utilization": null}
        });
        let got: Vec<(String, f64, Option<String>, String)> = windows_of(&v, Utc::now()).into_iter().map(|w| (w.window, w.used_percent, w.resets_at.map(|t| crate::words::fmt_time(&t)), w.status)).collect();
        assert_eq!(
            got,
            [
                ("five_hour".to_string(), 61.0, Some("2026-12-03T23:59:59.571Z".to_string()), "allowed".to_string()),
                ("seven_day".to_string(), 22.0, Some("2026-12-08T09:59:59.571Z".to_string()), "allowed".to_string()),
                ("seven_day_sonnet".to_string(), 100.0, None, "rejected".to_string()),
            ]
        );
        assert!(windows_of(&serde_json::json!({"error": "x"}), Utc::now()).is_empty());
    }
}
