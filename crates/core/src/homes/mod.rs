//! Other machines' Nightshift, viewed and controlled from this one (`[[homes]]`): the always-on
//! box owns its routines' schedule and history — its engine decides and records, as any home's
//! does — while this machine's CLI (`--home NAME`) and notifications reach it through its `serve`.
//! Nothing crosses between homes but the window's commands and their answers: accounts, secrets
//! and runs stay where they are; the only credential is the home's access token, kept in this
//! machine's keychain.
//!
//! [`client`] speaks to one home; [`link`] carries the bytes (loopback TCP, `ssh -W`, or TLS to
//! a proxy in front — [`tls`]);
//! [`viewer`] follows every home's events and tells each finish once; [`moving`] moves a routine
//! to the home that should own it.

pub mod client;
pub mod link;
pub mod moving;
pub mod tls;
pub mod viewer;

pub use client::HomeClient;

use crate::error::{Error, ErrorCode, Result};
use crate::home::Home;
use crate::settings::{HomeSettings, HomeUrl, Settings};
use crate::Engine;
use link::Route;
use serde::Serialize;

/// The keychain item a home's token is stored under.
fn token_key(name: &str) -> String {
    format!("home:{name}")
}

/// How to reach a home's URL from this one: with the SSH options runs on hosts use (the user's
/// config or `ssh_config`, one shared connection per machine); an https:// one with its pin.
fn route(home: &Home, settings: &Settings, url: &HomeUrl, pin: Option<&str>) -> Route {
    match url {
        HomeUrl::Https { host, port } => Route::Tls { host: host.clone(), port: *port, pin: pin.and_then(crate::settings::read_pin) },
        HomeUrl::Loopback { port } => Route::Loopback { port: *port },
        HomeUrl::Ssh { destination, ssh_port, serve_port } => {
            let mut target = crate::runner::remote::Target::of_home(destination, settings, home.data_dir());
            target.port = *ssh_port;
            Route::Ssh { target, serve_port: *serve_port }
        }
    }
}

/// The homes `nightshift.toml` lists.
pub fn listed(engine: &Engine) -> Vec<HomeSettings> {
    engine.settings().homes.clone()
}

/// A client for the home named `name`, its token read from the keychain.
pub fn client(engine: &Engine, name: &str) -> Result<HomeClient> {
    client_of(engine.home(), &engine.settings(), name)
}

/// [`client`] without an engine: what a one-shot `--home` command needs of this home is its
/// settings and the folder its shared SSH connections live in — its database is never opened.
pub fn client_of(this: &Home, settings: &Settings, name: &str) -> Result<HomeClient> {
    let Some(home) = settings.home(name) else {
        let names: Vec<&str> = settings.homes.iter().map(|h| h.name.as_str()).collect();
        let known = if names.is_empty() { "none is listed; add one with `nightshiftctl homes add NAME URL`".to_string() } else { format!("listed: {}", names.join(", ")) };
        return Err(Error::new(ErrorCode::Usage, format!("no home named \"{name}\" ({known})")));
    };
    let url = HomeUrl::parse(&home.url).map_err(|p| Error::new(ErrorCode::SettingsInvalid, p))?;
    Ok(HomeClient::new(name, route(this, settings, &url, home.pin.as_deref()), &settings.keychain_service, &token_key(name)))
}

/// A home as added.
#[derive(Debug, Clone)]
pub struct Added {
    pub url: HomeUrl,
    /// An https:// home's certificate that no authority here vouches for, pinned now: its
    /// fingerprint (to compare with the server's) and why it was not trusted.
    pub pinned: Option<(String, String)>,
}

/// Add a home: its token into the keychain (first, so a listed home always has one), then its
/// `[[homes]]` entry. `replace`: a home of that name is replaced (a new token or address). An
/// https:// home is looked at first: a certificate this machine's roots do not vouch for is
/// pinned (trust on first use — the caller shows its fingerprint).
pub async fn add(engine: &Engine, name: &str, url: &str, token: &str, replace: bool) -> Result<Added> {
    let token = token.trim();
    if token.is_empty() || token.chars().any(char::is_whitespace) {
        return Err(Error::new(ErrorCode::Usage, "no token given: paste the token the home's `nightshiftctl serve` printed (after `?token=`, or from its serve-token file)"));
    }
    let parsed = HomeUrl::parse(url).map_err(|p| Error::new(ErrorCode::Usage, p))?;
    let pinned = match &parsed {
        HomeUrl::Https { host, port } => {
            let seen = tls::look(host, *port).await.map_err(|e| Error::new(ErrorCode::HomeUnreachable, format!("cannot see the certificate of {parsed} to add it: {e}")))?;
            seen.untrusted.map(|why| (crate::settings::write_pin(&seen.digest), crate::settings::show_pin(&seen.digest), why))
        }
        _ => None,
    };
    let engine = engine.clone();
    let (name, url, token) = (name.to_string(), url.to_string(), token.to_string());
    let pin = pinned.as_ref().map(|p| p.0.clone());
    tokio::task::spawn_blocking(move || keep(&engine, &name, &url, &token, pin.as_deref(), replace)).await.map_err(|e| Error::new(ErrorCode::Io, e.to_string()))??;
    Ok(Added { url: parsed, pinned: pinned.map(|(_, shown, why)| (shown, why)) })
}

/// The token into the keychain, then the entry into nightshift.toml (blocking: both are files
/// and D-Bus).
fn keep(engine: &Engine, name: &str, url: &str, token: &str, pin: Option<&str>, replace: bool) -> Result<()> {
    if replace && engine.settings().home(name).is_some() {
        crate::settings_edit::remove_home(engine.home(), name)?;
    }
    let service = engine.settings().keychain_service.clone();
    crate::accounts::keychain::set_secret(&service, &token_key(name), token, "— a home's token is kept only there").map_err(|e| Error::new(ErrorCode::Io, e.0))?;
    if let Err(e) = crate::settings_edit::add_home(engine.home(), name, url, pin) {
        if !replace {
            let _ = crate::accounts::keychain::delete_secret(&service, &token_key(name), "");
        }
        return Err(e);
    }
    engine.core.settings_file_changed();
    Ok(())
}

/// Remove a home: its entry and its token (its runs and history stay on its machine).
pub fn remove(engine: &Engine, name: &str) -> Result<()> {
    crate::settings_edit::remove_home(engine.home(), name)?;
    let service = engine.settings().keychain_service.clone();
    let _ = crate::accounts::keychain::delete_secret(&service, &token_key(name), "");
    engine.core.settings_file_changed();
    Ok(())
}

/// One home as `homes list` and the tray show it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct HomeStatus {
    pub name: String,
    pub url: String,
    pub reachable: bool,
    /// Why it could not be reached now.
    pub error: Option<String>,
    /// When it last answered this machine.
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub last_seen: Option<chrono::DateTime<chrono::Utc>>,
    /// Its machine's name (`device_name`), when it answered.
    pub device: Option<String>,
    /// Its scheduler runs there (its `serve`, daemon or app schedules it).
    pub scheduling: bool,
    /// The routines it schedules (enabled ones), when it answered.
    pub routines: Vec<String>,
}

/// Every listed home, asked now (all at once, each bounded).
pub async fn statuses(engine: &Engine) -> Vec<HomeStatus> {
    let asks: Vec<_> = listed(engine)
        .into_iter()
        .map(|h| {
            let engine = engine.clone();
            tokio::spawn(async move { status(&engine, &h).await })
        })
        .collect();
    let mut out = Vec::with_capacity(asks.len());
    for ask in asks {
        if let Ok(s) = ask.await {
            out.push(s);
        }
    }
    out
}

async fn status(engine: &Engine, home: &HomeSettings) -> HomeStatus {
    let answer = async {
        let c = client(engine, &home.name)?;
        let state: serde_json::Value = c.call("engine_state", serde_json::json!({})).await?;
        let routines: Vec<serde_json::Value> = c.call("list_routines", serde_json::json!({})).await?;
        Ok::<_, Error>((state, routines))
    }
    .await;
    let store = engine.core.store.clone();
    let name = home.name.clone();
    let now = engine.core.clock.now();
    let mut s = HomeStatus { name: home.name.clone(), url: home.url.clone(), reachable: false, error: None, last_seen: None, device: None, scheduling: false, routines: Vec::new() };
    match answer {
        Ok((state, routines)) => {
            let _ = tokio::task::spawn_blocking(move || store.home_seen(&name, now)).await;
            s.reachable = true;
            s.last_seen = Some(now);
            s.device = state["device"].as_str().map(str::to_string);
            s.scheduling = state["scheduling"].as_bool().unwrap_or(false) || state["scheduled_elsewhere"].is_string();
            s.routines = routines.iter().filter(|r| r["enabled"].as_bool().unwrap_or(true)).filter_map(|r| r["name"].as_str().map(str::to_string)).collect();
        }
        Err(e) => {
            s.error = Some(e.message);
            s.last_seen = tokio::task::spawn_blocking(move || store.home_view(&name)).await.ok().and_then(|v| v.ok()).and_then(|v| v.last_seen);
        }
    }
    s
}
