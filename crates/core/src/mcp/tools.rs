//! Every MCP tool, declared once (`tools!`): its name, what it needs (`read`, or the `[mcp]
//! allow` word `run` / `create`), its description, its argument type — whose JSON Schema
//! (`schemars`, doc comments as descriptions) is the schema `tools/list` gives — and the engine
//! call that answers it, the same one the window's command makes. Every answer is a JSON object
//! (a list under its name: `{"routines": […]}`): MCP's structured content is an object, and
//! clients (Gemini CLI's) refuse another shape.

use super::{authoring, Caller};
use crate::api;
use crate::error::{Error, ErrorCode, Result};
use crate::settings::McpPower;
use crate::Engine;
use rmcp::model::{Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What a tool needs: nothing (it reads), or a word of `[mcp] allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    Read,
    Run,
    Create,
}

impl Power {
    fn allow_word(self) -> Option<McpPower> {
        match self {
            Power::Read => None,
            Power::Run => Some(McpPower::Run),
            Power::Create => Some(McpPower::Create),
        }
    }
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoutineArgs {
    /// The routine's name (as `routines_list` gives it).
    pub name: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoutineShowArgs {
    /// The routine's name.
    pub name: String,
    /// How many next fire times to list (default 5, at most 50).
    pub fires: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunsListArgs {
    /// Only this routine's runs.
    pub routine: Option<String>,
    /// Only runs with this status: queued, running, completed, failed, timed_out, cancelled,
    /// blocked, missed or skipped.
    pub status: Option<String>,
    /// How many, newest first (default 20, at most 200).
    pub limit: Option<usize>,
    /// `next_cursor` of the previous page, for older runs.
    pub cursor: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// The run's id.
    pub id: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WhyArgs {
    /// The routine's name.
    pub routine: String,
    /// How many days back (default 7, at most 366).
    pub days: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageArgs {
    /// How many days back (default 30).
    pub days: Option<u32>,
    /// `routine` (default) or `account`.
    pub by: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunNowArgs {
    /// The routine to run.
    pub routine: String,
    /// Wait up to this many seconds for the run to end (at most 600); without it the run's id
    /// comes back at once and `run_show` follows it.
    pub wait_seconds: Option<u64>,
}

/// A routine's facts as `routine_show` gives them: what `routines_list` shows, and what it runs.
#[derive(Serialize)]
pub struct RoutineFacts {
    #[serde(flatten)]
    pub overview: crate::view::routines::RoutineOverview,
    pub description: Option<String>,
    /// The prompt (agent routines) or the command.
    pub prompt: Option<String>,
    pub command: Option<String>,
    pub mode: Option<String>,
    pub model: Option<String>,
    pub cwd: Option<String>,
    /// Its next fire times (RFC 3339, UTC), as its schedule says — whether it is enabled or not.
    pub next_fires: Vec<String>,
}

/// A run as `run_show` gives it: the record, what it means, where it ran, and whose follow-up it
/// is — the window's run detail without its HTML and its receivers' addresses.
#[derive(Serialize)]
pub struct RunFacts {
    pub run: crate::run::RunRecord,
    pub explanation: crate::view::explain::Explanation,
    pub changes_summary: Option<String>,
    pub slot_why: Option<String>,
    pub place: Option<String>,
    pub sandbox: Option<String>,
    pub scheduled_by: Option<String>,
}

/// `run_now`'s answer: the run's id, and the run as it is when the wait ended.
#[derive(Serialize)]
pub struct Started {
    pub run_id: String,
    /// Whether the run had ended when this answered (with `wait_seconds`).
    pub finished: bool,
    pub run: crate::run::RunRecord,
}

/// An account's auth health, without where its login lives or what its secret is.
#[derive(Serialize)]
pub struct AccountFacts {
    pub account: String,
    pub agent: crate::words::Agent,
    pub verdict: crate::words::Verdict,
    pub evidence: String,
    pub since: Option<String>,
    pub expires_at: Option<String>,
    pub resets_at: Option<String>,
    pub fix: Option<String>,
    pub windows: Vec<crate::run::LimitWindow>,
}

/// The longest a `run_now` call waits.
const MAX_WAIT_SECS: u64 = 600;

/// A tool's need, as its declaration words it.
macro_rules! power {
    (read) => {
        Power::Read
    };
    (run) => {
        Power::Run
    };
    (create) => {
        Power::Create
    };
}

macro_rules! tools {
    ($engine:ident, $caller:ident; $( $power:ident $name:ident ($args:ident : $ty:ty) $doc:literal = $body:expr; )*) => {
        /// Every tool, as `tools/list` gives them.
        pub fn declared() -> Vec<Tool> {
            vec![$( tool::<$ty>(stringify!($name), $doc, power!($power)) ),*]
        }

        /// What `name` needs; `None`: no such tool.
        pub fn power_of(name: &str) -> Option<Power> {
            $( if name == stringify!($name) { return Some(power!($power)); } )*
            None
        }

        /// Answer tool `name` with JSON `args`, once the caller may call it.
        pub async fn call($engine: &Engine, $caller: &Caller, name: &str, args: serde_json::Value) -> Result<serde_json::Value> {
            let power = power_of(name).ok_or_else(|| Error::new(ErrorCode::Usage, format!("no tool named \"{name}\"")))?;
            permitted($engine, $caller, name, power)?;
            match name {
                $(
                    stringify!($name) => {
                        let $args: $ty = arguments(name, args)?;
                        to_json($body)
                    }
                )*
                _ => unreachable!("power_of knows every tool"),
            }
        }

        /// The names, in order.
        pub const NAMES: &[&str] = &[$(stringify!($name)),*];
    };
}

tools! { engine, caller;
    read routines_list(_a: NoArgs)
        "Every routine of this Nightshift home: schedule in words, enabled or paused, next fire, last run, problems of a file that does not load."
        = serde_json::json!({ "routines": api::list_routines(engine).await? });
    read routine_show(a: RoutineShowArgs)
        "One routine: what routines_list says of it, what it runs (prompt or command, mode, model, folder) and its next fire times."
        = routine_show(engine, &a.name, a.fires.unwrap_or(5).min(50)).await?;
    read runs_list(a: RunsListArgs)
        "Run history, newest first: each run's status, reason, message, account, cost, duration. Filter by routine or status; page with cursor."
        = api::list_runs(engine, a.routine, a.status, a.cursor, Some(a.limit.unwrap_or(20))).await?;
    read run_show(a: RunArgs)
        "One run: its record (status, reason, message, attempts, cost), what that means and what to do, where it ran, and whose follow-up it is."
        = run_show(engine, &a.id).await?;
    read run_report(a: RunArgs)
        "A run's report as Markdown (secrets masked), or why it has none."
        = serde_json::json!({ "id": a.id, "report": api::run_report(engine, &a.id).await? });
    read why(a: WhyArgs)
        "A routine's slots over the last days and what became of each (ran, missed while asleep, skipped, blocked…), with the evidence."
        = api::routine_why(engine, &a.routine, a.days.unwrap_or(7)).await?;
    read usage(a: UsageArgs)
        "What runs cost and used (runs, tokens, US dollars) per day, by routine or by account."
        = api::usage_report(engine, a.days.unwrap_or(30), usage_by(a.by.as_deref())?).await?;
    read accounts_health(_a: NoArgs)
        "Each agent account's auth health (ok, needs login, rate limited until…), with the fix — never its secret."
        = serde_json::json!({ "accounts": accounts_health(engine) });
    run run_now(a: RunNowArgs)
        "Start a routine now; returns the run's id (and, with wait_seconds, the run once it ended or the wait ran out). Needs `[mcp] allow = [\"run\"]`."
        = run_now(engine, &a.routine, a.wait_seconds).await?;
    run run_cancel(a: RunArgs)
        "Cancel a queued or running run; false when it had already ended. Needs `[mcp] allow = [\"run\"]`."
        = serde_json::json!({ "id": a.id, "cancelled": api::cancel_run(engine, &a.id).await? });
    create routine_create(a: authoring::NewRoutine)
        "Create a routine (the fields of `nightshiftctl routines new`; problems come back by field). It is marked created_by: mcp and, unless the user allows otherwise, written disabled. Needs `[mcp] allow = [\"create\"]`."
        = authoring::create(engine, caller, a).await?;
    create routine_schedule_once(a: authoring::Once)
        "Schedule a one-shot follow-up: a prompt (or command) that runs once, at a time (`at`) or after a delay (`after`: \"2h\", \"90m\"). Inside a Nightshift run it carries the run as its parent. Needs `[mcp] allow = [\"create\"]`."
        = authoring::schedule_once(engine, caller, a).await?;
    run routine_pause(a: RoutineArgs)
        "Pause a routine on this machine (its schedule stops until resumed). Needs `[mcp] allow = [\"run\"]`."
        = { api::set_routine_paused(engine, &a.name, true)?; serde_json::json!({ "routine": a.name, "paused": true }) };
    run routine_resume(a: RoutineArgs)
        "Resume a paused routine. Needs `[mcp] allow = [\"run\"]`."
        = { api::set_routine_paused(engine, &a.name, false)?; serde_json::json!({ "routine": a.name, "paused": false }) };
}

/// The input schema of a tool that reads a `T` (JSON Schema 2020-12, as MCP takes it).
pub(super) fn input_schema<T: JsonSchema>() -> Arc<serde_json::Map<String, serde_json::Value>> {
    let schema = schemars::generate::SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>();
    let mut object = match serde_json::to_value(schema) {
        Ok(serde_json::Value::Object(o)) => o,
        _ => serde_json::Map::new(),
    };
    // A client shows the tool's own description, not the argument type's.
    object.remove("description");
    object.remove("title");
    object.entry("properties").or_insert_with(|| serde_json::json!({}));
    Arc::new(object)
}

/// A tool as `tools/list` gives it: its input schema from `T`, read-only ones marked so.
fn tool<T: JsonSchema>(name: &'static str, description: &'static str, power: Power) -> Tool {
    let mut tool = Tool::new(name, description, input_schema::<T>());
    let mut hints = ToolAnnotations::default();
    hints.read_only_hint = Some(power == Power::Read);
    hints.destructive_hint = Some(false);
    tool.annotations = Some(hints);
    tool
}

/// Whether `caller` may call tool `name`: reading always; acting only when the token may and
/// `[mcp] allow` has the word (read now: an edit of nightshift.toml applies at the next call).
fn permitted(engine: &Engine, caller: &Caller, name: &str, power: Power) -> Result<()> {
    let Some(word) = power.allow_word() else { return Ok(()) };
    if !caller.may_act {
        return Err(Error::new(ErrorCode::ReadOnly, format!("this token is read-only: \"{name}\" would change the home; only looking is allowed")));
    }
    if !engine.settings().mcp.allows(word) {
        let w = word.as_str();
        return Err(Error::new(ErrorCode::NotAllowed, format!("\"{name}\" is not allowed: add \"{w}\" to `[mcp] allow` in nightshift.toml (allow = [\"{w}\"]) to let agents use it")));
    }
    Ok(())
}

/// The arguments as the tool's type; what does not fit is named (`usage`).
fn arguments<T: for<'de> Deserialize<'de>>(tool: &str, args: serde_json::Value) -> Result<T> {
    serde_json::from_value(args).map_err(|e| Error::new(ErrorCode::Usage, format!("bad arguments for {tool}: {e}")))
}

fn to_json<T: Serialize>(v: T) -> Result<serde_json::Value> {
    serde_json::to_value(v).map_err(|e| Error::new(ErrorCode::Io, format!("could not encode the answer: {e}")))
}

fn usage_by(by: Option<&str>) -> Result<Option<crate::store::UsageBy>> {
    match by.map(str::trim).filter(|b| !b.is_empty()) {
        None => Ok(None),
        Some(b) => serde_json::from_value(serde_json::Value::String(b.to_string())).map(Some).map_err(|_| Error::new(ErrorCode::Usage, format!("usage is by \"routine\" or \"account\", not \"{b}\""))),
    }
}

async fn routine_show(engine: &Engine, name: &str, fires: usize) -> Result<RoutineFacts> {
    let rows = api::list_routines(engine).await?;
    let overview = rows.into_iter().find(|r| r.name == name).ok_or_else(|| engine.routine(name).err().unwrap_or_else(|| Error::new(ErrorCode::RoutineNotFound, format!("no routine named \"{name}\""))))?;
    let routine = engine.routine(name).ok();
    let now = chrono::Utc::now();
    let text = |s: &str| engine.redact(s);
    let (mut prompt, mut command, mut mode, mut model) = (None, None, None, None);
    match routine.as_ref().map(|r| &r.action) {
        Some(crate::routine::Action::Agent { prompt: p, mode: m, model: md, .. }) => {
            prompt = Some(text(p));
            mode = Some(m.to_string());
            model = md.clone();
        }
        Some(crate::routine::Action::Command { command: c }) => command = Some(text(c)),
        None => {}
    }
    Ok(RoutineFacts {
        overview,
        description: routine.as_ref().and_then(|r| r.description.clone()),
        prompt,
        command,
        mode,
        model,
        cwd: routine.as_ref().and_then(|r| r.cwd.as_ref()).map(|c| c.display().to_string()),
        next_fires: routine.map(|r| r.upcoming(now, fires).iter().map(crate::words::fmt_time).collect()).unwrap_or_default(),
    })
}

async fn run_show(engine: &Engine, id: &str) -> Result<RunFacts> {
    let detail = api::get_run(engine, id).await?;
    Ok(RunFacts {
        scheduled_by: detail.scheduled_by,
        run: detail.run,
        explanation: detail.explanation,
        changes_summary: detail.changes_summary,
        slot_why: detail.slot_why,
        place: detail.place,
        sandbox: detail.sandbox,
    })
}

fn accounts_health(engine: &Engine) -> Vec<AccountFacts> {
    let time = |t: Option<chrono::DateTime<chrono::Utc>>| t.as_ref().map(crate::words::fmt_time);
    engine
        .accounts_health()
        .into_iter()
        .map(|h| AccountFacts {
            account: h.account,
            agent: h.agent,
            verdict: h.verdict,
            evidence: engine.redact(&h.evidence),
            since: time(h.since),
            expires_at: time(h.expires_at),
            resets_at: time(h.resets_at),
            fix: h.fix,
            windows: h.windows,
        })
        .collect()
}

async fn run_now(engine: &Engine, routine: &str, wait_seconds: Option<u64>) -> Result<Started> {
    let handle = engine.run_now_with(routine, crate::run::Trigger::Mcp, crate::run::RunAsks::default()).await?;
    let run_id = handle.id.clone();
    let wait = std::time::Duration::from_secs(wait_seconds.unwrap_or(0).min(MAX_WAIT_SECS));
    let run = match wait.is_zero() {
        true => engine.run(&run_id)?,
        false => match tokio::time::timeout(wait, handle.wait()).await {
            Ok(ended) => ended?,
            Err(_) => engine.run(&run_id)?,
        },
    };
    // A run still waiting for a lane says who will start it once this server is gone.
    let _ = engine.hand_off_queued();
    Ok(Started { finished: run.status.is_final(), run_id, run })
}
