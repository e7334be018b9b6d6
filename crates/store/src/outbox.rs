//! The outbox: what a final run owes the user (its finish notification, its webhooks), written
//! in the transaction that makes the run final and delivered by whichever engine can.
//!
//! A deliverer leases due entries (so two notifiers on one home never send one entry twice),
//! sends, and records the result: delivered, or a failed attempt with the next try's time, or —
//! after the last try — `not_delivered`, which the run record then shows.

use super::Store;
use crate::error::Result;
use crate::run::{Channel, Delivery};
use crate::words::fmt_time;
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};


/// One leased entry.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    pub run_id: String,
    pub channel: Channel,
    /// Tries so far (before this one).
    pub attempts: u32,
    pub finished_at: DateTime<Utc>,
}

/// One delivery as the faces show it (`nightshiftctl deliveries`, a run's detail).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct DeliveryRow {
    pub run_id: String,
    pub routine: String,
    /// `notify`, or `webhook:<name>`.
    #[cfg_attr(feature = "typescript", ts(type = "string"))]
    pub channel: Channel,
    /// The webhook's name, for a webhook's delivery (so no face parses the channel).
    pub webhook: Option<String>,
    /// Which heartbeat ping, for a ping's delivery (`ping:`).
    pub ping: Option<crate::run::PingEvent>,
    pub state: Delivery,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub delivered_at: Option<String>,
    /// When the next try is due (pending only).
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub next_at: Option<DateTime<Utc>>,
}


pub(crate) fn enqueue(tx: &rusqlite::Transaction<'_>, run_id: &str, channel: &Channel, finished_at: DateTime<Utc>) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO outbox (run_id, channel, state, next_at_ms, finished_ms) VALUES (?1, ?2, 'pending', 0, ?3)",
    )?
    .execute(params![run_id, channel, finished_at.timestamp_millis()])?;
    Ok(())
}

impl Store {
    /// Owe `channel` for a run now (a run that starts owes its start ping); a second call for the
    /// same run and channel changes nothing — one delivery per run and channel, whatever retries.
    pub fn owe(&self, run_id: &str, channel: &Channel, at: DateTime<Utc>) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        enqueue(&tx, run_id, channel, at)?;
        tx.commit()?;
        Ok(())
    }

    /// Put off an entry without counting a try (an end ping waits for its run's start ping).
    pub fn postpone_delivery(&self, run_id: &str, channel: &Channel, next_at: DateTime<Utc>) -> Result<()> {
        self.conn()
            .prepare_cached("UPDATE outbox SET next_at_ms = ?3, lease_until_ms = NULL WHERE run_id = ?1 AND channel = ?2 AND state = 'pending'")?
            .execute(params![run_id, channel, next_at.timestamp_millis()])?;
        Ok(())
    }

    /// The state of a run's entry on `channel`, if it owes one.
    pub fn delivery_state(&self, run_id: &str, channel: &Channel) -> Result<Option<Delivery>> {
        Ok(self.conn().query_row("SELECT state FROM outbox WHERE run_id = ?1 AND channel = ?2", params![run_id, channel], |r| r.get(0)).optional()?)
    }

    /// Lease up to `limit` due entries of `channel` until `lease_until`. Entries leased by a
    /// deliverer that died come due again when its lease runs out.
    pub fn lease_due(&self, channel: &Channel, now: DateTime<Utc>, lease_until: DateTime<Utc>, limit: usize) -> Result<Vec<OutboxEntry>> {
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
    pub fn settle_delivery(&self, run_id: &str, channel: &Channel, how: Delivery, error: Option<&str>, now: DateTime<Utc>) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.prepare_cached(
            "UPDATE outbox SET state = ?3, lease_until_ms = NULL, last_error = COALESCE(?4, last_error),
                 delivered_at = CASE WHEN ?3 = 'delivered' THEN ?5 ELSE delivered_at END
             WHERE run_id = ?1 AND channel = ?2",
        )?
        .execute(params![run_id, channel, how.as_str(), error, fmt_time(&now)])?;
        if *channel == Channel::Notify {
            let shown = if how == Delivery::NotNeeded { None } else { Some(how.as_str()) };
            tx.prepare_cached("UPDATE runs SET notified = ?2 WHERE id = ?1")?.execute(params![run_id, shown])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// For a slot that ended with nothing done (missed, skipped — `run`), the run whose notice on
    /// `channel` already tells of the stretch it belongs to: an earlier such slot of the routine,
    /// since the routine last ran, whose entry is delivered or still on its way. A stretch of
    /// quiet slots is told once, by its first.
    pub fn quiet_told_by(&self, run: &crate::run::RunRecord, channel: &Channel) -> Result<Option<String>> {
        let conn = self.conn();
        let sort_ms: i64 = conn.query_row("SELECT sort_ms FROM runs WHERE id = ?1", [&run.id], |r| r.get(0))?;
        let told = conn
            .prepare_cached(
                "SELECT r.id FROM runs r JOIN outbox o ON o.run_id = r.id AND o.channel = ?2
                 WHERE r.routine = ?1 AND r.status IN ('missed', 'skipped') AND o.state IN ('pending', 'delivered', 'summarized')
                   AND (r.sort_ms < ?3 OR (r.sort_ms = ?3 AND r.scheduled_for < (SELECT scheduled_for FROM runs WHERE id = ?4)))
                   AND r.sort_ms > COALESCE((SELECT MAX(sort_ms) FROM runs WHERE routine = ?1 AND sort_ms < ?3 AND status NOT IN ('missed', 'skipped', 'blocked')), -1)
                 ORDER BY r.sort_ms, r.scheduled_for LIMIT 1",
            )?
            .query_row(params![run.routine, channel, sort_ms, run.id], |r| r.get(0))
            .optional()?;
        Ok(told)
    }

    /// A try failed; the next one is due at `next_at`.
    pub fn retry_delivery(&self, run_id: &str, channel: &Channel, error: &str, next_at: DateTime<Utc>) -> Result<()> {
        self.conn().prepare_cached(
            "UPDATE outbox SET attempts = attempts + 1, last_error = ?3, next_at_ms = ?4, lease_until_ms = NULL
             WHERE run_id = ?1 AND channel = ?2 AND state = 'pending'",
        )?
        .execute(params![run_id, channel, error, next_at.timestamp_millis()])?;
        Ok(())
    }

    /// When the next pending entry of `channel` comes due (leases included), if any.
    pub fn next_delivery_due(&self, channel: &Channel) -> Result<Option<DateTime<Utc>>> {
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
    pub fn delivery_error(&self, run_id: &str, channel: &Channel) -> Result<Option<String>> {
        Ok(self
            .conn()
            .query_row("SELECT last_error FROM outbox WHERE run_id = ?1 AND channel = ?2", params![run_id, channel], |r| r.get(0))
            .optional()?
            .flatten())
    }

    /// The deliveries of one run (oldest channel first: `notify`, then webhooks by name).
    pub fn deliveries_of(&self, run_id: &str) -> Result<Vec<DeliveryRow>> {
        self.delivery_rows("WHERE o.run_id = ?1 ORDER BY o.channel", params![run_id])
    }

    /// Webhook deliveries, newest run first; `failed_only`: those that gave up (`not_delivered`).
    pub fn webhook_deliveries(&self, failed_only: bool, limit: usize) -> Result<Vec<DeliveryRow>> {
        let filter = if failed_only { "AND o.state = 'not_delivered'" } else { "" };
        self.delivery_rows(&format!("WHERE (o.channel LIKE 'webhook:%' OR o.channel LIKE 'push_failed:webhook:%' OR o.channel LIKE 'pull_request:webhook:%') {filter} ORDER BY o.finished_ms DESC, o.run_id DESC, o.channel LIMIT ?1"), params![limit as i64])
    }

    fn delivery_rows(&self, tail: &str, args: impl rusqlite::Params) -> Result<Vec<DeliveryRow>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT o.run_id, r.routine, o.channel, o.state, o.attempts, o.last_error, o.delivered_at, o.next_at_ms
             FROM outbox o JOIN runs r ON r.id = o.run_id {tail}"
        ))?;
        let rows = stmt
            .query_map(args, |r| {
                let state: Delivery = r.get(3)?;
                let next: i64 = r.get(7)?;
                let channel: Channel = r.get(2)?;
                Ok(DeliveryRow {
                    run_id: r.get(0)?,
                    routine: r.get(1)?,
                    webhook: channel.webhook().map(str::to_string),
                    ping: match channel {
                        Channel::Ping(event) => Some(event),
                        _ => None,
                    },
                    channel,
                    next_at: (state == Delivery::Pending).then(|| DateTime::from_timestamp_millis(next)).flatten(),
                    state,
                    attempts: r.get(4)?,
                    last_error: r.get(5)?,
                    delivered_at: r.get(6)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Try a delivery again from the start (after "not delivered", or now instead of later).
    /// Returns how many entries were reset (`channel` `None`: all of the run's webhooks). A
    /// webhook's news of a failed push goes with its post, but only while the push is still
    /// failed (once the branch is pushed it is no longer news); its news of the pull request goes
    /// with it too.
    pub fn reset_delivery(&self, run_id: &str, channel: Option<&Channel>) -> Result<usize> {
        let n = self.conn().prepare_cached(
            "UPDATE outbox SET state = 'pending', attempts = 0, next_at_ms = 0, lease_until_ms = NULL
             WHERE run_id = ?1 AND state IN ('pending', 'not_delivered')
               AND (channel LIKE 'webhook:%' OR channel LIKE 'pull_request:webhook:%'
                    OR (channel LIKE 'push_failed:webhook:%' AND (SELECT json_extract(changes, '$.push.state') FROM runs WHERE id = ?1) = 'failed'))
               AND (?2 IS NULL OR channel = ?2 OR channel = 'push_failed:' || ?2 OR channel = 'pull_request:' || ?2)",
        )?
        .execute(params![run_id, channel])?;
        Ok(n)
    }
}
