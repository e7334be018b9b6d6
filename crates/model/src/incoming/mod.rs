//! Events from outside that start runs (not the engine's own events, `crate::events`): a GitHub
//! or Linear delivery, read into one shape whichever service sent it ([`Event`]), so a routine's
//! `trigger:` ([`crate::routine::trigger`]) is checked the same way for each. Reading a delivery
//! ([`github`], [`linear`]) and proving who sent it ([`signature`]) are pure; the engine claims
//! and starts the runs.

pub mod github;
pub mod linear;
pub mod polled;
pub mod review;
pub mod signature;

use serde::{Deserialize, Serialize};

crate::words::string_enum!(
    /// Who sent an event.
    Source as "source" { #[serde(rename = "github")] GitHub = "github", Linear = "linear" }
);

/// One event, as a run records it (`event` on the run record) and as prompts name its parts
/// (`{event.repo}`, `{event.number}`, …). The filter facts beside them are for matching only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Event {
    pub source: Source,
    /// GitHub's event (`pull_request`, `push`, `issue_comment`, `workflow_run`) or Linear's type
    /// (`Issue`, `IssueLabel`, `Comment`, `Project`, `Cycle`).
    pub name: String,
    /// GitHub's `action` (`opened`, `labeled`, …) or Linear's (`create`, `update`, `remove`);
    /// none for a push.
    pub action: Option<String>,
    /// `owner/name` (GitHub).
    pub repo: Option<String>,
    /// The pull request's, issue's or workflow run's number; a Linear issue's.
    pub number: Option<u64>,
    pub title: Option<String>,
    pub url: Option<String>,
    /// The pull request's base branch, the pushed branch, the workflow run's branch.
    pub branch: Option<String>,
    /// Who did it (GitHub login, Linear name).
    pub sender: Option<String>,
    /// The service's delivery id (`X-GitHub-Delivery`, `Linear-Delivery`): one event, however
    /// often it arrives.
    pub delivery: String,
    /// The review a `pull_request_review` event submitted (`on_review: rerun`), with its line
    /// comments once they were read from GitHub.
    #[serde(default)]
    pub review: Option<review::Review>,
    /// What filters read and a run does not keep.
    #[serde(skip)]
    pub facts: Facts,
}

/// The parts of an event only `trigger:` filters read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Facts {
    /// The labels the pull request or issue carries (after this event).
    pub labels: Vec<String>,
    /// The label this event added or removed (`labeled`, `unlabeled`; a Linear label's name).
    pub label: Option<String>,
    /// Linear: the team's key (`ENG`).
    pub team_key: Option<String>,
    /// Linear: the state after this event, by name.
    pub state: Option<String>,
    /// Linear: the state it left in this event — the id Linear sends in `updatedFrom.stateId`
    /// (`None`: the state did not change), and its name when the receiver knows it.
    pub left_state: Option<LeftState>,
    /// What makes this event the same one whichever path brought it: GitHub's webhook delivery
    /// and its Events API entry carry unrelated ids, so the receiver and the poller seeing one
    /// pull request labelled are told apart from two labellings by this.
    pub sameness: Option<Sameness>,
}

/// An event's identity across paths: what happened to what (`pull_request:acme/app#41:labeled:
/// ux-approved`, `push:acme/app:refs/heads/main:<sha>`, `issue_comment:acme/app:<comment id>:
/// created`) and when. Two arrivals with one identity within [`Sameness::WINDOW`] of each other
/// are one event.
#[derive(Debug, Clone, PartialEq)]
pub struct Sameness {
    pub identity: String,
    pub at: chrono::DateTime<chrono::Utc>,
}

impl Sameness {
    /// How far apart one event's times may be as the two paths tell them (a webhook's
    /// `pull_request.updated_at` against the Events API's `created_at`: the same moment, give or
    /// take GitHub's bookkeeping). Wide enough for that, narrow enough that a label removed and
    /// added again minutes later fires again.
    pub const WINDOW: chrono::Duration = chrono::Duration::minutes(2);
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct LeftState {
    pub id: String,
    pub name: Option<String>,
}

impl Event {
    /// `{event.repo}` and its kin for a prompt: each part by its placeholder name; a part the
    /// event lacks is an empty string (the prompt says so rather than keeping the braces).
    pub fn placeholders(&self) -> Vec<(&'static str, String)> {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        vec![
            ("event.source", self.source.as_str().to_string()),
            ("event.name", self.name.clone()),
            ("event.action", s(&self.action)),
            ("event.repo", s(&self.repo)),
            ("event.number", self.number.map(|n| n.to_string()).unwrap_or_default()),
            ("event.title", s(&self.title)),
            ("event.url", s(&self.url)),
            ("event.branch", s(&self.branch)),
            ("event.sender", s(&self.sender)),
            ("event.delivery", self.delivery.clone()),
        ]
    }

    /// "github:pull_request labeled acme/app#41 “Fix the login”".
    pub fn words(&self) -> String {
        let mut w = format!("{}:{}", self.source.as_str(), self.name);
        if let Some(a) = &self.action {
            w += &format!(" {a}");
        }
        match (&self.repo, self.number) {
            (Some(r), Some(n)) => w += &format!(" {r}#{n}"),
            (Some(r), None) => w += &format!(" {r}"),
            (None, Some(n)) => w += &format!(" #{n}"),
            _ => {}
        }
        if let Some(t) = &self.title {
            w += &format!(" “{}”", crate::words::first_line(t, 80));
        }
        w
    }
}

/// A JSON string field, trimmed, if present and not empty.
fn text(v: &serde_json::Value) -> Option<String> {
    v.as_str().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// The `name` of each element of a JSON array of labels.
fn label_names(v: &serde_json::Value) -> Vec<String> {
    v.as_array().into_iter().flatten().filter_map(|l| text(&l["name"])).collect()
}
