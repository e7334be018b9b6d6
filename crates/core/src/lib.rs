//! `nightshift-core`: the Nightshift engine — the scheduler, the queue, a run's life, the outbox,
//! the views and the API both faces call — over `nightshift-model` and `nightshift-store`.
//!
//! No GUI dependency: this crate builds and tests on a bare server. The tray app (`nightshift`)
//! and the CLI (`nightshiftctl`) are two thin faces over [`engine::Engine`].

// The floors below the engine are crates of their own (Cargo refuses an import that runs back up
// to the engine): the model — routines, runs, agents, accounts, settings — and the store. Their
// modules are re-exported here under the names every face and test has always used
// (`nightshift_core::routine`, …), so the engine is still the one crate a face depends on.
pub use nightshift_model::{accounts, agents, allocator, bounded, budget, clock, error, events, explain, fsutil, git, home, incoming, notify, routine, run, run_dir, sandbox, schedule, settings, settings_edit, words};

pub mod actions;
pub mod api;
pub mod daemon;
pub mod engine;
pub mod health;
pub mod homes;
pub mod mcp;
pub mod receiver;
pub(crate) mod secret_file;
pub mod runner;
pub mod serve;
/// The database is the engine's: a normal build cannot reach the store at all (the faces read
/// through [`Engine`] and [`records`], and no face's manifest lists `nightshift-store`); test
/// builds may, to lay out the rows an engine would have left (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub use nightshift_store as store;
#[cfg(not(any(test, feature = "test-support")))]
pub(crate) use nightshift_store as store;
pub mod view;
pub mod webhook;
pub mod workspace;

pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::{Engine, EngineOptions, RecoveryMode, RunHandle, Scheduler, SchedulerLock, TickReport};
pub use error::{Error, ErrorCode, Result};
pub use events::EngineEvent;
pub use home::Home;
pub use run::{Reason, RunRecord, RunStatus, Trigger};

/// The rows the faces read through the engine, and the queries they ask with.
pub mod records {
    pub use crate::store::{Ask, Delivery, DeliveryRow, HealthRecord, HostRecord, Page, RunQuery, UsageBy, UsageRow};
}
