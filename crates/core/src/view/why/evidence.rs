//! Reading a slot's fate from the evidence: the slot's row, the scheduler's presence on this
//! machine and the routine's events — in the order the parent module's doc gives.

use super::*;
use crate::engine::presence::{self, Alive, SEEN_SLACK_SECS};

/// Everything a slot's fate is read from.
pub(super) struct Evidence<'a> {
    r: &'a Routine,
    now: DateTime<Utc>,
    device: &'a str,
    pub(super) state: Option<RoutineRow>,
    /// Oldest first.
    presence: &'a [Presence],
    /// Oldest first; the routine's and the engine's (`*`).
    events: Vec<EventRow>,
    global_paused: bool,
}

impl<'a> Evidence<'a> {
    /// `r`'s own records (its state and events) in `around`.
    pub(super) fn read(store: &crate::store::Store, around: &'a Surroundings, r: &'a Routine) -> Result<Evidence<'a>> {
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

/// Above this many slots the window is explained in two halves at once (the older on a second
/// connection, on its own thread): reading and wording 130 000 rows is most of `why`'s time.
const SPLIT_ABOVE: usize = 20_000;

impl Evidence<'_> {
    /// The lines of `slots` (newest first) in `[start, until]`, with their rows from the store.
    pub(super) fn explain(&self, store: &crate::store::Store, name: &str, slots: &[DateTime<Utc>], start: DateTime<Utc>, until: DateTime<Utc>) -> Result<Vec<SlotLine>> {
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
    pub(super) fn lines(&self, slots: &[DateTime<Utc>], rows: Vec<SlotRow>) -> Vec<SlotLine> {
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

    pub(super) fn of_row(&self, row: SlotRow) -> SlotLine {
        let message = row.message.as_deref().unwrap_or("");
        let (fate, sentence): (Fate, Cow<'static, str>) = match row.status {
            // What it waits for: a free lane, or a time (a retry's backoff, a limit's reset).
            RunStatus::Queued if message.starts_with("queued") => (Fate::Ran, message.to_string().into()),
            RunStatus::Queued if !message.is_empty() => (Fate::Ran, format!("queued — {message}").into()),
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
                (Fate::CaughtUp, format!("caught up later{when} as run {} ({}{}){why}", row.id, status_words(done), tries_words(&row.attempts, message)).into())
            }
            done if !row.attempts.is_empty() => (Fate::Ran, format!("{}{}", ran_words(done), tries_words(&row.attempts, message)).into()),
            done => (Fate::Ran, Cow::Borrowed(ran_words(done))),
        };
        // Where it ran, when not here: "ran — succeeded on ci · run 1234 · acme/app".
        let sentence = match crate::run::place(row.host.as_deref(), row.remote_url.as_deref()).filter(|_| !matches!(fate, Fate::Missed | Fate::Skipped)) {
            Some(place) => format!("{sentence} on {place}").into(),
            None => sentence,
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
    pub(super) fn without_row(&self, slot: DateTime<Utc>) -> (Fate, String) {
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
    /// 01:10–07:55" — or `None` when one was, or when nothing is known about that time.
    fn absence(&self, t: DateTime<Utc>) -> Option<String> {
        presence::absence_at(self.presence, t, self.r.timezone)
    }

    fn presence_at(&self, t: DateTime<Utc>) -> Alive {
        presence::alive_at(self.presence, t, self.r.timezone)
    }

    /// The next fire and what it depends on.
    pub(super) fn next(&self) -> (Option<DateTime<Utc>>, String) {
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
                None if r.schedule.is_none() && r.at.is_none() => match &r.trigger {
                    Some(t) => (None, format!("on the next delivery of {} — it has no clock", t.words())),
                    None => (None, "none — it has no schedule; it runs when started by hand".into()),
                },
                None => (None, "none — the schedule has no later slot".into()),
            };
        };
        let depends = if self.running_now() {
            "if this machine is awake and the app or the daemon runs"
        } else {
            "if this machine is awake and the app or the daemon runs — none is running now"
        };
        let moved = match r.schedule.as_ref().and_then(|s| Some((s.jitter?, s.fire_of(next)))) {
            Some((jitter, fire)) if fire != next => {
                format!(" ({} moved by `jitter: {}`)", local_day_time(fire, r.timezone), humantime::format_duration(jitter.span))
            }
            _ => String::new(),
        };
        (Some(next), format!("{}{moved}, {depends}", local_day_time(next, r.timezone)))
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

/// How a run that took more than one try got there — " after a retry", " after 2 retries",
/// " after waiting for the limit", " after failing over to another account" — and, when it was not
/// tried again although it could have been, why ("; not retried: the next try … would come after
/// the next slot …"), as its message says it. (`attempts` holds every try, the last included; a
/// try led to the next one after a wait when it has `next_at`, at once — failover — when not.)
fn tries_words(attempts: &[crate::run::Attempt], message: &str) -> String {
    let led_on = &attempts[..attempts.len().saturating_sub(1)];
    let waited = |a: &&crate::run::Attempt| a.next_at.is_some() && a.reason == Some(crate::run::Reason::RateLimited);
    let waits = led_on.iter().filter(waited).count();
    let retries = led_on.iter().filter(|a| a.next_at.is_some()).count() - waits;
    let mut words = match (waits, retries) {
        (0, 0) if !led_on.is_empty() => " after failing over to another account".to_string(),
        (0, 0) => String::new(),
        (0, 1) => " after a retry".to_string(),
        (0, n) => format!(" after {n} retries"),
        (_, 0) => " after waiting for the limit".to_string(),
        (_, n) => format!(" after waiting for the limit and {n} retr{}", if n == 1 { "y" } else { "ies" }),
    };
    // A retry that continued the agent's own session, not the work from the top.
    if attempts.iter().any(|a| a.resumed.is_some()) {
        words += ", continuing its session";
    }
    let notes = ["not retried: ", "not tried again: ", "not waited for: ", "not waited for again: "];
    if let Some(at) = notes.iter().filter_map(|n| message.find(n)).min() {
        words += "; ";
        words += &message[at..];
    }
    words
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

#[cfg(test)]
mod tests {
    use super::tries_words;
    use crate::run::{Attempt, Reason, RunStatus};

    fn try_(reason: Option<Reason>, waited: bool) -> Attempt {
        let status = if reason.is_some() { RunStatus::Failed } else { RunStatus::Completed };
        Attempt { account: None, status, reason, message: None, resets_at: None, started_at: None, finished_at: None, next_at: waited.then(chrono::Utc::now), session: None, work: 0, resumed: None }
    }

    #[test]
    fn how_a_run_got_there_in_words() {
        let api = Some(Reason::ApiUnavailable);
        let limit = Some(Reason::RateLimited);
        assert_eq!(tries_words(&[try_(api, true), try_(None, false)], ""), " after a retry");
        assert_eq!(tries_words(&[try_(api, true), try_(api, true), try_(None, false)], ""), " after 2 retries");
        assert_eq!(tries_words(&[try_(limit, true), try_(None, false)], ""), " after waiting for the limit");
        assert_eq!(tries_words(&[try_(limit, true), try_(api, true), try_(None, false)], ""), " after waiting for the limit and 1 retry");
        assert_eq!(tries_words(&[try_(limit, false), try_(None, false)], ""), " after failing over to another account");
        // The last try waited for a next one that never came: said by the message's note.
        let note = "API Error: 529; not retried: the next try (03:05:00 UTC) would come after the next slot (03:00:00 UTC), which runs instead";
        assert_eq!(tries_words(&[try_(api, true), try_(api, false)], note), " after a retry; not retried: the next try (03:05:00 UTC) would come after the next slot (03:00:00 UTC), which runs instead");
        assert_eq!(tries_words(&[], ""), "");
    }
}
