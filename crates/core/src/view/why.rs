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
use crate::run::{ser_opt_time, ser_time, RunStatus, Trigger};
use crate::store::{EventRow, Presence, PresenceEnd, RoutineEvent, RoutineRow, SlotRow};
use chrono::{DateTime, Duration as Span, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use std::borrow::Cow;

/// What became of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Tone {
    Muted,
    Ok,
    Pending,
    Warn,
    Bad,
}

/// One slot — or several neighbouring slots with the same fate and no run — in words.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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
    #[serde(serialize_with = "ser_opt_time")]
    pub next_fire: Option<DateTime<Utc>>,
    /// The next fire and what it depends on, or why there is none.
    pub next: String,
}

/// A mark of the Routines view's strip: one slot, or a stretch of time when there are too many.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
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
        Ok(Surroundings { presence: store.presence_since(&device, since)?, global_paused: store.global_paused()?, device, now })
    }
}

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
            next_fire: None,
            next: "none — the file is invalid; fix it and the next slot fires as usual".into(),
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
    let lines = evidence.explain(store, name, &slots, start, now)?;
    if lines.is_empty() {
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
        schedule_words: Some(super::routines::schedule_words(r)),
        from,
        until: now,
        lines,
        notes,
        next_fire,
        next,
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

/// Everything a slot's fate is read from.
struct Evidence<'a> {
    r: &'a Routine,
    now: DateTime<Utc>,
    device: &'a str,
    state: Option<RoutineRow>,
    /// Oldest first.
    presence: &'a [Presence],
    /// Oldest first; the routine's and the engine's (`*`).
    events: Vec<EventRow>,
    global_paused: bool,
}

impl<'a> Evidence<'a> {
    /// `r`'s own records (its state and events) in `around`.
    fn read(store: &crate::store::Store, around: &'a Surroundings, r: &'a Routine) -> Result<Evidence<'a>> {
        Ok(Evidence {
            r,
            now: around.now,
            device: &around.device,
            state: store.peek_routine_state(&r.name)?,
            presence: &around.presence,
            events: store.routine_events(&r.name)?,
            global_paused: around.global_paused,
        })
    }
}

/// Whether a scheduler was alive at an instant.
enum Alive {
    There,
    /// Not there, in words with the stretch of time.
    Absent(String),
    /// Before the first record.
    Unknown,
}

/// A presence stretch counts until this long after its last sighting (passes are ≤ 30 s apart).
const SEEN_SLACK_SECS: i64 = 45;

/// Above this many slots the window is explained in two halves at once (the older on a second
/// connection, on its own thread): reading and wording 130 000 rows is most of `why`'s time.
const SPLIT_ABOVE: usize = 20_000;

impl Evidence<'_> {
    /// The lines of `slots` (newest first) in `[start, until]`, with their rows from the store.
    fn explain(&self, store: &crate::store::Store, name: &str, slots: &[DateTime<Utc>], start: DateTime<Utc>, until: DateTime<Utc>) -> Result<Vec<SlotLine>> {
        if slots.len() <= SPLIT_ABOVE {
            return Ok(self.lines(slots, store.slot_rows(name, start, until)?));
        }
        let (newer, older) = slots.split_at(slots.len() / 2);
        // Newer: (mid, until]; older: [start, mid] — the slot at `mid` is the older half's first.
        let mid = older[0];
        let (newer_lines, older_lines) = std::thread::scope(|s| {
            let older_half = s.spawn(move || -> Result<Vec<SlotLine>> {
                let reader = store.reader()?;
                Ok(self.lines(older, reader.slot_rows(name, start, mid)?))
            });
            let newer_lines = store.slot_rows(name, mid + Span::milliseconds(1), until).map(|rows| self.lines(newer, rows));
            let older_lines = older_half.join().unwrap_or_else(|_| Err(crate::Error::new(crate::ErrorCode::StoreUnavailable, "explaining the older slots failed")));
            (newer_lines, older_lines)
        });
        let mut lines = newer_lines?;
        let mut older_lines = older_lines?.into_iter();
        // A group of slots that spans the halves is one line.
        if let (Some(last), Some(first)) = (lines.last_mut(), older_lines.as_slice().first()) {
            if last.run_id.is_none() && first.run_id.is_none() && last.fate == first.fate && last.sentence == first.sentence {
                last.from = first.from;
                last.slots += first.slots;
                older_lines.next();
            }
        }
        lines.extend(older_lines);
        Ok(lines)
    }

    /// Slots (newest first) and their rows (newest first) as lines, newest first.
    fn lines(&self, slots: &[DateTime<Utc>], rows: Vec<SlotRow>) -> Vec<SlotLine> {
        let mut lines: Vec<SlotLine> = Vec::with_capacity(slots.len().max(rows.len()));
        let mut rows = rows.into_iter().peekable();
        let mut slots = slots.iter().copied().peekable();
        loop {
            // Merge newest first; a row whose slot the schedule no longer has is still evidence.
            let take_row = match (slots.peek(), rows.peek()) {
                (None, None) => break,
                (Some(s), Some(row)) => row.slot >= *s,
                (None, Some(_)) => true,
                (Some(_), None) => false,
            };
            if take_row {
                let row = rows.next().expect("peeked");
                if slots.peek() == Some(&row.slot) {
                    slots.next();
                }
                lines.push(self.of_row(row));
                continue;
            }
            let slot = slots.next().expect("peeked");
            let (fate, sentence) = self.without_row(slot);
            match lines.last_mut() {
                Some(last) if last.run_id.is_none() && last.fate == fate && last.sentence == sentence => {
                    last.from = slot;
                    last.slots += 1;
                }
                _ => lines.push(SlotLine { at: slot, from: slot, slots: 1, fate, tone: tone(fate, None), sentence: sentence.into(), run_id: None, status: None, duration_ms: None }),
            }
        }
        lines
    }

    fn of_row(&self, row: SlotRow) -> SlotLine {
        let message = row.message.as_deref().unwrap_or("");
        let (fate, sentence): (Fate, Cow<'static, str>) = match row.status {
            RunStatus::Queued => (Fate::Ran, "queued — waiting for a free lane".into()),
            RunStatus::Running => (Fate::Ran, "running now".into()),
            RunStatus::Missed => {
                let mut s = format!("missed — {}", self.missed_because(row.slot));
                if row.reason == Some(crate::run::Reason::Superseded) {
                    s += "; superseded by a later slot";
                } else if row.reason.is_none() && !self.r.catchup {
                    s += "; the routine has `catchup: false`";
                }
                (Fate::Missed, s.into())
            }
            RunStatus::Skipped => (Fate::Skipped, format!("skipped — {}", message.trim_start_matches("skipped: ")).into()),
            RunStatus::Blocked => (Fate::Blocked, format!("blocked — {}", if message.is_empty() { "its account could not sign in" } else { message }).into()),
            done if row.trigger == Trigger::Catchup => {
                let when = row.started_at.map(|t| format!(" at {}", local_day_time(t, self.r.timezone))).unwrap_or_default();
                let why = self.absence(row.slot).map(|a| format!(" — {a}")).unwrap_or_default();
                (Fate::CaughtUp, format!("caught up later{when} as run {} ({}){why}", row.id, status_words(done)).into())
            }
            done => (Fate::Ran, Cow::Borrowed(ran_words(done))),
        };
        let tone = tone(fate, Some(row.status));
        SlotLine { at: row.slot, from: row.slot, slots: 1, fate, tone, sentence, run_id: Some(row.id), status: Some(row.status), duration_ms: row.duration_ms }
    }

    /// Why a slot recorded missed was not run: no scheduler there at the time, else what the
    /// routine was then (a file fixed later, a pause), else what the scheduler itself said.
    fn missed_because(&self, slot: DateTime<Utc>) -> String {
        if let Some(absence) = self.absence(slot) {
            return absence;
        }
        match self.without_row(slot) {
            (Fate::Invalid | Fate::Disabled | Fate::Paused, words) => words,
            _ => "Nightshift was not running".into(),
        }
    }

    /// A slot without a row.
    fn without_row(&self, slot: DateTime<Utc>) -> (Fate, String) {
        let r = self.r;
        let tz = r.timezone;
        if let Some(end) = r.end_at.filter(|end| slot > *end) {
            return (Fate::Ended, format!("after end_at ({})", local_day_time(end, tz)));
        }
        match self.last_event(slot, &r.name, &[RoutineEvent::Invalid, RoutineEvent::Valid, RoutineEvent::Disabled, RoutineEvent::Enabled]) {
            Some(e) if e.event == RoutineEvent::Invalid => {
                let detail = e.detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
                return (Fate::Invalid, format!("file invalid since {}{detail}", local_day_time(e.at, tz)));
            }
            Some(e) if e.event == RoutineEvent::Disabled => return (Fate::Disabled, format!("routine disabled (enabled: false) since {}", local_day_time(e.at, tz))),
            None if !r.enabled => return (Fate::Disabled, "routine disabled (enabled: false)".into()),
            _ => {}
        }
        if let Some(sentence) = self.paused_at(slot) {
            return (Fate::Paused, sentence);
        }
        if !r.runs_on(self.device) {
            return (Fate::OtherDevice, format!("not this device (devices: {}; this is {})", r.devices.join(", "), self.device));
        }
        let checked = self.state.as_ref().map(|s| s.checked_until);
        if checked.is_none_or(|c| slot > c) {
            return match self.running_now() {
                true => (Fate::Pending, "due — the scheduler takes it at its next pass".into()),
                false => {
                    let then = if r.catchup { "the newest of these runs once as a catch-up" } else { "they are recorded missed (`catchup: false`)" };
                    let since = self.absence(slot).unwrap_or_else(|| "no Nightshift running".into());
                    (Fate::Missed, format!("not run yet — {since}; when the app or the daemon starts, {then}"))
                }
            };
        }
        match self.presence_at(slot) {
            Alive::Absent(absence) => (Fate::Missed, format!("missed — {absence}")),
            Alive::There => (Fate::NoRecord, "no record — Nightshift was running then but recorded nothing for this slot".into()),
            Alive::Unknown => (Fate::NoRecord, "no record — from before Nightshift recorded when it runs on this machine".into()),
        }
    }

    /// The latest event of these kinds at or before `t`, for the routine or (`*`) all routines.
    fn last_event(&self, t: DateTime<Utc>, routine: &str, kinds: &[RoutineEvent]) -> Option<&EventRow> {
        let end = self.events.partition_point(|e| e.at <= t);
        self.events[..end].iter().rev().find(|e| e.routine == routine && kinds.contains(&e.event))
    }

    /// "paused since …, by you" when the routine (or everything) was paused at `t`.
    fn paused_at(&self, t: DateTime<Utc>) -> Option<String> {
        let tz = self.r.timezone;
        let kinds = [RoutineEvent::Paused, RoutineEvent::Resumed];
        let mine = self.last_event(t, &self.r.name, &kinds);
        match mine {
            Some(e) if e.event == RoutineEvent::Paused => {
                return Some(match &e.detail {
                    Some(reason) => format!("paused since {} — {reason}", local_day_time(e.at, tz)),
                    None => format!("paused since {}, by you", local_day_time(e.at, tz)),
                })
            }
            // Paused before its pauses were recorded: the state still says since when.
            None => {
                if let Some(s) = self.state.as_ref().filter(|s| s.paused && s.paused_at.is_some_and(|p| p <= t)) {
                    let since = local_day_time(s.paused_at.unwrap_or(t), tz);
                    return Some(match &s.paused_reason {
                        Some(reason) => format!("paused since {since} — {reason}"),
                        None => format!("paused since {since}, by you"),
                    });
                }
            }
            _ => {}
        }
        match self.last_event(t, "*", &kinds) {
            Some(e) if e.event == RoutineEvent::Paused => Some(format!("everything paused since {}, by you", local_day_time(e.at, tz))),
            None if self.global_paused => Some("everything paused, by you".into()),
            _ => None,
        }
    }

    /// Is a scheduler running on this machine now?
    fn running_now(&self) -> bool {
        self.presence.iter().any(|p| p.ended.is_none() && (self.now - p.last_seen).num_seconds() <= SEEN_SLACK_SECS)
    }

    /// Why no scheduler was there at `t` — "machine asleep 01:10–07:55", "no Nightshift running
    /// 01:10–07:55" — or `None` when one was, or when nothing is known about that time (before
    /// presence was first recorded on this machine).
    fn absence(&self, t: DateTime<Utc>) -> Option<String> {
        match self.presence_at(t) {
            Alive::Absent(words) => Some(words),
            Alive::There | Alive::Unknown => None,
        }
    }

    fn presence_at(&self, t: DateTime<Utc>) -> Alive {
        let tz = self.r.timezone;
        let p = self.presence;
        // Oldest first: the last stretch that started at or before t.
        let i = p.partition_point(|s| s.started_at <= t);
        let Some(b) = i.checked_sub(1).map(|j| &p[j]) else { return Alive::Unknown };
        let slept = b.ended == Some(PresenceEnd::Asleep);
        // A stretch still open (running, or killed) was last seen up to a pass ago; one that
        // stopped or slept ended exactly at its last sighting.
        if t <= b.last_seen || (b.ended.is_none() && t <= b.last_seen + Span::seconds(SEEN_SLACK_SECS)) {
            return Alive::There;
        }
        let range = match p.get(i) {
            Some(next) => time_range(b.last_seen, next.started_at, tz),
            None => format!("since {}", local_day_time(b.last_seen, tz)),
        };
        Alive::Absent(if slept { format!("machine asleep {range}") } else { format!("no Nightshift running {range}") })
    }

    /// The next fire and what it depends on.
    fn next(&self) -> (Option<DateTime<Utc>>, String) {
        let r = self.r;
        let now = self.now;
        if !r.enabled {
            return (None, "none — the routine is disabled (enabled: false)".into());
        }
        if let Some(p) = self.paused_at(now) {
            return (None, format!("none while {p}; resume it (`nightshiftctl resume {}`) and the next slot fires", r.name));
        }
        if !r.runs_on(self.device) {
            return (None, format!("none here — it fires on {} (devices:)", r.devices.join(", ")));
        }
        let Some(next) = r.next_slot(now) else {
            return match r.end_at.filter(|e| *e <= now) {
                Some(end) => (None, format!("none — end_at passed ({})", local_day_time(end, r.timezone))),
                None if r.schedule.is_none() && r.at.is_none() => (None, "none — it has no schedule; it runs when started by hand".into()),
                None => (None, "none — the schedule has no later slot".into()),
            };
        };
        let depends = if self.running_now() {
            "if this machine is awake and the app or the daemon runs"
        } else {
            "if this machine is awake and the app or the daemon runs — none is running now"
        };
        (Some(next), format!("{}, {depends}", local_day_time(next, r.timezone)))
    }
}

fn tone(fate: Fate, status: Option<RunStatus>) -> Tone {
    match fate {
        Fate::Ran | Fate::CaughtUp => match status {
            Some(RunStatus::Completed) if fate == Fate::Ran => Tone::Ok,
            Some(RunStatus::Completed) => Tone::Warn,
            Some(RunStatus::Queued | RunStatus::Running) => Tone::Pending,
            _ => Tone::Bad,
        },
        Fate::Missed | Fate::Blocked | Fate::NoRecord => Tone::Bad,
        Fate::Skipped => Tone::Warn,
        Fate::Pending => Tone::Pending,
        Fate::Paused | Fate::OtherDevice | Fate::Disabled | Fate::Invalid | Fate::Ended => Tone::Muted,
    }
}

fn status_words(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "succeeded",
        RunStatus::Failed => "failed",
        RunStatus::TimedOut => "timed out",
        RunStatus::Cancelled => "cancelled",
        other => other.as_str(),
    }
}

fn ran_words(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "ran — succeeded",
        RunStatus::Failed => "ran — failed",
        RunStatus::TimedOut => "ran — timed out",
        RunStatus::Cancelled => "ran — cancelled",
        _ => "ran",
    }
}

/// "Mon 30 Nov 09:00" in the routine's zone.
pub fn local_day_time(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz).format("%a %-d %b %H:%M").to_string()
}

/// "01:10–07:55" within a day, else "Sat 28 Nov 01:10 – Mon 30 Nov 07:55".
fn time_range(a: DateTime<Utc>, b: DateTime<Utc>, tz: Tz) -> String {
    let (la, lb) = (a.with_timezone(&tz), b.with_timezone(&tz));
    if la.date_naive() == lb.date_naive() {
        format!("{}–{}", la.format("%H:%M"), lb.format("%H:%M"))
    } else {
        format!("{} – {}", local_day_time(a, tz), local_day_time(b, tz))
    }
}
