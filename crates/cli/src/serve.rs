//! `nightshiftctl serve`: the window in a browser, for machines without a display. The same `ui/`
//! (embedded in the binary) over HTTP, the same commands (`nightshift_core::api`) as the app's
//! window, engine events as Server-Sent Events. It schedules the home too, unless a daemon or the
//! app already does (then it views and controls, as the app does).
//!
//! Secure by default: 127.0.0.1 only (another address needs `--insecure`: there is no TLS here);
//! a random access token, written 0600 to the home and given in the URL printed at start — kept
//! across restarts, so a viewer on another machine (`nightshiftctl homes add`) stays connected,
//! until `--new-token` replaces it; a second, read-only token beside it, whose calls may only read
//! (anything that would change the home is answered 403, as is every change under `--read-only`);
//! the page keeps its token and sends it in a header (never a cookie, so another site cannot ride on it);
//! requests without it get 401, and repeated bad tokens 429; the `Host` header must be the address
//! served (DNS rebinding), an `Origin` must be this origin; the app's strict CSP on every page.
//! `POST /hooks/github` and `/hooks/linear` take GitHub's and Linear's signed deliveries
//! (`nightshift_core::receiver`) without the token: their signature is the credential.

use crate::Outcome;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use clap::Args;
use nightshift_core::api::{self, Face};
use nightshift_core::{Engine, Error, ErrorCode, Scheduler, SchedulerLock};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static UI: include_dir::Dir<'_> = include_dir::include_dir!("$CARGO_MANIFEST_DIR/../../ui");

/// The app's content security policy, with the page's own origin for its calls.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Bad tokens tolerated per minute before every request is refused for a while.
const BAD_TOKENS_PER_MINUTE: usize = 20;

#[derive(Args)]
pub struct ServeArgs {
    /// Where to listen (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:7878")]
    addr: SocketAddr,
    /// Allow an address other than loopback without TLS (the token then crosses the network in clear).
    #[arg(long)]
    insecure: bool,
    /// Refuse every command that would change this home (403), whichever token is given: the
    /// window and other homes' viewers may only look.
    #[arg(long)]
    read_only: bool,
    /// Replace the access tokens (viewers that stored the old ones must be given the new).
    #[arg(long)]
    new_token: bool,
}

/// What a request's token lets it do.
#[derive(Clone, Copy, PartialEq)]
enum Access {
    Full,
    ReadOnly,
}

struct Served {
    engine: Engine,
    token: String,
    /// The token whose calls may only read (`serve-token-read-only`).
    read_only_token: String,
    /// `--read-only`: every token only reads.
    read_only: bool,
    /// `Host` values accepted: the address served, and `localhost:PORT` for loopback.
    hosts: Vec<String>,
    bad_tokens: Mutex<Vec<Instant>>,
    scheduling: AtomicBool,
    elsewhere: Mutex<Option<String>>,
}

impl Face for Served {
    fn scheduled_elsewhere(&self) -> Option<String> {
        self.elsewhere.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    fn scheduling(&self) -> bool {
        self.scheduling.load(Ordering::SeqCst)
    }
    fn open_terminal(&self, account: &nightshift_core::accounts::Account) -> Result<String, String> {
        // A browser page cannot open a terminal on the server: show the command.
        Err(account.login_command_line())
    }
    fn open_link(&self, _url: &str) -> Result<(), Error> {
        // The page opens links itself, in a new tab.
        Err(Error::new(ErrorCode::Usage, "links open in the browser, not on the server"))
    }
    fn open_file(&self, path: &std::path::Path) -> Result<(), Error> {
        // The file is on the server; this page edits it in place instead.
        Err(Error::new(ErrorCode::Usage, format!("the file is on the server ({}); edit it here, or open it there", path.display())))
    }
}

/// The HTTP status for an engine error (the body carries `{code, message}` either way).
fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::Usage | ErrorCode::RoutineInvalid => StatusCode::BAD_REQUEST,
        ErrorCode::RoutineNotFound | ErrorCode::RunNotFound => StatusCode::NOT_FOUND,
        ErrorCode::Conflict => StatusCode::CONFLICT,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

pub async fn serve(engine: Engine, args: ServeArgs) -> Result<Outcome, Error> {
    let loopback = args.addr.ip().is_loopback();
    if !loopback && !args.insecure {
        return Err(Error::new(
            ErrorCode::Usage,
            format!("{} is not a loopback address: the access token would cross the network in clear (no TLS here); put a TLS proxy in front and keep serve on 127.0.0.1, or pass --insecure", args.addr),
        ));
    }
    engine.check_database()?;
    let listener = tokio::net::TcpListener::bind(args.addr).await.map_err(|e| Error::new(ErrorCode::Io, format!("cannot listen on {}: {e}", args.addr)))?;
    let addr = listener.local_addr().map_err(|e| Error::new(ErrorCode::Io, e.to_string()))?;
    let token_file = engine.home().data_dir().join("serve-token");
    let read_only_file = engine.home().data_dir().join("serve-token-read-only");
    let token = kept_token(&token_file, args.new_token)?;
    let read_only_token = kept_token(&read_only_file, args.new_token)?;
    let mut hosts = vec![addr.to_string()];
    if loopback {
        hosts.push(format!("localhost:{}", addr.port()));
    }
    let served = Arc::new(Served {
        engine: engine.clone(),
        token,
        read_only_token,
        read_only: args.read_only,
        hosts,
        bad_tokens: Mutex::new(Vec::new()),
        scheduling: AtomicBool::new(false),
        elsewhere: Mutex::new(None),
    });

    // Schedule this home unless someone else does; deliver its webhooks either way.
    engine.enable_webhooks();
    // Runs a daemon or a CLI queues and settles here reach this page and other homes' viewers
    // (as a state event: they read what changed).
    let _others = engine.hear_other_processes();
    let lock = match SchedulerLock::take(engine.home(), "nightshiftctl serve") {
        Ok(lock) => {
            engine.recover(nightshift_core::RecoveryMode::Adopt).await?;
            served.scheduling.store(true, Ordering::SeqCst);
            let sched = Scheduler::new(engine.clone());
            let scheduling = engine.clone();
            tokio::spawn(async move { nightshift_core::daemon::run(&scheduling, sched, Arc::new(tokio::sync::Notify::new())).await });
            Some(lock)
        }
        Err(nightshift_core::engine::NotTaken::Held { holder }) => {
            tracing::info!("{holder} schedules this home; serving it as a viewer and controller");
            *served.elsewhere.lock().unwrap_or_else(|e| e.into_inner()) = Some(holder);
            None
        }
        Err(nightshift_core::engine::NotTaken::Failed(e)) => return Err(e),
    };
    if !loopback {
        eprintln!("warning: serving on {addr} without TLS (--insecure): anyone on the network path can read the token");
    }
    // Said once at start; a reader that has gone away by then (`serve | head -1`, a closed
    // terminal) must not take the server down with it — the token is in the file too.
    use std::io::Write;
    let mut out = std::io::stdout();
    let _ = writeln!(out, "Nightshift is at http://{addr}/?token={} (the token is also in {}; a read-only one in {})", served.token, token_file.display(), read_only_file.display());
    if args.read_only {
        let _ = writeln!(out, "Read-only: commands that would change this home are refused.");
    }
    if lock.is_none() {
        let _ = writeln!(out, "{} schedules this home; this page views and controls it.", served.scheduled_elsewhere().unwrap_or_default());
    }
    let _ = out.flush();

    let app = Router::new()
        .route("/api/events", get(events))
        .route("/api/{command}", post(command))
        .fallback(get(static_file))
        .with_state(Arc::clone(&served))
        // GitHub's and Linear's deliveries (`trigger:`): their signature is their credential, so
        // neither the token nor the Host check (a tunnel names its own host) applies.
        .merge(nightshift_core::receiver::router(engine.clone()));
    let shutdown = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    };
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await.map_err(|e| Error::new(ErrorCode::Io, format!("serving failed: {e}")))?;
    let _ = engine.hand_off_queued();
    drop(lock);
    Ok(Outcome::Ok)
}

/// The token kept in `path` from an earlier start, or a fresh one written there (also when `renew`).
fn kept_token(path: &std::path::Path, renew: bool) -> Result<String, Error> {
    if !renew {
        if let Ok(text) = std::fs::read_to_string(path) {
            let text = text.trim();
            if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Ok(text.to_string());
            }
        }
    }
    let token = new_token()?;
    write_private(path, &token)?;
    Ok(token)
}

/// A fresh token of 32 random bytes, hex.
fn new_token() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| Error::new(ErrorCode::Io, format!("no randomness for the access token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn write_private(path: &std::path::Path, text: &str) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(|e| Error::io("write", path, &e))?;
    f.write_all(text.as_bytes()).map_err(|e| Error::io("write", path, &e))
}

/// Why a request is refused, if it is: a foreign `Host`, a foreign `Origin`, too many bad tokens,
/// a missing or wrong token (`needs_token`: API calls; pages are public code). Else what its
/// token lets it do.
fn refuse(s: &Served, headers: &HeaderMap, needs_token: bool) -> Result<Access, Response<Body>> {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !s.hosts.iter().any(|h| h == host) {
        return Err(plain(StatusCode::MISDIRECTED_REQUEST, "this server answers only to the address it serves"));
    }
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|h| h.to_str().ok()) {
        if origin != format!("http://{host}") {
            return Err(plain(StatusCode::FORBIDDEN, "cross-origin requests are refused"));
        }
    }
    if !needs_token {
        return Ok(Access::ReadOnly);
    }
    let mut bad = s.bad_tokens.lock().unwrap_or_else(|e| e.into_inner());
    bad.retain(|t| t.elapsed() < Duration::from_secs(60));
    if bad.len() >= BAD_TOKENS_PER_MINUTE {
        return Err(plain(StatusCode::TOO_MANY_REQUESTS, "too many wrong tokens; try again in a minute"));
    }
    let given = headers.get(header::AUTHORIZATION).and_then(|h| h.to_str().ok()).and_then(|h| h.strip_prefix("Bearer ")).unwrap_or("");
    if same(given.as_bytes(), s.token.as_bytes()) {
        return Ok(if s.read_only { Access::ReadOnly } else { Access::Full });
    }
    if same(given.as_bytes(), s.read_only_token.as_bytes()) {
        return Ok(Access::ReadOnly);
    }
    bad.push(Instant::now());
    Err(plain(StatusCode::UNAUTHORIZED, "missing or wrong access token (open the URL `nightshiftctl serve` printed)"))
}

/// Constant-time comparison (the token's length is not secret).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text.to_string()).into_response()
}

async fn command(State(s): State<Arc<Served>>, Path(name): Path<String>, headers: HeaderMap, body: String) -> Response<Body> {
    let access = match refuse(&s, &headers, true) {
        Ok(access) => access,
        Err(no) => return no,
    };
    if access == Access::ReadOnly && !api::call_only_reads(&name, &serde_json::from_str(&body).unwrap_or_default()) {
        let why = if s.read_only { "this server is read-only (serve --read-only)" } else { "this token is read-only" };
        let e = Error::new(ErrorCode::ReadOnly, format!("{why}: \"{name}\" would change the home; only looking is allowed"));
        return json_response(StatusCode::FORBIDDEN, &serde_json::to_value(&e).unwrap_or_default());
    }
    let args: serde_json::Value = if body.trim().is_empty() { serde_json::json!({}) } else { serde_json::from_str(&body).unwrap_or(serde_json::Value::Null) };
    match api::call(&s.engine, s.as_ref(), &name, args).await {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => json_response(status_of(e.code), &serde_json::to_value(&e).unwrap_or_default()),
    }
}

fn json_response(status: StatusCode, v: &serde_json::Value) -> Response<Body> {
    let mut r = (status, v.to_string()).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// Every engine event as `data: {json}` lines (the page reads them with `fetch`, which can carry
/// the token header; `EventSource` cannot).
async fn events(State(s): State<Arc<Served>>, headers: HeaderMap, axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>) -> Response<Body> {
    if let Err(no) = refuse(&s, &headers, true) {
        return no;
    }
    if let Some(home) = q.get("home") {
        return home_events(&s, home);
    }
    let rx = s.engine.subscribe();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        loop {
            let line = match tokio::time::timeout(Duration::from_secs(15), rx.recv()).await {
                Ok(Ok(ev)) => serde_json::to_string(&ev).ok().map(|j| format!("data: {j}\n\n")),
                Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => Some("data: {\"type\":\"resync\"}\n\n".to_string()),
                Ok(Err(_)) => return None,
                // A comment line keeps proxies from closing an idle stream.
                Err(_) => Some(": keep-alive\n\n".to_string()),
            };
            if let Some(line) = line {
                return Some((Ok::<_, std::convert::Infallible>(line), rx));
            }
        }
    });
    let mut r = Response::new(Body::from_stream(stream));
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `/api/events?home=NAME`: another home's events, relayed (the page shows that home). A stream
/// that breaks ends; the page reconnects and reads again, as for this home's own.
fn home_events(s: &Served, home: &str) -> Response<Body> {
    let client = match nightshift_core::homes::client(&s.engine, home) {
        Ok(c) => c,
        Err(e) => return json_response(status_of(e.code), &serde_json::to_value(&e).unwrap_or_default()),
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
        match tokio::time::timeout(Duration::from_secs(15), rx.recv()).await {
            Ok(Some(line)) => Some((Ok::<_, std::convert::Infallible>(line), (rx, relay))),
            Ok(None) => None,
            Err(_) => Some((Ok(": keep-alive\n\n".to_string()), (rx, relay))),
        }
    });
    let mut r = Response::new(Body::from_stream(stream));
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

async fn static_file(State(s): State<Arc<Served>>, headers: HeaderMap, uri: axum::http::Uri) -> Response<Body> {
    if let Err(no) = refuse(&s, &headers, false) {
        return no;
    }
    let path = uri.path().trim_start_matches('/');
    let path = if path.is_empty() { "index.html" } else { path };
    let Some(file) = UI.get_file(path) else {
        return plain(StatusCode::NOT_FOUND, "not found");
    };
    let kind = match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    };
    let mut r = Response::new(Body::from(file.contents()));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // The first page's URL carries the token: never send it on as a referrer.
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
