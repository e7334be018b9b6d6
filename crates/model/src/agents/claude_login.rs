//! Claude Code's own login for an account, read-only: facts for auth health (present, scopes,
//! expiry, email). Never refreshed, never written, never copied anywhere.
//!
//! Linux/Windows: `<config dir>/.credentials.json`. macOS: the keychain item Claude Code writes,
//! service `Claude Code-credentials` (+ `-<first 8 hex of sha256(config dir)>` when
//! `CLAUDE_CONFIG_DIR` is set), account = the OS user. JSON:
//! `{"claudeAiOauth": {accessToken, refreshToken, expiresAt (ms), refreshTokenExpiresAt?, scopes, subscriptionType}}`.

use super::auth::LoginFacts;
use chrono::DateTime;
use std::path::Path;

/// Parse the credentials JSON (no secret leaves this function).
pub fn parse(json: &str) -> LoginFacts {
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
    let o = &v["claudeAiOauth"];
    let ms = |k: &str| o[k].as_i64().and_then(DateTime::from_timestamp_millis);
    LoginFacts {
        present: o["accessToken"].as_str().is_some_and(|t| !t.is_empty()),
        expires_at: ms("expiresAt"),
        refresh_expires_at: ms("refreshTokenExpiresAt"),
        has_refresh_token: o["refreshToken"].as_str().is_some_and(|t| !t.is_empty()),
        scopes: o["scopes"].as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default(),
        subscription: o["subscriptionType"].as_str().map(str::to_string),
        email: None,
    }
}

/// The login facts of the account whose config dir is `dir`.
pub fn read(dir: &Path) -> LoginFacts {
    let mut facts = credentials_json(dir).map(|j| parse(&j)).unwrap_or_default();
    facts.email = identity_files(dir).iter().find_map(|file| {
        let text = std::fs::read_to_string(file).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        v["oauthAccount"]["emailAddress"].as_str().map(str::to_string)
    });
    facts
}

/// Where Claude Code keeps whom a config dir is signed in as (`oauthAccount`), in the order read: with
/// `CLAUDE_CONFIG_DIR` its `.claude.json` is inside the dir; with the default config (a plain
/// `claude /login`) the dir is `~/.claude` and the file is `~/.claude.json`, beside it.
fn identity_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let beside = (dir.file_name().is_some_and(|n| n == ".claude")).then(|| dir.parent().map(|home| home.join(".claude.json"))).flatten();
    std::iter::once(dir.join(".claude.json")).chain(beside).collect()
}

#[cfg(not(target_os = "macos"))]
fn credentials_json(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(".credentials.json")).ok()
}

#[cfg(target_os = "macos")]
fn credentials_json(dir: &Path) -> Option<String> {
    let service = macos_service(dir);
    let user = std::env::var("USER").ok()?;
    keyring::Entry::new(&service, &user).ok()?.get_password().ok()
}

/// `Claude Code-credentials-<first 8 hex of sha256(config dir)>`.
pub fn macos_service(dir: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(dir.display().to_string().as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("Claude Code-credentials-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_facts_without_keeping_secrets() {
        let f = parse(r#"{"claudeAiOauth":{"accessToken":"sk-ant-oat01-x","refreshToken":"sk-ant-ort01-y","expiresAt":1796004000000,"scopes":["user:inference","user:profile"],"subscriptionType":"max"}}"#);
        assert!(f.present && f.has_refresh_token);
        assert_eq!(f.expires_at, DateTime::from_timestamp(1796004000, 0));
        assert_eq!(f.scopes, vec!["user:inference", "user:profile"]);
        assert_eq!(f.subscription.as_deref(), Some("max"));
        assert!(!format!("{f:?}").contains("sk-ant"));
        assert_eq!(parse("not json"), LoginFacts::default());
    }

    /// The default config's identity is beside `~/.claude`; a config dir of its own keeps it
    /// inside, and its neighbour's is never read for it.
    #[test]
    fn the_identity_is_read_where_claude_code_keeps_it() {
        let home = tempfile::tempdir().unwrap();
        let write = |file: &Path, email: &str| std::fs::write(file, format!(r#"{{"oauthAccount":{{"emailAddress":"{email}"}}}}"#)).unwrap();
        let default = home.path().join(".claude");
        std::fs::create_dir_all(&default).unwrap();
        write(&home.path().join(".claude.json"), "jane@acme.dev");
        assert_eq!(read(&default).email.as_deref(), Some("jane@acme.dev"));
        let own = home.path().join("work");
        std::fs::create_dir_all(&own).unwrap();
        assert_eq!(read(&own).email, None, "not the home's");
        write(&own.join(".claude.json"), "joe@acme.dev");
        assert_eq!(read(&own).email.as_deref(), Some("joe@acme.dev"));
        write(&default.join(".claude.json"), "set@acme.dev");
        assert_eq!(read(&default).email.as_deref(), Some("set@acme.dev"), "CLAUDE_CONFIG_DIR=~/.claude keeps it inside, read first");
    }

    #[test]
    fn macos_service_name_hashes_the_config_dir() {
        let s = macos_service(Path::new("/Users/me/.claude-work"));
        assert!(s.starts_with("Claude Code-credentials-") && s.len() == "Claude Code-credentials-".len() + 8, "{s}");
    }
}
