//! A fake of GitHub's REST API on loopback, for polling: `GET /repos/{owner}/{repo}/events` as
//! GitHub answers it — newest first, `per_page` a page with a `Link: rel="next"` to the next,
//! an `ETag` per answer and `304 Not Modified` (which does not count against the rate limit) for
//! a matching `If-None-Match`, `X-Poll-Interval`, `X-RateLimit-Limit/Remaining/Reset` — and a spent
//! limit as GitHub's 403 with `X-RateLimit-Remaining: 0`. `GET /repos/{owner}/{repo}/pulls/{n}`
//! and `/issues/{n}` give the whole objects the Events API trims. A wrong token is GitHub's 401
//! "Bad credentials". Entries are shaped as the Events API documents them (`type`, `actor`,
//! `repo`, `payload`, `created_at`; no `repository`/`sender` in the payload).
//!
//! GitHub Actions (dispatches, workflow runs run for real by `act`, job logs, secrets, runners)
//! is in [`actions`].

pub mod actions;
mod pulls;
pub use pulls::TOKEN_USER;
pub use actions::ActionsRepo;

use axum::extract::{Path, Query, State as Axum};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::Router;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One request as the fake answered it (a slow page's is also listed when it arrives, with
/// status 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub path: String,
    pub page: usize,
    pub status: u16,
    pub if_none_match: Option<String>,
}

struct State {
    token: String,
    /// Per repository, newest first.
    events: HashMap<String, Vec<Value>>,
    /// `owner/repo/pulls/41` → the whole pull request (likewise issues).
    objects: HashMap<String, Value>,
    next_id: u64,
    per_page: usize,
    poll_interval: u64,
    limit: u64,
    remaining: u64,
    reset: i64,
    /// Pages (1-based) that are answered only after this long (a poller killed while it waits).
    slow_page: Option<(usize, std::time::Duration)>,
    asks: Vec<Ask>,
    actions: actions::Actions,
}

pub struct FakeGithub {
    addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
}

impl FakeGithub {
    /// Serve on 127.0.0.1 (inside a tokio runtime); `token` is the one it takes.
    pub async fn start(token: &str) -> FakeGithub {
        let state = Arc::new(Mutex::new(State {
            token: token.to_string(),
            events: HashMap::new(),
            objects: HashMap::new(),
            next_id: 40_000_000_000,
            per_page: 100,
            poll_interval: 1,
            limit: 5000,
            remaining: 5000,
            reset: chrono::Utc::now().timestamp() + 3600,
            slow_page: None,
            asks: Vec::new(),
            actions: actions::Actions::default(),
        }));
        let app = Router::new()
            .route("/repos/{owner}/{repo}/events", get(events))
            .route("/repos/{owner}/{repo}/{kind}/{number}", get(object).patch(pulls::update))
            .route("/repos/{owner}/{repo}/pulls", post(pulls::create))
            .route("/user", get(pulls::user))
            .route("/repos/{owner}/{repo}/collaborators/{login}", get(pulls::collaborator))
            .route("/repos/{owner}/{repo}/pulls/{number}/reviews/{id}/comments", get(pulls::review_comments))
            .route("/repos/{owner}/{repo}/{kind}/{number}/{what}", post(pulls::add_to))
            .route("/repos/{owner}/{repo}", get(actions::repository))
            .route("/repos/{owner}/{repo}/actions/workflows/{workflow}/dispatches", post(actions::dispatch))
            .route("/repos/{owner}/{repo}/actions/workflows/{workflow}/runs", get(actions::list_runs))
            .route("/repos/{owner}/{repo}/actions/runs/{id}", get(actions::get_run))
            .route("/repos/{owner}/{repo}/actions/runs/{id}/jobs", get(actions::jobs))
            .route("/repos/{owner}/{repo}/actions/runs/{id}/cancel", post(actions::cancel))
            .route("/repos/{owner}/{repo}/actions/jobs/{id}/logs", get(actions::job_log))
            .route("/_blobs/jobs/{id}/log", get(actions::blob))
            .route("/repos/{owner}/{repo}/actions/secrets/public-key", get(actions::public_key))
            .route("/repos/{owner}/{repo}/actions/secrets/{name}", put(actions::put_secret))
            .route("/repos/{owner}/{repo}/actions/secrets", get(actions::secrets))
            .route("/repos/{owner}/{repo}/actions/runners", get(actions::runners))
            .route("/repos/{owner}/{repo}/contents/{*path}", get(actions::contents))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the fake GitHub");
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        FakeGithub { addr, state }
    }

    /// The API's address (`[github] api_url`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A repository with no events yet (its feed answers `[]`).
    pub fn add_repo(&self, repo: &str) {
        self.state.lock().unwrap().events.entry(repo.to_string()).or_default();
    }

    /// Add an entry to `repo`'s feed: `kind` as the Events API names it (`PullRequestEvent`),
    /// `payload` as it documents it, by `actor`, at `created_at`. Returns its id.
    pub fn add_event(&self, repo: &str, kind: &str, actor: &str, payload: Value, created_at: chrono::DateTime<chrono::Utc>) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.next_id += 1;
        let id = s.next_id;
        let entry = json!({
            "id": id.to_string(), "type": kind, "public": true, "created_at": created_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "actor": {"id": 1, "login": actor, "display_login": actor, "url": format!("https://api.github.com/users/{actor}")},
            "repo": {"id": 1296269, "name": repo, "url": format!("https://api.github.com/repos/{repo}")},
            "payload": payload,
        });
        s.events.entry(repo.to_string()).or_default().insert(0, entry);
        id
    }

    /// The whole pull request or issue (`kind`: `pulls` | `issues`) the Events API trims.
    pub fn set_object(&self, repo: &str, kind: &str, number: u64, whole: Value) {
        self.state.lock().unwrap().objects.insert(format!("{repo}/{kind}/{number}"), whole);
    }

    /// Entries per page (GitHub: up to 100).
    pub fn set_per_page(&self, n: usize) {
        self.state.lock().unwrap().per_page = n.max(1);
    }

    /// Answer page `page` (1-based) of any feed only after `wait`.
    pub fn slow_page(&self, page: usize, wait: std::time::Duration) {
        self.state.lock().unwrap().slow_page = Some((page, wait));
    }

    /// Answer without delays again.
    pub fn no_slow_page(&self) {
        self.state.lock().unwrap().slow_page = None;
    }

    /// Set what is left of the rate limit and when it resets (unix seconds).
    pub fn set_rate_limit(&self, remaining: u64, reset: i64) {
        let mut s = self.state.lock().unwrap();
        s.remaining = remaining;
        s.reset = reset;
    }

    /// What is left of the rate limit.
    pub fn remaining(&self) -> u64 {
        self.state.lock().unwrap().remaining
    }

    /// Every request answered, in order.
    pub fn asks(&self) -> Vec<Ask> {
        self.state.lock().unwrap().asks.clone()
    }

    /// Forget the requests answered so far.
    pub fn clear_asks(&self) {
        self.state.lock().unwrap().asks.clear();
    }
}

fn bad_credentials() -> Response {
    (StatusCode::UNAUTHORIZED, axum::Json(json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"}))).into_response()
}

fn authorized(s: &State, headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.split_once(' ')).is_some_and(|(_, t)| t == s.token)
}

fn limit_headers(s: &State) -> [(&'static str, String); 4] {
    [("x-ratelimit-limit", s.limit.to_string()), ("x-ratelimit-remaining", s.remaining.to_string()), ("x-ratelimit-reset", s.reset.to_string()), ("x-ratelimit-resource", "core".into())]
}

async fn events(Axum(state): Axum<Arc<Mutex<State>>>, Path((owner, repo)): Path<(String, String)>, Query(q): Query<HashMap<String, String>>, headers: HeaderMap) -> Response {
    let page: usize = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(1).max(1);
    let slow = state.lock().unwrap().slow_page.filter(|(p, _)| *p == page).map(|(_, wait)| wait);
    if let Some(wait) = slow {
        // Seen at once (status 0: not answered yet), answered after the wait.
        state.lock().unwrap().asks.push(Ask { path: format!("/repos/{owner}/{repo}/events"), page, status: 0, if_none_match: None });
        tokio::time::sleep(wait).await;
    }
    let mut s = state.lock().unwrap();
    let full = format!("{owner}/{repo}");
    let if_none_match = headers.get("if-none-match").and_then(|v| v.to_str().ok()).map(str::to_string);
    let mut ask = Ask { path: format!("/repos/{full}/events"), page, status: 200, if_none_match: if_none_match.clone() };
    let response = if !authorized(&s, &headers) {
        ask.status = 401;
        bad_credentials()
    } else if s.remaining == 0 {
        ask.status = 403;
        let body = json!({"message": "API rate limit exceeded for user ID 1.", "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"});
        (StatusCode::FORBIDDEN, limit_headers(&s), axum::Json(body)).into_response()
    } else if let Some(all) = s.events.get(&full).cloned() {
        let per_page = q.get("per_page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(30).clamp(1, 100).min(s.per_page);
        let pages = all.len().div_ceil(per_page).max(1);
        let items: Vec<Value> = all.iter().skip((page - 1) * per_page).take(per_page).cloned().collect();
        let body = serde_json::to_string(&items).unwrap();
        let etag = format!("W/\"{:x}\"", Sha256::digest(body.as_bytes()));
        if if_none_match.as_deref() == Some(etag.as_str()) {
            ask.status = 304;
            // Not Modified costs no rate limit.
            (StatusCode::NOT_MODIFIED, [("etag", etag), ("x-poll-interval", s.poll_interval.to_string())], limit_headers(&s)).into_response()
        } else {
            s.remaining -= 1;
            let here = format!("http://{}/repos/{full}/events?per_page={per_page}", headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or(""));
            let mut links = Vec::new();
            if page < pages {
                links.push(format!("<{here}&page={}>; rel=\"next\"", page + 1));
                links.push(format!("<{here}&page={pages}>; rel=\"last\""));
            }
            let mut response = (StatusCode::OK, [("etag", etag), ("x-poll-interval", s.poll_interval.to_string()), ("content-type", "application/json; charset=utf-8".into())], limit_headers(&s), body).into_response();
            if !links.is_empty() {
                response.headers_mut().insert("link", links.join(", ").parse().unwrap());
            }
            response
        }
    } else {
        ask.status = 404;
        (StatusCode::NOT_FOUND, axum::Json(json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest/activity/events#list-repository-events", "status": "404"}))).into_response()
    };
    s.asks.push(ask);
    response
}

async fn object(Axum(state): Axum<Arc<Mutex<State>>>, Path((owner, repo, kind, number)): Path<(String, String, String, u64)>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    let path = format!("{owner}/{repo}/{kind}/{number}");
    let mut ask = Ask { path: format!("/repos/{path}"), page: 1, status: 200, if_none_match: None };
    let response = if !authorized(&s, &headers) {
        ask.status = 401;
        bad_credentials()
    } else if let Some(whole) = s.objects.get(&path).cloned() {
        s.remaining = s.remaining.saturating_sub(1);
        (StatusCode::OK, limit_headers(&s), axum::Json(whole)).into_response()
    } else {
        ask.status = 404;
        (StatusCode::NOT_FOUND, axum::Json(json!({"message": "Not Found"}))).into_response()
    };
    s.asks.push(ask);
    response
}
