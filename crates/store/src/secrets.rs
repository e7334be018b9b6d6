//! The names of the routines' secrets kept in the OS keychain — names and when they were set,
//! never a value (the keychain cannot list its own items, so `secrets list` reads them here).

use super::Store;
use crate::error::Result;
use crate::words::{fmt_time, parse_time};
use chrono::{DateTime, Utc};
use rusqlite::params;

impl Store {
    /// `name` was stored in the keychain at `at`.
    pub fn record_secret(&self, name: &str, at: DateTime<Utc>) -> Result<()> {
        self.conn().prepare_cached("INSERT INTO secrets (name, set_at) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET set_at = ?2")?.execute(params![name, fmt_time(&at)])?;
        Ok(())
    }

    /// `name` was removed from the keychain.
    pub fn forget_secret(&self, name: &str) -> Result<()> {
        self.conn().prepare_cached("DELETE FROM secrets WHERE name = ?1")?.execute([name])?;
        Ok(())
    }

    /// The stored names, by name, with when each was set.
    pub fn secret_names(&self) -> Result<Vec<(String, DateTime<Utc>)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT name, set_at FROM secrets ORDER BY name")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, parse_time(&r.get::<_, String>(1)?).unwrap_or_default())))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
