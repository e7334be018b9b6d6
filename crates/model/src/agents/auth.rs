//! How an agent CLI signs in: what Nightshift injects into a run of an account, where the CLI
//! keeps its own login, and what that login says. Each agent's table is in its own file
//! ([`super::AgentDriver::auth`]); accounts, preflight, re-login and the window read it from there.

use chrono::{DateTime, Utc};
use serde::Serialize;

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

/// `openai` → `OPENAI_API_KEY`, `amazon-bedrock` → `AMAZON_BEDROCK_API_KEY`.
pub fn provider_key_var(provider: &str) -> String {
    let word: String = provider.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!("{word}_API_KEY")
}

/// What an agent's own login in an account's config dir says, as far as Nightshift reads it
/// (read-only: never refreshed, written or copied). Claude Code's says the most
/// ([`super::claude_login`]); for the others it is whether the login is there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct LoginFacts {
    pub present: bool,
    pub expires_at: Option<DateTime<Utc>>,
    pub refresh_expires_at: Option<DateTime<Utc>>,
    pub has_refresh_token: bool,
    pub scopes: Vec<String>,
    pub subscription: Option<String>,
    /// `oauthAccount.emailAddress` from `<config dir>/.claude.json`.
    pub email: Option<String>,
}
