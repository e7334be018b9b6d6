//! Accounts: which login a run uses, where its credential comes from, and how healthy it is.
//!
//! An account is an agent plus an identity (email) plus a config dir of its own
//! (`CLAUDE_CONFIG_DIR` / `CODEX_HOME` / `GEMINI_CLI_HOME` / OpenCode's XDG dirs, see [`AgentAuth`]). Credentials,
//! strongest first: a secret in the OS keychain (service `nightshift`, user `<agent>:<email>`: a
//! Claude setup token, an OpenAI API key, a Gemini API key), the same in the environment variable
//! `<VAR>_<SLUG>` (headless machines without a keychain), or the agent's own login in the
//! account's config dir (read for health facts only — never refreshed, never written, never copied).

pub mod keychain;
pub mod redact;

use crate::agents::driver;
pub use crate::agents::AgentAuth;
use crate::home::Home;
use crate::settings::Settings;
use crate::words::Agent;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Account {
    pub agent: Agent,
    pub email: String,
    pub config_dir: PathBuf,
    /// OpenCode: the provider its stored key is for (`provider = "openai"`; `anthropic` when
    /// unset). Copilot: `github` (unset) or a bring-your-own-key type. The other agents have one
    /// provider each.
    pub provider: Option<String>,
}

impl Account {
    /// `claude:me@home.dev` — the keychain user name.
    pub fn keychain_user(&self) -> String {
        format!("{}:{}", self.agent.as_str(), self.email)
    }

    /// The environment variable that may hold this account's secret (e.g.
    /// `CLAUDE_CODE_OAUTH_TOKEN_ME_AT_HOME_DOT_DEV`, `OPENAI_API_KEY_…`, `GEMINI_API_KEY_…`).
    pub fn env_token_var(&self) -> String {
        format!("{}_{}", self.secret_var(), env_slug(&self.email))
    }

    /// The variable a run gets this account's stored secret in: the agent's own
    /// ([`AgentAuth::secret_var`]), or for OpenCode its provider's `<PROVIDER>_API_KEY`
    /// (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `OPENROUTER_API_KEY`…), the variable OpenCode's
    /// built-in providers read — a custom provider in the account's opencode.json names it as
    /// `{env:<PROVIDER>_API_KEY}`. A Copilot account with a bring-your-own-key provider gets it as
    /// `COPILOT_PROVIDER_API_KEY` (its GitHub token otherwise).
    pub fn secret_var(&self) -> String {
        self.provider.as_deref().and_then(|p| driver(self.agent).provider_secret_var(p)).unwrap_or_else(|| self.auth().secret_var.to_string())
    }

    /// A Copilot account's bring-your-own-key provider type (`openai`, `azure`, `anthropic`);
    /// `None` for its GitHub sign-in and for every other agent.
    pub fn byok(&self) -> Option<&str> {
        self.provider.as_deref().and_then(|p| driver(self.agent).byok(p))
    }

    /// What this account's stored secret is and where a user gets one, for every face that asks
    /// for it: the agent's ([`AgentAuth`]), or a bring-your-own-key Copilot account's provider key.
    pub fn secret_words(&self) -> (&'static str, &'static str) {
        secret_words(self.agent, self.provider.as_deref())
    }

    /// What a run learns of the account's provider besides its key: a bring-your-own-key Copilot
    /// account's type (`COPILOT_PROVIDER_TYPE`); its endpoint and model are the routine's
    /// (`env: COPILOT_PROVIDER_BASE_URL`, `model:`).
    pub fn provider_env(&self) -> Vec<(&'static str, String)> {
        self.byok().map(|p| ("COPILOT_PROVIDER_TYPE", p.to_string())).into_iter().collect()
    }

    /// The agent's config-dir variables for this account, set for each run here: the main one
    /// ([`AgentAuth::config_dir_var`]) and any more the agent reads ([`AgentAuth::more_dirs`]).
    pub fn dir_env(&self) -> Vec<(&'static str, String)> {
        let auth = self.auth();
        std::iter::once((auth.config_dir_var, self.config_dir.display().to_string()))
            .chain(auth.more_dirs.iter().map(|(var, sub)| (*var, self.config_dir.join(sub).display().to_string())))
            .collect()
    }

    pub fn auth(&self) -> &'static AgentAuth {
        AgentAuth::of(self.agent).expect("an account is only ever made for an agent CLI (Agent::parse_cli where accounts are read)")
    }

    /// The shell line that logs this account in again, so the login lands where its runs look:
    /// `CLAUDE_CONFIG_DIR='…' claude /login`, `CODEX_HOME='…' codex login`, `GEMINI_CLI_HOME='…' gemini`.
    pub fn login_command_line(&self) -> String {
        let auth = self.auth();
        format!("{}='{}' {}", auth.config_dir_var, self.config_dir.display(), auth.login_command)
    }
}

/// What an account of `agent` with `provider` stores and where a user gets it
/// ([`Account::secret_words`]; also for an account not yet read back from the settings).
pub fn secret_words(agent: Agent, provider: Option<&str>) -> (&'static str, &'static str) {
    match provider.and_then(|p| driver(agent).byok(p)) {
        Some(_) => ("provider API key", "your provider's console (the account's `provider` says which)"),
        None => AgentAuth::of(agent).map(|a| (a.secret_name, a.secret_how)).unwrap_or(("secret", "")),
    }
}

/// Every configured account (settings order).
pub fn accounts(home: &Home, settings: &Settings) -> Vec<Account> {
    settings
        .accounts
        .iter()
        .filter_map(|a| {
            let agent = a.agent.cli()?;
            let config_dir = a
                .config_dir
                .clone()
                .map(|p| crate::fsutil::expand_tilde(&p.display().to_string()))
                .unwrap_or_else(|| home.accounts_dir().join(agent.as_str()).join(dir_slug(&a.email)));
            Some(Account { agent, email: a.email.clone(), config_dir, provider: a.provider.clone() })
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

    #[test]
    fn a_copilot_account_gets_its_github_token_or_its_own_providers_key() {
        let account = |provider: Option<&str>| Account { agent: Agent::Copilot, email: "me@gh.dev".into(), config_dir: "/acc".into(), provider: provider.map(str::to_string) };
        for signed_in in [account(None), account(Some("github"))] {
            assert_eq!((signed_in.secret_var().as_str(), signed_in.provider_env()), ("COPILOT_GITHUB_TOKEN", vec![]));
        }
        let byok = account(Some("azure"));
        assert_eq!((byok.secret_var().as_str(), byok.provider_env()), ("COPILOT_PROVIDER_API_KEY", vec![("COPILOT_PROVIDER_TYPE", "azure".to_string())]));
        assert_eq!(byok.env_token_var(), "COPILOT_PROVIDER_API_KEY_ME_AT_GH_DOT_DEV");
        assert_eq!(byok.dir_env(), [("COPILOT_HOME", "/acc".to_string())]);
        assert_eq!(byok.secret_words().0, "provider API key");
        assert_eq!(account(None).secret_words().0, "GitHub token");
        let opencode = Account { agent: Agent::OpenCode, provider: Some("openai".into()), ..account(None) };
        assert_eq!((opencode.secret_var().as_str(), opencode.provider_env()), ("OPENAI_API_KEY", vec![]));
    }
}
