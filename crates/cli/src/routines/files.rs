//! Where `routines new | edit | remove | validate` read, check and write a routine's file: this
//! home's engine, or another home's (`--home NAME`) through its window's commands — one code path
//! for both, so a routine written on the box is checked by the box's own settings and accounts.

use nightshift_core::engine::{Removed, RoutineSource, Written};
use nightshift_core::homes::HomeClient;
use nightshift_core::routine::author::{Draft, DraftCheck};
use nightshift_core::routine::Diagnostic;
use nightshift_core::{Engine, Error};
use serde_json::json;

pub enum Files<'a> {
    Here(&'a Engine),
    There(&'a HomeClient),
}

impl Files<'_> {
    pub async fn source(&self, name: &str) -> Result<RoutineSource, Error> {
        match self {
            Files::Here(e) => e.routine_source(name),
            Files::There(h) => h.call("routine_source", json!({ "name": name })).await,
        }
    }

    pub async fn check_text(&self, name: &str, text: &str) -> Result<Vec<Diagnostic>, Error> {
        match self {
            Files::Here(e) => e.check_routine_text(name, text),
            Files::There(h) => h.call("check_routine_text", json!({ "name": name, "text": text })).await,
        }
    }

    pub async fn save_text(&self, name: &str, text: &str, version: &str) -> Result<RoutineSource, Error> {
        match self {
            Files::Here(e) => e.save_routine_text(name, text, version, false),
            Files::There(h) => h.call("save_routine_text", json!({ "name": name, "text": text, "version": version })).await,
        }
    }

    pub async fn check_draft(&self, draft: &Draft) -> Result<DraftCheck, Error> {
        match self {
            Files::Here(e) => Ok(e.check_draft(draft)),
            Files::There(h) => h.call("check_routine_draft", json!({ "draft": draft })).await,
        }
    }

    pub async fn create(&self, draft: &Draft) -> Result<Written, Error> {
        match self {
            Files::Here(e) => e.create_routine(draft),
            Files::There(h) => h.call("create_routine", json!({ "draft": draft })).await,
        }
    }

    pub async fn remove(&self, name: &str) -> Result<Removed, Error> {
        match self {
            Files::Here(e) => e.remove_routine(name),
            Files::There(h) => h.call("remove_routine", json!({ "name": name })).await,
        }
    }
}
