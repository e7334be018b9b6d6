//! Spending caps: `budget: {run, day, month}` (USD) on a routine, `[budget]` for all runs and
//! `[[accounts]] budget` per account. Spend is what the agents report — the run records' cost —
//! so a cap is only as good as those reports (Claude Code reports its cost; Codex and Gemini CLI
//! do not, and the loader refuses a run cap for them). A day is the routine's calendar day in its
//! zone, a month its calendar month: that is when a budget frees.

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// Caps in US dollars; `None`: no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budget {
    /// What one run may spend: passed to the agent where its CLI has a cap (Claude Code's
    /// `--max-budget-usd`).
    pub run: Option<f64>,
    /// What runs may spend in a calendar day.
    pub day: Option<f64>,
    /// What runs may spend in a calendar month.
    pub month: Option<f64>,
}

impl Budget {
    /// Its day's and month's caps, with their periods.
    pub fn caps(&self) -> [(Period, Option<f64>); 2] {
        [(Period::Day, self.day), (Period::Month, self.month)]
    }

    /// A word for a cap that cannot be a budget (negative, not a number), if one is.
    pub fn problem(&self) -> Option<String> {
        [("run", self.run), ("day", self.day), ("month", self.month)]
            .into_iter()
            .find_map(|(k, v)| v.filter(|v| !v.is_finite() || *v < 0.0).map(|v| format!("`budget.{k}` must be a positive amount in US dollars, found {v}")))
    }

    /// The smaller of two run caps (a routine's and `[budget]`'s).
    pub fn run_cap(a: Option<&Budget>, b: Option<&Budget>) -> Option<f64> {
        [a.and_then(|x| x.run), b.and_then(|x| x.run)].into_iter().flatten().reduce(f64::min)
    }
}

/// A budget's period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Day,
    Month,
}

impl Period {
    /// When the period holding `now` began, in `tz`.
    pub fn start(self, now: DateTime<Utc>, tz: Tz) -> DateTime<Utc> {
        let local = now.with_timezone(&tz).date_naive();
        let first = match self {
            Period::Day => local,
            Period::Month => local.with_day(1).unwrap_or(local),
        };
        midnight(first, tz)
    }

    /// When the period holding `now` ends (the budget frees), in `tz`.
    pub fn end(self, now: DateTime<Utc>, tz: Tz) -> DateTime<Utc> {
        let local = now.with_timezone(&tz).date_naive();
        let next = match self {
            Period::Day => local.succ_opt().unwrap_or(local),
            Period::Month => {
                let (y, m) = if local.month() == 12 { (local.year() + 1, 1) } else { (local.year(), local.month() + 1) };
                NaiveDate::from_ymd_opt(y, m, 1).unwrap_or(local)
            }
        };
        midnight(next, tz)
    }

    fn words(self) -> &'static str {
        match self {
            Period::Day => "today",
            Period::Month => "this month",
        }
    }

    /// `day` or `month`, as `usage --budgets --json` and the window say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Month => "month",
        }
    }
}

/// The first instant of `day` in `tz` (a day that begins in a DST gap begins when the clock
/// resumes).
fn midnight(day: NaiveDate, tz: Tz) -> DateTime<Utc> {
    let naive = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    (0..3)
        .find_map(|h| tz.from_local_datetime(&(naive + chrono::Duration::hours(h))).earliest())
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|| Utc.from_utc_datetime(&naive))
}

/// A cap that is reached: whose it is, how much was spent of how much, and when it frees.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached {
    /// "routine nightly", "all runs", "account work@acme.dev".
    pub scope: String,
    pub period: Period,
    pub spent: f64,
    pub cap: f64,
    pub frees_at: DateTime<Utc>,
}

impl Reached {
    /// "spent $10.40 of $10 today (all runs); frees at midnight Europe/Berlin".
    pub fn words(&self, tz: Tz) -> String {
        let frees = match self.period {
            Period::Day => format!("frees at midnight {}", tz.name()),
            Period::Month => format!("frees on {} {}", self.frees_at.with_timezone(&tz).format("%-d %B"), tz.name()),
        };
        format!("spent {} of {} {} ({}); {frees}", dollars(self.spent), dollars(self.cap), self.period.words(), self.scope)
    }
}

/// `$10`, `$10.40`, `$0.0042` — cents when there are any, more digits below a cent.
pub fn dollars(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.01 {
        format!("${v:.4}")
    } else if (v - v.round()).abs() < 0.005 {
        format!("${v:.0}")
    } else {
        format!("${v:.2}")
    }
}

/// The first of `budget`'s day and month caps that `spent` (what the scope spent since each
/// period began) has reached.
pub fn reached(budget: &Budget, scope: &str, spent: impl Fn(DateTime<Utc>) -> f64, now: DateTime<Utc>, tz: Tz) -> Option<Reached> {
    budget.caps().into_iter().find_map(|(period, cap)| {
        let cap = cap?;
        let spent = spent(period.start(now, tz));
        (spent >= cap).then(|| Reached { scope: scope.to_string(), period, spent, cap, frees_at: period.end(now, tz) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn periods_follow_the_zones_calendar() {
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        // 23:30 UTC on 31 December is already 1 January in Berlin.
        let now = at("2026-12-31T23:30:00Z");
        assert_eq!(Period::Day.start(now, berlin), at("2026-12-31T23:00:00Z"));
        assert_eq!(Period::Month.start(now, berlin), at("2026-12-31T23:00:00Z"));
        assert_eq!(Period::Month.end(now, berlin), at("2027-01-31T23:00:00Z"));
        assert_eq!(Period::Month.start(now, Tz::UTC), at("2026-12-01T00:00:00Z"));
        assert_eq!(Period::Month.end(now, Tz::UTC), at("2027-01-01T00:00:00Z"));
    }

    #[test]
    fn a_reached_cap_says_what_was_spent_and_when_it_frees() {
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let now = at("2026-12-03T10:00:00Z");
        let budget = Budget { run: None, day: Some(10.0), month: Some(100.0) };
        let r = reached(&budget, "all runs", |_| 10.4, now, berlin).unwrap();
        assert_eq!(r.words(berlin), "spent $10.40 of $10 today (all runs); frees at midnight Europe/Berlin");
        assert_eq!(r.frees_at, at("2026-12-03T23:00:00Z"));
        // Under the day's cap, over the month's (spent since the 1st).
        let month = reached(&budget, "routine nightly", |since| if since < at("2026-12-02T00:00:00Z") { 120.0 } else { 3.0 }, now, berlin).unwrap();
        assert_eq!(month.words(berlin), "spent $120 of $100 this month (routine nightly); frees on 1 January Europe/Berlin");
        assert!(reached(&budget, "x", |_| 9.99, now, berlin).is_none());
        assert_eq!(dollars(0.00042), "$0.0004");
        assert_eq!(Budget::run_cap(Some(&Budget { run: Some(2.0), ..Budget::default() }), Some(&Budget { run: Some(1.5), ..Budget::default() })), Some(1.5));
        assert!(Budget { day: Some(-1.0), ..Budget::default() }.problem().is_some());
    }
}
