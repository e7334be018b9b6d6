//! Pull requests on the fake GitHub, as the REST API answers them: `POST /repos/{o}/{r}/pulls`
//! (201 with the whole pull request; 422 "Validation Failed" — "A pull request already exists for
//! owner:branch." — for a head that has an open one; 422 for a missing title, head or base),
//! `GET`/`PATCH /repos/{o}/{r}/pulls/{n}` (title, body, state), `POST …/issues/{n}/labels` and
//! `POST …/pulls/{n}/requested_reviewers`. A wrong token is GitHub's 401. Tests merge or close
//! one by hand ([`FakeGithub::merge_pull`]).

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
        "user": {"login": "nightshift-bot", "type": "User"},
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

/// `POST …/issues/{n}/labels` and `POST …/pulls/{n}/requested_reviewers`.
pub(super) async fn add_to(Axum(state): Axum<Arc<Mutex<State>>>, Path((owner, repo, kind, number, what)): Path<(String, String, String, u64, String)>, headers: HeaderMap, body: String) -> Response {
    let mut s = state.lock().unwrap();
    if !authorized(&s, &headers) {
        return bad_credentials();
    }
    let asked: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
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
