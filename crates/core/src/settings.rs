//! `nightshift.toml`: optional settings. Every key has a default, so a missing file is fine;
//! a malformed one is an error that names file:line:col.

use crate::error::{Error, ErrorCode, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Runs at once across all routines (the scheduler issue uses it).
    pub max_parallel: usize,
    /// This machine's name for `devices:` filters; default: the hostname.
    pub device_name: Option<String>,
    /// Also read routines from agents-cli's `~/.agents/routines/`.
    pub import_agents_cli: bool,
    /// Seconds between SIGTERM and SIGKILL when a run times out or is cancelled.
    pub kill_grace_secs: u64,
    /// Pause a routine after this many failed runs in a row (0 = never).
    pub auto_pause_after: usize,
    /// Per-agent overrides, e.g. `[agents.claude] path = "/opt/claude/bin/claude"`.
    pub agents: BTreeMap<String, AgentSettings>,
    /// The accounts runs may use (`[[accounts]]`; `nightshiftctl accounts add` writes them).
    pub accounts: Vec<AccountSettings>,
    /// The OS keychain service name setup tokens are stored under.
    pub keychain_service: String,
    /// How long an account counts as rate limited when the agent did not say when it resets.
    pub rate_limit_cooldown_mins: u64,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccountSettings {
    /// `claude` (default) or `codex`.
    #[serde(default = "default_agent")]
    pub agent: String,
    pub email: String,
    /// The agent's config dir for this account; default `accounts/<agent>/<slug>/` in the home.
    pub config_dir: Option<PathBuf>,
}

fn default_agent() -> String {
    "claude".into()
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSettings {
    /// The executable to run instead of looking the agent's name up on PATH.
    pub path: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_parallel: 2,
            device_name: None,
            import_agents_cli: false,
            kill_grace_secs: 5,
            auto_pause_after: 3,
            agents: BTreeMap::new(),
            accounts: Vec::new(),
            keychain_service: "nightshift".into(),
            rate_limit_cooldown_mins: 60,
        }
    }
}

impl Settings {
    /// Load from `path`; a missing file gives the defaults.
    pub fn load(path: &Path) -> Result<Settings> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(e) => return Err(Error::io("read", path, &e)),
        };
        toml::from_str::<Settings>(&text).map_err(|e| {
            let (line, col) = e.span().map(|s| line_col(&text, s.start)).unwrap_or((1, 1));
            Error::new(
                ErrorCode::SettingsInvalid,
                format!("{}:{line}:{col}: {}", path.display(), e.message().trim()),
            )
        })
    }

    pub fn kill_grace(&self) -> Duration {
        Duration::from_secs(self.kill_grace_secs)
    }

    pub fn agent_path(&self, agent: &str) -> Option<&Path> {
        self.agents.get(agent).and_then(|a| a.path.as_deref())
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_gives_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let s = Settings::load(&dir.path().join("nightshift.toml")).unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(s.max_parallel, 2);
    }

    #[test]
    fn reads_agent_path_and_rejects_unknown_keys_with_location() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.toml");
        std::fs::write(&path, "max_parallel = 4\n[agents.claude]\npath = \"/opt/claude\"\n").unwrap();
        let s = Settings::load(&path).unwrap();
        assert_eq!(s.max_parallel, 4);
        assert_eq!(s.agent_path("claude"), Some(Path::new("/opt/claude")));

        std::fs::write(&path, "max_parallel = 4\nmax_paralel = 3\n").unwrap();
        let err = Settings::load(&path).unwrap_err();
        assert_eq!(err.code, ErrorCode::SettingsInvalid);
        assert!(err.message.contains("nightshift.toml:2:1:"), "{}", err.message);
        assert!(err.message.contains("max_paralel"), "{}", err.message);
    }
}
