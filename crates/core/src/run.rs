//! The run record: what `--json` prints and the UI receives (a contract: the README's "The CLI" documents it; fields are only ever added).

use chrono::{DateTime, SecondsFormat, Utc};
use crate::routine::AgentKind;
use serde::{Deserialize, Serialize, Serializer};

/// An enum that is stored and sent as a word: declared once with its words, it serialises as
/// them, parses them (`parse`), lists them (`ALL`), and reads and writes them in SQL — an unknown
/// stored word is an error that names it (`as "status"`: what the error calls the value).
macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident $(as $word:literal)? { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[cfg_attr(test, derive(ts_rs::TS))]
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
pub(crate) use string_enum;

string_enum!(
    /// What a run runs: one of the agents, or a shell command.
    RunKind as "agent" { Claude = "claude", Codex = "codex", Gemini = "gemini", Command = "command" }
);

impl RunKind {
    pub fn of(agent: Option<AgentKind>) -> RunKind {
        match agent {
            Some(AgentKind::Claude) => RunKind::Claude,
            Some(AgentKind::Codex) => RunKind::Codex,
            Some(AgentKind::Gemini) => RunKind::Gemini,
            None => RunKind::Command,
        }
    }

    /// The agent, or `None` for a command.
    pub fn agent(self) -> Option<AgentKind> {
        match self {
            RunKind::Claude => Some(AgentKind::Claude),
            RunKind::Codex => Some(AgentKind::Codex),
            RunKind::Gemini => Some(AgentKind::Gemini),
            RunKind::Command => None,
        }
    }
}

string_enum!(
    /// Why a run exists.
    Trigger as "trigger" { Schedule = "schedule", Manual = "manual", Catchup = "catchup", Cli = "cli" }
);

impl Trigger {
    /// The words a person reads ("catch-up"), in notifications and the window.
    pub fn label(self) -> &'static str {
        match self {
            Trigger::Catchup => "catch-up",
            other => other.as_str(),
        }
    }
}

string_enum!(
    RunStatus as "status" {
        Queued = "queued",
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        TimedOut = "timed_out",
        Cancelled = "cancelled",
        Blocked = "blocked",
        Missed = "missed",
        Skipped = "skipped",
    }
);

string_enum!(
    /// The cause behind a status other than `completed`.
    Reason as "reason" {
        AuthFailed = "auth_failed",
        RateLimited = "rate_limited",
        AgentError = "agent_error",
        ExitNonzero = "exit_nonzero",
        SpawnFailed = "spawn_failed",
        Interrupted = "interrupted",
        AuthPreflight = "auth_preflight",
        NoAccount = "no_account",
        Superseded = "superseded",
        ActiveRun = "active_run",
        /// None of the routine's hosts could be reached over SSH (or contact was lost for good).
        HostUnreachable = "host_unreachable",
    }
);

impl RunStatus {
    /// A status that will not change any more.
    pub fn is_final(self) -> bool {
        !matches!(self, RunStatus::Queued | RunStatus::Running)
    }
}

/// One try of a run on one account (failover makes several).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Attempt {
    pub account: Option<String>,
    pub status: RunStatus,
    pub reason: Option<Reason>,
    pub message: Option<String>,
    #[serde(serialize_with = "ser_opt_time")]
    pub resets_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RunRecord {
    pub id: String,
    pub routine: String,
    pub trigger: Trigger,
    #[serde(serialize_with = "ser_opt_time")]
    pub scheduled_for: Option<DateTime<Utc>>,
    #[serde(serialize_with = "ser_opt_time")]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "ser_opt_time")]
    pub finished_at: Option<DateTime<Utc>>,
    pub status: RunStatus,
    pub reason: Option<Reason>,
    pub message: Option<String>,
    pub exit_code: Option<i32>,
    pub account: Option<String>,
    #[serde(serialize_with = "ser_opt_time")]
    pub resets_at: Option<DateTime<Utc>>,
    pub attempts: Vec<Attempt>,
    pub duration_ms: Option<u64>,
    pub cost_usd: Option<f64>,
    pub session_id: Option<String>,
    pub report_path: Option<String>,
    /// `claude`, `codex`, `gemini` or `command`.
    pub agent: RunKind,
    /// Where stdout.log, stderr.log and report.md live.
    pub run_dir: String,
    /// For a run held by a sign-in failure: the run that made it up once the account worked again.
    pub made_up_by: Option<String>,
    /// Its finish notification: `pending`, `delivered`, `not_delivered` or `summarized`; `null`
    /// when none is due (the routine's `notify:` policy, or a missed/skipped slot).
    pub notified: Option<String>,
    /// What the run changed in its git workspace — files with +/−, commits, the branch of a
    /// worktree run and its push; `null` for a run outside git.
    pub changes: Option<crate::workspace::Changes>,
    /// Tokens (input, output, cache read, cache write) and model from the agent's own final
    /// event; `null` when it gave none (a command, a run that never started). A figure the agent
    /// did not give is `null`, never 0.
    pub usage: Option<crate::agents::Usage>,
    /// When retention removed the run's files (logs, report); the record itself stays.
    #[serde(serialize_with = "ser_opt_time")]
    pub pruned_at: Option<DateTime<Utc>>,
    /// The machine it ran on over SSH (a routine's `host:`); `null` for a run on this machine.
    pub host: Option<String>,
}

#[cfg(test)]
impl RunRecord {
    /// A finished Claude run of `pr-review` on work@acme.dev, for unit tests to adjust.
    pub(crate) fn sample(status: RunStatus, reason: Option<Reason>) -> RunRecord {
        RunRecord {
            id: "r1".into(),
            routine: "pr-review".into(),
            trigger: Trigger::Schedule,
            scheduled_for: None,
            started_at: None,
            finished_at: None,
            status,
            reason,
            message: None,
            exit_code: None,
            account: Some("work@acme.dev".into()),
            resets_at: None,
            attempts: Vec::new(),
            duration_ms: None,
            cost_usd: None,
            session_id: None,
            report_path: None,
            agent: RunKind::Claude,
            run_dir: "/x".into(),
            made_up_by: None,
            notified: None,
            changes: None,
            usage: None,
            pruned_at: None,
            host: None,
        }
    }
}

/// RFC 3339 in UTC with milliseconds — the one time format of every payload.
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

/// A new run id: a ULID (sortable by creation time), lower-cased for paths.
pub fn new_run_id() -> String {
    ulid::Ulid::new().to_string().to_lowercase()
}

#[cfg(test)]
mod time_tests {
    use super::*;

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
