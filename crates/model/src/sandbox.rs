//! The sandbox a run may be put in — `sandbox: on|off`, `sandbox_hide:`, `allow.hosts:`,
//! `allow.dirs:` and `[defaults] sandbox` — as words and rules: what a routine may name, what is
//! hidden from every sandboxed run, which hosts its agent may reach. How the sandbox is built on
//! this machine (bubblewrap, the network proxy) is the runner's (`runner::sandbox` in the engine).
//!
//! Why it exists: an agent in `skip` mode at 3 a.m. is otherwise bounded only by what its CLI
//! agrees to enforce, and every CLI may read `~/.ssh`, another account's login or the Nightshift
//! database and reach any host. The sandbox bounds it by the machine instead.

use crate::words::string_enum;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

string_enum!(
    /// `sandbox:` in a routine, `[defaults] sandbox` in nightshift.toml.
    Switch as "sandbox" { On = "on", Off = "off" }
);

/// What a routine asks of the sandbox (the engine decides, with the settings and the machine,
/// whether its runs get one: [`Sandbox::wanted`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Sandbox {
    /// `sandbox:` as the file (or `[defaults] sandbox`) says; `None`: neither says.
    pub asked: Option<Switch>,
    /// Where `asked` came from, for the words of a refusal: `sandbox:` or `[defaults] sandbox`.
    pub asked_by: Option<&'static str>,
    /// `sandbox_hide:` — more paths no sandboxed run of it may see.
    pub hide: Vec<PathBuf>,
}

/// Whether a run gets a sandbox, and if it must.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// Asked for (`sandbox: on`, or `[defaults] sandbox = "on"`): where it cannot be built, the run
    /// is `blocked · no_sandbox`, never run without it.
    Required,
    /// Nightshift's own default for an agent routine: on where bubblewrap works; where it does not,
    /// the run goes without one and its record says so.
    WhereItWorks,
    /// `sandbox: off`, or a command routine that does not ask.
    Off,
}

impl Sandbox {
    /// `agent`: the routine runs an agent CLI (commands are off unless they ask).
    pub fn wanted(&self, agent: bool) -> Wanted {
        match self.asked {
            Some(Switch::On) => Wanted::Required,
            Some(Switch::Off) => Wanted::Off,
            None if agent => Wanted::WhereItWorks,
            None => Wanted::Off,
        }
    }

    /// The words `routines list` and the window show for it.
    pub fn words(&self, agent: bool) -> &'static str {
        match self.wanted(agent) {
            Wanted::Required => "on",
            Wanted::WhereItWorks => "on (default)",
            Wanted::Off => "off",
        }
    }
}

/// What every sandboxed run is kept from seeing, under the user's home: SSH and GPG keys, cloud
/// and registry credentials, the GitHub CLI's token, the desktop keyring's files.
pub const HIDDEN_IN_HOME: &[&str] = &[".ssh", ".gnupg", ".aws", ".config/gh", ".netrc", ".docker", ".local/share/keyrings"];

/// The home's folders hidden from every sandboxed run (those that exist are hidden).
pub fn hidden_in_home(home: &Path) -> Vec<PathBuf> {
    HIDDEN_IN_HOME.iter().map(|p| home.join(p)).collect()
}

/// A folder a routine names for the sandbox (`sandbox_hide:`, `allow.dirs:`), checked so that it
/// can never make the sandbox wider than written: no NUL, no `..`, not `/`, not a link (a link to
/// `~/.ssh` in `allow.dirs` would open what the sandbox hides), and — for a folder it may write
/// (`writable`) — not inside one of the hidden ones (a folder above one keeps it hidden: the hidden
/// list is laid over the writable folders). `~` is the home, a relative path is under it.
pub fn check_folder(field: &str, text: &str, home: Option<&Path>, writable: bool) -> Result<PathBuf, String> {
    if text.contains('\0') {
        return Err(format!("`{field}`: a path with a NUL character in it is not a path"));
    }
    if text.trim().is_empty() {
        return Err(format!("`{field}`: an empty path; name a folder"));
    }
    let path = crate::fsutil::folder_in_home(text.trim(), home);
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!("`{field}`: {text} climbs out with `..`; write the folder itself"));
    }
    if path.components().all(|c| matches!(c, Component::RootDir | Component::CurDir)) {
        return Err(format!("`{field}`: `/` is the whole machine; name the folder itself"));
    }
    // A link anywhere on the way is refused: what it points to is what the sandbox would use.
    if let Ok(real) = std::fs::canonicalize(&path) {
        let lexical: PathBuf = path.components().filter(|c| *c != Component::CurDir).collect();
        if real != lexical {
            return Err(format!("`{field}`: {} is a link (to {}); name the folder itself", path.display(), real.display()));
        }
    }
    if writable {
        if let Some(home) = home {
            if let Some(hidden) = hidden_in_home(home).into_iter().find(|h| path.starts_with(h)) {
                return Err(format!("`{field}`: {} would open {}, which no sandboxed run may see", path.display(), hidden.display()));
            }
        }
    }
    Ok(path)
}

/// An `allow.hosts` entry: a host name or address, with a port or not (`api.example.com`,
/// `127.0.0.1:8080`, `*.example.com` for its subdomains) — no scheme, path or user.
pub fn check_host(text: &str) -> Result<String, String> {
    let t = text.trim();
    let bad = |why: &str| Err(format!("`allow.hosts`: \"{}\" {why} (write a host, e.g. api.example.com or 127.0.0.1:8080)", crate::words::first_line(t, 80)));
    if t.is_empty() {
        return bad("is empty");
    }
    if t.contains("://") || t.contains('/') || t.contains('@') {
        return bad("is not a host name");
    }
    let (host, port) = split_host_port(t);
    if port == Some(None) {
        return bad("has a port that is not a number");
    }
    let name = host.strip_prefix("*.").unwrap_or(host);
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']')) {
        return bad("is not a host name");
    }
    Ok(t.to_ascii_lowercase())
}

/// `host:port` → (`host`, `Some(Some(port))`); `host` → (`host`, `None`); a bad port →
/// `Some(None)`. IPv6 in brackets (`[::1]:8080`).
fn split_host_port(t: &str) -> (&str, Option<Option<u16>>) {
    let split = match t.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map(|(h, p)| (h, p.strip_prefix(':'))),
        None if t.matches(':').count() == 1 => t.split_once(':').map(|(h, p)| (h, Some(p))),
        None => Some((t, None)),
    };
    match split {
        Some((h, Some(p))) => (h, Some(p.parse().ok())),
        Some((h, None)) => (h, None),
        None => (t, None),
    }
}

/// Does `allowed` (an `allow.hosts` entry or an agent's API host) let a connection to `host` on
/// `port` through? A host without a port allows 443 and 80; `*.x` allows x's subdomains.
pub fn host_allowed(allowed: &str, host: &str, port: u16) -> bool {
    let (name, want) = split_host_port(allowed);
    let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let name_ok = match name.strip_prefix("*.") {
        Some(parent) => host.ends_with(&format!(".{parent}")),
        None => host == name || (is_loopback_name(name) && is_loopback_name(&host)),
    };
    let port_ok = match want {
        Some(Some(p)) => p == port,
        _ => port == 443 || port == 80,
    };
    name_ok && port_ok
}

/// `localhost`, `127.0.0.1`, `::1` — one machine's own loopback, however it is written.
pub fn is_loopback_name(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// The hosts the run's environment points its agent at: every `…_URL` variable that holds an
/// http(s) address (`ANTHROPIC_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`, `COPILOT_PROVIDER_BASE_URL`…),
/// as `host:port`. The user set them for the agent to reach, so the sandbox lets them through.
pub fn hosts_in_env(env: &BTreeMap<String, String>) -> Vec<String> {
    env.iter().filter(|(k, _)| k.ends_with("_URL")).filter_map(|(_, v)| url_host(v)).collect()
}

/// `http://127.0.0.1:8080/v1` → `127.0.0.1:8080`; `https://api.x.com` → `api.x.com:443`.
pub fn url_host(url: &str) -> Option<String> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "https" | "wss" => 443,
        "http" | "ws" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    if authority.is_empty() {
        return None;
    }
    let (host, port) = split_host_port(authority);
    match port {
        Some(Some(p)) => Some(format!("{}:{p}", bracket(host))),
        Some(None) => None,
        None => Some(format!("{}:{default}", bracket(host))),
    }
}

fn bracket(host: &str) -> String {
    if host.contains(':') { format!("[{host}]") } else { host.to_string() }
}

/// The loopback ports among `hosts` (`127.0.0.1:8080` → 8080): a local model server or a test
/// API the run reaches at its own address, which the sandbox forwards to the machine's loopback.
pub fn loopback_ports(hosts: &[String]) -> Vec<u16> {
    let mut ports: Vec<u16> = hosts
        .iter()
        .filter_map(|h| match split_host_port(h) {
            (name, Some(Some(port))) if is_loopback_name(name) => Some(port),
            _ => None,
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// What an agent CLI needs inside the sandbox, from its own file (`agents/<agent>.rs`): the hosts
/// of its API and sign-in, the folders of its own it writes, and the config files that may point
/// it elsewhere. Beside these a run may reach what its environment's `…_URL` variables name and
/// its `allow.hosts`, and write its working folder, its run's folder, its account's folders and
/// its `allow.dirs`.
#[derive(Debug)]
pub struct Needs {
    /// The vendor's hosts (`*.x` for subdomains), reached on 443 (and 80).
    pub api_hosts: &'static [&'static str],
    /// Hosts the CLI calls on its own, for nothing the run asked (update checks, feature flags):
    /// refused like any other and kept in the run's record of refusals, but not the run's denials
    /// (the agent did not try them; `on_denial: fail` is not about them).
    pub background_hosts: &'static [&'static str],
    /// Folders and files under the home the CLI writes when it runs on the user's own login.
    pub home_state: &'static [&'static str],
    /// More variables naming folders it writes (its config dir's variable and the account's
    /// other folders are writable anyway).
    pub state_vars: &'static [&'static str],
    /// Config files that may name another API address (`base_url`, `baseURL`): the variable
    /// naming its folder, the folder under the home without it, and the file in that folder.
    pub config_files: &'static [(&'static str, &'static str, &'static str)],
}

impl Needs {
    pub const NONE: Needs = Needs { api_hosts: &[], background_hosts: &[], home_state: &[], state_vars: &[], config_files: &[] };
}

/// The API addresses an agent's own config files name (any key ending in `url`, case aside,
/// holding an http(s) address: Codex's `model_providers.<p>.base_url`, OpenCode's
/// `provider.<p>.options.baseURL`), as `host:port`. A file that cannot be read names none.
pub fn hosts_in_config(needs: &Needs, env: &BTreeMap<String, String>, home: Option<&Path>) -> Vec<String> {
    let mut hosts = Vec::new();
    for (var, under_home, file) in needs.config_files {
        let dir = match (env.get(*var), home) {
            (Some(dir), _) => PathBuf::from(dir),
            (None, Some(home)) => home.join(under_home),
            (None, None) => continue,
        };
        let path = dir.join(file);
        let Ok(text) = crate::fsutil::read_text_file(&path, 1024 * 1024) else { continue };
        let value: Option<serde_json::Value> = match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => toml::from_str(&text).ok(),
            _ => serde_json::from_str(&text).ok(),
        };
        if let Some(value) = value {
            collect_urls(&value, &mut hosts);
        }
    }
    hosts
}

fn collect_urls(value: &serde_json::Value, hosts: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                match v.as_str() {
                    Some(url) if k.to_ascii_lowercase().ends_with("url") => hosts.extend(url_host(url)),
                    _ => collect_urls(v, hosts),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_urls(v, hosts)),
        _ => {}
    }
}

/// One connection the sandbox's proxy refused, as it is kept in the run's folder (one JSON line
/// each, [`crate::run_dir::RunDir::sandbox_refused`]) and recorded among the run's denials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Refusal {
    /// `host:port`.
    pub host: String,
    /// One of the agent CLI's own background hosts ([`Needs::background_hosts`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
}

/// Whether a run went in the machine's sandbox, as its folder says: `on` (its plan is there), or
/// `off: <why>` — `None` for a run that has neither (one from before the sandbox, or one that
/// never started). What `show` and the window's run detail say.
pub fn words_of(run_dir: &std::path::Path) -> Option<String> {
    let dir = crate::run_dir::RunDir::at(run_dir);
    if dir.sandbox_plan().is_file() {
        return Some("on".into());
    }
    std::fs::read_to_string(dir.sandbox_off()).ok().map(|why| format!("off: {}", why.trim()))
}

/// What a sandboxed run's tool results say when the sandbox refused them: a write to the
/// read-only machine, a read of what it hides.
pub const REFUSED_SIGNS: &[&str] = &["Read-only file system", "Permission denied", "Operation not permitted"];

/// Whether a tool's output in a sandboxed run says the sandbox refused it ([`REFUSED_SIGNS`]).
pub fn refused_by_machine(said: &str) -> bool {
    REFUSED_SIGNS.iter().any(|sign| said.contains(sign))
}

/// The network refusals a sandboxed run left in its folder, as the run's denials
/// (`Network(host:port)`), each host once — but its CLI's own background calls.
pub fn refusals(run_dir: &Path) -> Vec<crate::run::Denial> {
    let text = std::fs::read_to_string(crate::run_dir::RunDir::at(run_dir).sandbox_refused()).unwrap_or_default();
    let mut hosts: Vec<String> = Vec::new();
    for line in text.lines() {
        if let Ok(r) = serde_json::from_str::<Refusal>(line) {
            if !r.background && !hosts.contains(&r.host) {
                hosts.push(r.host);
            }
        }
    }
    hosts.into_iter().map(|input| crate::run::Denial { tool: "Network".into(), input }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_can_never_widen_the_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join("work")).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
        let check = |text: &str, writable: bool| check_folder("allow.dirs", text, Some(home), writable);
        assert_eq!(check("work", true).unwrap(), home.join("work"));
        assert!(check("/", true).unwrap_err().contains("`/` is the whole machine"));
        assert!(check("//", false).unwrap_err().contains("the whole machine"));
        assert!(check("work/../.ssh", true).unwrap_err().contains("climbs out with `..`"));
        assert!(check("keys", true).unwrap_err().contains("is a link (to "), "{:?}", check("keys", true));
        assert!(check("keys", false).unwrap_err().contains("is a link"));
        assert!(check("a\0b", true).unwrap_err().contains("NUL"));
        assert!(check(".ssh", true).unwrap_err().contains("no sandboxed run may see"));
        assert!(check(".ssh/sub", true).unwrap_err().contains("no sandboxed run may see"));
        // Hiding more is always allowed; a folder above a hidden one stays hidden inside it (the
        // hidden list is laid over the writable folders).
        assert_eq!(check(".ssh", false).unwrap(), home.join(".ssh"));
        assert_eq!(check(home.to_str().unwrap(), true).unwrap(), home);
    }

    #[test]
    fn hosts_are_checked_and_matched_by_name_and_port() {
        assert_eq!(check_host("API.example.com").unwrap(), "api.example.com");
        assert!(check_host("https://x.com").is_err());
        assert!(check_host("x.com/path").is_err());
        assert!(check_host("x.com:http").unwrap_err().contains("port"));
        assert!(check_host("").is_err());
        assert!(host_allowed("api.example.com", "api.example.com", 443));
        assert!(!host_allowed("api.example.com", "api.example.com", 22));
        assert!(!host_allowed("api.example.com", "evil.com", 443));
        assert!(host_allowed("*.example.com", "a.example.com", 443));
        assert!(!host_allowed("*.example.com", "example.com.evil", 443));
        assert!(host_allowed("127.0.0.1:8080", "localhost", 8080));
        assert!(!host_allowed("127.0.0.1:8080", "127.0.0.1", 8081));
        assert!(host_allowed("[::1]:9", "::1", 9));
    }

    #[test]
    fn the_env_names_the_hosts_its_agent_is_pointed_at() {
        let env = BTreeMap::from([
            ("ANTHROPIC_BASE_URL".to_string(), "http://127.0.0.1:4100".to_string()),
            ("COPILOT_PROVIDER_BASE_URL".to_string(), "https://llm.corp.example/v1".to_string()),
            ("HTTP_SOMETHING".to_string(), "http://x".to_string()),
            ("ODD_URL".to_string(), "file:///etc".to_string()),
        ]);
        assert_eq!(hosts_in_env(&env), vec!["127.0.0.1:4100".to_string(), "llm.corp.example:443".to_string()]);
        assert_eq!(url_host("http://u:p@[::1]:81/x"), Some("[::1]:81".into()));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "model = \"gpt-5\"\n[model_providers.fake]\nbase_url = \"http://127.0.0.1:4200/v1\"\n").unwrap();
        const CODEX: Needs = Needs { api_hosts: &[], background_hosts: &[], home_state: &[], state_vars: &[], config_files: &[("CODEX_HOME", ".codex", "config.toml")] };
        let env = BTreeMap::from([("CODEX_HOME".to_string(), dir.path().display().to_string())]);
        assert_eq!(hosts_in_config(&CODEX, &env, None), vec!["127.0.0.1:4200".to_string()]);
        assert_eq!(hosts_in_config(&CODEX, &BTreeMap::new(), Some(dir.path())), Vec::<String>::new(), "no .codex there");
        assert_eq!(loopback_ports(&["127.0.0.1:4100".into(), "localhost:4100".into(), "x.com:80".into()]), vec![4100]);
    }
}
