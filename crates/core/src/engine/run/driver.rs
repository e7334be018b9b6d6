//! One run's driver: an explicit state machine from the moment the queue claims the run until
//! its row is final — preflight → attempt n (on an account) → settling → final.
//!
//! The driver carries everything as values: the account of the current try, the tries so far,
//! and the accounts excluded from failover (tried ones, and those busy with other runs at the
//! moment of choosing). It never reads its own row back to learn them.

use crate::engine::accounts::{self, AccountPlan};
use super::attempt::{archive_attempt_logs, spawn_attempt, Continuing};
use super::finalize::{self, RunEnd};
use crate::engine::followed::Following;
use super::remote_run;
use super::judge::classify;
use super::retry::{self, Next, RunFacts};
use super::live::{Ending, LiveRun};
use super::supervise::{supervise, Proc};
use crate::engine::state::Core;
use crate::accounts::Account;
use crate::run_dir::RunDir;
use crate::agents::Outcome;
use crate::events::EngineEvent;
use crate::health::Credential;
use crate::routine::{AccountChoice, Routine};
use crate::run::RunWorkspace;
use crate::run::{Attempt, Reason, RunRecord, RunStatus};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use tokio::sync::Notify;

/// Where a run is in its life after preflight (choosing and checking its account, then spawning
/// the first try — done before [`start`] returns).
enum State {
    /// Try number `n` (1-based) is running on `account` (here or on a host).
    Attempt { n: usize, proc: Proc, account: Option<(Account, Credential)> },
    /// The process ended (or never started); the row is about to become final.
    Settling(RunEnd),
    /// The try did not get the work done and the run will try again at `at` (a retry after its
    /// backoff, a limit's reset): back to the queue, as the same run.
    Later { at: DateTime<Utc>, note: String },
}

struct Driver {
    core: Arc<Core>,
    /// The routine as it was when the run started (every try runs it so).
    routine: Routine,
    live: LiveRun,
    /// This engine follows the run while the driver holds this: handed to settling at the end,
    /// let go when the run goes back to the queue to wait.
    following: Option<Following>,
    cancel: Arc<Notify>,
    /// Why the run exists and what it was asked (retry and limit-wait decisions need it).
    facts: RunFacts,
    /// The tries so far: earlier ones of this run (before it went back to the queue) included.
    attempts: Vec<Attempt>,
    /// When the current try started.
    try_started: DateTime<Utc>,
    /// Accounts failover must not choose again.
    tried: Vec<String>,
    /// The run's git workspace, set up once before the first try (every try works in it).
    workspace: Option<RunWorkspace>,
    /// Why the run is not tried again, for its final message ("failed after 3 tries").
    settle_note: Option<String>,
    /// The reason it ends with instead of its last try's (`interrupted`: a retry would have
    /// repeated work already done).
    settle_reason: Option<Reason>,
    /// The agent session of an earlier try that the current one continues.
    resumed: Option<String>,
    /// The routine's secrets (`secrets:`), read once before the first try.
    secrets: Vec<(String, String)>,
    /// A rerun an approval started (trigger `approval`): the calls it may make beyond its
    /// routine's rules (already in `routine`'s guard) and the session it continues.
    approved: Option<super::approval::Approved>,
}

/// Drive a run the queue just claimed (its row is `running`, owned by this engine). Returns once
/// its process is spawned (or the run could not start); the rest of its life goes on in a task —
/// so a CLI that returns right after "run now" has really started the run.
pub(crate) async fn start(core: &Arc<Core>, rec: RunRecord, routine: Routine, reserved: Option<String>) {
    let following = core.follow(&rec.id);
    let cancel = following.signal();
    core.emit(EngineEvent::RunStarted { run: Box::new(rec.clone()) });
    let now = core.clock.now();
    // `ping:` — the run started (once, whatever tries follow); sent like webhooks, never waited for.
    if routine.ping.is_some() {
        match core.store.owe(&rec.id, &crate::run::Channel::Ping(crate::run::PingEvent::Start), now) {
            Ok(()) => core.wakes.kick(crate::engine::signal::Wake::Webhooks),
            Err(e) => tracing::warn!(run = %rec.id, error = %e, "could not queue the start ping"),
        }
    }
    // A rerun an approval started may make the approved calls — this run only.
    let mut routine = routine;
    let approved = match rec.trigger {
        crate::run::Trigger::Approval => {
            let store = Arc::clone(core);
            let found = tokio::task::spawn_blocking({
                let rec = rec.clone();
                move || super::approval::Approved::of(&store.store, &rec)
            })
            .await
            .ok()
            .flatten();
            found.map(|(approved, asks)| {
                if let crate::routine::Action::Agent { guard, .. } = &mut routine.action {
                    asks.iter().for_each(|a| super::approval::widen(guard, a));
                }
                approved
            })
        }
        _ => None,
    };
    let live = LiveRun::starting(&rec, &routine, core.home.run_dir(&routine.name, &rec.id), now);
    let facts = RunFacts {
        trigger: rec.trigger,
        scheduled_for: rec.scheduled_for,
        first_started: rec.attempts.first().and_then(|a| a.started_at).or(rec.started_at).unwrap_or(now),
        wait_for_limit: rec.wait_for_limit,
        ignore_budget: rec.ignore_budget,
    };
    let mut driver =
        Driver { core: Arc::clone(core), routine, live, following: Some(following), cancel, facts, attempts: rec.attempts.clone(), try_started: now, tried: Vec::new(), workspace: None, settle_note: None, settle_reason: None, resumed: None, secrets: Vec::new(), approved };
    let state = driver.preflight(reserved).await;
    tokio::spawn(driver.run(state));
}

impl Driver {
    async fn run(mut self, mut state: State) {
        loop {
            state = match state {
                State::Attempt { n, proc, account } => self.attempt(n, proc, account).await,
                State::Settling(mut ended) => {
                    if let Some(note) = self.settle_note.take() {
                        match (&mut ended.outcome, &mut ended.ending) {
                            (Some(o), _) => o.message = Some(retry::with_note(o.message.as_deref(), &note)),
                            (None, Ending::Blocked { message, .. }) => *message = retry::with_note(Some(message), &note),
                            _ => {}
                        }
                    }
                    if let (Some(reason), Some(o)) = (self.settle_reason.take(), ended.outcome.as_mut()) {
                        (o.status, o.reason) = (Some(RunStatus::Failed), Some(reason));
                    }
                    ended.resumed = self.resumed.clone();
                    finalize::settle(&self.core, &self.live, ended, self.following.take()).await;
                    return;
                }
                State::Later { at, note } => match self.requeue(at, &note).await {
                    Ok(()) => return,
                    Err(ended) => State::Settling(ended),
                },
            };
        }
    }

    /// Preflight: choose the account (health and one-run-per-account checked; `reserved` is the
    /// one the lane decision set aside), then spawn the first try.
    async fn preflight(&mut self, reserved: Option<String>) -> State {
        let n = self.attempts.len() + 1;
        // Its folders, before anything starts: one that is missing (an unmounted disk, a moved
        // repository) blocks the run, naming it — waiting would not bring it back.
        if let Some(message) = missing_folder(&self.routine) {
            return self.blocked(Reason::NoCwd, message, None, None);
        }
        if self.routine.placement.as_ref().is_some_and(|p| p.fleet && p.hosts.is_empty()) {
            return self.blocked(Reason::NoHosts, format!("not started: {}", crate::routine::NO_FLEET), None, None);
        }
        // Its secrets, before anything starts: a missing one blocks the run, saying how to set it.
        if !self.routine.secrets.is_empty() {
            let (core, routine) = (Arc::clone(&self.core), self.routine.clone());
            match tokio::task::spawn_blocking(move || crate::engine::accounts::secrets::for_run(&core, &routine)).await {
                Ok(Ok(values)) => self.secrets = values,
                outcome => {
                    let message = match outcome {
                        Ok(Err(words)) => words,
                        _ => "not started: its secrets could not be read".to_string(),
                    };
                    return self.blocked(Reason::MissingSecret, message, None, None);
                }
            }
        }
        // A sandbox it asks for that cannot be built here: nothing starts without it.
        if let Err(message) = super::sandboxing::decide(&self.core, &self.routine) {
            return self.blocked(Reason::NoSandbox, message, None, None);
        }
        // A day's or month's budget already spent (the routine's, all runs'): nothing starts.
        if let Some(blocked) = self.budget_block(None) {
            return blocked;
        }
        // A retry that continues its earlier try's session needs that try's account (its
        // transcript is in that account's config dir).
        let reserved = self.resumable_earlier().and_then(|a| a.account.clone()).or(reserved);
        match self.choose_account(reserved).await {
            AccountPlan::Blocked { reason, message, account, resets_at } => {
                // Every account it may use is limited: wait for the first reset, like a try that
                // met the limit itself.
                if reason == Reason::RateLimited {
                    // Recorded as a try that was `blocked`: nothing ran (a run that only ever
                    // waited so ends `blocked`, not `failed`).
                    let limited = Outcome { resets_at, status: Some(RunStatus::Blocked), ..Outcome::failed(reason, message.clone()) };
                    if let Some(later) = self.later(&limited, false, account.clone(), n) {
                        return later;
                    }
                }
                self.blocked(reason, message, resets_at, account)
            }
            // Off the user's reserve: wait for the window's reset, saying so in those words.
            AccountPlan::Held { message, account, resets_at } => {
                let limited = Outcome { resets_at, status: Some(RunStatus::Blocked), ..Outcome::failed(Reason::RateLimited, message.clone()) };
                match self.later(&limited, false, Some(account.clone()), n) {
                    Some(State::Later { at, .. }) => State::Later { at, note: format!("{message}; it waits until then") },
                    Some(state) => state,
                    None => self.blocked(Reason::RateLimited, message, resets_at, Some(account)),
                }
            }
            AccountPlan::Default => self.start_workspace(n, None).await,
            AccountPlan::Use(a, c) => match self.budget_block(Some(&a.email)) {
                Some(blocked) => blocked,
                None => self.start_workspace(n, Some((a, c))).await,
            },
        }
    }

    /// `blocked · budget` when a day's or month's budget that applies to this run is spent —
    /// the routine's, `[budget]`'s, or (with `account`) that account's — unless a person said
    /// `run --ignore-budget`. The words say what was spent of what and when it frees.
    fn budget_block(&mut self, account: Option<&str>) -> Option<State> {
        if self.facts.ignore_budget {
            return None;
        }
        let (reached, tz) = crate::engine::accounts::budgets::reached(&self.core, &self.routine, account)?;
        let message = format!("not started: {}; `nightshiftctl run {} --ignore-budget` starts it anyway", reached.words(tz), self.routine.name);
        Some(self.blocked(Reason::Budget, message, Some(reached.frees_at), account.map(str::to_string)))
    }

    /// The run settles `blocked · reason` before anything started, with the tries it had.
    fn blocked(&mut self, reason: Reason, message: String, resets_at: Option<chrono::DateTime<chrono::Utc>>, account: Option<String>) -> State {
        tracing::warn!(run = %self.live.id, routine = %self.live.routine, %message, "run blocked before start");
        let mut ended = RunEnd::new(Ending::Blocked { reason, message, resets_at });
        ended.account = account;
        ended.attempts = std::mem::take(&mut self.attempts);
        State::Settling(ended)
    }

    /// Set up the run's workspace (a worktree of its own, or a picture of its checkout), then
    /// spawn try `n`. A worktree that cannot be made fails the run before anything runs.
    async fn start_workspace(&mut self, n: usize, account: Option<(Account, Credential)>) -> State {
        let (core, routine, id, run_dir, worktrees) =
            (Arc::clone(&self.core), self.routine.clone(), self.live.id.clone(), self.live.run_dir.clone(), self.core.home.worktrees_dir());
        let started = tokio::task::spawn_blocking(move || {
            // Once per run, before its workspace and every attempt (which all write into it).
            std::fs::create_dir_all(&run_dir).map_err(|e| {
                let cause = crate::error::io_cause_words(&e);
                format!("cannot create the run directory {}: {e}{cause}", run_dir.display())
            })?;
            // A later try of the run works in the workspace its first try set up.
            if let Some(started) = crate::workspace::started(&run_dir) {
                return Ok(Some(started));
            }
            if matches!(routine.workspace, crate::routine::Workspace::Worktree { .. }) {
                crate::engine::upkeep::housekeeping::make_room(&core, &id);
            }
            // `push.pr`: the reviewed pull request's branch, or the routine's open one, is continued.
            let onto = crate::engine::upkeep::pull_requests::continued_branch(&core, &routine, &id)?;
            let started = crate::workspace::start(&routine, &id, &run_dir, &worktrees, onto.as_deref())?;
            // Counted among the worktrees that exist from now on (`max_worktrees`).
            if let Some(path) = started.as_ref().and_then(|s| s.worktree.as_ref()) {
                if let Err(e) = core.store.set_worktree(&id, &path.display().to_string()) {
                    tracing::warn!(run = %id, error = %e, "could not record the run's worktree");
                }
            }
            Ok(started)
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
                let mut ended = RunEnd::new(Ending::SpawnFailed(message));
                ended.account = account.map(|(a, _)| a.email);
                State::Settling(ended)
            }
        }
    }

    /// Spawn try `n` — here, or on the routine's host; a spawn failure (or no reachable host)
    /// settles the run (with the tries so far).
    async fn spawn(&mut self, n: usize, account: Option<(Account, Credential)>) -> State {
        let now = self.core.clock.now();
        self.try_started = now;
        // After a try that changed things: continue its session, or — it cannot be continued
        // here (another account, the agent cannot) — end rather than do the work twice.
        let email = account.as_ref().map(|(a, _)| a.email.clone());
        self.resumed = None;
        if let Some(earlier) = self.resumable_earlier().cloned() {
            match earlier.session.clone().filter(|_| earlier.account == email) {
                Some(session) => self.resumed = Some(session),
                None if !self.routine.retry.after_work => {
                    let note = format!("not tried again: try {} had already run {} tool call{} that change things, and its session cannot be continued on {}; rerun it by hand, or set `retry_after_work: true`", self.attempts.len(), earlier.work, if earlier.work == 1 { "" } else { "s" }, email.as_deref().unwrap_or("this account"));
                    // Settled as `interrupted` the way a try that was not retried is (`settle_reason`).
                    self.settle_reason = Some(Reason::Interrupted);
                    let mut ended = RunEnd::new(Ending::Exited(None));
                    ended.outcome = Some(retry::ending_of(std::slice::from_ref(&earlier), &note));
                    ended.attempts = std::mem::take(&mut self.attempts);
                    ended.account = email;
                    return State::Settling(ended);
                }
                None => {}
            }
        }
        // A rerun after an approval: continue the blocked run's session (same agent and account,
        // here), told what was approved — or start afresh, told it after the task.
        let mut approval_words = None;
        if let (None, Some(approved)) = (&self.resumed, &self.approved) {
            if self.live.driver().resumes() && self.routine.placement.is_none() && approved.account == email {
                self.resumed = approved.session.clone();
            }
            approval_words = Some(approved.words(self.resumed.is_some()));
        }
        let cont = Continuing { session: self.resumed.as_deref(), words: approval_words.as_deref() };
        let creds = crate::engine::accounts::RunCreds { account: account.as_ref().map(|(a, c)| (a, c)), secrets: &self.secrets };
        let spawned = match self.routine.placement {
            Some(_) => remote_run::start(&self.core, &self.live, &self.routine, creds).await.map(Proc::Remote),
            None => spawn_attempt(&self.core, &self.routine, &self.live.id, &self.live.run_dir, now, creds, self.workspace.as_ref(), cont)
                .map(Proc::Local)
                .map_err(Ending::SpawnFailed),
        };
        match spawned {
            Ok(proc) => State::Attempt { n, proc, account },
            Err(ending) => {
                tracing::warn!(run = %self.live.id, routine = %self.live.routine, ?ending, "run could not start");
                // No host could be reached, the program could not be started: passing reasons
                // (an upgrade replacing the agent's binary), tried again like an outage.
                let passing = match &ending {
                    Ending::Blocked { reason: Reason::HostUnreachable, message, .. } => Some(Outcome::failed(Reason::HostUnreachable, message.clone())),
                    Ending::SpawnFailed(message) => Some(Outcome::failed(Reason::SpawnFailed, message.clone())),
                    _ => None,
                };
                if let Some(outcome) = passing {
                    let email = account.as_ref().map(|(a, _)| a.email.clone());
                    if let Some(later) = self.later(&outcome, false, email, n) {
                        return later;
                    }
                }
                let mut ended = RunEnd::new(ending);
                ended.attempts = std::mem::take(&mut self.attempts);
                ended.account = account.map(|(a, _)| a.email);
                State::Settling(ended)
            }
        }
    }

    /// Watch try `n` to its end; on a rate limit, fail over to a free, healthy account.
    async fn attempt(&mut self, n: usize, mut proc: Proc, account: Option<(Account, Credential)>) -> State {
        let ending = supervise(&self.core, &self.live, &mut proc, Arc::clone(&self.cancel)).await;
        let here = !matches!(proc, Proc::Remote(_));
        if let Proc::Remote(remote) = proc {
            // Its end is kept here first, so its files there can go before it is settled (a
            // caller waiting for the final record may exit right after it).
            if remote_run::keep_locally(&self.live.run_dir, &ending) {
                remote_run::forget(&self.live.id, &remote).await;
            }
        }
        let mut outcome = classify(&self.core, &self.live, &ending).await;
        if ending == Ending::Cancelled {
            if let Some(why) = self.following.as_ref().and_then(Following::take_note) {
                outcome.message = Some(why);
            }
        }
        let email = account.as_ref().map(|(a, _)| a.email.clone());
        if let Some((a, _)) = &account {
            let (core, agent, config_dir, id, mut o) = (Arc::clone(&self.core), self.live.agent, a.config_dir.clone(), self.live.id.clone(), outcome.clone());
            let email = a.email.clone();
            let _ = tokio::task::spawn_blocking(move || {
                // An agent that keeps its windows beside its output (Codex): read them from the
                // account's config dir — on this machine only.
                if o.windows.is_empty() && here {
                    o.windows = crate::agents::driver(agent).windows_kept_in(&config_dir, o.session_id.as_deref().unwrap_or(""), core.clock.now());
                }
                accounts::record_outcome(&core, &email, &id, &o)
            })
            .await;
        }
        if let (Some(email), true) = (&email, self.may_fail_over(&ending, &outcome)) {
            self.tried.push(email.clone());
            if let AccountPlan::Use(next, cred) = self.choose_account(None).await {
                self.attempts.push(self.this_try(Some(email.clone()), &outcome, None));
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
        if let Some(later) = self.later(&outcome, ending == Ending::TimedOut, email.clone(), n) {
            return later;
        }
        let mut ended = RunEnd::new(ending);
        ended.outcome = Some(outcome);
        ended.attempts = std::mem::take(&mut self.attempts);
        ended.account = email;
        State::Settling(ended)
    }

    /// The record of the try that just ended (secrets masked), due again at `next_at`.
    fn this_try(&self, account: Option<String>, outcome: &Outcome, next_at: Option<DateTime<Utc>>) -> Attempt {
        Attempt {
            account,
            status: outcome.status(),
            reason: outcome.reason,
            message: outcome.message.clone().map(|m| self.core.redactor.redact(&m)),
            resets_at: outcome.resets_at,
            started_at: Some(self.try_started),
            finished_at: Some(self.core.clock.now()),
            next_at,
            session: outcome.session_id.clone(),
            work: outcome.work,
            resumed: self.resumed.clone(),
        }
    }

    /// The last try, when it was a retry's reason to come back that had already changed things:
    /// the next try continues it (or the run ends). A failover's try (no wait) is not one.
    fn resumable_earlier(&self) -> Option<&Attempt> {
        self.attempts.last().filter(|a| a.next_at.is_some() && a.work > 0 && a.reason != Some(Reason::RateLimited))
    }

    /// Whether try `n`, ended with `outcome`, is tried again later ([`retry::after_try`]): then
    /// the try is recorded and its logs kept aside. Otherwise the reason it is not (a note
    /// the final message carries) is added to `outcome`'s message by the caller's settle.
    fn later(&mut self, outcome: &Outcome, timed_out: bool, account: Option<String>, n: usize) -> Option<State> {
        if outcome.status() == RunStatus::Completed {
            return None;
        }
        let now = self.core.clock.now();
        let jitter = (ulid::Ulid::new().random() % 1_000_000) as f64 / 1_000_000.0;
        // Its session can be continued by the next try: the agent resumes, and the try ran here.
        let resumable = self.live.driver().resumes() && outcome.session_id.is_some() && self.routine.placement.is_none();
        match retry::after_try(&self.routine, &self.facts, &retry::TryEnd { outcome, timed_out, earlier: &self.attempts, account: account.as_deref(), resumable }, now, jitter) {
            Next::Settle { note: None } => None,
            Next::NotRetried { note } => {
                self.settle_note = Some(note);
                self.settle_reason = Some(Reason::Interrupted);
                None
            }
            Next::Settle { note: Some(note) } => {
                self.settle_note = Some(note);
                None
            }
            Next::Later { at, note, .. } => {
                let tried = self.this_try(account, outcome, Some(at));
                self.attempts.push(tried);
                if RunDir::at(&self.live.run_dir).stdout().exists() {
                    archive_attempt_logs(&self.live.run_dir, n);
                }
                tracing::info!(run = %self.live.id, routine = %self.live.routine, %note, "the run tries again later");
                Some(State::Later { at, note })
            }
        }
    }

    /// Put the run back in the queue until `at` (it holds no lane meanwhile, and survives any
    /// restart: the wait is its row). If the row cannot be written, the run settles instead —
    /// nothing is lost, it just is not tried again.
    async fn requeue(&mut self, at: DateTime<Utc>, note: &str) -> Result<(), RunEnd> {
        let (core, id, attempts, note2) = (Arc::clone(&self.core), self.live.id.clone(), self.attempts.clone(), note.to_string());
        let written = tokio::task::spawn_blocking(move || {
            let me = (core.identity.0, core.identity.1.as_str());
            core.store.requeue_until(&id, me, &attempts, at, &note2)
        })
        .await;
        match written {
            Ok(Ok(true)) => {}
            other => {
                tracing::error!(run = %self.live.id, result = ?other.map(|r| r.map_err(|e| e.message)), "could not put the run back in the queue; settling it as it ended");
                let mut ended = RunEnd::new(Ending::Exited(None));
                ended.outcome = Some(retry::ending_of(&self.attempts, "not tried again: the run could not be put back in the queue"));
                self.attempts.pop();
                ended.attempts = std::mem::take(&mut self.attempts);
                return Err(ended);
            }
        }
        // It waits in the queue now: this engine no longer follows it.
        self.following = None;
        if let Ok(run) = self.core.store.get_run(&self.live.id) {
            self.core.emit(EngineEvent::RunQueued { run: Box::new(run) });
        }
        self.core.emit(EngineEvent::RunProgress { run_id: self.live.id.clone(), routine: self.live.routine.clone(), message: note.to_string() });
        self.core.emit_state();
        // The dispatchers (here and in other processes) look again: one of them starts it at `at`.
        crate::engine::signal::wake(&self.core);
        Ok(())
    }

    /// Fail over on a rate limit — never on an auth failure — when the routine may use another
    /// account.
    fn may_fail_over(&self, ending: &Ending, outcome: &Outcome) -> bool {
        !matches!(self.routine.account, AccountChoice::Pinned(_))
            && outcome.reason == Some(Reason::RateLimited)
            // Exited, or ended by the engine on the line that said it was limited (an agent
            // sleeping out a long limit): either way the agent's own verdict.
            && matches!(ending, Ending::Exited(_) | Ending::Settled)
    }

    /// Plan the account (off the async workers: the keychain can take seconds) and take it in
    /// the store — unless another run took it meanwhile, then the next one.
    async fn choose_account(&mut self, reserved: Option<String>) -> AccountPlan {
        let mut skip = self.tried.clone();
        // A person's own run may use the reserve that scheduled work leaves alone.
        let may_use_reserve = self.facts.trigger.by_hand();
        // A scheduled run first has the sign-in of the accounts it may take checked, where that
        // is due and the agent can be asked (`accounts::sign_in`): a refused one is not planned.
        if !may_use_reserve && self.tried.is_empty() {
            let (core, routine) = (Arc::clone(&self.core), self.routine.clone());
            let _ = tokio::task::spawn_blocking(move || accounts::sign_in::before_scheduled_run(&core, &routine)).await;
        }
        for _ in 0..8 {
            let (core, routine, id, prefer, skip2) = (Arc::clone(&self.core), self.routine.clone(), self.live.id.clone(), reserved.clone(), skip.clone());
            let planned = tokio::task::spawn_blocking(move || {
                let busy = core.store.busy_accounts(&id).unwrap_or_default();
                let plan = accounts::plan(&core, &routine, prefer.as_deref(), &skip2, &busy, may_use_reserve);
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

/// Why a routine that runs here cannot start in its folders: its `cwd` or one of its `allow.dirs`
/// is missing (a run on a host works in `remote_cwd` there).
fn missing_folder(routine: &Routine) -> Option<String> {
    if routine.placement.is_some() {
        return None;
    }
    if let Some(cwd) = routine.cwd.as_ref().filter(|d| !d.is_dir()) {
        return Some(format!("not started: its folder {} (`cwd:`) does not exist — mount or create it, or change `cwd:`", cwd.display()));
    }
    let dirs = routine.guard().map(|g| g.allow_dirs.as_slice()).unwrap_or_default();
    dirs.iter().find(|d| !d.is_dir()).map(|d| format!("not started: {} (`allow.dirs`) does not exist — mount or create it, or take it out of `allow.dirs`", d.display()))
}
