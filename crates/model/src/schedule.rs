//! Cron expressions with an IANA time zone. Parsing and next/previous fire times; the scheduler
//! loop and catch-up planning build on these and always pass time in from a [`crate::Clock`].

use chrono::{DateTime, Datelike, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

/// A validated cron expression in a time zone.
///
/// Only the expression is kept: croner's parsed form carries a 5000-entry year table (~5 KB), so a
/// thousand routines held all day by the daemon or the app cost 5 MB for nothing. It is parsed
/// again (microseconds) where fire times are computed — once per slot per routine when idle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub expr: String,
    pub tz: Tz,
    /// `jitter:` — each fire moved later by its own fixed offset within this span.
    pub jitter: Option<Jitter>,
}

/// A routine's `jitter:`: each fire of its expression starts at an offset within `span` that is
/// derived from the routine's name and the fire itself — so every engine on the home, and every
/// run of the app, computes the same start, and a slot is still claimed exactly once. An offset
/// is always shorter than the time to the expression's next fire: slots keep their order and a
/// slot's start never passes the next one's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jitter {
    pub span: std::time::Duration,
    seed: u64,
}

impl Jitter {
    /// How much later than the expression's fire `t` its slot starts (whole seconds), `next`
    /// being the fire after it.
    pub fn offset(&self, t: DateTime<Utc>, next: Option<DateTime<Utc>>) -> chrono::Duration {
        let gap = next.map(|n| (n - t).num_seconds()).unwrap_or(i64::MAX);
        let bound = (self.span.as_secs() as i64).min(gap);
        if bound <= 0 {
            return chrono::Duration::zero();
        }
        let h = fnv1a(self.seed, &t.timestamp().to_le_bytes());
        chrono::Duration::seconds((h % bound as u64) as i64)
    }
}

/// FNV-1a: a hash that is the same on every platform and build (std's is not promised to be).
fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(seed, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Years ahead a fire is looked for. Every weekday/leap-day combination recurs within 28 years, so
/// an expression that fires at all fires within this window.
const YEARS_AHEAD: i32 = 28;

/// Parse for fire times around `year`: croner fills a table of all 5000 years for the implicit `*`
/// year (most of the time of a parse, which every routine list and scheduler start pays per
/// routine); this names the years from `year - 1` to `year + YEARS_AHEAD` instead. Same fires in
/// that window. `@nicknames` are parsed as they are.
fn parse_cron_around(expr: &str, year: i32) -> Result<(Cron, Option<(i32, i32)>), croner::errors::CronError> {
    let parts: Vec<&str> = expr.split_whitespace().collect();
    if expr.trim_start().starts_with('@') || !(5..=6).contains(&parts.len()) {
        return parse_cron(expr).map(|c| (c, None));
    }
    let (from, to) = ((year - 1).max(croner::YEAR_LOWER_LIMIT), (year + YEARS_AHEAD).min(croner::YEAR_UPPER_LIMIT));
    let seconds = if parts.len() == 5 { "0 " } else { "" };
    let pattern = format!("{seconds}{} {from}-{to}", parts.join(" "));
    let cron = CronParser::builder().seconds(Seconds::Optional).year(Year::Optional).build().parse(&pattern)?;
    Ok((cron, Some((from, to))))
}

fn parse_cron(expr: &str) -> Result<Cron, croner::errors::CronError> {
    CronParser::builder().seconds(Seconds::Optional).year(Year::Disallowed).build().parse(expr)
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
        let now = chrono::Utc::now();
        let (cron, _) = parse_cron_around(expr, now.year()).map_err(|e| format!("invalid cron expression \"{expr}\": {}", describe_cron_error(&e)))?;
        let schedule = Schedule { expr: expr.to_string(), tz, jitter: None };
        // A valid expression can still name no real time (31 February): say so, don't wait forever.
        if schedule.next_with(&cron, now).is_none() {
            return Err(format!("the cron expression \"{expr}\" never fires (no date matches it)"));
        }
        Ok(schedule)
    }

    /// The expression parsed for fires from `after` on (validated when the schedule was made, so
    /// this cannot fail then).
    fn cron(&self, after: DateTime<Utc>) -> Option<Cron> {
        parse_cron_around(&self.expr, after.with_timezone(&self.tz).year()).ok().map(|(c, _)| c)
    }

    /// The same schedule with `jitter:` (`routine` seeds the offsets).
    pub fn with_jitter(self, span: std::time::Duration, routine: &str) -> Schedule {
        let seed = fnv1a(0xcbf2_9ce4_8422_2325, routine.as_bytes());
        Schedule { jitter: Some(Jitter { span, seed }), ..self }
    }

    /// The first fire strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.starts(after)?.next()
    }

    fn next_with(&self, cron: &Cron, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = after.with_timezone(&self.tz);
        cron.find_next_occurrence(&local, false).ok().map(|t| t.with_timezone(&Utc))
    }

    /// The next `n` fires strictly after `after`.
    pub fn upcoming(&self, after: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        self.starts(after).map(|s| s.take(n).collect()).unwrap_or_default()
    }

    /// The expression's own fire that the start `start` belongs to (`start` itself without
    /// jitter): the latest fire at or before it.
    pub fn fire_of(&self, start: DateTime<Utc>) -> DateTime<Utc> {
        let Some(from) = self.reach().and_then(|span| start.checked_sub_signed(span)) else { return start };
        let Some(cron) = self.cron(from) else { return start };
        let (mut t, mut fire) = (from, start);
        while let Some(f) = self.next_with(&cron, t).filter(|f| *f <= start) {
            (t, fire) = (f, f);
        }
        fire
    }

    /// How long before its start a fire can be: the jitter's span (`None` without jitter).
    fn reach(&self) -> Option<chrono::Duration> {
        self.jitter.and_then(|j| chrono::Duration::from_std(j.span).ok())
    }

    /// The fires strictly after `after`, in order: the expression's, each moved by its jitter.
    fn starts(&self, after: DateTime<Utc>) -> Option<Starts<'_>> {
        // A fire up to a span before `after` may start after it.
        let from = self.reach().and_then(|span| after.checked_sub_signed(span)).unwrap_or(after);
        let cron = self.cron(from)?;
        let fire = self.next_with(&cron, from);
        Some(Starts { schedule: self, cron, fire, after })
    }
}

/// [`Schedule::starts`]: walks the expression's fires, yields their starts after `after`.
struct Starts<'a> {
    schedule: &'a Schedule,
    cron: Cron,
    fire: Option<DateTime<Utc>>,
    after: DateTime<Utc>,
}

impl Iterator for Starts<'_> {
    type Item = DateTime<Utc>;

    fn next(&mut self) -> Option<DateTime<Utc>> {
        loop {
            let fire = self.fire?;
            self.fire = self.schedule.next_with(&self.cron, fire);
            let start = match self.schedule.jitter {
                Some(j) => fire + j.offset(fire, self.fire),
                None => fire,
            };
            if start > self.after {
                return Some(start);
            }
        }
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
        let Some(starts) = self.starts(after) else { return (Vec::new(), 0) };
        for next in starts.take_while(|t| *t <= until) {
            total += 1;
            if newest.len() == keep {
                newest.pop_front();
            }
            newest.push_back(next);
        }
        (newest.into_iter().rev().collect(), total)
    }

    /// Every fire in `(after, until]`, newest first — the same as [`Schedule::fires_between`]
    /// without a limit, and several times faster over a long window (`why` over 90 days of a
    /// per-minute routine): away from daylight-saving changes a 5-field expression's fires are
    /// found by testing each minute against the pattern at the zone's fixed offset, which costs
    /// a fraction of croner's next-fire search per fire; within a day of a change (and for
    /// expressions with seconds or `@nicknames`) croner's own search decides, so gaps and repeated
    /// hours fire exactly as the scheduler fires them.
    pub fn all_fires_between(&self, after: DateTime<Utc>, until: DateTime<Utc>) -> Vec<DateTime<Utc>> {
        use chrono::{Duration, Offset, TimeZone};
        let plain = !self.expr.trim_start().starts_with('@') && self.expr.split_whitespace().count() == 5;
        let Some(cron) = self.cron(after).filter(|_| plain && self.jitter.is_none() && until - after > Duration::days(1)) else {
            return self.fires_between(after, until, usize::MAX).0;
        };
        let offset = |t: DateTime<Utc>| self.tz.offset_from_utc_datetime(&t.naive_utc()).fix();
        let mut oldest_first = Vec::new();
        let mut t = after;
        while t < until {
            let end = (t + Duration::hours(6)).min(until);
            let fixed = offset(t);
            let steady = [t - Duration::days(1), end, end + Duration::days(1)].into_iter().all(|x| offset(x) == fixed);
            if steady {
                // The first whole minute strictly after t.
                let mut m = DateTime::<Utc>::from_timestamp(t.timestamp().div_euclid(60) * 60 + 60, 0).unwrap_or(end);
                while m <= end {
                    if cron.is_time_matching(&m.with_timezone(&fixed)).unwrap_or(false) {
                        oldest_first.push(m);
                    }
                    m += Duration::minutes(1);
                }
            } else {
                let (mut fires, _) = self.fires_between(t, end, usize::MAX);
                fires.reverse();
                oldest_first.extend(fires);
            }
            t = end;
        }
        oldest_first.reverse();
        oldest_first
    }

    /// The schedule in words as Nightshift shows it: croner's description, shorter ("At 09:00, on
    /// Monday, Tuesday, Wednesday, Thursday, and Friday." → "At 09:00 on weekdays").
    pub fn words(&self) -> String {
        self.describe()
            .trim_end_matches('.')
            .replace("Monday, Tuesday, Wednesday, Thursday, and Friday", "weekdays")
            .replace("Saturday and Sunday", "weekends")
            .replace(", on ", " on ")
            .replace(", every ", " every ")
    }

    /// croner's English description ("At 09:00, on Monday, …").
    pub fn describe(&self) -> String {
        if let Some(words) = daily_at(&self.expr) {
            return words;
        }
        self.describe_with_croner()
    }

    fn describe_with_croner(&self) -> String {
        // The year window is ours, not the user's: left out of the words.
        match parse_cron_around(&self.expr, chrono::Utc::now().year()) {
            Ok((cron, Some((from, to)))) => cron.describe().replace(&format!(", in year {from}-{to}"), ""),
            Ok((cron, None)) => cron.describe(),
            Err(_) => String::new(),
        }
    }
}

/// croner's words for the commonest shape, "M H * * *" (every day at one time), without building
/// and walking its pattern: listing 1000 routines spent 40% of its time in croner's `describe`.
/// The same words as croner's (`daily_words_are_croners_own` compares every minute of the day).
fn daily_at(expr: &str) -> Option<String> {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let [minute, hour, "*", "*", "*"] = fields.as_slice() else { return None };
    let number = |field: &str, max: u16| -> Option<u16> {
        let n = field.parse::<u16>().ok().filter(|_| field.bytes().all(|b| b.is_ascii_digit()))?;
        (n <= max).then_some(n)
    };
    Some(format!("At {:02}:{:02}.", number(hour, 23)?, number(minute, 59)?))
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
    fn daily_words_are_croners_own() {
        for hour in 0..24 {
            for minute in 0..60 {
                for expr in [format!("{minute} {hour} * * *"), format!("{minute:02} {hour:02} * * *")] {
                    let s = Schedule { expr: expr.clone(), tz: Tz::UTC, jitter: None };
                    assert_eq!(daily_at(&expr).as_deref(), Some(s.describe_with_croner().as_str()), "{expr}");
                }
            }
        }
        // Every other shape is croner's alone.
        for expr in ["0 3 * * 1", "60 3 * * *", "0 24 * * *", "*/5 * * * *", "0 3,4 * * *", "0 0 3 * * *", "+1 3 * * *", "@daily"] {
            assert_eq!(daily_at(expr), None, "{expr}");
        }
        assert_eq!(Schedule::parse("30 9 * * *", Tz::UTC).unwrap().words(), "At 09:30");
    }

    #[test]
    fn an_expression_that_never_fires_is_an_error() {
        let t = std::time::Instant::now();
        let e = Schedule::parse("0 0 31 2 *", Tz::UTC).unwrap_err();
        assert_eq!(e, "the cron expression \"0 0 31 2 *\" never fires (no date matches it)");
        assert!(t.elapsed() < std::time::Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(Schedule::parse("0 0 29 2 *", Tz::UTC).is_ok(), "leap days do come");
    }
    use chrono::TimeZone;

    /// The year-window parse gives exactly the fires and the words of croner's own full parse.
    #[test]
    fn the_year_window_changes_nothing_a_user_sees() {
        let exprs = ["0 9 * * 1-5", "*/10 * * * * *", "0 0 29 2 *", "0 0 29 2 1", "0 0 13 * 5", "30 2 L * *", "0 0 1 1 *", "@hourly", "@yearly", "15 3 * * 0#2"];
        let starts = [Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap(), Utc.with_ymd_and_hms(2027, 12, 31, 23, 59, 59).unwrap(), Utc.with_ymd_and_hms(2044, 2, 28, 0, 0, 0).unwrap()];
        for expr in exprs {
            let full = parse_cron(expr).unwrap();
            for tz in [Tz::UTC, Tz::Europe__Berlin, Tz::America__Los_Angeles] {
                let s = Schedule::parse(expr, tz).unwrap();
                for start in starts {
                    let mut t = start;
                    for _ in 0..5 {
                        let want = full.find_next_occurrence(&t.with_timezone(&tz), false).ok().map(|x| x.with_timezone(&Utc));
                        let got = s.next_after(t);
                        assert_eq!(got, want, "{expr} in {tz} after {t}");
                        t = got.unwrap();
                    }
                }
            }
            assert_eq!(Schedule::parse(expr, Tz::UTC).unwrap().describe(), full.describe(), "{expr}");
        }
    }

    /// The minute-matching path gives exactly croner's fires, across daylight-saving changes of
    /// whole and half hours, in zones without them, and for expressions of every shape.
    #[test]
    fn all_fires_between_is_croner_exactly() {
        let exprs = ["* * * * *", "*/7 * * * *", "30 2 * * *", "0 1-3 * * *", "15 9 * * 1-5", "0 0 L * *", "0 12 * * 0#2", "*/10 * * * * *", "@hourly"];
        let zones = [Tz::UTC, Tz::Europe__Berlin, Tz::America__New_York, Tz::Australia__Lord_Howe, Tz::Asia__Kolkata];
        let windows = [
            (Utc.with_ymd_and_hms(2026, 2, 20, 13, 17, 29).unwrap(), 60),
            (Utc.with_ymd_and_hms(2026, 9, 15, 0, 0, 0).unwrap(), 60),
            (Utc.with_ymd_and_hms(2026, 12, 30, 23, 59, 0).unwrap(), 3),
        ];
        for expr in exprs {
            for tz in zones {
                let s = Schedule::parse(expr, tz).unwrap();
                for (from, days) in windows {
                    let until = from + chrono::Duration::days(if expr.starts_with("*/10") { 2 } else { days });
                    let want = s.fires_between(from, until, usize::MAX).0;
                    assert_eq!(s.all_fires_between(from, until), want, "{expr} in {tz} from {from}");
                }
            }
        }
    }

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

    /// `jitter:` moves each fire later by a fixed offset within the span (never up to the next
    /// fire), the same for every engine, different per routine; every way of asking for fires
    /// agrees on the starts.
    #[test]
    fn jitter_spreads_routines_the_same_way_everywhere() {
        let hour = std::time::Duration::from_secs(3600);
        let day = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
        let nominal = Utc.with_ymd_and_hms(2026, 12, 1, 2, 0, 0).unwrap();
        let mut quarters = [0; 4];
        for i in 0..100 {
            let name = format!("routine-{i}");
            let s = Schedule::parse("0 2 * * *", Tz::UTC).unwrap().with_jitter(hour, &name);
            let again = Schedule::parse("0 2 * * *", Tz::UTC).unwrap().with_jitter(hour, &name);
            let start = s.next_after(day).unwrap();
            assert_eq!(again.next_after(day), Some(start), "the same start for every engine");
            assert!(start >= nominal && start < nominal + chrono::Duration::hours(1), "{start}");
            quarters[((start - nominal).num_minutes() / 15) as usize] += 1;
            assert_eq!(s.fire_of(start), nominal, "the start belongs to the 02:00 fire");
            // Asked from just after the expression's own fire, the jittered start is still ahead.
            if start > nominal {
                assert_eq!(s.next_after(nominal), Some(start));
            }
            assert_eq!(s.upcoming(day, 3), s.fires_between(day, day + chrono::Duration::days(3), 3).0.into_iter().rev().collect::<Vec<_>>());
            assert_eq!(s.fires_between(start - chrono::Duration::seconds(1), start, 10), (vec![start], 1));
            assert_eq!(s.fires_between(start, start + chrono::Duration::hours(1), 10), (vec![], 0), "a start is due once");
        }
        assert!(quarters.iter().all(|n| (10..=40).contains(n)), "100 routines over an hour, by quarter: {quarters:?}");
        // A span longer than the gap between fires is held below it: every minute still fires once,
        // in order.
        let s = Schedule::parse("* * * * *", Tz::UTC).unwrap().with_jitter(hour, "busy");
        let (starts, total) = s.fires_between(day, day + chrono::Duration::hours(1), 100);
        assert!((59..=61).contains(&total), "{total}");
        assert!(starts.windows(2).all(|w| w[0] > w[1]), "newest first, in order");
        assert!(starts.iter().any(|t| t.timestamp() % 60 != 0), "moved within the minute");
        // Without jitter nothing moves.
        let plain = Schedule::parse("0 2 * * *", Tz::UTC).unwrap();
        assert_eq!(plain.next_after(day), Some(nominal));
    }
}
