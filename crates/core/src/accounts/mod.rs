//! Accounts: which login a run uses, where its credential comes from, and how healthy it is.
//!
//! An account is an agent plus an identity (email) plus a config dir of its own
//! (`CLAUDE_CONFIG_DIR` / `CODEX_HOME` / `GEMINI_CLI_HOME` / OpenCode's XDG dirs, see [`AgentAuth`]). Credentials,
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
        match (self.agent, self.provider.as_deref()) {
            (Agent::OpenCode, Some(p)) => provider_key_var(p),
            (Agent::Copilot, Some(_)) if self.byok().is_some() => "COPILOT_PROVIDER_API_KEY".to_string(),
            _ => self.auth().secret_var.to_string(),
        }
    }

    /// A Copilot account's bring-your-own-key provider type (`openai`, `azure`, `anthropic`);
    /// `None` for its GitHub sign-in and for every other agent.
    pub fn byok(&self) -> Option<&str> {
        self.provider.as_deref().filter(|p| self.agent == Agent::Copilot && *p != "github")
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
    /// More variables the agent keeps its state under, each set to a folder of the account's
    /// config dir (OpenCode follows all four XDG base directories).
    pub more_dirs: &'static [(&'static str, &'static str)],
}

/// What an account of `agent` with `provider` stores and where a user gets it
/// ([`Account::secret_words`]; also for an account not yet read back from the settings).
pub fn secret_words(agent: Agent, provider: Option<&str>) -> (&'static str, &'static str) {
    match (agent, provider) {
        (Agent::Copilot, Some(p)) if p != "github" => ("provider API key", "your provider's console (the account's `provider` says which)"),
        _ => AgentAuth::of(agent).map(|a| (a.secret_name, a.secret_how)).unwrap_or(("secret", "")),
    }
}

/// `openai` → `OPENAI_API_KEY`, `amazon-bedrock` → `AMAZON_BEDROCK_API_KEY`.
pub fn provider_key_var(provider: &str) -> String {
    let word: String = provider.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("{word}_API_KEY")
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
                more_dirs: &[],
            },
            Agent::Codex => &AgentAuth {
                config_dir_var: "CODEX_HOME",
                secret_var: "OPENAI_API_KEY",
                secret_name: "OpenAI API key",
                secret_how: "https://platform.openai.com/api-keys",
                login_file: "auth.json",
                login_command: "codex login",
                inherited: &["OPENAI_API_KEY"],
                more_dirs: &[],
            },
            Agent::Gemini => &AgentAuth {
                config_dir_var: "GEMINI_CLI_HOME",
                secret_var: "GEMINI_API_KEY",
                secret_name: "Gemini API key",
                secret_how: "https://aistudio.google.com/apikey",
                login_file: ".gemini/oauth_creds.json",
                login_command: "gemini",
                inherited: &["GEMINI_API_KEY"],
                more_dirs: &[],
            },
            // OpenCode keeps its login (`opencode auth login`: auth.json) and sessions under
            // XDG_DATA_HOME, its opencode.json under XDG_CONFIG_HOME: the account's dir is its
            // data home, with config/, state/ and cache/ inside.
            Agent::OpenCode => &AgentAuth {
                config_dir_var: "XDG_DATA_HOME",
                secret_var: "ANTHROPIC_API_KEY",
                secret_name: "provider API key",
                secret_how: "your provider's console (set `provider = \"…\"` on the account for another than Anthropic)",
                login_file: "opencode/auth.json",
                login_command: "opencode auth login",
                inherited: &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "OPENCODE_API_KEY"],
                more_dirs: &[("XDG_CONFIG_HOME", "config"), ("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache")],
            },
            // Copilot CLI keeps its settings, sessions and `copilot login` under COPILOT_HOME
            // (the login's token goes to the OS keychain; config.json names who is signed in).
            // Its cache (the unpacked CLI, ~235 MB) stays shared: nothing of the account is in it
            // but a disposable copy of the user record.
            Agent::Copilot => &AgentAuth {
                config_dir_var: "COPILOT_HOME",
                secret_var: "COPILOT_GITHUB_TOKEN",
                secret_name: "GitHub token",
                secret_how: "a fine-grained token with the Copilot Requests permission (https://github.com/settings/personal-access-tokens); with `provider = \"openai\"` (or azure, anthropic) the provider's API key instead",
                login_file: "config.json",
                login_command: "copilot login",
                inherited: &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
                more_dirs: &[],
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
