//! Another home's `serve`, spoken to as its own window speaks to it: `POST /api/<command>` with
//! the window's commands and their JSON, and `GET /api/events` for its engine's events — so the
//! CLI, the tray and the window reach another machine through the same declarations
//! (`api::commands!`) they use here, and cannot drift apart.

use super::link::Route;
use crate::error::{Error, ErrorCode, Result};
use crate::events::EngineEvent;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// How long one call may take before the home counts as unreachable (a run's log chunk, a
/// routine written and checked there: well under this).
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// One other home: its name here, how it is reached, its access token (from the keychain; never
/// shown, logged or put in an argv — it travels only in the request header, inside the stream).
pub struct HomeClient {
    pub name: String,
    route: Route,
    token: Token,
    sender: tokio::sync::Mutex<Option<SendRequest<Full<Bytes>>>>,
}

/// The access token: read from the keychain when first needed — while the connection opens, so a
/// one-shot command pays for the slower of the two, not both — then kept for this client's life.
struct Token {
    /// (keychain service, item).
    keychain: (String, String),
    read: tokio::sync::OnceCell<String>,
}

impl std::fmt::Debug for HomeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HomeClient").field("name", &self.name).field("route", &self.route).finish_non_exhaustive()
    }
}

impl HomeClient {
    /// A client whose token is the keychain's item `key` of `service`.
    pub fn new(name: &str, route: Route, service: &str, key: &str) -> HomeClient {
        let token = Token { keychain: (service.to_string(), key.to_string()), read: tokio::sync::OnceCell::new() };
        HomeClient { name: name.to_string(), route, token, sender: tokio::sync::Mutex::new(None) }
    }

    /// The token, from the keychain the first time (bounded: the keychain module's limit).
    async fn token(&self) -> Result<&str> {
        let read = self
            .token
            .read
            .get_or_try_init(|| async {
                let (service, key, name) = (self.token.keychain.0.clone(), self.token.keychain.1.clone(), self.name.clone());
                let found = tokio::task::spawn_blocking(move || crate::accounts::keychain::get_secret(&service, &key, "or add the home again on a machine with a keychain"))
                    .await
                    .map_err(|e| Error::new(ErrorCode::Io, e.to_string()))?
                    .map_err(|e| Error::new(ErrorCode::Io, e.0))?;
                found.ok_or_else(|| Error::new(ErrorCode::Usage, format!("home \"{name}\" has no access token in the keychain: `nightshiftctl homes add {name} URL --replace` and paste the token its `serve` printed")))
            })
            .await?;
        Ok(read.as_str())
    }

    fn unreachable(&self, why: impl std::fmt::Display) -> Error {
        Error::new(ErrorCode::HomeUnreachable, format!("home \"{}\" cannot be reached: {why}", self.name))
    }

    /// Open a connection and speak HTTP/1.1 on it.
    async fn connect(&self) -> Result<(SendRequest<Full<Bytes>>, std::sync::Arc<std::sync::Mutex<String>>)> {
        let link = self.route.open().await.map_err(|e| self.unreachable(e))?;
        let said = link.said();
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(link)).await.map_err(|e| self.unreachable(e))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok((sender, said))
    }

    /// Why a stream broke, in ssh's words when ssh said something (it gives up silently on the
    /// HTTP side: the other end just closes).
    async fn broken(&self, said: &std::sync::Mutex<String>, e: impl std::fmt::Display) -> Error {
        // ssh writes its reason as it exits; give the reader a moment to collect it.
        for _ in 0..20 {
            let words = said.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if !words.is_empty() {
                return self.unreachable(words.lines().last().unwrap_or(&words));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        self.unreachable(format!("{e} — is `nightshiftctl serve` running there, on the port the URL names?"))
    }

    /// Call one of the window's commands there and read its answer.
    pub async fn call<T: DeserializeOwned>(&self, command: &str, args: serde_json::Value) -> Result<T> {
        let value = tokio::time::timeout(CALL_LIMIT, self.call_value(command, args)).await.map_err(|_| self.unreachable(format!("no answer within {} s", CALL_LIMIT.as_secs())))??;
        serde_json::from_value(value).map_err(|e| Error::new(ErrorCode::Io, format!("home \"{}\" answered {command} in a shape this Nightshift does not read ({e}); are both the same version?", self.name)))
    }

    async fn call_value(&self, command: &str, args: serde_json::Value) -> Result<serde_json::Value> {
        let mut kept = self.sender.lock().await;
        // A kept connection may have closed since (ssh's shared connection ended, serve restarted).
        let reusable = match kept.as_mut() {
            Some(s) => s.ready().await.is_ok(),
            None => false,
        };
        let (sender, token) = match kept.take().filter(|_| reusable) {
            Some(s) => (Ok((s, None)), self.token().await),
            None => {
                let (connected, token) = tokio::join!(self.connect(), self.token());
                (connected.map(|(s, said)| (s, Some(said))), token)
            }
        };
        let (mut sender, token) = (sender?, token?);
        let request = hyper::Request::post(format!("/api/{command}"))
            .header(hyper::header::HOST, self.route.host_header())
            .header(hyper::header::AUTHORIZATION, format!("Bearer {token}"))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(args.to_string())))
            .map_err(|e| Error::new(ErrorCode::Usage, e.to_string()))?;
        let response = match sender.0.send_request(request).await {
            Ok(r) => r,
            Err(e) => {
                let said = sender.1.take().unwrap_or_default();
                return Err(self.broken(&said, e).await);
            }
        };
        let status = response.status();
        let body = response.into_body().collect().await.map_err(|e| self.unreachable(e))?.to_bytes();
        *kept = Some(sender.0);
        answer(&self.name, status, &body)
    }

    /// Follow the home's engine events until the stream ends (`Ok`) or cannot be opened (`Err`);
    /// `on_event` gets each one (`None`: the stream lost events — catch up by reading).
    pub async fn follow(&self, mut on_event: impl FnMut(Option<EngineEvent>)) -> Result<()> {
        let (connected, token) = tokio::join!(self.connect(), self.token());
        let ((mut sender, said), token) = (connected?, token?);
        let request = hyper::Request::get("/api/events")
            .header(hyper::header::HOST, self.route.host_header())
            .header(hyper::header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Full::new(Bytes::new()))
            .map_err(|e| Error::new(ErrorCode::Usage, e.to_string()))?;
        let response = match sender.send_request(request).await {
            Ok(r) => r,
            Err(e) => return Err(self.broken(&said, e).await),
        };
        let status = response.status();
        let mut body = response.into_body();
        if status != hyper::StatusCode::OK {
            let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            return answer(&self.name, status, &bytes).map(|_| ());
        }
        // Opened: the stream is the home's own word that it is reachable.
        on_event(None);
        let mut pending = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { break };
            let Some(data) = frame.data_ref() else { continue };
            pending.extend_from_slice(data);
            while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                let message: Vec<u8> = pending.drain(..end + 2).collect();
                for line in String::from_utf8_lossy(&message).lines() {
                    let Some(json) = line.strip_prefix("data: ") else { continue };
                    match serde_json::from_str::<EngineEvent>(json) {
                        Ok(ev) => on_event(Some(ev)),
                        // `resync` (it lagged) or an event a newer home sends: read what changed.
                        Err(_) => on_event(None),
                    }
                }
            }
        }
        Ok(())
    }
}

/// A response's JSON, or the error it carries as words a person can act on.
fn answer(home: &str, status: hyper::StatusCode, body: &[u8]) -> Result<serde_json::Value> {
    if status == hyper::StatusCode::OK {
        return serde_json::from_slice(body).map_err(|e| Error::new(ErrorCode::Io, format!("home \"{home}\" answered something that is not JSON ({e})")));
    }
    if let Ok(e) = serde_json::from_slice::<Error>(body) {
        return Err(Error::new(e.code, format!("{home}: {}", e.message)));
    }
    let text = String::from_utf8_lossy(body);
    Err(match status {
        hyper::StatusCode::UNAUTHORIZED => Error::new(
            ErrorCode::HomeUnreachable,
            format!("home \"{home}\" refused its token (the one in the keychain is wrong or was replaced by `serve --new-token`): give it again with `nightshiftctl homes add {home} URL --replace`"),
        ),
        _ => Error::new(ErrorCode::HomeUnreachable, format!("home \"{home}\" answered {status}: {}", text.trim())),
    })
}
