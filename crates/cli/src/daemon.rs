//! `nightshiftctl daemon [--json]`: the scheduler in the foreground, printing engine events.

use crate::format;
use crate::Outcome;
use nightshift_core::events::EngineEvent;
use nightshift_core::{Engine, Error, RecoveryMode, Scheduler, SchedulerLock};
use std::sync::Arc;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::Notify;

pub async fn daemon(engine: Engine, json: bool, notify: bool) -> Result<Outcome, Error> {
    // Never schedule on a damaged database (it would lose or repeat runs); say which and why.
    engine.check_database()?;
    // One scheduler per home; say who has it otherwise.
    let _lock = SchedulerLock::acquire(engine.home(), "nightshiftctl daemon")?;
    if notify {
        crate::enable_desktop_notifications(&engine);
    }
    // Other homes' finishes too (`[[homes]]`), each told once here.
    let _viewers = notify.then(|| nightshift_core::homes::viewer::start(&engine, crate::desktop_notifier()));
    // Webhooks need no desktop: the daemon always delivers them.
    engine.enable_webhooks();
    let mut events = engine.subscribe();
    let adopted = engine.recover(RecoveryMode::Adopt).await?;
    // `[serve] listen`: the window and other homes' viewers, beside the scheduler.
    nightshift_core::serve::serve_as_configured(&engine, Arc::new(nightshift_core::serve::SchedulesHere)).await;
    // Its runs' agents reach Nightshift's MCP tools through the run's own socket.
    let _tools = nightshift_core::mcp::per_run::offer_to_runs(&engine);
    let sched = Scheduler::new(engine.clone());
    if !json {
        // Only for the banner: dropped at once (a copy of every routine held for the daemon's
        // whole life doubled its resident memory).
        let set = sched.routines();
        println!(
            "nightshift daemon: scheduling {} routine{} from {} (pid {}); SIGTERM or Ctrl-C stops",
            set.routines.len(),
            if set.routines.len() == 1 { "" } else { "s" },
            engine.home().routines_dir().display(),
            std::process::id()
        );
        for e in set.diagnostics() {
            println!("✗ invalid: {e}");
        }
        if !adopted.is_empty() {
            println!("↺ settled or re-adopted {} run(s) left by a previous engine", adopted.len());
        }
    }
    let printer = tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(ev) => print_event(&ev, json),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => eprintln!("(missed {n} events)"),
                Err(_) => break,
            }
        }
    });

    let shutdown = Arc::new(Notify::new());
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        stop.notify_one();
    });
    // The first pass now (the loop's own first pass then finds nothing new), so what start-up
    // allocated and dropped can be handed back before the daemon settles into idling.
    if let Err(e) = sched.tick().await {
        tracing::warn!(error = %e, "the first scheduler pass failed; the loop retries");
    }
    nightshift_core::allocator::release_freed();
    // The home's long-lived parts: the receiver, the housekeeper, the usage probe, the GitHub
    // poller and the scheduler's loop.
    nightshift_core::daemon::run(&engine, sched, shutdown).await;
    printer.abort();
    let running = engine.running_count().unwrap_or(0);
    if !json {
        if running > 0 {
            println!("stopped scheduling; {running} run(s) keep going and are re-adopted at the next start");
        } else {
            println!("stopped scheduling");
        }
    }
    Ok(Outcome::Ok)
}

/// Print one event. Output errors (a closed pipe) are ignored: printing never stops scheduling.
fn print_event(ev: &EngineEvent, json: bool) {
    use std::io::Write;
    let line = render_event(ev, json);
    if let Some(line) = line {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|_| out.flush());
    }
}

fn render_event(ev: &EngineEvent, json: bool) -> Option<String> {
    if json {
        return serde_json::to_string(ev).ok();
    }
    let now = chrono::Local::now().format("%H:%M:%S");
    Some(match ev {
        EngineEvent::RunQueued { run } => format!("{now} … {} queued ({})", run.routine, run.message.as_deref().unwrap_or("")),
        EngineEvent::RunStarted { run } => format!("{now} ▶ {} started ({}, run {})", run.routine, run.trigger, run.id),
        EngineEvent::RunProgress { routine, message, .. } => format!("{now}   {routine}: {message}"),
        EngineEvent::RunFinished { run } => {
            let took = run.duration_ms.map(|d| format!(" in {}", format::duration_ms(d))).unwrap_or_default();
            let msg = run.message.as_deref().map(|m| format!(" — {m}")).unwrap_or_default();
            format!("{now} {} {} {}{took}{msg}", format::symbol(run.status), run.routine, format::status_text(run))
        }
        EngineEvent::RunUpdated { run } => match run.changes.as_ref().and_then(|c| c.push.as_ref()) {
            Some(p) if p.state == nightshift_core::run::PushState::Pushed => format!("{now} ↑ {} pushed its branch to {} (run {})", run.routine, p.remote, run.id),
            Some(p) => format!("{now} ✗ {}: push to {} {} ({})", run.routine, p.remote, p.state, p.error.as_deref().unwrap_or("")),
            None => return None,
        },
        EngineEvent::RoutinesChanged => format!("{now} ↻ routines reloaded"),
        EngineEvent::AccountsChanged => format!("{now} ⚿ account health changed (nightshiftctl accounts list)"),
        EngineEvent::RoutinePaused { routine, reason } => format!("{now} ⏸ {routine}: {reason}"),
        EngineEvent::ReviewLoopEnded { routine, pull, why } => format!("{now} ✋ {routine}: no more review rounds on {pull}: {why}"),
        EngineEvent::AccountNotice { summary, body, .. } => format!("{now} {summary}: {body}"),
        EngineEvent::WebhookFailed { webhook, run_id, routine, error } => format!("{now} ✗ webhook {webhook} could not post {routine} (run {run_id}): {error}"),
        // The progress line says the run waits; this says how to answer.
        EngineEvent::ApprovalAsked { run_id, routine, .. } => format!("{now} ? {routine} waits for approval: nightshiftctl approve {run_id} (or deny {run_id})"),
        // The progress line says the answer.
        EngineEvent::ApprovalAnswered { .. } => return None,
        EngineEvent::EngineState { .. } => return None,
    })
}
