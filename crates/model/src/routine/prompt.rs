//! Prompt placeholders: `{date} {time} {day} {routine} {last_report} {branch}`, the event that
//! fired the run (`{event.repo}`, `{event.number}`, `{event.title}`, `{event.url}`,
//! `{event.branch}`, `{event.action}`, `{event.sender}`, …), the review a run answers
//! (`{review.comments}`, `on_review: rerun`) and the routine's `variables`.
//!
//! Unknown `{words}` are left as they are: prompts often contain braces (JSON, code) that are not
//! meant as placeholders.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::collections::BTreeMap;

pub struct PromptContext<'a> {
    pub routine: &'a str,
    pub now: DateTime<Utc>,
    pub tz: Tz,
    /// The report of the last *completed* run; never a failed run's text.
    pub last_report: Option<&'a str>,
    pub variables: &'a BTreeMap<String, String>,
    /// The run's branch: its own for a worktree run, the checkout's for a run in a repository.
    pub branch: Option<&'a str>,
    /// The GitHub or Linear event that fired the run, if one did.
    pub event: Option<&'a crate::incoming::Event>,
}

pub fn render(template: &str, cx: &PromptContext<'_>) -> String {
    let local = cx.now.with_timezone(&cx.tz);
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find('}');
        let word = close.map(|c| &after[..c]).filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'));
        let value = word.and_then(|w| match w {
            "date" => Some(local.format("%Y-%m-%d").to_string()),
            "time" => Some(local.format("%H:%M").to_string()),
            "day" => Some(local.format("%A").to_string()),
            "routine" => Some(cx.routine.to_string()),
            "last_report" => Some(cx.last_report.unwrap_or("(no previous report)").to_string()),
            "branch" => Some(cx.branch.unwrap_or("(no branch: the run is not in a git repository)").to_string()),
            // A part the event lacks is empty; a run no event fired says so.
            part if part.starts_with("event.") => match cx.event {
                Some(e) => e.placeholders().into_iter().find(|(k, _)| *k == part).map(|(_, v)| v),
                None => Some("(no event: this run was not started by one)".to_string()),
            },
            "review.comments" => Some(match cx.event.and_then(|e| e.review.as_ref()) {
                Some(review) => review.words(),
                None => "(no review: this run was not started by one)".to_string(),
            }),
            other => cx.variables.get(other).cloned(),
        });
        match (value, close) {
            (Some(v), Some(c)) => {
                out.push_str(&v);
                rest = &after[c + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn fills_known_placeholders_and_keeps_other_braces() {
        let vars = BTreeMap::from([("repo".to_string(), "acme/app".to_string())]);
        let cx = PromptContext {
            routine: "pr-review",
            now: Utc.with_ymd_and_hms(2026, 11, 30, 8, 5, 0).unwrap(),
            tz: "Europe/Berlin".parse().unwrap(),
            last_report: Some("all green"),
            variables: &vars,
            branch: Some("nightshift/pr-review/01j"),
            event: None,
        };
        let out = render("{routine} on {day} {date} {time} for {repo}: {last_report} {\"json\": 1} {unknown} on {branch}", &cx);
        assert_eq!(out, "pr-review on Monday 2026-11-30 09:05 for acme/app: all green {\"json\": 1} {unknown} on nightshift/pr-review/01j");
    }

    #[test]
    fn no_previous_report_is_said_plainly() {
        let vars = BTreeMap::new();
        let cx = PromptContext { routine: "r", now: Utc::now(), tz: Tz::UTC, last_report: None, variables: &vars, branch: None, event: None };
        assert_eq!(render("Last: {last_report}", &cx), "Last: (no previous report)");
        assert_eq!(render("PR {event.number}", &cx), "PR (no event: this run was not started by one)");
    }

    #[test]
    fn the_events_parts_fill_their_placeholders() {
        let vars = BTreeMap::new();
        let event = crate::incoming::Event {
            source: crate::incoming::Source::GitHub,
            name: "pull_request".into(),
            action: Some("opened".into()),
            repo: Some("acme/app".into()),
            number: Some(41),
            title: Some("Fix the login".into()),
            url: Some("https://github.com/acme/app/pull/41".into()),
            branch: Some("main".into()),
            sender: Some("octocat".into()),
            delivery: "d-1".into(),
            review: None,
            facts: Default::default(),
        };
        let cx = PromptContext { routine: "r", now: Utc::now(), tz: Tz::UTC, last_report: None, variables: &vars, branch: None, event: Some(&event) };
        let out = render("Review {event.repo}#{event.number} “{event.title}” ({event.action} by {event.sender}, into {event.branch}): {event.url} {event.nope}", &cx);
        assert_eq!(out, "Review acme/app#41 “Fix the login” (opened by octocat, into main): https://github.com/acme/app/pull/41 {event.nope}");
    }
}
