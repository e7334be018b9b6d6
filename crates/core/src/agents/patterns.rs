//! Text patterns the agent CLIs print on auth and rate-limit failures. Used only as a fallback
//! when a process failed without a structured event saying why: a completed run whose report
//! merely *mentions* "login" must stay completed, so callers never apply these to successes.

use super::{first_line, LogTail, Outcome};
use crate::run::Reason;
use chrono::{DateTime, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

const AUTH: &[&str] = &[
    "please run /login",
    "not logged in",
    "oauth token has expired",
    "oauth token has been revoked",
    "invalid api key",
    "invalid x-api-key",
    "invalid bearer token",
    "authentication_error",
    "authentication_failed",
    "authentication failed",
    "401 unauthorized",
    "status 401",
    "token_expired",
    "refresh token",
    "login required",
    "please login",
    "please log in",
];

const RATE: &[&str] = &[
    "you've hit your",
    "you’ve hit your",
    "usage limit reached",
    "usage limit",
    "rate limit",
    "rate_limit",
    "ratelimit",
    "429 too many requests",
    "too many requests",
    "status 429",
    "resource_exhausted",
    "quota exceeded",
];

pub fn looks_like_auth_failure(text: &str) -> bool {
    let t = text.to_lowercase();
    AUTH.iter().any(|p| t.contains(p))
}

pub fn looks_like_rate_limit(text: &str) -> bool {
    let t = text.to_lowercase();
    RATE.iter().any(|p| t.contains(p))
}

/// A failed run judged by the words of its failure (`text`) and stderr: auth, rate limit, else an
/// agent error (`structured`: the agent reported it) or a plain non-zero exit. `known_auth` lets
/// an agent pass what it knows for sure (an exit code that means "not authenticated").
pub fn failure_from_text(text: &str, stderr: &LogTail, structured: bool, known_auth: bool, now: DateTime<Utc>) -> Outcome {
    let all = format!("{text}\n{}", stderr.lines.join("\n"));
    let reason = if known_auth || looks_like_auth_failure(&all) {
        Reason::AuthFailed
    } else if looks_like_rate_limit(&all) {
        Reason::RateLimited
    } else if structured {
        Reason::AgentError
    } else {
        Reason::ExitNonzero
    };
    let mut o = Outcome::failed(reason, first_line(text, 300));
    if reason == Reason::RateLimited {
        o.resets_at = reset_time(&all, now);
    }
    o
}

/// When a limit resets, if the text says: Claude's `usage limit reached|<epoch>` or
/// `… limit · resets 3pm (Europe/Berlin)`.
pub fn reset_time(text: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if let Some(i) = text.find("limit reached|") {
        let digits: String = text[i + "limit reached|".len()..].chars().take_while(|c| c.is_ascii_digit()).collect();
        if let Ok(epoch) = digits.parse::<i64>() {
            return epoch_to_time(epoch);
        }
    }
    let lower = text.to_lowercase();
    let i = lower.find("resets ")?;
    let rest = &text[i + "resets ".len()..];
    let rest = rest.strip_prefix("at ").unwrap_or(rest);
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == ':').collect();
    let time = parse_clock(&word)?;
    let tz: Tz = rest
        .find('(')
        .and_then(|o| rest[o + 1..].find(')').map(|c| rest[o + 1..o + 1 + c].to_string()))
        .and_then(|z| z.parse().ok())
        .unwrap_or(Tz::UTC);
    let local_now = now.with_timezone(&tz);
    let mut date = local_now.date_naive();
    for _ in 0..2 {
        if let Some(t) = tz.from_local_datetime(&date.and_time(time)).earliest() {
            if t > local_now {
                return Some(t.with_timezone(&Utc));
            }
        }
        date = date.succ_opt()?;
    }
    None
}

/// Seconds or milliseconds since the epoch.
pub fn epoch_to_time(epoch: i64) -> Option<DateTime<Utc>> {
    let secs = if epoch > 100_000_000_000 { epoch / 1000 } else { epoch };
    Utc.timestamp_opt(secs, 0).single()
}

fn parse_clock(word: &str) -> Option<NaiveTime> {
    let w = word.to_lowercase();
    let (body, pm) = match (w.strip_suffix("pm"), w.strip_suffix("am")) {
        (Some(b), _) => (b.to_string(), Some(true)),
        (_, Some(b)) => (b.to_string(), Some(false)),
        _ => (w.clone(), None),
    };
    let (h, m) = match body.split_once(':') {
        Some((h, m)) => (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?),
        None => (body.parse::<u32>().ok()?, 0),
    };
    let h = match pm {
        Some(true) if h < 12 => h + 12,
        Some(false) if h == 12 => 0,
        None if !body.contains(':') => return None,
        _ => h,
    };
    NaiveTime::from_hms_opt(h, m, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_auth_and_limit_texts() {
        assert!(looks_like_auth_failure("Not logged in · Please run /login"));
        assert!(looks_like_auth_failure("API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"}}"));
        assert!(looks_like_rate_limit("You've hit your limit · resets 3pm (Europe/Berlin)"));
        assert!(!looks_like_rate_limit("All checks passed"));
    }

    #[test]
    fn reset_times() {
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap();
        assert_eq!(reset_time("Claude AI usage limit reached|1764410400", now), epoch_to_time(1764410400));
        // 3pm Berlin in winter = 14:00 UTC, later today.
        assert_eq!(
            reset_time("You've hit your limit · resets 3pm (Europe/Berlin)", now),
            Some(Utc.with_ymd_and_hms(2026, 11, 29, 14, 0, 0).unwrap())
        );
        // 9am UTC already passed → tomorrow.
        assert_eq!(reset_time("limit · resets 9am", now), Some(Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap()));
        assert_eq!(reset_time("nothing here", now), None);
    }
}
