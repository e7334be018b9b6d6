//! What runs and credential changes showed about each account, with history.

use super::Store;
use crate::error::Result;
use crate::words::{fmt_time, parse_time};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};
use serde::Serialize;

/// The latest run-derived verdict on an account (`live`, `revoked`, `rate_limited`, `ok`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct HealthRecord {
    pub account: String,
    pub verdict: crate::words::Verdict,
    pub evidence: String,
    #[serde(serialize_with = "crate::words::ser_time")]
    pub at: DateTime<Utc>,
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub resets_at: Option<DateTime<Utc>>,
    pub run_id: Option<String>,
}

fn row_to_health(r: &rusqlite::Row<'_>) -> rusqlite::Result<HealthRecord> {
    Ok(HealthRecord {
        account: r.get(0)?,
        verdict: r.get(1)?,
        evidence: r.get(2)?,
        at: parse_time(&r.get::<_, String>(3)?).unwrap_or_default(),
        resets_at: r.get::<_, Option<String>>(4)?.as_deref().and_then(parse_time),
        run_id: r.get(5)?,
    })
}

impl Store {
    pub fn account_health(&self, account: &str) -> Result<Option<HealthRecord>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT account, verdict, evidence, at, resets_at, run_id FROM account_health WHERE account = ?1",
                [account],
                row_to_health,
            )
            .optional()?)
    }

    /// Record a verdict; returns true when it changed (a new history row was written).
    pub fn set_account_health(&self, h: &HealthRecord) -> Result<bool> {
        let previous = self.account_health(&h.account)?;
        let changed = previous.as_ref().is_none_or(|p| p.verdict != h.verdict || p.resets_at != h.resets_at);
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.prepare_cached(
            "INSERT INTO account_health (account, verdict, evidence, at, resets_at, run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(account) DO UPDATE SET verdict = excluded.verdict, evidence = excluded.evidence, at = excluded.at,
                 resets_at = excluded.resets_at, run_id = excluded.run_id",
        )?
        .execute(params![h.account, h.verdict, h.evidence, fmt_time(&h.at), h.resets_at.as_ref().map(fmt_time), h.run_id])?;
        if changed {
            tx.prepare_cached(
                "INSERT INTO account_health_history (account, verdict, evidence, at, resets_at, run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![h.account, h.verdict, h.evidence, fmt_time(&h.at), h.resets_at.as_ref().map(fmt_time), h.run_id])?;
        }
        tx.commit()?;
        Ok(changed)
    }

    /// Verdict changes, newest first.
    pub fn account_health_history(&self, account: &str, limit: usize) -> Result<Vec<HealthRecord>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT account, verdict, evidence, at, resets_at, run_id FROM account_health_history WHERE account = ?1 ORDER BY id DESC LIMIT ?2",
        )?;
        let rows = stmt
            .query_map(params![account, limit as i64], row_to_health)?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// When the account hit a rate limit since `since` (each turn to `rate_limited`), newest first.
    pub fn rate_limits_since(&self, account: &str, since: DateTime<Utc>) -> Result<Vec<HealthRecord>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT account, verdict, evidence, at, resets_at, run_id FROM account_health_history
             WHERE account = ?1 AND verdict = 'rate_limited' AND at >= ?2 ORDER BY id DESC LIMIT 200",
        )?;
        let rows = stmt.query_map(params![account, fmt_time(&since)], row_to_health)?.collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Record the windows an agent reported for `account` (one row per window: history). Returns,
    /// for each, the highest share of it used in an earlier report of the same period (the same
    /// reset) — what a crossing of 80 % or 95 % is judged against.
    pub fn record_windows(&self, account: &str, windows: &[crate::run::LimitWindow]) -> Result<Vec<Option<f64>>> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let mut before = Vec::with_capacity(windows.len());
        for w in windows {
            let resets = w.resets_at.as_ref().map(fmt_time);
            before.push(
                tx.prepare_cached("SELECT MAX(used_percent) FROM account_windows WHERE account = ?1 AND window = ?2 AND resets_at IS ?3")?
                    .query_row(params![account, w.window, resets], |r| r.get::<_, Option<f64>>(0))?,
            );
            tx.prepare_cached("INSERT INTO account_windows (account, window, used_percent, resets_at, status, seen_at, run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?
                .execute(params![account, w.window, w.used_percent, resets, w.status, fmt_time(&w.seen_at), w.run_id])?;
        }
        tx.commit()?;
        Ok(before)
    }

    /// The windows run `run_id` reported, each with its account and the highest share of it used
    /// in an earlier report of the same period (as [`Store::record_windows`] returned it then).
    pub fn windows_of_run(&self, run_id: &str) -> Result<Vec<(String, crate::run::LimitWindow, Option<f64>)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT w.account, w.window, w.used_percent, w.resets_at, w.status, w.seen_at, w.run_id,
                    (SELECT MAX(p.used_percent) FROM account_windows p WHERE p.account = w.account AND p.window = w.window AND p.resets_at IS w.resets_at AND p.rowid < w.rowid)
             FROM account_windows w WHERE w.run_id = ?1 ORDER BY w.rowid",
        )?;
        let rows = stmt.query_map([run_id], |r| Ok((r.get(0)?, window_at(r, 1)?, r.get(7)?)))?.collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Every report of every account's windows since `since`, oldest first, each with its account
    /// (the Usage view's history).
    pub fn window_history(&self, since: DateTime<Utc>) -> Result<Vec<(String, crate::run::LimitWindow)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT account, window, used_percent, resets_at, status, seen_at, run_id FROM account_windows WHERE seen_at >= ?1 ORDER BY seen_at, rowid",
        )?;
        let rows = stmt.query_map([fmt_time(&since)], |r| Ok((r.get(0)?, window_at(r, 1)?)))?.collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Each window of `account` as last reported (five_hour, seven_day, then the others by name).
    pub fn account_windows(&self, account: &str) -> Result<Vec<crate::run::LimitWindow>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT w.window, w.used_percent, w.resets_at, w.status, w.seen_at, w.run_id FROM account_windows w
             WHERE w.account = ?1 AND w.seen_at = (SELECT MAX(seen_at) FROM account_windows l WHERE l.account = w.account AND l.window = w.window)
             GROUP BY w.window
             ORDER BY CASE w.window WHEN 'five_hour' THEN 0 WHEN 'seven_day' THEN 1 ELSE 2 END, w.window",
        )?;
        let rows = stmt
            .query_map([account], |r| window_at(r, 0))?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }
}

/// A window from the six columns starting at `at`: window, used_percent, resets_at, status,
/// seen_at, run_id.
fn window_at(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<crate::run::LimitWindow> {
    Ok(crate::run::LimitWindow {
        window: r.get(at)?,
        used_percent: r.get(at + 1)?,
        resets_at: r.get::<_, Option<String>>(at + 2)?.as_deref().and_then(parse_time),
        status: r.get(at + 3)?,
        seen_at: parse_time(&r.get::<_, String>(at + 4)?).unwrap_or_default(),
        run_id: r.get(at + 5)?,
    })
}
