//! Cron expressions with an IANA time zone. Parsing and next/previous fire times; the scheduler
//! loop and catch-up planning build on these and always pass time in from a [`crate::Clock`].

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

/// A parsed cron expression in a time zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub expr: String,
    pub tz: Tz,
    cron: Cron,
}

impl Schedule {
    /// 5 fields (minute hour day month weekday) or 6 with leading seconds.
    pub fn parse(expr: &str, tz: Tz) -> Result<Schedule, String> {
        let fields = expr.split_whitespace().count();
        if !expr.trim_start().starts_with('@') && !(5..=6).contains(&fields) {
            return Err(format!(
                "invalid cron expression \"{expr}\": expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, found {fields}"
            ));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(expr)
            .map_err(|e| format!("invalid cron expression \"{expr}\": {}", describe_cron_error(&e)))?;
        let schedule = Schedule { expr: expr.to_string(), tz, cron };
        // A valid expression can still name no real time (31 February): say so, don't wait forever.
        if schedule.next_after(chrono::Utc::now()).is_none() {
            return Err(format!("the cron expression \"{expr}\" never fires (no date matches it)"));
        }
        Ok(schedule)
    }

    /// The first fire strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = after.with_timezone(&self.tz);
        self.cron.find_next_occurrence(&local, false).ok().map(|t| t.with_timezone(&Utc))
    }

    /// The next `n` fires strictly after `after`.
    pub fn upcoming(&self, after: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(n);
        let mut t = after;
        while out.len() < n {
            match self.next_after(t) {
                Some(next) => {
                    out.push(next);
                    t = next;
                }
                None => break,
            }
        }
        out
    }
}

/// Serialised as its expression; the zone is the routine's `timezone`.
impl serde::Serialize for Schedule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.expr)
    }
}

impl Schedule {
    /// The fires in `(after, until]`, newest first, at most `keep` of them, plus how many there
    /// were in all (the rest are the oldest).
    pub fn fires_between(&self, after: DateTime<Utc>, until: DateTime<Utc>, keep: usize) -> (Vec<DateTime<Utc>>, usize) {
        let mut newest = std::collections::VecDeque::with_capacity(keep.min(1024));
        let mut total = 0usize;
        let mut t = after;
        while let Some(next) = self.next_after(t) {
            if next > until {
                break;
            }
            total += 1;
            if newest.len() == keep {
                newest.pop_front();
            }
            newest.push_back(next);
            t = next;
        }
        (newest.into_iter().rev().collect(), total)
    }

    /// A short English description ("At 09:00 on Monday through Friday").
    pub fn describe(&self) -> String {
        self.cron.describe()
    }
}

fn describe_cron_error(e: &croner::errors::CronError) -> String {
    use croner::errors::CronError::*;
    match e {
        InvalidPattern(m) | IllegalCharacters(m) | ComponentError(m) => m.trim_end_matches('.').to_string(),
        other => other.to_string(),
    }
}

/// Parse an IANA zone name ("Europe/Berlin").
pub fn parse_tz(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>().map_err(|_| format!("unknown time zone \"{name}\" (expected an IANA name such as Europe/Berlin or UTC)"))
}

/// The machine's zone, or UTC when it cannot be determined.
pub fn local_tz() -> Tz {
    iana_time_zone::get_timezone().ok().and_then(|n| n.parse().ok()).unwrap_or(Tz::UTC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_that_never_fires_is_an_error() {
        let t = std::time::Instant::now();
        let e = Schedule::parse("0 0 31 2 *", Tz::UTC).unwrap_err();
        assert_eq!(e, "the cron expression \"0 0 31 2 *\" never fires (no date matches it)");
        assert!(t.elapsed() < std::time::Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(Schedule::parse("0 0 29 2 *", Tz::UTC).is_ok(), "leap days do come");
    }
    use chrono::TimeZone;

    #[test]
    fn five_and_six_fields() {
        let s = Schedule::parse("0 9 * * 1-5", Tz::UTC).unwrap();
        let fri = Utc.with_ymd_and_hms(2026, 11, 27, 10, 0, 0).unwrap();
        assert_eq!(s.next_after(fri), Some(Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap()));
        let s = Schedule::parse("*/10 * * * * *", Tz::UTC).unwrap();
        let t = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 1).unwrap();
        assert_eq!(s.next_after(t), Some(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 10).unwrap()));
    }

    #[test]
    fn zone_is_respected() {
        let s = Schedule::parse("0 9 * * *", parse_tz("Europe/Berlin").unwrap()).unwrap();
        let t = Utc.with_ymd_and_hms(2026, 7, 1, 0, 0, 0).unwrap();
        // 09:00 CEST is 07:00 UTC.
        assert_eq!(s.next_after(t), Some(Utc.with_ymd_and_hms(2026, 7, 1, 7, 0, 0).unwrap()));
    }

    #[test]
    fn bad_expressions_are_explained() {
        let e = Schedule::parse("0 9 * *", Tz::UTC).unwrap_err();
        assert!(e.contains("expected 5 fields"), "{e}");
        let e = Schedule::parse("61 9 * * *", Tz::UTC).unwrap_err();
        assert!(e.starts_with("invalid cron expression \"61 9 * * *\""), "{e}");
        assert!(parse_tz("Mars/Olympus").unwrap_err().contains("unknown time zone"));
    }
}
