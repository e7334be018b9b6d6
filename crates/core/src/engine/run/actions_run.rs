//! The engine's side of a try on a host on GitHub Actions (`[hosts.<name>] github`): the slot is
//! claimed here as for every run; the *doing* is handed to the repository's runners. A try
//! dispatches the workflow (`nightshiftctl hosts workflow`) with what the agent needs — never a
//! secret: the account's credential is the repository secret the dispatch names — finds the
//! workflow run by the dispatch's key in its name (so a dispatch whose answer was lost is found,
//! never sent twice), follows it with conditional requests, and once the job ends brings the
//! agent's own output home from the job's log into the run's directory, where the same judge as
//! for a run here reads it. Cancel and the routine's `timeout` cancel the workflow run; a job no
//! runner picks up within `start_timeout` ends `blocked · no_runner`; GitHub unreachable or 5xx is
//! passing, like an unreachable SSH host. Where it is (`OnActions`) is kept with the run's row
//! before the dispatch, so a new engine re-attaches and settles it once.

use super::live::{Ending, LiveRun};
use crate::accounts::Account;
use crate::actions::api::{Api, Fresh, Trouble, WorkflowRun};
use crate::actions::dispatch::{self, Call, Dispatch};
use crate::actions::job_log;
use crate::engine::state::Core;
use crate::routine::Routine;
use crate::run::Reason;
use crate::run_dir::RunDir;
use crate::runner::remote::Failure;
use crate::settings::ActionsHost;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// Where a try on Actions is, kept in the run's row (`runs.remote`) from before its dispatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct OnActions {
    /// The host's name (`host:`).
    pub actions_host: String,
    /// The key in the workflow run's name that tells this try's dispatch from every other.
    pub dispatch: String,
    /// When it was dispatched (ms since the epoch).
    pub dispatched_ms: i64,
    /// The workflow run, once found.
    pub workflow_run: Option<u64>,
    /// When the routine's limit runs out (ms since the epoch).
    pub deadline_ms: i64,
}

/// A try going on a host on GitHub Actions.
#[derive(Clone)]
pub(crate) struct ActionsProc {
    pub host: ActionsHost,
    pub on: OnActions,
    api: Arc<Api>,
}

impl std::fmt::Debug for ActionsProc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionsProc").field("host", &self.host.name).field("on", &self.on).finish()
    }
}

/// How long a dispatched run may take to show up in GitHub's list of runs.
const FIND_FOR: Duration = Duration::from_secs(60);
/// How long after a cancel GitHub is given to end the workflow run before it is given up.
const CANCEL_FOR: Duration = Duration::from_secs(120);
/// How long GitHub may be out of reach past the job's own limit before the run is given up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(10 * 60);

/// Dispatch try of `routine` on `host`, with `account`'s secret (or the agent's inherited
/// credential's), and find the workflow run it started. The run's row knows where it is before
/// the dispatch is sent. Failures read as an SSH host's do: `Unreachable` (GitHub could not be
/// reached or is failing — tried again), `Missing` (nothing started: a token, workflow or secret
/// is missing — blocked), `Refused` (failed).
pub(crate) async fn start(core: &Arc<Core>, live: &LiveRun, routine: &Routine, host: &ActionsHost, account: Option<&Account>, has_secrets: bool) -> Result<ActionsProc, Failure> {
    if has_secrets {
        return Err(Failure::Missing(format!(
            "the routine's `secrets:` are not sent to GitHub Actions (host {}): keep them as repository secrets the workflow reads, or run the routine on this machine or an SSH host",
            host.name
        )));
    }
    let api = Arc::new(core.actions_api(host).map_err(Failure::Missing)?);
    let call = call_for(core, live, routine, account);
    let now = core.clock.now();
    let key = ulid::Ulid::new().to_string()[16..].to_lowercase();
    let on = OnActions {
        actions_host: host.name.clone(),
        dispatch: key.clone(),
        dispatched_ms: now.timestamp_millis(),
        workflow_run: None,
        deadline_ms: (now + chrono::Duration::from_std(live.timeout).unwrap_or_default()).timestamp_millis(),
    };
    let order = Dispatch { run_id: live.id.clone(), dispatch: key, agent: live.agent, call, secret: routine.agent().cli().map(|a| dispatch::secret_name(a, account.map(|a| a.email.as_str()))), timeout: live.timeout };
    let inputs = order.inputs().map_err(Failure::Refused)?;
    keep(core, &live.id, &on);
    let (h, a, id) = (host.clone(), Arc::clone(&api), live.id.clone());
    let found = tokio::task::spawn_blocking(move || dispatch_and_find(&a, &h, &id, &inputs, &on))
        .await
        .unwrap_or_else(|e| Err(Failure::Unreachable(format!("dispatching failed: {e}"))))?;
    let mut on = found.0;
    now_found(core, &live.id, &mut on, &found.1);
    tracing::info!(run = %live.id, host = %host.name, workflow_run = found.1.id, "run dispatched to GitHub Actions");
    Ok(ActionsProc { host: host.clone(), on, api })
}

/// Send the dispatch (on the host's ref) and find the workflow run it made.
fn dispatch_and_find(api: &Api, host: &ActionsHost, run_id: &str, inputs: &serde_json::Value, on: &OnActions) -> Result<(OnActions, WorkflowRun), Failure> {
    let failure = |t: Trouble| match t {
        Trouble::Passing { words, .. } => Failure::Unreachable(words),
        Trouble::Refused { words, .. } => Failure::Missing(format!("{words} — see `nightshiftctl hosts check {}`", host.name)),
    };
    let git_ref = match &host.git_ref {
        Some(r) => r.clone(),
        None => api.default_branch().map_err(failure)?,
    };
    let sent = api.dispatch(&host.workflow, &git_ref, inputs);
    let wait_for = match &sent {
        Ok(()) => FIND_FOR,
        // A failing answer may still have started the run: look before saying it did not.
        Err(Trouble::Passing { .. }) => FIND_FOR / 3,
        Err(t) => return Err(failure(t.clone())),
    };
    let until = std::time::Instant::now() + wait_for;
    loop {
        if let Some(run) = find(api, host, run_id, on) {
            return Ok((on.clone(), run));
        }
        if std::time::Instant::now() >= until {
            // (The caller remembers an unreachable host's words as its health.)
            return Err(match sent {
                Err(t) => failure(t),
                Ok(()) => Failure::Unreachable(format!(
                    "GitHub took the dispatch of {} but no workflow run named \"{}\" appeared within {}s",
                    host.workflow,
                    dispatch::run_name(run_id, &on.dispatch),
                    wait_for.as_secs()
                )),
            });
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The workflow run a try's dispatch made, by the name it gave it (blocking: one request).
fn find(api: &Api, host: &ActionsHost, run_id: &str, on: &OnActions) -> Option<WorkflowRun> {
    let since = DateTime::from_timestamp_millis(on.dispatched_ms)?;
    let name = dispatch::run_name(run_id, &on.dispatch);
    api.dispatched_runs(&host.workflow, since).ok()?.into_iter().find(|r| r.display_title == name)
}

/// The try's workflow run is known: kept with the run's row, with its page.
fn now_found(core: &Core, run_id: &str, on: &mut OnActions, run: &WorkflowRun) {
    on.workflow_run = Some(run.id);
    keep(core, run_id, on);
    if let Err(e) = core.store.set_remote_url(run_id, &run.html_url) {
        tracing::warn!(run = %run_id, error = %e, "could not record the run's page on GitHub");
    }
}

/// What the job runs: the agent's command line and variables as for a run on an SSH host
/// ([`super::attempt::away`]), and which variable gets the secret (never its value).
fn call_for(core: &Core, live: &LiveRun, routine: &Routine, account: Option<&Account>) -> Call {
    let provider = account.map(|a| a.provider_env()).unwrap_or_default();
    let (driver, args, mut env) = super::attempt::away(core, live, routine, &provider, false);
    let secret_vars = match (routine.agent().cli(), account) {
        (None, _) => Vec::new(),
        (Some(_), Some(a)) => vec![a.secret_var()],
        (Some(agent), None) => {
            let inherited = crate::engine::accounts::inherited_env(core, agent).into_iter().next().map(|(k, _)| k.to_string());
            inherited.or_else(|| crate::agents::AgentAuth::of(agent).map(|a| a.secret_var.to_string())).into_iter().collect()
        }
    };
    for var in &secret_vars {
        env.remove(var);
    }
    Call {
        argv: std::iter::once(driver.program().to_string()).chain(args).collect(),
        env: env.into_iter().collect(),
        cwd: routine.placement.as_ref().and_then(|p| p.remote_cwd.clone()),
        secret_vars,
    }
}

/// Keep where the try is with the run's row (a new engine re-attaches from it).
fn keep(core: &Core, run_id: &str, on: &OnActions) {
    let json = serde_json::to_string(on).unwrap_or_default();
    if let Err(e) = core.store.set_remote(run_id, &json) {
        tracing::error!(run = %run_id, error = %e, "could not record where the run was dispatched");
    }
}

/// Where a recorded try is (recovery re-attaches to it), when its record says it is on Actions.
pub(crate) fn recorded(core: &Core, remote: &str) -> Option<Result<ActionsProc, String>> {
    let on: OnActions = serde_json::from_str(remote).ok()?;
    Some((|| {
        let host = core.settings().actions_host(&on.actions_host).ok_or_else(|| format!("its host {} is no longer a host on GitHub Actions in nightshift.toml", on.actions_host))?;
        let api = core.actions_api(&host)?;
        Ok(ActionsProc { host, on, api: Arc::new(api) })
    })())
}

/// Follow the workflow run until it ends (cancelling it on `cancel` or at the routine's limit),
/// then bring the agent's output home and say how it ended.
pub(crate) async fn follow(core: &Arc<Core>, run: &LiveRun, proc: &ActionsProc, cancel: Arc<Notify>) -> Ending {
    let poll = core.settings().github.actions_poll();
    let mut proc = proc.clone();
    let mut etag: Option<String> = None;
    // The workflow run's status as last told (`queued` until GitHub says otherwise).
    let mut status = String::from("queued");
    // Why, and since when, the workflow run is being cancelled.
    let mut stopping: Option<(Stop, std::time::Instant)> = None;
    let started = DateTime::from_timestamp_millis(proc.on.dispatched_ms).unwrap_or_else(Utc::now);
    let deadline = DateTime::from_timestamp_millis(proc.on.deadline_ms).unwrap_or_else(Utc::now);
    let Some(id) = proc.on.workflow_run else {
        // Dispatched, but its engine died before the run was found: find it now.
        match find_again(core, &run.id, &mut proc).await {
            Some(()) => return Box::pin(follow(core, run, &proc, cancel)).await,
            None => return Ending::Unreachable(format!("the workflow run dispatched to {} for this run could not be found on GitHub", proc.host.repo)),
        }
    };
    loop {
        let now = core.clock.now();
        if stopping.is_none() && now >= deadline {
            stopping = Some((Stop::TimedOut, std::time::Instant::now()));
            cancel_there(core, run, &proc, id).await;
        }
        let asked = {
            let (api, tag) = (Arc::clone(&proc.api), etag.clone());
            tokio::task::spawn_blocking(move || api.workflow_run(id, tag.as_deref())).await.unwrap_or_else(|e| Err(Trouble::Passing { words: e.to_string(), retry_at: None }))
        };
        let mut wait = poll;
        match asked {
            Ok(Fresh::Unchanged) => {}
            Ok(Fresh::New(workflow_run, tag)) => {
                core.host_contact(&proc.host.name, None);
                etag = tag;
                if workflow_run.status == "completed" {
                    let conclusion = workflow_run.conclusion.clone().unwrap_or_default();
                    return bring_home(core, run, &proc, id, &conclusion, stopping.map(|(why, _)| why)).await;
                }
                status = workflow_run.status;
            }
            Err(Trouble::Refused { words, .. }) => return Ending::Unreachable(format!("the workflow run on {} can no longer be read: {words}", proc.host.repo)),
            Err(Trouble::Passing { words, retry_at }) => {
                core.host_contact(&proc.host.name, Some(&Failure::Unreachable(words.clone())));
                tracing::info!(run = %run.id, host = %proc.host.name, %words, "GitHub did not answer about the run; asking again");
                if now > deadline + chrono::Duration::from_std(GIVE_UP_AFTER).unwrap_or_default() {
                    return Ending::Unreachable(format!("lost contact with GitHub while the run went on there: {words}"));
                }
                if let Some(at) = retry_at {
                    wait = wait.max((at - now).to_std().unwrap_or_default()).min(Duration::from_secs(300));
                }
            }
        }
        // Still waiting for a runner past `start_timeout` (an unchanged answer says the same).
        let queued = matches!(status.as_str(), "queued" | "waiting" | "pending" | "requested");
        if queued && stopping.is_none() && now - started > chrono::Duration::from_std(proc.host.start_timeout).unwrap_or_default() && !job_started(&proc, id).await {
            stopping = Some((Stop::NoRunner, std::time::Instant::now()));
            cancel_there(core, run, &proc, id).await;
        }
        if let Some((why, _)) = stopping.filter(|(_, at)| at.elapsed() > CANCEL_FOR) {
            // GitHub never ended it: what came home so far is all there is.
            return why.ending(&proc);
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.notified(), if stopping.is_none() => {
                stopping = Some((Stop::Cancelled, std::time::Instant::now()));
                cancel_there(core, run, &proc, id).await;
            }
        }
    }
}

/// Whether the workflow run's job has been picked up by a runner.
async fn job_started(proc: &ActionsProc, id: u64) -> bool {
    let api = Arc::clone(&proc.api);
    match tokio::task::spawn_blocking(move || api.jobs(id)).await {
        Ok(Ok(jobs)) => jobs.iter().any(|j| j.status != "queued" || j.runner_name.as_deref().is_some_and(|r| !r.is_empty())),
        // Not known: keep waiting rather than call a runner missing.
        _ => true,
    }
}

/// Why Nightshift cancels a workflow run.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stop {
    /// Cancel (the window, Ctrl-C of `run --wait`).
    Cancelled,
    /// The routine's `timeout`.
    TimedOut,
    /// No runner took the job within `start_timeout`.
    NoRunner,
}

impl Stop {
    /// How a try that was stopped so ended, whatever its log says.
    fn ending(self, proc: &ActionsProc) -> Ending {
        match self {
            Stop::Cancelled => Ending::Cancelled,
            Stop::TimedOut => Ending::TimedOut,
            Stop::NoRunner => Ending::Blocked {
                reason: Reason::NoRunner,
                message: format!(
                    "no runner picked up the job within {} (start_timeout): none online on {} with [{}] — see `nightshiftctl hosts check {}`",
                    humantime::format_duration(proc.host.start_timeout),
                    proc.host.repo,
                    proc.host.runs_on.join(", "),
                    proc.host.name
                ),
                resets_at: None,
            },
        }
    }
}

/// Find a dispatched try's workflow run by its key (its engine died before it was found).
async fn find_again(core: &Arc<Core>, run_id: &str, proc: &mut ActionsProc) -> Option<()> {
    let (api, host, id, on) = (Arc::clone(&proc.api), proc.host.clone(), run_id.to_string(), proc.on.clone());
    let found = tokio::task::spawn_blocking(move || find(&api, &host, &id, &on)).await.ok()??;
    now_found(core, run_id, &mut proc.on, &found);
    Some(())
}

/// Ask GitHub to cancel the workflow run; a failure is logged (following goes on and tells).
async fn cancel_there(core: &Core, run: &LiveRun, proc: &ActionsProc, id: u64) {
    tracing::info!(run = %run.id, host = %proc.host.name, workflow_run = id, "cancelling the workflow run");
    let api = Arc::clone(&proc.api);
    if let Ok(Err(t)) = tokio::task::spawn_blocking(move || api.cancel(id)).await {
        tracing::warn!(run = %run.id, host = %proc.host.name, error = %core.redactor.redact(t.words()), "could not cancel the workflow run");
    }
}

/// The job ended: its log's framed lines become the run's stdout and stderr here, its exit code
/// the run's — then how it ended, as a try here would say it (`stopped`: Nightshift cancelled it).
async fn bring_home(core: &Arc<Core>, run: &LiveRun, proc: &ActionsProc, id: u64, conclusion: &str, stopped: Option<Stop>) -> Ending {
    if stopped == Some(Stop::NoRunner) {
        return Stop::NoRunner.ending(proc);
    }
    let api = Arc::clone(&proc.api);
    let mut read = None;
    for attempt in 0..5u64 {
        let api = Arc::clone(&api);
        let got = tokio::task::spawn_blocking(move || -> Result<Option<String>, Trouble> {
            let jobs = api.jobs(id)?;
            match jobs.iter().find(|j| j.started_at.is_some() || j.runner_name.is_some()).or(jobs.first()) {
                Some(job) => api.job_log(job.id).map(Some),
                None => Ok(None),
            }
        })
        .await
        .unwrap_or_else(|e| Err(Trouble::Passing { words: e.to_string(), retry_at: None }));
        match got {
            Ok(log) => {
                read = Some(log);
                break;
            }
            Err(Trouble::Refused { words, .. }) => {
                tracing::warn!(run = %run.id, %words, "the job's log cannot be read");
                read = Some(None);
                break;
            }
            Err(Trouble::Passing { words, .. }) => {
                tracing::info!(run = %run.id, %words, "the job's log could not be read yet; asking again");
                tokio::time::sleep(Duration::from_secs(1 + attempt * 2)).await;
            }
        }
    }
    let log = read.flatten().unwrap_or_default();
    let out = job_log::read(&log);
    let dir = RunDir::at(&run.run_dir);
    let written = std::fs::write(dir.stdout(), &out.stdout).and_then(|_| std::fs::write(dir.stderr(), &out.stderr));
    if let Err(e) = written {
        tracing::error!(run = %run.id, error = %e, "could not keep the job's output in the run's directory");
    }
    if let Some(name) = out.missing_secret {
        return Ending::Blocked {
            reason: Reason::MissingSecret,
            message: format!("not started: the secret {name} is not set on {} — write it with `nightshiftctl hosts setup {}`", proc.host.repo, proc.host.name),
            resets_at: None,
        };
    }
    match (stopped, out.exit_code) {
        (Some(why), _) => why.ending(proc),
        (None, Some(code)) => Ending::Exited(Some(code)),
        (None, None) => match conclusion {
            "timed_out" => Ending::TimedOut,
            "cancelled" => Ending::Unreachable(format!("the workflow run was cancelled on GitHub before the agent ended ({})", proc.host.repo)),
            other => {
                let why = log.lines().rev().find_map(|l| l.split_once("##[error]").map(|(_, e)| e.trim().to_string())).unwrap_or_else(|| "its log says no more".into());
                Ending::SpawnFailed(format!("the job on {} ended ({other}) before the agent said how it ended: {}", proc.host.repo, core.redactor.redact(&why)))
            }
        },
    }
}
