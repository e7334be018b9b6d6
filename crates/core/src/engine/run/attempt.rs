//! Preparing one attempt of a run: the prompt rendered, the command line and environment built
//! (with the account's config dir and credential), the executable found, the process spawned.

use crate::engine::accounts::{credentials_env, RunCreds, Where};
use crate::engine::state::Core;
use crate::agents::{self, AgentDriver};
use crate::routine::prompt::{render, PromptContext};
use crate::routine::{Action, Routine};
use crate::run::{RunWorkspace, WorkspaceKind as Kind};
use crate::runner::{env, process};
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::sync::Arc;

/// Keep an earlier attempt's output beside the next one: `stdout.attempt-1.log`, …
pub(crate) fn archive_attempt_logs(run_dir: &std::path::Path, n: usize) {
    let dir = crate::run_dir::RunDir::at(run_dir);
    for (log, stream) in [(dir.stdout(), "stdout"), (dir.stderr(), "stderr")] {
        let _ = std::fs::rename(log, dir.attempt_log(stream, n));
    }
    // What the sandbox refused this try is this try's: the next one's denials start empty.
    let _ = std::fs::rename(dir.sandbox_refused(), dir.sandbox().join(format!("refused.attempt-{n}.jsonl")));
    // The next attempt writes new logs: nothing of them is scrubbed yet.
    let _ = std::fs::remove_file(dir.exit_code());
    dir.clear_scrubbed();
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tries_sandbox_refusals_are_kept_beside_it_and_not_counted_again() {
        let dir = tempfile::tempdir().unwrap();
        let run = crate::run_dir::RunDir::at(dir.path());
        std::fs::create_dir_all(run.sandbox()).unwrap();
        std::fs::write(run.sandbox_refused(), "{\"host\":\"evil.example:443\"}\n").unwrap();
        assert_eq!(crate::sandbox::refusals(dir.path()).len(), 1);
        super::archive_attempt_logs(dir.path(), 1);
        assert!(crate::sandbox::refusals(dir.path()).is_empty(), "the next try starts with none");
        assert!(run.sandbox().join("refused.attempt-1.jsonl").is_file());
    }
}

/// What a retry that continues the earlier try's session says to the agent.
pub(crate) const RESUME_PROMPT: &str = "The connection to the API dropped while you were working on the task above. Before doing anything again, check what was already done (files changed, commands run, comments posted, pushes made), then finish the task without repeating it.";

/// What a try continues, and what it is told besides (or instead of) its task.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Continuing<'a> {
    /// The agent session to continue (`--resume`): of an earlier try, or of the run an approval
    /// reruns.
    pub session: Option<&'a str>,
    /// Continuing a session: what the agent is told instead of the task (default
    /// [`RESUME_PROMPT`]). Afresh: words after the task.
    pub words: Option<&'a str>,
}

/// Prepare and spawn one attempt; record its process. `cont`: the session of an earlier try to
/// continue (Claude Code's `--resume`), with [`RESUME_PROMPT`] (or its own words) instead of the
/// task.
pub(crate) fn spawn_attempt(
    core: &Arc<Core>,
    routine: &Routine,
    id: &str,
    run_dir: &std::path::Path,
    now: DateTime<Utc>,
    creds: RunCreds<'_>,
    workspace: Option<&RunWorkspace>,
    cont: Continuing<'_>,
) -> Result<process::RunProcess, String> {
    let spec = prepare(core, routine, id, run_dir, now, creds, workspace, cont)?;
    let proc = process::spawn(&spec).map_err(|e| {
        let cause = crate::error::io_cause_words(&e);
        format!("could not start {}: {e}{cause}", spec.program.display())
    })?;
    if let Err(e) = core.store.set_process(id, proc.pid, proc.start_time.as_deref()) {
        tracing::error!(run = %id, error = %e, "could not record the run's process");
    }
    Ok(proc)
}

/// What one run of `routine` may spend: the smaller of its `budget.run` and `[budget] run` — for
/// an agent whose CLI stops a run at a cost itself (the loader refuses `budget.run` for others).
pub(crate) fn run_cap(routine: &Routine, settings: &crate::settings::Settings) -> Option<f64> {
    crate::agents::driver(routine.agent()).caps_run_cost().then(|| crate::budget::Budget::run_cap(routine.budget.as_ref(), Some(&settings.budget))).flatten()
}

/// Render the prompt, build the command line and environment (with the account's config dir and
/// token), find the executable.
fn prepare(
    core: &Core,
    routine: &Routine,
    id: &str,
    run_dir: &std::path::Path,
    now: DateTime<Utc>,
    creds: RunCreds<'_>,
    workspace: Option<&RunWorkspace>,
    cont: Continuing<'_>,
) -> Result<process::SpawnSpec, String> {
    // The run directory exists: the driver made it before the run's workspace.
    // A run on a full disk would die writing its first lines and leave no exit code: say why now.
    if let Some(trouble) = crate::fsutil::storage_trouble(run_dir) {
        return Err(format!("not started: {trouble}; free some space and run it again"));
    }
    let event = core.store.get_run(id).ok().and_then(|r| r.event);
    // A try that continues an earlier one's session is told why, not given the task again.
    let prompt = match (cont.session, cont.words) {
        (Some(_), words) => words.unwrap_or(RESUME_PROMPT).to_string(),
        (None, Some(words)) => format!("{}\n\n{words}", render_prompt(core, routine, now, workspace, event.as_ref())),
        (None, None) => render_prompt(core, routine, now, workspace, event.as_ref()),
    };
    // In the machine's sandbox, where it goes in one (the driver blocked a run that must and cannot).
    let sandbox = super::sandboxing::decide(core, routine)?;
    // The bridge to the run's sockets only where this process offers them: a run started by a
    // command that does not stay (`run` without --wait, `approve`) cannot hold a call, and asks
    // after the run instead (the mark says which it was).
    let bridge = core.scrubber.as_deref().filter(|_| core.offers_tools.load(std::sync::atomic::Ordering::SeqCst) > 0);
    let asks_live = crate::run_dir::RunDir::at(run_dir).asks_live();
    match bridge.is_some() && routine.guard().is_some_and(|g| g.ask.is_some()) {
        true => crate::fsutil::write_atomic(&asks_live, b"").map_err(|e| format!("not started: cannot write {}: {e}", asks_live.display()))?,
        false => {
            let _ = std::fs::remove_file(&asks_live);
        }
    }
    let agents::Invocation { driver, args, env: agent_env, run_file } = routine.action.invocation_of_try(&prompt, run_cap(routine, &core.settings()), Some(run_dir), cont.session, sandbox.is_ok(), bridge);
    if let Some((name, text)) = run_file {
        let path = run_dir.join(name);
        crate::fsutil::write_atomic(&path, text.as_bytes()).map_err(|e| format!("not started: cannot write {}: {e}", path.display()))?;
    }
    let mut extra = agent_env;
    extra.extend(run_variables(routine, id));
    extra.push(("NIGHTSHIFT_RUN_DIR", run_dir.display().to_string()));
    // The payload of the event that fired it, as GitHub Actions' GITHUB_EVENT_PATH.
    let event_file = run_dir.join(crate::run_dir::EVENT_FILE);
    if event.is_some() && event_file.is_file() {
        extra.push(("NIGHTSHIFT_EVENT_PATH", event_file.display().to_string()));
    }
    if let Some(branch) = workspace.and_then(|w| w.branch.clone()) {
        extra.push(("NIGHTSHIFT_BRANCH", branch));
    }
    if let Some((account, cred)) = creds.account {
        if let Err(e) = std::fs::create_dir_all(&account.config_dir) {
            return Err(format!("cannot create the config dir {} of account {}: {e}", account.config_dir.display(), account.email));
        }
        if cred.token.is_some() {
            crate::agents::driver(account.agent).prepare_config_dir(&account.config_dir)?;
        }
    }
    let credentials = credentials_env(core, routine, creds, Where::Here);
    extra.extend(credentials.iter().map(|(k, v)| (k.as_str(), v.clone())));
    let env = env::build(core.env.iter().cloned(), &routine.env, &extra);
    let program = resolve_program(core, routine, driver, env.get("PATH").map(String::as_str))?;
    let mut spec = process::SpawnSpec {
        program,
        args,
        env,
        // A worktree run works in its own worktree; every other run in `cwd`.
        cwd: match workspace {
            Some(w) if w.kind == Kind::Worktree => Some(w.dir.clone()),
            _ => routine.cwd.clone(),
        },
        run_dir: run_dir.to_path_buf(),
        timeout: Some(routine.timeout),
        kill_grace: core.settings().kill_grace(),
        scrubber: core.scrubber.clone(),
    };
    match sandbox {
        Ok(tools) => {
            let own = creds.account.map(|(a, _)| a.config_dir.clone());
            let others: Vec<PathBuf> = core.accounts().into_iter().map(|a| a.config_dir).filter(|d| Some(d) != own.as_ref()).collect();
            super::sandboxing::wrap(core, routine, &tools, &mut spec, &others)?;
        }
        Err(why) => super::sandboxing::record_without(run_dir, &why),
    }
    Ok(spec)
}

/// The routine's prompt with its variables filled in (`{last_report}`, `{branch}`, …) — and the
/// review a run answers after it — or its command.
pub(crate) fn render_prompt(core: &Core, routine: &Routine, now: DateTime<Utc>, workspace: Option<&RunWorkspace>, event: Option<&crate::incoming::Event>) -> String {
    match &routine.action {
        Action::Agent { prompt, .. } => {
            let last = core.store.last_completed_report(&routine.name).ok().flatten();
            let branch = workspace.and_then(|w| w.branch.as_deref());
            let task = render(prompt, &PromptContext { routine: &routine.name, now, tz: routine.timezone, last_report: last.as_deref(), variables: &routine.variables, branch, event });
            // A run that answers a review is told so, and given the review, unless its prompt
            // places `{review.comments}` itself.
            match event.and_then(crate::incoming::review::suffix).filter(|_| !prompt.contains("{review.comments}")) {
                Some(review) => format!("{task}\n\n{review}"),
                None => task,
            }
        }
        Action::Command { command } => command.clone(),
    }
}

/// What every run is told about itself, wherever it runs.
pub(crate) fn run_variables(routine: &Routine, id: &str) -> Vec<(&'static str, String)> {
    vec![
        ("NIGHTSHIFT_RUN_ID", id.to_string()),
        ("NIGHTSHIFT_ROUTINE", routine.name.clone()),
        // `date` inside a run agrees with its schedule: the routine's zone (its own `env: TZ`
        // still wins).
        ("TZ", routine.timezone.name().to_string()),
    ]
}

/// The executable to run, or a message saying exactly what is missing and how to fix it.
fn resolve_program(core: &Core, routine: &Routine, driver: &'static dyn AgentDriver, path_var: Option<&str>) -> Result<PathBuf, String> {
    if let Some(cwd) = &routine.cwd {
        if !cwd.is_dir() {
            return Err(format!("the working directory {} does not exist (routine `cwd:` in {})", cwd.display(), core.home.display_path(&routine.file)));
        }
    }
    let name = driver.program();
    // A pinned `version:` the settings map to a binary.
    if let Some(program) = &routine.program {
        return Ok(program.clone());
    }
    if let Some(agent) = routine.agent().cli() {
        if let Some(configured) = core.settings().agent_path(agent) {
            return crate::fsutil::find_on_path(&configured.display().to_string(), path_var).ok_or_else(|| {
                format!("{} (set as [agents.{}] path in nightshift.toml) is not an executable file", configured.display(), agent.as_str())
            });
        }
    }
    crate::fsutil::find_on_path(name, path_var).ok_or_else(|| format!("`{name}` was not found on PATH; {}", driver.install_hint()))
}

/// What a try on another machine runs, whatever the kind of host: the agent's program and
/// arguments for the rendered prompt, and its environment — the routine's `env:` over the run's own
/// variables and `extra` (the credentials an SSH host gets over the channel; an Actions host's
/// provider), as for a run here ([`crate::runner::env::overlay`]) — never the local environment
/// (its PATH means nothing there).
pub(crate) fn away(core: &Core, live: &super::live::LiveRun, routine: &Routine, extra: &[(&str, String)], sandboxed: bool) -> (&'static dyn crate::agents::AgentDriver, Vec<String>, std::collections::BTreeMap<String, String>) {
    let event = core.store.get_run(&live.id).ok().and_then(|r| r.event);
    let prompt = render_prompt(core, routine, core.clock.now(), None, event.as_ref());
    let crate::agents::Invocation { driver, args, env: agent_env, .. } = routine.action.invocation_of_try(&prompt, run_cap(routine, &core.settings()), None, None, sandboxed, None);
    let mut vars = agent_env;
    vars.extend(run_variables(routine, &live.id));
    vars.extend(extra.iter().map(|(k, v)| (*k, v.clone())));
    let mut env = std::collections::BTreeMap::new();
    crate::runner::env::overlay(&mut env, &routine.env, &vars);
    (driver, args, env)
}
