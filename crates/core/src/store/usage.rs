//! What runs used, added up: tokens and cost per routine, account or day over a time window —
//! an index range from the window's start, never the whole history.

use super::Store;
use crate::error::Result;
use chrono::{DateTime, Utc};
use rusqlite::params;

/// How usage is grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageBy {
    Routine,
    Account,
    /// The machine's local calendar day.
    Day,
}

/// One group's sums. A sum is `None` when no run in the group reported that figure.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct UsageRow {
    /// The routine, the account (`-` for runs without one) or the day (`YYYY-MM-DD`).
    pub key: String,
    pub runs: u64,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
}

/// Runs that ran (not waiting, not a missed or skipped slot, not blocked before starting).
const RAN: &str = "status IN ('completed', 'failed', 'timed_out', 'cancelled')";

fn sql(by: UsageBy) -> String {
    let key = match by {
        UsageBy::Routine => "routine",
        UsageBy::Account => "COALESCE(account, '-')",
        UsageBy::Day => "date(sort_ms / 1000, 'unixepoch', 'localtime')",
    };
    format!(
        "SELECT {key} AS k, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), SUM(cache_write_tokens), SUM(cost_usd)
         FROM runs WHERE sort_ms >= ?1 AND {RAN} GROUP BY k ORDER BY {}",
        if by == UsageBy::Day { "k" } else { "SUM(cost_usd) DESC NULLS LAST, SUM(output_tokens) DESC NULLS LAST, k" }
    )
}

impl Store {
    /// Usage since `since`, grouped `by` (days oldest first; routines and accounts by cost, then
    /// tokens).
    pub fn usage(&self, by: UsageBy, since: DateTime<Utc>) -> Result<Vec<UsageRow>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&sql(by))?;
        let n = |v: Option<i64>| v.map(|x| x.max(0) as u64);
        let rows = stmt.query_map(params![since.timestamp_millis()], |r| {
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
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_a_range_of_the_time_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let conn = store.conn();
        for by in [UsageBy::Routine, UsageBy::Account, UsageBy::Day] {
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", sql(by)))
                .unwrap()
                .query_map(params![0], |r| r.get::<_, String>(3))
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            let plan = plan.join(" | ");
            // A seek on the window's start (by time, or by status then time), never a scan.
            assert!(plan.starts_with("SEARCH runs USING INDEX") && plan.contains("sort_ms>?"), "{by:?}: {plan}");
        }
    }
}
