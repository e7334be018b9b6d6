//! `[[homes]]`: other machines' Nightshift this one looks at — an always-on box that owns its
//! routines' schedule while the laptop's tray, window and CLI show and control it. A home is
//! reached where its `nightshiftctl serve` (or the app's `[serve] listen`) answers: through an SSH
//! tunnel to its loopback (`ssh://`), or directly on this machine's loopback (`http://127.0.0.1`).
//! Its access token lives in the OS keychain, never here.

use serde::Deserialize;

/// One `[[homes]]` entry, as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HomeSettings {
    /// What the CLI's `--home`, the tray and the window call it.
    pub name: String,
    /// `ssh://[user@]host[:ssh-port][/serve-port]` or `http://127.0.0.1:PORT`.
    pub url: String,
}

/// Where `serve` listens when it is not told otherwise (`serve --addr`).
pub const DEFAULT_SERVE_PORT: u16 = 7878;

/// How a home is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeUrl {
    /// Through OpenSSH: `ssh … -W 127.0.0.1:<serve_port> <destination>` per connection, sharing one
    /// connection per machine — nothing listens on either machine's network.
    Ssh { destination: String, ssh_port: Option<u16>, serve_port: u16 },
    /// Straight to a `serve` on this machine's loopback (a second home on one machine, or a
    /// tunnel the user keeps themselves).
    Loopback { port: u16 },
}

impl HomeUrl {
    /// Read a home's URL; the error says what is accepted and why.
    pub fn parse(url: &str) -> Result<HomeUrl, String> {
        let url = url.trim();
        if let Some(rest) = url.strip_prefix("ssh://") {
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let serve_port = match path.trim_end_matches('/') {
                "" => DEFAULT_SERVE_PORT,
                p => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| format!("\"{url}\": after the host comes the port `serve` listens on there (ssh://me@box/7878), not \"{p}\""))?,
            };
            let (destination, ssh_port) = match authority.rsplit_once(':') {
                Some((d, p)) => (d, Some(p.parse::<u16>().map_err(|_| format!("\"{url}\": \"{p}\" is not an SSH port"))?)),
                None => (authority, None),
            };
            let host = destination.rsplit_once('@').map_or(destination, |(_, h)| h);
            // The destination becomes an ssh argument: nothing that could read as an option.
            if host.is_empty() || destination.starts_with('-') || !destination.chars().all(|c| c.is_ascii_alphanumeric() || "@._-".contains(c)) {
                return Err(format!("\"{url}\": name a machine as ssh://[user@]host (an alias from your ssh config works)"));
            }
            return Ok(HomeUrl::Ssh { destination: destination.to_string(), ssh_port, serve_port });
        }
        if let Some(rest) = url.strip_prefix("http://") {
            let authority = rest.trim_end_matches('/');
            let (host, port) = authority.rsplit_once(':').ok_or_else(|| format!("\"{url}\": give the port `serve` printed (http://127.0.0.1:7878)"))?;
            let loopback = host == "localhost" || host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
            if !loopback {
                return Err(format!("\"{url}\": http:// only to this machine's loopback — the token would cross the network in clear; reach another machine as ssh://[user@]{host}"));
            }
            let port = port.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| format!("\"{url}\": \"{port}\" is not a port"))?;
            return Ok(HomeUrl::Loopback { port });
        }
        if url.starts_with("https://") {
            return Err(format!("\"{url}\": https:// homes are not supported yet; reach the machine as ssh://[user@]host (its `serve` on loopback, through SSH)"));
        }
        Err(format!("\"{url}\": a home is ssh://[user@]host[/serve-port] or http://127.0.0.1:PORT"))
    }
}

impl std::fmt::Display for HomeUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HomeUrl::Ssh { destination, ssh_port, serve_port } => {
                write!(f, "ssh://{destination}")?;
                if let Some(p) = ssh_port {
                    write!(f, ":{p}")?;
                }
                if *serve_port != DEFAULT_SERVE_PORT {
                    write!(f, "/{serve_port}")?;
                }
                Ok(())
            }
            HomeUrl::Loopback { port } => write!(f, "http://127.0.0.1:{port}"),
        }
    }
}

/// A name the CLI, the tray and the keychain can carry: letters, digits, `-`, `_`, `.`.
pub fn home_name_problem(name: &str) -> Option<String> {
    let ok = !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) && !name.starts_with(['-', '.']);
    (!ok).then(|| format!("\"{name}\" is not a home name: use letters, digits, `-`, `_` and `.` (e.g. mac-mini)"))
}

impl HomeSettings {
    /// What is wrong with this entry, with the text to point at.
    pub fn problem(&self) -> Option<(String, String)> {
        if let Some(p) = home_name_problem(&self.name) {
            return Some((format!("\"{}\"", self.name), p));
        }
        HomeUrl::parse(&self.url).err().map(|p| (format!("\"{}\"", self.url), format!("home \"{}\": {p}", self.name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ssh_and_loopback_homes() {
        assert_eq!(HomeUrl::parse("ssh://me@mac-mini").unwrap(), HomeUrl::Ssh { destination: "me@mac-mini".into(), ssh_port: None, serve_port: 7878 });
        assert_eq!(HomeUrl::parse("ssh://box:2222/9000").unwrap(), HomeUrl::Ssh { destination: "box".into(), ssh_port: Some(2222), serve_port: 9000 });
        assert_eq!(HomeUrl::parse("http://127.0.0.1:4000/").unwrap(), HomeUrl::Loopback { port: 4000 });
        assert_eq!(HomeUrl::parse("http://localhost:4000").unwrap(), HomeUrl::Loopback { port: 4000 });
        assert_eq!(HomeUrl::parse("ssh://me@box:2222/9000").unwrap().to_string(), "ssh://me@box:2222/9000");
    }

    #[test]
    fn refuses_what_would_leak_the_token_or_read_as_an_option() {
        assert!(HomeUrl::parse("http://192.168.1.5:7878").unwrap_err().contains("ssh://[user@]192.168.1.5"));
        assert!(HomeUrl::parse("ssh://-oProxyCommand=x").is_err());
        assert!(HomeUrl::parse("ssh://box/notaport").unwrap_err().contains("the port `serve` listens on"));
        assert!(HomeUrl::parse("https://box.example").unwrap_err().contains("not supported yet"));
        assert!(HomeUrl::parse("ftp://box").is_err());
        assert!(home_name_problem("mac mini").is_some());
        assert!(home_name_problem("mac-mini").is_none());
    }
}
