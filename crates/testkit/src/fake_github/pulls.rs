//! Pull requests on the fake GitHub, as the REST API answers them: `POST /repos/{o}/{r}/pulls`
//! (201 with the whole pull request; 422 "Validation Failed" — "A pull request already exists for
//! owner:branch." — for a head that has an open one; 422 for a missing title, head or base),
//! `GET`/`PATCH /repos/{o}/{r}/pulls/{n}` (title, body, state), `POST …/issues/{n}/labels` and
//! `POST …/pulls/{n}/requested_reviewers`. A wrong token is GitHub's 401. Tests merge or close
//! one by hand ([`FakeGithub::merge_pull`]).
//!
//! Reviews: a test submits one as a person does ([`FakeGithub::submit_review`], which gives the
//! `pull_request_review` delivery's payload); `GET …/pulls/{n}/reviews/{id}/comments` lists its
//! line comments, `POST …/issues/{n}/comments` answers in the conversation (by the token's user,
//! `nightshift-bot`, as `GET /user` says), `GET …/collaborators/{user}` is 204 for a
//! collaborator and GitHub's 404 for anyone else.

use super::{authorized, bad_credentials, FakeGithub, State};
use axum::extract::{Path, State as Axum};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

impl FakeGithub {
    /// Every pull request of `repo` (`owner/name`), by number.
    pub fn pulls(&self, repo: &str) -> Vec<Value> {
        let s = self.state.lock().unwrap();
        let mut out: Vec<Value> = s.objects.iter().filter(|(k, _)| k.starts_with(&format!("{repo}/pulls/"))).map(|(_, v)| v.clone()).collect();
        out.sort_by_key(|p| p["number"].as_u64());
        out
    }

    /// Merge pull request `number` of `repo`, as a person does on GitHub.
    pub fn merge_pull(&self, repo: &str, number: u64) {
        let mut s = self.state.lock().unwrap();
        let pull = s.objects.get_mut(&format!("{repo}/pulls/{number}")).expect("no such pull request");
        pull["state"] = json!("closed");
        pull["merged"] = json!(true);
        pull["merged_at"] = json!(chrono::Utc::now().to_rfc3339());
    }
}

/// The login the fake's token belongs to (`GET /user`; the author of what it opens and says).
pub const TOKEN_USER: &str = "nightshift-bot";

impl FakeGithub {
    /// `login` is a collaborator of `repo`.
    pub fn add_collaborator(&self, repo: &str, login: &str) {
        self.state.lock().unwrap().objects.insert(format!("{repo}/collaborators/{login}"), json!({"login": login}));
    }

    /// `by` submits a review of pull request `number` of `repo` — `state` as GitHub's API writes
    /// it (`CHANGES_REQUESTED`, `COMMENTED`, `APPROVED`), with line `comments` (path, line, words).
    /// Returns the `pull_request_review` delivery's payload (GitHub's documented shape: `action`,
    /// `review` without its comments, the whole `pull_request`, `repository`, `sender`).
    pub fn submit_review(&self, repo: &str, number: u64, by: &str, state: &str, body: &str, comments: &[(&str, u64, &str)]) -> Value {
        let mut s = self.state.lock().unwrap();
        s.next_id += 1;
        let id = s.next_id;
        let pull = s.objects.get(&format!("{repo}/pulls/{number}")).cloned().expect("no such pull request");
        let listed: Vec<Value> = comments
            .iter()
            .enumerate()
            .map(|(i, (path, line, words))| json!({"id": id * 100 + i as u64, "pull_request_review_id": id, "path": path, "line": line, "original_line": line, "side": "RIGHT", "body": words, "user": {"login": by}, "html_url": format!("https://github.com/{repo}/pull/{number}#discussion_r{}", id * 100 + i as u64)}))
            .collect();
        s.objects.insert(format!("{repo}/reviews/{id}/comments"), Value::Array(listed));
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        json!({
            "action": "submitted",
            "review": {"id": id, "node_id": format!("PRR_{id}"), "user": {"login": by, "type": "User"}, "body": if body.is_empty() { Value::Null } else { json!(body) }, "state": state.to_ascii_lowercase(),
                "html_url": format!("https://github.com/{repo}/pull/{number}#pullrequestreview-{id}"), "submitted_at": now, "commit_id": "0000000000000000000000000000000000000000", "author_association": "COLLABORATOR"},
            "pull_request": pull,
            "repository": {"full_name": repo, "name": repo.split_once('/').map(|(_, n)| n).unwrap_or(repo), "owner": {"login": repo.split_once('/').map(|(o, _)| o).unwrap_or(repo)}},
            "sender": {"login": by},
        })
    }

    /// The comments in pull request `number`'s conversation, oldest first.
    pub fn comments(&self, repo: &str, number: u64) -> Vec<Value> {
        self.state.lock().unwrap().objects.get(&format!("{repo}/issues/{number}/comments")).and_then(|v| v.as_array().cloned()).unwrap_or_default()
    }
}

/// `GET /user`: who the token is.
pub(super) async fn user(Axum(state): Axum<Arc<Mutex<State>>>, headers: HeaderMap) -> Response {
    if !authorized(&state.lock().unwrap(), &headers) {
        return bad_credentials();
    }
    (StatusCode::OK, axum::Json(json!({"login": TOKEN_USER, "id": 1, "type": "User"}))).into_response()
}

/// `GET /repos/{o}/{r}/collaborators/{user}`: 204 or 404, as GitHub answers.
pub(super) async fn collaborator(Axum(state): Axum<Arc<Mutex<State>>>, Path((owner, repo, login)): Path<(String, String, String)>, headers: HeaderMap) -> Response {
    let s = state.lock().unwrap();
    if !authorized(&s, &headers) {
        return bad_credentials();
    }
    match s.objects.contains_key(&format!("{owner}/{repo}/collaborators/{login}")) {
        true => StatusCode::NO_CONTENT.into_response(),
        false => (StatusCode::NOT_FOUND, axum::Json(json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest/collaborators/collaborators#check-if-a-user-is-a-repository-collaborator", "status": "404"}))).into_response(),
    }
}

/// `GET /repos/{o}/{r}/pulls/{n}/reviews/{id}/comments`.
pub(super) async fn review_comments(Axum(state): Axum<Arc<Mutex<State>>>, Path((owner, repo, _number, id)): Path<(String, String, u64, u64)>, headers: HeaderMap) -> Response {
    let s = state.lock().unwrap();
    if !authorized(&s, &headers) {
        return bad_credentials();
    }
    match s.objects.get(&format!("{owner}/{repo}/reviews/{id}/comments")) {
        Some(list) => (StatusCode::OK, axum::Json(list.clone())).into_response(),
        None => not_found(),
    }
}

fn validation_failed(message: &str) -> Response {
    (StatusCode::UNPROCESSABLE_ENTITY, axum::Json(json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom", "message": message}], "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "422"})))
        .into_response()
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, axum::Json(json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}))).into_response()
}

pub(super) async fn create(Axum(state): Axum<Arc<Mutex<State>>>, Path((owner, repo)): Path<(String, String)>, headers: HeaderMap, body: String) -> Response {
    let mut s = state.lock().unwrap();
    if !authorized(&s, &headers) {
        return bad_credentials();
    }
    let asked: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let field = |k: &str| asked[k].as_str().map(str::to_string).filter(|v| !v.is_empty());
    let (Some(title), Some(head), Some(base)) = (field("title"), field("head"), field("base")) else {
        return validation_failed("title, head and base are required");
    };
    let prefix = format!("{owner}/{repo}/pulls/");
    if s.objects.iter().any(|(k, v)| k.starts_with(&prefix) && v["state"] == "open" && v["head"]["ref"] == head.as_str()) {
        return validation_failed(&format!("A pull request already exists for {owner}:{head}."));
    }
    let number = s.objects.keys().filter(|k| k.starts_with(&prefix)).count() as u64 + 1;
    let now = chrono::Utc::now().to_rfc3339();
    let pull = json!({
        "number": number,
        "html_url": format!("https://github.com/{owner}/{repo}/pull/{number}"),
        "url": format!("https://api.github.com/repos/{owner}/{repo}/pulls/{number}"),
        "state": "open",
        "draft": asked["draft"].as_bool().unwrap_or(false),
        "merged": false,
        "merged_at": null,
        "title": title,
        "body": asked["body"].as_str().unwrap_or_default(),
        "head": {"ref": head, "label": format!("{owner}:{head}")},
        "base": {"ref": base, "label": format!("{owner}:{base}")},
        "user": {"login": TOKEN_USER, "type": "User"},
        "labels": [],
        "requested_reviewers": [],
        "created_at": now,
        "updated_at": now,
    });
    s.objects.insert(format!("{prefix}{number}"), pull.clone());
    (StatusCode::CREATED, axum::Json(pull)).into_response()
}

pub(super) async fn update(Axum(state): Axum<Arc<Mutex<State>>>, Path((owner, repo, kind, number)): Path<(String, String, String, u64)>, headers: HeaderMap, body: String) -> Response {
    let mut s = state.lock().unwrap();
    if !authorized(&s, &headers) {
        return bad_credentials();
    }
    let asked: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let Some(pull) = s.objects.get_mut(&format!("{owner}/{repo}/{kind}/{number}")).filter(|_| kind == "pulls") else { return not_found() };
    for key in ["title", "body", "state"] {
        if let Some(v) = asked[key].as_str() {
            pull[key] = json!(v);
        }
    }
    pull["updated_at"] = json!(chrono::Utc::now().to_rfc3339());
    (StatusCode::OK, axum::Json(pull.clone())).into_response()
}

/// `POST …/issues/{n}/labels`, `POST …/pulls/{n}/requested_reviewers` and
/// `POST …/issues/{n}/comments` (201 with the comment, by the token's user).
pub(super) async fn add_to(Axum(state): Axum<Arc<Mutex<State>>>, Path((owner, repo, kind, number, what)): Path<(String, String, String, u64, String)>, headers: HeaderMap, body: String) -> Response {
    let mut s = state.lock().unwrap();
    if !authorized(&s, &headers) {
        return bad_credentials();
    }
    let asked: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if (kind.as_str(), what.as_str()) == ("issues", "comments") {
        let Some(words) = asked["body"].as_str().filter(|b| !b.is_empty()) else { return validation_failed("body is required") };
        if !s.objects.contains_key(&format!("{owner}/{repo}/pulls/{number}")) {
            return not_found();
        }
        s.next_id += 1;
        let id = s.next_id;
        let comment = json!({"id": id, "body": words, "user": {"login": TOKEN_USER, "type": "User"}, "html_url": format!("https://github.com/{owner}/{repo}/pull/{number}#issuecomment-{id}"), "created_at": chrono::Utc::now().to_rfc3339()});
        let list = s.objects.entry(format!("{owner}/{repo}/issues/{number}/comments")).or_insert_with(|| json!([]));
        list.as_array_mut().unwrap().push(comment.clone());
        return (StatusCode::CREATED, axum::Json(comment)).into_response();
    }
    let (field, key) = match (kind.as_str(), what.as_str()) {
        ("issues", "labels") => ("labels", "labels"),
        ("pulls", "requested_reviewers") => ("reviewers", "requested_reviewers"),
        _ => return not_found(),
    };
    let Some(pull) = s.objects.get_mut(&format!("{owner}/{repo}/pulls/{number}")) else { return not_found() };
    let added: Vec<Value> = asked[field].as_array().cloned().unwrap_or_default().into_iter().map(|n| if key == "labels" { json!({"name": n}) } else { json!({"login": n}) }).collect();
    pull[key].as_array_mut().map(|list| list.extend(added));
    let answer = if key == "labels" { pull["labels"].clone() } else { pull.clone() };
    (if key == "labels" { StatusCode::OK } else { StatusCode::CREATED }, axum::Json(answer)).into_response()
}
