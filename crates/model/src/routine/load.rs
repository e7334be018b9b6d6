//! Load every routine file in a directory.

use super::{parse_routine, Diagnostic, InvalidRoutine, Routine};
use crate::home::Home;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The routines of a home: the valid ones and, separately, the files that failed with their errors.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RoutineSet {
    /// Sorted by name.
    pub routines: Vec<Routine>,
    pub invalid: Vec<InvalidRoutine>,
}

impl RoutineSet {
    /// The valid routine named `name` (the list is sorted by name).
    pub fn get(&self, name: &str) -> Option<&Routine> {
        self.routines.binary_search_by(|r| r.name.as_str().cmp(name)).ok().map(|i| &self.routines[i])
    }
    /// How a finished run of routine `run.routine` notifies, and the time limit it had: its
    /// routine's `notify:` and `timeout:`, or — the routine is gone — the default for its kind.
    pub fn notify_policy(&self, run: &crate::run::RunRecord) -> (super::NotifyPolicy, Option<std::time::Duration>) {
        match self.get(&run.routine) {
            Some(r) => (r.notify, Some(r.timeout)),
            None => (super::NotifyPolicy::default_for(run.agent), None),
        }
    }
    pub fn get_invalid(&self, name: &str) -> Option<&InvalidRoutine> {
        self.invalid.iter().find(|r| r.name == name)
    }
    /// The file giving routine `name`, valid or not (a broken file still claims its name).
    pub fn file_of(&self, name: &str) -> Option<&PathBuf> {
        self.get(name).map(|r| &r.file).or_else(|| self.get_invalid(name).map(|r| &r.file))
    }
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.routines.iter().map(|r| r.name.as_str()).chain(self.invalid.iter().map(|r| r.name.as_str()))
    }
    /// Every error, in file order.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.invalid.iter().flat_map(|r| r.errors.iter())
    }
    /// Every warning, valid files' and invalid files' alike.
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.routines.iter().flat_map(|r| r.warnings.iter()).chain(self.invalid.iter().flat_map(|r| r.warnings.iter()))
    }
}

/// Routine files in `dirs`, in name order: `*.yaml` and `*.yml`, skipping hidden files.
pub fn routine_files(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut here: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| is_routine_file(p))
            .collect();
        here.sort();
        files.extend(here);
    }
    files
}

/// Routine-named entries of any kind: a FIFO, socket, device or directory named `x.yaml` is
/// reported by name instead of being skipped silently (or, for a FIFO, hanging the reader).
fn is_routine_file(path: &Path) -> bool {
    is_routine_path(path)
}

/// Read a routine file (a routine is a few hundred bytes): a regular UTF-8 file of at most 1 MiB.
fn read_routine_file(file: &Path) -> Result<String, String> {
    crate::fsutil::read_text_file(file, crate::fsutil::MAX_TEXT_FILE)
}

/// A `*.yaml`/`*.yml` name that is not hidden (editors' temp files are).
pub fn is_routine_path(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    !name.starts_with('.') && (name.ends_with(".yaml") || name.ends_with(".yml"))
}

/// Load the given files. Names shared by several files make all of them invalid: running either
/// one would be a guess.
pub fn load_files(home: &Home, files: &[PathBuf]) -> RoutineSet {
    let mut set = RoutineSet::default();
    for file in files {
        let display = home.display_path(file);
        let parsed = match read_routine_file(file) {
            Ok(src) => parse_routine(&src, file, &display),
            Err(problem) => Err(InvalidRoutine {
                name: file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
                file: file.clone(),
                errors: vec![Diagnostic::error(display, 1, 1, problem)],
                warnings: Vec::new(),
            }),
        };
        match parsed {
            Ok(r) => set.routines.push(r),
            Err(bad) => set.invalid.push(bad),
        }
    }

    let mut by_name: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for r in &set.routines {
        by_name.entry(r.name.clone()).or_default().push(r.file.clone());
    }
    for bad in &set.invalid {
        by_name.entry(bad.name.clone()).or_default().push(bad.file.clone());
    }
    let dup_names: Vec<(String, Vec<PathBuf>)> = by_name.into_iter().filter(|(_, f)| f.len() > 1).collect();
    for (name, files) in dup_names {
        let listed: Vec<String> = files.iter().map(|f| home.display_path(f)).collect();
        let (moved, kept): (Vec<Routine>, Vec<Routine>) = std::mem::take(&mut set.routines).into_iter().partition(|r| r.name == name);
        set.routines = kept;
        for r in moved {
            set.invalid.push(InvalidRoutine { name: r.name.clone(), file: r.file.clone(), errors: Vec::new(), warnings: r.warnings });
        }
        for bad in set.invalid.iter_mut().filter(|b| b.name == name) {
            let others: Vec<&String> = listed.iter().filter(|f| **f != home.display_path(&bad.file)).collect();
            let message = format!(
                "duplicate routine name \"{name}\" (also in {}); give each routine its own `name:`",
                others.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            );
            bad.errors.insert(0, Diagnostic::error(home.display_path(&bad.file), 1, 1, message));
        }
    }
    set.invalid.sort_by(|a, b| a.file.cmp(&b.file));
    // Sorted by name (unique by now), so a lookup is a binary search.
    set.routines.sort_by(|a, b| a.name.cmp(&b.name));
    set
}

/// What `nightshift.toml` adds to the routines as parsed (the parser itself knows nothing of the
/// settings): `[defaults]` for keys a file does not set, and routines that name a webhook the
/// settings do not define become invalid, located at the name in the file (a typo would
/// otherwise drop every post silently).
pub fn with_settings(mut set: RoutineSet, settings: &crate::settings::Settings, home: &Home) -> RoutineSet {
    let device = settings.device_name();
    for d in set.invalid.iter_mut().flat_map(|r| r.errors.iter_mut()) {
        super::parse::name_this_machine(d, &device);
    }
    if let Some(timeout) = settings.defaults.timeout() {
        for r in set.routines.iter_mut().filter(|r| !r.timeout_given) {
            r.timeout = timeout;
        }
    }
    for r in set.routines.iter_mut() {
        // `[defaults] sandbox`: routines that do not say, here and on SSH hosts (a GitHub Actions
        // host's runs are not sandboxed by Nightshift).
        if let (None, Some(switch)) = (r.sandbox.asked, settings.defaults.sandbox) {
            if actions_host(r, settings).is_none() {
                r.sandbox.asked = Some(switch);
                r.sandbox.asked_by = Some("[defaults] sandbox in nightshift.toml");
            }
        }
        pin_version(r, settings, home);
        // `[agents.<agent>] model`: the model of its routines that name none.
        if let crate::routine::Action::Agent { agent, model: model @ None, .. } = &mut r.action {
            *model = settings.agents.get(agent).and_then(|a| a.model.clone()).filter(|m| !m.trim().is_empty());
        }
        pass_through(r, settings, home);
        // `[agents.<agent>] account`: the account of its routines that name none.
        if r.account == crate::routine::AccountChoice::Any {
            if let Some(email) = settings.agents.get(&r.agent()).and_then(|a| a.account.clone()) {
                r.account = crate::routine::AccountChoice::Pinned(email);
            }
        }
        // `hostStrategy: fleet`: the machines nightshift.toml lists.
        if let Some(p) = r.placement.as_mut().filter(|p| p.fleet) {
            p.hosts = settings.hosts.keys().cloned().collect();
        }
    }
    // A fleet with no machines listed yet (agents-cli keeps its fleet elsewhere): loaded, with a
    // warning that says what to add; a run started so is `blocked · no_hosts` in the same words.
    for r in set.routines.iter_mut().filter(|r| r.placement.as_ref().is_some_and(|p| p.fleet && p.hosts.is_empty())) {
        let text = crate::fsutil::read_text_file(&r.file, crate::fsutil::MAX_TEXT_FILE).unwrap_or_default();
        let (line, col) = text.lines().enumerate().find_map(|(i, l)| l.starts_with("hostStrategy:").then(|| (i + 1, l.find("fleet").map_or(1, |c| c + 1)))).unwrap_or((1, 1));
        r.warnings.push(Diagnostic::warning(home.display_path(&r.file), line, col, NO_FLEET));
    }
    let sandbox_on_actions = |r: &Routine| r.sandbox.asked == Some(crate::sandbox::Switch::On) && actions_host(r, settings).is_some();
    let (ok, bad): (Vec<Routine>, Vec<Routine>) =
        std::mem::take(&mut set.routines).into_iter().partition(|r| r.webhooks.iter().all(|w| settings.webhook(w).is_some()) && !sandbox_on_actions(r));
    set.routines = ok;
    for r in bad {
        let display = home.display_path(&r.file);
        let text = crate::fsutil::read_text_file(&r.file, crate::fsutil::MAX_TEXT_FILE).unwrap_or_default();
        let mut errors = unknown_webhooks(&r, &text, settings, &display);
        if let Some(host) = actions_host(&r, settings).filter(|_| sandbox_on_actions(&r)) {
            let (line, col) = text.lines().enumerate().find_map(|(i, l)| l.starts_with("sandbox:").then(|| (i + 1, l.find("on").map_or(1, |c| c + 1)))).unwrap_or((1, 1));
            errors.push(Diagnostic::error(
                &display,
                line,
                col,
                format!("`sandbox: on` cannot be kept on `{host}`, a GitHub Actions host: its runs are on GitHub's runners, which Nightshift does not sandbox (each is a fresh virtual machine); place it here or on an SSH host, or leave `sandbox:` out"),
            ));
        }
        set.invalid.push(InvalidRoutine { name: r.name.clone(), file: r.file.clone(), errors, warnings: r.warnings });
    }
    set.invalid.sort_by(|a, b| a.file.cmp(&b.file));
    set
}

/// The first of the routine's hosts that is a GitHub Actions host, if one is.
fn actions_host<'r>(r: &'r Routine, settings: &crate::settings::Settings) -> Option<&'r str> {
    r.placement.as_ref()?.hosts.iter().map(String::as_str).find(|h| settings.actions_host(h).is_some())
}

/// agents-cli's `[agents.<agent>] auto_compact_tokens` and `fast_mode_models`, passed to an agent
/// routine as its CLI's own setting (`config.<key>`; a key the routine sets itself wins), or — the
/// CLI has no such setting — a warning at its `agent:` naming what is ignored.
fn pass_through(r: &mut Routine, settings: &crate::settings::Settings, home: &Home) {
    let crate::routine::Action::Agent { agent, model, config, .. } = &mut r.action else { return };
    let Some(own) = settings.agents.get(agent) else { return };
    let driver = crate::agents::driver(*agent);
    let fast = model.as_deref().filter(|m| own.fast_mode_models.iter().any(|f| f == m));
    let mut ignored = Vec::new();
    let mut set = |key: Option<&'static str>, value: serde_json::Value, what: String| match key {
        Some(key) if !config.iter().any(|(k, _)| k == key) => config.push((key.to_string(), value)),
        Some(_) => {}
        None => ignored.push(what),
    };
    if let Some(tokens) = own.auto_compact_tokens {
        set(driver.auto_compact_setting(), serde_json::json!(tokens), format!("`[agents.{agent}] auto_compact_tokens`"));
    }
    if let Some(model) = fast {
        set(driver.fast_mode_setting(), serde_json::json!(true), format!("`[agents.{agent}] fast_mode_models` (for {model})"));
    }
    if ignored.is_empty() {
        return;
    }
    let text = crate::fsutil::read_text_file(&r.file, crate::fsutil::MAX_TEXT_FILE).unwrap_or_default();
    let line = text.lines().position(|l| l.starts_with("agent:")).map_or(1, |i| i + 1);
    let verb = if ignored.len() > 1 { "are" } else { "is" };
    let message = format!("{} {verb} ignored: the {agent} CLI has no such setting Nightshift can pass", ignored.join(" and "));
    r.warnings.push(Diagnostic::warning(home.display_path(&r.file), line, 1, message));
}

/// What a fleet routine whose settings list no machines is told, at load and at start.
pub const NO_FLEET: &str = "`hostStrategy: fleet` runs on one of the machines nightshift.toml lists as `[hosts.<name>]`, and it lists none; add them (e.g. `[hosts.buildbox]`), or place the routine with `host:`";

/// `version:` — the executable `[agents.<agent>.versions]` maps the pinned version to; without
/// a mapping (or with one to a file that is not there) the routine runs the agent it finds as
/// usual, and a warning at the key says so.
fn pin_version(r: &mut Routine, settings: &crate::settings::Settings, home: &Home) {
    let (Some(version), Some(agent)) = (r.version.clone(), r.agent().cli()) else { return };
    let text = crate::fsutil::read_text_file(&r.file, crate::fsutil::MAX_TEXT_FILE).unwrap_or_default();
    let (line, col) = text.lines().enumerate().find(|(_, l)| l.starts_with("version:")).map_or((1, 1), |(i, _)| (i + 1, 1));
    // What runs instead, and its version when the install says (npm CLIs do).
    let (usual, program) = match settings.agent_path(agent) {
        Some(path) => (format!("{} (`[agents.{agent}] path`)", path.display()), Some(path.to_path_buf())),
        None => (format!("the `{agent}` on PATH"), crate::fsutil::find_on_path(agent.as_str(), std::env::var("PATH").ok().as_deref())),
    };
    let usual = match program.as_deref().and_then(crate::fsutil::installed_version) {
        Some(v) => format!("{usual}, version {v},"),
        None => usual,
    };
    let problem = match settings.agent_version_path(agent, &version) {
        Some(path) if path.is_file() => {
            r.program = Some(path.to_path_buf());
            return;
        }
        Some(path) => format!("`version: {version}` maps to {}, which is not there: {usual} runs instead", path.display()),
        None => format!("`version: {version}` is not pinned: no `[agents.{agent}.versions]` entry maps it to a binary in nightshift.toml, so {usual} runs"),
    };
    r.warnings.push(Diagnostic { severity: super::Severity::Warning, ..Diagnostic::error(home.display_path(&r.file), line, col, problem) });
    r.warnings.sort_by_key(|d| (d.line, d.col));
}

/// The webhooks `r` names that `nightshift.toml` does not define, located in the file's `text`.
pub fn unknown_webhooks(r: &Routine, text: &str, settings: &crate::settings::Settings, display: &str) -> Vec<Diagnostic> {
    let known: Vec<&str> = settings.webhooks.iter().map(|h| h.name.as_str()).collect();
    r.webhooks
        .iter()
        .filter(|w| settings.webhook(w).is_none())
        .map(|w| {
            let (line, col) = locate_list_item(text, "webhooks", w);
            let hint = if known.is_empty() { "there are none; add a [[webhooks]] entry".to_string() } else { format!("defined: {}", known.join(", ")) };
            Diagnostic::error(display, line, col, format!("no webhook named \"{w}\" in nightshift.toml ({hint})"))
        })
        .collect()
}

/// Line and column (from 1) of `item` after the `key:` line of a YAML file (1:1 if not found).
fn locate_list_item(text: &str, key: &str, item: &str) -> (usize, usize) {
    let mut after_key = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with(&format!("{key}:")) {
            after_key = true;
        }
        if after_key {
            let from = if line.trim_start().starts_with(&format!("{key}:")) { line.find(':').map(|c| c + 1).unwrap_or(0) } else { 0 };
            if let Some(col) = line[from..].find(item) {
                return (i + 1, from + col + 1);
            }
        }
    }
    (1, 1)
}

/// The routines of a home as its settings say: its routines directory, plus agents-cli's
/// `~/.agents/routines/` when `import_agents_cli` is on. Every part of the engine loads through this.
pub fn load_home(home: &Home, settings: &crate::settings::Settings) -> RoutineSet {
    with_settings(load_files(home, &routine_files(&home_dirs(home, settings))), settings, home)
}

/// The directories routines are read from, as the settings say: the home's, agents-cli's
/// `~/.agents/routines/` with `import_agents_cli`, and each opted-in project's
/// `.agents/routines/` (`projects`).
pub fn home_dirs(home: &Home, settings: &crate::settings::Settings) -> Vec<PathBuf> {
    let mut dirs = vec![home.routines_dir()];
    if settings.import_agents_cli {
        if let Some(user_home) = std::env::var_os("HOME") {
            dirs.push(PathBuf::from(user_home).join(".agents").join("routines"));
        }
    }
    dirs.extend(settings.projects.iter().map(|p| project_routines_dir(p)));
    dirs
}

/// Where a project keeps its routines (agents-cli's project layer).
pub fn project_routines_dir(project: &Path) -> PathBuf {
    crate::fsutil::expand_tilde(&project.display().to_string()).join(".agents").join("routines")
}

/// Load the home's routines directory plus `extra_dirs`.
pub fn load_dir(home: &Home, extra_dirs: &[PathBuf]) -> RoutineSet {
    let mut dirs = vec![home.routines_dir()];
    dirs.extend(extra_dirs.iter().cloned());
    load_files(home, &routine_files(&dirs))
}
