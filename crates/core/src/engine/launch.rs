//! Starting runs: every run is submitted into the lanes; it starts at once when a lane is free,
//! otherwise it waits as a visible `queued` row with its position and reason.
//!
//! Lanes: at most `max_parallel` runs at once (counted in the database, so runs of other
//! processes on this home count too); scheduled and catch-up runs never take the last free lane,
//! so a manual "Run now" starts at once; one run per routine at a time.

use super::accounts::AccountPlan;
use super::settle::{self, Ending, LiveRun};
use super::{Core, Engine};
use crate::agents::{self, AgentDriver};
use crate::error::{Error, ErrorCode, Result};
use crate::events::EngineEvent;
use crate::routine::prompt::{render, PromptContext};
use crate::accounts::Account;
use crate::health::Credential;
use crate::routine::{Action, AgentKind, Routine};
use crate::run::{new_run_id, Attempt, Reason, RunRecord, RunStatus, Trigger};
use crate::runner::{env, process};
use crate::store::{NewRun, Settlement};
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, Notify};

/// A submitted run. Its record already exists (queued or running); `wait` gives the final one.
pub struct RunHandle {
    pub id: String,
    pub routine: String,
    done: oneshot::Receiver<RunRecord>,
}

impl RunHandle {
    /// Wait until the run is final and its settle hooks (bounded) have run.
    pub async fn wait(self) -> Result<RunRecord> {
        let id = self.id;
        self.done.await.map_err(|_| Error::new(ErrorCode::StoreUnavailable, format!("run {id} could not be settled; see the log")))
    }
}

/// A run waiting for a lane.
pub(crate) struct Pending {
    pub id: String,
    pub routine: Routine,
    pub trigger: Trigger,
    pub done: oneshot::Sender<RunRecord>,
    /// The queue note last written to its row (written again only when it changes).
    pub note: Option<String>,
}

impl Pending {
    fn is_manual(&self) -> bool {
        matches!(self.trigger, Trigger::Manual | Trigger::Cli)
    }
}

/// Submit a run. `claimed` is the id of a slot row the scheduler already inserted as `queued`.
pub(crate) async fn submit(
    core: &Arc<Core>,
    routine: Routine,
    trigger: Trigger,
    scheduled_for: Option<DateTime<Utc>>,
    claimed: Option<String>,
) -> Result<RunHandle> {
    let id = match claimed {
        Some(id) => id,
        None => {
            let id = new_run_id();
            let now = core.clock.now();
            core.store.insert_run(&queued_row(core, &routine, &id, trigger, scheduled_for, now))?;
            id
        }
    };
    let (tx, done) = oneshot::channel();
    let name = routine.name.clone();
    core.queue.lock().await.push_back(Pending { id: id.clone(), routine, trigger, done: tx, note: None });
    dispatch(core).await;
    Ok(RunHandle { id, routine: name, done })
}

/// The row of a run that waits for a lane (history shows it at once).
pub(crate) fn queued_row(core: &Core, routine: &Routine, id: &str, trigger: Trigger, scheduled_for: Option<DateTime<Utc>>, now: DateTime<Utc>) -> NewRun {
    NewRun {
        id: id.to_string(),
        routine: routine.name.clone(),
        trigger,
        agent: routine.kind_name().to_string(),
        status: RunStatus::Queued,
        reason: None,
        message: None,
        scheduled_for,
        started_at: None,
        finished_at: None,
        account: pinned_account(routine),
        run_dir: core.home.run_dir(&routine.name, id).display().to_string(),
        owner: Some(core.identity.clone()),
        sort_at: scheduled_for.unwrap_or(now),
    }
}

/// The account a routine is pinned to (pools are resolved when accounts choose one).
fn pinned_account(routine: &Routine) -> Option<String> {
    match &routine.account {
        crate::routine::AccountChoice::Pinned(a) => Some(a.clone()),
        _ => None,
    }
}

/// The accounts a run of `routine` could use; empty when it uses none.
fn candidate_accounts(core: &Core, routine: &Routine) -> Vec<String> {
    let Some(agent) = routine.agent() else { return Vec::new() };
    match &routine.account {
        crate::routine::AccountChoice::Pinned(a) => vec![a.clone()],
        crate::routine::AccountChoice::Pool(list) => list.clone(),
        crate::routine::AccountChoice::Any => core.accounts().into_iter().filter(|a| a.agent == agent).map(|a| a.email).collect(),
    }
}

/// Start every queued run that fits, in order; note the position and reason on the others.
/// (Boxed with an explicit `Send` type: dispatching starts runs whose settling dispatches again.)
pub(crate) fn dispatch(core: &Arc<Core>) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
    Box::pin(dispatch_now(core))
}

async fn dispatch_now(core: &Arc<Core>) {
    let mut queue = core.queue.lock().await;
    if queue.is_empty() {
        return;
    }
    let max = core.settings.max_parallel.max(1);
    // One look at what runs now (in every process on this home); then decide in memory.
    let (mut running, mut busy_routines, mut busy_accounts) = match core.store.running_lanes() {
        Ok(lanes) => (lanes.len(), lanes.iter().map(|l| l.0.clone()).collect::<Vec<_>>(), lanes.into_iter().filter_map(|l| l.1).collect::<Vec<_>>()),
        Err(e) => {
            tracing::error!(error = %e, "cannot read running runs; dispatching later");
            return;
        }
    };
    let mut waiting = std::collections::VecDeque::new();
    let mut notes: Vec<(String, String)> = Vec::new();
    while let Some(mut p) = queue.pop_front() {
        let cap = if p.is_manual() { max } else { max.saturating_sub(1).max(1) };
        let busy = busy_routines.contains(&p.routine.name) || waiting.iter().any(|w: &Pending| w.routine.name == p.routine.name);
        // One run per account at a time: concurrent runs on one Claude login can get its OAuth
        // credential revoked. A pool fits while one of its accounts is free.
        let candidates = candidate_accounts(core, &p.routine);
        let account_busy = !candidates.is_empty() && candidates.iter().all(|a| busy_accounts.contains(a));
        let account = candidates.first().cloned().filter(|_| candidates.len() == 1);
        if !busy && !account_busy && running < cap {
            running += 1;
            busy_routines.push(p.routine.name.clone());
            let id = p.id.clone();
            start(core, p, &busy_accounts).await;
            if let Some(a) = core.store.get_run(&id).ok().and_then(|r| r.account) {
                busy_accounts.push(a);
            }
        } else {
            let why = if busy {
                format!("waiting for the running {} run to finish", p.routine.name)
            } else if account_busy {
                match &account {
                    Some(a) => format!("waiting: account {a} is busy with another run (one run per account at a time)"),
                    None => format!("waiting: all its accounts ({}) are busy with other runs (one run per account at a time)", candidates.join(", ")),
                }
            } else if p.is_manual() {
                format!("waiting for a free lane ({running} of {max} running)")
            } else {
                format!("waiting for a free lane ({running} running; scheduled runs leave one of {max} free for Run now)")
            };
            let message = format!("queued (position {}): {why}", waiting.len() + 1);
            if p.note.as_deref() != Some(message.as_str()) {
                notes.push((p.id.clone(), message.clone()));
                p.note = Some(message);
            }
            waiting.push_back(p);
        }
    }
    if let Err(e) = core.store.set_queue_messages(&notes) {
        tracing::warn!(error = %e, "cannot update queue positions");
    }
    let has_waiting = !waiting.is_empty();
    *queue = waiting;
    drop(queue);
    Engine::emit_state(core);
    if has_waiting && !core.dispatcher_awake.swap(true, Ordering::SeqCst) {
        // Something waits: re-dispatch when a lane frees up here, or every second (a run of
        // another process on this home may have ended).
        let core = Arc::clone(core);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = core.lane_freed.notified() => {}
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                // The awake flag is still set, so this pass does not spawn another waker.
                dispatch(&core).await;
                if core.queue.lock().await.is_empty() {
                    core.dispatcher_awake.store(false, Ordering::SeqCst);
                    // A run submitted just now saw the flag set and relies on us: look once more.
                    if core.queue.lock().await.is_empty() || core.dispatcher_awake.swap(true, Ordering::SeqCst) {
                        break;
                    }
                }
            }
        });
    }
}

/// Cancel a run still waiting in the queue. `true` if it was there.
pub(crate) async fn cancel_queued(core: &Arc<Core>, id: &str) -> bool {
    let mut queue = core.queue.lock().await;
    let Some(pos) = queue.iter().position(|p| p.id == id) else { return false };
    let p = queue.remove(pos).expect("position is valid");
    drop(queue);
    let now = core.clock.now();
    let s = Settlement {
        status: RunStatus::Cancelled,
        reason: None,
        message: Some("cancelled while queued".into()),
        exit_code: None,
        account: None,
        resets_at: None,
        attempts: Vec::new(),
        finished_at: now,
        duration_ms: None,
        cost_usd: None,
        session_id: None,
        report_path: None,
    };
    if core.store.finalize(&p.id, &s).unwrap_or(false) {
        if let Ok(rec) = core.store.get_run(&p.id) {
            Engine::emit(core, EngineEvent::RunFinished { run: rec.clone() });
            let _ = p.done.send(rec);
        }
    }
    true
}

/// Start one run: choose its account (preflight), `queued` → `running`, spawn its process, hand
/// it to the supervisor — which fails over to the next account on a rate limit.
async fn start(core: &Arc<Core>, p: Pending, busy_accounts: &[String]) {
    let Pending { id, routine, done, .. } = p;
    let now = core.clock.now();
    let run_dir = core.home.run_dir(&routine.name, &id);
    let driver = agents::driver(routine.agent());
    let live = LiveRun { id: id.clone(), routine: routine.clone(), driver, run_dir: run_dir.clone(), started_at: now };

    let (account, credential) = match super::accounts::plan(core, &routine, busy_accounts) {
        AccountPlan::Blocked { reason, message, account, resets_at } => {
            let _ = core.store.set_run_account(&id, account.as_deref());
            tracing::warn!(run = %id, routine = %routine.name, %message, "run blocked before start");
            let core2 = Arc::clone(core);
            tokio::spawn(async move {
                settle::settle(&core2, &live, Ending::Blocked { reason, message, resets_at }, Vec::new(), None, Some(done)).await;
            });
            return;
        }
        AccountPlan::Default => (None, None),
        AccountPlan::Use(a, c) => (Some(a), Some(c)),
    };
    match core.store.mark_running(&id, now, (core.identity.0, &core.identity.1)) {
        Ok(true) => {}
        Ok(false) => return, // finalized while queued (cancelled); nothing to start
        Err(e) => {
            tracing::error!(run = %id, error = %e, "could not mark the run as running");
            return;
        }
    }
    let _ = core.store.set_run_account(&id, account.as_ref().map(|a| a.email.as_str()));
    if let Ok(run) = core.store.get_run(&id) {
        Engine::emit(core, EngineEvent::RunStarted { run });
    }
    let spawned = spawn_attempt(core, &routine, &id, &run_dir, now, account.as_ref().zip(credential.as_ref()));
    let core2 = Arc::clone(core);
    let proc = match spawned {
        Ok(proc) => proc,
        Err(message) => {
            tracing::warn!(run = %id, routine = %routine.name, %message, "run could not start");
            tokio::spawn(async move {
                settle::settle(&core2, &live, Ending::SpawnFailed(message), Vec::new(), None, Some(done)).await;
            });
            return;
        }
    };
    let cancel = Arc::new(Notify::new());
    core.active.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), Arc::clone(&cancel));
    tokio::spawn(async move {
        let core = core2;
        let mut proc = proc;
        let mut account = account;
        let mut attempts: Vec<Attempt> = Vec::new();
        let mut tried: Vec<String> = Vec::new();
        loop {
            let ending = settle::supervise(&core, &live, proc, Arc::clone(&cancel), routine.timeout).await;
            let outcome = settle::classify(&core, &live, &ending).await;
            if let Some(acc) = &account {
                if super::accounts::record_outcome(&core, &acc.email, &id, &outcome) {
                    let (core, email) = (Arc::clone(&core), acc.email.clone());
                    tokio::spawn(async move { super::accounts::make_up_blocked(&core, &email).await });
                }
                // Fail over on a rate limit — never on an auth failure — when the routine may use
                // another account and one is healthy.
                let may_switch = !matches!(routine.account, crate::routine::AccountChoice::Pinned(_));
                if may_switch && outcome.reason == Some(Reason::RateLimited) && matches!(ending, Ending::Exited(_)) {
                    tried.push(acc.email.clone());
                    if let AccountPlan::Use(next, cred) = super::accounts::plan(&core, &routine, &tried) {
                        attempts.push(Attempt {
                            account: Some(acc.email.clone()),
                            status: outcome.status(),
                            reason: outcome.reason,
                            message: outcome.message.clone().map(|m| core.redactor.redact(&m)),
                            resets_at: outcome.resets_at,
                        });
                        archive_attempt_logs(&live.run_dir, attempts.len());
                        let now = core.clock.now();
                        match spawn_attempt(&core, &routine, &id, &live.run_dir, now, Some((&next, &cred))) {
                            Ok(p) => {
                                let _ = core.store.set_run_account(&id, Some(&next.email));
                                Engine::emit(&core, EngineEvent::RunProgress {
                                    run_id: id.clone(),
                                    routine: routine.name.clone(),
                                    message: format!("{} is rate limited; retrying on {}", acc.email, next.email),
                                });
                                tracing::info!(run = %id, from = %acc.email, to = %next.email, "failing over to the next account");
                                account = Some(next);
                                proc = p;
                                continue;
                            }
                            Err(message) => {
                                settle::settle(&core, &live, Ending::SpawnFailed(message), attempts, None, Some(done)).await;
                                return;
                            }
                        }
                    }
                }
            }
            settle::settle(&core, &live, ending, attempts, Some(outcome), Some(done)).await;
            return;
        }
    });
}

/// Keep an earlier attempt's output beside the next one: `stdout.attempt-1.log`, …
fn archive_attempt_logs(run_dir: &std::path::Path, n: usize) {
    for log in ["stdout", "stderr"] {
        let _ = std::fs::rename(run_dir.join(format!("{log}.log")), run_dir.join(format!("{log}.attempt-{n}.log")));
    }
    let _ = std::fs::remove_file(run_dir.join(process::EXIT_CODE_FILE));
}

/// Prepare and spawn one attempt; record its process.
fn spawn_attempt(
    core: &Arc<Core>,
    routine: &Routine,
    id: &str,
    run_dir: &std::path::Path,
    now: DateTime<Utc>,
    account: Option<(&Account, &Credential)>,
) -> Result<process::RunProcess, String> {
    let spec = prepare(core, routine, id, run_dir, now, account)?;
    let proc = process::spawn(&spec).map_err(|e| format!("could not start {}: {e}", spec.program.display()))?;
    if let Err(e) = core.store.set_process(id, proc.pid, proc.start_time.as_deref()) {
        tracing::error!(run = %id, error = %e, "could not record the run's process");
    }
    Ok(proc)
}

/// Render the prompt, build the command line and environment (with the account's config dir and
/// token), find the executable.
fn prepare(
    core: &Core,
    routine: &Routine,
    id: &str,
    run_dir: &std::path::Path,
    now: DateTime<Utc>,
    account: Option<(&Account, &Credential)>,
) -> Result<process::SpawnSpec, String> {
    if let Err(e) = std::fs::create_dir_all(run_dir) {
        return Err(format!("cannot create the run directory {}: {e}", run_dir.display()));
    }
    let prompt = match &routine.action {
        Action::Agent { prompt, .. } => {
            let last = core.store.last_completed_report(&routine.name).ok().flatten();
            render(prompt, &PromptContext { routine: &routine.name, now, tz: routine.timezone, last_report: last.as_deref(), variables: &routine.variables })
        }
        Action::Command { command } => command.clone(),
    };
    let (driver, args) = agents::invocation(&routine.action, &prompt);
    let mut extra = vec![
        ("NIGHTSHIFT_RUN_ID", id.to_string()),
        ("NIGHTSHIFT_ROUTINE", routine.name.clone()),
        ("NIGHTSHIFT_RUN_DIR", run_dir.display().to_string()),
    ];
    if let Some((account, cred)) = account {
        if let Err(e) = std::fs::create_dir_all(&account.config_dir) {
            return Err(format!("cannot create the config dir {} of account {}: {e}", account.config_dir.display(), account.email));
        }
        match account.agent {
            AgentKind::Claude => {
                extra.push(("CLAUDE_CONFIG_DIR", account.config_dir.display().to_string()));
                if let Some(token) = &cred.token {
                    extra.push(("CLAUDE_CODE_OAUTH_TOKEN", token.clone()));
                }
            }
            AgentKind::Codex => extra.push(("CODEX_HOME", account.config_dir.display().to_string())),
            AgentKind::Gemini => {}
        }
    }
    let env = env::build(core.env.iter().cloned(), &routine.env, &extra);
    let program = resolve_program(core, routine, driver, env.get("PATH").map(String::as_str))?;
    Ok(process::SpawnSpec { program, args, env, cwd: routine.cwd.clone(), run_dir: run_dir.to_path_buf() })
}

/// The executable to run, or a message saying exactly what is missing and how to fix it.
fn resolve_program(core: &Core, routine: &Routine, driver: &'static dyn AgentDriver, path_var: Option<&str>) -> Result<PathBuf, String> {
    if let Some(cwd) = &routine.cwd {
        if !cwd.is_dir() {
            return Err(format!("the working directory {} does not exist (routine `cwd:` in {})", cwd.display(), core.home.display_path(&routine.file)));
        }
    }
    let name = driver.program();
    if let Some(agent) = routine.agent() {
        if let Some(configured) = core.settings.agent_path(agent.as_str()) {
            return process::find_on_path(&configured.display().to_string(), path_var).ok_or_else(|| {
                format!("{} (set as [agents.{}] path in nightshift.toml) is not an executable file", configured.display(), agent.as_str())
            });
        }
    }
    process::find_on_path(name, path_var).ok_or_else(|| format!("`{name}` was not found on PATH; {}", driver.install_hint()))
}
