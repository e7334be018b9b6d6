//! `nightshiftctl run NAME [--wait] [--json] [--wait-for-limit]`

use crate::format::{self, json};
use crate::Outcome;
use clap::Args;
use nightshift_core::words::first_line;
use nightshift_core::events::EngineEvent;
use nightshift_core::run::PushState;
use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::homes::HomeClient;
use nightshift_core::{Engine, Error};
use std::io::IsTerminal;

#[derive(Args)]
pub struct RunArgs {
    /// The routine to run.
    name: String,
    /// Wait for the run to end; exit 0 if it completed, 1 otherwise. Ctrl-C cancels the run.
    #[arg(long)]
    wait: bool,
    /// Print the run record as JSON (the final one with --wait).
    #[arg(long)]
    json: bool,
    /// With --wait: also send the desktop finish notification.
    #[arg(long)]
    notify: bool,
    /// Should the run meet a rate limit with no other account free, wait for the limit's reset
    /// (at most the routine's `max_wait`) and run then, instead of failing. Scheduled runs always
    /// do; without this a manual run says when the limit resets.
    #[arg(long)]
    wait_for_limit: bool,
    /// Start it although a day's or month's budget (`budget:`, `[budget]`, an account's) is
    /// spent — for a person at the keyboard. The run's own cap (`budget.run`) still holds.
    #[arg(long)]
    ignore_budget: bool,
    /// Run it on this machine although its `devices:` does not list it (recorded on the run).
    #[arg(long)]
    here: bool,
}

pub async fn run(engine: &Engine, args: RunArgs) -> Result<Outcome, Error> {
    let live = std::io::stderr().is_terminal();
    let mut events = engine.subscribe();
    // Ctrl-C is listened for before the run starts: pressed while it starts, it still cancels it
    // (the default action would end this command and leave the run going).
    let mut interrupts = match args.wait {
        true => Some(tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).map_err(|e| Error::new(nightshift_core::ErrorCode::Io, format!("cannot listen for Ctrl-C: {e}")))?),
        false => None,
    };
    // Its agent reaches Nightshift's MCP tools through the run's own socket while this waits.
    let _tools = args.wait.then(|| nightshift_core::mcp::per_run::offer_to_runs(engine));
    let handle = engine.run_now_with(&args.name, Trigger::Cli, nightshift_core::run::RunAsks { wait_for_limit: args.wait_for_limit, ignore_budget: args.ignore_budget, here: args.here }).await?;
    let id = handle.id.clone();

    if !args.wait {
        // A run still waiting for a lane outlives this command as a queued row: say who starts it.
        let waiting = engine.hand_off_queued()? > 0;
        let record = engine.run(&id)?;
        if args.json {
            json(&record);
        } else {
            println!("{id}");
            if waiting && record.status == RunStatus::Queued {
                eprintln!("queued {} (run {id}): {}", args.name, record.message.as_deref().unwrap_or(""));
            } else {
                eprintln!("started {} (run {id}); follow it with `nightshiftctl logs {id} --follow`", args.name);
            }
        }
        return Ok(Outcome::Ok);
    }

    if live {
        eprintln!("▶ {} started (run {id})", args.name);
    }
    if args.notify {
        // What is news while it waits: the run starting to wait for a limit, or asking before a
        // call (its Approve and Deny answer it here).
        engine.enable_live_notices(crate::answering_notifier(engine));
    }
    // Live progress (API retries, rate limits…) while we wait, on a terminal; and, wherever
    // stderr goes, a try that failed and waits for its next: the wait is never silent.
    let progress_id = id.clone();
    let progress = tokio::spawn(async move {
        let mut said = String::new();
        while let Ok(ev) = events.recv().await {
            match ev {
                EngineEvent::RunQueued { run } if run.id == progress_id => {
                    if let Some(note) = run.message.filter(|m| *m != said) {
                        eprintln!("  … {note} — this command waits and starts it then (Ctrl-C cancels the run)");
                        said = note;
                    }
                }
                EngineEvent::RunProgress { run_id, message, .. } if live && run_id == progress_id && message != said => {
                    eprintln!("  … {message}");
                }
                _ => {}
            }
        }
    });
    let cancel_engine = engine.clone();
    let cancel_id = id.clone();
    let ctrl_c = tokio::spawn(async move {
        let Some(interrupts) = interrupts.as_mut() else { return };
        if interrupts.recv().await.is_some() {
            eprintln!("cancelling run {cancel_id} (Ctrl-C again to stop waiting; the run then continues in the background)");
            cancel_engine.cancel(&cancel_id).await;
            if interrupts.recv().await.is_some() {
                std::process::exit(130);
            }
        }
    });
    let record = handle.wait().await?;
    progress.abort();
    ctrl_c.abort();
    if args.notify {
        // Once, before exiting (bounded); what is not shown is owed to the next notifier.
        engine.deliver_notifications_now(crate::desktop_notifier()).await;
    }
    // Its webhooks too (bounded: a slow receiver does not hold the command; what is left is owed
    // to the app or the daemon).
    engine.deliver_webhooks_now(std::time::Duration::from_secs(15)).await;
    // A worktree run's branch: one push now (bounded); a failure is retried by the app or the
    // daemon, or with `nightshiftctl push`.
    let record = match record.changes.as_ref().and_then(|c| c.push.as_ref()) {
        Some(p) if p.state == PushState::Pending => {
            engine.push_branches_now().await;
            engine.run(&record.id).unwrap_or(record)
        }
        _ => record,
    };

    let report = record.report_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).map(|r| first_line(&r, 140));
    say_ended(&record, &args, report);
    Ok(if record.status == RunStatus::Completed { Outcome::Ok } else { Outcome::RunNotCompleted })
}

/// How a waited-for run ended: the record as JSON, or its verdict, changes, push and report's
/// first line in words.
fn say_ended(record: &nightshift_core::run::RunRecord, args: &RunArgs, report: Option<String>) {
    let id = &record.id;
    if args.json {
        json(record);
        return;
    }
    let took = record.duration_ms.map(format::duration_ms).unwrap_or_default();
    let cost = record.cost_usd.filter(|c| *c > 0.0).map(|c| format!(" · ${c:.4}")).unwrap_or_default();
    eprintln!("{} {} {} in {took}{cost}", format::symbol(record.status), args.name, format::status_text(record));
    if let Some(msg) = &record.message {
        eprintln!("  {msg}");
    }
    if let Some(c) = &record.changes {
        eprintln!("  {}", c.summary());
        if let Some(p) = c.push.as_ref().filter(|p| p.state != PushState::Nothing) {
            let how = match p.state {
                PushState::Pushed => "pushed".to_string(),
                _ => format!("not pushed yet ({}); retried by the app or the daemon, or `nightshiftctl push {id}`", p.error.as_deref().unwrap_or("pending")),
            };
            eprintln!("  push to {}: {how}", p.remote);
        }
    }
    if let Some(line) = report.filter(|l| !l.is_empty()) {
        eprintln!("  report: {line}   (nightshiftctl report {id})");
    }
}

/// `run NAME --home HOME [--wait]`: started by that home's engine (as its window's Run now), and
/// with `--wait` followed there to its end. Ctrl-C stops waiting; the run goes on there.
pub async fn run_there(home: &HomeClient, args: RunArgs) -> Result<Outcome, Error> {
    if args.wait_for_limit || args.ignore_budget || args.notify || args.here {
        return Err(Error::new(nightshift_core::ErrorCode::Usage, "--wait-for-limit, --ignore-budget, --here and --notify are not passed to another home yet; run it there, or without them"));
    }
    let id: String = home.call("run_now", serde_json::json!({ "name": args.name })).await?;
    if !args.wait {
        if args.json {
            let detail: serde_json::Value = home.call("get_run", serde_json::json!({ "id": id })).await?;
            json(&detail["run"]);
        } else {
            println!("{id}");
            eprintln!("started {} on {} (run {id}); follow it with `nightshiftctl logs {id} --follow --home {}`", args.name, home.name, home.name);
        }
        return Ok(Outcome::Ok);
    }
    if std::io::stderr().is_terminal() {
        eprintln!("▶ {} started on {} (run {id})", args.name, home.name);
    }
    let record = loop {
        let mut detail: serde_json::Value = home.call("get_run", serde_json::json!({ "id": id })).await?;
        let record: nightshift_core::run::RunRecord = serde_json::from_value(detail["run"].take())
            .map_err(|e| Error::new(nightshift_core::ErrorCode::Io, format!("home \"{}\" answered a run this Nightshift cannot read ({e})", home.name)))?;
        if record.status.is_final() {
            break record;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    // (Its report is on that machine: `nightshiftctl show ID --home …` says where.)
    say_ended(&record, &args, None);
    Ok(if record.status == RunStatus::Completed { Outcome::Ok } else { Outcome::RunNotCompleted })
}

/// `cancel RUN_ID --home HOME`: asked of that home's engine, as its window's Cancel.
pub async fn cancel_there(home: &HomeClient, id: &str) -> Result<Outcome, Error> {
    let mut detail: serde_json::Value = home.call("get_run", serde_json::json!({ "id": id })).await?;
    let record: nightshift_core::run::RunRecord = serde_json::from_value(detail["run"].take())
        .map_err(|e| Error::new(nightshift_core::ErrorCode::Io, format!("home \"{}\" answered a run this Nightshift cannot read ({e})", home.name)))?;
    if record.status.is_final() {
        return Err(Error::new(nightshift_core::ErrorCode::Usage, format!("run {} of {} already ended ({})", record.id, record.routine, record.status.label())));
    }
    let cancelled: bool = home.call("cancel_run", serde_json::json!({ "id": record.id })).await?;
    if !cancelled {
        return Err(Error::new(nightshift_core::ErrorCode::Usage, format!("run {} of {} ended before it could be cancelled", record.id, record.routine)));
    }
    eprintln!("cancelled {} on {}", record.routine, home.name);
    println!("{}", record.id);
    Ok(Outcome::Ok)
}

/// `nightshiftctl cancel RUN_ID`: a queued run (waiting for a lane, a retry or a limit's reset)
/// is dropped — final, `cancelled`, its tries kept. A running run belongs to the process that
/// follows it; this says where to stop it.
pub async fn cancel(engine: &Engine, id: &str) -> Result<Outcome, Error> {
    let record = engine.run(id)?;
    if record.status.is_final() {
        return Err(Error::new(nightshift_core::ErrorCode::Usage, format!("run {} of {} already ended ({})", record.id, record.routine, record.status.label())));
    }
    if engine.cancel(&record.id).await {
        let after = engine.run(&record.id)?;
        eprintln!("{} {} {}", format::symbol(after.status), record.routine, format::status_text(&after));
        println!("{}", record.id);
        return Ok(Outcome::Ok);
    }
    Err(Error::new(
        nightshift_core::ErrorCode::Usage,
        format!(
            "run {} of {} is running under another Nightshift process; stop it there (Ctrl-C in its `nightshiftctl run --wait`, Cancel in the window, or by stopping that app or daemon)",
            record.id, record.routine
        ),
    ))
}
