//! Tauri commands: the thin layer between the window and the engine. Errors reach the UI as
//! `{code, message}` (the engine's error type); payloads never carry tokens.

use crate::AppState;
use nightshift_core::{Error, RunRecord};
use serde::Serialize;
use tauri::State;

/// A run for the window: the record plus its report as plain text. The UI inserts text only
/// (textContent), never HTML, so an agent's output cannot run anything.
#[derive(Serialize)]
pub struct RunView {
    pub run: RunRecord,
    pub report: Option<String>,
}

#[tauri::command]
pub fn get_run(state: State<'_, AppState>, id: String) -> Result<RunView, Error> {
    let run = state.engine.store().get_run(&id)?;
    let report = run.report_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).map(|r| state.engine.redact(&r));
    Ok(RunView { run, report })
}

/// Store a pasted setup token in the OS keychain (the field is cleared by the UI right after).
#[tauri::command]
pub async fn set_token(state: State<'_, AppState>, email: String, token: String) -> Result<(), Error> {
    state.engine.set_token(&email, &token).await
}
