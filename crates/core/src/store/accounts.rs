//! What runs and credential changes showed about each account, with history.

use super::Store;
use crate::error::Result;
use crate::words::{fmt_time, parse_time};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};
use serde::Serialize;

/// The latest run-derived verdict on an account (`live`, `revoked`, `rate_limited`, `ok`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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

    /// Record the windows a run's agent reported for `account` (one row per window: history).
    pub fn record_windows(&self, account: &str, windows: &[crate::run::LimitWindow]) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        for w in windows {
            tx.prepare_cached("INSERT INTO account_windows (account, window, used_percent, resets_at, status, seen_at, run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?
                .execute(params![account, w.window, w.used_percent, w.resets_at.as_ref().map(fmt_time), w.status, fmt_time(&w.seen_at), w.run_id])?;
        }
        tx.commit()?;
        Ok(())
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
            .query_map([account], |r| {
                Ok(crate::run::LimitWindow {
                    window: r.get(0)?,
                    used_percent: r.get(1)?,
                    resets_at: r.get::<_, Option<String>>(2)?.as_deref().and_then(parse_time),
                    status: r.get(3)?,
                    seen_at: parse_time(&r.get::<_, String>(4)?).unwrap_or_default(),
                    run_id: r.get(5)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }
}
