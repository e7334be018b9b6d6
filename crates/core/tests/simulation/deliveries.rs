//! The outbox's promises, checked after each delivery pass against what the receivers saw:
//! each entry delivered at most once, and at least once while its receiver is up; a stretch of
//! quiet slots told once. Entries are read when new and again while pending, so each step reads
//! only what changed.

use super::invariants::Broken;
use super::world::World;
use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::collections::BTreeSet;

/// The webhook every simulated routine posts to.
pub const HOOK: &str = "webhook:sim";

fn broken(invariant: &'static str, detail: String) -> Result<(), Broken> {
    Err(Broken { invariant, detail })
}

/// An outbox row.
struct Entry {
    rowid: i64,
    run_id: String,
    channel: String,
    state: String,
    attempts: i64,
    next_at_ms: i64,
    last_error: Option<String>,
}

pub struct Deliveries {
    db: Connection,
    /// The highest outbox row looked at.
    upto: i64,
    /// Rows still pending when last looked at, or settled as told by another still pending.
    open: BTreeSet<i64>,
}

impl Deliveries {
    pub fn new(world: &World) -> Deliveries {
        let db = Connection::open_with_flags(world.db_path(), OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).unwrap();
        db.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        Deliveries { db, upto: 0, open: BTreeSet::new() }
    }

    /// After a delivery pass at `t`: every new or still-open entry.
    pub fn after_delivery(&mut self, world: &World, t: DateTime<Utc>) -> Result<(), Broken> {
        let cols = "rowid, run_id, channel, state, attempts, next_at_ms, last_error";
        let read = |r: &rusqlite::Row| Ok(Entry { rowid: r.get(0)?, run_id: r.get(1)?, channel: r.get(2)?, state: r.get(3)?, attempts: r.get(4)?, next_at_ms: r.get(5)?, last_error: r.get(6)? });
        let mut stmt = self.db.prepare(&format!("SELECT {cols} FROM outbox WHERE rowid > ?1 ORDER BY rowid")).unwrap();
        let mut entries: Vec<Entry> = stmt.query_map([self.upto], read).unwrap().map(Result::unwrap).collect();
        drop(stmt);
        let mut stmt = self.db.prepare(&format!("SELECT {cols} FROM outbox WHERE rowid = ?1")).unwrap();
        for rowid in std::mem::take(&mut self.open) {
            entries.push(stmt.query_row([rowid], read).unwrap());
        }
        drop(stmt);
        for e in entries {
            self.upto = self.upto.max(e.rowid);
            if !self.entry(world, &e, t)? {
                self.open.insert(e.rowid);
            }
        }
        Ok(())
    }

    /// One entry's checks; `false` while it is to be looked at again.
    fn entry(&self, world: &World, e: &Entry, t: DateTime<Utc>) -> Result<bool, Broken> {
        let rx = &world.receivers;
        let (up, took, refused) = match e.channel.as_str() {
            "notify" => (!rx.desktop_down(), rx.desktop.shown_of(&e.run_id), rx.desktop.refused_of(&e.run_id)),
            HOOK => (rx.hook_down.is_none(), rx.hook.accepted_of(&e.run_id), rx.hook.refused_of(&e.run_id)),
            _ => return Ok(true),
        };
        let said = || format!("run {}'s {} entry is {} after {} tries (last error {:?}); its receiver took it {took} times and refused it {refused} times", e.run_id, e.channel, e.state, e.attempts, e.last_error);
        match e.state.as_str() {
            "pending" if up && e.next_at_ms <= t.timestamp_millis() => broken("delivered_while_up", format!("{} — still due after a delivery pass with its receiver up", said())).map(|_| true),
            "pending" => Ok(false),
            "delivered" if took != 1 => broken("delivered_once", said()).map(|_| true),
            // Given up only by a pass while its receiver was down (an entry changes only in a
            // pass, and is looked at right after each), never taken, refused at least once (a
            // notice's last try may be a summary's, which names no run).
            "not_delivered" if took != 0 || up || refused == 0 => broken("delivered_while_up", said()).map(|_| true),
            "summarized" | "not_needed" if took != 0 => broken("delivered_once", said()).map(|_| true),
            _ => self.quiet_told_once(e),
        }
    }

    /// `quiet_told_once`: a stretch of slots that did nothing (since the routine last ran) is
    /// told once: an entry of it that was told has no other told one in its stretch; one settled
    /// as told by another names one in its stretch (looked at again while that one is pending).
    fn quiet_told_once(&self, e: &Entry) -> Result<bool, Broken> {
        let quiet: Option<(String, i64)> = self
            .db
            .query_row("SELECT routine, sort_ms FROM runs WHERE id = ?1 AND status IN ('missed', 'skipped') AND COALESCE(reason, '') <> 'superseded'", [&e.run_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .unwrap();
        let Some((routine, sort_ms)) = quiet else { return Ok(true) };
        // The stretch: between the routine's records (before and after) that are not quiet.
        let edge = |cmp: &str, agg: &str| -> Option<i64> {
            self.db
                .query_row(&format!("SELECT {agg}(sort_ms) FROM runs WHERE routine = ?1 AND sort_ms {cmp} ?2 AND status NOT IN ('missed', 'skipped', 'blocked')"), params![routine, sort_ms], |r| r.get(0))
                .unwrap()
        };
        let (from, until) = (edge("<", "MAX").unwrap_or(i64::MIN), edge(">", "MIN").unwrap_or(i64::MAX));
        match e.state.as_str() {
            "delivered" | "summarized" => {
                let other: Option<String> = self
                    .db
                    .query_row(
                        "SELECT r.id FROM runs r JOIN outbox o ON o.run_id = r.id AND o.channel = ?1
                         WHERE r.routine = ?2 AND r.id <> ?3 AND r.sort_ms > ?4 AND r.sort_ms < ?5 AND o.state IN ('delivered', 'summarized')
                           AND r.status IN ('missed', 'skipped') AND COALESCE(r.reason, '') <> 'superseded' LIMIT 1",
                        params![e.channel, routine, e.run_id, from, until],
                        |r| r.get(0),
                    )
                    .optional()
                    .unwrap();
                match other {
                    Some(other) => broken("quiet_told_once", format!("{routine}'s quiet slots {} and {other} are one stretch, and both were told on {}", e.run_id, e.channel)).map(|_| true),
                    None => Ok(true),
                }
            }
            "not_needed" => {
                let Some(by) = e.last_error.as_deref().and_then(|m| m.strip_prefix("told with run ")).and_then(|m| m.split(',').next()) else { return Ok(true) };
                let teller: Option<(i64, String)> = self
                    .db
                    .query_row("SELECT r.sort_ms, o.state FROM runs r JOIN outbox o ON o.run_id = r.id AND o.channel = ?2 WHERE r.id = ?1 AND r.routine = ?3", params![by, e.channel, routine], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
                    .unwrap();
                match teller {
                    Some((at, _)) if at <= from || at >= until || at > sort_ms => broken("quiet_told_once", format!("{routine}'s quiet slot {} says run {by} told of it, which is not earlier in its stretch", e.run_id)).map(|_| true),
                    Some((_, state)) if state == "pending" => Ok(false),
                    Some(_) => Ok(true),
                    None => broken("quiet_told_once", format!("{routine}'s quiet slot {} says run {by} told of it on {}, which has no such entry", e.run_id, e.channel)).map(|_| true),
                }
            }
            _ => Ok(true),
        }
    }
}
