//! What a home's scheduling process keeps running, named and started in one place by whichever face
//! schedules the home — the app, `nightshiftctl daemon`, or `serve` when it holds the scheduler
//! lock: the receiver of `[hooks] listen` ([`crate::receiver`]), the housekeeper, the usage probe
//! and the GitHub poller ([`Engine::start_resident_parts`]), and the scheduler's loop, which fires
//! slots, makes up held work and watches the routine files and `nightshift.toml`.

use crate::{Engine, Scheduler};
use std::sync::Arc;
use tokio::sync::Notify;

/// Run the home's resident parts until `shutdown` is notified (the receiver, once bound, lives as
/// long as the process).
pub async fn run(engine: &Engine, scheduler: Arc<Scheduler>, shutdown: Arc<Notify>) {
    crate::receiver::listen_as_configured(engine).await;
    let _parts = engine.start_resident_parts();
    scheduler.run(shutdown).await;
}
