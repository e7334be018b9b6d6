//! What runs used, added up: tokens and cost per routine, account or day over a time window —
//! a range of a covering index (`runs_usage`) from the window's start, never the whole history
//! and never the table's rows. Days are the machine's local calendar days, cut exactly at local
//! midnight (one index range per day, so a DST change needs no special case).

use super::Store;
use crate::error::Result;
use crate::words::string_enum;
use chrono::{DateTime, Local, NaiveDate, TimeZone, Utc};
use rusqlite::params;

string_enum!(
    /// How usage is grouped.
    UsageBy as "grouping" {
        Routine = "routine",
        Account = "account",
        /// The machine's local calendar day.
        Day = "day",
        /// The run's final status (every final run counts: missed, skipped and blocked too).
        Status = "status",
    }
);

/// One group's sums. A sum is `None` when no run in the group reported that figure.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct UsageRow {
    /// The routine, the account (`-` for runs without one), the day (`YYYY-MM-DD`) or the status.
    pub key: String,
    pub runs: u64,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

/// One local day's sums for one group (a chart's stacked bar segment).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DayUsage {
    /// `YYYY-MM-DD`, local.
    pub day: String,
    #[serde(flatten)]
    pub usage: UsageRow,
}

/// Runs that ran (not waiting, not a missed or skipped slot, not blocked before starting).
const RAN: &str = "status IN ('completed', 'failed', 'timed_out', 'cancelled')";
/// Runs whose record is final.
const FINAL: &str = "status NOT IN ('queued', 'running')";

fn sql(by: UsageBy) -> String {
    let (key, filter) = match by {
        UsageBy::Routine => ("routine", RAN),
        UsageBy::Account => ("COALESCE(account, '-')", RAN),
        UsageBy::Day => ("''", RAN),
        UsageBy::Status => ("status", FINAL),
    };
    format!(
        "SELECT {key} AS k, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), SUM(cache_write_tokens), SUM(cost_usd)
         FROM runs INDEXED BY runs_usage WHERE sort_ms >= ?1 AND sort_ms < ?2 AND {filter} GROUP BY k"
    )
}

/// Whose spending a budget caps.
#[derive(Debug, Clone, Copy)]
pub enum Spender<'a> {
    All,
    Routine(&'a str),
    /// An account, by its email.
    Account(&'a str),
}

impl Store {
    /// What runs reported spending (their cost) since `since`, by whom (a budget's spend). Runs
    /// still going count once they report.
    pub fn spent(&self, by: Spender<'_>, since: DateTime<Utc>) -> Result<f64> {
        self.cost_since(by, since, None)
    }

    /// What runs reported spending since `since` before run `id` (in history's order): whether
    /// that run carried a budget past a mark.
    pub fn spent_before(&self, by: Spender<'_>, since: DateTime<Utc>, id: &str) -> Result<f64> {
        self.cost_since(by, since, Some(id))
    }

    /// The sum of the reported cost of `by`'s runs since `since` (only those before run `before`
    /// in history's order, when given).
    fn cost_since(&self, by: Spender<'_>, since: DateTime<Utc>, before: Option<&str>) -> Result<f64> {
        let (filter, key) = match by {
            Spender::All => ("?2 IS NULL", None),
            Spender::Routine(name) => ("routine = ?2", Some(name)),
            Spender::Account(email) => ("account = ?2", Some(email)),
        };
        let sql = format!(
            "SELECT COALESCE(SUM(cost_usd), 0) FROM runs INDEXED BY runs_usage WHERE sort_ms >= ?1 AND {filter}
             AND (?3 IS NULL OR (sort_ms, id) < (SELECT sort_ms, id FROM runs WHERE id = ?3))"
        );
        Ok(self.conn().prepare_cached(&sql)?.query_row(rusqlite::params![since.timestamp_millis(), key, before], |r| r.get(0))?)
    }

    /// Usage since `since`, grouped `by` (days oldest first, up to `now` — the engine's clock;
    /// the others by cost, then tokens).
    pub fn usage(&self, by: UsageBy, since: DateTime<Utc>, now: DateTime<Utc>) -> Result<Vec<UsageRow>> {
        if by == UsageBy::Day {
            let days = self.usage_by_day(None, since, now)?;
            return Ok(days.into_iter().map(|d| UsageRow { key: d.day, ..d.usage }).collect());
        }
        let mut rows = self.sums(by, since.timestamp_millis(), i64::MAX)?;
        rows.sort_by(|a, b| {
            let cost = b.cost_usd.partial_cmp(&a.cost_usd).unwrap_or(std::cmp::Ordering::Equal);
            cost.then(b.output_tokens.cmp(&a.output_tokens)).then(a.key.cmp(&b.key))
        });
        Ok(rows)
    }

    /// Per local day from `since` to `until`, each day's sums grouped `by` (routine, account or
    /// status; `None`: the day's total). Oldest first; days without runs are left out.
    pub fn usage_by_day(&self, by: Option<UsageBy>, since: DateTime<Utc>, until: DateTime<Utc>) -> Result<Vec<DayUsage>> {
        let mut out = Vec::new();
        let mut day = since.with_timezone(&Local).date_naive();
        let end = until.with_timezone(&Local).date_naive();
        while day <= end {
            let next = day.succ_opt().unwrap_or(day);
            let from = local_midnight(day).max(since.timestamp_millis());
            let to = local_midnight(next);
            for usage in self.sums(by.unwrap_or(UsageBy::Day), from, to)? {
                let usage = if by.is_none() { UsageRow { key: day.to_string(), ..usage } } else { usage };
                out.push(DayUsage { day: day.to_string(), usage });
            }
            if next == day {
                break;
            }
            day = next;
        }
        Ok(out)
    }

    fn sums(&self, by: UsageBy, from_ms: i64, to_ms: i64) -> Result<Vec<UsageRow>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&sql(by))?;
        let n = |v: Option<i64>| v.map(|x| x.max(0) as u64);
        let rows = stmt.query_map(params![from_ms, to_ms], |r| {
            Ok(UsageRow {
                key: r.get(0)?,
                runs: r.get::<_, i64>(1)?.max(0) as u64,
                input_tokens: n(r.get(2)?),
                output_tokens: n(r.get(3)?),
                cache_read_tokens: n(r.get(4)?),
                cache_write_tokens: n(r.get(5)?),
                cost_usd: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?.into_iter().filter(|r| r.runs > 0).collect())
    }
}

/// The instant (ms) local `day` begins (the earliest, when midnight repeats; the first instant
/// after it when midnight does not exist).
fn local_midnight(day: NaiveDate) -> i64 {
    let mut t = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    for _ in 0..4 {
        if let Some(at) = Local.from_local_datetime(&t).earliest() {
            return at.timestamp_millis();
        }
        t += chrono::Duration::minutes(30);
    }
    t.and_utc().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_a_range_of_the_covering_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let conn = store.conn();
        for by in [UsageBy::Routine, UsageBy::Account, UsageBy::Day, UsageBy::Status] {
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", sql(by)))
                .unwrap()
                .query_map(params![0, 1], |r| r.get::<_, String>(3))
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            let plan = plan.join(" | ");
            // A seek on the window, reading the index alone.
            assert!(plan.starts_with("SEARCH runs USING COVERING INDEX runs_usage (sort_ms>? AND sort_ms<?)"), "{by:?}: {plan}");
        }
    }

    #[test]
    fn days_are_cut_at_local_midnight_and_empty_sums_stay_empty() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let day = Local::now().date_naive() - chrono::Duration::days(2);
        let midnight = local_midnight(day + chrono::Duration::days(1));
        let conn = store.conn();
        for (i, (ms, routine, tokens, status)) in
            [(midnight - 1, "a", Some(10), "completed"), (midnight, "a", None, "completed"), (midnight + 5, "b", Some(7), "failed"), (midnight + 9, "b", None, "missed")].into_iter().enumerate()
        {
            conn.execute(
                "INSERT INTO runs (id, routine, trigger, agent, sort_ms, status, run_dir, input_tokens) VALUES (?1, ?2, 'schedule', 'command', ?3, ?4, '/x', ?5)",
                params![format!("r{i}"), routine, ms, status, tokens],
            )
            .unwrap();
        }
        drop(conn);
        let since = DateTime::from_timestamp_millis(local_midnight(day)).unwrap();
        let days = store.usage_by_day(None, since, Utc::now()).unwrap();
        let got: Vec<(String, u64, Option<u64>)> = days.iter().map(|d| (d.day.clone(), d.usage.runs, d.usage.input_tokens)).collect();
        let d1 = (day + chrono::Duration::days(1)).to_string();
        assert_eq!(got, vec![(day.to_string(), 1, Some(10)), (d1.clone(), 2, Some(7))]);
        let by_status = store.usage_by_day(Some(UsageBy::Status), since, Utc::now()).unwrap();
        let mut statuses: Vec<(String, String, u64)> = by_status.iter().map(|d| (d.day.clone(), d.usage.key.clone(), d.usage.runs)).collect();
        statuses.sort();
        assert_eq!(statuses, vec![(day.to_string(), "completed".into(), 1), (d1.clone(), "completed".into(), 1), (d1.clone(), "failed".into(), 1), (d1, "missed".into(), 1)]);
        let by_routine = store.usage(UsageBy::Routine, since, Utc::now()).unwrap();
        assert_eq!(by_routine.iter().map(|r| (r.key.as_str(), r.runs, r.input_tokens)).collect::<Vec<_>>(), vec![("a", 2, Some(10)), ("b", 1, Some(7))]);
    }
}
