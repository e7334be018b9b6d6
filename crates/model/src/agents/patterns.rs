//! Text patterns the agent CLIs print on auth and rate-limit failures. Used only as a fallback
//! when a process failed without a structured event saying why: a completed run whose report
//! merely *mentions* "login" must stay completed, so callers never apply these to successes.

use crate::words::first_line;
use super::tail::LogTail;
use super::driver::Outcome;
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
    "invalid auth method",
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
    "exceeded your current quota",
    "exhausted your",
];

/// The words of a provider that is overloaded, failing or out of reach — said by the agent after
/// its own retries. Only a failure the agent itself reported is judged by them.
const UNAVAILABLE: &[&str] = &[
    "overloaded",
    "high demand",
    "temporary error",
    "internal server error",
    "an internal error has occurred",
    "\"status\":\"internal\"",
    "\"status\":\"unavailable\"",
    "service unavailable",
    "bad gateway",
    "gateway timeout",
    "server_error",
    "api error: 5",
    "status 5",
    "connection refused",
    "econnrefused",
    "econnreset",
    "connection reset",
    "stream disconnected",
    "fetch failed",
];

pub fn looks_like_api_unavailable(text: &str) -> bool {
    let t = text.to_lowercase();
    UNAVAILABLE.iter().any(|p| t.contains(p))
}

pub fn looks_like_auth_failure(text: &str) -> bool {
    let t = text.to_lowercase();
    AUTH.iter().any(|p| t.contains(p))
}

pub fn looks_like_rate_limit(text: &str) -> bool {
    let t = text.to_lowercase();
    RATE.iter().any(|p| t.contains(p))
}

/// A failed run judged by the words of its failure (`text`) and stderr: a rate limit, auth, an API
/// that was unavailable (only when the agent reported it), else an agent error (`structured`: the agent reported it) or a plain non-zero exit. `known_auth` lets
/// an agent pass what it knows (an exit code that means "not authenticated"). A limit comes before
/// authentication when both show (as agents-cli judges): the account fails over, or the run waits
/// for the reset, instead of being marked revoked.
pub fn failure_from_text(text: &str, stderr: &LogTail, structured: bool, known_auth: bool, now: DateTime<Utc>) -> Outcome {
    let text = strip_ansi(text);
    let all = strip_ansi(&format!("{text}\n{}", stderr.lines.join("\n")));
    let reason = if looks_like_rate_limit(&all) {
        Reason::RateLimited
    } else if known_auth || looks_like_auth_failure(&all) {
        Reason::AuthFailed
    } else if structured && looks_like_api_unavailable(&all) {
        Reason::ApiUnavailable
    } else if structured {
        Reason::AgentError
    } else {
        Reason::ExitNonzero
    };
    let mut o = Outcome::failed(reason, first_line(&text, 300));
    if reason == Reason::RateLimited {
        o.resets_at = reset_time(&all, now);
    }
    o
}

/// Terminal colour and cursor codes (`ESC [ … letter`) removed: agents colour their stderr, and a
/// message is read in a notification, a table or a web page.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                // Parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// This machine's time zone, as agents that print local times see it: `TZ` when set, else the
/// system's zone, else UTC.
pub fn local_zone() -> Tz {
    std::env::var("TZ")
        .ok()
        .and_then(|z| z.trim_start_matches(':').parse().ok())
        .or_else(|| iana_time_zone::get_timezone().ok().and_then(|z| z.parse().ok()))
        .unwrap_or(Tz::UTC)
}

/// When a limit resets, if the text says: Claude's `usage limit reached|<epoch>` or
/// `… limit · resets 3pm (Europe/Berlin)`; Codex's `try again at 3:05 PM` or `try again at Dec 3rd,
/// 2026 11:07 AM` (this machine's local time); Gemini's `"retryDelay": "37s"`.
pub fn reset_time(text: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    reset_time_in(text, now, local_zone())
}

/// [`reset_time`] with the zone that unlabelled local times are in.
pub fn reset_time_in(text: &str, now: DateTime<Utc>, local: Tz) -> Option<DateTime<Utc>> {
    if let Some(t) = try_again_at(text, now, local) {
        return Some(t);
    }
    if let Some(i) = text.find("retryDelay") {
        // `"retryDelay": "37s"` — the number must follow at once (not any digits further on).
        let after = text[i + "retryDelay".len()..].trim_start_matches(['"', '\'', ':', ' ']);
        let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
        if let (Ok(secs), true) = (digits.parse::<i64>(), after[digits.len()..].starts_with('s')) {
            return Some(now + chrono::Duration::seconds(secs));
        }
    }
    if text.contains("daily quota") {
        // Gemini's per-day quotas reset at midnight Pacific time.
        let pacific: Tz = "America/Los_Angeles".parse().ok()?;
        let tomorrow = now.with_timezone(&pacific).date_naive().succ_opt()?;
        return pacific.from_local_datetime(&tomorrow.and_hms_opt(0, 0, 0)?).earliest().map(|t| t.with_timezone(&Utc));
    }
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
    next_at(time, tz, now)
}

/// Codex: "… try again at 3:05 PM." (the next such time) or "… try again at Dec 3rd, 2026 11:07 AM."
fn try_again_at(text: &str, now: DateTime<Utc>, local: Tz) -> Option<DateTime<Utc>> {
    let i = text.find("try again at ")?;
    let rest = text[i + "try again at ".len()..].trim_end_matches(['.', '"', '}', ' ']);
    let rest: String = rest.chars().take_while(|c| *c != '.' && *c != '\n' && *c != '"').collect();
    let words: Vec<&str> = rest.split_whitespace().collect();
    // The last two words are the clock ("3:05 PM"); anything before them is the date.
    let clock = match words.as_slice() {
        [.., t, ampm] if ampm.eq_ignore_ascii_case("am") || ampm.eq_ignore_ascii_case("pm") => parse_clock(&format!("{t}{ampm}"))?,
        [.., t] => parse_clock(t)?,
        [] => return None,
    };
    let date_words = &words[..words.len().saturating_sub(2)];
    if date_words.len() >= 3 {
        // "Dec 3rd, 2026": drop the ordinal suffix and the comma.
        let day: String = date_words[1].chars().take_while(|c| c.is_ascii_digit()).collect();
        let when = format!("{} {} {}", date_words[0], day, date_words[2].trim_end_matches(','));
        let date = chrono::NaiveDate::parse_from_str(&when, "%b %d %Y").ok()?;
        return local.from_local_datetime(&date.and_time(clock)).earliest().map(|t| t.with_timezone(&Utc));
    }
    next_at(clock, local, now)
}

/// The next time the clock in `tz` shows `time` after `now` (today or tomorrow).
fn next_at(time: NaiveTime, tz: Tz, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
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

    #[test]
    fn codex_and_gemini_reset_times() {
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap();
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let msg = "You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 3:05 PM.";
        assert_eq!(reset_time_in(msg, now, berlin), Some(Utc.with_ymd_and_hms(2026, 11, 29, 14, 5, 0).unwrap()));
        // 9:30 AM Berlin is already past (11:00 there): tomorrow.
        assert_eq!(reset_time_in("try again at 9:30 AM.", now, berlin), Some(Utc.with_ymd_and_hms(2026, 11, 30, 8, 30, 0).unwrap()));
        let weekly = "You’ve hit your usage limit. … or try again at Dec 3rd, 2026 11:07 AM.";
        assert_eq!(reset_time_in(weekly, now, berlin), Some(Utc.with_ymd_and_hms(2026, 12, 3, 10, 7, 0).unwrap()));
        assert_eq!(reset_time_in("try again at Dec 21st, 2026 12:00 PM.", now, Tz::UTC), Some(Utc.with_ymd_and_hms(2026, 12, 21, 12, 0, 0).unwrap()));
        let gemini = r#"{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}"#;
        assert_eq!(reset_time_in(gemini, now, Tz::UTC), Some(now + chrono::Duration::seconds(37)));
        assert_eq!(reset_time_in("try again later.", now, Tz::UTC), None);
        assert_eq!(reset_time_in("retryDelayMs: undefined, at line 308062", now, Tz::UTC), None, "no digits from further on");
        // 10:00 UTC = 02:00 in Los Angeles: the daily quota resets at the next Pacific midnight.
        let daily = "[API Error: You have exhausted your daily quota on this model.]";
        assert_eq!(reset_time_in(daily, now, Tz::UTC), Some(Utc.with_ymd_and_hms(2026, 11, 30, 8, 0, 0).unwrap()));
        assert!(looks_like_rate_limit(daily));
    }

    #[test]
    fn ansi_codes_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[31mGemini CLI is not running\u{1b}[0m in a trusted directory"), "Gemini CLI is not running in a trusted directory");
        assert_eq!(strip_ansi("plain"), "plain");
        assert_eq!(strip_ansi("cut \u{1b}["), "cut ");
    }
}
