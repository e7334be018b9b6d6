//! Which runs' files retention may remove, and the mark that they were: the row stays (status,
//! times, cost, usage), so history, usage and `show` stay true after the logs are gone.

use super::Store;
use crate::error::Result;
use crate::run::fmt_time;
use chrono::{DateTime, Utc};
use rusqlite::params;

/// A run whose files retention may remove.
#[derive(Debug, Clone, PartialEq)]
pub struct Prunable {
    pub id: String,
    pub routine: String,
    pub run_dir: String,
}

/// Final runs whose files are still there, older than the cutoff or beyond the newest `keep`
/// of their routine — never one that is waiting or running; never one that finished less than a
/// day ago and still owes a notification, a webhook or a push (after a day a notification is
/// only summarised and a webhook given up, neither needs the files); never the newest completed
/// run of a routine (its report is the next run's `{last_report}`).
const PRUNABLE: &str = "
    SELECT id, routine, run_dir FROM (
        SELECT id, routine, run_dir, sort_ms, status, notified, pruned_at, finished_at,
               ROW_NUMBER() OVER (PARTITION BY routine ORDER BY sort_ms DESC, id DESC) AS nth,
               ROW_NUMBER() OVER (PARTITION BY routine, status = 'completed' ORDER BY sort_ms DESC, id DESC) AS nth_of_kind
        FROM runs
    ) r
    WHERE pruned_at IS NULL
      AND status NOT IN ('queued', 'running')
      AND NOT (status = 'completed' AND nth_of_kind = 1)
      AND (sort_ms < ?1 OR (?2 > 0 AND nth > ?2))
      AND (finished_at < ?4
           OR ((notified IS NULL OR notified != 'pending')
               AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.run_id = r.id AND o.state = 'pending')))
    ORDER BY sort_ms
    LIMIT ?3";

impl Store {
    /// Runs retention may strip of their files (see [`PRUNABLE`]); `keep_per_routine` 0 = no
    /// count limit.
    /// `owed_until`: a run that finished after it and still owes a delivery is left alone.
    pub fn prunable_runs(&self, before: DateTime<Utc>, keep_per_routine: usize, owed_until: DateTime<Utc>, limit: usize) -> Result<Vec<Prunable>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(PRUNABLE)?;
        let rows = stmt.query_map(params![before.timestamp_millis(), keep_per_routine as i64, limit as i64, fmt_time(&owed_until)], |r| {
            Ok(Prunable { id: r.get(0)?, routine: r.get(1)?, run_dir: r.get(2)? })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The run's files are gone (its report with them); its row stays.
    pub fn set_pruned(&self, id: &str, at: DateTime<Utc>) -> Result<bool> {
        let n = self.conn().execute("UPDATE runs SET pruned_at = ?2, report_path = NULL WHERE id = ?1 AND pruned_at IS NULL", params![id, fmt_time(&at)])?;
        Ok(n == 1)
    }
}
