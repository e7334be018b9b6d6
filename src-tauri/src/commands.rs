//! Tauri commands: the thin layer between the window and the engine (`commands → core view/engine
//! → store`). Each command is a few lines over `nightshift-core`; errors reach the UI as
//! `{code, message}` (the engine's error type). Payloads carry account ids and verdicts, never
//! tokens; agent-derived text is masked by the engine's redactor and reports arrive as sanitized
//! HTML. Only the commands listed in `build.rs` exist for the window (capabilities/main.json).

use crate::AppState;
use nightshift_core::health::AccountHealth;
use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::store::{HealthRecord, Page, RunQuery};
use nightshift_core::view::explain::{explain, Explanation};
use nightshift_core::view::log::{run_log, LogChunk, LogStream};
use nightshift_core::view::routines::{overview, RoutineOverview};
use nightshift_core::{Engine, Error, ErrorCode, RunRecord};
use serde::Serialize;
use tauri::{AppHandle, Runtime, State};

/// Page sizes the window may ask for: enough to fill a tall window, never the whole history.
const MAX_PAGE: usize = 200;

/// Run blocking engine work (SQLite, the keychain) off the async workers.
async fn blocking<T: Send + 'static>(state: &State<'_, AppState>, f: impl FnOnce(Engine) -> Result<T, Error> + Send + 'static) -> Result<T, Error> {
    let engine = state.engine.clone();
    tauri::async_runtime::spawn_blocking(move || f(engine)).await.map_err(|e| Error::new(ErrorCode::Io, format!("the engine task failed: {e}")))?
}

/// What the header shows.
#[derive(Serialize)]
pub struct EngineStateView {
    /// Another process (a `nightshiftctl daemon`) schedules this home; this app views and controls.
    pub scheduled_elsewhere: Option<String>,
    /// This app's scheduler is running (else: starting, refused — see `problems` — or elsewhere).
    pub scheduling: bool,
    pub paused: bool,
    pub running: usize,
    pub queued: usize,
    pub device: String,
    pub home: String,
    pub routines_dir: String,
    /// What the user must hear about the home (disk full, damaged database, unrecorded runs).
    pub problems: Vec<String>,
}

#[tauri::command]
pub async fn engine_state(state: State<'_, AppState>) -> Result<EngineStateView, Error> {
    let elsewhere = state.scheduled_elsewhere.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let scheduling = state.scheduling.load(std::sync::atomic::Ordering::SeqCst);
    let queued = state.engine.queued().await;
    blocking(&state, move |e| {
        // A damaged or unwritable database must not blank the header: what cannot be read is
        // itself a problem to show.
        let mut problems = e.problems();
        let mut unreadable = |err: Error| {
            if !problems.contains(&err.message) {
                problems.push(err.message);
            }
        };
        let paused = e.store().global_paused().map_err(&mut unreadable).unwrap_or(false);
        let running = e.store().running_count().map_err(&mut unreadable).unwrap_or(0);
        Ok(EngineStateView {
            scheduled_elsewhere: elsewhere,
            scheduling,
            paused,
            running,
            queued,
            device: e.device_name(),
            home: e.home().config_dir().display().to_string(),
            routines_dir: e.home().routines_dir().display().to_string(),
            problems,
        })
    })
    .await
}

#[tauri::command]
pub async fn list_routines(state: State<'_, AppState>) -> Result<Vec<RoutineOverview>, Error> {
    blocking(&state, |e| overview(&e, chrono::Utc::now())).await
}

/// Start a routine now. Returns the run's id at once (it starts, or is visibly queued).
#[tauri::command]
pub async fn run_now(state: State<'_, AppState>, name: String) -> Result<String, Error> {
    Ok(state.engine.run_now(&name, Trigger::Manual).await?.id)
}

#[tauri::command]
pub fn set_routine_paused(state: State<'_, AppState>, name: String, paused: bool) -> Result<(), Error> {
    state.engine.routine(&name)?;
    state.engine.set_routine_paused(&name, paused)
}

#[tauri::command]
pub fn set_paused(state: State<'_, AppState>, paused: bool) -> Result<(), Error> {
    state.engine.set_paused(paused)
}

/// One page of history, newest first. `cursor` comes from the previous page's `next_cursor`.
#[tauri::command]
pub async fn list_runs(state: State<'_, AppState>, routine: Option<String>, status: Option<String>, cursor: Option<String>, limit: Option<usize>) -> Result<Page, Error> {
    let status = match status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(RunStatus::parse(s).ok_or_else(|| Error::new(ErrorCode::Usage, format!("unknown status {s:?}")))?),
    };
    let query = RunQuery { routine: routine.filter(|r| !r.is_empty()), status, cursor, limit: limit.unwrap_or(50).clamp(1, MAX_PAGE) };
    blocking(&state, move |e| {
        let mut page = e.store().list_runs(&query)?;
        for run in &mut page.runs {
            run.message = run.message.as_deref().map(|m| e.redact(m));
        }
        Ok(page)
    })
    .await
}

/// A run for the detail view: the record, what it means, and its report as sanitized HTML.
#[derive(Serialize)]
pub struct RunDetail {
    pub run: RunRecord,
    pub explanation: Explanation,
    pub report_html: Option<String>,
    /// The routine still exists (Run again is possible).
    pub routine_exists: bool,
    /// Its webhook deliveries (what each receiver got, tries, last error).
    pub deliveries: Vec<nightshift_core::store::DeliveryRow>,
}

#[tauri::command]
pub async fn get_run(state: State<'_, AppState>, id: String) -> Result<RunDetail, Error> {
    blocking(&state, move |e| {
        let mut run = e.store().get_run(&id)?;
        run.message = run.message.as_deref().map(|m| e.redact(m));
        let report_html = run.report_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).map(|md| nightshift_core::view::markdown::render(&e.redact(&md)));
        let deliveries = e.deliveries_of(&run.id)?.into_iter().filter(|d| d.channel.starts_with(nightshift_core::webhook::CHANNEL_PREFIX)).collect();
        Ok(RunDetail { explanation: explain(&run), routine_exists: e.routine(&run.routine).is_ok(), run, report_html, deliveries })
    })
    .await
}

/// A chunk of a run's log from `offset`: readable entries, or raw text.
#[tauri::command]
pub async fn read_log(state: State<'_, AppState>, id: String, stream: LogStream, offset: u64, readable: bool) -> Result<LogChunk, Error> {
    blocking(&state, move |e| run_log(&e, &id, stream, offset, readable)).await
}

/// Cancel a queued or running run. `false` when it had already ended.
#[tauri::command]
pub async fn cancel_run(state: State<'_, AppState>, id: String) -> Result<bool, Error> {
    state.engine.store().get_run(&id)?;
    Ok(state.engine.cancel(&id).await)
}

/// An account for the Accounts view: its health and the verdicts behind it.
#[derive(Serialize)]
pub struct AccountView {
    pub health: AccountHealth,
    pub history: Vec<HealthRecord>,
}

fn account_view(e: &Engine, health: AccountHealth) -> Result<AccountView, Error> {
    let history = e.account_history(&health.account, 5)?;
    Ok(AccountView { health, history })
}

/// Every account with its health (reads the keychain: bounded, off the async workers).
#[tauri::command]
pub async fn list_accounts(state: State<'_, AppState>) -> Result<Vec<AccountView>, Error> {
    blocking(&state, |e| e.accounts_health().into_iter().map(|h| account_view(&e, h)).collect()).await
}

/// Check one account again now.
#[tauri::command]
pub async fn check_account(state: State<'_, AppState>, email: String) -> Result<AccountView, Error> {
    blocking(&state, move |e| {
        let h = e.account_health(&email)?;
        account_view(&e, h)
    })
    .await
}

/// Store a pasted setup token in the OS keychain (the field is cleared by the UI right after).
#[tauri::command]
pub async fn set_token(state: State<'_, AppState>, email: String, token: String) -> Result<(), Error> {
    state.engine.set_token(&email, &token).await
}

#[derive(Serialize)]
pub struct Relogin {
    /// A terminal was opened running the login.
    pub opened: Option<String>,
    /// The exact command, to show and copy.
    pub command: String,
    /// What can be pasted instead ("setup token", "OpenAI API key", …) and where to get one.
    pub secret: &'static str,
    pub secret_how: &'static str,
}

/// Re-login, the same flow as the tray: a terminal with the agent's own login for the account's config
/// dir, or (no terminal here) the command to copy.
#[tauri::command]
pub fn relogin(state: State<'_, AppState>, email: String) -> Result<Relogin, Error> {
    let account = state.engine.account(&email)?;
    let (secret, secret_how) = (account.auth().secret_name, account.auth().secret_how);
    Ok(match crate::relogin::open_terminal(&account) {
        Ok(terminal) => Relogin { opened: Some(terminal), command: account.login_command_line(), secret, secret_how },
        Err(command) => Relogin { opened: None, command, secret, secret_how },
    })
}

/// Open a link from a report in the system browser. Only web and mail links; the app window itself
/// never navigates (see `guard_navigation`).
#[tauri::command]
pub fn open_link<R: Runtime>(app: AppHandle<R>, url: String) -> Result<(), Error> {
    if !safe_link(&url) {
        return Err(Error::new(ErrorCode::Usage, "only http, https and mailto links are opened"));
    }
    use tauri_plugin_opener::OpenerExt;
    app.opener().open_url(&url, None::<&str>).map_err(|e| Error::new(ErrorCode::Io, format!("could not open the link in a browser: {e}")))
}

pub fn safe_link(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    ["https://", "http://", "mailto:"].iter().any(|p| lower.starts_with(p)) && !url.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_web_and_mail_links_open() {
        for ok in ["https://example.com/a?b", "http://localhost:3000", "mailto:a@b.c", "HTTPS://X"] {
            assert!(super::safe_link(ok), "{ok}");
        }
        for bad in ["javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", "tauri://localhost", "https://x\n", "/relative", "vbscript:x"] {
            assert!(!super::safe_link(bad), "{bad}");
        }
    }
}
