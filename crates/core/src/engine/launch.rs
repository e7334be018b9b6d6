//! Starting runs: every run is submitted into the lanes; it starts at once when a lane is free,
//! otherwise it waits as a visible `queued` row with its position and reason.
//!
//! Lanes: at most `max_parallel` runs at once (counted in the database, so runs of other
//! processes on this home count too); scheduled and catch-up runs never take the last free lane,
//! so a manual "Run now" starts at once; one run per routine at a time.

use super::settle::{self, Ending, LiveRun};
use super::{Core, Engine};
use crate::agents::{self, AgentDriver};
use crate::error::{Error, ErrorCode, Result};
use crate::events::EngineEvent;
use crate::routine::prompt::{render, PromptContext};
use crate::routine::{Action, Routine};
use crate::run::{new_run_id, RunRecord, RunStatus, Trigger};
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
        // credential revoked.
        let account = pinned_account(&p.routine);
        let account_busy = account.as_ref().is_some_and(|a| busy_accounts.contains(a));
        if !busy && !account_busy && running < cap {
            running += 1;
            busy_routines.push(p.routine.name.clone());
            busy_accounts.extend(account);
            start(core, p).await;
        } else {
            let why = if busy {
                format!("waiting for the running {} run to finish", p.routine.name)
            } else if account_busy {
                format!("waiting: account {} is busy with another run (one run per account at a time)", account.unwrap_or_default())
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

/// Start one run: `queued` → `running`, spawn its process, hand it to the supervisor.
async fn start(core: &Arc<Core>, p: Pending) {
    let Pending { id, routine, done, .. } = p;
    let now = core.clock.now();
    match core.store.mark_running(&id, now, (core.identity.0, &core.identity.1)) {
        Ok(true) => {}
        Ok(false) => return, // finalized while queued (cancelled); nothing to start
        Err(e) => {
            tracing::error!(run = %id, error = %e, "could not mark the run as running");
            return;
        }
    }
    let run_dir = core.home.run_dir(&routine.name, &id);
    let prepared = prepare(core, &routine, &id, &run_dir, now);
    if let Ok(run) = core.store.get_run(&id) {
        Engine::emit(core, EngineEvent::RunStarted { run });
    }
    let (driver, spawned) = match prepared {
        Ok((driver, spec)) => (driver, process::spawn(&spec).map_err(|e| format!("could not start {}: {e}", spec.program.display()))),
        Err((driver, message)) => (driver, Err(message)),
    };
    let live = LiveRun { id: id.clone(), routine: routine.clone(), driver, run_dir, started_at: now };
    let core2 = Arc::clone(core);
    match spawned {
        Ok(proc) => {
            if let Err(e) = core.store.set_process(&id, proc.pid, proc.start_time.as_deref()) {
                tracing::error!(run = %id, error = %e, "could not record the run's process");
            }
            let cancel = Arc::new(Notify::new());
            core.active.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), Arc::clone(&cancel));
            tokio::spawn(async move {
                let ending = settle::supervise(&core2, &live, proc, cancel, routine.timeout).await;
                settle::settle(&core2, &live, ending, Some(done)).await;
            });
        }
        Err(message) => {
            tracing::warn!(run = %id, routine = %routine.name, %message, "run could not start");
            tokio::spawn(async move {
                settle::settle(&core2, &live, Ending::SpawnFailed(message), Some(done)).await;
            });
        }
    }
}

type Prepared = std::result::Result<(&'static dyn AgentDriver, process::SpawnSpec), (&'static dyn AgentDriver, String)>;

/// Render the prompt, build the command line and environment, find the executable.
fn prepare(core: &Core, routine: &Routine, id: &str, run_dir: &std::path::Path, now: DateTime<Utc>) -> Prepared {
    let (driver, _) = agents::invocation(&routine.action, "");
    if let Err(e) = std::fs::create_dir_all(run_dir) {
        return Err((driver, format!("cannot create the run directory {}: {e}", run_dir.display())));
    }
    let prompt = match &routine.action {
        Action::Agent { prompt, .. } => {
            let last = core.store.last_completed_report(&routine.name).ok().flatten();
            render(prompt, &PromptContext { routine: &routine.name, now, tz: routine.timezone, last_report: last.as_deref(), variables: &routine.variables })
        }
        Action::Command { command } => command.clone(),
    };
    let (driver, args) = agents::invocation(&routine.action, &prompt);
    let env = env::build(
        core.env.iter().cloned(),
        &routine.env,
        &[
            ("NIGHTSHIFT_RUN_ID", id.to_string()),
            ("NIGHTSHIFT_ROUTINE", routine.name.clone()),
            ("NIGHTSHIFT_RUN_DIR", run_dir.display().to_string()),
        ],
    );
    match resolve_program(core, routine, driver, env.get("PATH").map(String::as_str)) {
        Ok(program) => Ok((driver, process::SpawnSpec { program, args, env, cwd: routine.cwd.clone(), run_dir: run_dir.to_path_buf() })),
        Err(message) => Err((driver, message)),
    }
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
