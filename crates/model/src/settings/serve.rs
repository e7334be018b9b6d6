//! `[serve]`: the app and `nightshiftctl daemon` serve the window — to a browser and to other
//! machines' viewers (`[[homes]]` there) — beside their scheduler, as `nightshiftctl serve` does
//! in the foreground.

use serde::Deserialize;

/// `[serve]` in nightshift.toml.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServeSettings {
    /// `listen = "127.0.0.1:7878"`: serve there (unset: the app and the daemon do not serve).
    /// Loopback only: other machines reach it through SSH (`ssh://` homes) or a TLS proxy in
    /// front (`https://` homes, with `public_url`).
    pub listen: Option<std::net::SocketAddr>,
    /// Every token only reads: viewers look, nothing they send changes this home.
    pub read_only: bool,
    /// `public_url = "https://box.example.net"`: the address of the TLS proxy in front, whose
    /// requests carry that name (`Host`) — answered beside the address listened on.
    pub public_url: Option<String>,
}

impl ServeSettings {
    /// What is wrong with the section, with the text to point at.
    pub fn problem(&self) -> Option<(String, String)> {
        if let Some(addr) = self.listen.filter(|a| !a.ip().is_loopback()) {
            return Some((addr.to_string(), format!("`[serve] listen = \"{addr}\"` is not a loopback address: the token would cross the network in clear; listen on 127.0.0.1 and reach it through SSH or a TLS proxy (`public_url`)")));
        }
        let url = self.public_url.as_deref()?;
        public_host(url).err().map(|p| (url.to_string(), format!("`[serve] public_url`: {p}")))
    }
}

/// The `Host` a TLS proxy's requests carry for `https://NAME[:PORT]` (the port only when it is
/// not 443, as browsers and clients write it) — read as an `https://` home's URL is.
pub fn public_host(url: &str) -> Result<String, String> {
    let rest = url.trim().strip_prefix("https://").ok_or_else(|| format!("\"{url}\" is not an https:// address (the TLS proxy in front: https://box.example.net)"))?;
    super::HomeUrl::https(url, rest).map(|address| address.authority())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_url_is_the_host_its_requests_carry() {
        assert_eq!(public_host("https://Box.example.net/").unwrap(), "box.example.net");
        assert_eq!(public_host("https://box.example.net:443").unwrap(), "box.example.net");
        assert_eq!(public_host("https://box.example.net:8443").unwrap(), "box.example.net:8443");
        assert!(public_host("http://box").unwrap_err().contains("not an https://"));
        assert!(public_host("https://box/nightshift").unwrap_err().contains("no path"));
        assert_eq!(public_host("https://[::1]:8443").unwrap(), "[::1]:8443");
    }

    #[test]
    fn listening_beyond_loopback_is_refused_with_the_way_to_do_it() {
        let s = ServeSettings { listen: Some("0.0.0.0:7878".parse().unwrap()), ..Default::default() };
        assert!(s.problem().unwrap().1.contains("TLS proxy"));
        let s = ServeSettings { listen: Some("127.0.0.1:7878".parse().unwrap()), read_only: true, public_url: Some("https://box.example.net".into()) };
        assert_eq!(s.problem(), None);
    }
}
