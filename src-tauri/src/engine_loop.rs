//! The engine's side of the running app: recovery at start, the scheduler (if this home is not
//! scheduled elsewhere), engine events on to the tray and the window, and SIGTERM.

use crate::shell::Shell;
use nightshift_core::engine::NotTaken;
use nightshift_core::{Engine, EngineEvent, RecoveryMode, Scheduler, SchedulerLock};
use std::sync::Arc;

/// Recovery, then the scheduler; the tray follows the engine's events throughout.
pub async fn run(shell: Arc<Shell>) {
    let engine = shell.engine.clone();
    match engine.recover(RecoveryMode::Adopt).await {
        Ok(ids) if !ids.is_empty() => tracing::info!(count = ids.len(), "settled or re-adopted runs left by a previous engine"),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "crash recovery failed"),
    }
    // The agents of the runs this app starts reach Nightshift's MCP tools through each run's
    // own socket, for the app's whole life (the task is detached, not stopped, with its handle).
    drop(nightshift_core::mcp::per_run::offer_to_runs(&engine));
    forward_events_to_window(&shell, &engine);
    follow_in_tray(&shell, &engine);
    // `[serve] listen`: this home to a browser and to other machines' viewers, whoever schedules.
    nightshift_core::serve::serve_as_configured(&engine, shell.clone()).await;
    // Never schedule on a damaged database: the app stays a viewer and says why — in its log,
    // the tray (attention, the sentence atop the menu) and the window's header.
    if let Err(e) = engine.check_database() {
        tracing::error!("{}", e.message);
        shell.announce_state().await;
        return;
    }
    match take_scheduler_lock(&engine).await {
        Ok(lock) => {
            shell.set_scheduling(true);
            shell.announce_state().await;
            // The first pass now, so what start-up allocated and dropped is handed back before
            // the app settles into idling (as the daemon does).
            let scheduler = Scheduler::new(engine.clone());
            if let Err(e) = scheduler.tick().await {
                tracing::warn!(error = %e, "the first scheduler pass failed; the loop retries");
            }
            nightshift_core::allocator::release_freed();
            nightshift_core::daemon::run(&engine, scheduler, Arc::new(tokio::sync::Notify::new())).await;
            shell.set_scheduling(false);
            drop(lock);
        }
        Err(NotTaken::Held { holder }) => {
            // A daemon schedules this home: this app views and controls (Run now still works).
            tracing::warn!("{holder} schedules this home; the app views and controls it");
            shell.set_scheduled_elsewhere(Some(holder));
            shell.announce_state().await;
        }
        Err(NotTaken::Failed(e)) => {
            // An unusable data folder: not scheduling, and the storage trouble is a problem the
            // tray and the window show.
            tracing::error!("cannot schedule: {}", e.message);
            shell.announce_state().await;
        }
    }
}

/// Who this app is to the scheduler lock (and to a `nightshiftctl daemon` that finds it held).
const WHO: &str = "the Nightshift app";

/// How long a start waits for another Nightshift app that holds the lock to finish quitting.
const QUITTING_APP: std::time::Duration = std::time::Duration::from_secs(15);

/// Take the home's scheduler lock. Held by another *app*, it is one that is quitting: this
/// process is the home's one app (a running one would have taken this launch's arguments, and it
/// gave up its single-instance name first thing on the way out), so wait for it to go — a launch
/// while the app quits becomes the next app. Held by a daemon: that daemon schedules.
async fn take_scheduler_lock(engine: &Engine) -> Result<SchedulerLock, NotTaken> {
    let (start, mut said) = (std::time::Instant::now(), false);
    loop {
        match SchedulerLock::take(engine.home(), WHO) {
            Err(NotTaken::Held { holder }) if holder.starts_with(WHO) && start.elapsed() < QUITTING_APP => {
                if !std::mem::replace(&mut said, true) {
                    tracing::info!("{holder} is quitting; waiting to schedule this home");
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            taken => return taken,
        }
    }
}

/// The tray shows what the engine says, updated on its events (never by polling).
fn follow_in_tray(shell: &Arc<Shell>, engine: &Engine) {
    let mut events = engine.subscribe();
    let shell = Arc::clone(shell);
    tokio::spawn(async move {
        shell.refresh_tray().await;
        loop {
            match events.recv().await {
                Ok(EngineEvent::RunProgress { .. }) => continue,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    // Coalesce bursts (a catch-up pass emits many events at once).
                    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
                    while events.try_recv().is_ok() {}
                    shell.refresh_tray().await;
                }
                Err(_) => return,
            }
        }
    });
}

/// The engine's events on to the window — and a `resync` (the window reads again what it shows)
/// when a process of this home queues or settles a run (a daemon that schedules it, a CLI's
/// `run`), whose events this engine never sees: its runs show as they happen, not at the
/// window's next reload. The tray hears of them as a state event.
fn forward_events_to_window(shell: &Arc<Shell>, engine: &Engine) {
    let mut events = engine.subscribe();
    let shell = Arc::clone(shell);
    let (others, heard) = (engine.watch_other_processes(), engine.hear_other_processes());
    tokio::spawn(async move {
        let _heard = heard;
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Ok(event) => shell.desk().emit(&|| serde_json::to_value(&event).ok()),
                    // The window missed some: it reloads what it shows.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => shell.desk().emit(&|| Some(serde_json::json!({ "type": "resync" }))),
                    Err(_) => return,
                },
                _ = others.changed() => {
                    tokio::time::sleep(nightshift_core::engine::OTHERS_GATHER).await;
                    shell.desk().emit(&|| Some(serde_json::json!({ "type": "resync" })));
                }
            }
        }
    });
}

/// SIGTERM (a package upgrade or removal asking it to quit, a session ending, `kill`) quits like the
/// tray's Quit without the question: runs keep going in their own process groups and the next start
/// picks them up; the scheduler lock and the tray item are released on the way out.
pub fn quit_on_sigterm(shell: &Arc<Shell>) {
    #[cfg(unix)]
    {
        let shell = Arc::clone(shell);
        shell.runtime().clone().spawn(async move {
            let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else { return };
            if term.recv().await.is_some() {
                tracing::info!("SIGTERM: quitting");
                shell.exit(0);
            }
        });
    }
}
