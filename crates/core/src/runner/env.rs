//! The environment a run's process gets: an allow-list of the engine's own variables plus the
//! routine's `env`. Anything secret the engine happens to have (an inherited
//! `CLAUDE_CODE_OAUTH_TOKEN`, `ANTHROPIC_API_KEY`, cloud credentials…) does not reach a run that
//! did not ask for it.

use std::collections::BTreeMap;

/// Variables passed through by exact name.
const PASS: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TMPDIR", "SHELL", "TZ", "COLORTERM",
    // git over ssh and corporate networks need these to work at all
    "SSH_AUTH_SOCK", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "ALL_PROXY", "all_proxy", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
];
/// Variables passed through by prefix.
const PASS_PREFIX: &[&str] = &["LC_", "XDG_"];

pub fn allowed(name: &str) -> bool {
    PASS.contains(&name) || PASS_PREFIX.iter().any(|p| name.starts_with(p))
}

/// Build a run's environment from the engine's `inherited` variables, the routine's `env` (which
/// wins) and Nightshift's own run variables.
pub fn build(
    inherited: impl IntoIterator<Item = (String, String)>,
    routine_env: &BTreeMap<String, String>,
    extra: &[(&str, String)],
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = inherited.into_iter().filter(|(k, _)| allowed(k)).collect();
    env.entry("PATH".into()).or_insert_with(|| "/usr/local/bin:/usr/bin:/bin".into());
    overlay(&mut env, routine_env, extra);
    env
}

/// Put Nightshift's run variables (`extra`, the account's secret among them) and then the
/// routine's `env` (which wins) over `env` — the one precedence for a run here and on a host.
pub fn overlay(env: &mut BTreeMap<String, String>, routine_env: &BTreeMap<String, String>, extra: &[(&str, String)]) {
    for (k, v) in extra {
        env.insert((*k).to_string(), v.clone());
    }
    for (k, v) in routine_env {
        env.insert(k.clone(), v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_not_inherited_but_routine_env_wins() {
        let inherited = vec![
            ("PATH".to_string(), "/bin".to_string()),
            ("CLAUDE_CODE_OAUTH_TOKEN".to_string(), "sk-ant-oat01-secret".to_string()),
            ("ANTHROPIC_API_KEY".to_string(), "sk-ant-api".to_string()),
            ("AWS_SECRET_ACCESS_KEY".to_string(), "x".to_string()),
            ("LC_ALL".to_string(), "C.UTF-8".to_string()),
        ];
        let routine = BTreeMap::from([("ANTHROPIC_BASE_URL".to_string(), "http://127.0.0.1:1".to_string())]);
        let env = build(inherited, &routine, &[("NIGHTSHIFT_RUN_ID", "r1".into())]);
        assert_eq!(env.get("PATH").map(String::as_str), Some("/bin"));
        assert_eq!(env.get("LC_ALL").map(String::as_str), Some("C.UTF-8"));
        assert!(!env.contains_key("CLAUDE_CODE_OAUTH_TOKEN"));
        assert!(!env.contains_key("ANTHROPIC_API_KEY"));
        assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"));
        assert_eq!(env.get("ANTHROPIC_BASE_URL").map(String::as_str), Some("http://127.0.0.1:1"));
        assert_eq!(env.get("NIGHTSHIFT_RUN_ID").map(String::as_str), Some("r1"));
    }
}
