//! An entry of GitHub's Events API (`GET /repos/{owner}/{repo}/events`) in a webhook delivery's
//! shape, so a polled event is read — and matched against `trigger:` — exactly as a delivered
//! one. The API names events in CamelCase (`PullRequestEvent`), keeps the payload under
//! `payload`, and leaves out the payload's `repository` and `sender` (its `repo.name` and
//! `actor.login` say them); a push says where it left the ref as `head`, a delivery as `after`.
//! `workflow_run` is not in the Events API: it fires on deliveries only.

use super::github::{self, Read};
use super::Event;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// The Events API's name for each webhook event the poller reads.
const NAMES: [(&str, &str); 4] = [("PullRequestEvent", "pull_request"), ("PushEvent", "push"), ("IssueCommentEvent", "issue_comment"), ("PullRequestReviewEvent", github::REVIEW)];

/// One entry of the Events API, as the poller reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// GitHub's id of the entry: numeric, growing with time (the poller's cursor).
    pub id: u64,
    /// The webhook event it is (`pull_request`, `push`, `issue_comment`); `None`: one no
    /// trigger can name.
    pub name: Option<&'static str>,
    pub created_at: Option<DateTime<Utc>>,
    /// The payload in a delivery's shape (with `repository` and `sender`).
    pub body: Value,
}

impl Entry {
    /// Read one element of the API's array; `None` when it has no numeric id.
    pub fn read(v: &Value, html_url: &str) -> Option<Entry> {
        let id = v["id"].as_str().and_then(|s| s.parse().ok()).or_else(|| v["id"].as_u64())?;
        let name = v["type"].as_str().and_then(|t| NAMES.iter().find(|(api, _)| *api == t)).map(|(_, hook)| *hook);
        let created_at = v["created_at"].as_str().and_then(crate::words::parse_time);
        let repo = v["repo"]["name"].as_str().unwrap_or_default();
        let mut body = match &v["payload"] {
            Value::Object(_) => v["payload"].clone(),
            _ => json!({}),
        };
        let owner = repo.split_once('/').map(|(o, _)| o).unwrap_or_default();
        body["repository"] = json!({"full_name": repo, "name": repo.split_once('/').map(|(_, n)| n).unwrap_or(repo), "owner": {"login": owner}, "html_url": format!("{html_url}/{repo}")});
        body["sender"] = json!({"login": v["actor"]["login"].clone()});
        if name == Some("push") {
            if body["after"].is_null() {
                body["after"] = body["head"].clone();
            }
            if let (Some(before), Some(after)) = (body["before"].as_str(), body["after"].as_str()) {
                if body["compare"].is_null() {
                    body["compare"] = json!(format!("{html_url}/{repo}/compare/{}...{}", short(before), short(after)));
                }
            }
        }
        Some(Entry { id, name, created_at, body })
    }

    /// What a trigger reads of it, as [`github::read`] reads a delivery (its delivery id
    /// `events-api:<id>`; its time the entry's `created_at`).
    pub fn event(&self) -> Option<Event> {
        match github::read_at(self.name?, &self.delivery(), &self.body, self.created_at) {
            Read::Event(e) => Some(*e),
            _ => None,
        }
    }

    /// How `hooks list` names it: the entry's id after the path that brought it.
    pub fn delivery(&self) -> String {
        format!("events-api:{}", self.id)
    }

    /// Whether the API left out of the payload what a trigger or a prompt reads (GitHub trims
    /// the objects in Events API payloads): the pull request's number to ask for it by, or the
    /// issue's for a comment.
    pub fn wants_whole(&self) -> Option<(&'static str, u64)> {
        match self.name? {
            "pull_request" => {
                let pr = &self.body["pull_request"];
                let number = self.body["number"].as_u64().or_else(|| pr["number"].as_u64())?;
                (pr["title"].is_null() || pr["base"]["ref"].is_null() || pr["labels"].is_null()).then_some(("pulls", number))
            }
            // The head branch the answering run works on.
            github::REVIEW => {
                let pr = &self.body["pull_request"];
                (pr["head"]["ref"].is_null() || pr["base"]["ref"].is_null()).then_some(("pulls", pr["number"].as_u64()?))
            }
            "issue_comment" => {
                let issue = &self.body["issue"];
                (issue["title"].is_null() || issue["labels"].is_null()).then_some(("issues", issue["number"].as_u64()?))
            }
            _ => None,
        }
    }

    /// Put the whole object read from `GET /repos/{repo}/{pulls|issues}/{number}` in the
    /// payload's place (keeping what the trimmed one said that the whole one does not).
    pub fn fill(&mut self, kind: &str, whole: Value) {
        let key = if kind == "pulls" { "pull_request" } else { "issue" };
        let mut merged = whole;
        if let (Value::Object(m), Value::Object(trimmed)) = (&mut merged, &self.body[key]) {
            for (k, v) in trimmed {
                m.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        self.body[key] = merged;
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// The web address repositories are under, from the API's: `https://api.github.com` →
/// `https://github.com`; GitHub Enterprise Server's `https://HOST/api/v3` → `https://HOST`.
pub fn html_url(api_url: &str) -> String {
    let api = api_url.trim_end_matches('/');
    if let Some(host) = api.strip_prefix("https://api.") {
        return format!("https://{host}");
    }
    api.strip_suffix("/api/v3").unwrap_or(api).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped as the Events API documents a `PullRequestEvent` (its payload trimmed by GitHub).
    fn labeled() -> Value {
        json!({"id": "43756560667", "type": "PullRequestEvent", "actor": {"login": "octocat"}, "repo": {"name": "acme/app"},
            "payload": {"action": "labeled", "number": 41, "label": {"name": "ux-approved"}, "pull_request": {"number": 41, "url": "https://api.github.com/repos/acme/app/pulls/41"}},
            "created_at": "2026-12-05T08:00:01Z"})
    }

    #[test]
    fn an_entry_reads_as_the_delivery_of_the_same_event() {
        let mut entry = Entry::read(&labeled(), "https://github.com").unwrap();
        assert_eq!((entry.id, entry.name, entry.delivery().as_str()), (43756560667, Some("pull_request"), "events-api:43756560667"));
        assert_eq!(entry.wants_whole(), Some(("pulls", 41)), "a trimmed pull request is asked for whole");
        entry.fill("pulls", json!({"number": 41, "title": "Fix the login redirect", "html_url": "https://github.com/acme/app/pull/41", "base": {"ref": "main"}, "labels": [{"name": "ux-approved"}], "updated_at": "2026-12-05T08:00:00Z"}));
        assert_eq!(entry.wants_whole(), None);
        let polled = entry.event().unwrap();
        let delivered = match github::read("pull_request", "d-1", &json!({"action": "labeled", "number": 41, "label": {"name": "ux-approved"},
            "pull_request": {"number": 41, "title": "Fix the login redirect", "html_url": "https://github.com/acme/app/pull/41", "base": {"ref": "main"}, "labels": [{"name": "ux-approved"}], "updated_at": "2026-12-05T08:00:00Z"},
            "repository": {"full_name": "acme/app"}, "sender": {"login": "octocat"}})) {
            Read::Event(e) => *e,
            other => panic!("{other:?}"),
        };
        assert_eq!(Event { delivery: "d-1".into(), ..polled.clone() }.words(), delivered.words());
        assert_eq!((polled.repo, polled.branch, polled.sender, polled.facts.labels), (delivered.repo, delivered.branch, delivered.sender, delivered.facts.labels));
        let (a, b) = (polled.facts.sameness.unwrap(), delivered.facts.sameness.unwrap());
        assert_eq!(a.identity, b.identity);
        assert!((a.at - b.at).abs() <= crate::incoming::Sameness::WINDOW, "{a:?} {b:?}");
    }

    #[test]
    fn a_push_entry_has_the_deliverys_after_and_compare() {
        let v = json!({"id": "7", "type": "PushEvent", "actor": {"login": "octocat"}, "repo": {"name": "acme/app"},
            "payload": {"ref": "refs/heads/main", "head": "0123456789abcdef0123", "before": "fedcba9876543210fedc", "push_id": 1}, "created_at": "2026-12-05T08:00:00Z"});
        let entry = Entry::read(&v, "https://ghe.example.com").unwrap();
        let e = entry.event().unwrap();
        assert_eq!((e.branch.as_deref(), e.url.as_deref()), (Some("main"), Some("https://ghe.example.com/acme/app/compare/fedcba987654...0123456789ab")));
        assert_eq!(e.facts.sameness.unwrap().identity, "push:acme/app:refs/heads/main:0123456789abcdef0123");
        let other = Entry::read(&json!({"id": "8", "type": "WatchEvent", "repo": {"name": "acme/app"}, "payload": {"action": "started"}}), "https://github.com").unwrap();
        assert_eq!((other.name, other.event()), (None, None));
        assert_eq!(Entry::read(&json!({"type": "PushEvent"}), "https://github.com"), None, "no id, no entry");
    }

    #[test]
    fn the_web_address_follows_the_api_address() {
        assert_eq!(html_url("https://api.github.com"), "https://github.com");
        assert_eq!(html_url("https://ghe.example.com/api/v3/"), "https://ghe.example.com");
        assert_eq!(html_url("http://127.0.0.1:9000"), "http://127.0.0.1:9000");
    }
}
