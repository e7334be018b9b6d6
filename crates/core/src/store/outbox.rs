//! The outbox: what a final run owes the user (its finish notification; webhooks later), written
//! in the transaction that makes the run final and delivered by whichever engine can.
//!
//! A deliverer leases due entries (so two notifiers on one home never send one entry twice),
//! sends, and records the result: delivered, or a failed attempt with the next try's time, or —
//! after the last try — `not_delivered`, which the run record then shows.

use super::Store;
use crate::error::Result;
use crate::run::fmt_time;
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

/// The channel of a run's desktop finish notification.
pub const NOTIFY: &str = "notify";

/// One leased entry.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    pub run_id: String,
    pub channel: String,
    /// Tries so far (before this one).
    pub attempts: u32,
    pub finished_at: DateTime<Utc>,
}

/// How an entry ended (or did not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Delivered,
    /// The policy said no notification (e.g. `notify: failures` and the run completed).
    NotNeeded,
    /// Folded into one summary notification (it was older than a day when first seen).
    Summarized,
    /// Every try failed.
    NotDelivered,
}

impl Delivery {
    fn state(self) -> &'static str {
        match self {
            Delivery::Delivered => "delivered",
            Delivery::NotNeeded => "not_needed",
            Delivery::Summarized => "summarized",
            Delivery::NotDelivered => "not_delivered",
        }
    }
}

pub(super) fn enqueue(tx: &rusqlite::Transaction<'_>, run_id: &str, channel: &str, finished_at: DateTime<Utc>) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO outbox (run_id, channel, state, next_at_ms, finished_ms) VALUES (?1, ?2, 'pending', 0, ?3)",
    )?
    .execute(params![run_id, channel, finished_at.timestamp_millis()])?;
    Ok(())
}

impl Store {
    /// Lease up to `limit` due entries of `channel` until `lease_until`. Entries leased by a
    /// deliverer that died come due again when its lease runs out.
    pub fn lease_due(&self, channel: &str, now: DateTime<Utc>, lease_until: DateTime<Utc>, limit: usize) -> Result<Vec<OutboxEntry>> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let now_ms = now.timestamp_millis();
        let due: Vec<OutboxEntry> = {
            let mut stmt = tx.prepare_cached(
                "SELECT run_id, channel, attempts, finished_ms FROM outbox
                 WHERE state = 'pending' AND channel = ?1 AND next_at_ms <= ?2 AND (lease_until_ms IS NULL OR lease_until_ms <= ?2)
                 ORDER BY next_at_ms LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![channel, now_ms, limit as i64], |r| {
                Ok(OutboxEntry {
                    run_id: r.get(0)?,
                    channel: r.get(1)?,
                    attempts: r.get(2)?,
                    finished_at: DateTime::from_timestamp_millis(r.get(3)?).unwrap_or_default(),
                })
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        {
            let mut lease = tx.prepare_cached("UPDATE outbox SET lease_until_ms = ?3 WHERE run_id = ?1 AND channel = ?2")?;
            for e in &due {
                lease.execute(params![e.run_id, e.channel, lease_until.timestamp_millis()])?;
            }
        }
        tx.commit()?;
        Ok(due)
    }

    /// The entry ended: record how, on the entry and on the run.
    pub fn settle_delivery(&self, run_id: &str, channel: &str, how: Delivery, error: Option<&str>, now: DateTime<Utc>) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE outbox SET state = ?3, lease_until_ms = NULL, last_error = COALESCE(?4, last_error),
                 delivered_at = CASE WHEN ?3 = 'delivered' THEN ?5 ELSE delivered_at END
             WHERE run_id = ?1 AND channel = ?2",
            params![run_id, channel, how.state(), error, fmt_time(&now)],
        )?;
        if channel == NOTIFY {
            let shown = if how == Delivery::NotNeeded { None } else { Some(how.state()) };
            tx.execute("UPDATE runs SET notified = ?2 WHERE id = ?1", params![run_id, shown])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// A try failed; the next one is due at `next_at`.
    pub fn retry_delivery(&self, run_id: &str, channel: &str, error: &str, next_at: DateTime<Utc>) -> Result<()> {
        self.conn().execute(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?3, next_at_ms = ?4, lease_until_ms = NULL
             WHERE run_id = ?1 AND channel = ?2 AND state = 'pending'",
            params![run_id, channel, error, next_at.timestamp_millis()],
        )?;
        Ok(())
    }

    /// When the next pending entry of `channel` comes due (leases included), if any.
    pub fn next_delivery_due(&self, channel: &str) -> Result<Option<DateTime<Utc>>> {
        let ms: Option<i64> = self
            .conn()
            .query_row(
                "SELECT MIN(MAX(next_at_ms, COALESCE(lease_until_ms, 0))) FROM outbox WHERE state = 'pending' AND channel = ?1",
                [channel],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        Ok(ms.and_then(DateTime::from_timestamp_millis))
    }

    /// The last error of a run's entry on `channel` (shown beside "not delivered").
    pub fn delivery_error(&self, run_id: &str, channel: &str) -> Result<Option<String>> {
        Ok(self
            .conn()
            .query_row("SELECT last_error FROM outbox WHERE run_id = ?1 AND channel = ?2", params![run_id, channel], |r| r.get(0))
            .optional()?
            .flatten())
    }
}
