//! Per-routine scheduler state and engine-wide flags (pause), stored per machine in the database.

use super::{RoutineEvent, Store};
use crate::error::{Error, ErrorCode, Result};
use crate::words::{fmt_time, parse_time};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

/// A routine's row in `routine_state`: what the scheduler has checked and how it is paused here.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutineRow {
    pub first_seen: DateTime<Utc>,
    pub checked_until: DateTime<Utc>,
    pub paused: bool,
    /// `None` when paused by the user; the auto-pause reason otherwise.
    pub paused_reason: Option<String>,
    pub paused_at: Option<DateTime<Utc>>,
}

impl RoutineRow {
    /// Its pause as `Routine::state` (nightshift-model) takes it: `None` when not paused here,
    /// `Some(None)` when paused by the user, `Some(Some(reason))` when auto-paused.
    pub fn pause(&self) -> Option<Option<&str>> {
        self.paused.then_some(self.paused_reason.as_deref())
    }
}

impl Store {
    /// The routine's state, creating it (first seen now, checked until now) on first sight.
    pub fn routine_state(&self, routine: &str, now: DateTime<Utc>) -> Result<RoutineRow> {
        let conn = self.conn();
        let read = || {
            conn.prepare_cached("SELECT first_seen, checked_until, paused, paused_reason, paused_at FROM routine_state WHERE routine = ?1")?
                .query_row([routine], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, bool>(2)?,
                        r.get::<_, Option<String>>(3)?,
                        r.get::<_, Option<String>>(4)?,
                    ))
                })
                .optional()
        };
        // Read first: the insert (a write transaction) only on a routine's first sight.
        let row = match read()? {
            Some(row) => row,
            None => {
                conn.prepare_cached("INSERT OR IGNORE INTO routine_state (routine, first_seen, checked_until) VALUES (?1, ?2, ?2)")?
                    .execute(params![routine, fmt_time(&now)])?;
                read()?.ok_or_else(|| rusqlite::Error::QueryReturnedNoRows)?
            }
        };
        Ok(RoutineRow {
            first_seen: parse_time(&row.0).unwrap_or(now),
            checked_until: parse_time(&row.1).unwrap_or(now),
            paused: row.2,
            paused_reason: row.3,
            paused_at: row.4.as_deref().and_then(parse_time),
        })
    }

    /// The state without creating it (for display).
    pub fn peek_routine_state(&self, routine: &str) -> Result<Option<RoutineRow>> {
        let exists: Option<i64> =
            self.conn().prepare_cached("SELECT 1 FROM routine_state WHERE routine = ?1")?.query_row([routine], |r| r.get(0)).optional()?;
        match exists {
            Some(_) => self.routine_state(routine, Utc::now()).map(Some),
            None => Ok(None),
        }
    }

    /// Every routine paused on this machine: name → why, when it was paused automatically (one
    /// query, for the routines overview).
    pub fn paused_routines(&self) -> Result<std::collections::HashMap<String, Option<String>>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT routine, paused_reason FROM routine_state WHERE paused")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)))?.collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Every slot of these routines up to `until` has been evaluated.
    pub fn set_checked_until(&self, routines: &[&str], until: DateTime<Utc>) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached("UPDATE routine_state SET checked_until = ?2 WHERE routine = ?1 AND checked_until < ?2")?;
            for r in routines {
                stmt.execute(params![r, fmt_time(&until)])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Pause (with an optional reason; `None` = by the user) or resume one routine.
    pub fn set_routine_paused(&self, routine: &str, paused: bool, reason: Option<&str>, now: DateTime<Utc>) -> Result<()> {
        let was = self.routine_state(routine, now)?.paused;
        self.conn().prepare_cached(
            "UPDATE routine_state SET paused = ?2, paused_reason = ?3, paused_at = ?4 WHERE routine = ?1",
        )?
        .execute(params![routine, paused, if paused { reason } else { None }, if paused { Some(fmt_time(&now)) } else { None }])?;
        // The history `why` reads (a pause that changes nothing is not an event).
        if was != paused {
            let event = if paused { RoutineEvent::Paused } else { RoutineEvent::Resumed };
            self.add_routine_event(routine, event, reason, now)?;
        }
        if was && !paused {
            self.owe_slots_after(Some(routine), now)?;
        }
        Ok(())
    }

    /// A resume owes the slots from its instant on, by the clock: a pass made while paused at that
    /// instant, or at a later clock time (before the clock was set back), does not keep them
    /// checked. (A slot that has a record keeps it: a slot is claimed once.)
    fn owe_slots_after(&self, routine: Option<&str>, now: DateTime<Utc>) -> Result<()> {
        let before = now - chrono::Duration::milliseconds(1);
        self.conn()
            .prepare_cached("UPDATE routine_state SET checked_until = ?2 WHERE (?1 IS NULL OR routine = ?1) AND checked_until > ?2")?
            .execute(params![routine, fmt_time(&before)])?;
        Ok(())
    }

    /// A routine renamed: its run history and its scheduler state (how far its slots were
    /// checked, a pause) follow it, in one transaction. Refused while one of its runs is queued or
    /// running (its files and notification name the old routine), and when the history already
    /// holds runs of a routine called `new` (one removed earlier): two routines' runs would mix.
    pub fn rename_routine(&self, old: &str, new: &str) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let open: bool = tx.prepare_cached("SELECT EXISTS (SELECT 1 FROM runs WHERE status IN ('queued', 'running') AND routine = ?1)")?.query_row([old], |r| r.get(0))?;
        if open {
            return Err(Error::new(ErrorCode::Conflict, format!("a run of \"{old}\" is queued or running; rename it once the run has ended (or cancel the run)")));
        }
        let taken: bool = tx.prepare_cached("SELECT EXISTS (SELECT 1 FROM runs WHERE routine = ?1)")?.query_row([new], |r| r.get(0))?;
        if taken {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!("the run history already holds runs of a routine named \"{new}\" (one removed earlier); choose another name"),
            ));
        }
        tx.prepare_cached("UPDATE runs SET routine = ?2 WHERE routine = ?1")?.execute(params![old, new])?;
        tx.prepare_cached("DELETE FROM routine_state WHERE routine = ?1")?.execute([new])?;
        tx.prepare_cached("UPDATE routine_state SET routine = ?2 WHERE routine = ?1")?.execute(params![old, new])?;
        tx.prepare_cached("DELETE FROM routine_events WHERE routine = ?1")?.execute([new])?;
        tx.prepare_cached("UPDATE routine_events SET routine = ?2 WHERE routine = ?1")?.execute(params![old, new])?;
        tx.commit()?;
        Ok(())
    }

    /// Forget the scheduler state of a routine that no longer exists (a rename's old name, which a
    /// scheduler may have seen again for a moment).
    pub fn forget_routine_state(&self, routine: &str) -> Result<()> {
        self.conn().prepare_cached("DELETE FROM routine_state WHERE routine = ?1")?.execute([routine])?;
        Ok(())
    }

    pub fn global_paused(&self) -> Result<bool> {
        Ok(self.flag("paused")?.as_deref() == Some("1"))
    }

    /// Pause or resume every routine (remembered as an event of `*` for `why`).
    pub fn set_global_paused(&self, paused: bool, now: DateTime<Utc>) -> Result<()> {
        let was = self.global_paused()?;
        if was != paused {
            self.add_routine_event("*", if paused { RoutineEvent::Paused } else { RoutineEvent::Resumed }, None, now)?;
        }
        if was && !paused {
            self.owe_slots_after(None, now)?;
        }
        self.set_flag("paused", if paused { "1" } else { "0" })
    }

    fn flag(&self, key: &str) -> Result<Option<String>> {
        Ok(self.conn().prepare_cached("SELECT value FROM engine_state WHERE key = ?1")?.query_row([key], |r| r.get(0)).optional()?)
    }

    fn set_flag(&self, key: &str, value: &str) -> Result<()> {
        self.conn().prepare_cached(
            "INSERT INTO engine_state (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        )?
        .execute(params![key, value])?;
        Ok(())
    }

    /// The latest scheduled slot on record for a routine.
    pub fn last_slot(&self, routine: &str) -> Result<Option<DateTime<Utc>>> {
        let s: Option<String> = self
            .conn()
            .query_row("SELECT MAX(scheduled_for) FROM runs WHERE routine = ?1", [routine], |r| r.get(0))
            .optional()?
            .flatten();
        Ok(s.as_deref().and_then(parse_time))
    }
}
