//! Moving a routine to the home that should own it (`routines move NAME --to HOME`, the window's
//! routine menu): the always-on box takes a routine the laptop's sleep kept missing.
//!
//! The order makes a half-way failure safe: the file is checked and written **there** first (that
//! home's engine refuses a name it has or a text with problems, located); only once it answered
//! that the file is written is the routine **disabled here** — its file into `routines/.trash/`
//! with a first line saying where it went. A failure before that leaves it enabled here only; a
//! failure to disable it here takes the copy there back out. Either way the error says where the
//! routine is enabled. Its history stays where it was made (each home shows its own runs).

use super::HomeClient;
use crate::engine::{Removed, Written};
use crate::error::{Error, Result};
use crate::Engine;
use serde::{Deserialize, Serialize};

/// A routine moved: where its file is now, and where its old file went here.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Moved {
    pub routine: String,
    /// The home it runs on now.
    pub to: String,
    /// Its file there (as that home shows it).
    pub file_there: String,
    /// Its old file in this home's trash (what `routines restore` takes).
    pub trash_id: String,
}

pub async fn move_routine(engine: &Engine, to: &HomeClient, name: &str) -> Result<Moved> {
    let source = {
        let (e, name) = (engine.clone(), name.to_string());
        tokio::task::spawn_blocking(move || e.routine_source(&name)).await.map_err(|e| Error::new(crate::error::ErrorCode::Io, e.to_string()))??
    };
    if !source.in_home {
        return Err(Error::new(crate::error::ErrorCode::Usage, format!("{} is imported from another folder; copy it there by hand", source.file)));
    }
    let stays = |e: Error, what: &str| Error::new(e.code, format!("{name} was not moved: {what} — it stays enabled here, on this machine only.\n{}", e.message));
    // A run going here would be orphaned by disabling it: refuse before anything is written.
    let going = {
        let (e, name) = (engine.clone(), name.to_string());
        tokio::task::spawn_blocking(move || e.core.store.open_run_of(&name)).await.map_err(|e| Error::new(crate::error::ErrorCode::Io, e.to_string()))??
    };
    if going.is_some() {
        return Err(Error::new(crate::error::ErrorCode::Conflict, format!("{name} was not moved: one of its runs is queued or running here; move it once that has ended (or cancel it)")));
    }
    let written: Written = to.call("create_routine_text", serde_json::json!({ "name": name, "text": source.text })).await.map_err(|e| stays(e, &format!("\"{}\" did not take it", to.name)))?;
    let retired = {
        let (e, name, home) = (engine.clone(), name.to_string(), to.name.clone());
        tokio::task::spawn_blocking(move || e.retire_moved_routine(&name, &home)).await.map_err(|e| Error::new(crate::error::ErrorCode::Io, e.to_string()))?
    };
    match retired {
        Ok(removed) => {
            tracing::info!(routine = %name, to = %to.name, "routine moved to another home");
            Ok(Moved { routine: name.to_string(), to: to.name.clone(), file_there: written.file, trash_id: removed.id })
        }
        Err(e) => match to.call::<Removed>("remove_routine", serde_json::json!({ "name": name })).await {
            Ok(_) => Err(stays(e, &format!("it could not be disabled here, so its copy on \"{}\" was taken out again", to.name))),
            Err(undo) => Err(Error::new(
                e.code,
                format!(
                    "{name} is now enabled on BOTH this machine and \"{to}\": it could not be disabled here ({}) nor taken out there ({}). Remove one: `nightshiftctl routines remove {name}` here, or `nightshiftctl routines remove {name} --home {to}`",
                    e.message,
                    undo.message,
                    to = to.name
                ),
            )),
        },
    }
}
