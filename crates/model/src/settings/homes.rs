//! `[[homes]]`: other machines' Nightshift this one looks at — an always-on box that owns its
//! routines' schedule while the laptop's tray, window and CLI show and control it. A home is
//! reached where its `nightshiftctl serve` (or the app's `[serve] listen`) answers: through an SSH
//! tunnel to its loopback (`ssh://`), through a TLS proxy in front of it (`https://`, its
//! certificate verified or pinned), or directly on this machine's loopback (`http://127.0.0.1`).
//! Its access token lives in the OS keychain, never here.

use serde::Deserialize;

/// One `[[homes]]` entry, as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HomeSettings {
    /// What the CLI's `--home`, the tray and the window call it.
    pub name: String,
    /// `ssh://[user@]host[:ssh-port][/serve-port]`, `https://host[:port]` or `http://127.0.0.1:PORT`.
    pub url: String,
    /// An `https://` home whose certificate no authority this machine trusts vouches for: the
    /// SHA-256 of the one it showed when it was added (`sha256:` and 64 hex digits) — only that
    /// certificate is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
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
    /// TLS to a proxy (nginx, Caddy…) in front of the home's loopback `serve`.
    Https { host: String, port: u16 },
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
        if let Some(rest) = url.strip_prefix("https://") {
            return HomeUrl::https(url, rest);
        }
        Err(format!("\"{url}\": a home is ssh://[user@]host[/serve-port], https://host[:port] or http://127.0.0.1:PORT"))
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
            HomeUrl::Https { .. } => write!(f, "https://{}", self.authority()),
        }
    }
}

impl HomeUrl {
    /// `https://HOST[:PORT]`, `rest` what follows the scheme: an address only (no path, query or
    /// user), the host lowercased, the port 443 unless given. Also what `[serve] public_url` is
    /// read with ([`super::public_host`]).
    pub(super) fn https(url: &str, rest: &str) -> Result<HomeUrl, String> {
        let authority = rest.trim_end_matches('/');
        let (host, port) = match authority.rsplit_once(':').filter(|(h, _)| !h.ends_with(':') && (!h.starts_with('[') || h.ends_with(']'))) {
            Some((h, p)) => (h, p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| format!("\"{url}\": \"{p}\" is not a port"))?),
            None => (authority, 443),
        };
        let plain = host.trim_matches(['[', ']']);
        if plain.is_empty() || authority.contains(['/', '?', '#', '@']) || !plain.chars().all(|c| c.is_ascii_alphanumeric() || ".-:".contains(c)) {
            return Err(format!("\"{url}\": name the address only, https://HOST[:PORT] (no path)"));
        }
        Ok(HomeUrl::Https { host: host.to_ascii_lowercase(), port })
    }

    /// `host[:port]` as a client writes it in `Host` (the port only when it is not the scheme's).
    pub fn authority(&self) -> String {
        match self {
            HomeUrl::Https { host, port: 443 } => host.clone(),
            HomeUrl::Https { host, port } => format!("{host}:{port}"),
            HomeUrl::Loopback { port } | HomeUrl::Ssh { serve_port: port, .. } => format!("127.0.0.1:{port}"),
        }
    }
}

/// A certificate pin as kept (`sha256:` and 64 lowercase hex digits), from its written forms —
/// also OpenSSL's `AB:CD:…` fingerprint.
pub fn read_pin(pin: &str) -> Option<[u8; 32]> {
    let hex: String = pin.trim().strip_prefix("sha256:").or_else(|| pin.trim().strip_prefix("SHA256:")).unwrap_or(pin.trim()).chars().filter(|c| *c != ':').collect();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A pin as written in nightshift.toml.
pub fn write_pin(digest: &[u8; 32]) -> String {
    format!("sha256:{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// A pin as a person compares it (OpenSSL's `-fingerprint -sha256` form).
pub fn show_pin(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":")
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
        let url = match HomeUrl::parse(&self.url) {
            Ok(url) => url,
            Err(p) => return Some((format!("\"{}\"", self.url), format!("home \"{}\": {p}", self.name))),
        };
        let pin = self.pin.as_deref()?;
        if !matches!(url, HomeUrl::Https { .. }) {
            return Some((format!("\"{pin}\""), format!("home \"{}\": `pin` is for https:// homes (SSH checks its own host keys)", self.name)));
        }
        read_pin(pin).is_none().then(|| (format!("\"{pin}\""), format!("home \"{}\": `pin` is `sha256:` and the certificate's 64 hex digits", self.name)))
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
        let https = HomeUrl::parse("https://Box.example.net/").unwrap();
        assert_eq!(https, HomeUrl::Https { host: "box.example.net".into(), port: 443 });
        assert_eq!((https.to_string(), https.authority()), ("https://box.example.net".into(), "box.example.net".into()));
        let https = HomeUrl::parse("https://[::1]:8443").unwrap();
        assert_eq!(https.authority(), "[::1]:8443");
    }

    #[test]
    fn a_pin_is_read_in_both_written_forms_and_only_for_https() {
        let digest = [0xabu8; 32];
        assert_eq!(read_pin(&write_pin(&digest)), Some(digest));
        assert_eq!(read_pin(&show_pin(&digest)), Some(digest));
        assert_eq!(read_pin("sha256:abcd"), None);
        let home = |url: &str, pin: &str| HomeSettings { name: "box".into(), url: url.into(), pin: Some(pin.into()) };
        assert_eq!(home("https://box", &write_pin(&digest)).problem(), None);
        assert!(home("ssh://box", &write_pin(&digest)).problem().unwrap().1.contains("for https:// homes"));
        assert!(home("https://box", "sha256:00").problem().unwrap().1.contains("64 hex digits"));
    }

    #[test]
    fn refuses_what_would_leak_the_token_or_read_as_an_option() {
        assert!(HomeUrl::parse("http://192.168.1.5:7878").unwrap_err().contains("ssh://[user@]192.168.1.5"));
        assert!(HomeUrl::parse("ssh://-oProxyCommand=x").is_err());
        assert!(HomeUrl::parse("ssh://box/notaport").unwrap_err().contains("the port `serve` listens on"));
        assert!(HomeUrl::parse("https://box.example/nightshift").unwrap_err().contains("no path"));
        assert!(HomeUrl::parse("https://box.example:x").unwrap_err().contains("not a port"));
        assert!(HomeUrl::parse("ftp://box").is_err());
        assert!(home_name_problem("mac mini").is_some());
        assert!(home_name_problem("mac-mini").is_none());
    }
}
