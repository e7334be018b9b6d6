//! `nightshiftctl routines list | validate | next`

use crate::format::{self, json, table};
use crate::Outcome;
use chrono::Utc;
use clap::Subcommand;
use nightshift_core::routine::{load_files, Routine};
use nightshift_core::store::RunQuery;
use nightshift_core::{Engine, Error, ErrorCode};
use serde::Serialize;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum RoutinesCommand {
    /// Every routine with its schedule, next fire and last run; invalid files with their errors.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Check routine files (default: all of them) and print every problem as file:line:col.
    Validate { files: Vec<PathBuf> },
    /// The next fire times of each routine, in its own zone and in local time.
    Next {
        #[arg(long)]
        json: bool,
        /// How many fire times per routine.
        #[arg(long, default_value_t = 3)]
        count: usize,
    },
}

pub fn run(engine: &Engine, cmd: RoutinesCommand) -> Result<Outcome, Error> {
    match cmd {
        RoutinesCommand::List { json } => list(engine, json),
        RoutinesCommand::Validate { files } => validate(engine, files),
        RoutinesCommand::Next { json, count } => next(engine, json, count),
    }
}

#[derive(Serialize)]
struct RoutineRow {
    name: String,
    file: String,
    valid: bool,
    kind: Option<&'static str>,
    schedule: Option<String>,
    timezone: Option<String>,
    enabled: Option<bool>,
    /// Paused on this machine (by the user, or automatically: see `paused_reason`).
    paused: bool,
    paused_reason: Option<String>,
    on_this_device: bool,
    next_fire: Option<String>,
    last_run: Option<LastRun>,
    errors: Vec<String>,
}

#[derive(Serialize)]
struct LastRun {
    id: String,
    status: String,
    reason: Option<String>,
    started_at: Option<String>,
}

fn next_fire(r: &Routine) -> Option<chrono::DateTime<Utc>> {
    let now = Utc::now();
    let next = match (&r.schedule, r.at) {
        (Some(s), _) => s.next_after(now),
        (None, Some(at)) if at > now => Some(at),
        _ => None,
    };
    next.filter(|t| r.end_at.is_none_or(|end| *t <= end))
}

fn list(engine: &Engine, as_json: bool) -> Result<Outcome, Error> {
    let set = engine.routines();
    let all_paused = engine.store().global_paused()?;
    let device = engine.device_name();
    let mut rows = Vec::new();
    for r in &set.routines {
        let state = engine.store().peek_routine_state(&r.name)?;
        let paused = state.as_ref().is_some_and(|s| s.paused);
        let on_this_device = r.devices.is_empty() || r.devices.contains(&device);
        let active = r.enabled && !paused && !all_paused && on_this_device;
        let last = engine.store().list_runs(&RunQuery { routine: Some(r.name.clone()), limit: 1, ..Default::default() })?.runs.into_iter().next();
        rows.push(RoutineRow {
            name: r.name.clone(),
            file: engine.home().display_path(&r.file),
            valid: true,
            kind: Some(r.kind_name()),
            schedule: r.schedule.as_ref().map(|s| s.expr.clone()).or_else(|| r.at.map(|t| format!("at {}", nightshift_core::run::fmt_time(&t)))),
            timezone: Some(r.timezone.name().to_string()),
            enabled: Some(r.enabled),
            paused,
            paused_reason: state.and_then(|s| s.paused_reason),
            on_this_device,
            next_fire: if active { next_fire(r).map(|t| nightshift_core::run::fmt_time(&t)) } else { None },
            last_run: last.map(|l| LastRun {
                id: l.id,
                status: l.status.to_string(),
                reason: l.reason.map(|r| r.to_string()),
                started_at: l.started_at.map(|t| nightshift_core::run::fmt_time(&t)),
            }),
            errors: Vec::new(),
        });
    }
    for bad in &set.invalid {
        rows.push(RoutineRow {
            name: bad.name.clone(),
            file: engine.home().display_path(&bad.file),
            valid: false,
            kind: None,
            schedule: None,
            timezone: None,
            enabled: None,
            paused: false,
            paused_reason: None,
            on_this_device: true,
            next_fire: None,
            last_run: None,
            errors: bad.errors.iter().map(ToString::to_string).collect(),
        });
    }
    if as_json {
        json(&rows);
        return Ok(Outcome::Ok);
    }
    if rows.is_empty() {
        println!("No routines yet — add a YAML file to {} (or run `nightshiftctl init` for examples).", engine.home().routines_dir().display());
        return Ok(Outcome::Ok);
    }
    let now = Utc::now();
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let state = if !r.valid {
                "invalid".to_string()
            } else if r.enabled == Some(false) {
                "disabled".to_string()
            } else if !r.on_this_device {
                format!("not on this device ({device})")
            } else if r.paused_reason.is_some() {
                "auto-paused".to_string()
            } else if r.paused {
                "paused".to_string()
            } else if all_paused {
                "paused (all)".to_string()
            } else {
                "enabled".to_string()
            };
            let next = r
                .next_fire
                .as_deref()
                .and_then(nightshift_core::run::parse_time)
                .map(|t| format!("{} ({})", format::local(&t), format::relative(&t, now)))
                .unwrap_or_else(|| "-".into());
            let last = r.last_run.as_ref().map(|l| match &l.reason {
                Some(reason) => format!("{} ({reason})", l.status),
                None => l.status.clone(),
            });
            vec![
                r.name.clone(),
                r.kind.unwrap_or("-").to_string(),
                match (&r.schedule, &r.timezone) {
                    (Some(s), Some(tz)) => format!("{s} {tz}"),
                    _ => "-".into(),
                },
                state,
                next,
                last.unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    table(&["NAME", "KIND", "SCHEDULE", "STATE", "NEXT", "LAST RUN"], &table_rows);
    for r in rows.iter().filter(|r| r.paused_reason.is_some()) {
        eprintln!("note: {}: {}", r.name, r.paused_reason.as_deref().unwrap_or(""));
    }
    for r in rows.iter().filter(|r| !r.valid) {
        for e in &r.errors {
            eprintln!("error: {e}");
        }
    }
    Ok(Outcome::Ok)
}

fn validate(engine: &Engine, files: Vec<PathBuf>) -> Result<Outcome, Error> {
    let set = if files.is_empty() {
        engine.routines()
    } else {
        for f in &files {
            if !f.is_file() {
                return Err(Error::new(ErrorCode::Usage, format!("{}: no such file", f.display())));
            }
        }
        load_files(engine.home(), &files)
    };
    let problems: Vec<String> = set.diagnostics().map(ToString::to_string).collect();
    for p in &problems {
        eprintln!("error: {p}");
    }
    let (ok, bad) = (set.routines.len(), set.invalid.len());
    if bad > 0 {
        eprintln!("{ok} valid, {bad} invalid ({} problem{})", problems.len(), if problems.len() == 1 { "" } else { "s" });
        return Ok(Outcome::Invalid);
    }
    println!("✓ {ok} routine{} valid", if ok == 1 { "" } else { "s" });
    Ok(Outcome::Ok)
}

#[derive(Serialize)]
struct NextRow {
    name: String,
    timezone: String,
    enabled: bool,
    /// RFC 3339 instants (UTC).
    fires: Vec<String>,
    /// The same instants as wall-clock times in the routine's zone.
    fires_local_to_routine: Vec<String>,
}

fn next(engine: &Engine, as_json: bool, count: usize) -> Result<Outcome, Error> {
    let set = engine.routines();
    let now = Utc::now();
    let rows: Vec<NextRow> = set
        .routines
        .iter()
        .map(|r| {
            let fires: Vec<chrono::DateTime<Utc>> = match (&r.schedule, r.at) {
                (Some(s), _) => s.upcoming(now, count),
                (None, Some(at)) if at > now => vec![at],
                _ => Vec::new(),
            }
            .into_iter()
            .filter(|t| r.end_at.is_none_or(|end| *t <= end))
            .collect();
            NextRow {
                name: r.name.clone(),
                timezone: r.timezone.name().to_string(),
                enabled: r.enabled,
                fires_local_to_routine: fires.iter().map(|t| t.with_timezone(&r.timezone).format("%Y-%m-%d %H:%M:%S %Z").to_string()).collect(),
                fires: fires.iter().map(nightshift_core::run::fmt_time).collect(),
            }
        })
        .collect();
    if as_json {
        json(&rows);
        return Ok(Outcome::Ok);
    }
    for r in &rows {
        let note = if r.enabled { "" } else { " (disabled)" };
        println!("{}{note}", r.name);
        if r.fires.is_empty() {
            println!("  no further fires");
        }
        for (utc, zoned) in r.fires.iter().zip(&r.fires_local_to_routine) {
            let t = nightshift_core::run::parse_time(utc).expect("we formatted it");
            println!("  {zoned:<28}  local {}  ({})", format::local(&t), format::relative(&t, now));
        }
    }
    Ok(Outcome::Ok)
}
