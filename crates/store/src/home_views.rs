//! What this machine knows of the other homes it views (`[[homes]]`): when each last answered,
//! and which of its runs' finishes were told here — so each is told once per viewer, also after
//! the viewer slept, lost the connection or was restarted mid-run.

use super::Store;
use crate::error::Result;
use crate::words::{fmt_time, parse_time};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

/// One viewed home's place.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HomeView {
    /// When it last answered here.
    pub last_seen: Option<DateTime<Utc>>,
    /// Finishes from this time on are told (set when the home was first seen: its past is not news).
    pub told_from: Option<DateTime<Utc>>,
}

impl Store {
    pub fn home_view(&self, home: &str) -> Result<HomeView> {
        let row = self
            .conn()
            .prepare_cached("SELECT last_seen, told_from FROM home_views WHERE home = ?1")?
            .query_row([home], |r| Ok((r.get::<_, Option<String>>(0)?, r.get::<_, Option<String>>(1)?)))
            .optional()?;
        Ok(row.map(|(seen, from)| HomeView { last_seen: seen.as_deref().and_then(parse_time), told_from: from.as_deref().and_then(parse_time) }).unwrap_or_default())
    }

    /// The home answered at `at`.
    pub fn home_seen(&self, home: &str, at: DateTime<Utc>) -> Result<()> {
        self.conn()
            .prepare_cached("INSERT INTO home_views (home, last_seen) VALUES (?1, ?2) ON CONFLICT(home) DO UPDATE SET last_seen = ?2")?
            .execute(params![home, fmt_time(&at)])?;
        Ok(())
    }

    /// Tell finishes from `from` on (moved forward as they are told; never back).
    pub fn set_home_told_from(&self, home: &str, from: DateTime<Utc>) -> Result<()> {
        self.conn()
            .prepare_cached("INSERT INTO home_views (home, told_from) VALUES (?1, ?2) ON CONFLICT(home) DO UPDATE SET told_from = max(coalesce(told_from, ''), ?2)")?
            .execute(params![home, fmt_time(&from)])?;
        Ok(())
    }

    /// Claim the telling of `run_id`'s finish: `true` once, for the first caller — a viewer that
    /// hears of a run both from the stream and from catching up tells it once.
    pub fn claim_home_told(&self, home: &str, run_id: &str, at: DateTime<Utc>) -> Result<bool> {
        let n = self.conn().prepare_cached("INSERT OR IGNORE INTO home_told (home, run_id, told_at) VALUES (?1, ?2, ?3)")?.execute(params![home, run_id, fmt_time(&at)])?;
        Ok(n == 1)
    }

    /// Forget told runs older than `before` (catching up never reaches back that far) and what
    /// was kept of homes no longer viewed.
    pub fn prune_home_views(&self, before: DateTime<Utc>, homes: &[&str]) -> Result<()> {
        let conn = self.conn();
        conn.prepare_cached("DELETE FROM home_told WHERE told_at < ?1")?.execute([fmt_time(&before)])?;
        let listed = serde_json::to_string(homes).unwrap_or_else(|_| "[]".into());
        conn.prepare_cached("DELETE FROM home_views WHERE home NOT IN (SELECT value FROM json_each(?1))")?.execute([&listed])?;
        conn.prepare_cached("DELETE FROM home_told WHERE home NOT IN (SELECT value FROM json_each(?1))")?.execute([&listed])?;
        Ok(())
    }
}
