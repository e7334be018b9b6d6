//! `trigger:` — the events a routine runs on (agents-cli's shape): a GitHub event with filters
//! on repository, branch, action and label, or a Linear one on action, team, label and state. Each
//! filter says why an event did not match, so `hooks list` can tell "filtered out by branch".

use crate::incoming::{Event, Source};
use serde::Serialize;

/// A routine's `trigger:` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct EventTrigger {
    pub source: Source,
    /// GitHub's event (`pull_request`, …) or Linear's type (`Issue`, …).
    pub event: String,
    /// `owner/name` (GitHub).
    pub repo: Option<String>,
    /// The pull request's base branch, the pushed branch, the workflow run's branch (GitHub).
    pub branch: Option<String>,
    pub action: Option<String>,
    /// For `labeled`/`unlabeled` (GitHub) and Linear's IssueLabel: the label itself; otherwise a
    /// label the pull request or issue carries.
    pub label: Option<String>,
    #[serde(rename = "teamKey")]
    pub team_key: Option<String>,
    /// Linear Issue: runs when the issue moves *into* this state (a later edit does not re-fire).
    #[serde(rename = "stateTo")]
    pub state_to: Option<String>,
    /// Linear Issue: runs when the issue leaves this state.
    #[serde(rename = "stateFrom")]
    pub state_from: Option<String>,
}

impl EventTrigger {
    /// Whether `event` fires this trigger; otherwise the filter that turned it away, in words
    /// ("branch: dev, not main").
    pub fn check(&self, e: &Event) -> Result<(), String> {
        if e.source != self.source || e.name != self.event {
            return Err(format!("another event ({}:{})", e.source.as_str(), e.name));
        }
        let same = |want: &Option<String>, got: Option<&str>, what: &str| -> Result<(), String> {
            match want {
                Some(w) if !got.is_some_and(|g| g.eq_ignore_ascii_case(w)) => Err(format!("{what}: {}, not {w}", got.unwrap_or("none"))),
                _ => Ok(()),
            }
        };
        same(&self.repo, e.repo.as_deref(), "repo")?;
        // Branch names are case-sensitive in git.
        if let Some(b) = &self.branch {
            if e.branch.as_deref() != Some(b.as_str()) {
                return Err(format!("branch: {}, not {b}", e.branch.as_deref().unwrap_or("none")));
            }
        }
        same(&self.action, e.action.as_deref(), "action")?;
        same(&self.team_key, e.facts.team_key.as_deref(), "teamKey")?;
        if let Some(want) = &self.label {
            // The label an event is about (labeled, unlabeled, a Linear label), else one it carries.
            let about = matches!(e.action.as_deref(), Some("labeled" | "unlabeled")) || e.name == "IssueLabel";
            let hit = match about {
                true => e.facts.label.as_deref().is_some_and(|l| l.eq_ignore_ascii_case(want)),
                false => e.facts.labels.iter().any(|l| l.eq_ignore_ascii_case(want)),
            };
            if !hit {
                let had = if about { e.facts.label.clone().unwrap_or_else(|| "none".into()) } else { format!("[{}]", e.facts.labels.join(", ")) };
                return Err(format!("label: {had}, not {want}"));
            }
        }
        if let Some(want) = &self.state_to {
            let moved = e.action.as_deref() == Some("create") || e.facts.left_state.is_some();
            match (&e.facts.state, moved) {
                (Some(s), true) if s.eq_ignore_ascii_case(want) => {}
                (Some(s), false) if s.eq_ignore_ascii_case(want) => return Err(format!("stateTo: already {s} (an edit, not a move into it)")),
                (s, _) => return Err(format!("stateTo: {}, not {want}", s.as_deref().unwrap_or("none"))),
            }
        }
        if let Some(want) = &self.state_from {
            let Some(left) = &e.facts.left_state else { return Err("stateFrom: the state did not change".into()) };
            let hit = left.name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(want)) || left.id == *want;
            if !hit {
                return Err(format!("stateFrom: left {}, not {want}", left.name.as_deref().unwrap_or(&left.id)));
            }
        }
        Ok(())
    }

    /// "github:pull_request (acme/app@main, action=labeled, label=ux-approved)".
    pub fn words(&self) -> String {
        let mut parts = Vec::new();
        match (&self.repo, &self.branch) {
            (Some(r), Some(b)) => parts.push(format!("{r}@{b}")),
            (Some(r), None) => parts.push(r.clone()),
            (None, Some(b)) => parts.push(format!("branch={b}")),
            (None, None) => {}
        }
        for (k, v) in [("team", &self.team_key), ("action", &self.action), ("label", &self.label), ("stateFrom", &self.state_from), ("stateTo", &self.state_to)] {
            if let Some(v) = v {
                parts.push(format!("{k}={v}"));
            }
        }
        let head = format!("{}:{}", self.source.as_str(), self.event);
        if parts.is_empty() {
            head
        } else {
            format!("{head} ({})", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::incoming::{Facts, LeftState};

    fn trigger(source: Source, event: &str) -> EventTrigger {
        EventTrigger { source, event: event.into(), repo: None, branch: None, action: None, label: None, team_key: None, state_to: None, state_from: None }
    }

    fn pr(action: &str, branch: &str, label: Option<&str>, labels: &[&str]) -> Event {
        Event {
            source: Source::GitHub,
            name: "pull_request".into(),
            action: Some(action.into()),
            repo: Some("acme/app".into()),
            number: Some(41),
            title: Some("Fix".into()),
            url: None,
            branch: Some(branch.into()),
            sender: None,
            delivery: "d".into(),
            review: None,
            facts: Facts { labels: labels.iter().map(|l| l.to_string()).collect(), label: label.map(str::to_string), ..Facts::default() },
        }
    }

    #[test]
    fn github_filters_each_say_why_not() {
        let t = EventTrigger { repo: Some("acme/app".into()), branch: Some("main".into()), action: Some("labeled".into()), label: Some("ux-approved".into()), ..trigger(Source::GitHub, "pull_request") };
        assert_eq!(t.words(), "github:pull_request (acme/app@main, action=labeled, label=ux-approved)");
        assert_eq!(t.check(&pr("labeled", "main", Some("ux-approved"), &["bug", "ux-approved"])), Ok(()));
        assert_eq!(t.check(&pr("labeled", "dev", Some("ux-approved"), &[])), Err("branch: dev, not main".into()));
        assert_eq!(t.check(&pr("opened", "main", None, &["ux-approved"])), Err("action: opened, not labeled".into()));
        assert_eq!(t.check(&pr("labeled", "main", Some("bug"), &["bug", "ux-approved"])), Err("label: bug, not ux-approved".into()), "labeled: the label added, not one it already had");
        let mut other = pr("labeled", "main", Some("ux-approved"), &[]);
        other.repo = Some("acme/site".into());
        assert_eq!(t.check(&other), Err("repo: acme/site, not acme/app".into()));
        other.name = "push".into();
        assert_eq!(t.check(&other), Err("another event (github:push)".into()));
        // Without `labeled`, `label` is one the pull request carries.
        let carries = EventTrigger { label: Some("agent".into()), ..trigger(Source::GitHub, "pull_request") };
        assert_eq!(carries.check(&pr("opened", "main", None, &["Agent"])), Ok(()));
        assert_eq!(carries.check(&pr("opened", "main", None, &["bug"])), Err("label: [bug], not agent".into()));
    }

    fn issue(action: &str, state: &str, left: Option<(&str, Option<&str>)>) -> Event {
        Event {
            source: Source::Linear,
            name: "Issue".into(),
            action: Some(action.into()),
            repo: None,
            number: Some(123),
            title: None,
            url: None,
            branch: None,
            sender: None,
            delivery: "l".into(),
            review: None,
            facts: Facts {
                team_key: Some("ENG".into()),
                state: Some(state.into()),
                left_state: left.map(|(id, name)| LeftState { id: id.into(), name: name.map(str::to_string) }),
                ..Facts::default()
            },
        }
    }

    #[test]
    fn linear_state_moves_fire_once() {
        let t = EventTrigger { team_key: Some("ENG".into()), state_to: Some("Todo".into()), ..trigger(Source::Linear, "Issue") };
        assert_eq!(t.words(), "linear:Issue (team=ENG, stateTo=Todo)");
        assert_eq!(t.check(&issue("update", "Todo", Some(("s-1", Some("Backlog"))))), Ok(()));
        assert_eq!(t.check(&issue("create", "Todo", None)), Ok(()), "made in Todo is a move into it");
        assert_eq!(t.check(&issue("update", "Todo", None)), Err("stateTo: already Todo (an edit, not a move into it)".into()));
        assert_eq!(t.check(&issue("update", "Done", Some(("s-2", None)))), Err("stateTo: Done, not Todo".into()));
        let from = EventTrigger { state_from: Some("Backlog".into()), ..trigger(Source::Linear, "Issue") };
        assert_eq!(from.check(&issue("update", "Todo", Some(("s-1", Some("Backlog"))))), Ok(()));
        assert_eq!(from.check(&issue("update", "Todo", Some(("s-9", None)))), Err("stateFrom: left s-9, not Backlog".into()), "a state never seen is named by its id");
        assert_eq!(from.check(&issue("update", "Todo", None)), Err("stateFrom: the state did not change".into()));
        let team = EventTrigger { team_key: Some("OPS".into()), ..trigger(Source::Linear, "Issue") };
        assert_eq!(team.check(&issue("update", "Todo", None)), Err("teamKey: ENG, not OPS".into()));
    }
}
