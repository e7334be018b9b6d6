//! Events received from GitHub and Linear: the claim that makes a delivery one run per routine
//! however often it arrives and whoever sees it (`event_runs`, like a slot's row), what came in
//! and what became of it (`deliveries`, for `hooks list` and `why`), and the Linear state names
//! its updates give only by id.

use super::runs::{insert_row, NewRun};
use super::Store;
use crate::error::Result;
use crate::incoming::{Event, Source};
use crate::words::{fmt_time, parse_time};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

/// Deliveries kept for `hooks list`; older ones are dropped as new ones come.
const KEPT: i64 = 1000;

/// What became of a delivery for one routine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Verdict {
    pub routine: String,
    /// `fired` (run `run_id`), `skipped` (the routine's run still went: `overlap`), `duplicate`
    /// (an earlier arrival fired `run_id`), `filtered` (`why`: the filter), or the routine's state
    /// that kept it from running (`disabled`, `paused`, `auto_paused`, `paused_all`,
    /// `other_device`), `ended` (past its `end_at`).
    pub outcome: String,
    pub run_id: Option<String>,
    pub why: Option<String>,
}

/// One delivery as `hooks list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Received {
    pub source: Source,
    pub delivery: String,
    /// GitHub's event or Linear's type.
    pub name: String,
    #[serde(serialize_with = "crate::words::ser_time")]
    #[cfg_attr(feature = "typescript", ts(type = "string"))]
    pub received_at: DateTime<Utc>,
    /// The event in words ("github:pull_request labeled acme/app#41 “Fix”").
    pub summary: String,
    pub verdicts: Vec<Verdict>,
    /// How often it arrived (a redelivery, or the receiver and a poller both).
    pub times: u32,
}

/// A claim's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The row was written: the run is this delivery's for this routine.
    Claimed,
    /// An earlier arrival claimed it, for this run.
    Taken(String),
    /// A review's run, refused: the routine has answered this many reviews of the pull request
    /// already (`review_rounds`).
    Spent(usize),
}

impl Store {
    /// Claim delivery `delivery` of `source` for `row`'s routine by writing `row` (its run, with
    /// `event`) — or learn which run has it already: this delivery's, or the same event's by the
    /// other path (`event`'s [`crate::incoming::Sameness`]). One transaction: never a run without
    /// its claim, never two runs for one event and routine (also across processes). A review's
    /// run (`event.review`) with `rounds` is refused once the routine has that many runs for
    /// reviews of the pull request — counted in the same transaction, so two reviews at once
    /// cannot both take the last round.
    pub fn claim_event_run(&self, source: Source, delivery: &str, row: &NewRun, event: &Event, rounds: Option<u32>) -> Result<Claim> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // The same event by the other path (a delivery and a polled entry): one identity, close
        // in time.
        let (identity, at_ms) = event.facts.sameness.as_ref().map(|s| (s.identity.as_str(), s.at.timestamp_millis())).unzip();
        if let (Some(identity), Some(at_ms)) = (identity, at_ms) {
            let earlier: Option<String> = tx
                .prepare_cached("SELECT run_id FROM event_runs WHERE routine = ?1 AND source = ?2 AND identity = ?3 AND abs(at_ms - ?4) <= ?5 LIMIT 1")?
                .query_row(params![row.routine, source.as_str(), identity, at_ms, crate::incoming::Sameness::WINDOW.num_milliseconds()], |r| r.get(0))
                .optional()?;
            if let Some(run) = earlier {
                return Ok(Claim::Taken(run));
            }
        }
        if let (Some(max), Some(repo), Some(number), true) = (rounds, event.repo.as_deref(), event.number, event.review.is_some()) {
            let delivered: Option<String> = tx.prepare_cached("SELECT run_id FROM event_runs WHERE routine = ?1 AND source = ?2 AND delivery = ?3")?.query_row(params![row.routine, source.as_str(), delivery], |r| r.get(0)).optional()?;
            if let Some(run) = delivered {
                return Ok(Claim::Taken(run));
            }
            let answered: i64 = tx
                .prepare_cached(&format!("SELECT count(*) FROM runs WHERE {}", crate::pull_requests::ROUNDS))?
                .query_row(params![row.routine, repo, number as i64], |r| r.get(0))?;
            if answered as u64 >= u64::from(max) {
                return Ok(Claim::Spent(answered as usize));
            }
        }
        let claimed = tx
            .prepare_cached("INSERT OR IGNORE INTO event_runs (routine, source, delivery, run_id, identity, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?
            .execute(params![row.routine, source.as_str(), delivery, row.id, identity, at_ms])?;
        if claimed == 0 {
            let run: String = tx.prepare_cached("SELECT run_id FROM event_runs WHERE routine = ?1 AND source = ?2 AND delivery = ?3")?.query_row(params![row.routine, source.as_str(), delivery], |r| r.get(0))?;
            return Ok(Claim::Taken(run));
        }
        insert_row(&tx, row, false)?;
        tx.prepare_cached("UPDATE runs SET event = ?2 WHERE id = ?1")?.execute(params![row.id, serde_json::to_string(event).unwrap_or_default()])?;
        tx.commit()?;
        Ok(Claim::Claimed)
    }

    /// Note a delivery and what became of it; a delivery seen before only counts once more (its
    /// first verdicts stay: they say which run it fired). Returns how often it has arrived.
    pub fn record_delivery(&self, event: &Event, summary: &str, verdicts: &[Verdict], now: DateTime<Utc>) -> Result<u32> {
        let conn = self.conn();
        conn.prepare_cached(
            "INSERT INTO deliveries (source, delivery, name, received_at, received_ms, summary, verdicts) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT(source, delivery) DO UPDATE SET times = times + 1",
        )?
        .execute(params![event.source.as_str(), event.delivery, event.name, fmt_time(&now), now.timestamp_millis(), summary, serde_json::to_string(verdicts).unwrap_or_else(|_| "[]".into())])?;
        conn.prepare_cached("DELETE FROM deliveries WHERE received_ms < (SELECT received_ms FROM deliveries ORDER BY received_ms DESC LIMIT 1 OFFSET ?1)")?.execute([KEPT])?;
        let times: u32 = conn.prepare_cached("SELECT times FROM deliveries WHERE source = ?1 AND delivery = ?2")?.query_row(params![event.source.as_str(), event.delivery], |r| r.get(0))?;
        Ok(times)
    }

    /// The latest `limit` deliveries, newest first.
    pub fn deliveries(&self, limit: usize) -> Result<Vec<Received>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT source, delivery, name, received_at, summary, verdicts, times FROM deliveries ORDER BY received_ms DESC, rowid DESC LIMIT ?1")?;
        let rows = stmt.query_map([limit as i64], |r| {
            Ok(Received {
                source: r.get(0)?,
                delivery: r.get(1)?,
                name: r.get(2)?,
                received_at: parse_time(&r.get::<_, String>(3)?).unwrap_or_default(),
                summary: r.get(4)?,
                verdicts: serde_json::from_str(&r.get::<_, String>(5)?).unwrap_or_default(),
                times: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Linear state `id` is called `name` (seen in an Issue delivery).
    pub fn remember_linear_state(&self, id: &str, name: &str) -> Result<()> {
        self.conn().prepare_cached("INSERT INTO linear_states (id, name) VALUES (?1, ?2) ON CONFLICT(id) DO UPDATE SET name = ?2")?.execute(params![id, name])?;
        Ok(())
    }

    /// The name of Linear state `id`, if a delivery ever said it.
    pub fn linear_state(&self, id: &str) -> Result<Option<String>> {
        Ok(self.conn().prepare_cached("SELECT name FROM linear_states WHERE id = ?1")?.query_row([id], |r| r.get(0)).optional()?)
    }

    /// Where polling `repo` stands: the newest Events API entry taken, and the ETag of the
    /// answer it was taken from (`None`: never polled here).
    pub fn github_cursor(&self, repo: &str) -> Result<Option<Cursor>> {
        Ok(self
            .conn()
            .prepare_cached("SELECT last_id, etag, polled_at FROM github_cursors WHERE repo = ?1")?
            .query_row([repo], |r| Ok(Cursor { last_id: r.get::<_, i64>(0)? as u64, etag: r.get(1)?, polled_at: parse_time(&r.get::<_, String>(2)?).unwrap_or_default() }))
            .optional()?)
    }

    /// Move `repo`'s cursor: after each entry taken (`etag` none: a later entry of the answer
    /// may still be untaken, so the answer must come again), then with the whole answer's ETag.
    /// A cursor never moves back (two engines polling one home).
    pub fn set_github_cursor(&self, repo: &str, last_id: u64, etag: Option<&str>, now: DateTime<Utc>) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO github_cursors (repo, last_id, etag, polled_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(repo) DO UPDATE SET last_id = max(last_id, excluded.last_id), etag = excluded.etag, polled_at = excluded.polled_at",
            )?
            .execute(params![repo, last_id as i64, etag, fmt_time(&now)])?;
        Ok(())
    }
}

/// A polled repository's place (`github_cursors`).
#[derive(Debug, Clone, PartialEq)]
pub struct Cursor {
    pub last_id: u64,
    pub etag: Option<String>,
    pub polled_at: DateTime<Utc>,
}
