//! The window's commands, defined once for both of its transports: Tauri IPC in the app
//! (`src-tauri/src/commands.rs`, one-line wrappers) and HTTP JSON in `nightshiftctl serve`
//! (`POST /api/<command>` → [`call`]). What differs between the two hosts — who schedules, opening
//! a terminal or a browser — comes through [`Face`].
//!
//! Payloads carry account ids and verdicts, never tokens; agent-derived text is masked by the
//! engine's redactor and reports arrive as sanitized HTML.

use crate::error::{Error, ErrorCode, Result};
use crate::health::AccountHealth;
use crate::run::{RunRecord, RunStatus, Trigger};
use crate::store::{DeliveryRow, HealthRecord, Page, RunQuery, UsageRow};
use crate::view::explain::{explain, Explanation};
use crate::view::log::{run_log, LogChunk, LogStream};
use crate::view::routines::{overview, RoutineOverview};
use crate::engine::{Removed, RoutineSource, Written};
use crate::routine::author::{Draft, DraftCheck};
use crate::routine::Diagnostic;
use crate::Engine;
use serde::{Deserialize, Serialize};

/// Page sizes the window may ask for: enough to fill a tall window, never the whole history.
const MAX_PAGE: usize = 200;

/// What the host of the window does itself.
pub trait Face: Send + Sync {
    /// Another process schedules this home (the app when a daemon runs), by name.
    fn scheduled_elsewhere(&self) -> Option<String>;
    /// This host's scheduler is running.
    fn scheduling(&self) -> bool;
    /// Open a terminal running the account's login; `Err(command)` when none can be opened here.
    fn open_terminal(&self, account: &crate::accounts::Account) -> std::result::Result<String, String>;
    /// Open an http(s)/mailto link outside the window.
    fn open_link(&self, url: &str) -> Result<()>;
    /// Open a file in the system's default app for it (a routine file in the user's editor).
    fn open_file(&self, path: &std::path::Path) -> Result<()>;
}

/// Run blocking engine work (SQLite, the keychain) off the async workers.
async fn blocking<T: Send + 'static>(engine: &Engine, f: impl FnOnce(Engine) -> Result<T> + Send + 'static) -> Result<T> {
    let engine = engine.clone();
    tokio::task::spawn_blocking(move || f(engine)).await.map_err(|e| Error::new(ErrorCode::Io, format!("the engine task failed: {e}")))?
}

/// What the header shows.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct EngineStateView {
    /// Another process (a `nightshiftctl daemon`) schedules this home; this window views and controls.
    pub scheduled_elsewhere: Option<String>,
    /// This host's scheduler is running (else: starting, refused — see `problems` — or elsewhere).
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

pub async fn engine_state(engine: &Engine, face: &dyn Face) -> Result<EngineStateView> {
    let (elsewhere, scheduling) = (face.scheduled_elsewhere(), face.scheduling());
    blocking(engine, move |e| Ok(state_view(&e, elsewhere, scheduling))).await
}

fn state_view(e: &Engine, scheduled_elsewhere: Option<String>, scheduling: bool) -> EngineStateView {
    // A damaged or unwritable database must not blank the header: what cannot be read is
    // itself a problem to show.
    let mut problems = e.problems();
    let mut unreadable = |err: Error| {
        if !problems.contains(&err.message) {
            problems.push(err.message);
        }
    };
    let activity = e.activity().map_err(&mut unreadable).unwrap_or_default();
    EngineStateView {
        scheduled_elsewhere,
        scheduling,
        paused: activity.paused,
        running: activity.running,
        queued: activity.queued,
        device: e.device_name(),
        home: e.home().config_dir().display().to_string(),
        routines_dir: e.home().routines_dir().display().to_string(),
        problems,
    }
}

/// Everything a status icon shows at a glance — the engine's state, every routine, every
/// account's health — in one read (the tray asks after every engine event).
#[derive(Serialize)]
pub struct Glance {
    pub state: EngineStateView,
    /// As `list_routines` gives them; a routines folder that cannot be read gives none (and is
    /// one of `state.problems`).
    pub routines: Vec<RoutineOverview>,
    pub accounts: Vec<AccountHealth>,
}

pub async fn glance(engine: &Engine, face: &dyn Face) -> Result<Glance> {
    let (elsewhere, scheduling) = (face.scheduled_elsewhere(), face.scheduling());
    blocking(engine, move |e| {
        let mut state = state_view(&e, elsewhere, scheduling);
        let routines = overview(&e, chrono::Utc::now()).unwrap_or_else(|err| {
            state.problems.push(err.message);
            Vec::new()
        });
        Ok(Glance { state, routines, accounts: e.accounts_health() })
    })
    .await
}

pub async fn list_routines(engine: &Engine) -> Result<Vec<RoutineOverview>> {
    blocking(engine, |e| overview(&e, chrono::Utc::now())).await
}

/// Start a routine now. Returns the run's id at once (it starts, or is visibly queued).
pub async fn run_now(engine: &Engine, name: &str) -> Result<String> {
    Ok(engine.run_now(name, Trigger::Manual).await?.id)
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
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RoutineForm {
    pub agents: Vec<AgentChoice>,
    /// This machine's zone (the default).
    pub timezone: String,
    pub timezones: Vec<&'static str>,
    pub webhooks: Vec<String>,
    pub routines_dir: String,
}

#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AgentChoice {
    pub agent: &'static str,
    pub accounts: Vec<String>,
}

pub fn routine_form(engine: &Engine) -> RoutineForm {
    let accounts = engine.accounts();
    RoutineForm {
        agents: crate::routine::AgentKind::ALL
            .iter()
            .map(|a| AgentChoice { agent: a.as_str(), accounts: accounts.iter().filter(|x| x.agent == *a).map(|x| x.email.clone()).collect() })
            .collect(),
        timezone: crate::schedule::local_tz().name().to_string(),
        timezones: chrono_tz::TZ_VARIANTS.iter().map(|t| t.name()).collect(),
        webhooks: engine.settings().webhooks.iter().map(|w| w.name.clone()).collect(),
        routines_dir: engine.home().routines_dir().display().to_string(),
    }
}

pub async fn check_routine_draft(engine: &Engine, draft: Draft) -> Result<DraftCheck> {
    blocking(engine, move |e| Ok(e.check_draft(&draft))).await
}

/// What creating a routine did: the file, and the run started when asked to try it at once.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Created {
    #[serde(flatten)]
    pub written: Written,
    pub run_id: Option<String>,
}

/// Write a new routine file; with `run_now`, start it at once (a draft tried before it is enabled
/// is saved with `enabled: false` by the form and run by hand).
pub async fn create_routine(engine: &Engine, draft: Draft, run_now: bool) -> Result<Created> {
    let written = blocking(engine, move |e| e.create_routine(&draft)).await?;
    let run_id = if run_now { Some(self::run_now(engine, &written.name).await?) } else { None };
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
#[cfg_attr(test, derive(ts_rs::TS))]
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

/// "Push again": a worktree run's branch pushed now; the run as it is afterwards (its
/// `changes.push` says how it went).
pub async fn push_branch(engine: &Engine, id: &str) -> Result<crate::run::RunRecord> {
    engine.retry_push(id).await
}

/// "Open folder": a run's worktree — or its repository, once the worktree is cleaned up or for a
/// run in `cwd` — in the system's file manager.
pub fn open_workspace(engine: &Engine, face: &dyn Face, id: &str) -> Result<()> {
    let run = engine.run(id)?;
    let changes = run.changes.ok_or_else(|| Error::new(ErrorCode::Usage, format!("run {} did not work in a git repository", run.id)))?;
    face.open_file(std::path::Path::new(&changes.worktree.unwrap_or(changes.repo)))
}

/// One page of history, newest first. `cursor` comes from the previous page's `next_cursor`.
pub async fn list_runs(engine: &Engine, routine: Option<String>, status: Option<String>, cursor: Option<String>, limit: Option<usize>) -> Result<Page> {
    let status = match status.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(RunStatus::parse(s).ok_or_else(|| Error::new(ErrorCode::Usage, format!("unknown status {s:?}")))?),
    };
    let query = RunQuery { routine: routine.filter(|r| !r.is_empty()), status, cursor, limit: limit.unwrap_or(50).clamp(1, MAX_PAGE) };
    blocking(engine, move |e| {
        e.runs(&query)
    })
    .await
}

/// A run for the detail view: the record, what it means, and its report as sanitized HTML.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RunDetail {
    pub run: RunRecord,
    pub explanation: Explanation,
    pub report_html: Option<String>,
    /// The routine still exists (Run again is possible).
    pub routine_exists: bool,
    /// Its webhook deliveries (what each receiver got, tries, last error).
    pub deliveries: Vec<DeliveryRow>,
    /// What it changed in git, in one line ("3 files changed, +40 −12 on nightshift/…"), worded
    /// as the notification and the CLI say it.
    pub changes_summary: Option<String>,
    /// For a slot that did not run (missed, skipped, blocked): its fate with the evidence, as
    /// `nightshiftctl why` says it ("missed — machine asleep 01:10–07:55; …").
    pub slot_why: Option<String>,
}

pub async fn get_run(engine: &Engine, id: &str) -> Result<RunDetail> {
    let id = id.to_string();
    blocking(engine, move |e| {
        let run = e.run(&id)?;
        let report_html = run.report_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).map(|md| crate::view::markdown::render(&e.redact(&md)));
        let deliveries = e.deliveries_of(&run.id)?.into_iter().filter(|d| d.channel.starts_with(crate::webhook::CHANNEL_PREFIX)).collect();
        let changes_summary = run.changes.as_ref().map(crate::workspace::Changes::summary);
        let slot_why = match (run.status, run.scheduled_for) {
            (RunStatus::Missed | RunStatus::Skipped | RunStatus::Blocked, Some(slot)) => crate::view::why::slot_sentence(&e, &run.routine, slot).map(|s| e.redact(&s)),
            _ => None,
        };
        Ok(RunDetail { explanation: explain(&run), routine_exists: e.routine(&run.routine).is_ok(), run, report_html, deliveries, changes_summary, slot_why })
    })
    .await
}

/// A chunk of a run's log from `offset`: readable entries, or raw text.
pub async fn read_log(engine: &Engine, id: &str, stream: LogStream, offset: u64, readable: bool) -> Result<LogChunk> {
    let id = id.to_string();
    blocking(engine, move |e| run_log(&e, &id, stream, offset, readable)).await
}

/// Cancel a queued or running run. `false` when it had already ended.
pub async fn cancel_run(engine: &Engine, id: &str) -> Result<bool> {
    engine.run(id)?;
    Ok(engine.cancel(id).await)
}

/// An account for the Accounts view: its health and the verdicts behind it.
#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AccountView {
    pub health: AccountHealth,
    pub history: Vec<HealthRecord>,
    /// Runs and tokens in the last 5 hours and 7 days (`None`: no run in that window).
    pub last_5h: Option<UsageRow>,
    pub last_7d: Option<UsageRow>,
    /// When it hit a rate limit in the last 30 days (and when that limit reset), newest first.
    pub limits: Vec<HealthRecord>,
}

fn account_view(e: &Engine, health: AccountHealth, windows: &AccountWindows) -> Result<AccountView> {
    let history = e.account_history(&health.account, 5)?;
    let limits = e.rate_limits_since(&health.account, e.clock_now() - chrono::Duration::days(30))?;
    let (last_5h, last_7d) = (windows.0.get(&health.account).cloned(), windows.1.get(&health.account).cloned());
    Ok(AccountView { health, history, last_5h, last_7d, limits })
}

type AccountWindows = (std::collections::BTreeMap<String, UsageRow>, std::collections::BTreeMap<String, UsageRow>);

/// Every account with its health (reads the keychain: bounded, off the async workers).
pub async fn list_accounts(engine: &Engine) -> Result<Vec<AccountView>> {
    blocking(engine, |e| {
        let windows = crate::view::usage::account_windows(&e, e.clock_now())?;
        e.accounts_health().into_iter().map(|h| account_view(&e, h, &windows)).collect()
    })
    .await
}

/// Check one account again now.
pub async fn check_account(engine: &Engine, email: &str) -> Result<AccountView> {
    let email = email.to_string();
    blocking(engine, move |e| {
        let h = e.account_health(&email)?;
        let windows = crate::view::usage::account_windows(&e, e.clock_now())?;
        account_view(&e, h, &windows)
    })
    .await
}

/// Store a pasted setup token in the OS keychain (the field is cleared by the UI right after).
pub async fn set_token(engine: &Engine, email: &str, token: &str) -> Result<()> {
    engine.set_token(email, token).await
}

#[derive(Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Relogin {
    /// A terminal was opened running the login.
    pub opened: Option<String>,
    /// The exact command, to show and copy.
    pub command: String,
    /// What can be pasted instead ("setup token", "OpenAI API key", …) and where to get one.
    pub secret: &'static str,
    pub secret_how: &'static str,
}

/// Re-login: a terminal with the agent's own login for the account's config dir where the host
/// can open one, else the command to copy.
pub fn relogin(engine: &Engine, face: &dyn Face, email: &str) -> Result<Relogin> {
    let account = engine.account(email)?;
    let (secret, secret_how) = (account.auth().secret_name, account.auth().secret_how);
    Ok(match face.open_terminal(&account) {
        Ok(terminal) => Relogin { opened: Some(terminal), command: account.login_command_line(), secret, secret_how },
        Err(command) => Relogin { opened: None, command, secret, secret_how },
    })
}

/// Open a link from a report outside the window. Only web and mail links.
pub fn open_link(face: &dyn Face, url: &str) -> Result<()> {
    if !safe_link(url) {
        return Err(Error::new(ErrorCode::Usage, "only http, https and mailto links are opened"));
    }
    face.open_link(url)
}

pub fn safe_link(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    ["https://", "http://", "mailto:"].iter().any(|p| lower.starts_with(p)) && !url.chars().any(char::is_control)
}

/// Every slot of a routine in the last `days` days explained, newest first, and its next fire.
pub async fn routine_why(engine: &Engine, name: &str, days: u32) -> Result<crate::view::why::Why> {
    let name = name.to_string();
    blocking(engine, move |e| e.why(&name, days.clamp(1, 366)).map(|w| redact_why(&e, w))).await
}

/// Each valid routine's strip: its slots over the last 14 days as at most 168 marks.
pub async fn routine_strips(engine: &Engine) -> Result<std::collections::BTreeMap<String, Vec<crate::view::why::Mark>>> {
    blocking(engine, |e| {
        use crate::view::why::{why_with, Surroundings};
        let set = e.routine_set();
        // This device's presence and the global pause, read once for every routine.
        let around = Surroundings::over_days(&e, STRIP_DAYS)?;
        let mut out = std::collections::BTreeMap::new();
        for r in &set.routines {
            let why = redact_why(&e, why_with(&e, &set, &around, &r.name, STRIP_DAYS)?);
            out.insert(r.name.clone(), why.strip(STRIP_MARKS));
        }
        Ok(out)
    })
    .await
}

/// The Routines view's strips: two weeks, two hours a mark at most.
pub const STRIP_DAYS: u32 = 14;
pub const STRIP_MARKS: usize = 168;

/// Sentences quote run messages and file errors: masked like every other message the window gets.
fn redact_why(e: &Engine, mut why: crate::view::why::Why) -> crate::view::why::Why {
    for l in &mut why.lines {
        if let std::borrow::Cow::Owned(text) = &l.sentence {
            l.sentence = e.redact(text).into();
        }
    }
    for n in &mut why.notes {
        *n = e.redact(n);
    }
    why
}

/// The Usage view: per day over the last `days` days, stacked by routine or account.
pub async fn usage_report(engine: &Engine, days: u32, by: Option<String>) -> Result<crate::view::usage::UsageReport> {
    let by = match by.as_deref() {
        None | Some("routine") => crate::store::UsageBy::Routine,
        Some("account") => crate::store::UsageBy::Account,
        Some(other) => return Err(Error::new(ErrorCode::Usage, format!("usage is stacked by routine or account, not {other:?}"))),
    };
    blocking(engine, move |e| crate::view::usage::report(&e, days, by)).await
}

/// Disk used by each routine's runs (a walk of `runs/`).
pub async fn disk_usage(engine: &Engine) -> Result<Vec<crate::view::usage::DiskUse>> {
    blocking(engine, |e| Ok(crate::view::usage::disk_by_routine(&e.home().runs_dir()))).await
}

// `COMMANDS`: every command's name (the list `src-tauri/build.rs` includes too).
include!("api_commands.rs");

fn json<T: Serialize>(v: T) -> Result<serde_json::Value> {
    serde_json::to_value(v).map_err(|e| Error::new(ErrorCode::Io, format!("could not encode the answer: {e}")))
}

/// A command's arguments from the window's JSON (camelCase keys, as Tauri's IPC sends them; no
/// arguments may come as `null`). Keys it does not know are ignored.
fn arguments<T: for<'de> Deserialize<'de>>(command: &str, args: serde_json::Value) -> Result<T> {
    let args = if args.is_null() { serde_json::json!({}) } else { args };
    serde_json::from_value(args).map_err(|e| Error::new(ErrorCode::Usage, format!("bad arguments for {command}: {e}")))
}

/// Every window command, declared once: its name, its arguments (`Option` ones may be left out)
/// and what it answers, then how it is answered. From this come the router ([`call`]) and, in
/// the tests, the window's TypeScript types (`ui/lib/types.d.ts`, see `view::typescript`) — so
/// the window cannot send an argument or read an answer the engine does not have. `$engine` and
/// `$face` name the engine and the host inside the bodies.
macro_rules! commands {
    ($engine:ident, $face:ident; $( $name:ident ( $($arg:ident : $ty:ty),* ) -> $answer:ty = $body:expr; )*) => {
        /// Each command's arguments as a type (named after the command).
        #[allow(non_camel_case_types)]
        pub(crate) mod arguments {
            use super::*;
            $(
                #[derive(Deserialize)]
                #[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
                #[serde(rename_all = "camelCase")]
                pub struct $name { $(pub $arg: $ty),* }
            )*
        }

        /// Call `command` with JSON `args` (both transports: the app's window and `serve`'s HTTP).
        pub async fn call($engine: &Engine, $face: &dyn Face, command: &str, args: serde_json::Value) -> Result<serde_json::Value> {
            match command {
                $(
                    stringify!($name) => {
                        #[allow(unused_variables)]
                        let arguments::$name { $($arg),* } = arguments(command, args)?;
                        json::<$answer>($body)
                    }
                )*
                other => Err(Error::new(ErrorCode::Usage, format!("no command named \"{other}\""))),
            }
        }

        /// Every command as TypeScript: `name: { args: {…}; answer: T }`, and what those name.
        #[cfg(test)]
        pub(crate) fn command_types(cfg: &ts_rs::Config, types: &mut crate::view::typescript::Declarations) -> Vec<String> {
            use ts_rs::TS;
            let mut lines = Vec::new();
            $(
                types.add_named_by::<arguments::$name>(cfg);
                types.add::<$answer>(cfg);
                lines.push(format!("  {}: {{ args: {}; answer: {} }};", stringify!($name), <arguments::$name as TS>::inline(cfg), <$answer as TS>::name(cfg)));
            )*
            lines
        }

        /// The names, in order (checked against [`COMMANDS`], the list the app's build reads).
        #[cfg(test)]
        pub(crate) const DECLARED: &[&str] = &[$(stringify!($name)),*];
    };
}

commands! { engine, face;
    engine_state() -> EngineStateView = engine_state(engine, face).await?;
    list_routines() -> Vec<RoutineOverview> = list_routines(engine).await?;
    run_now(name: String) -> String = run_now(engine, &name).await?;
    set_routine_paused(name: String, paused: bool) -> () = set_routine_paused(engine, &name, paused)?;
    set_paused(paused: bool) -> () = set_paused(engine, paused)?;
    list_runs(routine: Option<String>, status: Option<String>, cursor: Option<String>, limit: Option<usize>) -> Page = list_runs(engine, routine, status, cursor, limit).await?;
    get_run(id: String) -> RunDetail = get_run(engine, &id).await?;
    read_log(id: String, stream: Option<LogStream>, offset: Option<u64>, readable: Option<bool>) -> LogChunk =
        read_log(engine, &id, stream.unwrap_or(LogStream::Stdout), offset.unwrap_or(0), readable.unwrap_or(true)).await?;
    cancel_run(id: String) -> bool = cancel_run(engine, &id).await?;
    list_accounts() -> Vec<AccountView> = list_accounts(engine).await?;
    check_account(email: String) -> AccountView = check_account(engine, &email).await?;
    set_token(email: String, token: String) -> () = set_token(engine, &email, &token).await?;
    relogin(email: String) -> Relogin = relogin(engine, face, &email)?;
    open_link(url: String) -> () = open_link(face, &url)?;
    routine_form() -> RoutineForm = routine_form(engine);
    check_routine_draft(draft: Draft) -> DraftCheck = check_routine_draft(engine, draft).await?;
    create_routine(draft: Draft, run_now: Option<bool>) -> Created = create_routine(engine, draft, run_now.unwrap_or(false)).await?;
    routine_source(name: String) -> RoutineSource = routine_source(engine, name).await?;
    check_routine_text(name: String, text: String) -> Vec<Diagnostic> = check_routine_text(engine, name, text).await?;
    save_routine_text(name: String, text: String, version: String, overwrite: Option<bool>) -> RoutineSource =
        save_routine_text(engine, name, text, version, overwrite.unwrap_or(false)).await?;
    duplicate_routine(name: String, new_name: String) -> Written = duplicate_routine(engine, name, new_name).await?;
    rename_routine(name: String, new_name: String) -> Written = rename_routine(engine, name, new_name).await?;
    remove_routine(name: String) -> Removed = remove_routine(engine, name).await?;
    removed_routines() -> Vec<Removed> = removed_routines(engine).await?;
    restore_routine(id: String) -> Written = restore_routine(engine, id).await?;
    open_routine_file(name: String) -> () = open_routine_file(engine, face, &name)?;
    list_folders(path: Option<String>) -> Folders = list_folders(path).await?;
    push_branch(id: String) -> RunRecord = push_branch(engine, &id).await?;
    open_workspace(id: String) -> () = open_workspace(engine, face, &id)?;
    routine_why(name: String, days: Option<u32>) -> crate::view::why::Why = routine_why(engine, &name, days.unwrap_or(7)).await?;
    routine_strips() -> std::collections::BTreeMap<String, Vec<crate::view::why::Mark>> = routine_strips(engine).await?;
    usage_report(days: Option<u32>, by: Option<String>) -> crate::view::usage::UsageReport = usage_report(engine, days.unwrap_or(30), by).await?;
    disk_usage() -> Vec<crate::view::usage::DiskUse> = disk_usage(engine).await?;
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_declared_commands_are_the_list_the_app_build_reads() {
        assert_eq!(super::DECLARED, super::COMMANDS, "api_commands.rs must list the commands `commands!` declares, in order");
    }

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
