//! The git side of runs in the store: a worktree run's push state and the worktrees cleanup may
//! remove (settled runs whose worktree directory still exists — a partial index holds just those).

use super::Store;
use crate::error::Result;
use crate::run::{Changes, Push};
use crate::words::fmt_time;
use chrono::{DateTime, Utc};
use rusqlite::params;

/// A settled run that still has its worktree directory.
#[derive(Debug, Clone)]
pub struct KeptWorktree {
    pub run_id: String,
    pub routine: String,
    pub changes: Changes,
}

/// Settled runs with a worktree, oldest first: a walk of the partial index `runs_with_worktree`
/// (only rows that still have a worktree are in it), never of the whole history.
const KEPT: &str = "SELECT id, routine, changes FROM runs
     WHERE worktree IS NOT NULL AND status NOT IN ('queued', 'running') AND finished_at < ?1
     ORDER BY sort_ms LIMIT ?2";

impl Store {
    /// Record the latest push state in the run's change summary.
    pub fn set_push(&self, run_id: &str, push: &Push) -> Result<()> {
        let json = serde_json::to_string(push).unwrap_or_default();
        self.conn().prepare_cached(
            "UPDATE runs SET changes = json_set(changes, '$.push', json(?2)) WHERE id = ?1 AND changes IS NOT NULL",
        )?
        .execute(params![run_id, json])?;
        Ok(())
    }

    /// A push that failed after its last try: its state on the run, its outbox entry given up, and
    /// its news owed over `tell` (`Channel::PushFailed`) — in one transaction, so the failure is
    /// never recorded without being owed to the user.
    pub fn give_up_push(&self, run_id: &str, push: &Push, error: &str, tell: &[crate::run::Channel], now: DateTime<Utc>) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let json = serde_json::to_string(push).unwrap_or_default();
        tx.prepare_cached("UPDATE runs SET changes = json_set(changes, '$.push', json(?2)) WHERE id = ?1 AND changes IS NOT NULL")?.execute(params![run_id, json])?;
        tx.prepare_cached("UPDATE outbox SET state = 'not_delivered', lease_until_ms = NULL, last_error = ?3 WHERE run_id = ?1 AND channel = ?2")?
            .execute(params![run_id, crate::run::Channel::Push, error])?;
        for channel in tell {
            // Told again after a later failure (`push RUN` that failed once more).
            tx.prepare_cached("DELETE FROM outbox WHERE run_id = ?1 AND channel = ?2 AND state != 'pending'")?.execute(params![run_id, channel])?;
            super::outbox::enqueue(&tx, run_id, channel, now)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The news of a failed push that is no longer true (the branch went through after all):
    /// what is still pending of it is not needed. Returns how many entries that was.
    pub fn withdraw_push_failed(&self, run_id: &str, now: DateTime<Utc>) -> Result<usize> {
        let n = self.conn().prepare_cached(
            "UPDATE outbox SET state = 'not_needed', lease_until_ms = NULL, last_error = ?2 WHERE run_id = ?1 AND state = 'pending' AND channel LIKE 'push_failed:%'",
        )?
        .execute(params![run_id, format!("pushed after all at {}", crate::words::fmt_time(&now))])?;
        Ok(n)
    }

    /// Settled runs whose worktree is still on disk and that finished before `before`, oldest
    /// first (`before` = now: every one).
    pub fn kept_worktrees(&self, before: DateTime<Utc>, limit: usize) -> Result<Vec<KeptWorktree>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(KEPT)?;
        let rows = stmt.query_map(params![fmt_time(&before), limit as i64], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, Option<String>>(2)?))
        })?;
        let mut kept = Vec::new();
        for row in rows {
            let (run_id, routine, changes) = row?;
            let Some(changes) = changes.and_then(|c| serde_json::from_str(&c).ok()) else {
                continue;
            };
            kept.push(KeptWorktree { run_id, routine, changes });
        }
        Ok(kept)
    }

    /// A run going has made its worktree (counted by `max_worktrees`).
    pub fn set_worktree(&self, run_id: &str, path: &str) -> Result<()> {
        self.conn().prepare_cached("UPDATE runs SET worktree = ?2 WHERE id = ?1")?.execute(params![run_id, path])?;
        Ok(())
    }

    /// How many runs going hold a worktree (besides `except`).
    pub fn running_worktrees(&self, except: &str) -> Result<usize> {
        let n: i64 = self
            .conn()
            .prepare_cached("SELECT COUNT(*) FROM runs WHERE status IN ('running', 'queued') AND worktree IS NOT NULL AND id != ?1")?
            .query_row([except], |r| r.get(0))?;
        Ok(n as usize)
    }

    /// The run's worktree directory is gone (its branch stays).
    pub fn set_worktree_removed(&self, run_id: &str, at: DateTime<Utc>) -> Result<()> {
        self.conn().prepare_cached(
            "UPDATE runs SET worktree = NULL,
                 changes = json_set(changes, '$.worktree', json('null'), '$.worktree_removed_at', ?2)
             WHERE id = ?1",
        )?
        .execute(params![run_id, fmt_time(&at)])?;
        Ok(())
    }

    /// Push a run's branch again from the first try (after it gave up, or now instead of later).
    /// `false` when the run has no push owed.
    pub fn reset_push(&self, run_id: &str) -> Result<bool> {
        let n = self.conn().prepare_cached(
            "UPDATE outbox SET state = 'pending', attempts = 0, next_at_ms = 0, lease_until_ms = NULL
             WHERE run_id = ?1 AND channel = ?2 AND state IN ('pending', 'not_delivered')",
        )?
        .execute(params![run_id, crate::run::Channel::Push])?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use crate::run::{Channel, Delivery, Push, PushState, RunStatus, Trigger};
    use crate::words::Agent;

    /// A failed push's news is owed with the failure; once the branch is pushed, what is still
    /// pending of it is withdrawn and `deliveries retry` does not send it again.
    #[test]
    fn a_failed_push_is_news_only_while_it_is_failed() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::Store::open(&dir.path().join("db")).unwrap();
        let now = chrono::Utc::now();
        let run = crate::NewRun { id: "r1".into(), routine: "deps".into(), trigger: Trigger::Schedule, agent: Agent::Command, status: RunStatus::Running, reason: None, message: None, scheduled_for: None, started_at: Some(now), finished_at: None, account: None, run_dir: "/runs/deps/r1".into(), owner: None, sort_at: now };
        store.insert_run(&run).unwrap();
        store.conn().execute("UPDATE runs SET changes = json('{\"push\":{\"remote\":\"origin\",\"state\":\"pending\",\"tries\":0}}') WHERE id = 'r1'", []).unwrap();
        let (notice, post) = (Channel::Notify.push_failed(), Channel::Webhook("team".into()).push_failed());
        let failed = Push { remote: "origin".into(), state: PushState::Failed, onto: None, tries: 3, error: Some("refused".into()), at: Some(now) };
        store.give_up_push("r1", &failed, "refused", &[notice.clone(), post.clone()], now).unwrap();
        assert_eq!(store.delivery_state("r1", &notice).unwrap(), Some(Delivery::Pending));
        // The receiver refused it; retried by hand while the push is still failed: sent again.
        store.settle_delivery("r1", &post, Delivery::NotDelivered, Some("HTTP 400"), now).unwrap();
        assert_eq!(store.reset_delivery("r1", Some(&Channel::Webhook("team".into()))).unwrap(), 1);
        store.settle_delivery("r1", &post, Delivery::NotDelivered, Some("HTTP 400"), now).unwrap();
        // Pushed after all: the pending notification is withdrawn, the post not retried.
        store.set_push("r1", &Push { state: PushState::Pushed, error: None, ..failed }).unwrap();
        assert_eq!(store.withdraw_push_failed("r1", now).unwrap(), 1);
        assert_eq!(store.delivery_state("r1", &notice).unwrap(), Some(Delivery::NotNeeded));
        assert_eq!(store.reset_delivery("r1", None).unwrap(), 0);
    }

    #[test]
    fn cleanup_walks_only_the_runs_that_have_a_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::Store::open(&dir.path().join("db")).unwrap();
        let conn = store.conn();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::KEPT))
            .unwrap()
            .query_map(rusqlite::params!["2026-12-01T00:00:00.000Z", 10], |r| r.get::<_, String>(3))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let plan = plan.join(" | ");
        assert!(plan.contains("runs_with_worktree") && !plan.contains("TEMP B-TREE"), "{plan}");
    }
}
