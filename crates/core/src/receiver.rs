//! The HTTP face of incoming events: `POST /hooks/github` and `POST /hooks/linear`, for
//! `nightshiftctl serve` (beside its pages, without its access token: a delivery's signature is
//! its credential) and for `[hooks] listen` in the app and the daemon. Bodies are taken up to
//! [`MAX_BODY`] (GitHub's own cap), each source at most [`PER_MINUTE`] deliveries a minute; the
//! engine believes, reads and fires ([`Engine::receive`]).

use crate::engine::incoming::{Delivery, MAX_BODY};
use crate::incoming::Source;
use crate::Engine;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Requests taken per source per minute, counted before the body is read (so a flood costs no
/// memory); more get 429 with `Retry-After`. Linear retries by itself; GitHub shows the delivery
/// failed, to be redelivered by hand.
pub const PER_MINUTE: usize = 600;

struct Receiver {
    engine: Engine,
    recent: Mutex<HashMap<Source, VecDeque<Instant>>>,
}

/// The two routes, for a server of the caller's.
pub fn router(engine: Engine) -> Router {
    let state = Arc::new(Receiver { engine, recent: Mutex::new(HashMap::new()) });
    Router::new()
        .route("/hooks/github", post(|s: State<Arc<Receiver>>, h: HeaderMap, b: Body| take(s, Source::GitHub, h, b)))
        .route("/hooks/linear", post(|s: State<Arc<Receiver>>, h: HeaderMap, b: Body| take(s, Source::Linear, h, b)))
        .with_state(state)
}

/// Listen on `addr` (`[hooks] listen`) until the process ends. Returns the address bound (port
/// 0: any free one), or why it could not.
pub async fn listen(engine: Engine, addr: std::net::SocketAddr) -> std::io::Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = router(engine);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the hooks receiver stopped");
        }
    });
    Ok(bound)
}

/// `[hooks] listen`: take GitHub's and Linear's deliveries where the settings say, for as long as
/// the process lives — started by the face that schedules the home (the app, `nightshiftctl
/// daemon`, `serve`), beside its scheduler. The address is read now: a changed one takes a
/// restart. One that cannot be bound is told atop the window and in `problems`.
pub async fn listen_as_configured(engine: &Engine) {
    let Some(addr) = engine.settings().hooks.listen else { return };
    match listen(engine.clone(), addr).await {
        Ok(bound) => tracing::info!(%bound, "taking GitHub and Linear deliveries at /hooks/github and /hooks/linear"),
        Err(e) => engine.tell_hooks_problem(format!("cannot take deliveries on {addr} (`[hooks] listen`): {e}")),
    }
}

async fn take(State(r): State<Arc<Receiver>>, source: Source, headers: HeaderMap, body: Body) -> Response {
    if let Some(wait) = too_many(&r, source) {
        return answer(StatusCode::TOO_MANY_REQUESTS, &format!("more than {PER_MINUTE} {} deliveries in a minute; this one was not taken — nothing was fired", source.as_str()), &[], Some(wait));
    }
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => return answer(StatusCode::PAYLOAD_TOO_LARGE, &format!("a delivery larger than {} MB (GitHub's own limit) is not taken — nothing was fired", MAX_BODY / (1024 * 1024)), &[], None),
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let delivery = match source {
        Source::GitHub => Delivery { source, event: header("x-github-event"), id: header("x-github-delivery"), signature: header("x-hub-signature-256"), body: &bytes },
        Source::Linear => Delivery { source, event: header("linear-event"), id: header("linear-delivery"), signature: header("linear-signature"), body: &bytes },
    };
    let receipt = r.engine.receive(delivery).await;
    let status = StatusCode::from_u16(receipt.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    answer(status, &receipt.message, &receipt.verdicts, None)
}

/// Whether `source` is over its minute's deliveries; then how long until one frees.
fn too_many(r: &Receiver, source: Source) -> Option<Duration> {
    let mut recent = r.recent.lock().unwrap_or_else(|e| e.into_inner());
    let seen = recent.entry(source).or_default();
    let now = Instant::now();
    while seen.front().is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(60)) {
        seen.pop_front();
    }
    if seen.len() >= PER_MINUTE {
        return seen.front().map(|t| Duration::from_secs(60).saturating_sub(now.duration_since(*t)));
    }
    seen.push_back(now);
    None
}

fn answer(status: StatusCode, message: &str, verdicts: &[crate::store::Verdict], retry_after: Option<Duration>) -> Response {
    let body = serde_json::json!({ "message": message, "verdicts": verdicts });
    let mut b = Response::builder().status(status).header("content-type", "application/json");
    if let Some(wait) = retry_after {
        b = b.header("retry-after", wait.as_secs().max(1).to_string());
    }
    b.body(Body::from(body.to_string())).expect("a response")
}
