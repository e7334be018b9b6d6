//! `nightshift-core`: the Nightshift engine — routines, schedules, runs, agents, store.
//!
//! No GUI dependency: this crate builds and tests on a bare server. The tray app (`nightshift`)
//! and the CLI (`nightshiftctl`) are two thin faces over [`engine::Engine`].

pub mod accounts;
pub mod allocator;
pub mod api;
pub mod agents;
pub mod bounded;
pub mod clock;
pub mod engine;
pub mod error;
pub mod events;
pub mod fsutil;
pub mod health;
pub mod home;
pub mod notify;
pub mod routine;
pub mod run;
pub mod run_dir;
pub mod runner;
pub mod schedule;
pub mod settings;
pub mod store;
pub mod view;
pub mod webhook;
pub mod workspace;

pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::{Engine, EngineOptions, RecoveryMode, RunHandle, Scheduler, SchedulerLock, TickReport};
pub use error::{Error, ErrorCode, Result};
pub use events::EngineEvent;
pub use home::Home;
pub use run::{Reason, RunRecord, RunStatus, Trigger};
