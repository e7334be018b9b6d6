//! `on_denial: ask`: a tool call a run's agent wants and its routine does not allow, held while
//! the user is asked — and how it was answered (by whom, when), or that nobody answered in time.
//! The first answer wins: an answer is written only to an ask still open, in one statement.
//!
//! An ask is **held** while the agent waits on the call (Claude Code's prompt tool), or **after
//! the run**: the agent could not hold it (its CLI has no hook), or the engine stopped while it
//! waited — the run ended `blocked · needs_approval`, and Approve reruns it with the call allowed.
//! The asks after one run are answered together (one rerun allows them all), and the rerun that
//! an approval starts is claimed in the same statement that links it: one rerun, never two.

use super::Store;
use crate::error::Result;
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

/// One ask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Ask {
    pub id: String,
    pub run_id: String,
    pub routine: String,
    /// The tool as the agent names it (`Bash`).
    pub tool: String,
    /// Its input as JSON text, secrets masked (what the user is shown, inert).
    pub input: String,
    #[serde(serialize_with = "nightshift_model::words::ser_time")]
    pub asked_at: DateTime<Utc>,
    #[serde(serialize_with = "nightshift_model::words::ser_time")]
    pub expires_at: DateTime<Utc>,
    /// `allow`, `deny` or `timeout`; `None` while it waits.
    pub answer: Option<String>,
    /// Allowed for the rest of the run (that tool), not only this once.
    pub for_run: bool,
    #[serde(serialize_with = "nightshift_model::words::ser_opt_time")]
    pub answered_at: Option<DateTime<Utc>>,
    /// Where it was answered: `cli`, `window`, `desktop`, `phone`, `timeout`, `earlier` (an
    /// answer for the rest of the run).
    pub answered_by: Option<String>,
    /// The agent waits on it while it runs (`false`: asked after the run ended, `blocked ·
    /// needs_approval`). (Missing from an earlier release's answer: every ask was held then.)
    #[serde(default = "held_by_default")]
    pub held: bool,
    /// The run an approval after the run started, with the call allowed.
    #[serde(default)]
    pub rerun: Option<String>,
}

fn held_by_default() -> bool {
    true
}

const COLUMNS: &str = "id, run_id, routine, tool, input, asked_at, expires_at, answer, for_run, answered_at, answered_by, held, rerun";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Ask> {
    let time = |s: String| DateTime::parse_from_rfc3339(&s).map(|t| t.with_timezone(&Utc)).unwrap_or_default();
    Ok(Ask {
        id: r.get(0)?,
        run_id: r.get(1)?,
        routine: r.get(2)?,
        tool: r.get(3)?,
        input: r.get(4)?,
        asked_at: time(r.get(5)?),
        expires_at: time(r.get(6)?),
        answer: r.get(7)?,
        for_run: r.get::<_, i64>(8)? != 0,
        answered_at: r.get::<_, Option<String>>(9)?.map(time),
        answered_by: r.get(10)?,
        held: r.get::<_, i64>(11)? != 0,
        rerun: r.get(12)?,
    })
}

/// Write `ask` (open) with `conn` — alone, or inside the transaction that makes its run final.
pub(crate) fn insert(conn: &rusqlite::Connection, ask: &Ask) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO asks (id, run_id, routine, tool, input, asked_at, expires_at, held) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?
        .execute(params![ask.id, ask.run_id, ask.routine, ask.tool, ask.input, ask.asked_at.to_rfc3339(), ask.expires_at.to_rfc3339(), ask.held as i64])?;
    Ok(())
}

/// Link the approved asks after run `run_id` that no rerun claimed yet to rerun `rerun`; how
/// many it linked (0: claimed already, or none approved).
pub(crate) fn claim_rerun(conn: &rusqlite::Connection, run_id: &str, rerun: &str) -> rusqlite::Result<usize> {
    conn.prepare_cached("UPDATE asks SET rerun = ?2 WHERE run_id = ?1 AND held = 0 AND answer = 'allow' AND rerun IS NULL")?.execute(params![run_id, rerun])
}

/// As run `run_id` becomes final: asks it still held (its engine stopped while the agent waited)
/// stay open as asks after the run when it ends `needs_approval`; otherwise nobody can answer
/// them any more, and they are closed as `ended`.
pub(crate) fn settle_held(conn: &rusqlite::Connection, run_id: &str, needs_approval: bool, at: DateTime<Utc>) -> rusqlite::Result<()> {
    match needs_approval {
        true => conn.prepare_cached("UPDATE asks SET held = 0 WHERE run_id = ?1 AND answer IS NULL AND held = 1")?.execute([run_id])?,
        false => conn
            .prepare_cached("UPDATE asks SET answer = 'ended', answered_by = 'run ended', answered_at = ?2 WHERE run_id = ?1 AND answer IS NULL AND held = 1")?
            .execute(params![run_id, at.to_rfc3339()])?,
    };
    Ok(())
}

impl Store {
    /// Record a new ask (open).
    pub fn add_ask(&self, ask: &Ask) -> Result<()> {
        insert(&self.conn(), ask)?;
        Ok(())
    }

    /// Answer ask `id` if it is still open — an ask after a run together with the other open
    /// asks after that run; `false` when it was answered already (the first answer wins) or does
    /// not exist.
    pub fn answer_ask(&self, id: &str, answer: &str, for_run: bool, by: &str, at: DateTime<Utc>) -> Result<bool> {
        let n = self
            .conn()
            .prepare_cached(
                "UPDATE asks SET answer = ?2, for_run = ?3, answered_by = ?4, answered_at = ?5
                 WHERE answer IS NULL AND (id = ?1 OR (held = 0 AND run_id = (SELECT run_id FROM asks WHERE id = ?1 AND held = 0 AND answer IS NULL)))",
            )?
            .execute(params![id, answer, for_run as i64, by, at.to_rfc3339()])?;
        Ok(n >= 1)
    }

    /// Runs whose asks after the run were approved and that no rerun was started for yet.
    pub fn approved_without_rerun(&self) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT DISTINCT run_id FROM asks WHERE held = 0 AND answer = 'allow' AND rerun IS NULL ORDER BY run_id")?;
        let rows = stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// The asks whose approval started run `rerun_id` (what it may do beyond its routine).
    pub fn asks_rerun_by(&self, rerun_id: &str) -> Result<Vec<Ask>> {
        self.asks_where("rerun = ?1", [rerun_id])
    }

    pub fn ask(&self, id: &str) -> Result<Option<Ask>> {
        Ok(self.conn().prepare_cached(&format!("SELECT {COLUMNS} FROM asks WHERE id = ?1"))?.query_row([id], row).optional()?)
    }

    /// Every ask still waiting, oldest first.
    pub fn open_asks(&self) -> Result<Vec<Ask>> {
        self.asks_where("answer IS NULL", [])
    }

    /// Every ask of routine `routine`'s runs, oldest first (few: asks are rare).
    pub fn asks_of_routine(&self, routine: &str) -> Result<Vec<Ask>> {
        self.asks_where("routine = ?1", [routine])
    }

    /// The asks that pass `filter` (an SQL condition on `values`), oldest first.
    fn asks_where(&self, filter: &'static str, values: impl rusqlite::Params) -> Result<Vec<Ask>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM asks WHERE {filter} ORDER BY asked_at"))?;
        let rows = stmt.query_map(values, row)?.collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Every ask of run `run_id`, oldest first.
    pub fn asks_of(&self, run_id: &str) -> Result<Vec<Ask>> {
        self.asks_where("run_id = ?1", [run_id])
    }
}

#[cfg(test)]
mod tests {
    use super::Ask;
    use crate::Store;
    use chrono::{Duration, TimeZone, Utc};

    #[test]
    fn the_first_answer_wins_and_the_open_ones_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let t = Utc.with_ymd_and_hms(2026, 12, 7, 2, 14, 0).unwrap();
        let ask = |id: &str| Ask { id: id.into(), run_id: "r1".into(), routine: "deps".into(), tool: "Bash".into(), input: "{\"command\":\"git push\"}".into(), asked_at: t, expires_at: t + Duration::minutes(30), answer: None, for_run: false, answered_at: None, answered_by: None, held: true, rerun: None };
        store.add_ask(&ask("a1")).unwrap();
        store.add_ask(&ask("a2")).unwrap();
        assert_eq!(store.open_asks().unwrap().len(), 2);
        assert!(store.answer_ask("a1", "allow", true, "phone", t + Duration::minutes(1)).unwrap());
        assert!(!store.answer_ask("a1", "deny", false, "cli", t + Duration::minutes(2)).unwrap(), "answered already");
        let a1 = store.ask("a1").unwrap().unwrap();
        assert_eq!((a1.answer.as_deref(), a1.for_run, a1.answered_by.as_deref()), (Some("allow"), true, Some("phone")));
        assert_eq!(store.open_asks().unwrap().iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), vec!["a2"]);
        assert_eq!(store.asks_of("r1").unwrap().len(), 2);
    }

    /// A run blocked for an approval: its asks are written with its final row, its held ask
    /// (the engine stopped while it waited) stays open after it; answered together; one rerun
    /// claimed, never two. A run that ended otherwise closes what it still held.
    #[test]
    fn asks_after_a_run_are_written_with_it_answered_together_and_rerun_once() {
        use crate::run::{Reason, RunStatus, Trigger};
        use crate::words::Agent;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let t = Utc.with_ymd_and_hms(2026, 12, 7, 2, 14, 0).unwrap();
        let new_run = |id: &str, trigger: Trigger| crate::runs::NewRun {
            id: id.into(),
            routine: "deps".into(),
            trigger,
            agent: Agent::Gemini,
            status: RunStatus::Running,
            reason: None,
            message: None,
            scheduled_for: None,
            started_at: Some(t),
            finished_at: None,
            account: None,
            run_dir: "/nonexistent".into(),
            owner: None,
            sort_at: t,
        };
        let ask = |id: &str, run: &str, held: bool| Ask { id: id.into(), run_id: run.into(), routine: "deps".into(), tool: "run_shell_command".into(), input: format!("touch {id}"), asked_at: t, expires_at: t + Duration::minutes(30), answer: None, for_run: false, answered_at: None, answered_by: None, held, rerun: None };
        let final_row = |reason: Option<Reason>, asks: Vec<Ask>| crate::runs::FinalRow {
            reason,
            asks,
            finished_at: t,
            ..crate::runs::tests::settlement(if reason.is_some() { RunStatus::Blocked } else { RunStatus::Completed })
        };
        store.insert_run(&new_run("blocked", Trigger::Schedule)).unwrap();
        store.add_ask(&ask("held", "blocked", true)).unwrap();
        assert!(store.finalize("blocked", &final_row(Some(Reason::NeedsApproval), vec![ask("after1", "blocked", false), ask("after2", "blocked", false)]), &[]).unwrap());
        let asks = store.asks_of("blocked").unwrap();
        assert_eq!(asks.iter().map(|a| (a.id.as_str(), a.held, a.answer.is_none())).collect::<Vec<_>>(), vec![("held", false, true), ("after1", false, true), ("after2", false, true)]);

        assert!(store.answer_ask("after2", "allow", false, "phone", t).unwrap());
        assert!(store.asks_of("blocked").unwrap().iter().all(|a| a.answer.as_deref() == Some("allow") && a.answered_by.as_deref() == Some("phone")), "answered together");
        assert!(!store.answer_ask("held", "deny", false, "cli", t).unwrap(), "the first answer wins");
        assert_eq!(store.approved_without_rerun().unwrap(), vec!["blocked"]);
        assert!(store.insert_rerun("blocked", &new_run("rerun", Trigger::Approval)).unwrap());
        assert!(!store.insert_rerun("blocked", &new_run("rerun2", Trigger::Approval)).unwrap(), "claimed already: no second rerun");
        assert!(store.get_run("rerun2").is_err(), "nothing written for it");
        assert_eq!(store.asks_rerun_by("rerun").unwrap().len(), 3);
        assert!(store.approved_without_rerun().unwrap().is_empty());

        store.insert_run(&new_run("cancelled", Trigger::Schedule)).unwrap();
        store.add_ask(&ask("orphan", "cancelled", true)).unwrap();
        assert!(store.finalize("cancelled", &final_row(None, vec![]), &[]).unwrap());
        let orphan = store.ask("orphan").unwrap().unwrap();
        assert_eq!((orphan.answer.as_deref(), orphan.held), (Some("ended"), true), "nobody can answer it any more");
    }
}
