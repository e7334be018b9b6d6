//! Runs on other machines: the host each went to, where its process is there (for re-attaching
//! after a crash), and what connecting to each host showed lately.

use super::Store;
use crate::error::Result;
use crate::words::{fmt_time, parse_time};
use chrono::{DateTime, Utc};
use rusqlite::params;
use serde::Serialize;

/// A host's health as the last connection to it showed it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct HostRecord {
    pub host: String,
    /// When it was last tried (a run's start, following a run, `hosts check`).
    #[serde(serialize_with = "crate::words::ser_time")]
    pub checked_at: DateTime<Utc>,
    /// When it last answered; `null` if it never did.
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub last_seen: Option<DateTime<Utc>>,
    /// Why the last try failed (ssh's own words); `null` when it answered.
    pub last_error: Option<String>,
}

impl Store {
    /// The run goes to `host` (set before connecting: a run that cannot reach it still says where
    /// it was meant to go).
    pub fn set_host(&self, id: &str, host: &str) -> Result<()> {
        self.conn().prepare_cached("UPDATE runs SET host = ?2 WHERE id = ?1")?.execute(params![id, host])?;
        Ok(())
    }

    /// Where the run can be seen on its host (a workflow run's page on GitHub).
    pub fn set_remote_url(&self, id: &str, url: &str) -> Result<()> {
        self.conn().prepare_cached("UPDATE runs SET remote_url = ?2 WHERE id = ?1")?.execute(params![id, url])?;
        Ok(())
    }

    /// Where the run's process is on its host (JSON: the engine's `runner::remote::OnHost`).
    pub fn set_remote(&self, id: &str, remote: &str) -> Result<()> {
        self.conn().prepare_cached("UPDATE runs SET remote = ?2 WHERE id = ?1")?.execute(params![id, remote])?;
        Ok(())
    }

    /// Whether another run of `routine` is going on `host` now.
    pub fn routine_running_on(&self, routine: &str, host: &str, except: &str) -> Result<bool> {
        let n: i64 = self
            .conn()
            .prepare_cached("SELECT COUNT(*) FROM runs WHERE status = 'running' AND routine = ?1 AND host = ?2 AND id != ?3")?
            .query_row(params![routine, host, except], |r| r.get(0))?;
        Ok(n > 0)
    }

    /// How many runs are going on each host now (hosts with none are not listed).
    pub fn runs_going_by_host(&self) -> Result<std::collections::HashMap<String, usize>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT host, COUNT(*) FROM runs WHERE status = 'running' AND host IS NOT NULL GROUP BY host")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as usize)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// What a connection to `host` showed at `at`: it answered (`error` none) or why not.
    pub fn record_host_contact(&self, host: &str, at: DateTime<Utc>, error: Option<&str>) -> Result<()> {
        self.conn()
            .prepare_cached(
                "INSERT INTO host_health (host, checked_at, last_seen, last_error) VALUES (?1, ?2, CASE WHEN ?3 IS NULL THEN ?2 END, ?3)
                 ON CONFLICT(host) DO UPDATE SET checked_at = ?2,
                   last_seen = CASE WHEN ?3 IS NULL THEN ?2 ELSE last_seen END, last_error = ?3",
            )?
            .execute(params![host, fmt_time(&at), error])?;
        Ok(())
    }

    /// Every host tried so far, by name.
    pub fn host_health(&self) -> Result<Vec<HostRecord>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT host, checked_at, last_seen, last_error FROM host_health ORDER BY host")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(HostRecord {
                    host: r.get(0)?,
                    checked_at: parse_time(&r.get::<_, String>(1)?).unwrap_or_default(),
                    last_seen: r.get::<_, Option<String>>(2)?.as_deref().and_then(parse_time),
                    last_error: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_last_error_clears_when_it_answers_and_last_seen_stays_when_it_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db.sqlite")).unwrap();
        let t = |s: i64| DateTime::from_timestamp(1_700_000_000 + s, 0).unwrap();
        store.record_host_contact("box", t(0), Some("box: Connection refused")).unwrap();
        let first = &store.host_health().unwrap()[0];
        assert_eq!((first.last_seen, first.last_error.as_deref()), (None, Some("box: Connection refused")));
        store.record_host_contact("box", t(10), None).unwrap();
        store.record_host_contact("box", t(20), Some("box: timed out")).unwrap();
        let now = &store.host_health().unwrap()[0];
        assert_eq!((now.checked_at, now.last_seen, now.last_error.as_deref()), (t(20), Some(t(10)), Some("box: timed out")));
    }

    /// Held work is what an account stopped: a run blocked because its host was out of reach (or
    /// lacked the agent) is not made up when the account is next seen working.
    #[test]
    fn a_run_blocked_by_its_host_is_not_held_for_its_account() {
        use crate::run::{Reason, RunStatus, Trigger};
        use crate::words::Agent;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db.sqlite")).unwrap();
        let t = |s: i64| DateTime::from_timestamp(1_700_000_000 + s, 0).unwrap();
        for (id, routine, reason) in [("h1", "remote", Reason::HostUnreachable), ("m1", "missing", Reason::SpawnFailed), ("a1", "local", Reason::AuthPreflight)] {
            store
                .insert_run(&crate::NewRun {
                    id: id.into(),
                    routine: routine.into(),
                    trigger: Trigger::Schedule,
                    agent: Agent::Claude,
                    status: RunStatus::Blocked,
                    reason: Some(reason),
                    message: None,
                    scheduled_for: Some(t(0)),
                    started_at: Some(t(0)),
                    finished_at: Some(t(0)),
                    account: Some("me@x.dev".into()),
                    run_dir: "/nonexistent".into(),
                    owner: None,
                    sort_at: t(0),
                })
                .unwrap();
        }
        let health = crate::HealthRecord { account: "me@x.dev".into(), verdict: crate::words::Verdict::Ok, evidence: "a run worked".into(), at: t(60), resets_at: None, run_id: None };
        store.set_account_health(&health).unwrap();
        let owed: Vec<String> = store.held_runs_owed(t(-3600)).unwrap().into_iter().map(|h| h.id).collect();
        assert_eq!(owed, vec!["a1".to_string()], "only the run its account stopped is owed");
    }
}
