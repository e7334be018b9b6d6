//! The ground floor of words every other module speaks: how an enum is stored and sent as a
//! word (`string_enum!`); the agent — the one enum that names who does a run's work, shared by
//! routines, run records, settings, accounts and the drivers; an account's verdict; the one time
//! format of every payload and the one short form of a duration. Nothing here imports another
//! module of the crate.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serializer;

/// An enum that is stored and sent as a word: declared once with its words, it serialises as
/// them, parses them (`parse`), lists them (`ALL`), and reads and writes them in SQL — an unknown
/// stored word is an error that names it (`as "status"`: what the error calls the value).
#[macro_export]
macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident $(as $word:literal)? { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $variant),+ }
        impl $name {
            #[allow(dead_code)] // (every word, for the faces and tests; not every enum has a use for it)
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str { match self { $($name::$variant => $text),+ } }
            pub fn parse(s: &str) -> Option<Self> { match s { $($text => Some($name::$variant),)+ _ => None } }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(self.as_str()) }
        }
        /// Stored as its word.
        impl rusqlite::types::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> { Ok(self.as_str().into()) }
        }
        /// Read back from its word; any other is a loud error naming the value, never a default.
        impl rusqlite::types::FromSql for $name {
            fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
                let s = v.as_str()?;
                $name::parse(s).ok_or_else(|| {
                    let word = [$($word,)? stringify!($name)][0];
                    rusqlite::types::FromSqlError::Other(format!("unknown {word} \"{s}\" in the run history (written by a newer Nightshift, or a damaged row)").into())
                })
            }
        }
    };
}
pub use string_enum;

string_enum!(
    /// Who does a run's work: one of the agent CLIs Nightshift drives, or `command` (a shell
    /// command). The routine's `agent:`, the run record's `agent`, `[agents.<word>]` in the
    /// settings, the accounts and the drivers (`agents::driver`) all use this one word; a new
    /// agent is one more word here and one module in `agents/`.
    Agent as "agent" { Claude = "claude", Codex = "codex", Gemini = "gemini", #[serde(rename = "opencode")] OpenCode = "opencode", Copilot = "copilot", Command = "command" }
);

impl Agent {
    /// The agent CLIs — every word but `command`: what a routine's `agent:` and an account may name.
    pub const CLIS: &'static [Agent] = &[Agent::Claude, Agent::Codex, Agent::Gemini, Agent::OpenCode, Agent::Copilot];

    /// The agent CLI, or `None` for a shell command (which has no accounts, no login, no model).
    pub fn cli(self) -> Option<Agent> {
        (self != Agent::Command).then_some(self)
    }

    /// The CLIs' words for a message: "claude, codex, gemini, opencode or copilot".
    pub fn cli_words() -> String {
        let words: Vec<&str> = Agent::CLIS.iter().map(|a| a.as_str()).collect();
        match words.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// One of [`Agent::CLIS`] by its word (`command` is not one).
    pub fn parse_cli(word: &str) -> Option<Agent> {
        Agent::parse(word).and_then(Agent::cli)
    }
}

string_enum!(
    /// An account's auth health.
    Verdict {
        /// The last run on it authenticated.
        Live = "live",
        /// A credential is present and not expired.
        Ok = "ok",
        /// Expires within 72 h.
        Expiring = "expiring",
        Expired = "expired",
        /// A run failed `auth_failed` on it (or its sign-in check before a scheduled run was
        /// refused) since its last success.
        Revoked = "revoked",
        /// Until `resets_at`.
        RateLimited = "rate_limited",
        /// No credential, or the keychain is unavailable.
        Unconfigured = "unconfigured",
        Unknown = "unknown",
    }
);

impl Verdict {
    /// Preflight refuses to start a run on these; every other verdict fails open.
    pub fn blocks(self) -> bool {
        matches!(self, Verdict::Revoked | Verdict::Unconfigured)
    }
    /// Runs on it cannot authenticate until someone signs it in again (Re-login is the fix).
    pub fn needs_login(self) -> bool {
        matches!(self, Verdict::Revoked | Verdict::Unconfigured | Verdict::Expired)
    }
    /// Fit to be chosen from a pool.
    pub fn healthy(self) -> bool {
        matches!(self, Verdict::Live | Verdict::Ok | Verdict::Expiring | Verdict::Unknown)
    }
}

/// A duration the short way, everywhere a person reads one (notifications, the CLI):
/// "850ms", "42s", "4m 12s", "2h 05m".
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms}ms"),
        1..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// RFC 3339 in UTC with milliseconds — the one time format of every payload.
/// "Mon 30 Nov 09:00" in the routine's zone.
pub fn local_day_time(t: DateTime<Utc>, tz: chrono_tz::Tz) -> String {
    t.with_timezone(&tz).format("%a %-d %b %H:%M").to_string()
}

/// "01:10–07:55" within a day, else "Sat 28 Nov 01:10 – Mon 30 Nov 07:55".
pub fn time_range(a: DateTime<Utc>, b: DateTime<Utc>, tz: chrono_tz::Tz) -> String {
    let (la, lb) = (a.with_timezone(&tz), b.with_timezone(&tz));
    if la.date_naive() == lb.date_naive() {
        format!("{}–{}", la.format("%H:%M"), lb.format("%H:%M"))
    } else {
        format!("{} – {}", local_day_time(a, tz), local_day_time(b, tz))
    }
}

pub fn fmt_time(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Serialise a time in the one payload format ([`fmt_time`]).
pub fn ser_time<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&fmt_time(t))
}

pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    parse_stored_time(s).or_else(|| DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc)))
}

/// The one format Nightshift writes ([`fmt_time`]: `2026-11-30T09:00:00.000Z`), read digit by
/// digit — history views decode a time per row, and the general RFC 3339 parser is several
/// times slower. Anything else is left to that parser.
fn parse_stored_time(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    if b.len() != 24 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' || b[19] != b'.' || b[23] != b'Z' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0u32, |n, c| c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0')))
    };
    let date = chrono::NaiveDate::from_ymd_opt(num(0, 4)? as i32, num(5, 7)?, num(8, 10)?)?;
    let time = date.and_hms_milli_opt(num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 23)?)?;
    Some(time.and_utc())
}

/// Serialise an optional time in the one payload format ([`fmt_time`]).
pub fn ser_opt_time<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&fmt_time(t)),
        None => s.serialize_none(),
    }
}

/// A name an environment variable can have (and a secret's name must: it becomes one): ASCII
/// letters, digits and `_`, not starting with a digit.
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The first line of `text`, trimmed and cut to `max` characters — for messages and summaries.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if line.chars().count() > max {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// The longest `timeout` a routine may have.
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_the_short_way() {
        let cases = [(850, "850ms"), (42_400, "42s"), (252_000, "4m 12s"), (7_500_000, "2h 05m")];
        for (ms, text) in cases {
            assert_eq!(duration(ms), text);
        }
    }

    #[test]
    fn the_clis_are_every_agent_word_but_command() {
        let others: Vec<Agent> = Agent::ALL.iter().copied().filter(|a| *a != Agent::Command).collect();
        assert_eq!(Agent::CLIS, others.as_slice());
        assert_eq!(Agent::cli_words(), "claude, codex, gemini, opencode or copilot");
        assert_eq!((Agent::parse_cli("codex"), Agent::parse_cli("command")), (Some(Agent::Codex), None));
    }

    #[test]
    fn stored_times_read_back_exactly_and_other_forms_still_parse() {
        for ms in [0i64, 1_764_493_200_123, 4_102_444_799_999, 951_782_400_000] {
            let t = DateTime::<Utc>::from_timestamp_millis(ms).unwrap();
            assert_eq!(parse_time(&fmt_time(&t)), Some(t), "{}", fmt_time(&t));
        }
        assert_eq!(parse_time("2026-11-30T10:00:00+01:00"), DateTime::from_timestamp(1_796_029_200, 0));
        assert_eq!(parse_time("2026-11-30T09:00:00Z"), DateTime::from_timestamp(1_796_029_200, 0));
        assert_eq!(parse_time("2026-02-30T09:00:00.000Z"), None);
        assert_eq!(parse_time("2026-11-30T09:00:0x.000Z"), None);
    }
}
