//! The Nightshift tray app: a thin Tauri shell over `nightshift-core`.
//!
//! It hosts the engine in-process on Tauri's tokio runtime. Everything that matters (routines,
//! runs, settling, recovery) lives in the engine crate; this shell only wires windows, tray and
//! notifications to it.

use nightshift_core::{Engine, EngineOptions, Home, RecoveryMode, Scheduler, SchedulerLock};
use std::sync::Arc;

pub fn run() {
    init_tracing();
    let home = match Home::from_env().and_then(|home| home.bootstrap().map(|b| (home, b))) {
        Ok((home, boot)) => {
            if boot.created {
                tracing::info!(home = %home.config_dir().display(), "first launch: created a home with example routines");
            }
            home
        }
        Err(e) => {
            eprintln!("error: {}", e.message);
            std::process::exit(2);
        }
    };

    tauri::Builder::default()
        .setup(move |_app| {
            let engine = Engine::open(EngineOptions::new(home))?;
            let engine2 = engine.clone();
            tauri::async_runtime::spawn(async move {
                match engine2.recover(RecoveryMode::Adopt).await {
                    Ok(ids) if !ids.is_empty() => tracing::info!(count = ids.len(), "settled or re-adopted runs left by a previous engine"),
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "crash recovery failed"),
                }
                // Schedule here unless a `nightshiftctl daemon` already does for this home; then
                // this app is a viewer/controller (manual runs still work).
                match SchedulerLock::acquire(engine2.home(), "the Nightshift app") {
                    Ok(lock) => {
                        let scheduler = Scheduler::new(engine2.clone());
                        scheduler.run(Arc::new(tokio::sync::Notify::new())).await;
                        drop(lock);
                    }
                    Err(e) => tracing::warn!("{}", e.message),
                }
            });
            Ok(())
        })
        .run(tauri::generate_context!())
        .unwrap_or_else(|e| {
            eprintln!("error: Nightshift could not start its window: {e}");
            std::process::exit(1);
        });
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NIGHTSHIFT_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init();
}
