//! A run being followed to its end, as everything below the driver needs it — supervising,
//! judging, settling, recovery: which run, how its output is read, where its files are, how long
//! it may take and which webhooks it owes. Made from the routine when the driver starts a run, or
//! from the run's record alone (recovery after a crash, a queued run whose file is gone) — no
//! routine needed.

use crate::agents::AgentDriver;
use crate::words::Agent;
use crate::routine::{Routine, RoutineSet};
use crate::run::{Reason, RunRecord};
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone)]
pub(crate) struct LiveRun {
    pub id: String,
    /// The routine's name.
    pub routine: String,
    /// Who does the work; its [`driver`](LiveRun::driver) reads the output.
    pub agent: Agent,
    pub run_dir: PathBuf,
    pub started_at: DateTime<Utc>,
    /// The routine's `timeout:` when the run started.
    pub timeout: Duration,
    /// The webhooks its routine lists (`webhooks:`), owed a final record besides those whose
    /// `on` takes every run.
    pub webhooks: Vec<String>,
    /// Its routine has `ping:`: the run's end is pinged.
    pub pings: bool,
    /// `stall_timeout:` — ended when its output stops this long while it runs (`None`: never).
    pub stall: Option<Duration>,
    /// `on_denial: fail` — refused tool calls fail the run.
    pub fail_on_denial: bool,
    /// `allow:`/`deny:` with `on_denial: ask` — what decides which refused calls the user may
    /// approve after the run ([`super::approval`]); `None` without `on_denial: ask`.
    pub asks: Option<crate::agents::Guard>,
}

impl LiveRun {
    /// How its agent's output is read.
    pub(crate) fn driver(&self) -> &'static dyn AgentDriver {
        crate::agents::driver(self.agent)
    }

    /// A run of `routine` that the driver starts now.
    pub(crate) fn starting(rec: &RunRecord, routine: &Routine, run_dir: PathBuf, now: DateTime<Utc>) -> LiveRun {
        LiveRun {
            id: rec.id.clone(),
            routine: routine.name.clone(),
            agent: routine.agent(),
            run_dir,
            started_at: rec.started_at.unwrap_or(now),
            timeout: routine.timeout,
            webhooks: routine.webhooks.clone(),
            pings: routine.ping.is_some(),
            stall: routine.stall_timeout,
            fail_on_denial: routine.guard().is_some_and(|g| g.fail_on_denial),
            asks: routine.guard().filter(|g| g.ask.is_some()).cloned(),
        }
    }

    /// A run known from its record. Its routine file may have changed or gone since: the
    /// record's agent decides how its output is read; the file, when it is still there, gives its
    /// limit and webhooks (the defaults and none otherwise).
    pub(crate) fn for_record(rec: &RunRecord, set: &RoutineSet, now: DateTime<Utc>) -> LiveRun {
        let routine = set.get(&rec.routine);
        LiveRun {
            id: rec.id.clone(),
            routine: rec.routine.clone(),
            agent: rec.agent,
            run_dir: rec.run_dir.clone().into(),
            started_at: rec.started_at.unwrap_or(now),
            timeout: routine.map_or(Routine::DEFAULT_TIMEOUT, |r| r.timeout),
            webhooks: routine.map(|r| r.webhooks.clone()).unwrap_or_default(),
            pings: routine.is_some_and(|r| r.ping.is_some()),
            stall: routine.and_then(|r| r.stall_timeout),
            fail_on_denial: routine.and_then(|r| r.guard()).is_some_and(|g| g.fail_on_denial),
            asks: routine.and_then(|r| r.guard()).filter(|g| g.ask.is_some()).cloned(),
        }
    }
}

/// How a run's process ended, before classification.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ending {
    /// Exited by itself; the exit code when known.
    Exited(Option<i32>),
    TimedOut,
    /// Its output stopped for its `stall_timeout` while it was still running; the words of the
    /// stall, with the last thing it printed (read before it was ended: its end adds more).
    Stalled(String),
    Cancelled,
    /// Ended by the engine on a line after which the agent would not end by itself in useful
    /// time (`AgentDriver::ends_run_at`: OpenCode sleeping out a long rate limit); judged from its
    /// output like an exit.
    Settled,
    /// Never started; the message says why.
    SpawnFailed(String),
    /// Its process is gone and left no exit code (the engine and the run were both killed).
    Lost,
    /// Refused before spawning (account preflight, no host reachable).
    Blocked { reason: Reason, message: String, resets_at: Option<DateTime<Utc>> },
    /// A run on a host that could not be followed to its end (contact lost past its limit).
    Unreachable(String),
}

