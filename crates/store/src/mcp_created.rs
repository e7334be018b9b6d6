//! Routines agents created through the MCP server, counted for `[mcp] max_created_per_day`. A
//! row, not the routine file, is what counts: a file removed the same day still used the day's
//! allowance.

use super::Store;
use crate::error::Result;
use chrono::{DateTime, Utc};
use rusqlite::params;

impl Store {
    /// Count a routine an agent creates at `at`, if fewer than `most` were created at or after
    /// `since` — the check and the count in one statement, so two agents asking at once cannot
    /// both take the last place. `Ok(None)`: no place left (how many there were); `Ok(Some(id))`:
    /// counted, `id` to take it back with ([`Store::forget_mcp_created`]) if the routine is not
    /// written after all.
    pub fn count_mcp_created(&self, routine: &str, parent_run: Option<&str>, at: DateTime<Utc>, since: DateTime<Utc>, most: u32) -> Result<Result<i64, u32>> {
        let conn = self.conn();
        let inserted = conn
            .prepare_cached("INSERT INTO mcp_created (routine, created_ms, parent_run) SELECT ?1, ?2, ?3 WHERE (SELECT COUNT(*) FROM mcp_created WHERE created_ms >= ?4) < ?5")?
            .execute(params![routine, at.timestamp_millis(), parent_run, since.timestamp_millis(), most])?;
        if inserted == 1 {
            return Ok(Ok(conn.last_insert_rowid()));
        }
        let n: i64 = conn.prepare_cached("SELECT COUNT(*) FROM mcp_created WHERE created_ms >= ?1")?.query_row([since.timestamp_millis()], |r| r.get(0))?;
        Ok(Err(n as u32))
    }

    /// Take back a count whose routine was not written.
    pub fn forget_mcp_created(&self, id: i64) -> Result<()> {
        self.conn().prepare_cached("DELETE FROM mcp_created WHERE rowid = ?1")?.execute([id])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;
    use chrono::{Duration, TimeZone, Utc};

    #[test]
    fn the_last_place_of_the_day_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let noon = Utc.with_ymd_and_hms(2026, 12, 7, 12, 0, 0).unwrap();
        let day_before = noon - Duration::hours(24);
        // One from yesterday no longer counts.
        store.count_mcp_created("old", None, noon - Duration::hours(25), day_before - Duration::hours(1), 2).unwrap().unwrap();
        let first = store.count_mcp_created("a", Some("r1"), noon, day_before, 2).unwrap().unwrap();
        store.count_mcp_created("b", None, noon, day_before, 2).unwrap().unwrap();
        assert_eq!(store.count_mcp_created("c", None, noon, day_before, 2).unwrap(), Err(2), "no third place");
        // A count taken back frees its place.
        store.forget_mcp_created(first).unwrap();
        assert!(store.count_mcp_created("c", None, noon, day_before, 2).unwrap().is_ok());
    }
}
