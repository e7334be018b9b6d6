//! Tauri commands: the window's IPC transport. Each is one line over `nightshift_core::api`, where
//! every command is defined once (the same definitions answer `nightshiftctl serve`'s HTTP). The
//! app's own part — who schedules, opening a terminal or the browser — is [`AppFace`]. Errors reach
//! the UI as `{code, message}`. Only the commands listed in `build.rs` exist for the window
//! (capabilities/main.json).

use crate::AppState;
use nightshift_core::api::{self, AccountView, Created, EngineStateView, Face, Relogin, RoutineForm, RunDetail};
use nightshift_core::engine::{Removed, RoutineSource, Written};
use nightshift_core::routine::author::{Draft, DraftCheck};
use nightshift_core::routine::Diagnostic;
use nightshift_core::store::Page;
use nightshift_core::view::log::{LogChunk, LogStream};
use nightshift_core::view::routines::RoutineOverview;
use nightshift_core::{Error, ErrorCode};
use tauri::{AppHandle, Manager, Runtime, State};

/// The app as the window's host.
pub struct AppFace<R: Runtime>(pub AppHandle<R>);

impl<R: Runtime> Face for AppFace<R> {
    fn scheduled_elsewhere(&self) -> Option<String> {
        self.0.state::<AppState>().scheduled_elsewhere.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    fn scheduling(&self) -> bool {
        self.0.state::<AppState>().scheduling.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn open_terminal(&self, account: &nightshift_core::accounts::Account) -> Result<String, String> {
        crate::relogin::open_terminal(account)
    }
    fn open_link(&self, url: &str) -> Result<(), Error> {
        use tauri_plugin_opener::OpenerExt;
        self.0.opener().open_url(url, None::<&str>).map_err(|e| Error::new(ErrorCode::Io, format!("could not open the link in a browser: {e}")))
    }
    fn open_file(&self, path: &std::path::Path) -> Result<(), Error> {
        use tauri_plugin_opener::OpenerExt;
        self.0
            .opener()
            .open_path(path.display().to_string(), None::<&str>)
            .map_err(|e| Error::new(ErrorCode::Io, format!("could not open {}: {e}; open it by hand", path.display())))
    }
}

#[tauri::command]
pub async fn engine_state<R: Runtime>(app: AppHandle<R>, state: State<'_, AppState>) -> Result<EngineStateView, Error> {
    api::engine_state(&state.engine, &AppFace(app)).await
}

#[tauri::command]
pub async fn list_routines(state: State<'_, AppState>) -> Result<Vec<RoutineOverview>, Error> {
    api::list_routines(&state.engine).await
}

#[tauri::command]
pub async fn run_now(state: State<'_, AppState>, name: String) -> Result<String, Error> {
    api::run_now(&state.engine, &name).await
}

#[tauri::command]
pub fn set_routine_paused(state: State<'_, AppState>, name: String, paused: bool) -> Result<(), Error> {
    api::set_routine_paused(&state.engine, &name, paused)
}

#[tauri::command]
pub fn set_paused(state: State<'_, AppState>, paused: bool) -> Result<(), Error> {
    api::set_paused(&state.engine, paused)
}

#[tauri::command]
pub async fn list_runs(state: State<'_, AppState>, routine: Option<String>, status: Option<String>, cursor: Option<String>, limit: Option<usize>) -> Result<Page, Error> {
    api::list_runs(&state.engine, routine, status, cursor, limit).await
}

#[tauri::command]
pub async fn get_run(state: State<'_, AppState>, id: String) -> Result<RunDetail, Error> {
    api::get_run(&state.engine, &id).await
}

#[tauri::command]
pub async fn read_log(state: State<'_, AppState>, id: String, stream: LogStream, offset: u64, readable: bool) -> Result<LogChunk, Error> {
    api::read_log(&state.engine, &id, stream, offset, readable).await
}

#[tauri::command]
pub async fn cancel_run(state: State<'_, AppState>, id: String) -> Result<bool, Error> {
    api::cancel_run(&state.engine, &id).await
}

#[tauri::command]
pub async fn list_accounts(state: State<'_, AppState>) -> Result<Vec<AccountView>, Error> {
    api::list_accounts(&state.engine).await
}

#[tauri::command]
pub async fn check_account(state: State<'_, AppState>, email: String) -> Result<AccountView, Error> {
    api::check_account(&state.engine, &email).await
}

#[tauri::command]
pub async fn set_token(state: State<'_, AppState>, email: String, token: String) -> Result<(), Error> {
    api::set_token(&state.engine, &email, &token).await
}

#[tauri::command]
pub fn relogin<R: Runtime>(app: AppHandle<R>, state: State<'_, AppState>, email: String) -> Result<Relogin, Error> {
    api::relogin(&state.engine, &AppFace(app), &email)
}

/// The window itself never navigates (see `guard_navigation`); links open in the browser.
#[tauri::command]
pub fn open_link<R: Runtime>(app: AppHandle<R>, url: String) -> Result<(), Error> {
    api::open_link(&AppFace(app), &url)
}

#[tauri::command]
pub fn routine_form(state: State<'_, AppState>) -> RoutineForm {
    api::routine_form(&state.engine)
}

#[tauri::command]
pub async fn check_routine_draft(state: State<'_, AppState>, draft: Draft) -> Result<DraftCheck, Error> {
    api::check_routine_draft(&state.engine, draft).await
}

#[tauri::command]
pub async fn create_routine(state: State<'_, AppState>, draft: Draft, run_now: Option<bool>) -> Result<Created, Error> {
    api::create_routine(&state.engine, draft, run_now.unwrap_or(false)).await
}

#[tauri::command]
pub async fn routine_source(state: State<'_, AppState>, name: String) -> Result<RoutineSource, Error> {
    api::routine_source(&state.engine, name).await
}

#[tauri::command]
pub async fn check_routine_text(state: State<'_, AppState>, name: String, text: String) -> Result<Vec<Diagnostic>, Error> {
    api::check_routine_text(&state.engine, name, text).await
}

#[tauri::command]
pub async fn save_routine_text(state: State<'_, AppState>, name: String, text: String, version: String, overwrite: Option<bool>) -> Result<RoutineSource, Error> {
    api::save_routine_text(&state.engine, name, text, version, overwrite.unwrap_or(false)).await
}

#[tauri::command]
pub async fn duplicate_routine(state: State<'_, AppState>, name: String, new_name: String) -> Result<Written, Error> {
    api::duplicate_routine(&state.engine, name, new_name).await
}

#[tauri::command]
pub async fn rename_routine(state: State<'_, AppState>, name: String, new_name: String) -> Result<Written, Error> {
    api::rename_routine(&state.engine, name, new_name).await
}

#[tauri::command]
pub async fn remove_routine(state: State<'_, AppState>, name: String) -> Result<Removed, Error> {
    api::remove_routine(&state.engine, name).await
}

#[tauri::command]
pub async fn removed_routines(state: State<'_, AppState>) -> Result<Vec<Removed>, Error> {
    api::removed_routines(&state.engine).await
}

#[tauri::command]
pub async fn restore_routine(state: State<'_, AppState>, id: String) -> Result<Written, Error> {
    api::restore_routine(&state.engine, id).await
}

#[tauri::command]
pub fn open_routine_file<R: Runtime>(app: AppHandle<R>, state: State<'_, AppState>, name: String) -> Result<(), Error> {
    api::open_routine_file(&state.engine, &AppFace(app), &name)
}

#[tauri::command]
pub async fn push_branch(state: State<'_, AppState>, id: String) -> Result<nightshift_core::RunRecord, Error> {
    api::push_branch(&state.engine, &id).await
}

#[tauri::command]
pub fn open_workspace<R: Runtime>(app: AppHandle<R>, state: State<'_, AppState>, id: String) -> Result<(), Error> {
    api::open_workspace(&state.engine, &AppFace(app), &id)
}

#[tauri::command]
pub async fn list_folders(path: Option<String>) -> Result<api::Folders, Error> {
    api::list_folders(path).await
}

#[tauri::command]
pub async fn routine_why(state: State<'_, AppState>, name: String, days: Option<u32>) -> Result<nightshift_core::view::why::Why, Error> {
    api::routine_why(&state.engine, &name, days.unwrap_or(7)).await
}

#[tauri::command]
pub async fn routine_strips(state: State<'_, AppState>) -> Result<std::collections::BTreeMap<String, Vec<nightshift_core::view::why::Mark>>, Error> {
    api::routine_strips(&state.engine).await
}

#[tauri::command]
pub async fn usage_report(state: State<'_, AppState>, days: Option<u32>, by: Option<String>) -> Result<nightshift_core::view::usage::UsageReport, Error> {
    api::usage_report(&state.engine, days.unwrap_or(30), by).await
}

#[tauri::command]
pub async fn disk_usage(state: State<'_, AppState>) -> Result<Vec<nightshift_core::view::usage::DiskUse>, Error> {
    api::disk_usage(&state.engine).await
}
