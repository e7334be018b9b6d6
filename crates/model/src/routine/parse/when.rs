//! When a routine runs: its time zone, `schedule` (with `jitter`), `at`, `end_at`, `trigger`,
//! `version` and `runOnce`, each checked against the others.

use super::cx::{nearest, Cx};
use super::Fields;
use super::super::trigger::EventTrigger;
use super::super::yaml::{Node, Pos};
use crate::schedule::{local_tz, parse_tz, Schedule};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

pub(super) struct When {
    pub timezone: Tz,
    pub schedule: Option<Schedule>,
    pub at: Option<DateTime<Utc>>,
    pub end_at: Option<DateTime<Utc>>,
    pub trigger: Option<EventTrigger>,
    pub version: Option<String>,
    pub run_once: bool,
}

const MAX_JITTER: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The fields that say when routine `name` runs.
pub(super) fn when(cx: &mut Cx<'_>, f: &Fields<'_>, name: &str) -> When {
    let timezone = match f.get("timezone") {
        Some(node) => match cx.string(node, "timezone") {
            Some(tz) => parse_tz(&tz).map_err(|m| cx.err(node.pos(), m)).unwrap_or(Tz::UTC),
            None => Tz::UTC,
        },
        None => local_tz(),
    };

    let schedule = f.get("schedule").and_then(|node| {
        let expr = cx.string(node, "schedule")?;
        Schedule::parse(&expr, timezone).map_err(|m| cx.err(node.pos(), m)).ok()
    });
    // `jitter: <duration>`: each slot starts at its own fixed offset within the span.
    let jitter = f.get("jitter").and_then(|n| Some((n, cx.duration(n, "jitter")?))).and_then(|(n, span)| {
        if span > MAX_JITTER {
            cx.err(n.pos(), "`jitter` is at most 24h (each slot starts within that span after its time)");
            None
        } else if f.get("schedule").is_none() {
            cx.err(f.pos("jitter"), "`jitter` spreads the slots of a `schedule`; an `at` routine runs at its one time");
            None
        } else {
            Some(span)
        }
    });
    let schedule = match jitter {
        Some(span) => schedule.map(|s| s.with_jitter(span, name)),
        None => schedule,
    };
    let at = f.get("at").and_then(|n| cx.timestamp(n, "at", timezone));
    let end_at = f.get("end_at").and_then(|n| cx.timestamp(n, "end_at", timezone));
    // `trigger:` (agents-cli's GitHub and Linear events): the events it runs on.
    let trigger = f.get("trigger").and_then(|n| event_trigger(cx, n));
    if f.get("schedule").is_none() && f.get("at").is_none() && f.get("trigger").is_none() {
        cx.err(Pos { line: 1, col: 1 }, "missing `schedule` (a cron expression such as \"0 9 * * 1-5\"), `at` (a one-shot time) or `trigger` (the GitHub or Linear events it runs on)");
    }
    // `version:` (agents-cli): the agent CLI version it pins (the settings map it to a binary).
    let version = f.get("version").and_then(|n| cx.string(n, "version")).map(|v| v.trim().to_string());
    if version.is_some() && f.get("command").is_some() {
        cx.err(f.pos("version"), "`version` pins an agent CLI's version; this routine runs a `command`");
    }
    // `runOnce: true` (agents-cli): the schedule's next fire is the routine's only one.
    let run_once = f.get("run_once").and_then(|n| cx.boolean(n, "runOnce")).unwrap_or(false);
    if run_once && f.get("schedule").is_none() {
        cx.err(f.pos("run_once"), "`runOnce` needs a `schedule`: its next fire is the routine's only one (or give `at:` a time)");
    }
    if f.get("schedule").is_some() && f.get("at").is_some() {
        cx.err(f.pos("at"), "give either `schedule` (repeating) or `at` (once), not both");
    }
    if let (Some(at), Some(end)) = (at, end_at) {
        if end < at {
            cx.err(f.pos("end_at"), "`end_at` is before `at`: the routine would never run");
        }
    }

    When { timezone, schedule, at, end_at, trigger, version, run_once }
}

/// A `trigger:` block, every field checked where it stands: its `type` and `event`, the filters
/// that type has, the shape of each value.
pub(super) fn event_trigger(cx: &mut Cx<'_>, node: &Node) -> Option<EventTrigger> {
    use crate::incoming::{github, linear, Source};
    const KEYS: [&str; 9] = ["type", "event", "repo", "branch", "action", "label", "teamKey", "stateTo", "stateFrom"];
    let example = "trigger: {type: github_event, event: pull_request, repo: acme/app}";
    let fields = cx.sub_keys(node, "trigger", &KEYS, example);
    if !matches!(node, Node::Map { .. }) {
        return None;
    }
    let mut values: Vec<(&'static str, String, Pos)> = Vec::new();
    for (key, value, _) in &fields {
        if let Some(v) = cx.string(value, &format!("trigger.{key}")) {
            values.push((key, v.trim().to_string(), value.pos()));
        }
    }
    let get = |k: &str| values.iter().find(|(key, _, _)| *key == k).map(|(_, v, p)| (v.clone(), *p));
    let Some((kind, kind_at)) = get("type") else {
        cx.err(node.pos(), format!("`trigger` needs a `type`: github_event or linear_event ({example})"));
        return None;
    };
    let (source, events): (Source, &[&str]) = match kind.as_str() {
        "github_event" => (Source::GitHub, &github::EVENTS),
        "linear_event" => (Source::Linear, &linear::EVENTS),
        other => {
            let near = nearest(other, &["github_event", "linear_event"]).map(|n| format!("; did you mean \"{n}\"?")).unwrap_or_default();
            cx.err(kind_at, format!("unknown trigger type \"{other}\" (expected github_event or linear_event){near}"));
            return None;
        }
    };
    let Some((event, event_at)) = get("event") else {
        cx.err(kind_at, format!("`trigger` needs an `event`: one of {}", events.join(", ")));
        return None;
    };
    if !events.contains(&event.as_str()) {
        let near = nearest(&event, events).map(|n| format!("; did you mean \"{n}\"?")).unwrap_or_default();
        cx.err(event_at, format!("unknown {kind} event \"{event}\" (expected {}){near}", events.join(", ")));
        return None;
    }
    let mut ok = true;
    let mut refuse = |cx: &mut Cx<'_>, at: Pos, why: String| {
        cx.err(at, why);
        ok = false;
    };
    let github_only = ["repo", "branch"];
    let linear_only = ["teamKey", "stateTo", "stateFrom"];
    for (key, _, at) in &values {
        if source == Source::Linear && github_only.contains(key) {
            refuse(cx, *at, format!("`trigger.{key}` is a GitHub filter; a linear_event has `teamKey`, `action`, `label`, `stateTo` and `stateFrom`"));
        }
        if source == Source::GitHub && linear_only.contains(key) {
            refuse(cx, *at, format!("`trigger.{key}` is a Linear filter; a github_event has `repo`, `branch`, `action` and `label`"));
        }
    }
    if let Some((repo, at)) = get("repo") {
        let part = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !repo.split_once('/').is_some_and(|(o, n)| part(o) && part(n)) {
            refuse(cx, at, format!("`trigger.repo` is owner/name, such as acme/app (found \"{repo}\")"));
        }
    }
    if let Some((action, at)) = get("action") {
        match source {
            Source::GitHub if event == "push" => refuse(cx, at, "a push has no action (GitHub sends none): leave `trigger.action` out".into()),
            Source::GitHub if action.is_empty() || !action.chars().all(|c| c.is_ascii_lowercase() || c == '_') => {
                refuse(cx, at, format!("`trigger.action` is GitHub's action word, such as opened, synchronize, labeled, created or completed (found \"{action}\")"))
            }
            Source::Linear if !linear::ACTIONS.contains(&action.as_str()) => refuse(cx, at, format!("unknown Linear action \"{action}\" (expected {})", linear::ACTIONS.join(", "))),
            _ => {}
        }
    }
    if let Some((_, at)) = get("branch") {
        if event == "issue_comment" {
            refuse(cx, at, "an issue_comment has no branch (GitHub does not send the pull request's): leave `trigger.branch` out".into());
        }
    }
    if let Some((_, at)) = get("label") {
        let has_labels = matches!((source, event.as_str()), (Source::GitHub, "pull_request" | "issue_comment") | (Source::Linear, "Issue" | "IssueLabel"));
        if !has_labels {
            refuse(cx, at, format!("a {event} event carries no labels: leave `trigger.label` out"));
        }
    }
    for key in ["stateTo", "stateFrom"] {
        if let (Some((_, at)), true) = (get(key), event != "Issue") {
            refuse(cx, at, format!("`trigger.{key}` is an Issue's workflow state; a {event} has none"));
        }
    }
    if let Some((team, at)) = get("teamKey") {
        if team.is_empty() || !team.chars().all(|c| c.is_ascii_alphanumeric()) {
            refuse(cx, at, format!("`trigger.teamKey` is the team's key, such as ENG (found \"{team}\")"));
        }
    }
    let opt = |k: &str| get(k).map(|(v, _)| v).filter(|v| !v.is_empty());
    ok.then(|| EventTrigger {
        source,
        event,
        repo: opt("repo"),
        branch: opt("branch"),
        action: opt("action"),
        label: opt("label"),
        team_key: opt("teamKey"),
        state_to: opt("stateTo"),
        state_from: opt("stateFrom"),
    })
}

