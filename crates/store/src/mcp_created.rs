//! Routines agents created through the MCP server, counted for `[mcp] max_created_per_day`. A
//! row, not the routine file, is what counts: a file removed the same day still used the day's
//! allowance.

use super::Store;
use crate::error::Result;
use chrono::{DateTime, Utc};
use rusqlite::params;

impl Store {
    /// Count a routine an agent created at `at`.
    pub fn note_mcp_created(&self, routine: &str, parent_run: Option<&str>, at: DateTime<Utc>) -> Result<()> {
        self.conn().prepare_cached("INSERT INTO mcp_created (routine, created_ms, parent_run) VALUES (?1, ?2, ?3)")?.execute(params![routine, at.timestamp_millis(), parent_run])?;
        Ok(())
    }

    /// Routines agents created at or after `since`.
    pub fn mcp_created_since(&self, since: DateTime<Utc>) -> Result<u32> {
        let n: i64 = self.conn().prepare_cached("SELECT COUNT(*) FROM mcp_created WHERE created_ms >= ?1")?.query_row([since.timestamp_millis()], |r| r.get(0))?;
        Ok(n as u32)
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;
    use chrono::{Duration, TimeZone, Utc};

    #[test]
    fn created_routines_are_counted_from_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let noon = Utc.with_ymd_and_hms(2026, 12, 7, 12, 0, 0).unwrap();
        store.note_mcp_created("a", None, noon - Duration::hours(13)).unwrap();
        store.note_mcp_created("b", Some("r1"), noon).unwrap();
        store.note_mcp_created("c", None, noon + Duration::minutes(1)).unwrap();
        assert_eq!(store.mcp_created_since(noon).unwrap(), 2);
        assert_eq!(store.mcp_created_since(noon - Duration::days(1)).unwrap(), 3);
    }
}
