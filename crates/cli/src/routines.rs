//! `nightshiftctl routines list | validate | next`

use crate::format::{self, json, table};
use crate::Outcome;
use chrono::Utc;
use clap::Subcommand;
use nightshift_core::routine::load_files;
use nightshift_core::view::routines::RoutineState;
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

fn list(engine: &Engine, as_json: bool) -> Result<Outcome, Error> {
    let now = Utc::now();
    let rows = nightshift_core::view::routines::overview(engine, now)?;
    if as_json {
        json(&rows);
        return Ok(Outcome::Ok);
    }
    if rows.is_empty() {
        println!("No routines yet — add a YAML file to {} (or run `nightshiftctl init` for examples).", engine.home().routines_dir().display());
        return Ok(Outcome::Ok);
    }
    let device = engine.device_name();
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let state = match r.state {
                RoutineState::OtherDevice => format!("not on this device ({device})"),
                s => s.words().to_string(),
            };
            let next = r.next_fire.map(|t| format!("{} ({})", format::local(&t), format::relative(&t, now))).unwrap_or_else(|| "-".into());
            let last = r.last_run.as_ref().map(|l| match &l.reason {
                Some(reason) => format!("{} ({reason})", l.status),
                None => l.status.to_string(),
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
        nightshift_core::routine::check_webhooks(load_files(engine.home(), &files), engine.settings(), engine.home())
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
