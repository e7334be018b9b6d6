//! Pull requests (`push.pr`): the one a run's branch went to (on the run's row, `pull_request`),
//! and the one each routine keeps open (`routine_prs`) — the next run of the routine continues its
//! branch instead of opening a second, until it is merged or closed.

use super::Store;
use crate::error::Result;
use rusqlite::{params, OptionalExtension};

/// The pull request a routine keeps open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutinePr {
    /// `owner/name`.
    pub repo: String,
    pub number: u64,
    pub url: String,
    /// Its head branch, on the remote.
    pub branch: String,
    /// The run that opened it.
    pub opened_by: String,
}

/// One round of answering reviews of a pull request (`on_review: rerun`): a run a review fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewRound {
    pub run_id: String,
    /// GitHub's id of the review it answers.
    pub review: Option<u64>,
    /// Its pull request's state (`answered`, `unchanged`, …), once it has one.
    pub state: Option<String>,
}

/// What makes a run a round of routine `?1` answering reviews of pull request `?3` of `?2`: a
/// review fired it, and it was not recorded skipped or missed. Counted where a claim is refused
/// (`Store::claim_event_run`) and listed for the rounds so far — one definition for both.
pub(crate) const ROUNDS: &str = "routine = ?1 AND event IS NOT NULL AND json_extract(event, '$.review.id') IS NOT NULL
     AND json_extract(event, '$.repo') = ?2 AND json_extract(event, '$.number') = ?3 AND status NOT IN ('skipped', 'missed')";

impl Store {
    /// Record run `run_id`'s pull request as it stands.
    pub fn set_pull_request(&self, run_id: &str, pr: &crate::run::PullRequest) -> Result<()> {
        let json = serde_json::to_string(pr).unwrap_or_default();
        self.conn().prepare_cached("UPDATE runs SET pull_request = ?2 WHERE id = ?1")?.execute(params![run_id, json])?;
        Ok(())
    }

    /// The pull requests of `routine`'s runs in `[from, until]` (by their place in time), by run.
    pub fn pull_requests_between(&self, routine: &str, from: chrono::DateTime<chrono::Utc>, until: chrono::DateTime<chrono::Utc>) -> Result<Vec<(String, crate::run::PullRequest)>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT id, pull_request FROM runs WHERE routine = ?1 AND sort_ms >= ?2 AND sort_ms <= ?3 AND pull_request IS NOT NULL")?;
        let rows = stmt.query_map(params![routine, from.timestamp_millis(), until.timestamp_millis()], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        Ok(rows.filter_map(|r| r.ok()).filter_map(|(id, json)| Some((id, serde_json::from_str(&json).ok()?))).collect())
    }

    /// The pull request `routine` keeps open, if it has one on record.
    pub fn routine_pr(&self, routine: &str) -> Result<Option<RoutinePr>> {
        Ok(self
            .conn()
            .prepare_cached("SELECT repo, number, url, branch, opened_by FROM routine_prs WHERE routine = ?1")?
            .query_row([routine], |r| Ok(RoutinePr { repo: r.get(0)?, number: r.get::<_, i64>(1)? as u64, url: r.get(2)?, branch: r.get(3)?, opened_by: r.get(4)? }))
            .optional()?)
    }

    /// `routine` keeps `pr` open from now on (in place of any earlier one).
    pub fn keep_routine_pr(&self, routine: &str, pr: &RoutinePr) -> Result<()> {
        self.conn()
            .prepare_cached("INSERT OR REPLACE INTO routine_prs (routine, repo, number, url, branch, opened_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?
            .execute(params![routine, pr.repo, pr.number as i64, pr.url, pr.branch, pr.opened_by])?;
        Ok(())
    }

    /// The routine whose run opened pull request `number` of `repo` (the newest, should two have
    /// named it), if one did here.
    pub fn opener_of_pull(&self, repo: &str, number: u64) -> Result<Option<String>> {
        Ok(self
            .conn()
            .prepare_cached(
                "SELECT routine FROM runs WHERE pull_request IS NOT NULL AND json_extract(pull_request, '$.state') = 'opened'
                 AND json_extract(pull_request, '$.repo') = ?1 AND json_extract(pull_request, '$.number') = ?2 ORDER BY sort_ms DESC LIMIT 1",
            )?
            .query_row(params![repo, number as i64], |r| r.get(0))
            .optional()?)
    }

    /// The repositories `routine`'s runs opened pull requests on.
    pub fn pull_repos_of(&self, routine: &str) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT DISTINCT json_extract(pull_request, '$.repo') FROM runs WHERE routine = ?1 AND pull_request IS NOT NULL AND json_extract(pull_request, '$.state') = 'opened'",
        )?;
        let rows = stmt.query_map([routine], |r| r.get::<_, Option<String>>(0))?;
        Ok(rows.filter_map(|r| r.ok().flatten()).collect())
    }

    /// The runs of `routine` that answered (or are to answer) a review of pull request `number`
    /// of `repo`, oldest first: its rounds so far.
    pub fn review_rounds(&self, routine: &str, repo: &str, number: u64) -> Result<Vec<ReviewRound>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!("SELECT id, json_extract(event, '$.review.id'), json_extract(pull_request, '$.state') FROM runs WHERE {ROUNDS} ORDER BY sort_ms, id"))?;
        let rows = stmt.query_map(params![routine, repo, number as i64], |r| Ok(ReviewRound { run_id: r.get(0)?, review: r.get::<_, Option<i64>>(1)?.map(|n| n as u64), state: r.get(2)? }))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// `routine`'s pull request `number` is merged or closed: the next run opens a fresh one.
    pub fn forget_routine_pr(&self, routine: &str, number: u64) -> Result<()> {
        self.conn().prepare_cached("DELETE FROM routine_prs WHERE routine = ?1 AND number = ?2")?.execute(params![routine, number as i64])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::RoutinePr;
    use crate::Store;

    #[test]
    fn a_routine_keeps_one_pull_request_until_it_is_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        assert_eq!(store.routine_pr("deps").unwrap(), None);
        let pr = |n: u64| RoutinePr { repo: "acme/app".into(), number: n, url: format!("https://github.com/acme/app/pull/{n}"), branch: "nightshift/deps/r1".into(), opened_by: "r1".into() };
        store.keep_routine_pr("deps", &pr(1)).unwrap();
        store.keep_routine_pr("deps", &pr(2)).unwrap();
        assert_eq!(store.routine_pr("deps").unwrap(), Some(pr(2)), "one per routine");
        store.forget_routine_pr("deps", 1).unwrap();
        assert_eq!(store.routine_pr("deps").unwrap(), Some(pr(2)), "only the one named");
        store.forget_routine_pr("deps", 2).unwrap();
        assert_eq!(store.routine_pr("deps").unwrap(), None);
    }
}
