//! Starting a run: write its record first, then spawn its process, then hand it to the supervisor.

use super::settle::{self, Ending, LiveRun};
use super::{Core, Engine};
use crate::agents::{self, AgentDriver};
use crate::error::{Error, ErrorCode, Result};
use crate::events::EngineEvent;
use crate::routine::prompt::{render, PromptContext};
use crate::routine::{Action, Routine};
use crate::run::{new_run_id, RunRecord, RunStatus, Trigger};
use crate::runner::{env, process};
use crate::store::NewRun;
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{oneshot, Notify};

/// A started run. The record is already in the database; `wait` gives its final record.
pub struct RunHandle {
    pub id: String,
    pub routine: String,
    pub run_dir: PathBuf,
    finished: oneshot::Receiver<RunRecord>,
    task: tokio::task::JoinHandle<()>,
}

impl RunHandle {
    /// Wait for the final record (available as soon as the run is settled).
    pub async fn wait(self) -> Result<RunRecord> {
        let RunHandle { finished, task, id, .. } = self;
        let record = finished
            .await
            .map_err(|_| Error::new(ErrorCode::StoreUnavailable, format!("run {id} could not be settled; see the log")))?;
        // Let settle hooks (bounded) finish before the caller moves on, e.g. before a CLI exits.
        let _ = task.await;
        Ok(record)
    }
}

pub(crate) async fn start(core: &Arc<Core>, routine: Routine, trigger: Trigger, scheduled_for: Option<DateTime<Utc>>) -> Result<RunHandle> {
    let id = new_run_id();
    let now = core.clock.now();
    let run_dir = core.home.run_dir(&routine.name, &id);
    std::fs::create_dir_all(&run_dir).map_err(|e| Error::io("create run directory", &run_dir, &e))?;

    let prompt = match &routine.action {
        Action::Agent { prompt, .. } => {
            let last = core.store.last_completed_report(&routine.name)?;
            render(
                prompt,
                &PromptContext { routine: &routine.name, now, tz: routine.timezone, last_report: last.as_deref(), variables: &routine.variables },
            )
        }
        Action::Command { command } => command.clone(),
    };
    let (driver, args) = agents::invocation(&routine.action, &prompt);
    let env = env::build(
        core.env.iter().cloned(),
        &routine.env,
        &[
            ("NIGHTSHIFT_RUN_ID", id.clone()),
            ("NIGHTSHIFT_ROUTINE", routine.name.clone()),
            ("NIGHTSHIFT_RUN_DIR", run_dir.display().to_string()),
        ],
    );
    let program = resolve_program(core, &routine, driver, env.get("PATH").map(String::as_str));

    core.store.insert_run(&NewRun {
        id: id.clone(),
        routine: routine.name.clone(),
        trigger,
        agent: routine.kind_name().to_string(),
        status: RunStatus::Running,
        scheduled_for,
        started_at: Some(now),
        account: None,
        run_dir: run_dir.display().to_string(),
        owner: Some(core.identity.clone()),
        sort_at: now,
    })?;
    if let Ok(run) = core.store.get_run(&id) {
        Engine::emit(core, EngineEvent::RunStarted { run });
    }

    let cancel = Arc::new(Notify::new());
    let live = LiveRun { id: id.clone(), routine: routine.clone(), driver, run_dir: run_dir.clone(), started_at: now };
    let (tx, finished) = oneshot::channel();
    let spawned = program.and_then(|program| {
        let spec = process::SpawnSpec { program, args, env, cwd: routine.cwd.clone(), run_dir: run_dir.clone() };
        process::spawn(&spec).map_err(|e| format!("could not start {}: {e}", spec.program.display()))
    });
    let core2 = Arc::clone(core);
    let task = match spawned {
        Ok(proc) => {
            core.store.set_process(&id, proc.pid, proc.start_time.as_deref())?;
            core.active.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), Arc::clone(&cancel));
            tokio::spawn(async move {
                let ending = settle::supervise(&core2, &live, proc, cancel, routine.timeout).await;
                settle::settle(&core2, &live, ending, Some(tx)).await;
            })
        }
        Err(message) => {
            tracing::warn!(run = %id, routine = %live.routine.name, %message, "run could not start");
            tokio::spawn(async move {
                settle::settle(&core2, &live, Ending::SpawnFailed(message), Some(tx)).await;
            })
        }
    };
    Ok(RunHandle { id, routine: routine.name, run_dir, finished, task })
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
