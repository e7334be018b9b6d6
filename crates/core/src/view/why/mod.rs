//! "My 9:00 routine did not run — why?": every slot of a routine in a window, newest first, with
//! its fate in words and the evidence (`nightshiftctl why`, the Routines view's strip, a missed
//! run's explanation).
//!
//! The evidence is what the engine records anyway: the slot's row (ran, caught up, missed,
//! skipped, blocked), when a scheduler was alive and awake on this machine (`presence`), and what
//! happened to the routine (paused, resumed, file invalid, disabled). A slot with no row gets its
//! fate from those, in this order: after `end_at`, file invalid or disabled, paused, not this
//! device, not yet evaluated, machine asleep or no Nightshift running — and, when a scheduler was
//! there and left nothing, "no record" (never a guess).
//!
//! Slots without a row and with the same fate are one line with a count (a per-minute routine
//! asleep all night is one line, not 400); every run is a line of its own.

use crate::engine::Engine;
use crate::error::Result;
use crate::routine::{Routine, RoutineSet};
use crate::run::{RunStatus, Trigger};
use crate::store::{EventRow, Presence, RoutineEvent, RoutineRow, SlotRow};
use crate::words::{ser_opt_time, ser_time};
use chrono::{DateTime, Duration as Span, Utc};
use serde::Serialize;
use std::borrow::Cow;

mod evidence;
use evidence::Evidence;

/// What became of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub enum Fate {
    /// It ran at its time (or is running, or waits for a lane).
    Ran,
    /// It ran later, as a catch-up after sleep or downtime.
    CaughtUp,
    Missed,
    /// The previous run was still going.
    Skipped,
    /// Not started: its account could not sign in.
    Blocked,
    Paused,
    OtherDevice,
    Disabled,
    Invalid,
    /// After the routine's `end_at`.
    Ended,
    /// Due, and not evaluated yet.
    Pending,
    /// A scheduler was there and left no record (never expected; said rather than guessed).
    NoRecord,
}

/// How a fate looks: the UI's colour and the order in which a bucket of several shows its worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub enum Tone {
    Muted,
    Ok,
    Pending,
    Warn,
    Bad,
}

/// One slot — or several neighbouring slots with the same fate and no run — in words.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct SlotLine {
    /// The slot (the newest, for several).
    #[serde(serialize_with = "ser_time")]
    pub at: DateTime<Utc>,
    /// The oldest slot of the line (the same as `at` for one).
    #[serde(serialize_with = "ser_time")]
    pub from: DateTime<Utc>,
    pub slots: usize,
    pub fate: Fate,
    pub tone: Tone,
    /// The fate and its evidence: "missed — machine asleep 01:10–07:55; superseded by a later slot".
    /// (Most lines of a busy routine say the same few words: those are not allocated per line.)
    pub sentence: Cow<'static, str>,
    /// The slot's run, when it has one.
    pub run_id: Option<String>,
    pub status: Option<RunStatus>,
    /// How long its run took (the faces add "in 42s").
    pub duration_ms: Option<i64>,
}

/// A routine's slots explained.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Why {
    pub routine: String,
    pub timezone: String,
    pub schedule_words: Option<String>,
    #[serde(serialize_with = "ser_time")]
    pub from: DateTime<Utc>,
    #[serde(serialize_with = "ser_time")]
    pub until: DateTime<Utc>,
    /// Newest first.
    pub lines: Vec<SlotLine>,
    /// Said when the window holds no slot, or starts before the routine was known, or the file
    /// cannot be read: when it last fired and why not since.
    pub notes: Vec<String>,
    /// A follow-up an agent scheduled: whose ("scheduled by nightly at Mon 7 Dec 02:14 (run …)").
    pub scheduled_by: Option<String>,
    #[serde(serialize_with = "ser_opt_time")]
    pub next_fire: Option<DateTime<Utc>>,
    /// The next fire and what it depends on, or why there is none.
    pub next: String,
    /// The GitHub and Linear deliveries its `trigger:` named in the window, newest first, with
    /// what became of each for it (`hooks list`'s verdicts).
    pub events: Vec<EventLine>,
}

/// One delivery a routine's trigger named, and what became of it for the routine.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct EventLine {
    #[serde(serialize_with = "ser_time")]
    pub received_at: DateTime<Utc>,
    /// The event in words ("github:pull_request opened acme/app#41 “Fix”").
    pub summary: String,
    /// `fired`, `duplicate`, `filtered`, `skipped`, or the state that kept it from running.
    pub outcome: String,
    pub run_id: Option<String>,
    pub why: Option<String>,
    /// How often the delivery arrived.
    pub times: u32,
}

/// A mark of the Routines view's strip: one slot, or a stretch of time when there are too many.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Mark {
    #[serde(serialize_with = "ser_time")]
    pub from: DateTime<Utc>,
    #[serde(serialize_with = "ser_time")]
    pub to: DateTime<Utc>,
    pub fate: Fate,
    pub tone: Tone,
    pub sentence: Cow<'static, str>,
    pub run_id: Option<String>,
}

/// Explain `name`'s slots in the last `days` days (up to the engine clock's now).
pub fn why(engine: &Engine, name: &str, days: u32) -> Result<Why> {
    why_in(engine, &engine.routine_set(), name, days)
}

/// What every routine's evidence shares — this device, its schedulers' presence since a time,
/// whether everything is paused — read once for all the routines of a page of strips.
pub struct Surroundings {
    device: String,
    /// Oldest first.
    presence: Vec<Presence>,
    global_paused: bool,
    now: DateTime<Utc>,
    /// The recent webhook deliveries, read at the first routine with a `trigger:` (once for a
    /// page of strips, not once per routine; never when no routine has a trigger).
    deliveries: std::cell::OnceCell<Vec<crate::store::Received>>,
}

impl Surroundings {
    /// As they are now (the engine's clock), with presence over the window of the last `days` days.
    pub fn over_days(engine: &Engine, days: u32) -> Result<Surroundings> {
        let now = engine.clock_now();
        Surroundings::at(engine, now, window_start(now, days))
    }

    /// As they are now, with presence from `since` on.
    fn at(engine: &Engine, now: DateTime<Utc>, since: DateTime<Utc>) -> Result<Surroundings> {
        let store = engine.core_store();
        let device = engine.device_name();
        Ok(Surroundings { presence: store.presence_since(&device, since)?, global_paused: store.global_paused()?, device, now, deliveries: std::cell::OnceCell::new() })
    }

    /// The last [`DELIVERIES_READ`] deliveries, newest first.
    fn deliveries(&self, store: &crate::store::Store) -> Result<&[crate::store::Received]> {
        if let Some(read) = self.deliveries.get() {
            return Ok(read);
        }
        let read = store.deliveries(DELIVERIES_READ)?;
        Ok(self.deliveries.get_or_init(|| read))
    }
}

/// How many recent deliveries `why` looks through for a routine's events.
const DELIVERIES_READ: usize = 1000;

/// The start of the window of the last `days` days (at least one) before `now`.
fn window_start(now: DateTime<Utc>, days: u32) -> DateTime<Utc> {
    now - Span::days(days.max(1) as i64)
}

/// [`why`] over routines already at hand.
pub fn why_in(engine: &Engine, set: &RoutineSet, name: &str, days: u32) -> Result<Why> {
    why_with(engine, set, &Surroundings::over_days(engine, days)?, name, days)
}

/// [`why_in`] with the surroundings read once for many routines (the strips explain every
/// routine of one set; `around` from [`Surroundings::over_days`] with the same `days`).
pub fn why_with(engine: &Engine, set: &RoutineSet, around: &Surroundings, name: &str, days: u32) -> Result<Why> {
    let now = around.now;
    let store = engine.core_store();
    let from = window_start(now, days);
    let Some(r) = set.get(name) else {
        let bad = match set.get_invalid(name) {
            Some(bad) => bad,
            None => return Err(engine.routine(name).err().unwrap_or_else(|| crate::Error::new(crate::ErrorCode::RoutineNotFound, format!("no routine named \"{name}\"")))),
        };
        let since = store.last_routine_event(name, &[RoutineEvent::Invalid])?.map(|e| e.at);
        let first = bad.errors.first().map(ToString::to_string).unwrap_or_default();
        let since = since.map(|t| format!(" since {}", local_day_time(t, crate::schedule::local_tz()))).unwrap_or_default();
        return Ok(Why {
            routine: name.to_string(),
            timezone: String::new(),
            schedule_words: None,
            from,
            until: now,
            lines: Vec::new(),
            notes: vec![format!("The file is invalid{since}: {first}. No slot fires until it is fixed.")],
            scheduled_by: None,
            next_fire: None,
            next: "none — the file is invalid; fix it and the next slot fires as usual".into(),
            events: Vec::new(),
        });
    };
    let evidence = Evidence::read(store, around, r)?;
    let known_from = evidence.state.as_ref().map(|s| s.first_seen).unwrap_or(now);
    let start = from.max(known_from - Span::seconds(1));
    let mut notes = Vec::new();
    if known_from > from {
        notes.push(format!("Nightshift first saw this routine {}; it has no slots before that.", local_day_time(known_from, r.timezone)));
    }
    let slots = match (&r.schedule, r.at) {
        (Some(s), _) => s.all_fires_between(start, now),
        (None, Some(at)) if at > start && at <= now => vec![at],
        _ => Vec::new(),
    };
    let mut lines = evidence.explain(store, name, &slots, start, now)?;
    // A worktree run with `push.pr` says which pull request its branch went to.
    if r.workspace.push().is_some_and(|s| s.pr.is_some()) {
        let pulls: std::collections::HashMap<String, crate::run::PullRequest> = store.pull_requests_between(name, start, now)?.into_iter().collect();
        for line in lines.iter_mut() {
            if let Some(pr) = line.run_id.as_ref().and_then(|id| pulls.get(id)) {
                line.sentence = format!("{} · {}", line.sentence, pull_request_words(pr)).into();
            }
        }
    }
    // A run that asked (`on_denial: ask`) says what it asked and how it was answered.
    let asks = store.asks_of_routine(name)?;
    if !asks.is_empty() {
        for line in lines.iter_mut() {
            let Some(id) = &line.run_id else { continue };
            let of_run: Vec<_> = asks.iter().filter(|a| &a.run_id == id).cloned().collect();
            if let Some(said) = crate::engine::asks_sentence(&of_run, r.timezone) {
                line.sentence = format!("{} · {said}", line.sentence).into();
            }
        }
    }
    let events: Vec<EventLine> = match &r.trigger {
        Some(_) => around
            .deliveries(store)?
            .iter()
            .filter(|d| d.received_at >= start)
            .filter_map(|d| {
                let v = d.verdicts.iter().find(|v| v.routine == name)?.clone();
                Some(EventLine { received_at: d.received_at, summary: d.summary.clone(), outcome: v.outcome, run_id: v.run_id, why: v.why, times: d.times })
            })
            .collect(),
        None => Vec::new(),
    };
    // Runs whose branch could not be pushed (only a routine that pushes has any to look for).
    if matches!(r.workspace, crate::routine::Workspace::Worktree { push: Some(_), .. }) {
        for (id, remote, error) in store.failed_pushes(name, start, now)? {
            notes.push(format!("Run {id}'s branch was not pushed to {remote}: {} — `nightshiftctl push {id}` tries again.", crate::words::first_line(&error, 160)));
        }
    }
    let on_events_only = r.trigger.is_some() && r.schedule.is_none() && r.at.is_none();
    if on_events_only && events.is_empty() {
        notes.push("It runs on events, not on a clock, and none it names arrived in this window (`nightshiftctl hooks list` shows every delivery).".to_string());
    } else if lines.is_empty() && !on_events_only {
        let window = if days <= 1 { "day".to_string() } else { format!("{days} days") };
        notes.push(match store.last_slot_row(name)? {
            Some(last) => format!("No slot was due in the last {window}. It last fired {} ({}, run {}).", local_day_time(last.slot, r.timezone), last.status, last.id),
            None => format!("No slot was due in the last {window}, and it has never fired on this machine."),
        });
    }
    let (next_fire, next) = evidence.next();
    Ok(Why {
        routine: name.to_string(),
        timezone: r.timezone.name().to_string(),
        schedule_words: Some(r.schedule_words()),
        from,
        until: now,
        lines,
        notes,
        scheduled_by: crate::view::lineage::scheduled_by(engine, r),
        next_fire,
        next,
        events,
    })
}

/// What a missed, skipped or blocked run's explanation adds: its slot's fate with the evidence.
pub fn slot_sentence(engine: &Engine, routine: &str, slot: DateTime<Utc>) -> Option<String> {
    let set = engine.routine_set();
    let r = set.get(routine)?;
    let store = engine.core_store();
    let around = Surroundings::at(engine, engine.clock_now(), slot - Span::days(1)).ok()?;
    let evidence = Evidence::read(store, &around, r).ok()?;
    let rows = store.slot_rows(routine, slot, slot).ok()?;
    evidence.lines(&[slot], rows).into_iter().next().map(|l| l.sentence.into_owned())
}

impl Why {
    /// The strip: one mark per slot line's slot when there are at most `max` slots, else `max`
    /// equal stretches of the window, each showing its worst fate and counting the rest.
    pub fn strip(&self, max: usize) -> Vec<Mark> {
        let max = max.max(1);
        // Every slot, oldest first; a line of several spreads its slots over its own stretch
        // (evenly: they share one fate, so only their count per mark matters).
        let slots = self.lines.iter().rev().flat_map(|l| {
            let step = if l.slots > 1 { (l.at - l.from) / (l.slots as i32 - 1) } else { Span::zero() };
            (0..l.slots).map(move |i| (l.from + step * i as i32, l))
        });
        let total: usize = self.lines.iter().map(|l| l.slots).sum();
        if total <= max {
            return slots.map(|(t, l)| Mark { from: t, to: t, fate: l.fate, tone: l.tone, sentence: l.sentence.clone(), run_id: l.run_id.clone() }).collect();
        }
        let span = ((self.until - self.from) / max as i32).max(Span::milliseconds(1));
        let mut buckets: Vec<Vec<&SlotLine>> = vec![Vec::new(); max];
        for (t, l) in slots {
            let i = ((t - self.from).num_milliseconds().max(0) / span.num_milliseconds()) as usize;
            buckets[i.min(max - 1)].push(l);
        }
        buckets
            .into_iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .map(|(i, b)| {
                let worst = b.iter().max_by_key(|l| l.tone).copied().unwrap_or(b[0]);
                let mut counts: Vec<(Fate, usize)> = Vec::new();
                for l in &b {
                    match counts.iter_mut().find(|(f, _)| *f == l.fate) {
                        Some((_, n)) => *n += 1,
                        None => counts.push((l.fate, 1)),
                    }
                }
                let sum = counts.iter().map(|(f, n)| format!("{n} {}", fate_word(*f))).collect::<Vec<_>>().join(", ");
                Mark {
                    from: self.from + span * i as i32,
                    to: self.from + span * (i as i32 + 1),
                    fate: worst.fate,
                    tone: worst.tone,
                    sentence: format!("{sum}; worst: {}", worst.sentence).into(),
                    run_id: worst.run_id.clone(),
                }
            })
            .collect()
    }
}

fn fate_word(f: Fate) -> &'static str {
    match f {
        Fate::Ran => "ran",
        Fate::CaughtUp => "caught up",
        Fate::Missed => "missed",
        Fate::Skipped => "skipped",
        Fate::Blocked => "blocked",
        Fate::Paused => "paused",
        Fate::OtherDevice => "not this device",
        Fate::Disabled => "disabled",
        Fate::Invalid => "invalid",
        Fate::Ended => "after end_at",
        Fate::Pending => "due",
        Fate::NoRecord => "no record",
    }
}

pub use crate::words::local_day_time;

/// "pull request #3 opened (https://github.com/acme/app/pull/3)", "… updated …", "answered the
/// review of pull request #3 …", "no pull request: <why>" — a slot's pull request in `why`'s words.
fn pull_request_words(pr: &crate::run::PullRequest) -> String {
    let which = pr.number.map(|n| format!("#{n} ")).unwrap_or_default();
    let url = pr.url.as_deref().map(|u| format!(" ({u})")).unwrap_or_default();
    match pr.state.as_str() {
        "opened" | "updated" => format!("pull request {which}{}{url}", pr.state),
        "pending" => "pull request pending".to_string(),
        "answered" => format!("answered the review of pull request {which}{url}"),
        "unchanged" => format!("answered the review of pull request {which}without a change{url}: no more reviews of it are answered"),
        _ => format!("no pull request: {}", pr.error.as_deref().unwrap_or(&pr.state)),
    }
}
