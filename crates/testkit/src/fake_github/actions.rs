//! GitHub Actions in the fake GitHub: a repository's workflow dispatches, workflow runs and their
//! jobs, job logs, cancel, the repository's public key and secrets, its files and its runners —
//! shaped as GitHub's REST API documents them — with a real workflow executor behind it: a
//! dispatch runs **the workflow file itself** under `act` in host mode (the job's `runs-on` labels
//! mapped to this machine, the actions it `uses:` given as local stand-ins), after a queue delay,
//! and only when the fake's runner has every label the job asks for. The job's log is act's
//! output in GitHub's form (a timestamp before each line). Secrets written through the API are
//! opened with the repository's key and handed to act in a file (never on a command line).
//! Faults on demand: 5xx answers, a dispatch that answers 500 after creating its run, a spent
//! rate limit, a slow queue.

use super::{authorized, bad_credentials, limit_headers, State};
use axum::extract::{Path, Query, State as Axum};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(super) type Shared = Arc<Mutex<State>>;

/// A repository whose Actions the fake runs.
pub struct ActionsRepo {
    /// A git checkout holding `.github/workflows/…` — what act runs, in host mode.
    pub checkout: PathBuf,
    pub default_branch: String,
    /// The labels of the one self-hosted runner (empty: the repository has none).
    pub runner_labels: Vec<String>,
    pub runner_online: bool,
    /// How long a dispatched run waits in the queue before the runner takes it.
    pub queue_delay: Duration,
    /// The `act` binary and the environment it runs with (its PATH finds the agent CLIs).
    pub act: PathBuf,
    pub env: Vec<(String, String)>,
    /// Folders that stand in for the actions the workflow `uses:` (`actions/checkout@v4` → a
    /// folder with an `action.yml`).
    pub local_actions: Vec<(String, PathBuf)>,
}

impl ActionsRepo {
    /// A repository at `checkout` ([`checkout`]) whose runner has `runner_labels`, run by `act`
    /// with `path` as its PATH: on `main`, online, no queue delay, the stand-ins as its actions.
    pub fn new(checkout: &std::path::Path, act: PathBuf, runner_labels: &[&str], path: String) -> ActionsRepo {
        let stub = checkout.join(".stub");
        ActionsRepo {
            checkout: checkout.to_path_buf(),
            default_branch: "main".into(),
            runner_labels: runner_labels.iter().map(|l| l.to_string()).collect(),
            runner_online: true,
            queue_delay: Duration::ZERO,
            act,
            env: vec![("PATH".into(), path), ("LANG".into(), "C.UTF-8".into())],
            local_actions: vec![("actions/checkout@v4".into(), stub.clone()), ("actions/setup-node@v4".into(), stub)],
        }
    }
}

/// A repository's checkout: `workflow` committed on `main` as `.github/workflows/nightshift.yml`,
/// and a stand-in (`.stub/action.yml`) for the actions it `uses:`, which would need the network.
pub fn checkout(workflow: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a folder for the repository");
    let workflows = dir.path().join(".github/workflows");
    std::fs::create_dir_all(&workflows).unwrap();
    std::fs::write(workflows.join("nightshift.yml"), workflow).unwrap();
    let stub = dir.path().join(".stub");
    std::fs::create_dir_all(&stub).unwrap();
    std::fs::write(stub.join("action.yml"), "name: stand-in\ndescription: stands in for an action the network would fetch\nruns:\n  using: composite\n  steps:\n    - run: echo \"stand-in for a marketplace action\"\n      shell: bash\n").unwrap();
    for args in [&["init", "-q", "-b", "main"][..], &["add", "-A"], &["-c", "user.email=ci@acme.dev", "-c", "user.name=ci", "commit", "-qm", "nightshift"]] {
        let ok = std::process::Command::new("git").args(args).current_dir(dir.path()).status().is_ok_and(|s| s.success());
        assert!(ok, "git {args:?} in the repository's checkout");
    }
    dir
}

pub(super) struct Repo {
    config: ActionsRepo,
    key: crypto_box::SecretKey,
    key_id: String,
    /// Secrets as written through the API, opened.
    secrets: HashMap<String, String>,
}

#[derive(Clone)]
pub(super) struct WorkflowRun {
    id: u64,
    repo: String,
    workflow: String,
    name: String,
    status: String,
    conclusion: Option<String>,
    created_at: chrono::DateTime<chrono::Utc>,
    job_id: u64,
    job_status: String,
    runner_name: Option<String>,
    started_at: Option<String>,
    log: String,
    inputs: Value,
    /// act's process group while the job runs.
    pgid: Option<i32>,
    cancel_asked: bool,
    taken_at: Option<chrono::DateTime<chrono::Utc>>,
    completed_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Everything the Actions part of the fake keeps.
#[derive(Default)]
pub(super) struct Actions {
    repos: HashMap<String, Repo>,
    runs: Vec<WorkflowRun>,
    next_id: u64,
    /// The next N answers (any Actions request) are this HTTP status.
    failing: Option<(u16, usize)>,
    /// The next dispatch creates its run, then answers 500 (its answer is lost).
    lose_next_dispatch_answer: bool,
    /// A log download that came with an `Authorization` header (the token leaked to the blob).
    pub(super) token_sent_to_blob: bool,
    /// Requests answered (each counts against the rate limit), and conditional ones answered 304
    /// (which do not).
    asked: u64,
    not_modified: u64,
    /// Requests refused because the rate limit was spent.
    limited: u64,
}

impl super::FakeGithub {
    /// Let `repo` run workflows (see [`ActionsRepo`]).
    pub fn add_actions_repo(&self, repo: &str, config: ActionsRepo) {
        let key = crypto_box::SecretKey::generate(&mut crypto_box::aead::OsRng);
        let key_id = format!("{:x}", Sha256::digest(key.public_key().as_bytes()))[..20].to_string();
        let mut s = self.state.lock().unwrap();
        s.events.entry(repo.to_string()).or_default();
        s.actions.repos.insert(repo.to_string(), Repo { config, key, key_id, secrets: HashMap::new() });
    }

    /// The next `n` Actions requests answer HTTP `status` (GitHub failing: 500, 502, 503).
    pub fn fail_next(&self, status: u16, n: usize) {
        self.state.lock().unwrap().actions.failing = Some((status, n));
    }

    /// The next dispatch creates its workflow run, then answers 500 as if it had failed.
    pub fn lose_next_dispatch_answer(&self) {
        self.state.lock().unwrap().actions.lose_next_dispatch_answer = true;
    }

    /// The runner comes online or goes offline.
    pub fn set_runner_online(&self, repo: &str, online: bool) {
        if let Some(r) = self.state.lock().unwrap().actions.repos.get_mut(repo) {
            r.config.runner_online = online;
        }
    }

    /// Every workflow run dispatched so far: (id, its name, status, conclusion).
    pub fn workflow_runs(&self) -> Vec<(u64, String, String, Option<String>)> {
        self.state.lock().unwrap().actions.runs.iter().map(|r| (r.id, r.name.clone(), r.status.clone(), r.conclusion.clone())).collect()
    }

    /// The inputs each dispatch carried, in order.
    pub fn dispatched_inputs(&self) -> Vec<Value> {
        self.state.lock().unwrap().actions.runs.iter().map(|r| r.inputs.clone()).collect()
    }

    /// A secret of `repo` as GitHub holds it, opened (only the test may look).
    pub fn secret(&self, repo: &str, name: &str) -> Option<String> {
        self.state.lock().unwrap().actions.repos.get(repo)?.secrets.get(name).cloned()
    }

    /// Actions requests so far: (answered and counted against the rate limit, answered 304).
    pub fn actions_asks(&self) -> (u64, u64) {
        let s = self.state.lock().unwrap();
        (s.actions.asked, s.actions.not_modified)
    }

    /// Actions requests refused with a spent rate limit.
    pub fn rate_limited_asks(&self) -> u64 {
        self.state.lock().unwrap().actions.limited
    }

    /// When workflow run `id` was dispatched, taken by the runner, and completed.
    pub fn job_times(&self, id: u64) -> Option<(chrono::DateTime<chrono::Utc>, Option<chrono::DateTime<chrono::Utc>>, Option<chrono::DateTime<chrono::Utc>>)> {
        let s = self.state.lock().unwrap();
        s.actions.runs.iter().find(|r| r.id == id).map(|r| (r.created_at, r.taken_at, r.completed_at))
    }

    /// Whether a log download ever came with the token.
    pub fn token_sent_to_blob(&self) -> bool {
        self.state.lock().unwrap().actions.token_sent_to_blob
    }
}

/// The answer every Actions request gets first: a bad token, a spent limit or an injected fault.
/// Each request is counted (`FakeGithub::actions_asks`).
fn refused(s: &mut State, headers: &HeaderMap) -> Option<Response> {
    s.actions.asked += 1;
    if !authorized(s, headers) {
        return Some(bad_credentials());
    }
    // A spent limit is renewed at its reset, as GitHub's is.
    if s.remaining == 0 && chrono::Utc::now().timestamp() >= s.reset {
        s.remaining = s.limit;
        s.reset = chrono::Utc::now().timestamp() + 3600;
    }
    if s.remaining == 0 {
        s.actions.limited += 1;
        let body = json!({"message": "API rate limit exceeded for user ID 1.", "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"});
        return Some((StatusCode::FORBIDDEN, limit_headers(s), Json(body)).into_response());
    }
    if let Some((status, n)) = s.actions.failing {
        s.actions.failing = (n > 1).then_some((status, n - 1));
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
        return Some((code, Json(json!({"message": "Server Error"}))).into_response());
    }
    s.remaining -= 1;
    None
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}))).into_response()
}

fn ok(s: &State, body: Value) -> Response {
    (StatusCode::OK, limit_headers(s), Json(body)).into_response()
}

pub(super) async fn repository(Axum(state): Axum<Shared>, Path((owner, repo)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    let full = format!("{owner}/{repo}");
    match s.actions.repos.get(&full) {
        Some(r) => ok(&s, json!({"id": 1296269, "full_name": full, "default_branch": r.config.default_branch, "private": true})),
        None => not_found(),
    }
}

fn run_json(host: &str, r: &WorkflowRun) -> Value {
    json!({
        "id": r.id, "name": "Nightshift", "display_title": r.name, "event": "workflow_dispatch",
        "status": r.status, "conclusion": r.conclusion, "path": format!(".github/workflows/{}", r.workflow),
        "created_at": r.created_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "html_url": format!("https://github.com/{}/actions/runs/{}", r.repo, r.id),
        "url": format!("http://{host}/repos/{}/actions/runs/{}", r.repo, r.id),
    })
}

pub(super) async fn dispatch(Axum(state): Axum<Shared>, Path((owner, repo, workflow)): Path<(String, String, String)>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let full = format!("{owner}/{repo}");
    let (run, lose) = {
        let mut s = state.lock().unwrap();
        if let Some(r) = refused(&mut s, &headers) {
            return r;
        }
        let Some(r) = s.actions.repos.get(&full) else { return not_found() };
        let file = r.config.checkout.join(".github/workflows").join(&workflow);
        let Ok(text) = std::fs::read_to_string(&file) else {
            return (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest/actions/workflows#create-a-workflow-dispatch-event"}))).into_response();
        };
        if body["ref"].as_str() != Some(r.config.default_branch.as_str()) {
            return (StatusCode::UNPROCESSABLE_ENTITY, Json(json!({"message": format!("No ref found for: {}", body["ref"].as_str().unwrap_or(""))}))).into_response();
        }
        let inputs = body["inputs"].clone();
        if inputs.as_object().is_some_and(|o| o.values().any(|v| !v.is_string())) {
            return (StatusCode::UNPROCESSABLE_ENTITY, Json(json!({"message": "Provided value for an input is not a string"}))).into_response();
        }
        // `run-name:` as GitHub evaluates it, for the inputs this workflow reads.
        let name = text.lines().find_map(|l| l.strip_prefix("run-name:")).map(|n| n.trim().trim_matches('"').to_string()).unwrap_or_else(|| "Nightshift".into());
        let name = inputs.as_object().map(|o| o.iter().fold(name.clone(), |n, (k, v)| n.replace(&format!("${{{{ inputs.{k} }}}}"), v.as_str().unwrap_or("")))).unwrap_or(name);
        s.actions.next_id += 1;
        let id = 7_000_000_000 + s.actions.next_id;
        let run = WorkflowRun {
            id,
            repo: full.clone(),
            workflow: workflow.clone(),
            name,
            status: "queued".into(),
            conclusion: None,
            created_at: chrono::Utc::now(),
            job_id: 30_000_000_000 + id,
            job_status: "queued".into(),
            runner_name: None,
            started_at: None,
            log: String::new(),
            inputs,
            pgid: None,
            cancel_asked: false,
            taken_at: None,
            completed_at: None,
        };
        s.actions.runs.push(run.clone());
        let lose = std::mem::take(&mut s.actions.lose_next_dispatch_answer);
        (run, lose)
    };
    tokio::spawn(run_job(Arc::clone(&state), run.id));
    if lose {
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"message": "Server Error"}))).into_response();
    }
    StatusCode::NO_CONTENT.into_response()
}

pub(super) async fn list_runs(Axum(state): Axum<Shared>, Path((owner, repo, workflow)): Path<(String, String, String)>, Query(q): Query<HashMap<String, String>>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    let full = format!("{owner}/{repo}");
    let since = q.get("created").and_then(|c| c.strip_prefix(">=")).and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("").to_string();
    let runs: Vec<Value> = s.actions.runs.iter().rev().filter(|r| r.repo == full && r.workflow == workflow && since.is_none_or(|t| r.created_at >= t)).map(|r| run_json(&host, r)).collect();
    ok(&s, json!({"total_count": runs.len(), "workflow_runs": runs}))
}

pub(super) async fn get_run(Axum(state): Axum<Shared>, Path((owner, repo, id)): Path<(String, String, u64)>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if !authorized(&s, &headers) {
        return bad_credentials();
    }
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("").to_string();
    let Some(run) = s.actions.runs.iter().find(|r| r.id == id && r.repo == format!("{owner}/{repo}")).cloned() else { return not_found() };
    let body = run_json(&host, &run);
    let etag = format!("W/\"{:x}\"", Sha256::digest(body.to_string().as_bytes()));
    if headers.get("if-none-match").and_then(|v| v.to_str().ok()) == Some(etag.as_str()) {
        // Not Modified costs no rate limit.
        s.actions.not_modified += 1;
        return (StatusCode::NOT_MODIFIED, [("etag", etag)], limit_headers(&s)).into_response();
    }
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    (StatusCode::OK, [("etag", etag)], limit_headers(&s), Json(body)).into_response()
}

pub(super) async fn jobs(Axum(state): Axum<Shared>, Path((owner, repo, id)): Path<(String, String, u64)>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    let Some(run) = s.actions.runs.iter().find(|r| r.id == id && r.repo == format!("{owner}/{repo}")).cloned() else { return not_found() };
    let labels = s.actions.repos.get(&run.repo).map(|r| job_labels(&r.config.checkout, &run.workflow)).unwrap_or_default();
    let job = json!({
        "id": run.job_id, "run_id": run.id, "status": run.job_status, "conclusion": run.conclusion,
        "name": format!("nightshift {}", run.inputs["run_id"].as_str().unwrap_or("")), "labels": labels,
        "runner_name": run.runner_name, "started_at": run.started_at,
    });
    ok(&s, json!({"total_count": 1, "jobs": [job]}))
}

pub(super) async fn job_log(Axum(state): Axum<Shared>, Path((owner, repo, job)): Path<(String, String, u64)>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    if !s.actions.runs.iter().any(|r| r.job_id == job && r.repo == format!("{owner}/{repo}")) {
        return not_found();
    }
    // As GitHub does: a redirect to a download address that takes no token.
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("").to_string();
    (StatusCode::FOUND, [("location", format!("http://{host}/_blobs/jobs/{job}/log?sig=fake"))]).into_response()
}

pub(super) async fn blob(Axum(state): Axum<Shared>, Path(job): Path<u64>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if headers.contains_key("authorization") {
        s.actions.token_sent_to_blob = true;
    }
    match s.actions.runs.iter().find(|r| r.job_id == job) {
        Some(r) => (StatusCode::OK, [("content-type", "text/plain; charset=utf-8")], format!("\u{feff}{}", r.log)).into_response(),
        None => not_found(),
    }
}

pub(super) async fn cancel(Axum(state): Axum<Shared>, Path((owner, repo, id)): Path<(String, String, u64)>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    let Some(run) = s.actions.runs.iter_mut().find(|r| r.id == id && r.repo == format!("{owner}/{repo}")) else { return not_found() };
    if run.status == "completed" {
        return (StatusCode::CONFLICT, Json(json!({"message": "Cannot cancel a workflow run that is completed."}))).into_response();
    }
    run.cancel_asked = true;
    match run.pgid {
        // SAFETY: a plain kill(2) of the job's own process group (act and what it started).
        Some(pgid) => unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        },
        None => {
            // Still queued: it ends at once.
            run.status = "completed".into();
            run.job_status = "completed".into();
            run.conclusion = Some("cancelled".into());
            run.completed_at = Some(chrono::Utc::now());
        }
    }
    (StatusCode::ACCEPTED, Json(json!({}))).into_response()
}

pub(super) async fn public_key(Axum(state): Axum<Shared>, Path((owner, repo)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    match s.actions.repos.get(&format!("{owner}/{repo}")) {
        Some(r) => ok(&s, json!({"key_id": r.key_id, "key": STANDARD.encode(r.key.public_key().as_bytes())})),
        None => not_found(),
    }
}

pub(super) async fn put_secret(Axum(state): Axum<Shared>, Path((owner, repo, name)): Path<(String, String, String)>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    let Some(r) = s.actions.repos.get_mut(&format!("{owner}/{repo}")) else { return not_found() };
    if body["key_id"].as_str() != Some(r.key_id.as_str()) {
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(json!({"message": "Bad key_id"}))).into_response();
    }
    let opened = body["encrypted_value"].as_str().and_then(|v| STANDARD.decode(v).ok()).and_then(|sealed| r.key.unseal(&sealed).ok()).and_then(|b| String::from_utf8(b).ok());
    let Some(value) = opened else {
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(json!({"message": "Could not decrypt the secret"}))).into_response();
    };
    let created = r.secrets.insert(name, value).is_none();
    (if created { StatusCode::CREATED } else { StatusCode::NO_CONTENT }).into_response()
}

pub(super) async fn secrets(Axum(state): Axum<Shared>, Path((owner, repo)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    let Some(r) = s.actions.repos.get(&format!("{owner}/{repo}")) else { return not_found() };
    let mut names: Vec<&String> = r.secrets.keys().collect();
    names.sort();
    let list: Vec<Value> = names.iter().map(|n| json!({"name": n, "created_at": "2026-12-01T00:00:00Z", "updated_at": "2026-12-01T00:00:00Z"})).collect();
    ok(&s, json!({"total_count": list.len(), "secrets": list}))
}

pub(super) async fn contents(Axum(state): Axum<Shared>, Path((owner, repo, path)): Path<(String, String, String)>, Query(q): Query<HashMap<String, String>>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    let Some(r) = s.actions.repos.get(&format!("{owner}/{repo}")) else { return not_found() };
    if q.get("ref").is_some_and(|r2| *r2 != r.config.default_branch) {
        return not_found();
    }
    match std::fs::read(r.config.checkout.join(&path)) {
        // GitHub wraps its base64 at 60 characters.
        Ok(bytes) => {
            let packed = STANDARD.encode(bytes);
            let wrapped: Vec<String> = packed.as_bytes().chunks(60).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
            ok(&s, json!({"type": "file", "path": path, "encoding": "base64", "content": wrapped.join("\n") + "\n"}))
        }
        Err(_) => not_found(),
    }
}

pub(super) async fn runners(Axum(state): Axum<Shared>, Path((owner, repo)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = refused(&mut s, &headers) {
        return r;
    }
    let Some(r) = s.actions.repos.get(&format!("{owner}/{repo}")) else { return not_found() };
    let runners: Vec<Value> = if r.config.runner_labels.is_empty() {
        Vec::new()
    } else {
        let labels: Vec<Value> = r.config.runner_labels.iter().enumerate().map(|(i, l)| json!({"id": i + 1, "name": l, "type": "custom"})).collect();
        vec![json!({"id": 21, "name": "act-runner", "os": "linux", "status": if r.config.runner_online { "online" } else { "offline" }, "busy": false, "labels": labels})]
    };
    ok(&s, json!({"total_count": runners.len(), "runners": runners}))
}

/// The job's `runs-on` labels, as the workflow file says them (`runs-on: ["a", "b"]` or `runs-on: a`).
fn job_labels(checkout: &std::path::Path, workflow: &str) -> Vec<String> {
    let text = std::fs::read_to_string(checkout.join(".github/workflows").join(workflow)).unwrap_or_default();
    let Some(line) = text.lines().find_map(|l| l.trim().strip_prefix("runs-on:")) else { return Vec::new() };
    let line = line.trim().trim_start_matches('[').trim_end_matches(']');
    line.split(',').map(|l| l.trim().trim_matches('"').to_string()).filter(|l| !l.is_empty()).collect()
}

/// The job's life: queued for the queue delay (and for as long as no runner fits), then run by
/// act; its output becomes the job's log in GitHub's form.
async fn run_job(state: Shared, id: u64) {
    let (repo, workflow, inputs, delay) = {
        let s = state.lock().unwrap();
        let Some(run) = s.actions.runs.iter().find(|r| r.id == id) else { return };
        let delay = s.actions.repos.get(&run.repo).map(|r| r.config.queue_delay).unwrap_or_default();
        (run.repo.clone(), run.workflow.clone(), run.inputs.clone(), delay)
    };
    tokio::time::sleep(delay).await;
    // Wait for a runner that has every label (or for a cancel).
    let (act, env, checkout, local_actions, secrets, labels) = loop {
        {
            let s = state.lock().unwrap();
            let Some(run) = s.actions.runs.iter().find(|r| r.id == id) else { return };
            if run.status == "completed" {
                return;
            }
            let Some(r) = s.actions.repos.get(&repo) else { return };
            let labels = job_labels(&r.config.checkout, &workflow);
            let fits = r.config.runner_online && labels.iter().all(|l| r.config.runner_labels.iter().any(|rl| rl.eq_ignore_ascii_case(l)));
            if fits {
                break (r.config.act.clone(), r.config.env.clone(), r.config.checkout.clone(), r.config.local_actions.clone(), r.secrets.clone(), labels);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let work = tempfile::tempdir().expect("a folder for the job");
    let event = work.path().join("event.json");
    std::fs::write(&event, json!({"inputs": inputs}).to_string()).unwrap();
    let secret_file = work.path().join("secrets.env");
    let lines: String = secrets.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    std::fs::write(&secret_file, lines).unwrap();
    let mut cmd = tokio::process::Command::new(&act);
    cmd.arg("workflow_dispatch").arg("-e").arg(&event).arg("-W").arg(format!(".github/workflows/{workflow}")).arg("--json").arg("--secret-file").arg(&secret_file);
    for l in &labels {
        cmd.arg("-P").arg(format!("{l}=-self-hosted"));
    }
    for (action, dir) in &local_actions {
        cmd.arg("--local-repository").arg(format!("{action}={}", dir.display()));
    }
    cmd.current_dir(&checkout).env_clear().envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str()))).env("HOME", work.path()).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).kill_on_drop(true).process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            finish(&state, id, "failure", format!("{} ##[error]the fake's runner could not start act: {e}\n", stamp(chrono::Utc::now())));
            return;
        }
    };
    {
        let mut s = state.lock().unwrap();
        if let Some(run) = s.actions.runs.iter_mut().find(|r| r.id == id) {
            run.status = "in_progress".into();
            run.job_status = "in_progress".into();
            run.runner_name = Some("act-runner".into());
            run.taken_at = Some(chrono::Utc::now());
            run.started_at = Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
            run.pgid = child.id().map(|p| p as i32);
            if run.cancel_asked {
                // SAFETY: a plain kill(2) of the job's own process group.
                unsafe { libc::kill(-(child.id().unwrap_or(0) as i32), libc::SIGTERM) };
            }
        }
    }
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let (mut log, mut result, mut step) = (String::new(), None::<String>, String::new());
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
        let at = v["time"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).map(|t| t.with_timezone(&chrono::Utc)).unwrap_or_else(chrono::Utc::now);
        if let Some(r) = v["jobResult"].as_str() {
            result = Some(r.to_string());
        }
        if let Some(name) = v["step"].as_str().filter(|n| *n != step) {
            step = name.to_string();
            log.push_str(&format!("{} ##[group]Run {step}\n", stamp(at)));
        }
        if v["raw_output"].as_bool() == Some(true) {
            for l in v["msg"].as_str().unwrap_or("").lines() {
                log.push_str(&format!("{} {l}\n", stamp(at)));
            }
        }
    }
    let _ = child.wait().await;
    let cancelled = state.lock().unwrap().actions.runs.iter().any(|r| r.id == id && r.cancel_asked);
    let conclusion = match (cancelled, result.as_deref()) {
        (true, _) => "cancelled",
        (false, Some("success")) => "success",
        _ => "failure",
    };
    if conclusion == "failure" {
        log.push_str(&format!("{} ##[error]Process completed with exit code 1.\n", stamp(chrono::Utc::now())));
    }
    finish(&state, id, conclusion, log);
}

fn finish(state: &Shared, id: u64, conclusion: &str, log: String) {
    let mut s = state.lock().unwrap();
    if let Some(run) = s.actions.runs.iter_mut().find(|r| r.id == id) {
        run.status = "completed".into();
        run.job_status = "completed".into();
        run.conclusion = Some(conclusion.into());
        run.log = log;
        run.pgid = None;
        run.completed_at = Some(chrono::Utc::now());
    }
}

/// GitHub's timestamp before a log line: `2026-12-06T02:00:01.0000000Z`.
fn stamp(at: chrono::DateTime<chrono::Utc>) -> String {
    format!("{}.{:07}Z", at.format("%Y-%m-%dT%H:%M:%S"), at.timestamp_subsec_nanos() / 100)
}
