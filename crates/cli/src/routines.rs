//! `nightshiftctl routines list | validate | next | new | edit | rename | duplicate | remove |
//! removed | restore`

use crate::format::{self, json, table};
use crate::Outcome;
use chrono::Utc;
use clap::Subcommand;
use nightshift_core::routine::author::Draft;
use nightshift_core::routine::load_files;
use nightshift_core::view::routines::{RoutineOverview, RoutineState};
use nightshift_core::{Engine, Error, ErrorCode};
use serde::Serialize;
use std::path::PathBuf;

mod edit;
mod files;

use files::Files;

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
    /// Write a new routine file (routines/NAME.yaml), checked as the loader checks it.
    New(Box<NewArgs>),
    /// Edit a routine's file in $VISUAL/$EDITOR; it is checked before it replaces the file.
    Edit { name: String },
    /// Rename a routine: its file and its run history follow.
    Rename { name: String, new_name: String },
    /// Copy a routine's file under a new name (comments and all).
    Duplicate { name: String, new_name: String },
    /// Move a routine's file to routines/.trash/ (its history stays; `restore` brings it back).
    Remove { name: String },
    /// Move a routine to another home (`[[homes]]`) that should own it: written and checked
    /// there first, then disabled here (into routines/.trash/ with a note). Its history stays.
    Move {
        name: String,
        /// The home to move it to.
        #[arg(long)]
        to: String,
    },
    /// Routine files in the trash, newest first.
    Removed {
        #[arg(long)]
        json: bool,
    },
    /// Put a removed routine back (an id from `routines removed`).
    Restore { id: String },
    /// Read a project folder's own routines (DIR/.agents/routines/*.yml, agents-cli's project
    /// layer), live like the home's; only folders added here are read, never a clone by itself.
    AddProject { dir: PathBuf },
    /// Stop reading a project folder's routines (its files stay).
    RemoveProject { dir: PathBuf },
}

#[derive(clap::Args)]
pub struct NewArgs {
    pub name: String,
    /// claude, codex, gemini, opencode or copilot (with --prompt); or use --command.
    #[arg(long, requires = "prompt", conflicts_with = "command")]
    pub agent: Option<String>,
    #[arg(long)]
    pub prompt: Option<String>,
    /// A shell command (run with sh -c).
    #[arg(long)]
    pub command: Option<String>,
    /// A cron expression ("0 9 * * 1-5"); or --at for once.
    #[arg(long)]
    pub schedule: Option<String>,
    /// Once, at this time ("2026-12-24 09:00" in the routine's zone).
    #[arg(long)]
    pub at: Option<String>,
    /// IANA zone (default: this machine's).
    #[arg(long)]
    pub timezone: Option<String>,
    #[arg(long)]
    pub cwd: Option<String>,
    /// Run it on another machine over SSH (a host or alias from your ssh config, or user@host).
    #[arg(long)]
    pub host: Option<String>,
    /// With `--host`: the folder it works in there.
    #[arg(long)]
    pub remote_cwd: Option<String>,
    /// Where its runs go (`hostStrategy:`): local, host (with --host) or fleet (any machine
    /// nightshift.toml lists). A routine placed elsewhere gets `devices:` naming this machine
    /// unless --device names others.
    #[arg(long)]
    pub placement: Option<String>,
    /// `worktree`: each run in a git worktree of its own (on branch nightshift/NAME/RUN-ID).
    #[arg(long)]
    pub workspace: Option<String>,
    /// With `--workspace worktree`: the branch runs start from.
    #[arg(long)]
    pub base: Option<String>,
    /// With `--workspace worktree`: the remote each run's branch is pushed to.
    #[arg(long)]
    pub push: Option<String>,
    /// plan, edit, auto or skip (agent routines).
    #[arg(long)]
    pub mode: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    /// Pin one account (its email).
    #[arg(long)]
    pub account: Option<String>,
    /// "30m", "2h"… (default 10m).
    #[arg(long)]
    pub timeout: Option<String>,
    /// always, failures or never.
    #[arg(long)]
    pub notify: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
    /// Do not catch up a slot missed while the machine slept.
    #[arg(long)]
    pub no_catchup: bool,
    /// Write it disabled (runs only by hand).
    #[arg(long)]
    pub disabled: bool,
    /// A webhook from nightshift.toml (repeatable).
    #[arg(long = "webhook")]
    pub webhooks: Vec<String>,
    /// Only on these devices (repeatable).
    #[arg(long = "device")]
    pub devices: Vec<String>,
    /// KEY=VALUE for the run's environment (repeatable).
    #[arg(long = "env", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// low, medium, high, xhigh, max or auto (agent routines).
    #[arg(long)]
    pub effort: Option<String>,
    /// A tool the agent may use — only these (repeatable; names or rules such as "Bash(git status)").
    #[arg(long = "allow-tool")]
    pub allow_tools: Vec<String>,
    /// A folder the agent may also work in (repeatable).
    #[arg(long = "allow-dir")]
    pub allow_dirs: Vec<String>,
    /// A tool the agent may never use (repeatable).
    #[arg(long = "deny-tool")]
    pub deny_tools: Vec<String>,
    /// A refused tool call fails the run (`on_denial: fail`).
    #[arg(long)]
    pub fail_on_denial: bool,
    /// What one run may spend (US dollars).
    #[arg(long)]
    pub budget_run: Option<String>,
    /// What its runs may spend in a day (US dollars).
    #[arg(long)]
    pub budget_day: Option<String>,
    /// What its runs may spend in a month (US dollars).
    #[arg(long)]
    pub budget_month: Option<String>,
    /// A stored secret its runs get as the variable of that name (repeatable).
    #[arg(long = "secret")]
    pub secrets: Vec<String>,
    /// A key of its `trigger:` — the GitHub or Linear events it runs on (repeatable):
    /// `--trigger type=github_event --trigger event=pull_request --trigger repo=acme/app`.
    #[arg(long = "trigger", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub trigger: Vec<(String, String)>,
    /// Print the YAML and its problems; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    s.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(|| format!("expected KEY=VALUE, got \"{s}\""))
}

impl NewArgs {
    fn draft(self) -> Draft {
        let text = |v: Option<String>| v.unwrap_or_default();
        Draft {
            name: self.name,
            description: text(self.description),
            agent: text(self.agent),
            prompt: text(self.prompt),
            command: text(self.command),
            account: text(self.account),
            mode: text(self.mode),
            model: text(self.model),
            cwd: text(self.cwd),
            host: text(self.host),
            remote_cwd: text(self.remote_cwd),
            placement: text(self.placement),
            workspace: text(self.workspace),
            base: text(self.base),
            push: text(self.push),
            schedule: text(self.schedule),
            at: text(self.at),
            timezone: text(self.timezone),
            end_at: String::new(),
            timeout: text(self.timeout),
            notify: text(self.notify),
            catchup: self.no_catchup.then_some(false),
            enabled: self.disabled.then_some(false),
            devices: self.devices,
            webhooks: self.webhooks,
            env: self.env.into_iter().collect(),
            effort: text(self.effort),
            allow_tools: self.allow_tools,
            allow_dirs: self.allow_dirs,
            deny_tools: self.deny_tools,
            on_denial: if self.fail_on_denial { "fail".into() } else { String::new() },
            budget_run: text(self.budget_run),
            budget_day: text(self.budget_day),
            budget_month: text(self.budget_month),
            secrets: self.secrets,
            trigger: self.trigger.into_iter().collect(),
            created_by: String::new(),
            parent_run: String::new(),
        }
    }
}

pub async fn run(engine: &Engine, cmd: RoutinesCommand) -> Result<Outcome, Error> {
    match cmd {
        RoutinesCommand::List { json } => list(engine, json),
        RoutinesCommand::Validate { files } => validate(engine, files),
        RoutinesCommand::Next { json, count } => next(engine, json, count),
        RoutinesCommand::New(args) => new(Files::Here(engine), *args).await,
        RoutinesCommand::Edit { name } => edit::edit(Files::Here(engine), &name).await,
        RoutinesCommand::Move { name, to } => {
            let there = nightshift_core::homes::client(engine, &to)?;
            let moved = nightshift_core::homes::moving::move_routine(engine, &there, &name).await?;
            println!("✓ moved {name} to {to}: it runs there now ({} on {to}); here it is in routines/.trash/{} — its history here stays", moved.file_there, moved.trash_id);
            Ok(Outcome::Ok)
        }
        RoutinesCommand::Rename { name, new_name } => {
            let w = engine.rename_routine(&name, &new_name)?;
            println!("✓ renamed {name} to {} ({}); its run history follows it", w.name, w.file);
            Ok(Outcome::Ok)
        }
        RoutinesCommand::Duplicate { name, new_name } => {
            let w = engine.duplicate_routine(&name, &new_name)?;
            println!("✓ copied {name} to {} ({})", w.name, w.file);
            Ok(Outcome::Ok)
        }
        RoutinesCommand::Remove { name } => remove(Files::Here(engine), &name).await,
        RoutinesCommand::Removed { json: as_json } => {
            let removed = engine.removed_routines()?;
            if as_json {
                json(&removed);
            } else if removed.is_empty() {
                println!("The trash is empty.");
            } else {
                let rows: Vec<Vec<String>> = removed.iter().map(|r| vec![r.id.clone(), r.name.clone(), r.removed_at.clone()]).collect();
                table(&["ID", "ROUTINE", "REMOVED"], &rows);
            }
            Ok(Outcome::Ok)
        }
        RoutinesCommand::Restore { id } => {
            let w = engine.restore_routine(&id)?;
            println!("✓ restored {} ({})", w.name, w.file);
            Ok(Outcome::Ok)
        }
        RoutinesCommand::AddProject { dir } => {
            let (dir, files) = engine.add_project(&dir)?;
            let routines = nightshift_core::routine::project_routines_dir(&dir);
            match files {
                0 => println!("✓ {} is a project; it has no routines yet (they go in {})", dir.display(), routines.display()),
                1 => println!("✓ {} is a project: its routine file in {} is read", dir.display(), routines.display()),
                n => println!("✓ {} is a project: its {n} routine files in {} are read", dir.display(), routines.display()),
            }
            Ok(Outcome::Ok)
        }
        RoutinesCommand::RemoveProject { dir } => {
            engine.remove_project(&dir)?;
            println!("✓ {}'s routines are no longer read (its files stay)", dir.display());
            Ok(Outcome::Ok)
        }
    }
}

/// `routines new`: the draft checked as the window's form checks it; problems per field, exit 2.
/// `routines new|edit|remove|validate --home NAME`: the same, on that home's files.
pub async fn there(home: &nightshift_core::homes::HomeClient, cmd: RoutinesCommand) -> Result<Outcome, Error> {
    match cmd {
        RoutinesCommand::List { json } => list_there(home, json).await,
        RoutinesCommand::New(args) => new(Files::There(home), *args).await,
        RoutinesCommand::Edit { name } => edit::edit(Files::There(home), &name).await,
        RoutinesCommand::Remove { name } => remove(Files::There(home), &name).await,
        RoutinesCommand::Validate { files } => validate_there(home, files).await,
        _ => Err(crate::homes::not_there("routines next|rename|duplicate|removed|restore|move|add-project|remove-project", &home.name)),
    }
}

async fn remove(files: Files<'_>, name: &str) -> Result<Outcome, Error> {
    let r = files.remove(name).await?;
    println!("✓ moved {name} to routines/.trash/{} — its history stays; `nightshiftctl routines restore {}` brings it back", r.id, r.id);
    Ok(Outcome::Ok)
}

/// `routines validate --home NAME [FILE…]`: files of this machine checked as that home would read
/// them (its settings, accounts, hosts) — or, without files, that home's own routines.
async fn validate_there(home: &nightshift_core::homes::HomeClient, files: Vec<PathBuf>) -> Result<Outcome, Error> {
    let mut said = Vec::new();
    let mut ok = 0;
    if files.is_empty() {
        let rows: Vec<RoutineOverview> = home.call("list_routines", serde_json::json!({})).await?;
        for r in &rows {
            said.extend(r.errors.iter().map(|e| format!("error: {e}")));
            said.extend(r.warnings.iter().cloned());
            ok += usize::from(r.valid);
        }
    } else {
        for f in &files {
            let text = std::fs::read_to_string(f).map_err(|e| Error::io("read", f, &e))?;
            let name = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let problems: Vec<nightshift_core::routine::Diagnostic> = home.call("check_new_routine_text", serde_json::json!({ "name": name, "text": text })).await?;
            let errors = problems.iter().filter(|p| p.severity == nightshift_core::routine::Severity::Error).count();
            ok += usize::from(errors == 0);
            for p in problems {
                let at = format!("{}:{}:{}", f.display(), p.line, p.col);
                said.push(match p.severity {
                    nightshift_core::routine::Severity::Error => format!("error: {at}: {}", p.message),
                    nightshift_core::routine::Severity::Warning => format!("{at}: warning: {}", p.message),
                });
            }
        }
    }
    for line in &said {
        eprintln!("{line}");
    }
    let bad = said.iter().filter(|l| l.starts_with("error: ")).count();
    if bad > 0 {
        eprintln!("{ok} valid on {}, {bad} problem{}", home.name, if bad == 1 { "" } else { "s" });
        return Ok(Outcome::Invalid);
    }
    println!("✓ {ok} routine{} valid on {}", if ok == 1 { "" } else { "s" }, home.name);
    Ok(Outcome::Ok)
}

async fn new(files: Files<'_>, args: NewArgs) -> Result<Outcome, Error> {
    let dry_run = args.dry_run;
    let draft = args.draft();
    let check = files.check_draft(&draft).await?;
    if dry_run {
        print!("{}", check.yaml);
    }
    for p in &check.problems {
        match &p.field {
            Some(field) => eprintln!("error: {field}: {}", p.message),
            None => eprintln!("error: {}", p.message),
        }
    }
    if !check.problems.is_empty() {
        return Ok(Outcome::Invalid);
    }
    if !dry_run {
        let written = files.create(&draft).await?;
        println!("✓ created {}", written.file);
    }
    if let Some(preview) = check.preview.filter(|p| !p.words.is_empty()) {
        let out: &mut dyn std::io::Write = if dry_run { &mut std::io::stderr() } else { &mut std::io::stdout() };
        let _ = writeln!(out, "{}, {}", preview.words, preview.timezone);
        for f in preview.fires.iter().take(3) {
            let _ = writeln!(out, "  next: {}  (local {})", f.in_zone, f.local);
        }
    }
    Ok(Outcome::Ok)
}

fn list(engine: &Engine, as_json: bool) -> Result<Outcome, Error> {
    let rows = nightshift_core::view::routines::overview(engine, Utc::now())?;
    print_list(rows, &engine.device_name(), &engine.home().routines_dir().display().to_string(), as_json)
}

/// `routines list --home NAME`: that home's routines, as its own `routines list` shows them.
pub async fn list_there(home: &nightshift_core::homes::HomeClient, as_json: bool) -> Result<Outcome, Error> {
    let rows: Vec<RoutineOverview> = home.call("list_routines", serde_json::json!({})).await?;
    let state: serde_json::Value = home.call("engine_state", serde_json::json!({})).await?;
    print_list(rows, state["device"].as_str().unwrap_or("?"), state["routines_dir"].as_str().unwrap_or("its routines folder"), as_json)
}

fn print_list(rows: Vec<RoutineOverview>, device: &str, routines_dir: &str, as_json: bool) -> Result<Outcome, Error> {
    let now = Utc::now();
    if as_json {
        json(&rows);
        return Ok(Outcome::Ok);
    }
    if rows.is_empty() {
        println!("No routines yet — add a YAML file to {routines_dir} (or run `nightshiftctl init` for examples).");
        return Ok(Outcome::Ok);
    }
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
            let kind = match (r.hosts.is_empty(), r.sandbox_off) {
                (true, false) => r.kind.map_or("-", |k| k.as_str()).to_string(),
                (true, true) => format!("{} · sandbox off", r.kind.map_or("-", |k| k.as_str())),
                (false, _) => format!("{} on {}", r.kind.map_or("-", |k| k.as_str()), r.hosts.join("|")),
            };
            vec![
                r.name.clone(),
                match &r.created_by {
                    Some(by) => format!("{kind} · by an agent ({by})"),
                    None => kind,
                },
                match (&r.schedule, &r.timezone, &r.trigger) {
                    (Some(s), Some(tz), Some(on)) => format!("{s} {tz} · on {on}"),
                    (Some(s), Some(tz), None) => format!("{s} {tz}"),
                    (_, _, Some(on)) => format!("on {on}"),
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
    for r in rows.iter().filter(|r| r.scheduled_by.is_some()) {
        eprintln!("note: {}: {}", r.name, r.scheduled_by.as_deref().unwrap_or(""));
    }
    for r in rows.iter().filter(|r| !r.valid) {
        for e in &r.errors {
            eprintln!("error: {e}");
        }
    }
    for w in rows.iter().flat_map(|r| &r.warnings) {
        eprintln!("{w}");
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
        nightshift_core::routine::with_settings(load_files(engine.home(), &files), &engine.settings(), engine.home())
    };
    let problems: Vec<String> = set.diagnostics().map(ToString::to_string).collect();
    // Errors and warnings in one list, in file order; a warning says so itself ("…: warning: …").
    let mut said: Vec<&nightshift_core::routine::Diagnostic> = set.diagnostics().chain(set.warnings()).collect();
    said.sort_by(|a, b| (&a.file, a.line, a.col).cmp(&(&b.file, b.line, b.col)));
    for d in &said {
        match d.severity {
            nightshift_core::routine::Severity::Error => eprintln!("error: {d}"),
            nightshift_core::routine::Severity::Warning => eprintln!("{d}"),
        }
    }
    let warnings = set.warnings().count();
    let warned = match warnings {
        0 => String::new(),
        1 => ", 1 warning".to_string(),
        n => format!(", {n} warnings"),
    };
    let (ok, bad) = (set.routines.len(), set.invalid.len());
    if bad > 0 {
        eprintln!("{ok} valid, {bad} invalid ({} problem{}{warned})", problems.len(), if problems.len() == 1 { "" } else { "s" });
        return Ok(Outcome::Invalid);
    }
    println!("✓ {ok} routine{} valid{warned}", if ok == 1 { "" } else { "s" });
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
            let fires = r.upcoming(now, count);
            NextRow {
                name: r.name.clone(),
                timezone: r.timezone.name().to_string(),
                enabled: r.enabled,
                fires_local_to_routine: fires.iter().map(|t| t.with_timezone(&r.timezone).format("%Y-%m-%d %H:%M:%S %Z").to_string()).collect(),
                fires: fires.iter().map(nightshift_core::words::fmt_time).collect(),
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
            let t = nightshift_core::words::parse_time(utc).expect("we formatted it");
            println!("  {zoned:<28}  local {}  ({})", format::local(&t), format::relative(&t, now));
        }
    }
    Ok(Outcome::Ok)
}
