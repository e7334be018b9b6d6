//! The evidence a scheduler leaves for `why`: when it was alive and awake on this machine, and how
//! its routines' files changed over time.
//!
//! * **Presence** is one row per stretch: started, last seen (updated on every pass — at rest ≤ 10
//!   minutes apart, see the scheduler), and how it ended. A pass that finds more wall-clock time gone by than monotonic time
//!   knows the machine slept (monotonic clocks stop during suspend): the stretch ends `asleep` at
//!   the last pass before and a new one starts now. A clean stop ends it `stopped`; a killed
//!   process leaves it open, and its last-seen time says when it was last alive. Kept compactly:
//!   an idle day is one row.
//! * **File states**: a routine whose file turned invalid or valid, disabled or enabled, since
//!   last recorded gets an event — written when the scheduler starts and on each reload, never on
//!   an idle pass.

use crate::engine::state::Core;
use crate::routine::RoutineSet;
use crate::store::{PresenceEnd, RoutineEvent};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Instant;

/// Whether a scheduler was alive at an instant.
pub(crate) enum Alive {
    There,
    /// Not there, in words with the stretch of time.
    Absent(String),
    /// Before the first record.
    Unknown,
}

/// A presence stretch counts until this long after its last sighting: passes are at most
/// [`crate::engine::signal::FALLBACK`] apart at rest (≤ 30 s where the scheduler has no wall-clock
/// timer), so a killed scheduler's absence is dated from its last pass and told once this is past.
pub(crate) const SEEN_SLACK_SECS: i64 = crate::engine::signal::FALLBACK.as_secs() as i64 + 60;

/// Whether a scheduler was there at `t`, from this machine's stretches of presence (oldest
/// first); absent in words with the stretch of time, in `tz`.
pub(crate) fn alive_at(p: &[crate::store::Presence], t: DateTime<Utc>, tz: chrono_tz::Tz) -> Alive {
    // The last stretch that started at or before t.
    let i = p.partition_point(|s| s.started_at <= t);
    let Some(b) = i.checked_sub(1).map(|j| &p[j]) else { return Alive::Unknown };
    let slept = b.ended == Some(PresenceEnd::Asleep);
    // A stretch still open (running, or killed) was last seen up to a pass ago; one that
    // stopped or slept ended exactly at its last sighting.
    if t <= b.last_seen || (b.ended.is_none() && t <= b.last_seen + chrono::Duration::seconds(SEEN_SLACK_SECS)) {
        return Alive::There;
    }
    let range = match p.get(i) {
        Some(next) => crate::words::time_range(b.last_seen, next.started_at, tz),
        None => format!("since {}", crate::words::local_day_time(b.last_seen, tz)),
    };
    Alive::Absent(if slept { format!("machine asleep {range}") } else { format!("no Nightshift running {range}") })
}

/// Why no scheduler was there at `t` — "machine asleep 01:10–07:55", "no Nightshift running
/// 01:10–07:55" — or `None` when one was, or when nothing is known about that time (before
/// presence was first recorded on this machine).
pub(crate) fn absence_at(p: &[crate::store::Presence], t: DateTime<Utc>, tz: chrono_tz::Tz) -> Option<String> {
    match alive_at(p, t, tz) {
        Alive::Absent(words) => Some(words),
        Alive::There | Alive::Unknown => None,
    }
}

/// More wall-clock time than monotonic time between two passes, beyond this, is a sleep.
pub const SLEEP_GAP_SECS: i64 = 90;

/// This scheduler's current stretch of presence.
#[derive(Debug, Default)]
pub(crate) struct Presence {
    stretch: Option<Stretch>,
}

#[derive(Debug)]
struct Stretch {
    id: i64,
    wall: DateTime<Utc>,
    mono: Instant,
}

impl Presence {
    /// A pass happens now: extend the stretch, or start one (after a sleep: end the last
    /// `asleep` first).
    pub fn beat(&mut self, core: &Arc<Core>, device: &str) {
        let (now, mono) = (core.clock.now(), Instant::now());
        if let Some(s) = &self.stretch {
            let wall_gone = (now - s.wall).num_milliseconds();
            let mono_gone = mono.duration_since(s.mono).as_millis() as i64;
            if wall_gone - mono_gone <= SLEEP_GAP_SECS * 1000 {
                if let Err(e) = core.store.presence_seen(s.id, now) {
                    tracing::debug!(error = %e, "could not record the scheduler's presence");
                }
                self.stretch = Some(Stretch { id: s.id, wall: now, mono });
                return;
            }
            tracing::info!(slept_secs = (wall_gone - mono_gone) / 1000, "the machine slept");
            let _ = core.store.presence_end(s.id, PresenceEnd::Asleep);
        }
        let who = crate::engine::lock::SchedulerLock::holder(&core.home).unwrap_or_else(|| format!("Nightshift (pid {})", std::process::id()));
        match core.store.presence_start(device, &who, now) {
            Ok(id) => self.stretch = Some(Stretch { id, wall: now, mono }),
            Err(e) => tracing::debug!(error = %e, "could not record the scheduler's presence"),
        }
    }

    /// The machine is going to sleep now (logind said so): the stretch ends `asleep` now; the
    /// next pass — on waking — starts a new one.
    pub fn asleep(&mut self, core: &Core) {
        if let Some(s) = self.stretch.take() {
            let _ = core.store.presence_seen(s.id, core.clock.now());
            let _ = core.store.presence_end(s.id, PresenceEnd::Asleep);
        }
    }

    /// The scheduler stops (cleanly).
    pub fn stop(&mut self, core: &Core) {
        if let Some(s) = self.stretch.take() {
            let _ = core.store.presence_seen(s.id, core.clock.now());
            let _ = core.store.presence_end(s.id, PresenceEnd::Stopped);
        }
    }
}

/// Record each routine whose file state (valid, invalid, disabled) differs from the last one on
/// record.
pub(crate) fn record_file_states(core: &Core, set: &RoutineSet) {
    let now = core.clock.now();
    const KINDS: [RoutineEvent; 4] = [RoutineEvent::Invalid, RoutineEvent::Valid, RoutineEvent::Disabled, RoutineEvent::Enabled];
    let states = set
        .routines
        .iter()
        .map(|r| (r.name.as_str(), if r.enabled { RoutineEvent::Enabled } else { RoutineEvent::Disabled }, None))
        .chain(set.invalid.iter().map(|r| (r.name.as_str(), RoutineEvent::Invalid, r.errors.first().map(|e| e.to_string()))));
    for (name, state, detail) in states {
        let last = match core.store.last_routine_event(name, &KINDS) {
            Ok(last) => last.map(|e| e.event),
            Err(e) => return tracing::debug!(error = %e, "could not read routine events"),
        };
        // A routine first seen valid and enabled needs no event: that is what no event means.
        let same = match last {
            None => state == RoutineEvent::Enabled,
            Some(RoutineEvent::Valid) => state == RoutineEvent::Enabled,
            Some(prev) => prev == state,
        };
        if !same {
            // Leaving the invalid state is "valid" (and then disabled, if it is).
            let event = if last == Some(RoutineEvent::Invalid) && state == RoutineEvent::Enabled { RoutineEvent::Valid } else { state };
            let _ = core.store.add_routine_event(name, event, detail.as_deref(), now);
        }
    }
}
