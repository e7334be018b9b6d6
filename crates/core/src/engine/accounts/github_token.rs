//! The GitHub token Nightshift asks GitHub with — polling `[github] poll`, and a host on GitHub
//! Actions: the OS keychain's (`nightshiftctl github set-token`), else `GH_TOKEN` or
//! `GITHUB_TOKEN` in the engine's environment, else what `gh auth token` prints.

use crate::engine::state::Core;
use std::time::Duration;

/// The keychain user of the GitHub token (`nightshiftctl github set-token`).
pub const TOKEN_USER: &str = "github:token";

/// The GitHub token: the OS keychain's (`nightshiftctl github set-token`), else `GH_TOKEN` or
/// `GITHUB_TOKEN` in the engine's environment, else what `gh auth token` prints (the GitHub CLI's
/// own login). Registered for masking.
pub(crate) fn token(core: &Core) -> Result<String, String> {
    let keychain = match crate::engine::accounts::secrets::kept_or_env(core, TOKEN_USER, "GH_TOKEN") {
        Ok(Some(token)) => return Ok(token),
        Ok(None) => None,
        Err(unavailable) => Some(unavailable.0),
    };
    if let Some(token) = crate::engine::accounts::secrets::from_env(core, "GITHUB_TOKEN") {
        return Ok(token);
    }
    if let Some(token) = gh_auth_token(core) {
        core.redactor.register(&token);
        return Ok(token);
    }
    let keychain = keychain.map(|words| format!(" (the OS keychain could not be read: {words})")).unwrap_or_default();
    Err(format!("no GitHub token{keychain} — store one with `nightshiftctl github set-token`, set GH_TOKEN or GITHUB_TOKEN for the app or daemon, or sign in with `gh auth login`"))
}

/// `gh auth token`, when the GitHub CLI is installed and signed in (ten seconds at most).
fn gh_auth_token(core: &Core) -> Option<String> {
    let path = core.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone())?;
    let gh = std::env::split_paths(&path).map(|d| d.join("gh")).find(|p| p.is_file())?;
    let child = std::process::Command::new(gh)
        .args(["auth", "token"])
        .env_clear()
        .envs(core.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let out = crate::bounded::child_output(child, Duration::from_secs(10)).ok()??;
    let token = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !token.is_empty()).then_some(token)
}

