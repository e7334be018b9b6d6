//! `on_denial: ask`: a tool call a run's agent wants and its routine does not allow, held while
//! the user is asked — and how it was answered (by whom, when), or that nobody answered in time.
//! The first answer wins: an answer is written only to an ask still open, in one statement.

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
}

const COLUMNS: &str = "id, run_id, routine, tool, input, asked_at, expires_at, answer, for_run, answered_at, answered_by";

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
    })
}

impl Store {
    /// Record a new ask (open).
    pub fn add_ask(&self, ask: &Ask) -> Result<()> {
        self.conn()
            .prepare_cached("INSERT INTO asks (id, run_id, routine, tool, input, asked_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?
            .execute(params![ask.id, ask.run_id, ask.routine, ask.tool, ask.input, ask.asked_at.to_rfc3339(), ask.expires_at.to_rfc3339()])?;
        Ok(())
    }

    /// Answer ask `id` if it is still open; `false` when it was answered already (the first
    /// answer wins) or does not exist.
    pub fn answer_ask(&self, id: &str, answer: &str, for_run: bool, by: &str, at: DateTime<Utc>) -> Result<bool> {
        let n = self
            .conn()
            .prepare_cached("UPDATE asks SET answer = ?2, for_run = ?3, answered_by = ?4, answered_at = ?5 WHERE id = ?1 AND answer IS NULL")?
            .execute(params![id, answer, for_run as i64, by, at.to_rfc3339()])?;
        Ok(n == 1)
    }

    pub fn ask(&self, id: &str) -> Result<Option<Ask>> {
        Ok(self.conn().prepare_cached(&format!("SELECT {COLUMNS} FROM asks WHERE id = ?1"))?.query_row([id], row).optional()?)
    }

    /// Every ask still waiting, oldest first.
    pub fn open_asks(&self) -> Result<Vec<Ask>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM asks WHERE answer IS NULL ORDER BY asked_at"))?;
        let rows = stmt.query_map([], row)?.collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Every ask of run `run_id`, oldest first.
    pub fn asks_of(&self, run_id: &str) -> Result<Vec<Ask>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM asks WHERE run_id = ?1 ORDER BY asked_at"))?;
        let rows = stmt.query_map([run_id], row)?.collect::<rusqlite::Result<_>>()?;
        Ok(rows)
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
        let ask = |id: &str| Ask { id: id.into(), run_id: "r1".into(), routine: "deps".into(), tool: "Bash".into(), input: "{\"command\":\"git push\"}".into(), asked_at: t, expires_at: t + Duration::minutes(30), answer: None, for_run: false, answered_at: None, answered_by: None };
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
}
