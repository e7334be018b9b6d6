//! Watching one attempt's process to its end — timeout, cancel, live progress, secrets scrubbed
//! from its logs as they grow — here or on a host. How it ended is judged in [`super::judge`].

use super::closing::scrub_logs;
use super::live::{Ending, LiveRun};
use crate::engine::state::Core;
use crate::events::EngineEvent;
use crate::run_dir::RunDir;
use crate::runner::follow::follow;
use crate::runner::process::{self, RunProcess};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// How often a live run's new output is scrubbed.
const SCRUB_EVERY: Duration = Duration::from_secs(5);

/// Wait until the wall clock reaches `deadline` (forever without one), looking at it at least
/// every 30 s: a monotonic timer stops while the machine sleeps, and the limit must not stretch.
async fn until_wall_clock(deadline: Option<std::time::SystemTime>) {
    let Some(deadline) = deadline else { return std::future::pending().await };
    while let Ok(left) = deadline.duration_since(std::time::SystemTime::now()) {
        if left.is_zero() {
            break;
        }
        tokio::time::sleep(left.min(Duration::from_secs(30))).await;
    }
}

/// Return once the run's output (stdout and stderr) has not grown for `stall`, looking every
/// few seconds, with the words of the stall; never without one. Counted in monotonic time: a
/// machine asleep is not a stall (the agent sleeps too).
async fn until_stalled(run_dir: &std::path::Path, stall: Option<Duration>) -> String {
    let Some(stall) = stall else { return std::future::pending().await };
    let dir = RunDir::at(run_dir);
    let size = || [dir.stdout(), dir.stderr()].iter().map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)).sum::<u64>();
    let look = (stall / 4).clamp(Duration::from_millis(200), Duration::from_secs(10));
    let (mut last, mut since) = (size(), tokio::time::Instant::now());
    loop {
        tokio::time::sleep(look).await;
        let now = size();
        // Waiting for the user's answer (`on_denial: ask`) is silence, not a stall.
        if now != last || dir.asking().exists() {
            (last, since) = (now, tokio::time::Instant::now());
        } else if since.elapsed() >= stall {
            return stalled_words(&dir, stall);
        }
    }
}

/// "stalled: no output for 10m while it was still running; its last output: …" — the last line
/// it printed (of stdout or stderr, whichever was written last — stderr when both were written
/// in the same instant), usually the question nobody answered.
fn stalled_words(dir: &RunDir, stall: Duration) -> String {
    let mut logs = [dir.stderr(), dir.stdout()];
    let written = |p: &std::path::PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    logs.sort_by_key(|p| std::cmp::Reverse(written(p)));
    let last = logs
        .iter()
        .filter_map(|p| crate::agents::LogTail::read(p, 4096).last_line().map(|l| crate::words::first_line(l, 200)))
        .find(|l| !l.is_empty());
    let waited = humantime::format_duration(Duration::from_secs(stall.as_secs().max(1)));
    match last {
        Some(line) => format!("stalled: no output for {waited} while it was still running (`stall_timeout`); its last output: {line}"),
        None => format!("stalled: no output at all for {waited} while it was still running (`stall_timeout`)"),
    }
}

/// A try's process: here, or on a host.
pub(crate) enum Proc {
    Local(RunProcess),
    Remote(super::remote_run::RemoteProc),
}

/// Follow a try to its end — live progress from its log and secrets scrubbed from it as it grows,
/// wherever it runs — then scrub the rest.
pub(crate) async fn supervise(core: &Arc<Core>, run: &LiveRun, proc: &mut Proc, cancel: Arc<Notify>) -> Ending {
    let settled = Arc::new(Notify::new());
    let follower = run.driver().has_progress().then(|| {
        let core = Arc::clone(core);
        let (id, routine) = (run.id.clone(), run.routine.clone());
        let emit = move |message| core.emit(EngineEvent::RunProgress { run_id: id.clone(), routine: routine.clone(), message });
        tokio::spawn(follow(RunDir::at(&run.run_dir).stdout(), run.driver(), emit, Arc::clone(&settled)))
    });
    let scrubber = {
        let (core, run) = (Arc::clone(core), run.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SCRUB_EVERY).await;
                let (core, run) = (Arc::clone(&core), run.clone());
                let _ = tokio::task::spawn_blocking(move || scrub_logs(&core, &run, false)).await;
            }
        })
    };
    let ending = match proc {
        Proc::Local(p) => wait_local(core, run, p, cancel, settled).await,
        Proc::Remote(r) => super::remote_run::follow(core, run, r, cancel).await,
    };
    if let Some(f) = follower {
        f.abort();
    }
    scrubber.abort();
    // The attempt's logs are final: scrub the rest now (failover archives them next).
    let (core2, run2) = (Arc::clone(core), run.clone());
    let _ = tokio::task::spawn_blocking(move || scrub_logs(&core2, &run2, true)).await;
    ending
}

/// Wait for a local process, enforcing timeout and cancel on its whole process group, and ending
/// it on a line that settles it (`settled`).
async fn wait_local(core: &Arc<Core>, run: &LiveRun, proc: &mut RunProcess, cancel: Arc<Notify>, settled: Arc<Notify>) -> Ending {
    let pgid = proc.pid;
    let ending = tokio::select! {
        status = proc.child.wait() => {
            let code = status.ok().and_then(|s| s.code());
            // What this engine saw is kept with the run even if the wrapper could not write it
            // (a full disk): should the row not be writable now, recovery settles it correctly later.
            if let Some(code) = code {
                if let Err(e) = process::record_exit_code(&run.run_dir, code) {
                    tracing::warn!(run = %run.id, error = %e, "could not keep the exit code in the run directory");
                }
            }
            // The wrapper enforces the limit too (it travels with the run): its mark wins.
            if process::timed_out_by_wrapper(&run.run_dir) {
                Ending::TimedOut
            } else {
                Ending::Exited(code.or_else(|| process::recorded_exit_code(&run.run_dir)))
            }
        }
        // The engine keeps the limit while it follows the run (the wrapper once it does not).
        _ = until_wall_clock(proc.deadline) => Ending::TimedOut,
        // Its output stopped while it still runs: it waits on something nobody will answer.
        words = until_stalled(&run.run_dir, run.stall) => Ending::Stalled(words),
        _ = cancel.notified() => Ending::Cancelled,
        // It said what ends it and would not end by itself (a long rate limit slept out).
        _ = settled.notified() => Ending::Settled,
    };
    if matches!(ending, Ending::TimedOut | Ending::Stalled(_) | Ending::Cancelled | Ending::Settled) {
        let child = &mut proc.child;
        process::terminate_group_reaping(pgid, core.settings().kill_grace(), || {
            let _ = child.try_wait();
        })
        .await;
        // Reap the leader; bounded in case something unkillable (D state) holds it.
        let _ = tokio::time::timeout(Duration::from_secs(5), proc.child.wait()).await;
    }
    ending
}

