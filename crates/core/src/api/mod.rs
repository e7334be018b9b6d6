//! The window's commands, defined once for both of its transports: the app's Tauri commands
//! (answered in the app's process with [`call`]) and HTTP
//! JSON in `nightshiftctl serve` (`POST /api/<command>` → [`call`]). What differs between the two
//! hosts — who schedules, opening a terminal or a browser — comes through [`Face`]. Every command
//! is declared once, at the end of this file (`commands!`); its definition lives with its kind:
//! [`routines`], [`runs`], [`accounts`], [`insight`].
//!
//! Payloads carry account ids and verdicts, never tokens; agent-derived text is masked by the
//! engine's redactor and reports arrive as sanitized HTML.

mod accounts;
mod insight;
mod routines;
mod runs;
#[cfg(test)]
pub(crate) mod typescript;

pub use accounts::*;
pub use insight::*;
pub use routines::*;
pub use runs::*;

use crate::error::{Error, ErrorCode, Result};
use crate::health::AccountHealth;
use crate::run::RunRecord;
use crate::store::Page;
use crate::view::log::{LogChunk, LogStream};
use crate::view::routines::{overview, RoutineOverview};
use crate::engine::{Removed, RoutineSource, Written};
use crate::routine::author::{Draft, DraftCheck};
use crate::routine::Diagnostic;
use crate::Engine;
use serde::{Deserialize, Serialize};

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
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
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
/// account's health — in one read (the tray asks after every engine event; another machine's
/// tray asks it of this home after each of its events).
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Glance {
    pub state: EngineStateView,
    /// As `list_routines` gives them; a routines folder that cannot be read gives none (and is
    /// one of `state.problems`).
    pub routines: Vec<RoutineOverview>,
    pub accounts: Vec<AccountHealth>,
    /// The tool calls runs hold while they ask (`on_denial: ask`), oldest first: attention.
    pub asks: Vec<crate::store::Ask>,
}

pub async fn glance(engine: &Engine, face: &dyn Face) -> Result<Glance> {
    let (elsewhere, scheduling) = (face.scheduled_elsewhere(), face.scheduling());
    blocking(engine, move |e| {
        let mut state = state_view(&e, elsewhere, scheduling);
        let routines = overview(&e, chrono::Utc::now()).unwrap_or_else(|err| {
            // (The same unreadable database may already be one of the problems.)
            if !state.problems.contains(&err.message) {
                state.problems.push(err.message);
            }
            Vec::new()
        });
        let asks = e.open_asks().unwrap_or_default();
        Ok(Glance { state, routines, accounts: e.accounts_health(), asks })
    })
    .await
}

/// Call `command` of another home (`[[homes]]`) with `args`: what the window does when it shows
/// that home — the same commands, answered there.
pub async fn home_call(engine: &Engine, home: &str, command: &str, args: Option<serde_json::Value>) -> Result<serde_json::Value> {
    let client = crate::homes::client(engine, home)?;
    client.call(command, args.unwrap_or_else(|| serde_json::json!({}))).await
}

/// Whether a call only reads: `command` itself, or for [`home_call`] the command it carries.
pub fn call_only_reads(command: &str, args: &serde_json::Value) -> bool {
    match command {
        "home_call" => args.get("command").and_then(|c| c.as_str()).is_some_and(|inner| inner != "home_call" && only_reads(inner)),
        _ => only_reads(command),
    }
}

// `COMMANDS`: every command's name (the list `src-tauri/build.rs` includes too).
include!("../api_commands.rs");

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
/// and what it answers, then how it is answered; `read` or `act` before it says whether it only
/// reads (a read-only token may call it) or changes something. From this come the router ([`call`]) and, in
/// the tests, the window's TypeScript types (`ui/lib/types.d.ts`, see `api::typescript`) — so
/// the window cannot send an argument or read an answer the engine does not have. `$engine` and
/// `$face` name the engine and the host inside the bodies.
macro_rules! commands {
    ($engine:ident, $face:ident; $( $kind:ident $name:ident ( $($arg:ident : $ty:ty),* ) -> $answer:ty = $body:expr; )*) => {
        /// Each command's arguments as a type (named after the command).
        #[allow(non_camel_case_types)]
        pub(crate) mod arguments {
            use super::*;
            $(
                #[derive(Deserialize)]
                #[cfg_attr(feature = "typescript", derive(ts_rs::TS), ts(optional_fields))]
                #[serde(rename_all = "camelCase")]
                pub struct $name { $(pub $arg: $ty),* }
            )*
        }

        /// Call `command` with JSON `args` (both transports: the app's window and `serve`'s HTTP).
        pub async fn call($engine: &Engine, $face: &dyn Face, command: &str, args: serde_json::Value) -> Result<serde_json::Value> {
            match command {
                $(
                    stringify!($name) => {
                        let arguments::$name { $($arg),* } = arguments(command, args)?;
                        json::<$answer>($body)
                    }
                )*
                other => Err(Error::new(ErrorCode::Usage, format!("no command named \"{other}\""))),
            }
        }

        /// Every command as TypeScript: `name: { args: {…}; answer: T }`, and what those name.
        #[cfg(test)]
        pub(crate) fn command_types(cfg: &ts_rs::Config, types: &mut typescript::Declarations) -> Vec<String> {
            use ts_rs::TS;
            let mut lines = Vec::new();
            $(
                types.add_named_by::<arguments::$name>(cfg);
                types.add::<$answer>(cfg);
                lines.push(format!("  {}: {{ args: {}; answer: {} }};", stringify!($name), <arguments::$name as TS>::inline(cfg), <$answer as TS>::name(cfg)));
            )*
            lines
        }

        /// Whether `command` only reads (`read`), so a read-only viewer may call it; anything
        /// else (`act`, or a name no command has) changes something or is refused.
        pub fn only_reads(command: &str) -> bool {
            $( if command == stringify!($name) { return stringify!($kind) == "read"; } )*
            false
        }

        /// The names, in order (checked against [`COMMANDS`], the list the app's build reads).
        #[cfg(test)]
        pub(crate) const DECLARED: &[&str] = &[$(stringify!($name)),*];
    };
}

commands! { engine, face;
    read engine_state() -> EngineStateView = engine_state(engine, face).await?;
    read glance() -> Glance = glance(engine, face).await?;
    read list_homes() -> Vec<crate::homes::HomeStatus> = crate::homes::statuses(engine).await;
    act home_call(home: String, command: String, args: Option<serde_json::Value>) -> serde_json::Value = home_call(engine, &home, &command, args).await?;
    read list_routines() -> Vec<RoutineOverview> = list_routines(engine).await?;
    act run_now(name: String, here: Option<bool>) -> String = run_now(engine, &name, here.unwrap_or(false)).await?;
    act set_routine_paused(name: String, paused: bool) -> () = set_routine_paused(engine, &name, paused)?;
    act set_paused(paused: bool) -> () = set_paused(engine, paused)?;
    read list_runs(routine: Option<String>, status: Option<String>, cursor: Option<String>, limit: Option<usize>) -> Page = list_runs(engine, routine, status, cursor, limit).await?;
    read get_run(id: String) -> RunDetail = get_run(engine, &id).await?;
    read runs_finished_since(from: String, limit: Option<usize>) -> Vec<RunRecord> = runs_finished_since(engine, &from, limit).await?;
    read run_notice(id: String) -> Option<crate::notify::Notice> = run_notice(engine, &id).await?;
    read run_report(id: String) -> String = run_report(engine, &id).await?;
    read read_log(id: String, stream: Option<LogStream>, offset: Option<u64>, readable: Option<bool>) -> LogChunk =
        read_log(engine, &id, stream.unwrap_or(LogStream::Stdout), offset.unwrap_or(0), readable.unwrap_or(true)).await?;
    act cancel_run(id: String) -> bool = cancel_run(engine, &id).await?;
    read list_asks() -> Vec<crate::store::Ask> = list_asks(engine).await?;
    act answer_ask(run: String, allow: bool, for_run: Option<bool>) -> crate::store::Ask = answer_ask(engine, &run, allow, for_run.unwrap_or(false)).await?;
    read list_accounts() -> Vec<AccountView> = list_accounts(engine).await?;
    read list_secrets() -> Vec<SecretView> = list_secrets(engine).await?;
    act check_account(email: String) -> AccountView = check_account(engine, &email).await?;
    act set_token(email: String, token: String) -> () = set_token(engine, &email, &token).await?;
    act set_account_options(email: String, reserve: Option<u8>, usage_probe: bool) -> () = set_account_options(engine, &email, reserve, usage_probe).await?;
    act relogin(email: String) -> Relogin = relogin(engine, face, &email)?;
    read list_hosts() -> Vec<crate::engine::HostView> = list_hosts(engine).await?;
    act check_host(host: String) -> crate::engine::HostCheck = engine.check_host(&host).await;
    act open_link(url: String) -> () = open_link(face, &url)?;
    read routine_form() -> RoutineForm = routine_form(engine);
    read check_routine_draft(draft: Draft) -> DraftCheck = check_routine_draft(engine, draft).await?;
    act create_routine(draft: Draft, run_now: Option<bool>) -> Created = create_routine(engine, draft, run_now.unwrap_or(false)).await?;
    read routine_source(name: String) -> RoutineSource = routine_source(engine, name).await?;
    read check_routine_text(name: String, text: String) -> Vec<Diagnostic> = check_routine_text(engine, name, text).await?;
    act save_routine_text(name: String, text: String, version: String, overwrite: Option<bool>) -> RoutineSource =
        save_routine_text(engine, name, text, version, overwrite.unwrap_or(false)).await?;
    act duplicate_routine(name: String, new_name: String) -> Written = duplicate_routine(engine, name, new_name).await?;
    act rename_routine(name: String, new_name: String) -> Written = rename_routine(engine, name, new_name).await?;
    act remove_routine(name: String) -> Removed = remove_routine(engine, name).await?;
    read check_new_routine_text(name: String, text: String) -> Vec<Diagnostic> = check_new_routine_text(engine, name, text).await?;
    act create_routine_text(name: String, text: String) -> Written = create_routine_text(engine, name, text).await?;
    act move_routine(name: String, to: String) -> crate::homes::moving::Moved = move_routine(engine, &name, &to).await?;
    read removed_routines() -> Vec<Removed> = removed_routines(engine).await?;
    act restore_routine(id: String) -> Written = restore_routine(engine, id).await?;
    act open_routine_file(name: String) -> () = open_routine_file(engine, face, &name)?;
    read list_folders(path: Option<String>) -> Folders = list_folders(path).await?;
    act push_branch(id: String) -> RunRecord = push_branch(engine, &id).await?;
    act open_workspace(id: String) -> () = open_workspace(engine, face, &id)?;
    read routine_why(name: String, days: Option<u32>) -> crate::view::why::Why = routine_why(engine, &name, days.unwrap_or(7)).await?;
    read routine_strips() -> std::collections::BTreeMap<String, Vec<crate::view::why::Mark>> = routine_strips(engine).await?;
    read usage_report(days: Option<u32>, by: Option<crate::store::UsageBy>) -> crate::view::usage::UsageReport = usage_report(engine, days.unwrap_or(30), by).await?;
    read disk_usage() -> Vec<crate::view::usage::DiskUse> = disk_usage(engine).await?;
    read usage_rows(by: crate::store::UsageBy, since: String) -> Vec<crate::store::UsageRow> = usage_rows(engine, by, &since).await?;
    read budgets() -> Vec<crate::engine::BudgetState> = budgets(engine).await?;
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
