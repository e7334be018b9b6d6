//! One run's driver: an explicit state machine from the moment the queue claims the run until
//! its row is final — preflight → attempt n (on an account) → settling → final.
//!
//! The driver carries everything as values: the account of the current try, the tries so far,
//! and the accounts excluded from failover (tried ones, and those busy with other runs at the
//! moment of choosing). It never reads its own row back to learn them.

use super::accounts::{self, AccountPlan};
use super::attempt::{archive_attempt_logs, spawn_attempt};
use super::finalize::{self, Ended};
use super::remote_run;
use super::judge::classify;
use super::live::{Ending, LiveRun};
use super::supervise::{supervise, Proc};
use super::Core;
use crate::accounts::Account;
use crate::agents::Outcome;
use crate::events::EngineEvent;
use crate::health::Credential;
use crate::routine::{AccountChoice, Routine};
use crate::run::Started;
use crate::run::{Attempt, Reason, RunRecord};
use std::sync::Arc;
use tokio::sync::Notify;

/// Where a run is in its life after preflight (choosing and checking its account, then spawning
/// the first try — done before [`start`] returns).
enum State {
    /// Try number `n` (1-based) is running on `account` (here or on a host).
    Attempt { n: usize, proc: Proc, account: Option<(Account, Credential)> },
    /// The process ended (or never started); the row is about to become final.
    Settling(Ended),
}

struct Driver {
    core: Arc<Core>,
    /// The routine as it was when the run started (every try runs it so).
    routine: Routine,
    live: LiveRun,
    cancel: Arc<Notify>,
    attempts: Vec<Attempt>,
    /// Accounts failover must not choose again.
    tried: Vec<String>,
    /// The run's git workspace, set up once before the first try (every try works in it).
    workspace: Option<Started>,
}

/// Drive a run the queue just claimed (its row is `running`, owned by this engine). Returns once
/// its process is spawned (or the run could not start); the rest of its life goes on in a task —
/// so a CLI that returns right after "run now" has really started the run.
pub(crate) async fn start(core: &Arc<Core>, rec: RunRecord, routine: Routine, reserved: Option<String>) {
    let cancel = Arc::new(Notify::new());
    core.active.lock().unwrap_or_else(|e| e.into_inner()).insert(rec.id.clone(), Arc::clone(&cancel));
    core.emit(EngineEvent::RunStarted { run: Box::new(rec.clone()) });
    let live = LiveRun::starting(&rec, &routine, core.home.run_dir(&routine.name, &rec.id), core.clock.now());
    let mut driver = Driver { core: Arc::clone(core), routine, live, cancel, attempts: Vec::new(), tried: Vec::new(), workspace: None };
    let state = driver.preflight(reserved).await;
    tokio::spawn(driver.run(state));
}

impl Driver {
    async fn run(mut self, mut state: State) {
        loop {
            state = match state {
                State::Attempt { n, proc, account } => self.attempt(n, proc, account).await,
                State::Settling(ended) => {
                    finalize::settle(&self.core, &self.live, ended).await;
                    return;
                }
            };
        }
    }

    /// Preflight: choose the account (health and one-run-per-account checked; `reserved` is the
    /// one the lane decision set aside), then spawn the first try.
    async fn preflight(&mut self, reserved: Option<String>) -> State {
        match self.choose_account(reserved).await {
            AccountPlan::Blocked { reason, message, account, resets_at } => {
                tracing::warn!(run = %self.live.id, routine = %self.live.routine, %message, "run blocked before start");
                let mut ended = Ended::new(Ending::Blocked { reason, message, resets_at });
                ended.account = account;
                State::Settling(ended)
            }
            AccountPlan::Default => self.start_workspace(1, None).await,
            AccountPlan::Use(a, c) => self.start_workspace(1, Some((a, c))).await,
        }
    }

    /// Set up the run's workspace (a worktree of its own, or a picture of its checkout), then
    /// spawn try `n`. A worktree that cannot be made fails the run before anything runs.
    async fn start_workspace(&mut self, n: usize, account: Option<(Account, Credential)>) -> State {
        let (routine, id, run_dir, worktrees) =
            (self.routine.clone(), self.live.id.clone(), self.live.run_dir.clone(), self.core.home.worktrees_dir());
        let started = tokio::task::spawn_blocking(move || {
            // Once per run, before its workspace and every attempt (which all write into it).
            std::fs::create_dir_all(&run_dir).map_err(|e| {
                let cause = crate::error::io_cause_words(&e);
                format!("cannot create the run directory {}: {e}{cause}", run_dir.display())
            })?;
            crate::workspace::start(&routine, &id, &run_dir, &worktrees)
        })
        .await
        .unwrap_or_else(|e| Err(format!("setting up the workspace failed: {e}")));
        match started {
            Ok(workspace) => {
                self.workspace = workspace;
                self.spawn(n, account).await
            }
            Err(message) => {
                tracing::warn!(run = %self.live.id, routine = %self.live.routine, %message, "run could not start");
                let mut ended = Ended::new(Ending::SpawnFailed(message));
                ended.account = account.map(|(a, _)| a.email);
                State::Settling(ended)
            }
        }
    }

    /// Spawn try `n` — here, or on the routine's host; a spawn failure (or no reachable host)
    /// settles the run (with the tries so far).
    async fn spawn(&mut self, n: usize, account: Option<(Account, Credential)>) -> State {
        let now = self.core.clock.now();
        let creds = account.as_ref().map(|(a, c)| (a, c));
        let spawned = match self.routine.placement {
            Some(_) => remote_run::start(&self.core, &self.live, &self.routine, creds).await.map(Proc::Remote),
            None => spawn_attempt(&self.core, &self.routine, &self.live.id, &self.live.run_dir, now, creds, self.workspace.as_ref())
                .map(Proc::Local)
                .map_err(Ending::SpawnFailed),
        };
        match spawned {
            Ok(proc) => State::Attempt { n, proc, account },
            Err(ending) => {
                tracing::warn!(run = %self.live.id, routine = %self.live.routine, ?ending, "run could not start");
                let mut ended = Ended::new(ending);
                ended.attempts = std::mem::take(&mut self.attempts);
                ended.account = account.map(|(a, _)| a.email);
                State::Settling(ended)
            }
        }
    }

    /// Watch try `n` to its end; on a rate limit, fail over to a free, healthy account.
    async fn attempt(&mut self, n: usize, mut proc: Proc, account: Option<(Account, Credential)>) -> State {
        let ending = supervise(&self.core, &self.live, &mut proc, Arc::clone(&self.cancel)).await;
        if let Proc::Remote(remote) = proc {
            // Its end is kept here first, so its files there can go before it is settled (a
            // caller waiting for the final record may exit right after it).
            if remote_run::keep_locally(&self.live.run_dir, &ending) {
                remote_run::forget(&self.live.id, &remote).await;
            }
        }
        let outcome = classify(&self.core, &self.live, &ending).await;
        let email = account.as_ref().map(|(a, _)| a.email.clone());
        if let Some(email) = &email {
            let (core, email, id, o) = (Arc::clone(&self.core), email.clone(), self.live.id.clone(), outcome.clone());
            let _ = tokio::task::spawn_blocking(move || accounts::record_outcome(&core, &email, &id, &o)).await;
        }
        if let (Some(email), true) = (&email, self.may_fail_over(&ending, &outcome)) {
            self.tried.push(email.clone());
            if let AccountPlan::Use(next, cred) = self.choose_account(None).await {
                self.attempts.push(Attempt {
                    account: Some(email.clone()),
                    status: outcome.status(),
                    reason: outcome.reason,
                    message: outcome.message.clone().map(|m| self.core.redactor.redact(&m)),
                    resets_at: outcome.resets_at,
                });
                archive_attempt_logs(&self.live.run_dir, self.attempts.len());
                self.core.emit(EngineEvent::RunProgress {
                    run_id: self.live.id.clone(),
                    routine: self.live.routine.clone(),
                    message: format!("{email} is rate limited; retrying on {}", next.email),
                });
                tracing::info!(run = %self.live.id, from = %email, to = %next.email, "failing over to the next account");
                return self.spawn(n + 1, Some((next, cred))).await;
            }
        }
        let mut ended = Ended::new(ending);
        ended.outcome = Some(outcome);
        ended.attempts = std::mem::take(&mut self.attempts);
        ended.account = email;
        State::Settling(ended)
    }

    /// Fail over on a rate limit — never on an auth failure — when the routine may use another
    /// account.
    fn may_fail_over(&self, ending: &Ending, outcome: &Outcome) -> bool {
        !matches!(self.routine.account, AccountChoice::Pinned(_))
            && outcome.reason == Some(Reason::RateLimited)
            && matches!(ending, Ending::Exited(_))
    }

    /// Plan the account (off the async workers: the keychain can take seconds) and take it in
    /// the store — unless another run took it meanwhile, then the next one.
    async fn choose_account(&mut self, reserved: Option<String>) -> AccountPlan {
        let mut skip = self.tried.clone();
        for _ in 0..8 {
            let (core, routine, id, prefer, skip2) = (Arc::clone(&self.core), self.routine.clone(), self.live.id.clone(), reserved.clone(), skip.clone());
            let planned = tokio::task::spawn_blocking(move || {
                let busy = core.store.busy_accounts(&id).unwrap_or_default();
                let plan = accounts::plan(&core, &routine, prefer.as_deref(), &skip2, &busy);
                if let AccountPlan::Use(a, _) = &plan {
                    if !core.store.claim_account(&id, &a.email).unwrap_or(false) {
                        return Err(a.email.clone());
                    }
                }
                Ok(plan)
            })
            .await;
            match planned {
                Ok(Ok(plan)) => return plan,
                Ok(Err(taken)) => skip.push(taken),
                Err(e) => {
                    return AccountPlan::Blocked { reason: Reason::NoAccount, message: format!("choosing an account failed: {e}"), account: None, resets_at: None }
                }
            }
        }
        AccountPlan::Blocked { reason: Reason::NoAccount, message: "every account was taken by another run while choosing".into(), account: None, resets_at: None }
    }
}
