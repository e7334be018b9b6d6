//! `nightshiftctl runs | show | report | logs`

use crate::format::{self, json, table};
use crate::Outcome;
use clap::Args;
use nightshift_core::run::RunStatus;
use nightshift_core::records::{Delivery, RunQuery};
use nightshift_core::{Engine, Error, ErrorCode};
use std::io::Write;
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

pub fn runs(engine: &Engine, args: RunsArgs) -> Result<Outcome, Error> {
    let status = match args.status.as_deref() {
        None => None,
        Some(s) => Some(RunStatus::parse(s).ok_or_else(|| {
            let all: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
            Error::new(ErrorCode::Usage, format!("unknown status \"{s}\" (expected one of {})", all.join(", ")))
        })?),
    };
    let page = engine.runs(&RunQuery { routine: args.routine.clone(), status, cursor: args.cursor, limit: args.limit })?;
    if args.json {
        json(&page.runs);
        return Ok(Outcome::Ok);
    }
    if page.runs.is_empty() {
        println!("No runs yet{}. Start one with `nightshiftctl run NAME --wait`.", args.routine.map(|r| format!(" of {r}")).unwrap_or_default());
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
    if let Some(by) = &r.made_up_by {
        println!("made up by   {by} (the account worked again)");
    }
    if let Some(n) = &r.notified {
        let why = match n.as_str() {
            "not_delivered" => engine.notification_error(&r.id)?.map(|e| format!(" ({e})")).unwrap_or_default(),
            "pending" => " (sent by the Nightshift app or `nightshiftctl daemon --notify`)".to_string(),
            _ => String::new(),
        };
        println!("notification {}{why}", n.as_str().replace('_', " "));
    }
    if let Some(t) = r.due_at.filter(|_| r.status == nightshift_core::run::RunStatus::Queued) {
        println!("starts at    {} (waiting; `nightshiftctl run {}` starts it now, `nightshiftctl cancel {}` drops it)", format::local(&t), r.routine, r.id);
    }
    for d in &r.denials {
        println!("refused      {}", d.words());
    }
    for (i, a) in r.attempts.iter().enumerate() {
        let reason = a.reason.map(|x| format!(" {x}")).unwrap_or_default();
        let when = a.started_at.map(|t| format!(" · {}", format::local(&t))).unwrap_or_default();
        let next = a.next_at.map(|t| format!(" · next try at {}", format::local(&t))).unwrap_or_default();
        println!("attempt {}    {} {}{reason}{when}{next} · {}", i + 1, opt(a.account.clone()), a.status, opt(a.message.clone()));
    }
    for d in engine.deliveries_of(&r.id)? {
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
    let r = engine.run(id)?;
    match &r.report_path {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", std::path::Path::new(path), &e))?;
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
            Ok(Outcome::Ok)
        }
        None => {
            if let Some(t) = r.pruned_at {
                return Err(Error::new(ErrorCode::Usage, format!("run {} has no report any more: its files were removed {} by retention", r.id, format::local(&t))));
            }
            let why = match (&r.status, &r.message) {
                (RunStatus::Completed, _) => "it completed without output".to_string(),
                (RunStatus::Running | RunStatus::Queued, _) => format!("it is still {}", r.status),
                (s, Some(m)) => format!("it ended {s}: {m}"),
                (s, None) => format!("it ended {s}"),
            };
            Err(Error::new(ErrorCode::Usage, format!("run {} has no report: {why}", r.id)))
        }
    }
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
