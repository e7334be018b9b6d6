//! The one way a run becomes final: settled after its process ended, blocked at preflight,
//! cancelled while queued, interrupted — the driver, the remote follower, recovery and cancel all
//! enter through [`settle`], which goes down once: **judge** (how it ended, the verdict) → **close
//! its files** (logs scrubbed, worktree committed, report written) → **record** (the final row and
//! what it owes, in one transaction, exactly once) → **announce** (faces, auto-pause, hooks,
//! waiters woken) — and lets go of the run.

use super::live::LiveRun;
use super::{announce, closing, judge, record};
pub(crate) use record::{RunEnd, Settled};
use crate::engine::followed::Following;
use crate::engine::state::Core;
use std::sync::Arc;

/// Judge, close, record, announce — once. Whoever waits gets the final record, also when another
/// engine finalized it first. `following`: this engine's hold on the run (its driver's, or
/// recovery's), let go once the row is final — a cancel of a queued run has none (a driver that
/// started the run meanwhile keeps its own).
pub(crate) async fn settle(core: &Arc<Core>, run: &LiveRun, ended: RunEnd, following: Option<Following>) -> Settled {
    let mut following = following;
    let outcome = judge::judge(core, run, &ended).await;
    let settled = match closing::close(core, run, &ended.ending, &outcome, ended.account.as_deref()).await {
        Some(closed) => record::record(core, run, ended, outcome, closed, &mut following).await,
        None => Settled { record: None, made_final: false },
    };
    if let Some(record) = &settled.record {
        announce::settled(core, record, settled.made_final).await;
    }
    drop(following);
    if let Some(r) = &settled.record {
        core.runs.resolve(r);
    }
    settled
}
