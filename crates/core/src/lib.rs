//! `nightshift-core`: the Nightshift engine — routines, schedules, runs, agents, store.
//!
//! No GUI dependency: this crate builds and tests on a bare server. The tray app (`nightshift`)
//! and the CLI (`nightshiftctl`) are two thin faces over [`engine::Engine`].

pub mod accounts;
pub mod allocator;
pub mod api;
pub mod agents;
pub mod bounded;
pub mod budget;
pub mod clock;
pub mod engine;
pub mod error;
pub mod events;
pub mod fsutil;
pub mod git;
pub mod health;
pub mod home;
pub mod incoming;
pub mod notify;
pub mod routine;
pub mod receiver;
pub mod run;
pub mod run_dir;
pub mod runner;
pub mod schedule;
pub mod settings;
pub mod settings_edit;
/// The database is the engine's: a normal build cannot reach the store at all (the faces read
/// through [`Engine`] and [`records`]); test builds may, to lay out the rows an engine would have
/// left (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod store;
#[cfg(not(any(test, feature = "test-support")))]
pub(crate) mod store;
pub mod view;
pub mod webhook;
pub mod words;
pub mod workspace;

pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::{Engine, EngineOptions, RecoveryMode, RunHandle, Scheduler, SchedulerLock, TickReport};
pub use error::{Error, ErrorCode, Result};
pub use events::EngineEvent;
pub use home::Home;
pub use run::{Reason, RunRecord, RunStatus, Trigger};

/// The rows the faces read through the engine, and the queries they ask with.
pub mod records {
    pub use crate::store::{Delivery, DeliveryRow, HealthRecord, HostRecord, Page, RunQuery, UsageBy, UsageRow};
}
