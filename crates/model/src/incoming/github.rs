//! A GitHub webhook delivery (or a polled event of the same shape) as an [`Event`]: the event's
//! name is the `X-GitHub-Event` header, its id `X-GitHub-Delivery`, the body GitHub's payload.
//! Fields as GitHub documents them for `pull_request`, `push`, `issue_comment` and `workflow_run`.

use super::{label_names, text, Event, Facts, Source};
use serde_json::Value;

/// The events a `trigger:` may name.
pub const EVENTS: [&str; 4] = ["pull_request", "push", "issue_comment", "workflow_run"];
/// A review submitted on a pull request: no `trigger:` names it; it brings back the routine that
/// opened the pull request (`on_review: rerun`).
pub const REVIEW: &str = "pull_request_review";

/// What a delivery is.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// One of [`EVENTS`].
    Event(Box<Event>),
    /// GitHub's `ping` when a webhook is made: answered, fires nothing.
    Ping,
    /// Another event (`star`, `issues`, …): received, fires nothing.
    Other,
}

/// Read delivery `delivery` of GitHub event `name`.
pub fn read(name: &str, delivery: &str, body: &Value) -> Read {
    read_at(name, delivery, body, None)
}

/// [`read`], with when it happened told apart from the body (a polled entry's `created_at`).
pub fn read_at(name: &str, delivery: &str, body: &Value, when: Option<chrono::DateTime<chrono::Utc>>) -> Read {
    if name == "ping" {
        return Read::Ping;
    }
    if !EVENTS.contains(&name) && name != REVIEW {
        return Read::Other;
    }
    let repo = text(&body["repository"]["full_name"]);
    let sender = text(&body["sender"]["login"]);
    let mut e = Event {
        source: Source::GitHub,
        name: name.to_string(),
        action: text(&body["action"]),
        repo,
        number: None,
        title: None,
        url: None,
        branch: None,
        sender,
        delivery: delivery.to_string(),
        review: None,
        facts: Facts::default(),
    };
    match name {
        "pull_request" => {
            let pr = &body["pull_request"];
            e.number = body["number"].as_u64().or_else(|| pr["number"].as_u64());
            e.title = text(&pr["title"]);
            e.url = text(&pr["html_url"]);
            // The branch it would merge into: "review every PR to main".
            e.branch = text(&pr["base"]["ref"]);
            e.facts.labels = label_names(&pr["labels"]);
            e.facts.label = text(&body["label"]["name"]);
        }
        "push" => {
            // `refs/heads/main` is a branch; a tag push has none.
            e.branch = body["ref"].as_str().and_then(|r| r.strip_prefix("refs/heads/")).map(str::to_string);
            e.title = text(&body["head_commit"]["message"]).map(|m| crate::words::first_line(&m, 200));
            e.url = text(&body["compare"]).or_else(|| text(&body["head_commit"]["url"]));
            e.sender = e.sender.or_else(|| text(&body["pusher"]["name"]));
            e.action = None;
        }
        "issue_comment" => {
            let issue = &body["issue"];
            e.number = issue["number"].as_u64();
            e.title = text(&issue["title"]);
            e.url = text(&body["comment"]["html_url"]).or_else(|| text(&issue["html_url"]));
            e.facts.labels = label_names(&issue["labels"]);
        }
        REVIEW => {
            let pr = &body["pull_request"];
            e.number = pr["number"].as_u64();
            e.title = text(&pr["title"]);
            e.url = text(&body["review"]["html_url"]).or_else(|| text(&pr["html_url"]));
            e.branch = text(&pr["base"]["ref"]);
            e.review = super::review::Review::read(body);
        }
        "workflow_run" => {
            let run = &body["workflow_run"];
            e.number = run["run_number"].as_u64();
            e.title = text(&run["display_title"]).or_else(|| text(&run["name"]));
            e.url = text(&run["html_url"]);
            e.branch = text(&run["head_branch"]);
        }
        _ => {}
    }
    e.facts.sameness = sameness(&e, body, when);
    Read::Event(Box::new(e))
}

/// The event's identity across paths ([`super::Sameness`]) from what both a webhook delivery and
/// its Events API entry carry, and when it happened: `when`, else as the delivery tells it.
/// `None` when the body lacks a part of it.
fn sameness(e: &Event, body: &Value, when: Option<chrono::DateTime<chrono::Utc>>) -> Option<super::Sameness> {
    let repo = e.repo.as_deref()?;
    let time = |v: &Value| v.as_str().and_then(crate::words::parse_time).or_else(|| v.as_i64().and_then(|s| chrono::DateTime::from_timestamp(s, 0)));
    let action = e.action.as_deref().unwrap_or("");
    let (identity, at) = match e.name.as_str() {
        "pull_request" => {
            // The label added or removed; a push to the pull request's branch (`synchronize`,
            // which the Events API does not carry: deliveries only) by the head it moved to.
            let label = e.facts.label.as_deref().map(|l| format!(":{l}")).unwrap_or_default();
            let head = match action {
                "synchronize" => text(&body["pull_request"]["head"]["sha"]).map(|sha| format!(":{sha}")).unwrap_or_default(),
                _ => String::new(),
            };
            (format!("pull_request:{repo}#{}:{action}{label}{head}", e.number?), time(&body["pull_request"]["updated_at"]))
        }
        // A push is its ref and where it left it; pushed_at (seconds) says when.
        "push" => (format!("push:{repo}:{}:{}", text(&body["ref"])?, text(&body["after"])?), time(&body["repository"]["pushed_at"]).or_else(|| time(&body["head_commit"]["timestamp"]))),
        "issue_comment" => {
            let comment = &body["comment"];
            let id = comment["id"].as_u64()?;
            (format!("issue_comment:{repo}:{id}:{action}"), time(&comment["updated_at"]).or_else(|| time(&comment["created_at"])))
        }
        // One review is one round, by its id; when it was submitted says when.
        REVIEW => (format!("{REVIEW}:{repo}#{}:{}", e.number?, body["review"]["id"].as_u64()?), time(&body["review"]["submitted_at"])),
        "workflow_run" => {
            let run = &body["workflow_run"];
            (format!("workflow_run:{repo}:{}:{}:{action}", run["id"].as_u64()?, run["run_attempt"].as_u64().unwrap_or(1)), time(&run["updated_at"]))
        }
        _ => return None,
    };
    Some(super::Sameness { identity, at: when.or(at)? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Shaped as GitHub's documented `pull_request` payload (trimmed to what is read).
    fn labeled_pr() -> Value {
        json!({
            "action": "labeled",
            "number": 41,
            "pull_request": {"number": 41, "title": "Fix the login redirect", "html_url": "https://github.com/acme/app/pull/41",
                "base": {"ref": "main"}, "head": {"ref": "fix-login"}, "labels": [{"name": "bug"}, {"name": "ux-approved"}], "updated_at": "2026-12-05T08:00:00Z"},
            "label": {"name": "ux-approved"},
            "repository": {"full_name": "acme/app"},
            "sender": {"login": "octocat"}
        })
    }

    #[test]
    fn a_pull_request_is_read_with_its_base_branch_and_labels() {
        let Read::Event(e) = read("pull_request", "d-1", &labeled_pr()) else { panic!() };
        assert_eq!((e.name.as_str(), e.action.as_deref(), e.repo.as_deref(), e.number, e.branch.as_deref(), e.sender.as_deref()), ("pull_request", Some("labeled"), Some("acme/app"), Some(41), Some("main"), Some("octocat")));
        assert_eq!((e.title.as_deref(), e.url.as_deref()), (Some("Fix the login redirect"), Some("https://github.com/acme/app/pull/41")));
        assert_eq!((e.facts.labels.len(), e.facts.label.as_deref()), (2, Some("ux-approved")));
    }

    /// Two pushes to a pull request's branch within a minute are two events; a delivery and its
    /// redelivery are one.
    #[test]
    fn the_sameness_of_a_pull_request_event_is_its_action_label_and_head() {
        let sync = |sha: &str, at: &str| json!({"action": "synchronize", "number": 41, "pull_request": {"number": 41, "head": {"sha": sha}, "updated_at": at}, "repository": {"full_name": "acme/app"}});
        let same = |body: &Value| match read("pull_request", "d", body) {
            Read::Event(e) => e.facts.sameness.unwrap(),
            other => panic!("{other:?}"),
        };
        let (a, b) = (same(&sync("aaa", "2026-12-05T08:00:00Z")), same(&sync("bbb", "2026-12-05T08:00:30Z")));
        assert_eq!(a.identity, "pull_request:acme/app#41:synchronize:aaa");
        assert_ne!(a.identity, b.identity);
        assert_eq!(same(&labeled_pr()).identity, "pull_request:acme/app#41:labeled:ux-approved");
        assert_eq!(same(&sync("aaa", "2026-12-05T08:00:00Z")), a);
        let Read::Event(no_time) = read("pull_request", "d", &json!({"action": "opened", "number": 1, "repository": {"full_name": "acme/app"}})) else { panic!() };
        assert_eq!(no_time.facts.sameness, None, "without a time it is told apart by its delivery id only");
    }

    #[test]
    fn a_push_is_its_branch_and_a_tag_push_has_none() {
        let body = json!({"ref": "refs/heads/main", "compare": "https://github.com/acme/app/compare/a...b", "head_commit": {"message": "Bump deps\n\nlong body"}, "repository": {"full_name": "acme/app"}, "pusher": {"name": "octocat"}, "sender": {"login": "octocat"}});
        let Read::Event(e) = read("push", "d-2", &body) else { panic!() };
        assert_eq!((e.branch.as_deref(), e.title.as_deref(), e.action), (Some("main"), Some("Bump deps"), None));
        let tag = json!({"ref": "refs/tags/v1.0", "repository": {"full_name": "acme/app"}});
        let Read::Event(e) = read("push", "d-3", &tag) else { panic!() };
        assert_eq!(e.branch, None);
    }

    #[test]
    fn comments_and_workflow_runs_and_other_events() {
        let comment = json!({"action": "created", "issue": {"number": 7, "title": "Crash on start", "html_url": "https://github.com/acme/app/issues/7", "labels": [{"name": "agent"}]},
            "comment": {"html_url": "https://github.com/acme/app/issues/7#issuecomment-1", "body": "/review"}, "repository": {"full_name": "acme/app"}, "sender": {"login": "hubot"}});
        let Read::Event(e) = read("issue_comment", "d-4", &comment) else { panic!() };
        assert_eq!((e.number, e.url.as_deref(), e.facts.labels.clone()), (Some(7), Some("https://github.com/acme/app/issues/7#issuecomment-1"), vec!["agent".to_string()]));
        let run = json!({"action": "completed", "workflow_run": {"name": "CI", "display_title": "Bump deps", "run_number": 812, "head_branch": "main", "html_url": "https://github.com/acme/app/actions/runs/1"}, "repository": {"full_name": "acme/app"}});
        let Read::Event(e) = read("workflow_run", "d-5", &run) else { panic!() };
        assert_eq!((e.number, e.branch.as_deref(), e.title.as_deref()), (Some(812), Some("main"), Some("Bump deps")));
        assert_eq!(read("ping", "d-6", &json!({"zen": "Keep it logically awesome."})), Read::Ping);
        assert_eq!(read("star", "d-7", &json!({})), Read::Other);
        let review = json!({"action": "submitted", "review": {"id": 80, "state": "changes_requested", "user": {"login": "octocat"}, "submitted_at": "2026-12-05T08:00:00Z", "html_url": "https://github.com/acme/app/pull/3#pullrequestreview-80"},
            "pull_request": {"number": 3, "title": "Weekly bump", "base": {"ref": "main"}, "head": {"ref": "nightshift/deps/01j"}}, "repository": {"full_name": "acme/app"}, "sender": {"login": "octocat"}});
        let Read::Event(e) = read(REVIEW, "d-9", &review) else { panic!() };
        assert_eq!((e.number, e.branch.as_deref(), e.review.as_ref().and_then(|r| r.head.as_deref())), (Some(3), Some("main"), Some("nightshift/deps/01j")));
        assert_eq!(e.facts.sameness.unwrap().identity, "pull_request_review:acme/app#3:80", "one review, whichever path brought it");
        // A body missing what it should carry is still an event, with less to say.
        let Read::Event(e) = read("pull_request", "d-8", &json!({})) else { panic!() };
        assert_eq!((e.repo, e.number, e.title), (None, None, None));
    }
}
