//! The engine's side of a run placed on another machine (`host:`): choosing the host, starting
//! the run there with the account's token sent over the SSH channel, bringing its output home
//! while it goes (again after a dropped connection or a new engine), and forgetting its remote
//! files once it is settled. The mechanics of each SSH command are in [`crate::runner::remote`].
//!
//! A remote run is a run: it has the same record, statuses, classification, report, attempts and
//! notifications as a local one — its logs are in the local run directory, so everything that
//! reads a run reads it. What differs is who keeps the limit (the remote wrapper, from the first
//! second: it is never watched through a pipe) and how it is cancelled (over SSH).

use super::live::{Ending, LiveRun};
use crate::routine::Routine;
use crate::engine::state::Core;
use crate::run::Reason;
use crate::run_dir::RunDir;
use crate::runner::remote::{self, Failure, RemoteCommand, OnHost, Sandboxed, Target};
use crate::runner::remote_sandbox::{self, NotReady};
use super::sandboxing;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// A try going on another machine: over SSH, or on a repository's GitHub Actions runners.
#[derive(Debug, Clone)]
pub(crate) enum RemoteProc {
    Ssh(SshProc),
    Actions(super::actions_run::ActionsProc),
}

/// A try going on an SSH host.
#[derive(Debug, Clone)]
pub(crate) struct SshProc {
    pub target: Target,
    pub started: OnHost,
}

impl RemoteProc {
    /// The host's name, as routines write it in `host:`.
    pub(crate) fn host(&self) -> &str {
        match self {
            RemoteProc::Ssh(p) => &p.target.host,
            RemoteProc::Actions(p) => &p.host.name,
        }
    }
}

/// How long after its limit (and grace) a run whose host cannot be reached is given up: by then
/// the remote wrapper has ended it, so only its output and exit code are still out there.
const GIVE_UP_AFTER_LIMIT: Duration = Duration::from_secs(10 * 60);

/// A host that answers but refuses to show the run's files this many times in a row is given up.
const GIVE_UP_REFUSALS: usize = 3;

/// Waits between tries to reach a host again while following a run.
const RECONNECT: [Duration; 5] = [Duration::from_secs(1), Duration::from_secs(2), Duration::from_secs(5), Duration::from_secs(10), Duration::from_secs(30)];

impl Core {
    /// How this engine reaches `host`: the user's ssh config (or `ssh_config`), sharing one
    /// connection per host unless `reuse_ssh_connections = false`.
    pub(crate) fn ssh_target(&self, host: &str) -> Target {
        Target::of_home(host, &self.settings(), self.home.data_dir())
    }

    /// Remember what reaching `host` showed (its health in `hosts list` and the window).
    pub(crate) fn host_contact(&self, host: &str, failure: Option<&Failure>) {
        let error = failure.filter(|f| matches!(f, Failure::Unreachable(_))).map(Failure::message);
        if let Err(e) = self.store.record_host_contact(host, self.clock.now(), error) {
            tracing::warn!(%host, error = %e, "could not record the host's health");
        }
    }
}

/// Start try `n`'s process on the first of the routine's hosts that answers and has no run of
/// this routine going. An unreachable host is skipped (and remembered); when none answers the run
/// is `blocked · host_unreachable`; a host without the agent blocks it (`blocked · spawn_failed`);
/// a host that answers but cannot start it otherwise fails it (`failed · spawn_failed`).
pub(crate) async fn start(core: &Arc<Core>, live: &LiveRun, routine: &Routine, creds: crate::engine::accounts::RunCreds<'_>) -> Result<RemoteProc, Ending> {
    let Some(placement) = routine.placement.as_ref() else { return Err(Ending::SpawnFailed("the routine has no host".into())) };
    // Made once, when the first SSH host is tried (a host on Actions builds its own call).
    let mut ssh_command: Option<RemoteCommand> = None;
    let mut unreachable = Vec::new();
    let mut busy = Vec::new();
    let mut no_sandbox = Vec::new();
    let hosts = match placement.fleet {
        true => fleet_order(&placement.hosts, &core.store.runs_going_by_host().unwrap_or_default()),
        false => placement.hosts.clone(),
    };
    for host in &hosts {
        if hosts.len() > 1 && core.store.routine_running_on(&routine.name, host, &live.id).unwrap_or(false) {
            busy.push(host.as_str());
            continue;
        }
        if let Err(e) = core.store.set_host(&live.id, host) {
            tracing::warn!(run = %live.id, error = %e, "could not record the run's host");
        }
        let started = match core.settings().actions_host(host) {
            Some(actions) => {
                if let Err(blocked) = without_sandbox_on_actions(live, routine, host) {
                    no_sandbox.push(blocked);
                    continue;
                }
                super::actions_run::start(core, live, routine, &actions, creds.account.map(|(a, _)| a), !creds.secrets.is_empty()).await.map(RemoteProc::Actions)
            }
            None => {
                let target = core.ssh_target(host);
                let base = ssh_command.get_or_insert_with(|| command(core, live, routine, creds, false));
                match sandbox_there(core, live, routine, &target, base).await {
                    Err(failure) => Err(failure),
                    Ok(Err(blocked)) => {
                        no_sandbox.push(blocked);
                        continue;
                    }
                    Ok(Ok(sandbox)) => {
                        let mut cmd = base.clone();
                        // An agent whose own sandbox cannot nest in the machine's is told (Codex).
                        if sandbox.is_some() {
                            cmd.argv = command(core, live, routine, creds, true).argv;
                        }
                        cmd.argv[0] = program_on(&core.settings(), routine, host);
                        cmd.sandbox = sandbox;
                        remote::start(&target, &cmd).await.map(|started| RemoteProc::Ssh(SshProc { target, started }))
                    }
                }
            }
        };
        match started {
            Ok(RemoteProc::Actions(proc)) => {
                core.host_contact(host, None);
                return Ok(RemoteProc::Actions(proc));
            }
            Ok(RemoteProc::Ssh(SshProc { target, started })) => {
                core.host_contact(host, None);
                let json = serde_json::to_string(&started).unwrap_or_default();
                if let Err(e) = core.store.set_remote(&live.id, &json) {
                    tracing::error!(run = %live.id, error = %e, "could not record where the run's process is");
                }
                tracing::info!(run = %live.id, %host, dir = %started.dir, "run started on its host");
                return Ok(RemoteProc::Ssh(SshProc { target, started }));
            }
            Err(failure @ Failure::Unreachable(_)) => {
                core.host_contact(host, Some(&failure));
                tracing::warn!(run = %live.id, %host, error = %failure.message(), "host unreachable");
                unreachable.push(failure.message().to_string());
            }
            Err(Failure::Missing(message)) => {
                // Preflight: nothing was started there, so the run is blocked, not failed.
                core.host_contact(host, None);
                return Err(Ending::Blocked { reason: Reason::SpawnFailed, message: format!("not started: {message}"), resets_at: None });
            }
            Err(Failure::Refused(message)) => {
                core.host_contact(host, None);
                return Err(Ending::SpawnFailed(message));
            }
        }
    }
    let (reason, message) = match (unreachable.is_empty(), no_sandbox.is_empty()) {
        (false, _) => (Reason::HostUnreachable, format!("not started: {}", unreachable.join("; "))),
        (true, false) => (Reason::NoSandbox, no_sandbox.join("; ")),
        (true, true) => (Reason::ActiveRun, format!("not started: every host of this routine ({}) has a run of it going", busy.join(", "))),
    };
    Err(Ending::Blocked { reason, message, resets_at: None })
}

/// A run on a GitHub Actions host goes without Nightshift's sandbox (each run there is a fresh
/// virtual machine of GitHub's): why, in the run's folder — or, for a routine that asks for one,
/// the words that keep it off that host.
fn without_sandbox_on_actions(live: &LiveRun, routine: &Routine, host: &str) -> Result<(), String> {
    let why = format!("`{host}` is a GitHub Actions host, whose runners Nightshift does not sandbox (each run is a fresh virtual machine of GitHub's)");
    let words = match sandboxing::wanted(routine) {
        Err(off) => off,
        // Asked for: kept off this host (`Err`); otherwise it goes without, saying why.
        Ok(wanted) => sandboxing::settle(routine, wanted, Err::<(), _>(why), &format!("on {host}"))?.err().unwrap_or_default(),
    };
    sandboxing::record_without(&live.run_dir, &words);
    Ok(())
}

/// `hostStrategy: fleet`: the machines with the fewest runs going first (in the order
/// nightshift.toml lists them among equals) — the first of them that answers takes the run.
fn fleet_order(hosts: &[String], going: &std::collections::HashMap<String, usize>) -> Vec<String> {
    let mut ordered = hosts.to_vec();
    ordered.sort_by_key(|h| going.get(h).copied().unwrap_or(0));
    ordered
}

/// The agent's executable on `host`: `[hosts.<host>] agent_path`, else its name on the PATH an
/// SSH command gets there (`sh` for a command routine).
pub(crate) fn program_on(settings: &crate::settings::Settings, routine: &Routine, host: &str) -> String {
    let name = crate::agents::driver(routine.agent()).program();
    routine.agent().cli().and_then(|a| settings.host_agent_path(host, a)).unwrap_or(name).to_string()
}

/// The SSH command line and environment, the same for every SSH host but its program (`argv[0]`,
/// set per host) and its sandbox, with the account's secret sent over the channel; `sandboxed`:
/// its agent is told it runs in the machine's sandbox ([`crate::agents::Call::sandboxed`]).
fn command(core: &Core, live: &LiveRun, routine: &Routine, creds: crate::engine::accounts::RunCreds<'_>, sandboxed: bool) -> RemoteCommand {
    let credentials = crate::engine::accounts::credentials_env(core, routine, creds, crate::engine::accounts::Where::OnAHost);
    let credentials: Vec<(&str, String)> = credentials.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    let (_, args, env) = super::attempt::away(core, live, routine, &credentials, sandboxed);
    RemoteCommand {
        run_id: live.id.clone(),
        argv: std::iter::once(String::new()).chain(args).collect(),
        cwd: routine.placement.as_ref().and_then(|p| p.remote_cwd.clone()),
        env: env.into_iter().collect(),
        timeout: Some(routine.timeout),
        kill_grace: core.settings().kill_grace(),
        sandbox: None,
    }
}

/// Whether the try goes in the machine's sandbox on the host `target` reaches: `Ok(Ok(Some))`
/// with what it is built from there (its plan kept in the run's folder here), `Ok(Ok(None))` not
/// (why, in the run's folder), `Ok(Err)` when the routine asks for one the host cannot build
/// (the words that block it), `Err` when the host could not be asked. A host found able is
/// remembered for this engine's life; one that was not is asked again next time.
async fn sandbox_there(core: &Core, live: &LiveRun, routine: &Routine, target: &Target, cmd: &RemoteCommand) -> Result<Result<Option<Sandboxed>, String>, Failure> {
    let wanted = match sandboxing::wanted(routine) {
        Ok(wanted) => wanted,
        Err(off) => {
            sandboxing::record_without(&live.run_dir, &off);
            return Ok(Ok(None));
        }
    };
    let known = core.host_sandboxes.lock().unwrap_or_else(|e| e.into_inner()).get(&target.host).cloned();
    let ready = match (known, &core.scrubber) {
        (Some(ready), _) => Ok(ready),
        (None, None) => Err("this engine was not started by a Nightshift binary that can serve the sandbox's helpers".to_string()),
        (None, Some(exe)) => match remote_sandbox::prepare(target, &remote_sandbox::helper_to_ship(exe)).await {
            Ok(ready) => {
                core.host_sandboxes.lock().unwrap_or_else(|e| e.into_inner()).insert(target.host.clone(), ready.clone());
                Ok(ready)
            }
            Err(NotReady::Failure(failure)) => return Err(failure),
            Err(NotReady::Cannot(why)) => Err(why),
        },
    };
    Ok(match sandboxing::settle(routine, wanted, ready, &format!("on {}", target.host)) {
        Err(blocked) => Err(blocked),
        Ok(Err(why)) => {
            sandboxing::record_without(&live.run_dir, &why);
            Ok(None)
        }
        Ok(Ok(ready)) => {
            let env: std::collections::BTreeMap<String, String> = cmd.env.iter().cloned().collect();
            let home_here = core.env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| std::path::PathBuf::from(v));
            let plan = sandboxing::remote_plan(routine, &env, &live.id, cmd.cwd.as_deref(), home_here.as_deref());
            sandboxing::record_plan(&live.run_dir, &plan);
            Ok(Some(Sandboxed { helper: ready.helper, bwrap: ready.bwrap, plan: serde_json::to_string(&plan).unwrap_or_default() }))
        }
    })
}

/// Bring the run's output home until it ends there; reconnect after a drop (from the last byte
/// the local logs have); cancel it there on `cancel`. Gives up only once the host has been out of
/// reach past the run's limit ([`GIVE_UP_AFTER_LIMIT`]).
pub(crate) async fn follow(core: &Arc<Core>, run: &LiveRun, proc: &RemoteProc, cancel: Arc<Notify>) -> Ending {
    match proc {
        RemoteProc::Ssh(proc) => follow_ssh(core, run, proc, cancel).await,
        RemoteProc::Actions(proc) => super::actions_run::follow(core, run, proc, cancel).await,
    }
}

async fn follow_ssh(core: &Arc<Core>, run: &LiveRun, proc: &SshProc, cancel: Arc<Notify>) -> Ending {
    let dir = RunDir::at(&run.run_dir);
    let (stdout, stderr) = (dir.stdout(), dir.stderr());
    let host = &proc.target.host;
    let mut cancelled = false;
    let mut tries = 0usize;
    let mut refused = 0usize;
    loop {
        let following = remote::follow(&proc.target, &proc.started, &stdout, &stderr);
        let failure = tokio::select! {
            ended = following => match ended {
                Ok(end) => {
                    core.host_contact(host, None);
                    bring_refusals_home(run, proc).await;
                    return match (end.timed_out, cancelled) {
                        (true, _) => Ending::TimedOut,
                        (false, true) => Ending::Cancelled,
                        (false, false) => Ending::Exited(end.code),
                    };
                }
                Err(failure) => failure,
            },
            _ = cancel.notified(), if !cancelled => {
                cancelled = true;
                cancel_there(core, run, proc).await;
                continue;
            }
        };
        core.host_contact(host, Some(&failure));
        refused = if matches!(failure, Failure::Refused(_) | Failure::Missing(_)) { refused + 1 } else { 0 };
        if refused >= GIVE_UP_REFUSALS {
            // The host answers but the run's files cannot be read there (removed by hand):
            // nothing more can come home.
            tracing::warn!(run = %run.id, %host, error = %failure.message(), "the run's files on its host cannot be read");
            return Ending::Unreachable(format!("the run's files on {host} cannot be read: {}", failure.message()));
        }
        if past_giving_up(&proc.started, core.settings().kill_grace()) {
            return Ending::Unreachable(format!("lost contact with {host} while the run went on there: {}", failure.message()));
        }
        tracing::info!(run = %run.id, %host, error = %failure.message(), "lost the connection to the run's host; reconnecting");
        let wait = RECONNECT[tries.min(RECONNECT.len() - 1)];
        tries += 1;
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.notified(), if !cancelled => {
                // Cancelling needs the host too: try it at once, keep following after.
                cancelled = true;
                cancel_there(core, run, proc).await;
            }
        }
    }
}

/// A sandboxed run's refused connections, from its folder there to its folder here (where the
/// judge reads them), before the folder there is removed.
async fn bring_refusals_home(run: &LiveRun, proc: &SshProc) {
    let dir = RunDir::at(&run.run_dir);
    if !dir.sandbox_plan().exists() {
        return;
    }
    let rel = format!("{}/{}", crate::run_dir::SANDBOX_DIR, crate::run_dir::SANDBOX_REFUSED_FILE);
    match remote::read_file(&proc.target, &proc.started, &rel).await {
        Ok(Some(bytes)) => {
            if let Err(e) = std::fs::write(dir.sandbox_refused(), bytes) {
                tracing::warn!(run = %run.id, error = %e, "could not keep the sandbox's refusals");
            }
        }
        Ok(None) => {}
        Err(failure) => tracing::warn!(run = %run.id, host = %proc.target.host, error = %failure.message(), "could not bring the sandbox's refusals home"),
    }
}

/// End the run on its host (its group: SIGTERM, SIGKILL after the grace); a failure is logged and
/// remembered as the host's health — following goes on either way and tells how it ended.
async fn cancel_there(core: &Core, run: &LiveRun, proc: &SshProc) {
    let host = &proc.target.host;
    tracing::info!(run = %run.id, %host, "cancelling the run on its host");
    if let Err(failure) = remote::cancel(&proc.target, &proc.started, core.settings().kill_grace()).await {
        tracing::warn!(run = %run.id, %host, error = %failure.message(), "could not cancel the run on its host");
        core.host_contact(host, Some(&failure));
    }
}

/// Whether the host has been out of reach for so long after the run's limit that it is given up.
fn past_giving_up(started: &OnHost, grace: Duration) -> bool {
    if started.deadline == 0 {
        return false;
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    now > started.deadline + grace.as_secs() + GIVE_UP_AFTER_LIMIT.as_secs()
}

/// The run is settled: remove its files on the host (its output is home). A failure only leaves
/// a small directory there, and is logged. (A workflow run's log stays on GitHub, as GitHub keeps
/// it.)
pub(crate) async fn forget(run_id: &str, proc: &RemoteProc) {
    let RemoteProc::Ssh(proc) = proc else { return };
    if let Err(failure) = remote::remove(&proc.target, &proc.started).await {
        tracing::warn!(run = %run_id, host = %proc.target.host, error = %failure.message(), "could not remove the run's files on its host");
    }
}

/// Keep how a try on a host ended in the local run directory (its exit code, the timeout mark),
/// so settling — or recovery, should this engine die first — never needs the host again. `false`
/// when that could not be written (the host's files are then kept until it is settled).
pub(crate) fn keep_locally(run_dir: &std::path::Path, ending: &Ending) -> bool {
    let kept = match ending {
        Ending::Exited(Some(code)) => std::fs::write(RunDir::at(run_dir).exit_code(), format!("{code}\n")),
        Ending::TimedOut => std::fs::write(RunDir::at(run_dir).timed_out(), b""),
        _ => Ok(()),
    };
    match kept {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(dir = %run_dir.display(), error = %e, "could not keep how the run ended on its host");
            false
        }
    }
}

/// Where a recorded run is on its host (recovery re-attaches to it), or why that is not known.
pub(crate) fn recorded(core: &Core, host: Option<&str>, remote: &str) -> Result<RemoteProc, String> {
    if let Some(on_actions) = super::actions_run::recorded(core, remote) {
        return on_actions.map(RemoteProc::Actions);
    }
    let unknown = || "its record does not say where on its host it runs".to_string();
    let started: OnHost = serde_json::from_str(remote).map_err(|_| unknown())?;
    Ok(RemoteProc::Ssh(SshProc { target: core.ssh_target(host.ok_or_else(unknown)?), started }))
}

#[cfg(test)]
mod tests {
    use super::fleet_order;

    #[test]
    fn a_fleet_tries_the_machines_with_the_fewest_runs_first() {
        let hosts: Vec<String> = ["box", "dead", "spare"].map(String::from).to_vec();
        let going = std::collections::HashMap::from([("box".to_string(), 2), ("spare".to_string(), 1)]);
        assert_eq!(fleet_order(&hosts, &going), ["dead", "spare", "box"]);
        assert_eq!(fleet_order(&hosts, &Default::default()), hosts, "the listed order among equals");
    }
}
