//! The loopback HTTP server the provider fakes (OpenAI Responses, Gemini) share: a behaviour per
//! credential, a log of every request, and how many calls each credential made (so a behaviour
//! can fail the first n calls and then succeed, as a flaky real API does).

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::Response;
use axum::Router;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// One request as a fake saw it.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    /// The API key or bearer token it carried.
    pub credential: Option<String>,
    pub body: serde_json::Value,
}

/// What a provider's handler gets for one call.
pub struct Call<'a> {
    pub method: &'a str,
    /// Path and query.
    pub path: &'a str,
    pub body: &'a serde_json::Value,
    /// Calls this credential made before this one (0 for the first).
    pub nth: usize,
    /// The `Host` the call was sent to (`127.0.0.1:PORT`): for an answer that points back here.
    pub host: &'a str,
}

/// How a provider answers one call with behaviour `B`.
pub type Handler<B> = fn(&Call<'_>, &B) -> Response;
/// Where a provider carries the credential.
pub type CredentialOf = fn(&HeaderMap, &str) -> Option<String>;

struct Inner<B> {
    default: Option<B>,
    by_credential: HashMap<String, B>,
    calls: HashMap<String, usize>,
    seen: Vec<SeenRequest>,
}

struct Shared<B> {
    inner: Mutex<Inner<B>>,
    handler: Handler<B>,
    credential_of: CredentialOf,
    /// Answer for a credential with no behaviour and no default.
    unknown: fn() -> Response,
}

pub struct FakeApi<B> {
    addr: SocketAddr,
    shared: Arc<Shared<B>>,
}

impl<B: Clone + Send + 'static> FakeApi<B> {
    /// Serve on 127.0.0.1 with an ephemeral port. (Each provider's `start` calls this with its
    /// own credential reader, handler and answer for an unknown credential.)
    pub async fn serve(default: Option<B>, credential_of: CredentialOf, handler: Handler<B>, unknown: fn() -> Response) -> FakeApi<B> {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner { default, by_credential: HashMap::new(), calls: HashMap::new(), seen: Vec::new() }),
            handler,
            credential_of,
            unknown,
        });
        let app = Router::new().fallback(handle::<B>).with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeApi { addr, shared }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Answer `credential` with `behaviour`.
    pub fn set(&self, credential: &str, behaviour: B) {
        self.shared.inner.lock().unwrap().by_credential.insert(credential.to_string(), behaviour);
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.shared.inner.lock().unwrap().seen.clone()
    }
}

async fn handle<B: Clone + Send + 'static>(State(shared): State<Arc<Shared<B>>>, req: Request<Body>) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path_and_query().map(|p| p.to_string()).unwrap_or_default();
    let credential = (shared.credential_of)(req.headers(), &path);
    let host = req.headers().get("host").and_then(|h| h.to_str().ok()).unwrap_or_default().to_string();
    let bytes = axum::body::to_bytes(req.into_body(), 64 << 20).await.unwrap_or_default();
    let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let (behaviour, nth) = {
        let mut g = shared.inner.lock().unwrap();
        g.seen.push(SeenRequest { method: method.clone(), path: path.clone(), credential: credential.clone(), body: body.clone() });
        let key = credential.clone().unwrap_or_default();
        let nth = *g.calls.entry(key.clone()).and_modify(|n| *n += 1).or_insert(0);
        (g.by_credential.get(&key).cloned().or_else(|| g.default.clone()), nth)
    };
    match behaviour {
        Some(b) => (shared.handler)(&Call { method: &method, path: &path, body: &body, nth, host: &host }, &b),
        None => (shared.unknown)(),
    }
}

/// A JSON response with extra headers.
pub fn json_response(status: StatusCode, body: serde_json::Value, headers: &[(&str, String)]) -> Response {
    let mut b = Response::builder().status(status).header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(*k, v);
    }
    b.body(Body::from(body.to_string())).expect("response")
}

/// A complete server-sent-events response.
pub fn sse_response(events: String) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from(events))
        .expect("response")
}

/// A server-sent-events response whose body starts only after `secs` (a slow API).
pub fn slow_sse_response(secs: u64, events: String) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
        let _ = tx.send(Ok(events.into_bytes())).await;
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(ReceiverStream(rx)))
        .expect("response")
}

/// A stream over a channel's receiver (what axum's streaming body takes).
pub struct ReceiverStream<T>(pub tokio::sync::mpsc::Receiver<T>);

impl<T> futures_core::Stream for ReceiverStream<T> {
    type Item = T;
    fn poll_next(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<T>> {
        self.0.poll_recv(cx)
    }
}
