//! The sign-in check before a night's work. A revoked login used to be found by the night's first
//! failed run; now, before a scheduled run takes an account whose sign-in nothing has shown working
//! in the last [`CHECK_EVERY`] (no run authenticated on it, no check), the account is asked live,
//! where its agent offers a cheap way to ask: Claude's usage endpoint, with the login's own access
//! token (a `claude /login` with the `user:profile` scope). Its answer is a verdict as a run's would
//! be: refused (HTTP 401) is `revoked` — the plan then takes another account of the pool, or holds
//! the run as sign-in work, exactly as after a refused run — and an answer is `live` (its windows
//! recorded too). Anything else (unreachable, a 5xx, a token without the scope) says nothing about
//! the sign-in and is only logged.
//!
//! Not asked: a setup token (`claude setup-token`; it may not read usage) and the other agents —
//! Codex's `codex login status` only reads its own file ("Authentication is checked when you send a
//! request"), and Gemini CLI, OpenCode and Copilot CLI offer no cheaper live question than a run.
//! Their pre-start check is the local facts the preflight already reads.

use super::set_health;
use crate::accounts::Account;
use crate::engine::state::Core;
use crate::routine::Routine;
use crate::store::HealthRecord;
use crate::words::Verdict;
use chrono::Duration;
use std::sync::Arc;

/// How long a check — or a run that authenticated — vouches for an account's sign-in.
pub const CHECK_EVERY: Duration = Duration::hours(1);

/// Check the sign-in of each account a scheduled run of `routine` may take that is due (blocking:
/// one HTTP request per account checked). Returns the accounts asked.
pub(crate) fn before_scheduled_run(core: &Arc<Core>, routine: &Routine) -> Vec<String> {
    let Some(agent) = routine.agent().cli() else { return Vec::new() };
    let Some(endpoint) = crate::agents::driver(agent).usage_endpoint() else { return Vec::new() };
    let all: Vec<Account> = core.accounts().into_iter().filter(|a| a.agent == agent).collect();
    let configured: Vec<String> = all.iter().map(|a| a.email.clone()).collect();
    let Some(candidates) = routine.candidate_accounts(&configured, None) else { return Vec::new() };
    let now = core.clock.now();
    let url = core.settings().usage_probe_url.clone();
    let http = crate::webhook::agent();
    let mut asked = Vec::new();
    for account in candidates.iter().filter_map(|email| all.iter().find(|a| a.email == *email)) {
        if !due(core, account, now) {
            continue;
        }
        // Only the login's own token, and one that may read usage: otherwise the endpoint's 403
        // would say nothing about the sign-in, every hour.
        let Some(token) = super::usage_probe::login_token(endpoint, account, now).filter(|t| !t.expired && t.reads_usage) else { continue };
        asked.push(account.email.clone());
        let answer = super::usage_probe::ask(core, &http, endpoint, &url, &token.token, now);
        let verdict = match answer {
            Ok(windows) => {
                super::usage_probe::record(core, &account.email, &windows);
                Some((Verdict::Live, "signed in: its sign-in was checked before a scheduled run (the usage endpoint answered)".to_string()))
            }
            Err(refused) if refused.status == Some(401) => Some((Verdict::Revoked, format!("its sign-in was refused when checked before a scheduled run: {}", refused.words))),
            Err(other) => {
                tracing::info!(account = %account.email, problem = %other.words, "the sign-in check said nothing about the sign-in");
                None
            }
        };
        if let Some((verdict, evidence)) = verdict {
            tracing::info!(account = %account.email, verdict = %verdict.as_str(), "sign-in checked before a scheduled run");
            set_health(core, &HealthRecord { account: account.email.clone(), verdict, evidence, at: now, resets_at: None, run_id: None });
        }
    }
    asked
}

/// Whether `account` is due for a check: not checked by this engine, and not shown working by a
/// run, in the last [`CHECK_EVERY`] — and not already refused (that verdict blocks until a new
/// login) or resting on a limit (its sign-in worked).
fn due(core: &Core, account: &Account, now: chrono::DateTime<chrono::Utc>) -> bool {
    let mut checked = core.sign_in_checked.lock().unwrap_or_else(|e| e.into_inner());
    if checked.get(&account.email).is_some_and(|t| now - *t < CHECK_EVERY) {
        return false;
    }
    let last = core.store.account_health(&account.email).ok().flatten();
    let vouched = last.as_ref().is_some_and(|h| match h.verdict {
        Verdict::Live => now - h.at < CHECK_EVERY,
        Verdict::Revoked | Verdict::RateLimited => true,
        _ => false,
    });
    if vouched {
        return false;
    }
    checked.insert(account.email.clone(), now);
    true
}
