//! `GET /api/events`: the engine's events as Server-Sent Events (`data: {json}` lines, read by
//! the page with `fetch`, which can carry the token header; `EventSource` cannot), and
//! `?home=NAME`: another home's, relayed.

use super::{error_response, no_store};
use crate::Engine;
use axum::body::Body;
use axum::http::{header, HeaderValue, Response};
use std::time::Duration;

/// A comment line this often keeps proxies from closing an idle stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

const RESYNC: &str = "data: {\"type\":\"resync\"}\n\n";

/// This home's events. A reader that fell behind is told to read again (`resync`), as is one
/// when another process of this home (a daemon, a CLI's `run`) queued or settled a run — events
/// this engine never sees.
pub(super) fn own(engine: &Engine) -> Response<Body> {
    let rx = engine.subscribe();
    let others = engine.watch_other_processes();
    let stream = futures_util::stream::unfold((rx, others), |(mut rx, others)| async move {
        loop {
            let line = tokio::select! {
                got = tokio::time::timeout(KEEP_ALIVE, rx.recv()) => match got {
                    Ok(Ok(ev)) => serde_json::to_string(&ev).ok().map(|j| format!("data: {j}\n\n")),
                    Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => Some(RESYNC.to_string()),
                    Ok(Err(_)) => return None,
                    Err(_) => Some(": keep-alive\n\n".to_string()),
                },
                _ = others.changed() => {
                    tokio::time::sleep(crate::engine::OTHERS_GATHER).await;
                    Some(RESYNC.to_string())
                }
            };
            if let Some(line) = line {
                return Some((Ok::<_, std::convert::Infallible>(line), (rx, others)));
            }
        }
    });
    event_stream(Body::from_stream(stream))
}

/// Another home's events, relayed (the page shows that home). A stream that breaks ends; the page
/// reconnects and reads again, as for this home's own.
pub(super) fn of_home(engine: &Engine, home: &str) -> Response<Body> {
    let client = match crate::homes::client(engine, home) {
        Ok(c) => c,
        Err(e) => return error_response(&e),
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let relay_task = tokio::spawn(async move {
        let relay = tx.clone();
        let _ = client
            .follow(move |ev| {
                let line = match ev {
                    Some(ev) => serde_json::to_string(&ev).ok(),
                    None => Some("{\"type\":\"resync\"}".to_string()),
                };
                if let Some(line) = line {
                    let _ = relay.send(format!("data: {line}\n\n"));
                }
            })
            .await;
        drop(tx);
    });
    // The relay ends with the page's stream (the task is aborted when the stream is dropped).
    struct Relay(tokio::task::JoinHandle<()>);
    impl Drop for Relay {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let stream = futures_util::stream::unfold((rx, Relay(relay_task)), |(mut rx, relay)| async move {
        match tokio::time::timeout(KEEP_ALIVE, rx.recv()).await {
            Ok(Some(line)) => Some((Ok::<_, std::convert::Infallible>(line), (rx, relay))),
            Ok(None) => None,
            Err(_) => Some((Ok(": keep-alive\n\n".to_string()), (rx, relay))),
        }
    });
    event_stream(Body::from_stream(stream))
}

fn event_stream(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    no_store(&mut r);
    r
}
