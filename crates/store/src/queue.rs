//! The durable queue: a queued run is a row, claimed by a conditional update exactly once.
//!
//! Every process on a home sees the same queue and the same running runs; a dispatch pass reads
//! both, decides and claims inside one `IMMEDIATE` transaction, so two engines deciding at the
//! same moment are serialised by SQLite and lanes hold across processes.

use super::Store;
use crate::error::Result;
use crate::run::{RunStatus, Trigger};
use crate::words::fmt_time;
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

/// How many queued runs of each class (manual, scheduled) one dispatch pass looks at.
pub const DISPATCH_WINDOW: i64 = 64;

/// The first `?1` waiting runs of each class, manual first, in arrival order: two ranges of the
/// `runs_queue` index (no sort of the whole queue, however long it is).
/// A run waiting for a time (a retry's backoff, a limit's reset) is not in it until then.
const HEAD_OF_QUEUE: &str = "SELECT * FROM (SELECT id, routine, trigger, owner_pid, owner_start, message, agent, not_before_ms FROM runs
                WHERE status = 'queued' AND (trigger IN ('manual', 'cli')) = 1 AND COALESCE(not_before_ms, 0) <= ?2 ORDER BY rowid LIMIT ?1)
 UNION ALL
 SELECT * FROM (SELECT id, routine, trigger, owner_pid, owner_start, message, agent, not_before_ms FROM runs
                WHERE status = 'queued' AND (trigger IN ('manual', 'cli')) = 0 AND COALESCE(not_before_ms, 0) <= ?2 ORDER BY rowid LIMIT ?1)";

/// A queued row as a dispatch pass sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedRow {
    pub id: String,
    pub routine: String,
    pub trigger: Trigger,
    pub owner_pid: Option<u32>,
    pub owner_start: Option<String>,
    pub message: Option<String>,
    /// Who does its work (per-agent caps count it).
    pub agent: crate::words::Agent,
    /// When a run that waited for a time (a retry, a limit's reset) was due to try again.
    pub due_at: Option<DateTime<Utc>>,
}

/// A running row: the routine, the account whose lane it holds, and its agent.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningRow {
    pub id: String,
    pub routine: String,
    pub account: Option<String>,
    pub agent: crate::words::Agent,
}

/// What a dispatch pass decided, to apply in its transaction.
#[derive(Debug, Default)]
pub struct Claims {
    /// (run id, account reserved for it): `queued` → `running`, owned by the claimer.
    pub starts: Vec<(String, Option<String>)>,
    /// (run id, note) for queued rows whose note changed.
    pub notes: Vec<(String, String)>,
}

/// A run held by a sign-in failure, owed once its account works again.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldRun {
    pub id: String,
    pub routine: String,
    pub account: String,
}

/// A row of `SELECT id, routine, trigger, owner_pid, owner_start, message, agent, not_before_ms`.
fn queued_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<QueuedRow> {
    Ok(QueuedRow {
        id: r.get(0)?,
        routine: r.get(1)?,
        trigger: r.get(2)?,
        owner_pid: r.get(3)?,
        owner_start: r.get(4)?,
        message: r.get(5)?,
        agent: r.get(6)?,
        due_at: r.get::<_, Option<i64>>(7)?.and_then(DateTime::from_timestamp_millis),
    })
}

impl Store {
    /// One dispatch pass: read the queue and the running runs, let `decide` choose, then claim its
    /// starts for `owner` — all in one write transaction. Returns the ids this pass claimed (a
    /// start whose row was not owned by `owner` any more is not claimed).
    pub fn dispatch(
        &self,
        owner: (u32, &str),
        now: DateTime<Utc>,
        decide: impl FnOnce(&[QueuedRow], &[RunningRow]) -> Claims,
    ) -> Result<Vec<(String, Option<String>)>> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // The head of each class is enough to decide (at most `max_parallel` start per pass); a
        // run further back gets its turn as the head drains.
        let queued: Vec<QueuedRow> = {
            let mut stmt = tx.prepare_cached(HEAD_OF_QUEUE)?;
            let rows = stmt.query_map([DISPATCH_WINDOW, now.timestamp_millis()], queued_row)?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        if queued.is_empty() {
            return Ok(Vec::new());
        }
        let running: Vec<RunningRow> = {
            let mut stmt = tx.prepare_cached("SELECT id, routine, account, agent FROM runs WHERE status = 'running'")?;
            let rows = stmt.query_map([], |r| Ok(RunningRow { id: r.get(0)?, routine: r.get(1)?, account: r.get(2)?, agent: r.get(3)? }))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let claims = decide(&queued, &running);
        let mut claimed = Vec::new();
        {
            let mut start = tx.prepare_cached(
                "UPDATE runs SET status = 'running', started_at = ?2, account = COALESCE(?5, account), message = NULL
                 WHERE id = ?1 AND status = 'queued' AND owner_pid = ?3 AND owner_start = ?4",
            )?;
            for (id, account) in claims.starts {
                if start.execute(params![id, fmt_time(&now), owner.0, owner.1, account])? == 1 {
                    claimed.push((id, account));
                }
            }
            let mut note = tx.prepare_cached("UPDATE runs SET message = ?2 WHERE id = ?1 AND status = 'queued'")?;
            for (id, message) in claims.notes {
                note.execute(params![id, message])?;
            }
        }
        tx.commit()?;
        Ok(claimed)
    }

    /// (queued runs that may start now, the earliest time one that waits becomes due): a pass
    /// with nothing due reads this and nothing else.
    pub fn queue_due(&self, now: DateTime<Utc>) -> Result<(usize, Option<DateTime<Utc>>)> {
        let (due, next): (i64, Option<i64>) = self.conn().prepare_cached(
            "SELECT COUNT(*) FILTER (WHERE COALESCE(not_before_ms, 0) <= ?1), MIN(not_before_ms) FILTER (WHERE not_before_ms > ?1)
             FROM runs WHERE status = 'queued'",
        )?
        .query_row([now.timestamp_millis()], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok((due as usize, next.and_then(DateTime::from_timestamp_millis)))
    }

    /// Put a running run back in the queue until `due` — a retry after its backoff, a wait for a
    /// limit's reset: its tries so far kept, its process and account let go (a waiting run holds
    /// no lane), its note saying why and when. Only the run's owner does this, once per try.
    pub fn requeue_until(&self, id: &str, owner: (u32, &str), attempts: &[crate::run::Attempt], due: DateTime<Utc>, note: &str) -> Result<bool> {
        let attempts = serde_json::to_string(attempts).unwrap_or_else(|_| "[]".into());
        let changed = self.conn().prepare_cached(
            "UPDATE runs SET status = 'queued', not_before_ms = ?2, attempts = ?3, retried = (?3 <> '[]'), message = ?4, pid = NULL, pid_start = NULL,
                 remote = NULL
             WHERE id = ?1 AND status = 'running' AND owner_pid = ?5 AND owner_start = ?6",
        )?
        .execute(params![id, due.timestamp_millis(), attempts, note, owner.0, owner.1])?;
        Ok(changed == 1)
    }

    /// A waiting run starts as soon as a lane is free (Run now on its routine). `true` if it
    /// was waiting.
    pub fn make_due(&self, id: &str) -> Result<bool> {
        let changed = self.conn().prepare_cached("UPDATE runs SET not_before_ms = NULL WHERE id = ?1 AND status = 'queued' AND not_before_ms IS NOT NULL")?.execute([id])?;
        Ok(changed == 1)
    }

    /// Keep what a person asked of a manual run (`run --wait-for-limit`, `--ignore-budget`).
    pub fn set_asks(&self, id: &str, asks: crate::run::RunAsks) -> Result<()> {
        self.conn().prepare_cached("UPDATE runs SET wait_for_limit = ?2, ignore_budget = ?3, here = ?4 WHERE id = ?1")?.execute(rusqlite::params![id, asks.wait_for_limit, asks.ignore_budget, asks.here])?;
        Ok(())
    }

    /// Whether the routine has a run waiting in the queue (for a lane or a time).
    pub fn has_queued_run(&self, routine: &str) -> Result<bool> {
        let found: Option<i64> = self.conn().query_row("SELECT 1 FROM runs WHERE routine = ?1 AND status = 'queued' LIMIT 1", [routine], |r| r.get(0)).optional()?;
        Ok(found.is_some())
    }

    /// The routine's queued run that waits for a time, if any: (id, when it is due).
    pub fn waiting_run_of(&self, routine: &str) -> Result<Option<(String, DateTime<Utc>)>> {
        let row: Option<(String, i64)> = self
            .conn()
            .query_row(
                "SELECT id, not_before_ms FROM runs WHERE routine = ?1 AND status = 'queued' AND not_before_ms IS NOT NULL ORDER BY rowid LIMIT 1",
                [routine],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(row.and_then(|(id, ms)| Some((id, DateTime::from_timestamp_millis(ms)?))))
    }

    /// Take over a queued row whose owner is gone (`from`), exactly once across engines.
    pub fn adopt_queued(&self, id: &str, from: (Option<u32>, Option<&str>), to: (u32, &str)) -> Result<bool> {
        let changed = self.conn().prepare_cached(
            "UPDATE runs SET owner_pid = ?4, owner_start = ?5
             WHERE id = ?1 AND status = 'queued' AND owner_pid IS ?2 AND owner_start IS ?3",
        )?
        .execute(params![id, from.0, from.1, to.0, to.1])?;
        Ok(changed == 1)
    }

    /// A run claimed by an engine that died before spawning anything goes back to the queue
    /// (nothing was done yet, so nothing is lost by starting it again), owned by `to`.
    pub fn requeue_unstarted(&self, id: &str, from: (Option<u32>, Option<&str>), to: (u32, &str), message: &str) -> Result<bool> {
        let changed = self.conn().prepare_cached(
            "UPDATE runs SET status = 'queued', started_at = NULL, owner_pid = ?4, owner_start = ?5, message = ?6
             WHERE id = ?1 AND status = 'running' AND pid IS NULL AND owner_pid IS ?2 AND owner_start IS ?3",
        )?
        .execute(params![id, from.0, from.1, to.0, to.1, message])?;
        Ok(changed == 1)
    }

    /// Queued rows, in queue order (owner included, for recovery).
    pub fn queued_rows(&self) -> Result<Vec<QueuedRow>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, routine, trigger, owner_pid, owner_start, message, agent, not_before_ms FROM runs WHERE status = 'queued' ORDER BY rowid",
        )?;
        let rows = stmt.query_map([], queued_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Set the note of a queued row (e.g. who will start it).
    pub fn set_queued_message(&self, id: &str, message: &str) -> Result<()> {
        self.conn().prepare_cached("UPDATE runs SET message = ?2 WHERE id = ?1 AND status = 'queued'")?.execute(params![id, message])?;
        Ok(())
    }

    /// Take `account` for run `id` unless another running run holds it — the one-run-per-account
    /// rule, enforced at the moment an account is chosen (first attempt and failover alike).
    pub fn claim_account(&self, id: &str, account: &str) -> Result<bool> {
        let changed = self.conn().prepare_cached(
            "UPDATE runs SET account = ?2 WHERE id = ?1
               AND NOT EXISTS (SELECT 1 FROM runs o WHERE o.status = 'running' AND o.account = ?2 AND o.id != ?1)",
        )?
        .execute(params![id, account])?;
        Ok(changed == 1)
    }

    /// Accounts held by running runs other than `except`.
    pub fn busy_accounts(&self, except: &str) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT DISTINCT account FROM runs WHERE status = 'running' AND account IS NOT NULL AND id != ?1")?;
        let rows = stmt.query_map([except], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The routine's queued or running run, if any (a slot that finds one is skipped).
    pub fn open_run_of(&self, routine: &str) -> Result<Option<(String, RunStatus)>> {
        let row: Option<(String, RunStatus)> = self
            .conn()
            .query_row(
                "SELECT id, status FROM runs WHERE routine = ?1 AND status IN ('queued', 'running') ORDER BY status = 'running' DESC LIMIT 1",
                [routine],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(row)
    }

    /// Queued or running runs owned by an engine other than `me`.
    pub fn open_runs_of_others(&self, me: (u32, &str)) -> Result<usize> {
        let n: i64 = self.conn().prepare_cached(
            "SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running') AND (owner_pid IS NOT ?1 OR owner_start IS NOT ?2)",
        )?
        .query_row(params![me.0, me.1], |r| r.get(0))?;
        Ok(n as usize)
    }

    /// (running, queued) across every process on this home.
    /// The routines that have queued runs (for looking up only those).
    /// The routines with a run queued or running (what a dispatch pass decides with).
    pub fn open_routine_names(&self) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT DISTINCT routine FROM runs WHERE status IN ('queued', 'running')")?;
        let names = stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        Ok(names)
    }

    pub fn open_counts(&self) -> Result<(usize, usize)> {
        let (running, queued): (i64, i64) = self.conn().prepare_cached(
            "SELECT COUNT(*) FILTER (WHERE status = 'running'), COUNT(*) FILTER (WHERE status = 'queued')
             FROM runs WHERE status IN ('queued', 'running')",
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok((running as usize, queued as usize))
    }

    /// Scheduled or catch-up runs that a sign-in failure held (blocked at preflight, or ended
    /// `auth_failed`) since `since`, not yet made up, whose account has since been seen working
    /// (a token set, a new login, a run that authenticated) — one per routine, the newest.
    pub fn held_runs_owed(&self, since: DateTime<Utc>) -> Result<Vec<HeldRun>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT r.id, r.routine, r.account FROM runs r
             JOIN account_health h ON h.account = r.account
             WHERE ((r.status = 'blocked' AND COALESCE(r.reason, '') NOT IN ('host_unreachable', 'active_run', 'spawn_failed'))
                    OR (r.status = 'failed' AND r.reason = 'auth_failed'))
               AND r.trigger IN ('schedule', 'catchup') AND r.made_up_by IS NULL AND r.sort_ms >= ?1
               AND h.verdict IN ('ok', 'live') AND h.at >= COALESCE(r.finished_at, '')
               AND NOT EXISTS (SELECT 1 FROM runs y WHERE y.routine = r.routine AND (y.sort_ms, y.id) > (r.sort_ms, r.id)
                               AND y.status NOT IN ('missed', 'skipped'))
             ORDER BY r.sort_ms",
        )?;
        let rows = stmt.query_map([since.timestamp_millis()], |r| Ok(HeldRun { id: r.get(0)?, routine: r.get(1)?, account: r.get(2)? }))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Queue the make-up run `row` for the held run `held` — both or neither, and only once.
    pub fn queue_make_up(&self, held: &str, row: &super::NewRun) -> Result<bool> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let changed = tx.prepare_cached("UPDATE runs SET made_up_by = ?2 WHERE id = ?1 AND made_up_by IS NULL")?.execute(params![held, row.id])?;
        if changed != 1 {
            return Ok(false);
        }
        super::runs::insert_row(&tx, row, false)?;
        tx.commit()?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dispatch_pass_reads_the_head_of_the_queue_from_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let plan = crate::query_plan(&store, HEAD_OF_QUEUE, 2);
        assert_eq!(plan.matches("USING INDEX runs_queue").count(), 2, "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }
}
