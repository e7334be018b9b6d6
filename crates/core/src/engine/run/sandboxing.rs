//! Whether a run here goes in the machine's sandbox, and what its sandbox is built from: what the
//! routine asks (`sandbox:`, `[defaults] sandbox`), what this machine can do (bubblewrap, the
//! Nightshift binary that serves the sandbox's helpers) and what the run needs (its folders, its
//! account's, its agent's API). The mechanics are [`crate::runner::sandbox`]'s.

use crate::engine::state::Core;
use crate::routine::Routine;
use crate::run_dir::RunDir;
use crate::runner::process::SpawnSpec;
use crate::runner::sandbox::{self, helper, Plan};
use crate::sandbox::Wanted;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a sandboxed run is started with: bubblewrap, and the Nightshift binary whose helpers
/// run outside and inside it.
#[derive(Debug, Clone)]
pub(crate) struct Tools {
    bwrap: PathBuf,
    helper: PathBuf,
}

/// The file in the home's data folder that remembers a working sandbox for this boot.
const PROBE_CACHE: &str = "sandbox-works";

/// Can this engine build a sandbox? Probed once per engine (a few milliseconds) on the PATH it
/// gives its runs, and a working one remembered in the home for this boot.
fn tools(core: &Core) -> Result<Tools, String> {
    let helper = core.scrubber.clone().ok_or_else(|| "this engine was not started by a Nightshift binary that can serve the sandbox's helpers".to_string())?;
    let path = core.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone());
    let cache = core.home.data_dir().join(PROBE_CACHE);
    let bwrap = core.sandbox_probe.get_or_init(|| sandbox::probe_cached(&cache, path.as_deref())).clone()?;
    Ok(Tools { bwrap, helper })
}

/// Whether a run of `routine` here is sandboxed: `Ok(Some)` with what it takes, `Ok(None)` not
/// (it said `off`, or Nightshift's default where no sandbox can be built — `why` says which),
/// `Err` when it asked for one that cannot be built (`blocked · no_sandbox`, the fix in words).
/// A run on another machine is decided there ([`super::remote_run`]).
pub(crate) fn decide(core: &Core, routine: &Routine) -> Result<Result<Tools, String>, String> {
    if routine.placement.is_some() {
        return Ok(Err("decided on its host".into()));
    }
    let wanted = match wanted(routine) {
        Ok(w) => w,
        Err(why) => return Ok(Err(why)),
    };
    settle(routine, wanted, tools(core), "here")
}

/// What `routine` asks of the sandbox: `Err` with the words when it goes without one whatever
/// the machine (`sandbox: off`, a command's default).
pub(crate) fn wanted(routine: &Routine) -> Result<Wanted, String> {
    match routine.sandbox.wanted(routine.agent().cli().is_some()) {
        Wanted::Off => Err(format!("`sandbox: off`{}", if routine.sandbox.asked.is_none() { " (a command routine's default)" } else { "" })),
        wanted => Ok(wanted),
    }
}

/// What comes of a routine's wish where the sandbox can be built or not (`built`): the tools,
/// the reason it goes without (`Ok(Err)`), or — it asked, and none can be built `there` — the
/// words that block it (`Err`).
pub(crate) fn settle<T>(routine: &Routine, wanted: Wanted, built: Result<T, String>, there: &str) -> Result<Result<T, String>, String> {
    match (wanted, built) {
        (Wanted::Required, Err(why)) => {
            let by = routine.sandbox.asked_by.unwrap_or("sandbox:");
            Err(format!("not started: it asks for a sandbox ({by}) and none can be built {there}: {why}"))
        }
        (_, built) => Ok(built),
    }
}

/// Put the run `spec` describes in its sandbox: write its plan to the run's folder and make the
/// wrapper start the helper instead of the program. `account_dirs`: the folders the run's account
/// keeps its login and state in (writable); `other_accounts`: every other account's (hidden).
pub(crate) fn wrap(core: &Core, routine: &Routine, tools: &Tools, spec: &mut SpawnSpec, other_accounts: &[PathBuf]) -> Result<(), String> {
    let plan = plan(core, routine, spec, other_accounts);
    let dir = RunDir::at(&spec.run_dir);
    let own = dir.sandbox();
    let written = std::fs::create_dir_all(&own)
        .and_then(|_| write_unreadable(&own.join(sandbox::HIDDEN_FILE)))
        .and_then(|_| std::fs::write(dir.sandbox_plan(), serde_json::to_vec_pretty(&plan).unwrap_or_default()));
    written.map_err(|e| format!("not started: cannot write the sandbox's plan in {}: {e}", own.display()))?;
    let (program, args) = helper::command(&tools.helper, &tools.bwrap, &spec.run_dir, &spec.program, &spec.args);
    spec.program = program;
    spec.args = args;
    Ok(())
}

/// Say why a run was not sandboxed, in its folder (`show` prints it).
pub(crate) fn record_without(run_dir: &Path, why: &str) {
    let dir = RunDir::at(run_dir);
    let _ = std::fs::remove_file(dir.sandbox_plan());
    let _ = std::fs::create_dir_all(dir.sandbox()).and_then(|_| std::fs::write(dir.sandbox_off(), why));
}

/// Keep the plan of a run sandboxed on another machine in its folder here: the run was
/// sandboxed (`show`, the judge reading its tools' refusals), and what with.
pub(crate) fn record_plan(run_dir: &Path, plan: &Plan) {
    let dir = RunDir::at(run_dir);
    let _ = std::fs::remove_file(dir.sandbox_off());
    let _ = std::fs::create_dir_all(dir.sandbox()).and_then(|_| std::fs::write(dir.sandbox_plan(), serde_json::to_vec_pretty(plan).unwrap_or_default()));
}

/// An empty file with no permissions, laid over every hidden file.
fn write_unreadable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if !path.exists() {
        std::fs::write(path, b"")?;
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o000))
}

fn plan(core: &Core, routine: &Routine, spec: &SpawnSpec, other_accounts: &[PathBuf]) -> Plan {
    let db = core.home.db_path();
    let machine = Machine {
        home: spec.env.get("HOME").map(PathBuf::from),
        cwd: spec.cwd.clone().or_else(|| std::env::current_dir().ok()),
        run_dir: spec.run_dir.clone(),
        // The engine's database (and its journal) and every other account's folders.
        hidden: ["", "-wal", "-shm", "-journal"].iter().map(|suffix| PathBuf::from(format!("{}{suffix}", db.display()))).chain(other_accounts.iter().cloned()).collect(),
        here: true,
    };
    plan_for(routine, &spec.env, machine)
}

/// The plan of a run of `routine` on an SSH host, run `run_id` there in `cwd` (the routine's
/// `remoteCwd`; the remote home by default) with `env`: its paths under `~`, which the helper
/// there completes ([`Plan::complete_here`]).
/// `home_here`: this machine's home, which the routine's `~` in `sandbox_hide:` and `allow.dirs`
/// was read as — on the host it is the host's home.
pub(crate) fn remote_plan(routine: &Routine, env: &BTreeMap<String, String>, run_id: &str, cwd: Option<&str>, home_here: Option<&Path>) -> Plan {
    let home = PathBuf::from("~");
    let machine = Machine {
        cwd: Some(cwd.map(PathBuf::from).unwrap_or_else(|| home.clone())),
        run_dir: home.join(crate::runner::remote::REMOTE_RUNS).join(run_id),
        home: Some(home),
        hidden: Vec::new(),
        here: false,
    };
    let mut plan = plan_for(routine, env, machine);
    if let Some(here) = home_here.filter(|h| h.is_absolute() && *h != Path::new("/")) {
        let named: Vec<&PathBuf> = routine.sandbox.hide.iter().chain(match &routine.action {
            crate::routine::Action::Agent { guard, .. } => guard.allow_dirs.iter(),
            _ => [].iter(),
        }).collect();
        for p in plan.writable.iter_mut().chain(plan.visible.iter_mut()).chain(plan.hidden.iter_mut()).filter(|p| named.contains(&&**p)) {
            if let Ok(rest) = p.strip_prefix(here) {
                *p = Path::new("~").join(rest);
            }
        }
    }
    plan
}

/// The machine a plan is for, as far as the engine knows it. What only that machine knows — what
/// must stay visible under its private `/tmp`, its session's runtime folder, `~` — the helper
/// adds there before bubblewrap ([`Plan::complete_here`]), for a run here as for one on a host.
struct Machine {
    home: Option<PathBuf>,
    cwd: Option<PathBuf>,
    run_dir: PathBuf,
    /// What it hides besides the home's secret folders (here: the database, other accounts).
    hidden: Vec<PathBuf>,
    /// It is this machine (its folders can be made and its files read now).
    here: bool,
}

fn plan_for(routine: &Routine, env: &BTreeMap<String, String>, machine: Machine) -> Plan {
    let here = machine.here;
    let home = machine.home;
    let driver = crate::agents::driver(routine.agent());
    let needs = driver.sandbox_needs();
    let mut writable: Vec<PathBuf> = Vec::new();
    let cwd = machine.cwd;
    let (guard, looks_only) = match &routine.action {
        crate::routine::Action::Agent { guard, mode, .. } => (Some(guard), *mode == crate::agents::Mode::Plan),
        _ => (None, false),
    };
    // Where it works: its folder (a worktree's repository too) and `allow.dirs` — read-only for
    // `mode: plan`, which only looks (an agent whose own sandbox cannot nest here relies on it).
    let mut works_in: Vec<PathBuf> = cwd.iter().cloned().collect();
    works_in.extend(cwd.as_deref().filter(|_| here).map(git_dirs).unwrap_or_default());
    works_in.extend(guard.iter().flat_map(|g| g.allow_dirs.iter().cloned()));
    let mut visible: Vec<PathBuf> = Vec::new();
    match looks_only {
        true => visible.extend(works_in),
        false => writable.extend(works_in),
    }
    writable.push(machine.run_dir);
    // The agent's own folders: its config dir's variable and the account's other folders, as the
    // run's environment names them, and what it writes under the home on the user's own login.
    let mut vars: Vec<&str> = needs.state_vars.to_vec();
    if let Some(auth) = driver.auth() {
        vars.push(auth.config_dir_var);
        vars.extend(auth.more_dirs.iter().map(|(v, _)| *v));
    }
    for var in vars {
        if let Some(dir) = env.get(var).map(PathBuf::from).filter(|p| p.is_absolute()) {
            if here {
                let _ = std::fs::create_dir_all(&dir);
            }
            writable.push(dir);
        }
    }
    if let Some(home) = &home {
        writable.extend(needs.home_state.iter().map(|p| home.join(p)));
    }

    let mut hidden: Vec<PathBuf> = home.as_deref().map(crate::sandbox::hidden_in_home).unwrap_or_default();
    hidden.extend(machine.hidden.into_iter().filter(|d| !writable.contains(d)));
    hidden.extend(routine.sandbox.hide.iter().cloned());

    let mut hosts: Vec<String> = needs.api_hosts.iter().map(|h| h.to_string()).collect();
    hosts.extend(crate::sandbox::hosts_in_env(env));
    // The API its own config file names (a file on this machine: a host's is not read).
    if here {
        hosts.extend(crate::sandbox::hosts_in_config(needs, env, home.as_deref()));
    }
    hosts.extend(guard.iter().flat_map(|g| g.allow_hosts.iter().cloned()));
    hosts.sort();
    hosts.dedup();
    let forwards = crate::sandbox::loopback_ports(&hosts);

    let background = needs.background_hosts.iter().map(|h| h.to_string()).collect();
    Plan { visible, writable, hidden, hosts, background, forwards, cwd }
}

/// A git worktree writes its commits into the repository it belongs to: its own folder there
/// (`.git/worktrees/<name>`) and the shared one (objects, refs).
fn git_dirs(cwd: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(cwd.join(".git")) else { return Vec::new() };
    let Some(gitdir) = text.trim().strip_prefix("gitdir:").map(|g| cwd.join(g.trim())) else { return Vec::new() };
    let common = std::fs::read_to_string(gitdir.join("commondir")).ok().map(|c| gitdir.join(c.trim()));
    std::iter::once(gitdir).chain(common).filter_map(|p| std::fs::canonicalize(p).ok()).collect()
}
