//! What the window should show when it opens or comes to the front: the routines, a run's detail
//! (a notification's "Open"), or the re-login panel (the tray's Re-login where no terminal opens).

use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq)]
pub enum Open {
    /// Where it was (the routines list in a new window).
    #[default]
    Front,
    /// A run's detail.
    Run(String),
    /// The re-login panel for an account, with the command to run by hand; `home`: an account
    /// of another home (the window shows that home and asks it for the command).
    Relogin { account: String, command: String, home: Option<String> },
}

impl Open {
    /// The page address a new window starts at, so it shows the right view from its first paint
    /// (an event sent before the page listens would be lost).
    pub fn start_url(&self) -> String {
        match self {
            Open::Front => "index.html".into(),
            Open::Run(id) => format!("index.html#/run/{}", encode(id)),
            Open::Relogin { account, home: None, .. } => format!("index.html#/relogin/{}", encode(account)),
            Open::Relogin { account, home: Some(home), .. } => format!("index.html#/relogin/{}?home={}", encode(account), encode(home)),
        }
    }

    /// The page event that shows it in a window that is already open (`None`: just raise it).
    pub fn event(&self) -> Option<(&'static str, Value)> {
        match self {
            Open::Front => None,
            Open::Run(id) => Some(("open-run", Value::String(id.clone()))),
            Open::Relogin { account, command, home } => Some(("relogin", serde_json::json!({ "account": account, "command": command, "home": home }))),
        }
    }
}

/// Percent-encode for a URL fragment (run ids are plain; account ids are e-mail addresses).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Open;

    #[test]
    fn start_urls_and_events() {
        assert_eq!(Open::Front.start_url(), "index.html");
        assert_eq!(Open::Run("01ABC".into()).start_url(), "index.html#/run/01ABC");
        let relogin = Open::Relogin { account: "me+x@acme.dev".into(), command: "claude /login".into(), home: None };
        assert_eq!(relogin.start_url(), "index.html#/relogin/me%2Bx%40acme.dev");
        assert_eq!(relogin.event().unwrap().1["command"], "claude /login");
        let there = Open::Relogin { account: "me@box.dev".into(), command: String::new(), home: Some("mac-mini".into()) };
        assert_eq!(there.start_url(), "index.html#/relogin/me%40box.dev?home=mac-mini");
        assert_eq!(there.event().unwrap().1["home"], "mac-mini");
        assert!(Open::Front.event().is_none());
    }
}
