//! Crash recovery: runs left `running` by an engine that died.
//!
//! Each such row is examined. If its process is still alive (same pid *and* same start time — a
//! reused pid is not our run) it is re-adopted: watched until it exits, then settled from its log
//! and the exit code its wrapper wrote. Otherwise it is settled now from what its files show: the
//! agent's own final event when present, else `failed`/`interrupted`. Rows whose supervising
//! engine is still alive (another process: the tray, a daemon, a `run --wait`) are left alone.

use super::settle::{self, Ending, LiveRun};
use super::Core;
use crate::agents;
use crate::error::Result;
use crate::routine::{Action, AgentKind, Routine};
use crate::runner::process;
use crate::store::OpenRun;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Settle runs whose process is gone; leave live orphans for a long-running engine.
    /// (Short-lived CLI commands use this.)
    SettleFinished,
    /// Also re-adopt live orphans and supervise them to the end (daemon, tray app).
    Adopt,
}

const ADOPT_POLL: Duration = Duration::from_millis(500);

pub(crate) async fn recover(core: &Arc<Core>, mode: RecoveryMode) -> Result<Vec<String>> {
    let mut handled = Vec::new();
    for open in core.store.open_runs()? {
        let owner_is_me = open.owner_pid == Some(core.identity.0) && open.owner_start.as_deref() == Some(core.identity.1.as_str());
        // My pid with another identity: an earlier image of this process (it re-executed itself),
        // which is gone even though the pid and start time are the same.
        let earlier_image_of_me = open.owner_pid == Some(core.identity.0) && !owner_is_me;
        let owner_alive = !owner_is_me
            && !earlier_image_of_me
            && open.owner_pid.is_some_and(|pid| process::same_process_alive(pid, open.owner_start.as_deref()));
        if owner_is_me || owner_alive {
            continue;
        }
        let live = live_run(core, &open);
        let alive = open.pid.is_some_and(|pid| process::same_process_alive(pid, open.pid_start.as_deref()));
        if alive {
            if mode == RecoveryMode::Adopt {
                let pid = open.pid.expect("alive implies a pid");
                core.store.set_owner(&open.record.id, (core.identity.0, &core.identity.1))?;
                tracing::info!(run = %open.record.id, pid, "re-adopting a run left by a previous engine");
                let cancel = Arc::new(Notify::new());
                core.active.lock().unwrap_or_else(|e| e.into_inner()).insert(open.record.id.clone(), Arc::clone(&cancel));
                let core = Arc::clone(core);
                tokio::spawn(async move {
                    let ending = watch_orphan(&core, &live, pid, open.pid_start.clone(), cancel).await;
                    settle::settle(&core, &live, ending, Vec::new(), None, None).await;
                });
                handled.push(open.record.id.clone());
            }
            continue;
        }
        let ending = match process::recorded_exit_code(&live.run_dir) {
            Some(code) => Ending::Exited(Some(code)),
            None if open.pid.is_none() => Ending::SpawnFailed("interrupted: Nightshift stopped before the run's process started".into()),
            None => Ending::Lost,
        };
        tracing::info!(run = %open.record.id, ?ending, "settling a run left by a previous engine");
        settle::settle(core, &live, ending, Vec::new(), None, None).await;
        handled.push(open.record.id.clone());
    }
    Ok(handled)
}

/// Rebuild what settling needs. The routine file may have changed or gone since; the record's
/// agent decides how its output is read.
fn live_run(core: &Core, open: &OpenRun) -> LiveRun {
    let rec = &open.record;
    let routine = routine_for(core, rec);
    LiveRun {
        id: rec.id.clone(),
        driver: agents::driver(AgentKind::from_name(&rec.agent)),
        run_dir: rec.run_dir.clone().into(),
        started_at: rec.started_at.unwrap_or_else(|| core.clock.now()),
        routine,
    }
}

fn routine_for(core: &Core, rec: &crate::run::RunRecord) -> Routine {
    let set = crate::routine::load_home(&core.home, &core.settings);
    set.get(&rec.routine).cloned().unwrap_or_else(|| Routine {
        name: rec.routine.clone(),
        file: core.home.routines_dir(),
        description: None,
        schedule: None,
        timezone: chrono_tz::Tz::UTC,
        at: None,
        end_at: None,
        action: Action::Command { command: String::new() },
        timeout: Routine::DEFAULT_TIMEOUT,
        cwd: None,
        env: Default::default(),
        account: crate::routine::AccountChoice::Any,
        catchup: false,
        notify: crate::routine::NotifyPolicy::Failures,
        enabled: false,
        variables: Default::default(),
        devices: Vec::new(),
    })
}

/// Watch a process we are not the parent of until it exits, still enforcing the routine's
/// timeout (measured from the run's start) and cancel.
async fn watch_orphan(core: &Arc<Core>, run: &LiveRun, pid: u32, start: Option<String>, cancel: Arc<Notify>) -> Ending {
    let elapsed = (core.clock.now() - run.started_at).to_std().unwrap_or_default();
    let deadline = tokio::time::Instant::now() + run.routine.timeout.saturating_sub(elapsed);
    loop {
        if !process::same_process_alive(pid, start.as_deref()) {
            return match process::recorded_exit_code(&run.run_dir) {
                Some(code) => Ending::Exited(Some(code)),
                None => Ending::Lost,
            };
        }
        tokio::select! {
            _ = tokio::time::sleep(ADOPT_POLL) => {}
            _ = tokio::time::sleep_until(deadline) => {
                process::terminate_group(pid, core.settings.kill_grace()).await;
                return Ending::TimedOut;
            }
            _ = cancel.notified() => {
                process::terminate_group(pid, core.settings.kill_grace()).await;
                return Ending::Cancelled;
            }
        }
    }
}
