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

/// Can this engine build a sandbox? Probed once per engine (a few milliseconds), on the PATH it
/// gives its runs.
fn tools(core: &Core) -> Result<Tools, String> {
    let helper = core.scrubber.clone().ok_or_else(|| "this engine was not started by a Nightshift binary that can serve the sandbox's helpers".to_string())?;
    let path = core.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone());
    let bwrap = core.sandbox_probe.get_or_init(|| sandbox::probe(path.as_deref())).clone()?;
    Ok(Tools { bwrap, helper })
}

/// Whether a run of `routine` here is sandboxed: `Ok(Some)` with what it takes, `Ok(None)` not
/// (it said `off`, or Nightshift's default where no sandbox can be built — `why` says which),
/// `Err` when it asked for one that cannot be built (`blocked · no_sandbox`, the fix in words).
pub(crate) fn decide(core: &Core, routine: &Routine) -> Result<Result<Tools, String>, String> {
    if routine.placement.is_some() {
        return Ok(Err("runs on other machines are not sandboxed by Nightshift".into()));
    }
    match routine.sandbox.wanted(routine.agent().cli().is_some()) {
        Wanted::Off => Ok(Err(format!("`sandbox: off`{}", if routine.sandbox.asked.is_none() { " (a command routine's default)" } else { "" }))),
        Wanted::Required => tools(core).map(Ok).map_err(|why| {
            let by = routine.sandbox.asked_by.unwrap_or("sandbox:");
            format!("not started: it asks for a sandbox ({by}) and none can be built here: {why}")
        }),
        Wanted::WhereItWorks => Ok(tools(core)),
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

/// Say why a run here was not sandboxed, in its folder (`show` prints it).
pub(crate) fn record_without(run_dir: &Path, why: &str) {
    let dir = RunDir::at(run_dir);
    let _ = std::fs::create_dir_all(dir.sandbox()).and_then(|_| std::fs::write(dir.sandbox_off(), why));
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
    let env = &spec.env;
    let home = env.get("HOME").map(PathBuf::from);
    let driver = crate::agents::driver(routine.agent());
    let needs = driver.sandbox_needs();
    let mut writable: Vec<PathBuf> = Vec::new();
    let cwd = spec.cwd.clone().or_else(|| std::env::current_dir().ok());
    let (guard, looks_only) = match &routine.action {
        crate::routine::Action::Agent { guard, mode, .. } => (Some(guard), *mode == crate::agents::Mode::Plan),
        _ => (None, false),
    };
    // Where it works: its folder (a worktree's repository too) and `allow.dirs` — read-only for
    // `mode: plan`, which only looks (an agent whose own sandbox cannot nest here relies on it).
    let mut works_in: Vec<PathBuf> = cwd.iter().cloned().collect();
    works_in.extend(cwd.as_deref().map(git_dirs).unwrap_or_default());
    works_in.extend(guard.iter().flat_map(|g| g.allow_dirs.iter().cloned()));
    let mut read_only: Vec<PathBuf> = Vec::new();
    match looks_only {
        true => read_only.extend(works_in.into_iter().filter(|p| p.starts_with("/tmp"))),
        false => writable.extend(works_in),
    }
    writable.push(spec.run_dir.clone());
    // The agent's own folders: its config dir's variable and the account's other folders, as the
    // run's environment names them, and what it writes under the home on the user's own login.
    let mut vars: Vec<&str> = needs.state_vars.to_vec();
    if let Some(auth) = driver.auth() {
        vars.push(auth.config_dir_var);
        vars.extend(auth.more_dirs.iter().map(|(v, _)| *v));
    }
    for var in vars {
        if let Some(dir) = env.get(var).map(PathBuf::from).filter(|p| p.is_absolute()) {
            let _ = std::fs::create_dir_all(&dir);
            writable.push(dir);
        }
    }
    if let Some(home) = &home {
        writable.extend(needs.home_state.iter().map(|p| home.join(p)));
    }

    let mut hidden: Vec<PathBuf> = home.as_deref().map(crate::sandbox::hidden_in_home).unwrap_or_default();
    // The engine's database (and its journal) and every other account's folders.
    let db = core.home.db_path();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        hidden.push(PathBuf::from(format!("{}{suffix}", db.display())));
    }
    hidden.extend(other_accounts.iter().filter(|d| !writable.contains(d)).cloned());
    // The user's session bus and keyring live in the runtime folder.
    hidden.extend(env.get("XDG_RUNTIME_DIR").map(PathBuf::from));
    hidden.extend(routine.sandbox.hide.iter().cloned());

    let mut hosts: Vec<String> = needs.api_hosts.iter().map(|h| h.to_string()).collect();
    hosts.extend(crate::sandbox::hosts_in_env(env));
    hosts.extend(crate::sandbox::hosts_in_config(needs, env, home.as_deref()));
    hosts.extend(guard.iter().flat_map(|g| g.allow_hosts.iter().cloned()));
    hosts.sort();
    hosts.dedup();
    let forwards = crate::sandbox::loopback_ports(&hosts);

    let background = needs.background_hosts.iter().map(|h| h.to_string()).collect();
    let mut visible = visible_under_tmp(spec, env);
    visible.extend(read_only);
    Plan { visible, writable, hidden, hosts, background, forwards, cwd }
}

/// What must stay visible under the sandbox's own `/tmp`: the program (an npm CLI: its whole
/// package folder), every `PATH` folder and every path the run's environment names.
fn visible_under_tmp(spec: &SpawnSpec, env: &BTreeMap<String, String>) -> Vec<PathBuf> {
    let tmp = Path::new("/tmp");
    let mut paths: Vec<PathBuf> = Vec::new();
    if let Ok(real) = std::fs::canonicalize(&spec.program) {
        paths.push(install_root(&real));
    }
    paths.push(spec.program.parent().map(Path::to_path_buf).unwrap_or_default());
    paths.extend(env.get("PATH").into_iter().flat_map(|p| std::env::split_paths(p).collect::<Vec<_>>()));
    paths.extend(env.values().map(PathBuf::from).filter(|p| p.is_absolute()));
    let mut under: Vec<PathBuf> = paths.into_iter().filter(|p| p.starts_with(tmp) && p != tmp && p.exists()).collect();
    under.sort();
    under.dedup();
    under
}

/// Where an installed program's files are: the folder holding its outermost `node_modules` (a
/// node CLI needs its whole package tree), else its own folder.
fn install_root(real: &Path) -> PathBuf {
    match real.ancestors().filter(|a| a.file_name().is_some_and(|n| n == "node_modules")).last() {
        Some(modules) => modules.parent().unwrap_or(modules).to_path_buf(),
        None => real.parent().unwrap_or(real).to_path_buf(),
    }
}

/// A git worktree writes its commits into the repository it belongs to: its own folder there
/// (`.git/worktrees/<name>`) and the shared one (objects, refs).
fn git_dirs(cwd: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(cwd.join(".git")) else { return Vec::new() };
    let Some(gitdir) = text.trim().strip_prefix("gitdir:").map(|g| cwd.join(g.trim())) else { return Vec::new() };
    let common = std::fs::read_to_string(gitdir.join("commondir")).ok().map(|c| gitdir.join(c.trim()));
    std::iter::once(gitdir).chain(common).filter_map(|p| std::fs::canonicalize(p).ok()).collect()
}
