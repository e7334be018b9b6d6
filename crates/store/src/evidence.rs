//! The evidence `why` reads: when a scheduler was alive on this machine (presence), what happened
//! to a routine over time (events), and the rows of a routine's slots in a window — each an index
//! range, so explaining 90 days of a per-minute routine never scans the history.

use super::Store;
use crate::error::Result;
use crate::run::{Reason, RunStatus, Trigger};
use crate::words::{fmt_time, parse_time, string_enum};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

/// One stretch during which a scheduler ran on this machine, awake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presence {
    pub who: String,
    pub started_at: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// How the stretch ended: the machine slept (the same process went on afterwards), or the
    /// process stopped cleanly; `None` while it runs — or when it was killed.
    pub ended: Option<PresenceEnd>,
}

string_enum!(
    /// How a presence stretch ended.
    PresenceEnd { Asleep = "asleep", Stopped = "stopped" }
);

string_enum!(
    /// Something that happened to a routine (or, for `*`, to the whole engine).
    RoutineEvent { Paused = "paused", Resumed = "resumed", Invalid = "invalid", Valid = "valid", Disabled = "disabled", Enabled = "enabled" }
);

/// A routine event as stored: when, what, and its detail (the auto-pause reason, the file error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    pub routine: String,
    pub at: DateTime<Utc>,
    pub event: RoutineEvent,
    pub detail: Option<String>,
}

/// The row of one slot: what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotRow {
    pub slot: DateTime<Utc>,
    pub id: String,
    pub status: RunStatus,
    pub reason: Option<Reason>,
    pub trigger: Trigger,
    pub message: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub duration_ms: Option<i64>,
    /// Its tries, when there was more than one (a retry, a wait for a limit's reset, failover);
    /// empty otherwise.
    pub attempts: Vec<crate::run::Attempt>,
    /// The host it ran on (`host:`), and its page there, if any.
    pub host: Option<String>,
    pub remote_url: Option<String>,
}

impl Store {
    /// A scheduler starts a stretch of presence; returns its id.
    pub fn presence_start(&self, device: &str, who: &str, at: DateTime<Utc>) -> Result<i64> {
        let conn = self.conn();
        conn.prepare_cached(
            "INSERT INTO presence (device, who, pid, started_at, last_seen) VALUES (?1, ?2, ?3, ?4, ?4)",
        )?
        .execute(params![device, who, std::process::id(), fmt_time(&at)])?;
        Ok(conn.last_insert_rowid())
    }

    /// The scheduler is still there at `at`.
    pub fn presence_seen(&self, id: i64, at: DateTime<Utc>) -> Result<()> {
        self.conn().prepare_cached("UPDATE presence SET last_seen = MAX(last_seen, ?2) WHERE id = ?1")?.execute(params![id, fmt_time(&at)])?;
        Ok(())
    }

    /// The stretch ended (the machine slept, or the scheduler stopped).
    pub fn presence_end(&self, id: i64, how: PresenceEnd) -> Result<()> {
        self.conn().prepare_cached("UPDATE presence SET ended = ?2 WHERE id = ?1 AND ended IS NULL")?.execute(params![id, how.as_str()])?;
        Ok(())
    }

    /// This device's stretches that reach into `[from, …)`, oldest first — plus the last one
    /// before `from` (what the time just before the window looked like).
    pub fn presence_since(&self, device: &str, from: DateTime<Utc>) -> Result<Vec<Presence>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT who, started_at, last_seen, ended FROM presence WHERE device = ?1 AND last_seen >= ?2
             UNION ALL SELECT * FROM (SELECT who, started_at, last_seen, ended FROM presence WHERE device = ?1 AND last_seen < ?2 ORDER BY last_seen DESC LIMIT 1)",
        )?;
        let mut rows: Vec<Presence> = stmt
            .query_map(params![device, fmt_time(&from)], |r| {
                Ok(Presence {
                    who: r.get(0)?,
                    started_at: parse_time(&r.get::<_, String>(1)?).unwrap_or(from),
                    last_seen: parse_time(&r.get::<_, String>(2)?).unwrap_or(from),
                    ended: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        rows.sort_by_key(|p| p.started_at);
        Ok(rows)
    }

    /// Record what happened to `routine` (`*`: every routine).
    pub fn add_routine_event(&self, routine: &str, event: RoutineEvent, detail: Option<&str>, at: DateTime<Utc>) -> Result<()> {
        self.conn().prepare_cached(
            "INSERT INTO routine_events (routine, at, event, detail) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![routine, fmt_time(&at), event.as_str(), detail])?;
        Ok(())
    }

    /// The newest routine event's number (0: none yet): a pause or resume anywhere on the home —
    /// by any process — changes it.
    pub fn routine_events_upto(&self) -> Result<i64> {
        Ok(self.conn().prepare_cached("SELECT COALESCE(MAX(id), 0) FROM routine_events")?.query_row([], |r| r.get(0))?)
    }

    /// The latest of these kinds of event for `routine`, if any.
    pub fn last_routine_event(&self, routine: &str, kinds: &[RoutineEvent]) -> Result<Option<EventRow>> {
        let list = kinds.iter().map(|k| format!("'{}'", k.as_str())).collect::<Vec<_>>().join(",");
        let conn = self.conn();
        let row = conn
            .query_row(
                &format!("SELECT routine, at, event, detail FROM routine_events WHERE routine = ?1 AND event IN ({list}) ORDER BY at DESC, id DESC LIMIT 1"),
                [routine],
                event_row,
            )
            .optional()?;
        Ok(row)
    }

    /// Every event of `routine` and of the whole engine (`*`), oldest first.
    pub fn routine_events(&self, routine: &str) -> Result<Vec<EventRow>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT routine, at, event, detail FROM routine_events WHERE routine IN (?1, '*') ORDER BY at, id")?;
        let rows = stmt.query_map([routine], event_row)?.collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// The routine's runs between `from` and `until` whose branch could not be pushed after every
    /// try, newest first: (run id, remote, error) — for `why`.
    pub fn failed_pushes(&self, routine: &str, from: DateTime<Utc>, until: DateTime<Utc>) -> Result<Vec<(String, String, String)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, json_extract(changes, '$.push.remote'), COALESCE(json_extract(changes, '$.push.error'), 'refused') FROM runs
             WHERE routine = ?1 AND sort_ms >= ?2 AND sort_ms <= ?3 AND json_extract(changes, '$.push.state') = 'failed'
             ORDER BY sort_ms DESC",
        )?;
        let rows = stmt.query_map(params![routine, from.timestamp_millis(), until.timestamp_millis()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The rows of `routine`'s slots in `[from, until]`, newest first: a range of a covering
    /// index for every row, then the table only for the rows whose sentence quotes their message
    /// or start time (skipped, blocked, caught up).
    pub fn slot_rows(&self, routine: &str, from: DateTime<Utc>, until: DateTime<Utc>) -> Result<Vec<SlotRow>> {
        let conn = self.conn();
        let (from_s, until_s) = (fmt_time(&from), fmt_time(&until));
        let mut rows: Vec<SlotRow> = Vec::new();
        let mut stmt = conn.prepare_cached(SLOT_ROWS)?;
        let mut q = stmt.query(params![routine, from_s, until_s])?;
        while let Some(r) = q.next()? {
            let text = |i: usize| r.get_ref(i).and_then(|v| v.as_str().map_err(Into::into));
            rows.push(SlotRow {
                slot: parse_time(text(0)?).unwrap_or(from),
                id: text(1)?.to_string(),
                status: r.get(2)?,
                reason: r.get(3)?,
                trigger: r.get(4)?,
                message: None,
                started_at: None,
                duration_ms: r.get(5)?,
                attempts: Vec::new(),
                host: r.get(6)?,
                remote_url: None,
            });
        }
        drop(q);
        // Both newest first: the details go to their rows in one pass.
        let mut stmt = conn.prepare_cached(SLOT_DETAILS)?;
        let mut q = stmt.query(params![routine, from_s, until_s])?;
        let mut at = 0;
        while let Some(r) = q.next()? {
            let slot = parse_time(r.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?).unwrap_or(from);
            while at < rows.len() && rows[at].slot > slot {
                at += 1;
            }
            if let Some(row) = rows.get_mut(at).filter(|row| row.slot == slot) {
                row.message = r.get(1)?;
                row.started_at = r.get_ref(2)?.as_str_or_null().map_err(rusqlite::Error::from)?.and_then(parse_time);
                let attempts = r.get_ref(3)?.as_str_or_null().map_err(rusqlite::Error::from)?.unwrap_or("[]");
                row.attempts = serde_json::from_str(attempts).unwrap_or_default();
                row.remote_url = r.get(4)?;
            }
        }
        Ok(rows)
    }

    /// The newest slot of `routine` on record, with its row.
    pub fn last_slot_row(&self, routine: &str) -> Result<Option<SlotRow>> {
        let Some(last) = self.last_slot(routine)? else { return Ok(None) };
        Ok(self.slot_rows(routine, last, last)?.into_iter().next())
    }
}

/// A routine's slot rows in a window: a range of the covering slot index (`runs_slot_facts`).
pub const SLOT_ROWS: &str = "SELECT scheduled_for, id, status, reason, trigger, duration_ms, host FROM runs
     WHERE routine = ?1 AND scheduled_for >= ?2 AND scheduled_for <= ?3 ORDER BY scheduled_for DESC";

/// What only some rows' sentences need, read from the table for those rows alone.
/// (Rows with more than one try are told by the index's `retried`, not by reading every row.)
pub const SLOT_DETAILS: &str = "SELECT scheduled_for, message, started_at, attempts, remote_url FROM runs INDEXED BY runs_slot_facts
     WHERE routine = ?1 AND scheduled_for >= ?2 AND scheduled_for <= ?3
       AND (status IN ('skipped', 'blocked', 'queued') OR trigger = 'catchup' OR retried = 1 OR host IS NOT NULL)
     ORDER BY scheduled_for DESC";

fn event_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<EventRow> {
    let at: String = r.get(1)?;
    Ok(EventRow {
        routine: r.get(0)?,
        at: parse_time(&at).unwrap_or_default(),
        event: r.get(2)?,
        detail: r.get(3)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::query_plan as plan;

    #[test]
    fn a_window_of_slots_is_a_range_of_the_slot_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let p = plan(&store, SLOT_ROWS, 3);
        assert_eq!(p, "SEARCH runs USING COVERING INDEX runs_slot_facts (routine=? AND scheduled_for>? AND scheduled_for<?)");
        let p = plan(&store, SLOT_DETAILS, 3);
        // The filter is read from the index; the table only for the rows that pass it.
        assert_eq!(p, "SEARCH runs USING INDEX runs_slot_facts (routine=? AND scheduled_for>? AND scheduled_for<?)");
    }

    #[test]
    fn presence_stretches_come_back_in_order_with_the_one_before_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let t = |h: i64| DateTime::<Utc>::from_timestamp(1_800_000_000 + h * 3600, 0).unwrap();
        let a = store.presence_start("box", "the Nightshift app (pid 1)", t(0)).unwrap();
        store.presence_seen(a, t(2)).unwrap();
        store.presence_end(a, PresenceEnd::Asleep).unwrap();
        let b = store.presence_start("box", "the Nightshift app (pid 1)", t(5)).unwrap();
        store.presence_seen(b, t(6)).unwrap();
        store.presence_start("elsewhere", "nightshiftctl daemon (pid 2)", t(5)).unwrap();
        let got = store.presence_since("box", t(4)).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].started_at, got[0].last_seen, got[0].ended), (t(0), t(2), Some(PresenceEnd::Asleep)));
        assert_eq!((got[1].started_at, got[1].last_seen, got[1].ended), (t(5), t(6), None));
    }
}
