//! The window's words and colours for run statuses and triggers, from the engine's own enums:
//! written into `ui/lib/vocabulary.js` (generated, checked in) so the window cannot list, name or
//! colour one differently from the engine. A test fails when the file is stale;
//! `NIGHTSHIFT_BLESS=1 cargo test -p nightshift-core vocabulary` writes it again.

use super::why::Tone;
use crate::routine::{Mode, RoutineState};
use crate::run::{Reason, RunStatus, Trigger};
use crate::words::Verdict;

/// How a run with this status looks: the colour of its badge, bar or border.
pub fn status_tone(status: RunStatus) -> Tone {
    match status {
        RunStatus::Queued | RunStatus::Running => Tone::Pending,
        RunStatus::Completed => Tone::Ok,
        RunStatus::Failed | RunStatus::TimedOut | RunStatus::Blocked | RunStatus::Missed => Tone::Bad,
        RunStatus::Skipped => Tone::Warn,
        RunStatus::Cancelled => Tone::Muted,
    }
}

/// Statuses of runs that never started a process (drawn lighter beside those that ran).
pub fn never_started(status: RunStatus) -> bool {
    matches!(status, RunStatus::Blocked | RunStatus::Missed | RunStatus::Skipped)
}

/// The words a person reads for a status ("timed out").
pub fn status_label(status: RunStatus) -> String {
    status.label()
}

/// How a routine's state looks.
pub fn routine_state_tone(state: RoutineState) -> Tone {
    match state {
        RoutineState::Enabled => Tone::Ok,
        RoutineState::Invalid => Tone::Bad,
        RoutineState::Paused | RoutineState::AutoPaused | RoutineState::PausedAll => Tone::Warn,
        RoutineState::Disabled | RoutineState::OtherDevice => Tone::Muted,
    }
}

/// How an account's verdict looks: red when runs on it cannot sign in.
pub fn verdict_tone(verdict: Verdict) -> Tone {
    match verdict {
        v if v.needs_login() => Tone::Bad,
        Verdict::Live | Verdict::Ok => Tone::Ok,
        Verdict::Expiring | Verdict::RateLimited => Tone::Warn,
        _ => Tone::Muted,
    }
}

/// `ui/lib/vocabulary.js`, as it must read: every word the window shows as a badge (run
/// statuses, routine states, account verdicts) with its tone and the words a person reads —
/// the same words `nightshiftctl` prints — reasons in words, who needs a login, and the modes.
pub fn javascript() -> String {
    let word = |t: Tone| serde_json::to_string(&t).unwrap_or_default();
    let quoted = |w: &dyn std::fmt::Display| format!("\"{w}\"");
    let statuses: Vec<String> = RunStatus::ALL.iter().map(|s| quoted(s)).collect();
    let tones: Vec<String> = RunStatus::ALL.iter().map(|s| format!("  {s}: {},", word(status_tone(*s)))).collect();
    let labels: Vec<String> = RunStatus::ALL.iter().map(|s| format!("  {s}: \"{}\",", status_label(*s))).collect();
    let never: Vec<String> = RunStatus::ALL.iter().filter(|s| never_started(**s)).map(|s| quoted(s)).collect();
    let live: Vec<String> = RunStatus::ALL.iter().filter(|s| !s.is_final()).map(|s| quoted(s)).collect();
    let triggers: Vec<String> = Trigger::ALL.iter().map(|t| format!("  {t}: \"{}\",", t.label())).collect();
    let badge = |w: &dyn std::fmt::Display, tone: Tone, label: &str| format!("  {w}: {{ tone: {}, label: \"{label}\" }},", word(tone));
    let badges: Vec<String> = RunStatus::ALL
        .iter()
        .map(|s| badge(s, status_tone(*s), &status_label(*s)))
        .chain(RoutineState::ALL.iter().map(|s| badge(s, routine_state_tone(*s), s.words())))
        .chain(Verdict::ALL.iter().map(|v| badge(v, verdict_tone(*v), &v.as_str().replace('_', " "))))
        .collect();
    let reasons: Vec<String> = Reason::ALL.iter().map(|r| format!("  {r}: \"{}\",", r.label())).collect();
    let needs_login: Vec<String> = Verdict::ALL.iter().filter(|v| v.needs_login()).map(|v| quoted(v)).collect();
    let modes: Vec<String> = Mode::CHOICES.iter().map(|m| format!("  [\"{m}\", \"{m} — {}\"],", m.meaning())).collect();
    format!(
        "// Generated from crates/core/src/view/vocabulary.rs — do not edit: a test fails when this file and the\n\
         // engine disagree; `NIGHTSHIFT_BLESS=1 cargo test -p nightshift-core vocabulary` writes it again.\n\n\
         /** Every run status, in the engine's order. */\n\
         export const STATUSES = [{}];\n\n\
         /** How a run with each status looks (CSS `tone-*`). */\n\
         export const STATUS_TONE = {{\n{}\n}};\n\n\
         /** The words a person reads for each status. */\n\
         export const STATUS_LABEL = {{\n{}\n}};\n\n\
         /** Statuses of runs that never started a process (drawn lighter beside those that ran). */\n\
         export const NEVER_STARTED = [{}];\n\n\
         /** Statuses of runs that are not final yet: their record can still change. */\n\
         export const LIVE = [{}];\n\n\
         /** The words a person reads for each trigger. */\n\
         export const TRIGGER_LABEL = {{\n{}\n}};\n\n\
         /** Every word shown as a badge — run statuses, routine states, account verdicts — with its tone (CSS `badge-tone-*`) and words. */\n\
         export const BADGE = {{\n{}\n}};\n\n\
         /** The words a person reads for each reason. */\n\
         export const REASON_LABEL = {{\n{}\n}};\n\n\
         /** Verdicts of accounts whose runs cannot sign in until someone logs in again. */\n\
         export const NEEDS_LOGIN = [{}];\n\n\
         /** The permission modes a routine may ask for, as a form offers them: [word, words]. */\n\
         export const MODES = [\n{}\n];\n",
        statuses.join(", "),
        tones.join("\n"),
        labels.join("\n"),
        never.join(", "),
        live.join(", "),
        triggers.join("\n"),
        badges.join("\n"),
        reasons.join("\n"),
        needs_login.join(", "),
        modes.join("\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_windows_vocabulary_file_is_current() {
        crate::view::assert_generated_file_is_current("ui/lib/vocabulary.js", &javascript(), "vocabulary");
    }

    #[test]
    fn every_status_has_a_tone_and_words() {
        assert_eq!(status_tone(RunStatus::Completed), Tone::Ok);
        assert_eq!(status_label(RunStatus::TimedOut), "timed out");
        assert!(javascript().contains("timed_out: \"bad\","));
        assert!(javascript().contains("export const NEVER_STARTED = [\"blocked\", \"missed\", \"skipped\"];"));
        assert!(javascript().contains("export const LIVE = [\"queued\", \"running\"];"));
    }

    #[test]
    fn badges_speak_the_clis_words_and_tones_follow_the_engines_rules() {
        let js = javascript();
        assert!(js.contains("  auto_paused: { tone: \"warn\", label: \"auto-paused\" },"), "{js}");
        assert!(js.contains("  revoked: { tone: \"bad\", label: \"revoked\" },"), "{js}");
        assert!(js.contains("export const NEEDS_LOGIN = [\"expired\", \"revoked\", \"unconfigured\"];"), "{js}");
        assert!(js.contains("  [\"auto\", \"auto — the agent decides (default)\"],"), "{js}");
        for s in RunStatus::ALL {
            assert_eq!(status_tone(*s) == Tone::Bad, s.is_failure() || *s == RunStatus::Missed, "{s}");
        }
    }
}
