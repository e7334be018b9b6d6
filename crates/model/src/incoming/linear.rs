//! A Linear webhook delivery as an [`Event`]: `{action: create|update|remove, type: Issue|…,
//! data: {…the object…}, updatedFrom: {…the fields an update changed, as they were…}, url, actor,
//! webhookTimestamp}`, its id the `Linear-Delivery` header. Fields as Linear documents them.

use super::{label_names, text, Event, Facts, LeftState, Source};
use serde_json::Value;

/// The types a `trigger:` may name.
pub const EVENTS: [&str; 5] = ["Issue", "IssueLabel", "Comment", "Project", "Cycle"];
/// Linear's actions.
pub const ACTIONS: [&str; 3] = ["create", "update", "remove"];

/// Read delivery `delivery`; `None` for a type no trigger names (Reaction, Document, …).
pub fn read(delivery: &str, body: &Value) -> Option<Event> {
    let name = body["type"].as_str().filter(|t| EVENTS.contains(t))?.to_string();
    let data = &body["data"];
    let mut e = Event {
        source: Source::Linear,
        name: name.clone(),
        action: text(&body["action"]),
        repo: None,
        number: None,
        title: None,
        url: text(&body["url"]).or_else(|| text(&data["url"])),
        branch: None,
        sender: text(&body["actor"]["name"]),
        delivery: delivery.to_string(),
        review: None,
        facts: Facts::default(),
    };
    match name.as_str() {
        "Issue" => {
            e.number = data["number"].as_u64();
            e.title = text(&data["title"]);
            e.facts.team_key = text(&data["team"]["key"]);
            e.facts.labels = label_names(&data["labels"]);
            e.facts.state = text(&data["state"]["name"]);
            // Linear names what changed by its id only; the receiver fills in the name it knows.
            e.facts.left_state = text(&body["updatedFrom"]["stateId"]).map(|id| LeftState { id, name: None });
        }
        "Comment" => {
            let issue = &data["issue"];
            e.number = issue["number"].as_u64();
            e.title = text(&issue["title"]);
            e.facts.team_key = text(&issue["team"]["key"]);
        }
        "IssueLabel" => {
            e.title = text(&data["name"]);
            e.facts.label = text(&data["name"]);
        }
        "Project" => e.title = text(&data["name"]),
        "Cycle" => {
            e.number = data["number"].as_u64();
            e.title = text(&data["name"]).or_else(|| e.number.map(|n| format!("Cycle {n}")));
            e.facts.team_key = text(&data["team"]["key"]);
        }
        _ => {}
    }
    Some(e)
}

/// The id and name of the state an Issue delivery leaves it in, to name the state a later one
/// left (`updatedFrom.stateId`).
pub fn state_seen(body: &Value) -> Option<(String, String)> {
    (body["type"] == "Issue").then_some(())?;
    let state = &body["data"]["state"];
    Some((text(&state["id"])?, text(&state["name"])?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Shaped as Linear's documented Issue update (trimmed to what is read).
    fn moved_to_todo() -> Value {
        json!({
            "action": "update", "type": "Issue", "createdAt": "2026-12-04T10:00:00.000Z",
            "actor": {"id": "u-1", "name": "Ada Lovelace"},
            "data": {"id": "i-1", "number": 123, "identifier": "ENG-123", "title": "Flaky login test",
                "state": {"id": "s-todo", "name": "Todo", "type": "unstarted"},
                "team": {"id": "t-1", "key": "ENG", "name": "Engineering"},
                "labels": [{"id": "l-1", "name": "agent"}]},
            "updatedFrom": {"stateId": "s-backlog", "updatedAt": "2026-12-04T09:00:00.000Z"},
            "url": "https://linear.app/acme/issue/ENG-123/flaky-login-test",
            "webhookTimestamp": 1_796_378_400_000u64
        })
    }

    #[test]
    fn an_issue_moving_is_read_with_its_team_labels_and_both_states() {
        let e = read("ld-1", &moved_to_todo()).unwrap();
        assert_eq!((e.name.as_str(), e.action.as_deref(), e.number, e.title.as_deref(), e.sender.as_deref()), ("Issue", Some("update"), Some(123), Some("Flaky login test"), Some("Ada Lovelace")));
        assert_eq!((e.facts.team_key.as_deref(), e.facts.state.as_deref(), e.facts.labels.clone()), (Some("ENG"), Some("Todo"), vec!["agent".to_string()]));
        assert_eq!(e.facts.left_state, Some(LeftState { id: "s-backlog".into(), name: None }));
        assert_eq!(state_seen(&moved_to_todo()), Some(("s-todo".to_string(), "Todo".to_string())));
        // An edit that leaves the state alone has no state it left.
        let mut edit = moved_to_todo();
        edit["updatedFrom"] = json!({"title": "Flaky test"});
        assert_eq!(read("ld-2", &edit).unwrap().facts.left_state, None);
    }

    #[test]
    fn comments_labels_and_unknown_types() {
        let comment = json!({"action": "create", "type": "Comment", "data": {"body": "@agent take this", "issue": {"number": 9, "title": "Slow search", "team": {"key": "ENG"}}}, "url": "https://linear.app/acme/issue/ENG-9#comment-1"});
        let e = read("ld-3", &comment).unwrap();
        assert_eq!((e.number, e.title.as_deref(), e.facts.team_key.as_deref()), (Some(9), Some("Slow search"), Some("ENG")));
        let label = json!({"action": "create", "type": "IssueLabel", "data": {"name": "agent"}});
        assert_eq!(read("ld-4", &label).unwrap().facts.label.as_deref(), Some("agent"));
        assert_eq!(read("ld-5", &json!({"action": "create", "type": "Reaction", "data": {}})), None);
    }
}
