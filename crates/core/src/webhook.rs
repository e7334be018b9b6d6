//! Webhooks: a final run posted to a URL — as JSON, a Slack message or an ntfy notification —
//! signed with HMAC-SHA256 when the webhook has a secret (kept in the OS keychain).
//!
//! This module is the pure part (which webhooks a run goes to, the request, the signature) and one
//! bounded send; delivering from the outbox, with retries, is `engine::webhooks`.
//!
//! What a receiver gets (documented in docs/webhooks.md): `Content-Type`, `Idempotency-Key: <run id>`
//! (the same on every retry: a receiver that saw it already answers 2xx and ignores it),
//! `X-Nightshift-Webhook: <name>`, `X-Nightshift-Timestamp: <unix seconds>` and, with a secret,
//! `X-Nightshift-Signature: sha256=<hex of HMAC-SHA256(secret, "<timestamp>.<body>")>`.

use crate::run::{Channel, RunRecord, RunStatus};
use crate::settings::{Settings, WebhookFormat, WebhookRuns, WebhookSettings};
use crate::words::fmt_time;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::time::Duration;

/// How long one request may take (connect, send, answer).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Lines of the report in a payload's excerpt.
const EXCERPT_LINES: usize = 20;

pub fn channel(name: &str) -> Channel {
    Channel::Webhook(name.to_string())
}

/// The webhooks a final row owes a post: every one its routine lists (`listed`), plus those
/// whose `on` takes it (`failed`: the row is a failure, or a slot that did nothing). What else a
/// row owes is `engine::owed`'s rule.
pub(crate) fn owed(failed: bool, listed: &[String], settings: &Settings) -> Vec<Channel> {
    let listed = |name: &str| listed.iter().any(|w| w == name);
    settings
        .webhooks
        .iter()
        .filter(|w| listed(&w.name) || w.on == WebhookRuns::All || (w.on == WebhookRuns::Failures && failed))
        .map(|w| channel(&w.name))
        .collect()
}

/// The keychain entry of a webhook's signing secret.
pub fn secret_key(name: &str) -> String {
    format!("webhook:{name}")
}

/// One HTTP request, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// What a post tells of a run: that it ended, or — later, on its own — that its branch could not
/// be pushed after every try, or that its pull request was opened, updated or answered in
/// (`event` in the JSON payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    RunFinished,
    PushFailed,
    PullRequest,
}

impl Event {
    pub fn as_str(self) -> &'static str {
        match self {
            Event::RunFinished => "run_finished",
            Event::PushFailed => "push_failed",
            Event::PullRequest => "pull_request",
        }
    }
}

/// "pull request #3 opened: https://github.com/acme/app/pull/3" — the run's pull request in a
/// post's words.
fn pull_request_words(run: &RunRecord) -> String {
    let Some(pr) = run.pull_request.as_ref() else { return "no pull request".into() };
    let number = pr.number.map(|n| format!(" #{n}")).unwrap_or_default();
    let what = match pr.state.as_str() {
        "answered" => format!("review answered in pull request{number}"),
        "unchanged" => format!("review answered in pull request{number} without a change"),
        state => format!("pull request{number} {state}"),
    };
    match pr.url.as_deref() {
        Some(url) => format!("{what}: {url}"),
        None => what,
    }
}

/// A run blocked for an approval (`needs_approval`), answerable from where the post lands:
/// `serve`'s signed, single-use links ([`crate::engine::Engine`]'s approval links).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ApprovalLinks {
    /// The calls it asks for, in words (inert text).
    pub calls: String,
    /// POST: approve (the run is rerun with them allowed).
    pub approve: String,
    /// POST: deny.
    pub deny: String,
    /// When the links expire (the ask's `ask_timeout`).
    pub until: String,
}

/// The request for `run` (its texts already masked by the caller), signed when `secret` is given;
/// with `approval`'s links when the run waits for one.
#[allow(clippy::too_many_arguments)]
pub fn request(hook: &WebhookSettings, event: Event, run: &RunRecord, report: Option<&str>, approval: Option<&ApprovalLinks>, host: &str, secret: Option<&str>, now_secs: i64) -> Request {
    // A completed run's report; any other end is told by its message (its report, which explains
    // the verdict for a person opening it, would repeat the status line the payload already has).
    let report = report.filter(|_| run.status == crate::run::RunStatus::Completed);
    let push = run.changes.as_ref().and_then(|c| c.push.as_ref().map(|p| (c, p)));
    let push_error = push.and_then(|(_, p)| p.error.as_deref()).unwrap_or("it was refused");
    let excerpt = match event {
        Event::RunFinished => excerpt(report.or(run.message.as_deref()).unwrap_or("")),
        Event::PushFailed => excerpt(push_error),
        // Nightshift's own words and GitHub's address for it: not untrusted text, its link kept.
        Event::PullRequest => pull_request_words(run),
    };
    let title = match event {
        Event::RunFinished => format!("{} {} · {}", mark(run.status), run.routine, status_words(run)),
        Event::PushFailed => format!("✗ {} · push failed", run.routine),
        Event::PullRequest => format!("↗ {} · {}", run.routine, pull_request_words(run).split(": ").next().unwrap_or_default()),
    };
    let (content_type, body, mut headers) = match hook.format {
        WebhookFormat::Json => {
            let mut body = serde_json::json!({
                "event": event.as_str(),
                "routine": run.routine,
                "run_id": run.id,
                "status": run.status.as_str(),
                "reason": run.reason.map(|r| r.as_str()),
                "message": run.message,
                "trigger": run.trigger.as_str(),
                "scheduled_for": run.scheduled_for.as_ref().map(fmt_time),
                "started_at": run.started_at.as_ref().map(fmt_time),
                "finished_at": run.finished_at.as_ref().map(fmt_time),
                "duration_ms": run.duration_ms,
                "exit_code": run.exit_code,
                "account": run.account,
                "host": host,
                "remote_host": run.host,
                "cost_usd": run.cost_usd,
                "denials": run.denials,
                "pull_request": run.pull_request,
                "excerpt": excerpt,
            });
            if let (Event::PushFailed, Some((changes, push))) = (event, push) {
                body["push"] = serde_json::json!({ "remote": push.remote, "branch": changes.branch, "tries": push.tries, "error": push.error });
            }
            if let Some(links) = approval {
                body["approval"] = serde_json::json!(links);
            }
            ("application/json", body.to_string(), Vec::new())
        }
        WebhookFormat::Slack => {
            let mut text = if excerpt.is_empty() { format!("*{title}*") } else { format!("*{title}*\n```\n{excerpt}\n```") };
            // Slack's link form; the links answer a POST only (a preview must not approve).
            if let Some(links) = approval {
                text += &format!("\nAnswer by {} (POST): <{}|Approve> · <{}|Deny>", links.until, links.approve, links.deny);
            }
            ("application/json", serde_json::json!({ "text": text }).to_string(), Vec::new())
        }
        WebhookFormat::Ntfy => {
            let body = if excerpt.is_empty() { title.clone() } else { excerpt.clone() };
            let failed = event == Event::PushFailed || !matches!(run.status, RunStatus::Completed | RunStatus::Cancelled);
            let what = match event {
                Event::RunFinished => status_words(run),
                Event::PushFailed => "push failed".to_string(),
                Event::PullRequest => pull_request_words(run).split(": ").next().unwrap_or_default().to_string(),
            };
            // Header values are ASCII: the title without the mark.
            let mut headers = vec![
                ("Title".to_string(), ascii(&format!("{}: {what}", run.routine))),
                ("Tags".to_string(), if failed { "warning".into() } else { "white_check_mark".into() }),
                ("Priority".to_string(), if failed { "high".into() } else { "default".into() }),
            ];
            // A tap opens the pull request.
            if let Some(url) = run.pull_request.as_ref().and_then(|p| p.url.as_deref()).filter(|_| event == Event::PullRequest) {
                headers.push(("Click".to_string(), url.to_string()));
            }
            // ntfy's action buttons call the links back (POST), as `[approvals] ntfy` does.
            if let Some(links) = approval {
                headers.push(("Actions".to_string(), format!("http, Approve, {}, method=POST, clear=true; http, Deny, {}, method=POST, clear=true", links.approve, links.deny)));
            }
            ("text/plain; charset=utf-8", body, headers)
        }
    };
    headers.push(("Content-Type".into(), content_type.into()));
    // One key per run and event: a receiver that has the run's end still takes its push failure.
    let key = match event {
        Event::RunFinished => run.id.clone(),
        Event::PushFailed => format!("{}-push_failed", run.id),
        Event::PullRequest => format!("{}-pull_request", run.id),
    };
    headers.push(("Idempotency-Key".into(), key));
    headers.push(("X-Nightshift-Webhook".into(), hook.name.clone()));
    headers.push(("X-Nightshift-Timestamp".into(), now_secs.to_string()));
    if let Some(secret) = secret {
        headers.push(("X-Nightshift-Signature".into(), format!("sha256={}", sign(secret, now_secs, &body))));
    }
    Request { url: hook.url.clone(), headers, body }
}

/// A heartbeat ping for `run` (the healthchecks.io convention, which Cronitor and others accept):
/// `<url>/start` when it starts; when it ended, `<url>` if it completed, `<url>/<code>` for a
/// command's own non-zero exit, `<url>/fail` otherwise. The body says which run, as the monitor's
/// log line.
pub fn ping_request(url: &str, event: crate::run::PingEvent, run: &RunRecord) -> Request {
    use crate::run::{PingEvent, Reason};
    let suffix = match event {
        PingEvent::Start => "/start".to_string(),
        PingEvent::End => match (run.status, run.reason, run.exit_code) {
            (RunStatus::Completed, _, _) => String::new(),
            (RunStatus::Failed, Some(Reason::ExitNonzero), Some(code)) if run.agent == crate::words::Agent::Command && code > 0 => format!("/{code}"),
            _ => "/fail".to_string(),
        },
    };
    let body = match event {
        PingEvent::Start => format!("Nightshift: {} run {} started", run.routine, run.id),
        PingEvent::End => {
            let said = run.message.as_deref().map(|m| format!(" — {}", crate::words::first_line(m, 200))).unwrap_or_default();
            format!("Nightshift: {} run {} {}{said}", run.routine, run.id, status_words(run))
        }
    };
    let headers = vec![("Content-Type".into(), "text/plain; charset=utf-8".into()), ("Idempotency-Key".into(), format!("{}-{}", run.id, event.as_str()))];
    Request { url: format!("{url}{suffix}"), headers, body }
}

/// HMAC-SHA256 of `"<timestamp>.<body>"` with the secret, as lowercase hex.
pub fn sign(secret: &str, timestamp: i64, body: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a try failed, and whether another may succeed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Network error, timeout, 5xx or 429: try again (after `after` when the receiver said).
    Retry { error: String, after: Option<Duration> },
    /// Any other 4xx: the receiver refuses this request; trying again would not help.
    Refused(String),
}

impl Failure {
    /// The same failure with `secret` (a URL that must not be shown) said as `with`.
    pub fn masking(self, secret: &str, with: &str) -> Failure {
        match self {
            Failure::Retry { error, after } => Failure::Retry { error: error.replace(secret, with), after },
            Failure::Refused(error) => Failure::Refused(error.replace(secret, with)),
        }
    }
}

/// Send one request, bounded by [`REQUEST_TIMEOUT`].
pub fn send(agent: &ureq::Agent, req: &Request) -> Result<(), Failure> {
    let mut call = agent.post(&req.url);
    for (k, v) in &req.headers {
        call = call.set(k, v);
    }
    match call.send_string(&req.body) {
        Ok(_) => Ok(()),
        // "Conflict: I have it already" — a receiver that keys deliveries by the run id has this
        // one (an earlier try's answer was lost): delivered.
        Err(ureq::Error::Status(409, _)) => Ok(()),
        Err(ureq::Error::Status(code, response)) => {
            let after = response.header("Retry-After").and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_secs);
            let said = response.into_string().unwrap_or_default();
            let said = said.lines().next().unwrap_or("").chars().take(200).collect::<String>();
            let error = if said.is_empty() { format!("HTTP {code}") } else { format!("HTTP {code}: {said}") };
            if code == 429 || code >= 500 {
                Err(Failure::Retry { error, after })
            } else {
                Err(Failure::Refused(error))
            }
        }
        Err(ureq::Error::Transport(t)) => Err(Failure::Retry { error: t.to_string(), after: None }),
    }
}

/// An HTTP client with the request bound.
pub fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new().timeout(REQUEST_TIMEOUT).redirects(0).user_agent(concat!("nightshift/", env!("CARGO_PKG_VERSION"))).build()
}

/// The first lines of a report as plain text without links: `[text](url)` keeps its text, bare
/// URLs are dropped (a chat message from an unattended agent should not carry links).
pub fn excerpt(text: &str) -> String {
    let lines: Vec<String> = text.lines().take(EXCERPT_LINES).map(unlink).collect();
    let mut out = lines.join("\n").trim().to_string();
    if text.lines().count() > EXCERPT_LINES {
        out.push_str("\n…");
    }
    out
}

fn unlink(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        let (before, after) = rest.split_at(open);
        out.push_str(before);
        match (after.find("]("), after.find(')')) {
            (Some(close), Some(end)) if close < end => {
                out.push_str(&after[1..close]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push('[');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    out.split(' ')
        .map(|w| if w.starts_with("http://") || w.starts_with("https://") || w.starts_with("www.") { "" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

fn mark(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Completed => "✓",
        RunStatus::TimedOut => "⏱",
        RunStatus::Cancelled => "■",
        _ => "✗",
    }
}

fn status_words(run: &RunRecord) -> String {
    match run.reason {
        Some(r) => format!("{} ({})", run.status.as_str(), r.as_str()),
        None => run.status.as_str().to_string(),
    }
}

/// Header values are ASCII: anything else (a routine name in another script) becomes `?`.
fn ascii(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii() && !c.is_ascii_control() { c } else { '?' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_timestamp_dot_body() {
        // Computed independently: hmac.new(b"key", b"1700000000.{}", hashlib.sha256).hexdigest()
        assert_eq!(sign("key", 1_700_000_000, "{}"), "9d713ed406bb7076d4123f0dc2c39d2df5c654ed4b0cd56b52c8b4c940bd63ae");
        assert_ne!(sign("key", 1_700_000_001, "{}"), sign("key", 1_700_000_000, "{}"), "the timestamp is signed");
    }

    #[test]
    fn excerpts_keep_link_text_and_drop_urls() {
        assert_eq!(excerpt("See [the PR](https://x.example/pr/1) and https://evil.example now"), "See the PR and  now");
        let long: String = (0..30).map(|i| format!("line {i}\n")).collect();
        let e = excerpt(&long);
        assert_eq!(e.lines().count(), EXCERPT_LINES + 1);
        assert!(e.ends_with('…'));
    }

    #[test]
    fn a_run_on_another_machine_names_it_beside_this_machines_name() {
        let hook = WebhookSettings { name: "team".into(), url: "https://example.invalid/hook".into(), format: WebhookFormat::Json, on: Default::default() };
        let run = RunRecord { host: Some("workstation".into()), ..RunRecord::sample(crate::run::RunStatus::Completed, None) };
        let body: serde_json::Value = serde_json::from_str(&request(&hook, Event::RunFinished, &run, None, None, "laptop", None, 1_700_000_000).body).unwrap();
        assert_eq!((body["host"].as_str(), body["remote_host"].as_str()), (Some("laptop"), Some("workstation")));
    }
}
