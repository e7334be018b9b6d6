//! Which runs' files retention may remove, and the mark that they were: the row stays (status,
//! times, cost, usage), so history, usage and `show` stay true after the logs are gone.

use super::Store;
use crate::error::Result;
use crate::words::fmt_time;
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

/// A run whose files retention may remove.
#[derive(Debug, Clone, PartialEq)]
pub struct Prunable {
    pub id: String,
    pub routine: String,
    pub run_dir: String,
}

/// Every routine with runs, one index seek each (a skip-scan of `runs_by_routine`, not a scan of
/// the history).
const ROUTINES: &str = "
    WITH RECURSIVE r(name) AS (
        SELECT MIN(routine) FROM runs
        UNION ALL
        SELECT (SELECT MIN(routine) FROM runs WHERE routine > r.name) FROM r WHERE r.name IS NOT NULL
    )
    SELECT name FROM r WHERE name IS NOT NULL";

/// The key (time, id) of a routine's `?2`-th newest run, counting every run (pruned or not):
/// runs older than it are beyond `keep_runs_per_routine`.
const NTH_NEWEST: &str = "SELECT sort_ms, id FROM runs WHERE routine = ?1 ORDER BY sort_ms DESC, id DESC LIMIT 1 OFFSET ?2 - 1";

/// The routine's newest completed run: its report is the next run's `{last_report}`.
const NEWEST_COMPLETED: &str = "SELECT id FROM runs WHERE routine = ?1 AND status = 'completed' ORDER BY sort_ms DESC, id DESC LIMIT 1";

/// A routine's runs whose files are still there and that are older than the key (`?2`, `?3`),
/// oldest first — a range of the partial index of unpruned runs, so runs pruned long ago are
/// never read again — never one that is waiting or running, never `?4` (the newest completed),
/// never one that finished after `?5` and still owes a notification, a webhook or a push (after a
/// day a notification is only summarised and a webhook given up, neither needs the files).
const OLDER_THAN: &str = "
    SELECT id, run_dir FROM runs r INDEXED BY runs_unpruned
    WHERE routine = ?1 AND pruned_at IS NULL AND (sort_ms < ?2 OR (sort_ms = ?2 AND id < ?3))
      AND status NOT IN ('queued', 'running') AND id != ?4
      AND (finished_at < ?5
           OR ((notified IS NULL OR notified != 'pending')
               AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.run_id = r.id AND o.state = 'pending')))
    ORDER BY sort_ms, id
    LIMIT ?6";

impl Store {
    /// Runs whose files retention may remove — older than `before`, or beyond the newest
    /// `keep_per_routine` of their routine (0 = no count limit) — at most `limit`, routine by
    /// routine. `owed_until`: a run that finished after it and still owes a delivery is left
    /// alone. Each routine costs a few index seeks plus its candidates, whatever the history holds.
    pub fn prunable_runs(&self, before: DateTime<Utc>, keep_per_routine: usize, owed_until: DateTime<Utc>, limit: usize) -> Result<Vec<Prunable>> {
        let conn = self.conn();
        let routines: Vec<String> = conn.prepare_cached(ROUTINES)?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        let mut out = Vec::new();
        for routine in routines {
            if out.len() >= limit {
                break;
            }
            // The newer of the two limits: older than the cutoff, or beyond the count.
            let mut key = (before.timestamp_millis(), String::new());
            if keep_per_routine > 0 {
                let nth: Option<(i64, String)> = conn.prepare_cached(NTH_NEWEST)?.query_row(params![routine, keep_per_routine as i64], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
                if let Some(nth) = nth.filter(|nth| *nth > key) {
                    key = nth;
                }
            }
            let keep: Option<String> = conn.prepare_cached(NEWEST_COMPLETED)?.query_row([&routine], |r| r.get(0)).optional()?;
            let mut stmt = conn.prepare_cached(OLDER_THAN)?;
            let rows = stmt.query_map(params![routine, key.0, key.1, keep.unwrap_or_default(), fmt_time(&owed_until), (limit - out.len()) as i64], |r| {
                Ok(Prunable { id: r.get(0)?, routine: routine.clone(), run_dir: r.get(1)? })
            })?;
            for row in rows {
                out.push(row?);
            }
        }
        Ok(out)
    }

    /// The run's files are gone (its report with them); its row stays.
    pub fn set_pruned(&self, id: &str, at: DateTime<Utc>) -> Result<bool> {
        let n = self.conn().execute("UPDATE runs SET pruned_at = ?2, report_path = NULL WHERE id = ?1 AND pruned_at IS NULL", params![id, fmt_time(&at)])?;
        Ok(n == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::query_plan as plan;

    /// Retention's queries are index seeks and ranges, never a scan of the history.
    #[test]
    fn every_retention_query_seeks() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        for (sql, n) in [(ROUTINES, 0), (NTH_NEWEST, 2), (NEWEST_COMPLETED, 1), (OLDER_THAN, 6)] {
            let p = plan(&store, sql, n);
            assert!(!p.contains("SCAN runs"), "{sql}: {p}");
            assert!(!p.contains("TEMP B-TREE"), "{sql}: {p}");
        }
        assert!(plan(&store, OLDER_THAN, 6).starts_with("SEARCH r USING INDEX runs_unpruned (routine=? AND sort_ms<?)"), "{}", plan(&store, OLDER_THAN, 6));
    }
}
