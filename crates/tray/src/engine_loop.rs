//! The engine's side of the running app: recovery at start, the scheduler (if this home is not
//! scheduled elsewhere), engine events on to the tray and the window, and SIGTERM.

use crate::bridge::WINDOW_EVENT;
use crate::Resident;
use nightshift_core::engine::NotTaken;
use nightshift_core::{Engine, EngineEvent, RecoveryMode, Scheduler, SchedulerLock};
use std::sync::Arc;

/// Recovery, then the scheduler; the tray follows the engine's events throughout.
pub async fn run(resident: Arc<Resident>) {
    let engine = resident.engine.clone();
    match engine.recover(RecoveryMode::Adopt).await {
        Ok(ids) if !ids.is_empty() => tracing::info!(count = ids.len(), "settled or re-adopted runs left by a previous engine"),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "crash recovery failed"),
    }
    forward_events_to_window(&resident, &engine);
    follow_in_tray(&resident, &engine);
    // Never schedule on a damaged database: the app stays a viewer and says why — in its log,
    // the tray (attention, the sentence atop the menu) and the window's header.
    if let Err(e) = engine.check_database() {
        tracing::error!("{}", e.message);
        resident.announce_state().await;
        return;
    }
    match SchedulerLock::take(engine.home(), "the Nightshift app") {
        Ok(lock) => {
            resident.set_scheduling(true);
            resident.announce_state().await;
            // The first pass now, so what start-up allocated and dropped is handed back before
            // the app settles into idling (as the daemon does).
            let scheduler = Scheduler::new(engine.clone());
            if let Err(e) = scheduler.tick().await {
                tracing::warn!(error = %e, "the first scheduler pass failed; the loop retries");
            }
            nightshift_core::allocator::release_freed();
            scheduler.run(Arc::new(tokio::sync::Notify::new())).await;
            resident.set_scheduling(false);
            drop(lock);
        }
        Err(NotTaken::Held { holder }) => {
            // A daemon schedules this home: this app views and controls (Run now still works).
            tracing::warn!("{holder} schedules this home; the app views and controls it");
            resident.set_scheduled_elsewhere(Some(holder));
            resident.announce_state().await;
        }
        Err(NotTaken::Failed(e)) => {
            // An unusable data folder: not scheduling, and the storage trouble is a problem the
            // tray and the window show.
            tracing::error!("cannot schedule: {}", e.message);
            resident.announce_state().await;
        }
    }
}

/// The tray shows what the engine says, updated on its events (never by polling).
fn follow_in_tray(resident: &Arc<Resident>, engine: &Engine) {
    let mut events = engine.subscribe();
    let resident = Arc::clone(resident);
    tokio::spawn(async move {
        resident.refresh_tray().await;
        loop {
            match events.recv().await {
                Ok(EngineEvent::RunProgress { .. }) => continue,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    // Coalesce bursts (a catch-up pass emits many events at once).
                    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
                    while events.try_recv().is_ok() {}
                    resident.refresh_tray().await;
                }
                Err(_) => return,
            }
        }
    });
}

fn forward_events_to_window(resident: &Resident, engine: &Engine) {
    let mut events = engine.subscribe();
    let windows = Arc::clone(resident.windows());
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(event) => windows.emit(WINDOW_EVENT, || serde_json::to_value(&event).ok()),
                // The window missed some: it reloads what it shows.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => windows.resync(),
                Err(_) => return,
            }
        }
    });
}

/// SIGTERM (a package upgrade or removal asking it to quit, a session ending, `kill`) quits like the
/// tray's Quit without the question: runs keep going in their own process groups and the next start
/// picks them up; the scheduler lock and the tray item are released on the way out.
pub fn quit_on_sigterm(resident: &Arc<Resident>) {
    #[cfg(unix)]
    {
        let resident = Arc::clone(resident);
        resident.runtime().clone().spawn(async move {
            let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else { return };
            if term.recv().await.is_some() {
                tracing::info!("SIGTERM: quitting");
                resident.exit(0);
            }
        });
    }
}
