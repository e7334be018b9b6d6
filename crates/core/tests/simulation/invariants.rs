//! The promises, each stated once as a check the simulation runs after every step (with no run
//! open). docs/guarantees.md names each promise by the check that keeps it.
//!
//! The checks read the store's SQLite file directly (their own read-only connection), and the
//! slots a routine owes are worked out here with croner itself — not with the engine's own slot
//! arithmetic, which is among what is checked.

use super::world::{self, FileState, SimRoutine, World};
use chrono::{DateTime, Duration, Utc};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::collections::HashMap;

/// How far back the scheduler makes up slots (its `LOOKBACK_DAYS`), and the margin either side
/// within which the oracle asks neither "exactly one" nor "none".
const LOOKBACK: i64 = 7;
const MARGIN_SECS: i64 = 60;
/// A slot fired at most this late is on time (`schedule`), later a `catchup`.
const ON_TIME_SECS: i64 = 90;

/// A promise broken: which one, and what was seen.
#[derive(Debug)]
pub struct Broken {
    pub invariant: &'static str,
    pub detail: String,
}

pub fn broken(invariant: &'static str, detail: String) -> Result<(), Broken> {
    Err(Broken { invariant, detail })
}

/// What the checks have already looked at (the store only grows, so each step reads what is new).
pub struct Checker {
    db: Connection,
    pub rows_seen: i64,
    /// How far into the agent's ledger (bytes) the checks have read.
    ledger_read: u64,
    crons: HashMap<String, croner::Cron>,
    /// Run ids the ledger named, with what the agent did last.
    pub agent_did: HashMap<String, String>,
    /// Runs that were waiting for a later try when last looked at.
    waiting: Vec<String>,
    /// Tries on a revoked account, per (account, revocation).
    tries_while_revoked: HashMap<(String, u32), u32>,
}

type Row = (i64, String, String, Option<String>, String, Option<String>);

fn row(r: &rusqlite::Row) -> rusqlite::Result<Row> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
}

impl Checker {
    pub fn new(world: &World) -> Checker {
        let db = Connection::open_with_flags(world.db_path(), OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).unwrap();
        db.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        Checker { db, rows_seen: 0, ledger_read: 0, crons: HashMap::new(), agent_did: HashMap::new(), waiting: Vec::new(), tries_while_revoked: HashMap::new() }
    }

    /// Every check, after a step (no run open).
    pub fn after_step(&mut self, world: &World) -> Result<(), Broken> {
        self.nothing_left_open(world)?;
        self.verdicts_and_slots(world)?;
        self.never_final_twice(world)
    }

    /// `settled`: with every engine idle, no run is running and none is queued but one waiting
    /// for a later try's time — nothing waits forever, nothing was lost between a claim and its
    /// start (a killed engine's queued runs included). `waits_end_in_time`: a run waiting for a
    /// retry waits less than until its routine's next slot (that slot does the work instead).
    fn nothing_left_open(&mut self, world: &World) -> Result<(), Broken> {
        let now_ms = world.now().timestamp_millis();
        let open: Option<(String, String, String)> = self
            .db
            .query_row("SELECT id, routine, status FROM runs WHERE status = 'running' OR (status = 'queued' AND COALESCE(not_before_ms, 0) <= ?1) LIMIT 1", [now_ms], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
            .unwrap();
        if let Some((id, routine, status)) = open {
            return broken("settled", format!("run {id} of {routine} is still {status} with every engine idle"));
        }
        let mut stmt = self.db.prepare("SELECT id, routine, scheduled_for, not_before_ms, message, attempts FROM runs WHERE status = 'queued' AND scheduled_for IS NOT NULL").unwrap();
        type Waiting = (String, String, String, i64, Option<String>, String);
        let waiting: Vec<Waiting> = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))).unwrap().map(Result::unwrap).collect();
        drop(stmt);
        for (id, routine, slot, due_ms, message, attempts) in waiting {
            let Some(r) = world.routines.iter().find(|r| r.name == routine) else { continue };
            let slot = DateTime::parse_from_rfc3339(&slot).unwrap().with_timezone(&Utc);
            let due = DateTime::from_timestamp_millis(due_ms).unwrap();
            // The schedule it was claimed under (a routine whose file was since edited is not
            // held to its new one).
            if r.file != FileState::Live || r.edited_after(slot) {
                continue;
            }
            // A wait for a limit's reset ends within `max_wait` of the run's first try.
            if let (Some((_, max_wait)), true) = (r.agent, message.as_deref().is_some_and(|m| m.contains("waiting for the rate limit"))) {
                let tries: serde_json::Value = serde_json::from_str(&attempts).unwrap();
                let first = tries[0]["started_at"].as_str().map(|t| DateTime::parse_from_rfc3339(t).unwrap().with_timezone(&Utc));
                let bound = Duration::from_std(humantime::parse_duration(max_wait).unwrap()).unwrap() + Duration::seconds(1);
                if let Some(first) = first.filter(|f| due - *f > bound) {
                    return broken("holds_end_by_their_bound", format!("run {id} of {routine} waits for a limit until {due}, more than `max_wait: {max_wait}` after its first try at {first}"));
                }
            }
            if let Some(next) = self.slots(r, slot, due).into_iter().next() {
                return broken("waits_end_in_time", format!("run {id} of {routine} (slot {slot}) waits until {due}, past its next slot {next}"));
            }
        }
        Ok(())
    }

    /// New ledger lines, new rows, and rows not final when last looked at: `one_row_per_slot`,
    /// `verdict_is_the_agents`.
    fn verdicts_and_slots(&mut self, world: &World) -> Result<(), Broken> {
        // New ledger lines. A run's row is written before its process starts, so a line whose run
        // has no row at all is a run that ran and was lost.
        let (lines, read) = world.ledger_after(self.ledger_read);
        self.ledger_read = read;
        for (id, plan) in lines {
            let found: Option<String> = self.db.query_row("SELECT status FROM runs WHERE id = ?1", params![id], |r| r.get(0)).optional().unwrap();
            if found.is_none() {
                return broken("verdict_is_the_agents", format!("the agent ran as {id}, and no run record has that id"));
            }
            // `revoked_blocks_runs`: a revoked login is found out by one try; after it, no run
            // starts on that account until a new login.
            if let Some(who) = plan.strip_prefix("logged-out-") {
                let email = world::ACCOUNTS.iter().find(|a| a.starts_with(who)).unwrap();
                let n = self.tries_while_revoked.entry((email.to_string(), world.revocations.get(*email).copied().unwrap_or(0))).or_default();
                *n += 1;
                if *n > 1 {
                    return broken("revoked_blocks_runs", format!("run {id} tried {email} while its login was revoked, after another try had found that out"));
                }
            }
            self.agent_did.insert(id, plan);
        }
        let mut stmt = self.db.prepare("SELECT rowid, id, routine, scheduled_for, status, reason FROM runs WHERE rowid > ?1 ORDER BY rowid").unwrap();
        let rows: Vec<Row> = stmt.query_map(params![self.rows_seen], row).unwrap().map(Result::unwrap).collect();
        drop(stmt);
        let mut stmt = self.db.prepare("SELECT rowid, id, routine, scheduled_for, status, reason FROM runs WHERE id = ?1").unwrap();
        let waited: Vec<Row> = std::mem::take(&mut self.waiting).iter().map(|id| stmt.query_row([id], row).unwrap()).collect();
        drop(stmt);
        for (rowid, id, routine, slot, status, reason) in rows {
            self.rows_seen = self.rows_seen.max(rowid);
            if let Some(slot) = &slot {
                let n = self.rows_at(&routine, slot);
                if n != 1 {
                    return broken("one_row_per_slot", format!("{routine}'s slot {slot} has {n} rows (the newest: {id}, {status})"));
                }
            }
            self.verdict(id, routine, status, reason)?;
        }
        for (_, id, routine, _, status, reason) in waited {
            self.verdict(id, routine, status, reason)?;
        }
        Ok(())
    }

    /// A run's record says what its agent's last try did; one still waiting for a try is looked
    /// at again after the next step.
    fn verdict(&mut self, id: String, routine: String, status: String, reason: Option<String>) -> Result<(), Broken> {
        if status == "queued" {
            self.waiting.push(id);
            return Ok(());
        }
        let did = self.agent_did.get(&id);
        let expected = match did.map(String::as_str) {
            None => None,
            Some("0") | Some("big") | Some("ok") => Some("completed"),
            Some(p) if p.starts_with("logged-out") => Some("failed"),
            Some("hang") => Some("timed_out"),
            Some(_) => Some("failed"),
        };
        let ran = matches!(status.as_str(), "completed" | "failed" | "timed_out");
        // A run ends as its last try did; a last try that could not start is `blocked` (no
        // account free, its sign-in refused) or `failed · spawn_failed` (its routine broke or went
        // while it was queued), whatever an earlier try did.
        if status == "blocked" || reason.as_deref() == Some("spawn_failed") {
            return Ok(());
        }
        match (expected, ran) {
            (Some(want), _) if want != status => broken("verdict_is_the_agents", format!("run {id} of {routine}: the agent did {:?}, the record says {status} ({reason:?})", did.unwrap())),
            (None, true) => broken("verdict_is_the_agents", format!("run {id} of {routine} is {status} ({reason:?}) but its agent never ran")),
            _ => Ok(()),
        }
    }

    /// What a pass at `t` fired (or two engines' passes at that instant): `no_burst` — at most one
    /// run of a routine (catch-up makes up the newest slot only); `on_time_or_catchup` — a run for
    /// a slot is `schedule` when the slot is at most 90 s old, `catchup` when older, and never for
    /// a slot still ahead.
    pub fn fired(&self, fired: &[(String, String, nightshift_core::Trigger)], t: DateTime<Utc>) -> Result<(), Broken> {
        let mut names: Vec<&str> = fired.iter().map(|f| f.0.as_str()).collect();
        names.sort();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return broken("no_burst", format!("the pass (or two engines' passes at one instant) fired {} twice", w[0]));
        }
        for (routine, id, trigger) in fired {
            let slot: Option<String> = self.db.query_row("SELECT scheduled_for FROM runs WHERE id = ?1", params![id], |r| r.get(0)).unwrap();
            let Some(slot) = slot else { continue };
            let late = (t - DateTime::parse_from_rfc3339(&slot).unwrap().with_timezone(&Utc)).num_seconds();
            let said = if late <= ON_TIME_SECS { nightshift_core::Trigger::Schedule } else { nightshift_core::Trigger::Catchup };
            if *trigger != said || late < 0 {
                return broken("on_time_or_catchup", format!("run {id} of {routine} for {slot} was fired {late} s after its slot, trigger {}", trigger.as_str()));
            }
        }
        Ok(())
    }

    /// `why_accounts_for_every_slot`: `why` over the last two days of routine `r` puts each slot of
    /// its schedule (as croner counts them, since the routine was first seen) on a line, never says
    /// "no record", and makes every record of a slot in the window a line of its own.
    pub fn why_explains(&mut self, engine: &nightshift_core::Engine, r: &SimRoutine) -> Result<(), Broken> {
        use nightshift_core::view::why::{why, Fate};
        let told = why(engine, &r.name, 2).map_err(|e| Broken { invariant: "why_accounts_for_every_slot", detail: format!("why {} failed: {}", r.name, e.message) })?;
        if let Some(line) = told.lines.iter().find(|l| l.fate == Fate::NoRecord) {
            return broken("why_accounts_for_every_slot", format!("why {} says {} slot(s) at {} have no record: {}", r.name, line.slots, line.at, line.sentence));
        }
        // Slots before the routine was first seen are not its (why says so in a note).
        let first_seen: Option<String> = self.db.query_row("SELECT first_seen FROM routine_state WHERE routine = ?1", params![r.name], |row| row.get(0)).optional().unwrap();
        let known = first_seen.map(|t| DateTime::parse_from_rfc3339(&t).unwrap().with_timezone(&Utc)).unwrap_or(told.until).max(told.from);
        // Each slot of its schedule in the window (after its start: why's window is (from, until])
        // is on a line. (More lines than slots is no fault: a record of a schedule since edited is
        // a line too, and so is a record exactly at the window's start.)
        for slot in self.slots(r, known, told.until) {
            if !told.lines.iter().any(|l| l.from <= slot && slot <= l.at) {
                return broken("why_accounts_for_every_slot", format!("why {} ({} {}) over {}–{} has no line for the slot {slot}: {:?}", r.name, r.expr, r.tz, told.from, told.until, told.lines.iter().map(|l| (l.at, l.slots, l.fate)).collect::<Vec<_>>()));
            }
        }
        let mut stmt = self.db.prepare("SELECT id, scheduled_for FROM runs WHERE routine = ?1 AND scheduled_for >= ?2 AND scheduled_for <= ?3").unwrap();
        let rows: Vec<(String, String)> = stmt
            .query_map(params![r.name, nightshift_core::words::fmt_time(&told.from), nightshift_core::words::fmt_time(&told.until)], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (id, slot) in rows {
            if !told.lines.iter().any(|l| l.run_id.as_deref() == Some(id.as_str())) {
                return broken("why_accounts_for_every_slot", format!("why {} has no line for its record {id} of the slot {slot}", r.name));
            }
        }
        Ok(())
    }

    /// `final_once`: no run's end was announced twice (by one engine, or by a killed one and the
    /// one that adopted its run).
    fn never_final_twice(&self, world: &World) -> Result<(), Broken> {
        let finished = world.finished.lock().unwrap();
        match finished.iter().find(|(_, n)| **n > 1) {
            Some((id, n)) => broken("final_once", format!("run {id}'s end was announced {n} times")),
            None => Ok(()),
        }
    }

    /// After a pass at `t` (every engine's, and the runs settled): `each_slot_once` — every slot a
    /// live routine's schedule had since the oracle last looked, and within the look-back, has
    /// exactly one row (a run, a missed or skipped record); `lookback_bound` — none older.
    /// A routine whose file just became live owes the slots after this pass.
    pub fn after_pass(&mut self, routines: &mut [SimRoutine], t: DateTime<Utc>) -> Result<(), Broken> {
        for r in routines.iter_mut() {
            let from = r.covered_until.unwrap_or(t).max(r.live_since.unwrap_or(t));
            // Paused by the user or by the engine (failures in a row): the store says which.
            let paused: bool = self.db.query_row("SELECT paused FROM routine_state WHERE routine = ?1", params![r.name], |row| row.get(0)).optional().unwrap().unwrap_or(false);
            if r.file != FileState::Live || paused {
                r.live_since = None;
            } else if r.live_since.is_none() {
                r.live_since = Some(t);
            } else if t > from {
                self.owed_slots(r, from, t)?;
            }
            r.covered_until = Some(r.covered_until.map_or(t, |c| c.max(t)));
        }
        Ok(())
    }

    fn owed_slots(&mut self, r: &SimRoutine, from: DateTime<Utc>, t: DateTime<Utc>) -> Result<(), Broken> {
        for slot in self.slots(r, from, t) {
            let n = self.rows_at(&r.name, &nightshift_core::words::fmt_time(&slot));
            let age = t - slot;
            if age < Duration::days(LOOKBACK) - Duration::seconds(MARGIN_SECS) && n != 1 {
                return broken("each_slot_once", format!("{} ({} {}) slot {slot} has {n} rows at the pass of {t}", r.name, r.expr, r.tz));
            }
            if age > Duration::days(LOOKBACK) + Duration::seconds(MARGIN_SECS) && n != 0 {
                return broken("lookback_bound", format!("{} slot {slot} is older than the look-back at the pass of {t} and has {n} rows", r.name));
            }
        }
        Ok(())
    }

    /// The slots of `r`'s schedule after `after` up to `until`, worked out with croner itself
    /// (parsed once per expression), at most 5000.
    fn slots(&mut self, r: &SimRoutine, after: DateTime<Utc>, until: DateTime<Utc>) -> Vec<DateTime<Utc>> {
        let cron = self.crons.entry(r.expr.clone()).or_insert_with(|| croner::parser::CronParser::builder().seconds(croner::parser::Seconds::Optional).build().parse(&r.expr).unwrap());
        let mut at = after.with_timezone(&r.tz);
        let mut slots = Vec::new();
        while let Ok(next) = cron.find_next_occurrence(&at, false) {
            let slot = next.with_timezone(&Utc);
            if slot > until || slots.len() == 5000 {
                break;
            }
            slots.push(slot);
            at = next;
        }
        slots
    }

    /// How many records `routine` has for the slot `slot` (as the store writes times).
    fn rows_at(&self, routine: &str, slot: &str) -> i64 {
        self.db.query_row("SELECT COUNT(*) FROM runs WHERE routine = ?1 AND scheduled_for = ?2", params![routine, slot], |r| r.get(0)).unwrap()
    }
}
