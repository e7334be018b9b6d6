//! Run rows: written when a run starts (atuin-style), finalized exactly once when it ends.
//! (Every statement on the `runs` table lives here — one place to read when the schema changes —
//! which is why it runs past the usual module length; a third of it is its tests.)

use super::Store;
use crate::error::{Error, ErrorCode, Result};
use crate::run::{Attempt, Channel, Reason, RunRecord, RunStatus, Trigger};
use crate::words::{fmt_time, parse_time, Agent};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Row};

/// What is known when a run row is first written.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub id: String,
    pub routine: String,
    pub trigger: Trigger,
    pub agent: Agent,
    pub status: RunStatus,
    pub reason: Option<Reason>,
    pub message: Option<String>,
    pub scheduled_for: Option<DateTime<Utc>>,
    pub started_at: Option<DateTime<Utc>>,
    /// Set for rows that are final from the start (missed, skipped).
    pub finished_at: Option<DateTime<Utc>>,
    pub account: Option<String>,
    pub run_dir: String,
    /// The process supervising this run (pid, start time).
    pub owner: Option<(u32, String)>,
    /// When it sorts in history.
    pub sort_at: DateTime<Utc>,
}

/// The final facts of a run, written once.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalRow {
    pub status: RunStatus,
    pub reason: Option<Reason>,
    pub message: Option<String>,
    pub exit_code: Option<i32>,
    pub account: Option<String>,
    pub resets_at: Option<DateTime<Utc>>,
    pub attempts: Vec<Attempt>,
    pub finished_at: DateTime<Utc>,
    pub duration_ms: Option<u64>,
    pub cost_usd: Option<f64>,
    pub session_id: Option<String>,
    pub report_path: Option<String>,
    /// Tokens and model, as the agent reported them.
    pub usage: Option<crate::run::Usage>,
    /// What the run changed in its git workspace (`None`: it had none).
    pub changes: Option<crate::run::Changes>,
    /// Tool calls its agent was refused.
    pub denials: Vec<crate::run::Denial>,
    /// Finalize only a row that is still `queued` (a cancel that must not hit a started run).
    pub only_if_queued: bool,
    /// Asks after the run to open with the final row (`blocked · needs_approval`: the calls the
    /// agent was refused and could not hold while the user was asked).
    pub asks: Vec<crate::asks::Ask>,
}

/// A row still `running`, as recovery sees it.
#[derive(Debug, Clone)]
pub struct OpenRun {
    pub record: RunRecord,
    pub pid: Option<u32>,
    pub pid_start: Option<String>,
    pub owner_pid: Option<u32>,
    pub owner_start: Option<String>,
    /// Where its process is on another machine (JSON), for a run placed on a host.
    pub remote: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct RunQuery {
    pub routine: Option<String>,
    pub status: Option<RunStatus>,
    /// From a previous [`Page::next_cursor`].
    pub cursor: Option<String>,
    pub limit: usize,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Page {
    pub runs: Vec<RunRecord>,
    /// Pass back to get the next (older) page; `None` at the end.
    pub next_cursor: Option<String>,
}

/// A waiting run's note is stored as `queued: <why>`; its place in the queue is read with it
/// (`queued (position 3): <why>`, `queued (behind 20+ others): …`) — runs queued before it, manual
/// ones first, as dispatch takes them. Stored, every start would rewrite the note of every run
/// behind it.
macro_rules! message_column {
    () => {
        "CASE WHEN status = 'queued' AND message LIKE 'queued: %' THEN \
           'queued (' || (SELECT CASE WHEN n < 20 THEN 'position ' || (n + 1) ELSE 'behind 20+ others' END FROM (SELECT \
             (CASE WHEN (runs.trigger IN ('manual', 'cli')) = 0 THEN \
                (SELECT COUNT(*) FROM (SELECT 1 FROM runs AS ahead WHERE ahead.status = 'queued' AND (ahead.trigger IN ('manual', 'cli')) = 1 LIMIT 20)) \
              ELSE 0 END) + \
             (SELECT COUNT(*) FROM (SELECT 1 FROM runs AS ahead WHERE ahead.status = 'queued' \
                AND (ahead.trigger IN ('manual', 'cli')) = (runs.trigger IN ('manual', 'cli')) AND ahead.rowid < runs.rowid LIMIT 20)) AS n)) \
           || '): ' || substr(message, 9) ELSE message END"
    };
}

macro_rules! columns {
    () => {
        concat!("id, routine, trigger, scheduled_for, started_at, finished_at, status, reason, ", message_column!(), ", \
         exit_code, account, resets_at, attempts, duration_ms, cost_usd, session_id, report_path, agent, run_dir, sort_ms, made_up_by, notified, changes, \
         input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, model, pruned_at, host, not_before_ms, wait_for_limit, denials, ignore_budget, premium_requests, event, remote_url, here, pull_request")
    };
}
const COLUMNS: &str = columns!();

impl Store {
    pub fn insert_run(&self, run: &NewRun) -> Result<()> {
        insert_row(&self.conn(), run, false).map(|_| ())
    }

    /// Claim scheduled slots by inserting their rows, in one transaction (a scheduler pass's rows:
    /// a burst of due routines is one commit — one write of each index page it touches — not one
    /// per run). Returns each row's record as stored, or `None` where the slot already had a row
    /// (another engine, or an earlier pass, claimed it): then nothing was written for it and
    /// nothing may be spawned.
    ///
    /// `owes` lists, by run id, what a row that is final from the start owes the user (a missed
    /// or skipped slot the routine wants told: its notification, its webhooks) — queued in the
    /// outbox with the row, or not at all.
    pub fn claim_slots(&self, runs: &[NewRun], owes: &std::collections::HashMap<String, Vec<Channel>>) -> Result<Vec<Option<RunRecord>>> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut claimed = Vec::with_capacity(runs.len());
        for run in runs {
            debug_assert!(run.scheduled_for.is_some(), "a slot claim needs scheduled_for");
            let inserted = insert_row(&tx, run, true)?;
            if let (true, Some(channels), Some(finished_at)) = (inserted, owes.get(&run.id).filter(|c| !c.is_empty()), run.finished_at) {
                tx.prepare_cached("UPDATE runs SET notified = 'pending' WHERE id = ?1")?.execute([&run.id])?;
                for channel in channels {
                    super::outbox::enqueue(&tx, &run.id, channel, finished_at)?;
                }
            }
            let record = if inserted { Some(tx.prepare_cached(GET_EXACT)?.query_row([&run.id], row_to_record)?) } else { None };
            claimed.push(record);
        }
        tx.commit()?;
        Ok(claimed)
    }

    /// How many runs are `running` now, across every process on this home.
    pub fn running_count(&self) -> Result<usize> {
        let n: i64 = self.conn().prepare_cached("SELECT COUNT(*) FROM runs WHERE status = 'running'")?.query_row([], |r| r.get(0))?;
        Ok(n as usize)
    }

    /// Failed or timed-out runs in a row, newest first, until a completed one.
    pub fn consecutive_failures(&self, routine: &str) -> Result<usize> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT status FROM runs WHERE routine = ?1 AND status IN ('completed', 'failed', 'timed_out')
             ORDER BY sort_ms DESC, id DESC LIMIT 100",
        )?;
        let statuses: Vec<String> = stmt.query_map([routine], |r| r.get(0))?.collect::<Result<_, _>>()?;
        Ok(statuses.iter().take_while(|s| s.as_str() != "completed").count())
    }

    /// Record the process that runs `id`, right after it was spawned.
    pub fn set_process(&self, id: &str, pid: u32, pid_start: Option<&str>) -> Result<()> {
        self.conn().prepare_cached("UPDATE runs SET pid = ?2, pid_start = ?3 WHERE id = ?1")?.execute(params![id, pid, pid_start])?;
        Ok(())
    }

    /// Hand a running run to another supervisor (crash recovery re-adopts it).
    pub fn set_owner(&self, id: &str, owner: (u32, &str)) -> Result<()> {
        self.conn().prepare_cached("UPDATE runs SET owner_pid = ?2, owner_start = ?3 WHERE id = ?1")?.execute(params![id, owner.0, owner.1])?;
        Ok(())
    }

    /// Finalize a run. Returns `false` (and changes nothing) when it was already final: the
    /// conditional update is what makes settling happen exactly once, across processes too.
    /// `outbox` lists the delivery channels (e.g. `notify`) queued in the same transaction, so a
    /// final run and what it owes the user are written together or not at all.
    pub fn finalize(&self, id: &str, s: &FinalRow, outbox: &[Channel]) -> Result<bool> {
        let attempts = serde_json::to_string(&s.attempts).unwrap_or_else(|_| "[]".into());
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let changed = tx.prepare_cached(
            "UPDATE runs SET status = ?2, reason = ?3, message = ?4, exit_code = ?5, account = ?6, resets_at = ?7,
                 attempts = ?8, retried = (?8 <> '[]'), finished_at = ?9, duration_ms = ?10, cost_usd = ?11, session_id = ?12, report_path = ?13,
                 notified = CASE WHEN ?14 THEN 'pending' ELSE NULL END, changes = ?16, worktree = ?17,
                 input_tokens = ?18, output_tokens = ?19, cache_read_tokens = ?20, cache_write_tokens = ?21, model = ?22, denials = ?23, premium_requests = ?24
             WHERE id = ?1 AND (status = 'queued' OR (status = 'running' AND NOT ?15))",
        )?
        .execute(params![
            id,
            s.status.as_str(),
            s.reason.map(|r| r.as_str()),
            s.message,
            s.exit_code,
            s.account,
            s.resets_at.as_ref().map(fmt_time),
            attempts,
            fmt_time(&s.finished_at),
            s.duration_ms.map(|d| d as i64),
            s.cost_usd,
            s.session_id,
            s.report_path,
            !outbox.is_empty(),
            s.only_if_queued,
            s.changes.as_ref().map(|c| serde_json::to_string(c).unwrap_or_default()),
            s.changes.as_ref().and_then(|c| c.worktree.clone()),
            s.usage.as_ref().and_then(|u| u.input_tokens).map(|n| n as i64),
            s.usage.as_ref().and_then(|u| u.output_tokens).map(|n| n as i64),
            s.usage.as_ref().and_then(|u| u.cache_read_tokens).map(|n| n as i64),
            s.usage.as_ref().and_then(|u| u.cache_write_tokens).map(|n| n as i64),
            s.usage.as_ref().and_then(|u| u.model.clone()),
            serde_json::to_string(&s.denials).unwrap_or_else(|_| "[]".into()),
            s.usage.as_ref().and_then(|u| u.premium_requests),
        ])?;
        if changed != 1 {
            return Ok(false);
        }
        for channel in outbox {
            super::outbox::enqueue(&tx, id, channel, s.finished_at)?;
        }
        // What the user is asked after the run, written with it: a blocked run's approval is
        // never lost between two writes.
        let needs_approval = s.reason == Some(crate::run::Reason::NeedsApproval);
        super::asks::settle_held(&tx, id, needs_approval, s.finished_at)?;
        for ask in &s.asks {
            super::asks::insert(&tx, ask)?;
        }
        tx.commit()?;
        Ok(true)
    }

    /// Claim the rerun of `run_id`'s approved asks after the run for the new run `row` and
    /// insert it, in one transaction; `false` (nothing written) when another process claimed them
    /// first or none is approved.
    pub fn insert_rerun(&self, run_id: &str, row: &NewRun) -> Result<bool> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let claimed = super::asks::claim_rerun(&tx, run_id, &row.id)?;
        if claimed == 0 {
            return Ok(false);
        }
        insert_row(&tx, row, false)?;
        tx.commit()?;
        Ok(true)
    }

    /// A run by id, or by a unique prefix of one (ids are long; `show 01jf3k` is friendlier).
    pub fn get_run(&self, id: &str) -> Result<RunRecord> {
        let conn = self.conn();
        let exact = conn.prepare_cached(GET_EXACT)?.query_row([id], row_to_record).optional()?;
        if let Some(run) = exact {
            return Ok(run);
        }
        // Ids are lower-case ULIDs (0-9, a-z), so a prefix is the range [prefix, prefix + "~").
        let prefix = id.to_ascii_lowercase();
        let found: Vec<RunRecord> = if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_alphanumeric()) {
            Vec::new()
        } else {
            let mut stmt = conn.prepare_cached(GET_PREFIX)?;
            let rows = stmt.query_map(params![prefix, format!("{prefix}~")], row_to_record)?;
            rows.collect::<Result<_, _>>()?
        };
        match found.len() {
            1 => Ok(found.into_iter().next().expect("one row")),
            0 => Err(Error::new(ErrorCode::RunNotFound, format!("no run with id \"{id}\" (see `nightshiftctl runs`)"))),
            _ => Err(Error::new(ErrorCode::Usage, format!("run id prefix \"{id}\" is ambiguous; give more characters"))),
        }
    }

    /// History, newest first, filtered, one page at a time (keyset pagination: the cost of a page
    /// does not grow with how far back it is).
    pub fn list_runs(&self, q: &RunQuery) -> Result<Page> {
        let limit = q.limit.clamp(1, 1000);
        let (sql, args) = list_query(q, limit)?;

        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows: Vec<(RunRecord, i64)> = stmt
            .query_map(rusqlite::params_from_iter(args), |row| Ok((row_to_record(row)?, row.get::<_, i64>(19)?)))?
            .collect::<Result<_, _>>()?;
        let next_cursor = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|(r, ms)| format!("{ms}:{}", r.id))
        } else {
            None
        };
        Ok(Page { runs: rows.into_iter().map(|(r, _)| r).collect(), next_cursor })
    }

    /// Runs that ended at or after `from` (by `finished_at`), oldest first, at most `limit` — what
    /// a viewer of this home on another machine missed while it was away, told once on its return.
    pub fn finished_since(&self, from: DateTime<Utc>, limit: usize) -> Result<Vec<RunRecord>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM runs WHERE finished_at >= ?1 AND status NOT IN ('queued', 'running') ORDER BY finished_at, id LIMIT ?2"))?;
        let rows = stmt.query_map(params![fmt_time(&from), limit.clamp(1, 1000) as i64], row_to_record)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The newest run of each of `routines` (the routines overview): one index lookup each, all
    /// in one read transaction (one lock, not one per routine).
    pub fn last_runs(&self, routines: &[&str]) -> Result<std::collections::HashMap<String, RunRecord>> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let mut out = std::collections::HashMap::with_capacity(routines.len());
        {
            let mut stmt = tx.prepare_cached(&format!("SELECT {COLUMNS} FROM runs WHERE routine = ?1 ORDER BY sort_ms DESC, id DESC LIMIT 1"))?;
            for routine in routines {
                if let Some(rec) = stmt.query_row([routine], row_to_record).optional()? {
                    out.insert(rec.routine.clone(), rec);
                }
            }
        }
        tx.commit()?;
        Ok(out)
    }

    /// Rows still `running` (for crash recovery).
    pub fn open_runs(&self) -> Result<Vec<OpenRun>> {
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS}, pid, pid_start, owner_pid, owner_start, remote FROM runs WHERE status = 'running' ORDER BY id"
        ))?;
        // The process columns follow the record's.
        let n = stmt.column_index("pid")?;
        let rows = stmt
            .query_map([], |row| {
                Ok(OpenRun {
                    record: row_to_record(row)?,
                    pid: row.get(n)?,
                    pid_start: row.get(n + 1)?,
                    owner_pid: row.get(n + 2)?,
                    owner_start: row.get(n + 3)?,
                    remote: row.get(n + 4)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// When the routine last ran before `run` (started, whatever the ending; missed, skipped and
    /// blocked slots did not run).
    pub fn last_ran_before(&self, run: &RunRecord) -> Result<Option<DateTime<Utc>>> {
        let at: Option<String> = self
            .conn()
            .prepare_cached(
                "SELECT started_at FROM runs WHERE routine = ?1 AND started_at IS NOT NULL AND status NOT IN ('missed', 'skipped', 'blocked')
                   AND sort_ms < (SELECT sort_ms FROM runs WHERE id = ?2) ORDER BY sort_ms DESC LIMIT 1",
            )?
            .query_row(params![run.routine, run.id], |r| r.get(0))
            .optional()?;
        Ok(at.as_deref().and_then(parse_time))
    }

    /// The report of the routine's last *completed* run — a failed run never feeds `{last_report}`.
    pub fn last_completed_report(&self, routine: &str) -> Result<Option<String>> {
        let path: Option<String> = self
            .conn()
            .query_row(
                "SELECT report_path FROM runs WHERE routine = ?1 AND status = 'completed' AND report_path IS NOT NULL
                 ORDER BY sort_ms DESC, id DESC LIMIT 1",
                [routine],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        Ok(path.and_then(|p| std::fs::read_to_string(p).ok()))
    }
}

const GET_EXACT: &str = concat!("SELECT ", columns!(), " FROM runs WHERE id = ?1");
const GET_PREFIX: &str = concat!("SELECT ", columns!(), " FROM runs WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 2");

/// The SQL and arguments of one history page (also what the query-plan test checks).
fn list_query(q: &RunQuery, limit: usize) -> Result<(String, Vec<rusqlite::types::Value>)> {
    let mut sql = format!("SELECT {COLUMNS} FROM runs WHERE 1=1");
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    if let Some(r) = &q.routine {
        args.push(r.clone().into());
        sql += &format!(" AND routine = ?{}", args.len());
    }
    if let Some(s) = q.status {
        args.push(s.as_str().to_string().into());
        sql += &format!(" AND status = ?{}", args.len());
    }
    if let Some(cursor) = &q.cursor {
        let (ms, id) = parse_cursor(cursor)?;
        args.push(ms.into());
        args.push(id.into());
        sql += &format!(" AND (sort_ms, id) < (?{}, ?{})", args.len() - 1, args.len());
    }
    args.push(((limit + 1) as i64).into());
    sql += &format!(" ORDER BY sort_ms DESC, id DESC LIMIT ?{}", args.len());
    Ok((sql, args))
}

fn parse_cursor(cursor: &str) -> Result<(i64, String)> {
    cursor
        .split_once(':')
        .and_then(|(ms, id)| Some((ms.parse().ok()?, id.to_string())))
        .ok_or_else(|| Error::new(ErrorCode::Usage, format!("invalid cursor \"{cursor}\"")))
}

fn row_to_record(row: &Row<'_>) -> rusqlite::Result<RunRecord> {
    let time = |i: usize| -> rusqlite::Result<Option<DateTime<Utc>>> {
        Ok(row.get::<_, Option<String>>(i)?.as_deref().and_then(parse_time))
    };
    let attempts: String = row.get(12)?;
    Ok(RunRecord {
        id: row.get(0)?,
        routine: row.get(1)?,
        trigger: row.get(2)?,
        scheduled_for: time(3)?,
        started_at: time(4)?,
        finished_at: time(5)?,
        status: row.get(6)?,
        reason: row.get(7)?,
        message: row.get(8)?,
        exit_code: row.get(9)?,
        account: row.get(10)?,
        resets_at: time(11)?,
        attempts: serde_json::from_str(&attempts).unwrap_or_default(),
        duration_ms: row.get::<_, Option<i64>>(13)?.map(|d| d.max(0) as u64),
        cost_usd: row.get(14)?,
        session_id: row.get(15)?,
        report_path: row.get(16)?,
        agent: row.get(17)?,
        run_dir: row.get(18)?,
        made_up_by: row.get(20)?,
        notified: row.get(21)?,
        changes: row.get::<_, Option<String>>(22)?.and_then(|text| match serde_json::from_str(&text) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(error = %e, "a run's change summary in the database could not be read");
                None
            }
        }),
        usage: {
            let n = |i: usize| -> rusqlite::Result<Option<u64>> { Ok(row.get::<_, Option<i64>>(i)?.map(|v| v.max(0) as u64)) };
            crate::run::Usage {
                input_tokens: n(23)?,
                output_tokens: n(24)?,
                cache_read_tokens: n(25)?,
                cache_write_tokens: n(26)?,
                model: row.get(27)?,
                premium_requests: row.get(34)?,
            }
            .or_none()
        },
        pruned_at: time(28)?,
        host: row.get(29)?,
        remote_url: row.get(36)?,
        due_at: row.get::<_, Option<i64>>(30)?.and_then(DateTime::from_timestamp_millis),
        wait_for_limit: row.get(31)?,
        denials: row.get::<_, String>(32).map(|d| serde_json::from_str(&d).unwrap_or_default())?,
        ignore_budget: row.get(33)?,
        here: row.get(37)?,
        pull_request: row.get::<_, Option<String>>(38)?.and_then(|text| serde_json::from_str(&text).ok()),
        event: row.get::<_, Option<String>>(35)?.and_then(|text| match serde_json::from_str(&text) {
            Ok(e) => Some(e),
            Err(e) => {
                tracing::warn!(error = %e, "a run's event in the database could not be read");
                None
            }
        }),
    })
}

/// Insert a run row on `conn` (a connection or a transaction). `or_ignore`: a slot that already
/// has a row is left alone and `false` returned.
pub(super) fn insert_row(conn: &rusqlite::Connection, run: &NewRun, or_ignore: bool) -> Result<bool> {
    let verb = if or_ignore { "INSERT OR IGNORE" } else { "INSERT" };
    let changed = conn.prepare_cached(&format!(
        "{verb} INTO runs (id, routine, trigger, agent, sort_ms, scheduled_for, started_at, status, account, run_dir, owner_pid, owner_start, reason, message, finished_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
    ))?
    .execute(params![
        run.id,
        run.routine,
        run.trigger.as_str(),
        run.agent,
        run.sort_at.timestamp_millis(),
        run.scheduled_for.as_ref().map(fmt_time),
        run.started_at.as_ref().map(fmt_time),
        run.status.as_str(),
        run.account,
        run.run_dir,
        run.owner.as_ref().map(|o| o.0),
        run.owner.as_ref().map(|o| o.1.clone()),
        run.reason.map(|r| r.as_str()),
        run.message,
        run.finished_at.as_ref().map(fmt_time),
    ])?;
    Ok(changed == 1)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use chrono::Duration;

    fn new_run(store: &Store, id: &str, routine: &str, at: DateTime<Utc>) {
        store
            .insert_run(&NewRun {
                id: id.into(),
                routine: routine.into(),
                trigger: Trigger::Manual,
                agent: Agent::Command,
                status: RunStatus::Running,
                reason: None,
                message: None,
                finished_at: None,
                scheduled_for: None,
                started_at: Some(at),
                account: None,
                run_dir: format!("/runs/{routine}/{id}"),
                owner: None,
                sort_at: at,
            })
            .unwrap();
    }

    #[test]
    fn a_pass_claims_its_slots_in_one_go_and_a_taken_slot_stays_the_takers() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let slot = Utc::now() - Duration::minutes(1);
        let row = |id: &str, routine: &str, trigger: Trigger, status: RunStatus| NewRun {
            id: id.into(),
            routine: routine.into(),
            trigger,
            agent: Agent::Command,
            status,
            reason: None,
            message: None,
            finished_at: (status != RunStatus::Queued).then_some(slot),
            scheduled_for: Some(slot),
            started_at: None,
            account: None,
            run_dir: format!("/runs/{routine}/{id}"),
            owner: None,
            sort_at: slot,
        };
        // Another engine claimed routine a's slot first.
        let owes_nothing = std::collections::HashMap::new();
        assert_eq!(store.claim_slots(&[row("first", "a", Trigger::Schedule, RunStatus::Queued)], &owes_nothing).unwrap().len(), 1);
        let claimed = store
            .claim_slots(&[
                row("late", "a", Trigger::Schedule, RunStatus::Queued),
                row("b1", "b", Trigger::Catchup, RunStatus::Queued),
                row("c1", "c", Trigger::Schedule, RunStatus::Missed),
            ], &owes_nothing)
            .unwrap();
        let got: Vec<Option<(&str, Trigger, RunStatus)>> = claimed.iter().map(|r| r.as_ref().map(|r| (r.id.as_str(), r.trigger, r.status))).collect();
        assert_eq!(got, [None, Some(("b1", Trigger::Catchup, RunStatus::Queued)), Some(("c1", Trigger::Schedule, RunStatus::Missed))]);
        assert!(store.get_run("late").is_err(), "nothing was written for the taken slot");
        assert_eq!(store.get_run("first").unwrap().status, RunStatus::Queued);
    }

    #[test]
    fn a_waiting_run_reads_with_its_place_in_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let at = Utc::now();
        // Queue order: manual runs first, then by arrival; 25 scheduled runs behind one manual.
        let queue = |id: &str, trigger: Trigger, note: &str| {
            store
                .insert_run(&NewRun {
                    id: id.into(),
                    routine: id.into(),
                    trigger,
                    agent: Agent::Command,
                    status: RunStatus::Queued,
                    reason: None,
                    message: Some(note.into()),
                    finished_at: None,
                    scheduled_for: None,
                    started_at: None,
                    account: None,
                    run_dir: format!("/runs/{id}/{id}"),
                    owner: None,
                    sort_at: at,
                })
                .unwrap()
        };
        for i in 0..25 {
            queue(&format!("s{i:02}"), Trigger::Schedule, "queued: waiting for a free lane");
        }
        queue("m", Trigger::Manual, "queued: waiting for the running m run to finish");
        queue("plain", Trigger::Schedule, "starts when the app runs");
        let message = |id: &str| store.get_run(id).unwrap().message.unwrap();
        assert_eq!(message("m"), "queued (position 1): waiting for the running m run to finish");
        assert_eq!(message("s00"), "queued (position 2): waiting for a free lane");
        assert_eq!(message("s18"), "queued (position 20): waiting for a free lane");
        assert_eq!(message("s19"), "queued (behind 20+ others): waiting for a free lane");
        assert_eq!(message("plain"), "starts when the app runs", "a note of another form is read as written");
        // A page of history says the same, and the place follows the queue as it drains.
        store.conn().execute("UPDATE runs SET status = 'running' WHERE id IN ('m', 's00')", []).unwrap();
        let page = store.list_runs(&RunQuery { status: Some(RunStatus::Queued), limit: 100, ..Default::default() }).unwrap();
        let s01 = page.runs.iter().find(|r| r.id == "s01").unwrap();
        assert_eq!(s01.message.as_deref(), Some("queued (position 1): waiting for a free lane"));
        assert_eq!(message("s19"), "queued (position 19): waiting for a free lane");
    }

    pub(crate) fn settlement(status: RunStatus) -> FinalRow {
        FinalRow {
            status,
            reason: None,
            message: Some("done".into()),
            exit_code: Some(0),
            account: None,
            resets_at: None,
            attempts: vec![],
            finished_at: Utc::now(),
            duration_ms: Some(5),
            cost_usd: Some(0.25),
            session_id: None,
            report_path: None,
            usage: None,
            changes: None,
            denials: vec![],
            only_if_queued: false,
            asks: vec![],
        }
    }

    #[test]
    fn finalize_happens_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        new_run(&store, "a1", "r", Utc::now());
        assert!(store.finalize("a1", &settlement(RunStatus::Completed), &[]).unwrap());
        assert!(!store.finalize("a1", &settlement(RunStatus::Failed), &[]).unwrap());
        let run = store.get_run("a1").unwrap();
        assert_eq!(run.status, RunStatus::Completed);
        assert_eq!(run.cost_usd, Some(0.25));
    }

    #[test]
    fn pages_newest_first_with_filters_and_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let t0 = Utc::now();
        for i in 0..25 {
            new_run(&store, &format!("id{i:02}"), if i % 2 == 0 { "even" } else { "odd" }, t0 + Duration::seconds(i));
        }
        let first = store.list_runs(&RunQuery { limit: 10, ..Default::default() }).unwrap();
        assert_eq!(first.runs.first().unwrap().id, "id24");
        assert_eq!(first.runs.len(), 10);
        let mut seen: Vec<String> = first.runs.iter().map(|r| r.id.clone()).collect();
        let mut cursor = first.next_cursor;
        while let Some(c) = cursor {
            let page = store.list_runs(&RunQuery { limit: 10, cursor: Some(c), ..Default::default() }).unwrap();
            seen.extend(page.runs.iter().map(|r| r.id.clone()));
            cursor = page.next_cursor;
        }
        assert_eq!(seen.len(), 25, "every run exactly once across pages");
        seen.dedup();
        assert_eq!(seen.len(), 25);

        let odd = store.list_runs(&RunQuery { routine: Some("odd".into()), limit: 100, ..Default::default() }).unwrap();
        assert_eq!(odd.runs.len(), 12);
        assert!(odd.next_cursor.is_none());
        store.finalize("id03", &settlement(RunStatus::Failed), &[]).unwrap();
        let failed = store.list_runs(&RunQuery { status: Some(RunStatus::Failed), limit: 100, ..Default::default() }).unwrap();
        assert_eq!(failed.runs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec!["id03"]);
    }

    #[test]
    fn prefix_lookup_and_clear_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        new_run(&store, "01abc", "r", Utc::now());
        new_run(&store, "01abd", "r", Utc::now());
        assert_eq!(store.get_run("01abc").unwrap().id, "01abc");
        assert_eq!(store.get_run("01ab").unwrap_err().code, ErrorCode::Usage);
        assert_eq!(store.get_run("zz").unwrap_err().code, ErrorCode::RunNotFound);
        assert_eq!(store.get_run("01ABC").unwrap().id, "01abc", "ids are case-insensitive");
        assert_eq!(store.get_run("01a%").unwrap_err().code, ErrorCode::RunNotFound, "not a pattern");
    }

    /// Every history query the faces issue — each filter combination, with and without a cursor,
    /// exact ids and id prefixes — is an index lookup: no full scan, no sort of the whole table.
    #[test]
    fn every_history_query_is_an_index_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        for i in 0..200 {
            new_run(&store, &format!("01abc{i:03}"), if i % 2 == 0 { "even" } else { "odd" }, Utc::now());
        }
        store.conn().execute_batch("ANALYZE").unwrap();
        let plan = |sql: &str, args: Vec<rusqlite::types::Value>| -> String {
            let conn = store.conn();
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let rows: Vec<String> = stmt.query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3)).unwrap().map(|r| r.unwrap()).collect();
            rows.join(" | ")
        };
        let mut checked = 0;
        for routine in [None, Some("odd".to_string())] {
            for status in [None, Some(RunStatus::Failed)] {
                for cursor in [None, Some("1764410400000:01abc100".to_string())] {
                    let q = RunQuery { routine: routine.clone(), status, cursor, limit: 50 };
                    let (sql, args) = list_query(&q, 50).unwrap();
                    let p = plan(&sql, args);
                    assert!(p.contains("USING INDEX") || p.contains("USING COVERING INDEX"), "{q:?}: {p}");
                    assert!(!p.contains("TEMP B-TREE"), "{q:?} sorts the whole result: {p}");
                    // A filtered page seeks on an index (the planner picks which, from ANALYZE);
                    // an unfiltered one walks the time index from the newest row.
                    if q.routine.is_some() || q.status.is_some() {
                        assert!(p.starts_with("SEARCH"), "{q:?} does not seek: {p}");
                    } else if q.cursor.is_none() {
                        assert!(p.contains("runs_by_time"), "{p}");
                    }
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 8);
        let p = plan(GET_EXACT, vec!["01abc001".to_string().into()]);
        assert!(p.contains("USING INDEX") || p.contains("PRIMARY KEY"), "{p}");
        let p = plan(GET_PREFIX, vec!["01abc".to_string().into(), "01abc~".to_string().into()]);
        assert!(p.starts_with("SEARCH") && (p.contains("USING INDEX") || p.contains("PRIMARY KEY")), "{p}");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.db");
        std::fs::write(&path, vec![b'x'; 8192]).unwrap();
        let err = Store::open(&path).unwrap_err();
        assert_eq!(err.code, ErrorCode::StoreUnavailable);
        assert!(err.message.contains("is not Nightshift's database — it is a text file, not a SQLite database") && err.message.contains("move that file away"), "{}", err.message);
        assert_eq!(std::fs::read(&path).unwrap(), vec![b'x'; 8192]);
    }

    #[test]
    fn migrations_are_idempotent_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let store = Store::open(&path).unwrap();
        new_run(&store, "x", "r", Utc::now());
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.get_run("x").unwrap().routine, "r");
    }
}
