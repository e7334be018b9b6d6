//! `nightshiftctl runs | show | report | logs`

use crate::format::{self, json, table};
use crate::Outcome;
use clap::Args;
use nightshift_core::run::RunStatus;
use nightshift_core::homes::HomeClient;
use nightshift_core::records::{Delivery, DeliveryRow, Page, RunQuery};
use nightshift_core::run::RunRecord;
use nightshift_core::{Engine, Error, ErrorCode};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

#[derive(Args)]
pub struct RunsArgs {
    /// Only this routine's runs.
    #[arg(long)]
    routine: Option<String>,
    /// Only runs with this status (queued, running, completed, failed, timed_out, cancelled, blocked, missed, skipped).
    #[arg(long)]
    status: Option<String>,
    #[arg(long, default_value_t = 20)]
    limit: usize,
    /// Continue after a previous page (printed at the end of it).
    #[arg(long)]
    cursor: Option<String>,
    /// A JSON array of run records.
    #[arg(long)]
    json: bool,
}

/// The status asked for, checked (the same words on every home).
fn status_arg(args: &RunsArgs) -> Result<Option<RunStatus>, Error> {
    match args.status.as_deref() {
        None => Ok(None),
        Some(s) => Ok(Some(RunStatus::parse(s).ok_or_else(|| {
            let all: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
            Error::new(ErrorCode::Usage, format!("unknown status \"{s}\" (expected one of {})", all.join(", ")))
        })?)),
    }
}

pub fn runs(engine: &Engine, args: RunsArgs) -> Result<Outcome, Error> {
    let status = status_arg(&args)?;
    let page = engine.runs(&RunQuery { routine: args.routine.clone(), status, cursor: args.cursor.clone(), limit: args.limit })?;
    print_runs(page, &args)
}

/// `runs --home NAME`: the same page, from that home's `serve`.
pub async fn runs_there(home: &HomeClient, args: RunsArgs) -> Result<Outcome, Error> {
    let status = status_arg(&args)?;
    let page: Page = home.call("list_runs", serde_json::json!({ "routine": args.routine, "status": status, "cursor": args.cursor, "limit": args.limit })).await?;
    print_runs(page, &args)
}

fn print_runs(page: Page, args: &RunsArgs) -> Result<Outcome, Error> {
    if args.json {
        json(&page.runs);
        return Ok(Outcome::Ok);
    }
    if page.runs.is_empty() {
        println!("No runs yet{}. Start one with `nightshiftctl run NAME --wait`.", args.routine.as_ref().map(|r| format!(" of {r}")).unwrap_or_default());
        return Ok(Outcome::Ok);
    }
    let rows: Vec<Vec<String>> = page
        .runs
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.routine.clone(),
                r.trigger.to_string(),
                format!("{} {}", format::symbol(r.status), format::status_text(r)),
                r.started_at.or(r.scheduled_for).map(|t| format::local(&t)).unwrap_or_default(),
                r.duration_ms.map(format::duration_ms).unwrap_or_else(|| "-".into()),
                format::cost(r.cost_usd),
            ]
        })
        .collect();
    table(&["ID", "ROUTINE", "TRIGGER", "STATUS", "STARTED", "DURATION", "COST"], &rows);
    // Waiting runs say why, and who will start them.
    for r in page.runs.iter().filter(|r| r.status == RunStatus::Queued) {
        if let Some(m) = &r.message {
            println!("{} {}: {m}", format::symbol(r.status), r.id);
        }
    }
    if let Some(c) = page.next_cursor {
        eprintln!("(more: --cursor {c})");
    }
    Ok(Outcome::Ok)
}

pub fn show(engine: &Engine, id: &str, as_json: bool) -> Result<Outcome, Error> {
    let r = engine.run(id)?;
    let deliveries = engine.deliveries_of(&r.id)?;
    let not_delivered = match r.notified {
        Some(Delivery::NotDelivered) => engine.notification_error(&r.id)?,
        _ => None,
    };
    let asks = engine.asks_of(&r.id)?;
    let approved_by = engine.rerun_words(&r);
    print_run(r, &deliveries, &asks, approved_by, not_delivered, as_json)
}

/// `show --home NAME`: the same run, from that home's `serve` (its window's run detail).
pub async fn show_there(home: &HomeClient, id: &str, as_json: bool) -> Result<Outcome, Error> {
    let mut detail: serde_json::Value = home.call("get_run", serde_json::json!({ "id": id })).await?;
    let unreadable = |e: serde_json::Error| Error::new(ErrorCode::Io, format!("home \"{}\" answered a run this Nightshift cannot read ({e})", home.name));
    let r: RunRecord = serde_json::from_value(detail["run"].take()).map_err(unreadable)?;
    let deliveries: Vec<DeliveryRow> = serde_json::from_value(detail["deliveries"].take()).map_err(unreadable)?;
    // (A home of an earlier release has no asks to say.)
    let asks: Vec<nightshift_core::records::Ask> = serde_json::from_value(detail["asks"].take()).unwrap_or_default();
    print_run(r, &deliveries, &asks, None, None, as_json)
}

fn print_run(r: RunRecord, deliveries: &[DeliveryRow], asks: &[nightshift_core::records::Ask], approved_by: Option<String>, not_delivered: Option<String>, as_json: bool) -> Result<Outcome, Error> {
    if as_json {
        json(&r);
        return Ok(Outcome::Ok);
    }
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    println!("{} {} · {}", format::symbol(r.status), r.routine, format::status_text(&r));
    if let Some(m) = &r.message {
        println!("  {m}");
    }
    if let Some(fix) = nightshift_core::view::explain::explain(&r).fix.filter(|_| r.status.is_final()) {
        println!("  fix: {fix}");
    }
    println!("id           {}", r.id);
    println!("agent        {}", r.agent);
    println!("trigger      {}", r.trigger);
    println!("scheduled    {}", opt(r.scheduled_for.map(|t| format::local(&t))));
    println!("started      {}", opt(r.started_at.map(|t| format::local(&t))));
    println!("finished     {}", opt(r.finished_at.map(|t| format::local(&t))));
    println!("duration     {}", opt(r.duration_ms.map(format::duration_ms)));
    println!("exit code    {}", opt(r.exit_code.map(|c| c.to_string())));
    println!("account      {}", opt(r.account.clone()));
    if let Some(place) = r.place() {
        println!("host         {place}");
    }
    if r.here {
        println!("devices      run here by hand (`--here`) although its `devices:` does not list this machine");
    }
    if let Some(url) = &r.remote_url {
        println!("see          {url}");
    }
    if let Some(t) = r.resets_at {
        println!("resets at    {}", format::local(&t));
    }
    println!("cost         {}", format::cost(r.cost_usd));
    if let Some(u) = &r.usage {
        println!("tokens       {}", format::usage(u));
    }
    println!("session      {}", opt(r.session_id.clone()));
    println!("report       {}", opt(r.report_path.clone()));
    println!("run dir      {}", r.run_dir);
    if let Some(t) = r.pruned_at {
        println!("files        removed {} by retention (keep_runs_days, keep_runs_per_routine); this record stays", format::local(&t));
    }
    if let Some(c) = &r.changes {
        crate::workspaces::print_changes(c, &r.id);
    }
    if let Some(pr) = &r.pull_request {
        crate::workspaces::print_pull_request(pr);
    }
    if let Some(by) = &r.made_up_by {
        println!("made up by   {by} (the account worked again)");
    }
    if let Some(n) = &r.notified {
        let why = match n.as_str() {
            "not_delivered" => not_delivered.as_ref().map(|e| format!(" ({e})")).unwrap_or_default(),
            "pending" => " (sent by the Nightshift app or `nightshiftctl daemon --notify`)".to_string(),
            _ => String::new(),
        };
        println!("notification {}{why}", n.as_str().replace('_', " "));
    }
    if let Some(t) = r.due_at.filter(|_| r.status == nightshift_core::run::RunStatus::Queued) {
        println!("starts at    {} (waiting; `nightshiftctl run {}` starts it now, `nightshiftctl cancel {}` drops it)", format::local(&t), r.routine, r.id);
    }
    if let Some(sandbox) = nightshift_core::sandbox::words_of(Path::new(&r.run_dir)) {
        println!("sandbox      {sandbox}");
    }
    for d in &r.denials {
        println!("refused      {}", d.words());
    }
    if let Some(words) = approved_by {
        println!("approved     {words}");
    }
    for a in asks {
        println!("asked        {}", nightshift_core::engine::ask_outcome(a, nightshift_core::schedule::local_tz()));
    }
    for (i, a) in r.attempts.iter().enumerate() {
        let reason = a.reason.map(|x| format!(" {x}")).unwrap_or_default();
        let when = a.started_at.map(|t| format!(" · {}", format::local(&t))).unwrap_or_default();
        let next = a.next_at.map(|t| format!(" · next try at {}", format::local(&t))).unwrap_or_default();
        // What it did before it ended, and whose session it continued.
        let work = (a.work > 0).then(|| format!(" · {} tool call{} that change things", a.work, if a.work == 1 { "" } else { "s" })).unwrap_or_default();
        let resumed = a.resumed.as_ref().map(|s| format!(" · resumed session {s}")).unwrap_or_default();
        println!("attempt {}    {} {}{reason}{when}{next}{work}{resumed} · {}", i + 1, opt(a.account.clone()), a.status, opt(a.message.clone()));
    }
    for d in deliveries {
        let name = match (&d.webhook, d.ping) {
            (Some(name), _) => format!("webhook      {name}"),
            (None, Some(event)) => format!("ping         {event}"),
            _ => continue,
        };
        let how = match d.state {
            Delivery::Delivered => format!("delivered {}", opt(d.delivered_at.clone())),
            Delivery::Pending if d.attempts == 0 => "pending (sent by the Nightshift app or `nightshiftctl daemon`)".to_string(),
            Delivery::Pending => format!("pending: try {} failed ({}); next {}", d.attempts, opt(d.last_error.clone()), opt(d.next_at.map(|t| format::local(&t)))),
            other => format!("{} after {} tr{}: {}", other.as_str().replace('_', " "), d.attempts + 1, if d.attempts == 0 { "y" } else { "ies" }, opt(d.last_error.clone())),
        };
        println!("{name}: {how}");
    }
    Ok(Outcome::Ok)
}

pub fn report(engine: &Engine, id: &str) -> Result<Outcome, Error> {
    print_report(&engine.report_text(id)?)
}

/// `report --home NAME`: the run's report there (secrets masked, as its window shows it).
pub async fn report_there(home: &HomeClient, id: &str) -> Result<Outcome, Error> {
    print_report(&home.call::<String>("run_report", serde_json::json!({ "id": id })).await?)
}

fn print_report(text: &str) -> Result<Outcome, Error> {
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
    Ok(Outcome::Ok)
}

/// The run's output through the same log view as the window (secrets masked, a chunk at a time),
/// following a live run to its end.
pub async fn logs(engine: &Engine, id: &str, follow: bool, stderr: bool) -> Result<Outcome, Error> {
    use nightshift_core::view::log::{run_log, LogStream};
    let id = engine.run(id)?.id;
    let stream = if stderr { LogStream::Stderr } else { LogStream::Stdout };
    let mut offset = 0u64;
    let mut out = std::io::stdout().lock();
    loop {
        // Everything there is now (the view hands it out in bounded chunks).
        let ended = engine.run(&id)?.status.is_final();
        loop {
            let chunk = run_log(engine, &id, stream, offset, false)?;
            let _ = out.write_all(chunk.raw.unwrap_or_default().as_bytes());
            let _ = out.flush();
            if chunk.next_offset == offset || chunk.next_offset >= chunk.size {
                offset = chunk.next_offset;
                break;
            }
            offset = chunk.next_offset;
        }
        if !follow || ended {
            break;
        }
        // A run started without --wait has no live supervisor; settle it once its process is gone.
        let _ = engine.recover(nightshift_core::RecoveryMode::SettleFinished).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    Ok(Outcome::Ok)
}

/// `logs --home NAME [--follow]`: the run's output there, through its window's log view.
pub async fn logs_there(home: &HomeClient, id: &str, follow: bool, stderr: bool) -> Result<Outcome, Error> {
    let stream = if stderr { "stderr" } else { "stdout" };
    let run: serde_json::Value = home.call("get_run", serde_json::json!({ "id": id })).await?;
    let id = run["run"]["id"].as_str().unwrap_or(id).to_string();
    let mut offset = 0u64;
    let mut out = std::io::stdout().lock();
    loop {
        let detail: serde_json::Value = home.call("get_run", serde_json::json!({ "id": id })).await?;
        let ended = detail["run"]["status"].as_str().and_then(RunStatus::parse).is_none_or(|s| s.is_final());
        loop {
            let chunk: serde_json::Value = home.call("read_log", serde_json::json!({ "id": id, "stream": stream, "offset": offset, "readable": false })).await?;
            let _ = out.write_all(chunk["raw"].as_str().unwrap_or("").as_bytes());
            let _ = out.flush();
            let (next, size) = (chunk["next_offset"].as_u64().unwrap_or(offset), chunk["size"].as_u64().unwrap_or(0));
            let done = next == offset || next >= size;
            offset = next;
            if done {
                break;
            }
        }
        if !follow || ended {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(Outcome::Ok)
}


