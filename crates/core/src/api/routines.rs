//! Routine commands: list, run now, pause, the New routine form, the editor's file text, duplicate,
//! rename, remove and restore, the folder picker.

use super::{blocking, Face};
use crate::error::{Error, ErrorCode, Result};
use crate::Engine;
use serde::Serialize;
use crate::engine::{Removed, RoutineSource, Written};
use crate::routine::author::{Draft, DraftCheck};
use crate::routine::Diagnostic;
use crate::run::Trigger;
use crate::view::routines::{overview, RoutineOverview};

pub async fn list_routines(engine: &Engine) -> Result<Vec<RoutineOverview>> {
    blocking(engine, |e| overview(&e, chrono::Utc::now())).await
}

/// Start a routine now. Returns the run's id at once (it starts, or is visibly queued). A
/// routine whose `devices:` does not list this machine is refused (`other_device`) unless
/// `here` — the window's "Run here anyway", recorded on the run.
pub async fn run_now(engine: &Engine, name: &str, here: bool) -> Result<String> {
    let asks = crate::run::RunAsks { here, ..crate::run::RunAsks::default() };
    Ok(engine.run_now_with(name, Trigger::Manual, asks).await?.id)
}

/// Problems in `text` as a new routine file of this home (a file checked against it from
/// another machine: `routines validate FILE --home NAME`).
pub async fn check_new_routine_text(engine: &Engine, name: String, text: String) -> Result<Vec<Diagnostic>> {
    blocking(engine, move |e| e.check_new_routine_text(&name, &text)).await
}

/// Write a new routine file from its text (a routine moved here from another home).
pub async fn create_routine_text(engine: &Engine, name: String, text: String) -> Result<Written> {
    blocking(engine, move |e| e.create_routine_text(&name, &text)).await
}

/// Move a routine of this home to another (`[[homes]]`): written there first, disabled here only
/// once that home confirmed (see [`crate::homes::moving`]).
pub async fn move_routine(engine: &Engine, name: &str, to: &str) -> Result<crate::homes::moving::Moved> {
    let client = crate::homes::client(engine, to)?;
    crate::homes::moving::move_routine(engine, &client, name).await
}

pub fn set_routine_paused(engine: &Engine, name: &str, paused: bool) -> Result<()> {
    engine.routine(name)?;
    engine.set_routine_paused(name, paused)
}

pub fn set_paused(engine: &Engine, paused: bool) -> Result<()> {
    engine.set_paused(paused)
}

/// What the New routine form offers: each agent with the accounts that can run it, the zones, the
/// webhooks defined, where the file goes.
#[derive(Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct RoutineForm {
    pub agents: Vec<AgentChoice>,
    /// This machine's zone (the default).
    pub timezone: String,
    pub timezones: Vec<&'static str>,
    pub webhooks: Vec<String>,
    /// Machines a routine can be placed on: those in nightshift.toml (`[hosts.<name>]`), in
    /// routines, or checked — suggestions; any SSH host or alias is accepted.
    pub hosts: Vec<String>,
    pub routines_dir: String,
    /// The routine secrets there are, by name (`nightshiftctl secrets set`), for `secrets:`.
    pub secrets: Vec<String>,
}

#[derive(Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct AgentChoice {
    pub agent: crate::words::Agent,
    pub accounts: Vec<String>,
}

pub fn routine_form(engine: &Engine) -> RoutineForm {
    let accounts = engine.accounts();
    RoutineForm {
        agents: crate::words::Agent::CLIS
            .iter()
            .map(|a| AgentChoice { agent: *a, accounts: accounts.iter().filter(|x| x.agent == *a).map(|x| x.email.clone()).collect() })
            .collect(),
        timezone: crate::schedule::local_tz().name().to_string(),
        timezones: chrono_tz::TZ_VARIANTS.iter().map(|t| t.name()).collect(),
        webhooks: engine.settings().webhooks.iter().map(|w| w.name.clone()).collect(),
        hosts: {
            let mut hosts: std::collections::BTreeSet<String> = engine.settings().hosts.keys().cloned().collect();
            hosts.extend(engine.hosts().unwrap_or_default().into_iter().map(|h| h.host));
            hosts.into_iter().collect()
        },
        routines_dir: engine.home().routines_dir().display().to_string(),
        secrets: engine.secrets().unwrap_or_default().into_iter().map(|s| s.name).collect(),
    }
}

pub async fn check_routine_draft(engine: &Engine, draft: Draft) -> Result<DraftCheck> {
    blocking(engine, move |e| Ok(e.check_draft(&draft))).await
}

/// What creating a routine did: the file, and the run started when asked to try it at once.
#[derive(Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Created {
    #[serde(flatten)]
    pub written: Written,
    pub run_id: Option<String>,
}

/// Write a new routine file; with `run_now`, start it at once (a draft tried before it is enabled
/// is saved with `enabled: false` by the form and run by hand).
pub async fn create_routine(engine: &Engine, draft: Draft, run_now: bool) -> Result<Created> {
    let written = blocking(engine, move |e| e.create_routine(&draft)).await?;
    let run_id = if run_now { Some(self::run_now(engine, &written.name, false).await?) } else { None };
    Ok(Created { written, run_id })
}

pub async fn routine_source(engine: &Engine, name: String) -> Result<RoutineSource> {
    blocking(engine, move |e| e.routine_source(&name)).await
}

pub async fn check_routine_text(engine: &Engine, name: String, text: String) -> Result<Vec<Diagnostic>> {
    blocking(engine, move |e| e.check_routine_text(&name, &text)).await
}

pub async fn save_routine_text(engine: &Engine, name: String, text: String, version: String, overwrite: bool) -> Result<RoutineSource> {
    blocking(engine, move |e| e.save_routine_text(&name, &text, &version, overwrite)).await
}

pub async fn duplicate_routine(engine: &Engine, name: String, new_name: String) -> Result<Written> {
    blocking(engine, move |e| e.duplicate_routine(&name, &new_name)).await
}

pub async fn rename_routine(engine: &Engine, name: String, new_name: String) -> Result<Written> {
    blocking(engine, move |e| e.rename_routine(&name, &new_name)).await
}

pub async fn remove_routine(engine: &Engine, name: String) -> Result<Removed> {
    blocking(engine, move |e| e.remove_routine(&name)).await
}

pub async fn removed_routines(engine: &Engine) -> Result<Vec<Removed>> {
    blocking(engine, |e| e.removed_routines()).await
}

pub async fn restore_routine(engine: &Engine, id: String) -> Result<Written> {
    blocking(engine, move |e| e.restore_routine(&id)).await
}

/// A folder and the folders in it, for the form's folder picker (one that works the same in the
/// app and in a browser on `serve`, where the folders are the server's).
#[derive(Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Folders {
    pub path: String,
    pub parent: Option<String>,
    /// Sub-folders by name, hidden ones left out, at most [`MAX_FOLDERS`].
    pub folders: Vec<String>,
    /// How many more there were.
    pub more: usize,
}

pub const MAX_FOLDERS: usize = 500;

/// The folders in `path` (default: the user's home directory).
pub async fn list_folders(path: Option<String>) -> Result<Folders> {
    tokio::task::spawn_blocking(move || {
        let start = match path.filter(|p| !p.trim().is_empty()) {
            Some(p) => crate::fsutil::expand_tilde(p.trim()),
            None => std::env::var_os("HOME").map(std::path::PathBuf::from).unwrap_or_else(|| "/".into()),
        };
        let dir = std::fs::canonicalize(&start).map_err(|e| Error::io("open the folder", &start, &e))?;
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::io("list the folder", &dir, &e))?;
        let mut folders: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect();
        folders.sort_by_key(|n| n.to_lowercase());
        let more = folders.len().saturating_sub(MAX_FOLDERS);
        folders.truncate(MAX_FOLDERS);
        Ok(Folders { path: dir.display().to_string(), parent: dir.parent().map(|p| p.display().to_string()), folders, more })
    })
    .await
    .map_err(|e| Error::new(ErrorCode::Io, format!("the folder listing failed: {e}")))?
}

/// "Open in editor": the routine's file in the system's default app for it.
pub fn open_routine_file(engine: &Engine, face: &dyn Face, name: &str) -> Result<()> {
    let source = engine.routine_source(name)?;
    face.open_file(std::path::Path::new(&source.path))
}
