//! The window over HTTP, for a browser and for other homes' viewers: the same `ui/` pages, the
//! same commands (`crate::api`) as the app's window, the engine's events as Server-Sent Events,
//! and GitHub's and Linear's deliveries (`crate::receiver`, without the token: their signature
//! is their credential). `nightshiftctl serve` runs it in the foreground; the app and
//! `nightshiftctl daemon` run it beside their scheduler with `[serve] listen`.
//!
//! Secure by default: loopback only (another address needs `insecure`: there is no TLS here — a
//! TLS proxy in front, named by `public_url`, is how it is reached from afar); a random access
//! token, written 0600 to the home and kept across restarts (so a viewer on another machine stays
//! connected) until `new_token` replaces it; a second, read-only token beside it (anything that
//! would change the home is answered 403, as is every change under `read_only`). The page keeps
//! its token and sends it in a header (never a cookie, so another site cannot ride on it);
//! requests without it get 401, repeated bad tokens 429; the `Host` header must be an address
//! served (DNS rebinding), an `Origin` that origin; the app's strict CSP on every page.

mod access;
mod pages;
mod streams;

use crate::api::{self, Face};
use crate::{Engine, Error, ErrorCode};
use access::{Access, Gate};
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// How to serve (`nightshiftctl serve`'s flags, or `[serve]` in nightshift.toml).
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen (port 0: any free port).
    pub addr: SocketAddr,
    /// Allow an address other than loopback (the token then crosses the network in clear).
    pub insecure: bool,
    /// Every token only reads.
    pub read_only: bool,
    /// Replace the kept access tokens.
    pub new_token: bool,
    /// `https://NAME[:PORT]`: the address of a TLS proxy in front, whose requests carry that name.
    pub public_url: Option<String>,
}

/// Who schedules the home served, asked by the window's header (the face that serves knows).
pub trait Scheduling: Send + Sync {
    /// Another process schedules this home, by name.
    fn scheduled_elsewhere(&self) -> Option<String>;
    /// This process's scheduler is running.
    fn scheduling(&self) -> bool;
}

/// The process that serves also schedules the home, for its whole life (`nightshiftctl daemon`).
pub struct SchedulesHere;

impl Scheduling for SchedulesHere {
    fn scheduled_elsewhere(&self) -> Option<String> {
        None
    }
    fn scheduling(&self) -> bool {
        true
    }
}

/// The commands' host for HTTP callers: a page in a browser, or another home's viewer — neither
/// sits at this machine, so nothing opens here.
struct Served {
    engine: Engine,
    /// `/mcp`: the MCP tools over streamable HTTP.
    mcp: crate::mcp::http::Service,
    gate: Gate,
    scheduling: Arc<dyn Scheduling>,
}

impl Face for Served {
    fn scheduled_elsewhere(&self) -> Option<String> {
        self.scheduling.scheduled_elsewhere()
    }
    fn scheduling(&self) -> bool {
        self.scheduling.scheduling()
    }
    fn open_terminal(&self, account: &crate::accounts::Account) -> Result<String, String> {
        // The caller is not at this machine: show the command to run here.
        Err(account.login_command_line())
    }
    fn open_link(&self, _url: &str) -> Result<(), Error> {
        Err(Error::new(ErrorCode::Usage, "links open in the browser, not on the server"))
    }
    fn open_file(&self, path: &std::path::Path) -> Result<(), Error> {
        Err(Error::new(ErrorCode::Usage, format!("the file is on the server ({}); edit it here, or open it there", path.display())))
    }
}

/// A bound server, not yet answering.
pub struct Server {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    served: Arc<Served>,
    token_file: PathBuf,
    read_only_file: PathBuf,
}

impl Server {
    /// Bind `options.addr` and read (or make) the access tokens.
    pub async fn bind(engine: &Engine, options: &ServeOptions, scheduling: Arc<dyn Scheduling>) -> Result<Server, Error> {
        let loopback = options.addr.ip().is_loopback();
        if !loopback && !options.insecure {
            return Err(Error::new(
                ErrorCode::Usage,
                format!("{} is not a loopback address: the access token would cross the network in clear (no TLS here); put a TLS proxy in front and keep serve on 127.0.0.1 (naming it with --public-url), or pass --insecure", options.addr),
            ));
        }
        let public = match options.public_url.as_deref() {
            Some(url) => Some(crate::settings::public_host(url).map_err(|e| Error::new(ErrorCode::Usage, e))?),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(options.addr).await.map_err(|e| Error::new(ErrorCode::Io, format!("cannot listen on {}: {e}", options.addr)))?;
        let addr = listener.local_addr().map_err(|e| Error::new(ErrorCode::Io, e.to_string()))?;
        let token_file = engine.home().data_dir().join("serve-token");
        let read_only_file = engine.home().data_dir().join("serve-token-read-only");
        let token = crate::secret_file::kept(&token_file, options.new_token)?;
        let read_only_token = crate::secret_file::kept(&read_only_file, options.new_token)?;
        let mut hosts = vec![(addr.to_string(), "http")];
        if loopback {
            hosts.push((format!("localhost:{}", addr.port()), "http"));
        }
        if let Some(public) = public {
            hosts.push((public, "https"));
        }
        let served = Arc::new(Served { engine: engine.clone(), mcp: crate::mcp::http::service(engine), gate: Gate::new(token, read_only_token, options.read_only, hosts), scheduling });
        Ok(Server { listener, addr, served, token_file, read_only_file })
    }

    /// The address bound.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page's address with the full token, to open in a browser.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.served.gate.token)
    }

    /// Where the full and the read-only token are kept (0600).
    pub fn token_files(&self) -> (&std::path::Path, &std::path::Path) {
        (&self.token_file, &self.read_only_file)
    }

    /// Answer until `shutdown` completes.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()> + Send + 'static) -> Result<(), Error> {
        let engine = self.served.engine.clone();
        // Runs a daemon or a CLI queues and settles on this home reach the pages and other homes'
        // viewers too (as a state event: they read what changed).
        let _others = engine.hear_other_processes();
        let app = Router::new()
            .route("/api/events", get(events))
            .route("/api/{command}", post(command))
            .route("/mcp", axum::routing::any(mcp))
            .fallback(get(page))
            .with_state(self.served)
            // GitHub's and Linear's deliveries (`trigger:`): their signature is their credential,
            // so neither the token nor the Host check (a tunnel names its own host) applies.
            .merge(crate::receiver::router(engine.clone()))
            // Approve / Deny from the phone: the link's signature is its credential (see
            // `engine::approval_links`), so neither the token nor the Host check applies.
            .merge(Router::new().route("/approvals/{id}/{answer}", post(approval_link).get(approval_link_page)).with_state(engine));
        axum::serve(self.listener, app).with_graceful_shutdown(shutdown).await.map_err(|e| Error::new(ErrorCode::Io, format!("serving failed: {e}")))
    }
}

/// `[serve] listen`: serve the window beside the scheduler, for as long as the process lives —
/// started by the app and `nightshiftctl daemon`. The address is read now: a changed one takes a
/// restart. One that cannot be bound is told atop the window and in `problems`.
pub async fn serve_as_configured(engine: &Engine, scheduling: Arc<dyn Scheduling>) {
    let settings = engine.settings();
    let Some(addr) = settings.serve.listen else { return };
    let options = ServeOptions { addr, insecure: false, read_only: settings.serve.read_only, new_token: false, public_url: settings.serve.public_url.clone() };
    match Server::bind(engine, &options, scheduling).await {
        Ok(server) => {
            tracing::info!(addr = %server.addr(), "serving the window and other homes' viewers (`[serve] listen`); the token is in {}", server.token_files().0.display());
            tokio::spawn(async move {
                if let Err(e) = server.run(std::future::pending()).await {
                    tracing::error!(error = %e.message, "the window's server stopped");
                }
            });
        }
        Err(e) => engine.tell_serve_problem(format!("cannot serve on {addr} (`[serve] listen`): {}", e.message)),
    }
}

/// The HTTP status for an engine error (the body carries `{code, message}` either way).
fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::Usage | ErrorCode::RoutineInvalid => StatusCode::BAD_REQUEST,
        ErrorCode::RoutineNotFound | ErrorCode::RunNotFound => StatusCode::NOT_FOUND,
        ErrorCode::Conflict | ErrorCode::OtherDevice => StatusCode::CONFLICT,
        ErrorCode::ReadOnly | ErrorCode::NotAllowed => StatusCode::FORBIDDEN,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text.to_string()).into_response()
}

fn no_store(r: &mut Response<Body>) {
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

fn json_response(status: StatusCode, v: &serde_json::Value) -> Response<Body> {
    let mut r = (status, v.to_string()).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    no_store(&mut r);
    r
}

fn error_response(e: &Error) -> Response<Body> {
    json_response(status_of(e.code), &serde_json::to_value(e).unwrap_or_default())
}

async fn command(State(s): State<Arc<Served>>, Path(name): Path<String>, headers: HeaderMap, body: String) -> Response<Body> {
    let access = match s.gate.check(&headers, true) {
        Ok(access) => access,
        Err(no) => return no,
    };
    let args: serde_json::Value = if body.trim().is_empty() { serde_json::json!({}) } else { serde_json::from_str(&body).unwrap_or(serde_json::Value::Null) };
    if access == Access::ReadOnly && !api::call_only_reads(&name, &args) {
        let why = if s.gate.read_only { "this server is read-only (serve --read-only)" } else { "this token is read-only" };
        return error_response(&Error::new(ErrorCode::ReadOnly, format!("{why}: \"{name}\" would change the home; only looking is allowed")));
    }
    match api::call(&s.engine, s.as_ref(), &name, args).await {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => error_response(&e),
    }
}

/// `POST /approvals/<ask>/<allow|deny>?until=…&sig=…`: an ask answered from a signed link.
async fn approval_link(State(engine): State<Engine>, Path((id, answer)): Path<(String, String)>, Query(q): Query<HashMap<String, String>>) -> Response<Body> {
    let until = q.get("until").and_then(|u| u.parse::<i64>().ok()).unwrap_or(0);
    let sig = q.get("sig").cloned().unwrap_or_default();
    let linked = engine.clone();
    let answered = tokio::task::spawn_blocking(move || linked.answer_by_link(&id, &answer, until, &sig)).await;
    use crate::engine::Refused;
    match answered {
        Ok(Ok(Ok(ask))) => {
            // Approved after a blocked run: its rerun starts here.
            let ask = match engine.rerun_if_approved(ask.clone()).await {
                Ok(ask) => ask,
                Err(e) => {
                    tracing::warn!(ask = %ask.id, error = %e.message, "the approved rerun did not start here; the scheduler starts it");
                    ask
                }
            };
            plain(StatusCode::OK, &format!("{} — thank you", crate::engine::ask_outcome(&ask, crate::schedule::local_tz())))
        }
        Ok(Ok(Err(Refused::Forged))) => plain(StatusCode::FORBIDDEN, "this is not a link Nightshift signed for this ask and answer"),
        Ok(Ok(Err(Refused::Unknown))) => plain(StatusCode::NOT_FOUND, "no such ask here"),
        Ok(Ok(Err(Refused::Expired(why)))) => plain(StatusCode::GONE, &why),
        Ok(Ok(Err(Refused::Answered(why)))) => plain(StatusCode::CONFLICT, &why),
        Ok(Err(e)) => error_response(&e),
        Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, &format!("the engine task failed: {e}")),
    }
}

/// A link opened in a browser answers nothing (a preview must not approve): it says to press.
async fn approval_link_page() -> Response<Body> {
    plain(StatusCode::METHOD_NOT_ALLOWED, "press Approve or Deny in the notification (this link answers a POST only)")
}

/// `/mcp`: the MCP tools (`crate::mcp`) behind the same token as the API; a read-only token
/// (or `serve --read-only`) reaches only the tools that read.
async fn mcp(State(s): State<Arc<Served>>, request: axum::extract::Request) -> Response<Body> {
    let access = match s.gate.check(request.headers(), true) {
        Ok(access) => access,
        Err(no) => return no,
    };
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(crate::mcp::http::Access { may_act: access == Access::Full });
    let answer = s.mcp.handle(axum::http::Request::from_parts(parts, body)).await;
    let (parts, body) = answer.into_parts();
    Response::from_parts(parts, Body::new(body))
}

async fn events(State(s): State<Arc<Served>>, headers: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response<Body> {
    if let Err(no) = s.gate.check(&headers, true) {
        return no;
    }
    match q.get("home") {
        Some(home) => streams::of_home(&s.engine, home),
        None => streams::own(&s.engine),
    }
}

async fn page(State(s): State<Arc<Served>>, headers: HeaderMap, uri: axum::http::Uri) -> Response<Body> {
    if let Err(no) = s.gate.check(&headers, false) {
        return no;
    }
    pages::page(uri.path())
}
