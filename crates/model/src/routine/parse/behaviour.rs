//! How a routine behaves around its runs: whether it is `enabled` and on which `devices`, how
//! missed slots are made up (`catchup`), retried (`retries`, `retry_backoff`, `max_wait`) and
//! overlapped (`overlap`), and who hears of its runs (`notify`, `notify_missed`, `ping`,
//! `webhooks`).

use super::cx::Cx;
use super::Fields;
use super::super::yaml::Node;
use super::super::{NotifyPolicy, Overlap, RetryPolicy};
use std::time::Duration;

pub(super) struct Behaviour {
    pub catchup: bool,
    pub catchup_within: Option<Duration>,
    pub enabled: bool,
    /// As written; its default depends on the action.
    pub notify_missed: Option<bool>,
    pub ping: Option<String>,
    /// As written; its default depends on the action.
    pub notify: Option<NotifyPolicy>,
    pub devices: Vec<String>,
    pub webhooks: Vec<String>,
    pub retry: RetryPolicy,
    pub overlap: Overlap,
}

pub(super) fn behaviour(cx: &mut Cx<'_>, f: &Fields<'_>) -> Behaviour {
    // `catchup: true | false | <duration>` (a duration: how late a slot may be made up).
    let (catchup, catchup_within) = match f.get("catchup") {
        None => (true, None),
        Some(n @ Node::Scalar { value, quoted: false, .. }) if value.eq_ignore_ascii_case("true") || value.eq_ignore_ascii_case("false") => {
            (cx.boolean(n, "catchup").unwrap_or(true), None)
        }
        Some(n) => match cx.duration(n, "catchup") {
            Some(d) => (true, Some(d)),
            None => (true, None),
        },
    };
    let enabled = f.get("enabled").and_then(|n| cx.boolean(n, "enabled")).unwrap_or(true);
    let notify_missed = f.get("notify_missed").and_then(|n| cx.boolean(n, "notify_missed"));
    let ping = f.get("ping").and_then(|n| Some((n, cx.string(n, "ping")?))).and_then(|(n, url)| match ping_url(url.trim()) {
        Ok(url) => Some(url),
        Err(msg) => {
            cx.err(n.pos(), msg);
            None
        }
    });
    let notify = f.get("notify").and_then(|n| {
        let s = cx.string(n, "notify")?;
        match s.as_str() {
            "always" => Some(NotifyPolicy::Always),
            "failures" => Some(NotifyPolicy::Failures),
            "never" => Some(NotifyPolicy::Never),
            other => {
                cx.err(n.pos(), format!("unknown notify policy \"{other}\" (expected always, failures or never)"));
                None
            }
        }
    });
    let devices = f.get("devices").map(|n| cx.string_list(n, "devices")).unwrap_or_default();
    let webhooks = f.get("webhooks").map(|n| cx.string_list(n, "webhooks")).unwrap_or_default();
    let retry = retry_policy(cx, &|k| f.get(k));
    let overlap = f.get("overlap")
        .and_then(|n| {
            let word = cx.string(n, "overlap")?;
            let parsed = Overlap::parse(word.trim());
            if parsed.is_none() {
                cx.err(n.pos(), format!("unknown overlap \"{word}\" (expected skip, queue or replace)"));
            }
            parsed
        })
        .unwrap_or(Overlap::Skip);

    Behaviour { catchup, catchup_within, enabled, notify_missed, ping, notify, devices, webhooks, retry, overlap }
}

/// A `ping:` URL: http(s), with a host, nothing a URL cannot hold; kept without a trailing `/`
/// (the events are appended as `/start`, `/fail`, `/<code>`).
pub(super) fn ping_url(url: &str) -> Result<String, String> {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or(""));
    match (rest, host) {
        (None, _) => Err(format!("`ping` must be an http(s) URL such as https://hc-ping.com/<uuid> (found \"{url}\")")),
        (_, Some("")) => Err(format!("`ping: {url}` has no host")),
        _ if url.chars().any(|c| c.is_whitespace() || c.is_control()) => Err("`ping` must not contain spaces".to_string()),
        _ if url.contains(['?', '#']) => Err("`ping` takes a plain URL (no `?` or `#`): the events are added to its path".to_string()),
        _ => Ok(url.trim_end_matches('/').to_string()),
    }
}

/// The longest `jitter:`.
/// `retries` (0–10), `retry_backoff` (at most 1h), `max_wait` (at most 7 days) and
/// `retry_after_work`.
pub(super) fn retry_policy<'n>(cx: &mut Cx<'_>, get: &dyn Fn(&str) -> Option<&'n Node>) -> RetryPolicy {
    let mut policy = RetryPolicy::default();
    if let Some(node) = get("retries") {
        let text = cx.string(node, "retries").unwrap_or_default();
        match text.trim().parse::<u32>() {
            Ok(n) if n <= RetryPolicy::MAX_RETRIES => policy.retries = Some(n),
            Ok(n) => cx.err(node.pos(), format!("`retries: {n}` is more than {}; a run that fails that often needs a look, not more tries", RetryPolicy::MAX_RETRIES)),
            Err(_) => cx.err(node.pos(), format!("`retries` must be a whole number from 0 to {}, found \"{text}\"", RetryPolicy::MAX_RETRIES)),
        }
    }
    if let Some(d) = get("retry_backoff").and_then(|n| cx.duration(n, "retry_backoff").map(|d| (n, d))) {
        if d.1 > RetryPolicy::MAX_BACKOFF {
            cx.err(d.0.pos(), "`retry_backoff` is at most 1h (backoffs double up to 1h)");
        } else {
            policy.backoff = d.1;
        }
    }
    if let Some(d) = get("max_wait").and_then(|n| cx.duration(n, "max_wait")) {
        policy.max_wait = d;
    }
    if let Some(yes) = get("retry_after_work").and_then(|n| cx.boolean(n, "retry_after_work")) {
        policy.after_work = yes;
    }
    policy
}

