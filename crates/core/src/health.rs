//! Auth health: a verdict per account, with the time and evidence behind it, from local facts
//! (which credential exists, when it expires) and run outcomes (a run authenticated, a run was
//! refused, a rate limit). Never from the interactive login and never by refreshing a token —
//! background refreshes are suspected of getting tokens revoked.

use crate::accounts::{keychain, Account};
use crate::agents::LoginFacts;
use crate::store::HealthRecord;
use crate::words::{Agent, Verdict};
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

/// A credential "expiring" this close to its expiry.
pub const EXPIRING_HOURS: i64 = 72;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub enum CredentialSource {
    /// A setup token in the OS keychain.
    Keychain,
    /// A setup token in `CLAUDE_CODE_OAUTH_TOKEN_<SLUG>`.
    Env,
    /// The agent's own login in the account's config dir.
    AgentLogin,
    None,
}

/// What an account can authenticate with right now. The token stays inside the engine.
#[derive(Clone)]
pub struct Credential {
    pub source: CredentialSource,
    pub token: Option<String>,
    pub login: LoginFacts,
    /// When the agent login file last changed (a fresh `claude /login` clears `revoked`).
    pub login_changed_at: Option<DateTime<Utc>>,
    /// Why the keychain could not be read, if it could not.
    pub keychain_problem: Option<String>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("source", &self.source)
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .field("keychain_problem", &self.keychain_problem)
            .finish()
    }
}

/// Find the account's credential: keychain, then environment, then the agent's own login.
pub fn credential(account: &Account, keychain_service: &str, env: &[(String, String)]) -> Credential {
    let login_file = account.config_dir.join(account.auth().login_file);
    let login = crate::agents::driver(account.agent).login(&account.config_dir);
    let login_changed_at = std::fs::metadata(&login_file).and_then(|m| m.modified()).ok().map(DateTime::<Utc>::from);
    let mut cred = Credential { source: CredentialSource::None, token: None, login, login_changed_at, keychain_problem: None };
    match keychain::get_token(keychain_service, account) {
        Ok(Some(token)) => {
            cred.source = CredentialSource::Keychain;
            cred.token = Some(token);
            return cred;
        }
        Ok(None) => {}
        Err(problem) => cred.keychain_problem = Some(problem.0),
    }
    // A token set from a file or a secrets manager often ends in a newline: trimmed, as the
    // keychain's are when stored, so the agent is never handed "tok\n".
    let var = account.env_token_var();
    if let Some((_, token)) = env.iter().find(|(k, v)| *k == var && !v.trim().is_empty()) {
        cred.source = CredentialSource::Env;
        cred.token = Some(token.trim().to_string());
        return cred;
    }
    if cred.login.present {
        cred.source = CredentialSource::AgentLogin;
    }
    cred
}

/// An account's health as the UI and CLI show it.
/// (`Deserialize`: `accounts list --home` reads another home's.)
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct AccountHealth {
    pub account: String,
    pub agent: Agent,
    pub verdict: Verdict,
    /// Why, in words ("run 01j… failed auth_failed: Invalid bearer token").
    pub evidence: String,
    /// When the evidence was seen.
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub since: Option<DateTime<Utc>>,
    pub source: CredentialSource,
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub resets_at: Option<DateTime<Utc>>,
    pub config_dir: String,
    /// The exact fix, when there is one.
    pub fix: Option<String>,
    /// What this agent's stored secret is ("setup token", "OpenAI API key", "Gemini API key")
    /// and where a user gets one — so every face words Set token the same way.
    pub secret: String,
    pub secret_how: String,
    /// Its usage windows as its runs' agents last reported them (five_hour, seven_day, …); a
    /// window past its reset shows as reset. Empty until a run reports one.
    pub windows: Vec<crate::run::LimitWindow>,
}

/// The fix for an account that cannot authenticate.
pub fn relogin_hint(account: &Account) -> String {
    let auth = account.auth();
    let (secret, how) = account.secret_words();
    format!(
        "re-login: nightshiftctl accounts set-token {} (a {secret} from {how}), or {} with {}={}",
        account.email,
        auth.login_command,
        auth.config_dir_var,
        account.config_dir.display()
    )
}

/// Decide the verdict from the credential and what runs showed.
pub fn assess(account: &Account, cred: &Credential, record: Option<&HealthRecord>, now: DateTime<Utc>) -> AccountHealth {
    let mut h = AccountHealth {
        account: account.email.clone(),
        agent: account.agent,
        verdict: Verdict::Unknown,
        evidence: String::new(),
        since: None,
        source: cred.source,
        expires_at: None,
        resets_at: None,
        config_dir: account.config_dir.display().to_string(),
        fix: None,
        secret: account.secret_words().0.to_string(),
        secret_how: account.secret_words().1.to_string(),
        windows: Vec::new(),
    };
    // A run refused this account: revoked, until a new credential appears.
    if let Some(r) = record.filter(|r| r.verdict == Verdict::Revoked) {
        let relogged = cred.source == CredentialSource::AgentLogin && cred.login_changed_at.is_some_and(|t| t > r.at);
        if !relogged {
            h.verdict = Verdict::Revoked;
            h.evidence = r.evidence.clone();
            h.since = Some(r.at);
            h.fix = Some(relogin_hint(account));
            return h;
        }
    }
    if let Some(r) = record.filter(|r| r.verdict == Verdict::RateLimited) {
        let until = r.resets_at.unwrap_or(r.at);
        if until > now {
            h.verdict = Verdict::RateLimited;
            h.evidence = r.evidence.clone();
            h.since = Some(r.at);
            h.resets_at = Some(until);
            return h;
        }
    }
    match cred.source {
        CredentialSource::None => {
            h.verdict = Verdict::Unconfigured;
            h.evidence = match &cred.keychain_problem {
                Some(p) => p.clone(),
                None => "no credential: no setup token in the keychain or environment, and no agent login in its config dir".into(),
            };
            h.fix = Some(relogin_hint(account));
            h.since = Some(now);
            return h;
        }
        CredentialSource::Keychain | CredentialSource::Env => {
            h.verdict = Verdict::Ok;
            h.evidence = format!(
                "setup token in the {}",
                if cred.source == CredentialSource::Keychain { "OS keychain".to_string() } else { format!("environment ({})", account.env_token_var()) }
            );
        }
        CredentialSource::AgentLogin => {
            // With a refresh token the CLI renews its access token itself; what can run out is
            // the refresh token.
            let expiry = if cred.login.has_refresh_token { cred.login.refresh_expires_at } else { cred.login.expires_at };
            h.expires_at = expiry;
            h.verdict = Verdict::Ok;
            h.evidence = "agent login in its config dir".into();
            if let Some(t) = expiry {
                if t <= now {
                    h.verdict = Verdict::Expired;
                    h.evidence = format!("the login expired at {}", crate::words::fmt_time(&t));
                    h.fix = Some(relogin_hint(account));
                    h.since = Some(t);
                    return h;
                }
                if t - now <= Duration::hours(EXPIRING_HOURS) {
                    h.verdict = Verdict::Expiring;
                    h.evidence = format!("the login expires at {}", crate::words::fmt_time(&t));
                    h.fix = Some(relogin_hint(account));
                }
            }
        }
    }
    if let Some(r) = record.filter(|r| r.verdict == Verdict::Live) {
        if h.verdict == Verdict::Ok {
            h.verdict = Verdict::Live;
        }
        h.evidence = r.evidence.clone();
        h.since = Some(r.at);
    } else if let Some(r) = record {
        h.since = Some(r.at);
    }
    // Its config dir signed in as someone else: its runs use (and are billed to) that login.
    if let Some(other) = cred.login.email.as_deref().filter(|e| cred.source == CredentialSource::AgentLogin && !e.eq_ignore_ascii_case(&account.email)) {
        h.evidence = format!("{}; but its config dir is signed in as {other}, not {}", h.evidence, account.email);
        let auth = account.auth();
        h.fix.get_or_insert_with(|| format!("sign in there as {}: {} with {}={} — or name the account {other} in nightshift.toml", account.email, auth.login_command, auth.config_dir_var, account.config_dir.display()));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token from the environment is taken without the whitespace and newline a file or a
    /// secrets manager leaves around it; one that is only whitespace is no token.
    #[test]
    fn an_environment_token_is_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let account = Account { agent: crate::words::Agent::Claude, email: "me@home.dev".into(), config_dir: dir.path().join("claude"), provider: None };
        let var = account.env_token_var();
        let cred = credential(&account, "nightshift-test-no-such-service", &[(var.clone(), "  sk-token-1\n".to_string())]);
        assert_eq!((cred.source, cred.token.as_deref()), (CredentialSource::Env, Some("sk-token-1")));
        let blank = credential(&account, "nightshift-test-no-such-service", &[(var, " \n".to_string())]);
        assert_eq!(blank.token, None);
    }
}
