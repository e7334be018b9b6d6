//! `nightshift-model`: the words and records every part of Nightshift shares — routines and their
//! files, run records, the agents (one file each: how its CLI is called, read and judged, and what
//! a routine may ask of it), accounts and their credentials, settings, schedules, events and the
//! notification text.
//!
//! The ground floor of the house: it knows nothing of the store, the engine or either face, and
//! Cargo keeps it so — this crate does not depend on them. No GUI dependency; it builds and tests
//! on a bare server.

pub mod accounts;
pub mod agents;
pub mod allocator;
pub mod bounded;
pub mod budget;
pub mod clock;
pub mod error;
pub mod events;
pub mod explain;
pub mod fsutil;
pub mod git;
pub mod home;
pub mod incoming;
pub mod notify;
pub mod routine;
pub mod run;
pub mod run_dir;
pub mod sandbox;
pub mod schedule;
pub mod settings;
pub mod settings_edit;
pub mod words;
