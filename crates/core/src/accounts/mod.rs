//! Accounts: which login a run uses, where its credential comes from, and how healthy it is.
//!
//! An account is an agent plus an identity (email) plus a config dir of its own
//! (`CLAUDE_CONFIG_DIR` / `CODEX_HOME` / `GEMINI_CLI_HOME`, see [`AgentAuth`]). Credentials,
//! strongest first: a secret in the OS keychain (service `nightshift`, user `<agent>:<email>`: a
//! Claude setup token, an OpenAI API key, a Gemini API key), the same in the environment variable
//! `<VAR>_<SLUG>` (headless machines without a keychain), or the agent's own login in the
//! account's config dir (read for health facts only — never refreshed, never written, never copied).

pub mod claude_login;
pub mod keychain;
pub mod redact;

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
}

impl Account {
    /// `claude:me@home.dev` — the keychain user name.
    pub fn keychain_user(&self) -> String {
        format!("{}:{}", self.agent.as_str(), self.email)
    }

    /// The environment variable that may hold this account's secret (e.g.
    /// `CLAUDE_CODE_OAUTH_TOKEN_ME_AT_HOME_DOT_DEV`, `OPENAI_API_KEY_…`, `GEMINI_API_KEY_…`).
    pub fn env_token_var(&self) -> String {
        format!("{}_{}", self.auth().secret_var, env_slug(&self.email))
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

/// How each agent CLI authenticates: what Nightshift injects into a run, and where the CLI keeps
/// its own login. One table, so accounts, preflight, re-login and the UI agree per agent.
#[derive(Debug)]
pub struct AgentAuth {
    /// Set to the account's config dir for each run.
    pub config_dir_var: &'static str,
    /// Set to the stored secret (keychain or environment) for each run.
    pub secret_var: &'static str,
    /// What that secret is, in words.
    pub secret_name: &'static str,
    /// How a user gets one.
    pub secret_how: &'static str,
    /// The agent's own login, relative to the config dir.
    pub login_file: &'static str,
    /// The interactive login, run with `config_dir_var` set.
    pub login_command: &'static str,
    /// The variables a headless machine sets in the engine's own environment for the agent's
    /// documented login; passed to runs of the agent only while no account of it is configured.
    pub inherited: &'static [&'static str],
}

impl AgentAuth {
    /// How `agent` signs in; `None` for a shell command, which has no login.
    pub fn of(agent: Agent) -> Option<&'static AgentAuth> {
        Some(match agent {
            Agent::Command => return None,
            Agent::Claude => &AgentAuth {
                config_dir_var: "CLAUDE_CONFIG_DIR",
                secret_var: "CLAUDE_CODE_OAUTH_TOKEN",
                secret_name: "setup token",
                secret_how: "`claude setup-token`",
                login_file: ".credentials.json",
                login_command: "claude /login",
                inherited: &["CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
            },
            Agent::Codex => &AgentAuth {
                config_dir_var: "CODEX_HOME",
                secret_var: "OPENAI_API_KEY",
                secret_name: "OpenAI API key",
                secret_how: "https://platform.openai.com/api-keys",
                login_file: "auth.json",
                login_command: "codex login",
                inherited: &["OPENAI_API_KEY"],
            },
            Agent::Gemini => &AgentAuth {
                config_dir_var: "GEMINI_CLI_HOME",
                secret_var: "GEMINI_API_KEY",
                secret_name: "Gemini API key",
                secret_how: "https://aistudio.google.com/apikey",
                login_file: ".gemini/oauth_creds.json",
                login_command: "gemini",
                inherited: &["GEMINI_API_KEY"],
            },
        })
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
