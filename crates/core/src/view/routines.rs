//! Every routine as the faces list it (`nightshiftctl routines list`, the window's Routines view,
//! the tray): schedule in words, state, next fire, last run, and an invalid file's errors.

use crate::engine::Engine;
use crate::error::Result;
pub use crate::routine::RoutineState;
use crate::run::{Reason, RunStatus};
use crate::words::{fmt_time, Agent};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct LastRun {
    pub id: String,
    pub status: RunStatus,
    pub reason: Option<Reason>,
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub started_at: Option<DateTime<Utc>>,
}

/// (`Deserialize`: `routines list --home` reads another home's.)
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct RoutineOverview {
    pub name: String,
    /// The file, relative to the home when inside it.
    pub file: String,
    pub valid: bool,
    /// What runs it (`claude`, `codex`, `gemini` or `command`); none for an invalid file.
    pub kind: Option<Agent>,
    /// The machines its runs go to over SSH (`host:`/`hosts:`); empty: this one.
    pub hosts: Vec<String>,
    /// The cron expression (or `at …` for a one-shot).
    pub schedule: Option<String>,
    /// The schedule in words: "At 09:00 on Monday through Friday, Europe/Berlin".
    pub schedule_words: Option<String>,
    /// The events it runs on (`trigger:`): "github:pull_request (acme/app@main, action=labeled,
    /// label=ux-approved)".
    pub trigger: Option<String>,
    pub timezone: Option<String>,
    pub enabled: Option<bool>,
    /// Paused on this machine (by the user, or automatically: see `paused_reason`).
    pub paused: bool,
    pub paused_reason: Option<String>,
    pub on_this_device: bool,
    pub state: RoutineState,
    /// Only when the routine will actually fire (enabled, not paused, on this device).
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub next_fire: Option<DateTime<Utc>>,
    pub last_run: Option<LastRun>,
    /// The routine has gone quiet (`notify_missed`): its last slot did nothing — "missed Tue 1 Dec
    /// 02:00", "skipped …" — until it runs again.
    pub quiet: Option<String>,
    /// Its last run's branch could not be pushed after every try — "push to origin failed:
    /// rejected (non-fast-forward)" — until `nightshiftctl push RUN` or a later run pushes.
    pub push_failed: Option<String>,
    /// An agent routine whose runs are not put in the machine's sandbox because it says so
    /// (`sandbox: off`, or `[defaults] sandbox = "off"`): shown, so an opt-out is never quiet.
    pub sandbox_off: bool,
    /// `created_by:` — `mcp` for a routine an agent created.
    pub created_by: Option<String>,
    /// A follow-up an agent scheduled: whose ("scheduled by nightly at Mon 7 Dec 02:14 (run …)").
    pub scheduled_by: Option<String>,
    /// file:line:col problems of an invalid file.
    pub errors: Vec<String>,
    /// file:line:col: warning: … — what the file says that the routine runs without, or takes
    /// another way than written (valid and invalid files alike).
    pub warnings: Vec<String>,
}


/// Every routine (valid ones first, by name) and every invalid file.
pub fn overview(engine: &Engine, now: DateTime<Utc>) -> Result<Vec<RoutineOverview>> {
    let set = engine.routines();
    let store = engine.core_store();
    let all_paused = store.global_paused()?;
    let device = engine.device_name();
    let mut rows = Vec::with_capacity(set.routines.len() + set.invalid.len());
    // Two queries for all routines, not two per routine.
    let paused_now = store.paused_routines()?;
    let names: Vec<&str> = set.routines.iter().map(|r| r.name.as_str()).collect();
    let mut last_runs = store.last_runs(&names)?;
    for r in &set.routines {
        let paused = paused_now.contains_key(&r.name);
        let paused_reason = paused_now.get(&r.name).cloned().flatten();
        let on_this_device = r.runs_on(&device);
        let state = r.state(&device, paused.then_some(paused_reason.as_deref()), all_paused);
        let last = last_runs.remove(&r.name);
        rows.push(RoutineOverview {
            name: r.name.clone(),
            file: engine.home().display_path(&r.file),
            valid: true,
            kind: Some(r.agent()),
            hosts: r.placement.as_ref().map(|p| p.hosts.clone()).unwrap_or_default(),
            schedule: r.schedule.as_ref().map(|s| s.expr.clone()).or_else(|| r.at.map(|t| format!("at {}", fmt_time(&t)))),
            schedule_words: Some(r.schedule_words()),
            trigger: r.trigger.as_ref().map(|t| t.words()),
            timezone: Some(r.timezone.name().to_string()),
            enabled: Some(r.enabled),
            paused,
            paused_reason,
            on_this_device,
            state,
            // A `runOnce` routine whose one slot came has no next one.
            next_fire: if state.is_active() && !(r.run_once && store.last_slot(&r.name)?.is_some()) { r.next_slot(now) } else { None },
            quiet: last.as_ref().filter(|l| r.notify_missed && l.status.is_quiet_slot(l.reason)).map(|l| {
                let slot = l.scheduled_for.map(|t| format!(" {}", crate::words::local_day_time(t, r.timezone))).unwrap_or_default();
                format!("{}{slot}", l.status.label())
            }),
            push_failed: last.as_ref().and_then(push_failed_words),
            sandbox_off: r.agent().cli().is_some() && r.sandbox.wanted(true) == crate::sandbox::Wanted::Off,
            created_by: r.created_by.clone(),
            scheduled_by: crate::view::lineage::scheduled_by(engine, r),
            last_run: last.map(|l| LastRun { id: l.id, status: l.status, reason: l.reason, started_at: l.started_at }),
            errors: Vec::new(),
            warnings: r.warnings.iter().map(ToString::to_string).collect(),
        });
    }
    for bad in &set.invalid {
        rows.push(RoutineOverview {
            name: bad.name.clone(),
            file: engine.home().display_path(&bad.file),
            valid: false,
            kind: None,
            hosts: Vec::new(),
            schedule: None,
            schedule_words: None,
            trigger: None,
            timezone: None,
            enabled: None,
            paused: false,
            paused_reason: None,
            on_this_device: true,
            state: RoutineState::Invalid,
            next_fire: None,
            last_run: None,
            quiet: None,
            push_failed: None,
            sandbox_off: false,
            created_by: None,
            scheduled_by: None,
            errors: bad.errors.iter().map(ToString::to_string).collect(),
            warnings: bad.warnings.iter().map(ToString::to_string).collect(),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use crate::schedule::Schedule;

    #[test]
    fn schedules_in_short_words() {
        let words = |expr: &str| Schedule::parse(expr, chrono_tz::UTC).unwrap().words();
        assert_eq!(words("0 9 * * 1-5"), "At 09:00 on weekdays");
        assert!(!words("*/15 * * * *").ends_with('.'), "{}", words("*/15 * * * *"));
    }
}

/// "push to origin failed: rejected (non-fast-forward)" for a run whose push gave up.
fn push_failed_words(run: &crate::run::RunRecord) -> Option<String> {
    let push = run.changes.as_ref()?.push.as_ref().filter(|p| p.state == crate::run::PushState::Failed)?;
    Some(format!("push to {} failed: {}", push.remote, crate::words::first_line(push.error.as_deref().unwrap_or("refused"), 120)))
}
