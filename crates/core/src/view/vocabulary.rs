//! The window's words and colours for run statuses and triggers, from the engine's own enums:
//! written into `ui/lib/vocabulary.js` (generated, checked in) so the window cannot list, name or
//! colour one differently from the engine. A test fails when the file is stale;
//! `NIGHTSHIFT_BLESS=1 cargo test -p nightshift-core vocabulary` writes it again.

use super::why::Tone;
use crate::run::{RunStatus, Trigger};

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
    status.as_str().replace('_', " ")
}

/// `ui/lib/vocabulary.js`, as it must read.
pub fn javascript() -> String {
    let word = |t: Tone| serde_json::to_string(&t).unwrap_or_default();
    let statuses: Vec<String> = RunStatus::ALL.iter().map(|s| format!("\"{s}\"")).collect();
    let tones: Vec<String> = RunStatus::ALL.iter().map(|s| format!("  {s}: {},", word(status_tone(*s)))).collect();
    let labels: Vec<String> = RunStatus::ALL.iter().map(|s| format!("  {s}: \"{}\",", status_label(*s))).collect();
    let never: Vec<String> = RunStatus::ALL.iter().filter(|s| never_started(**s)).map(|s| format!("\"{s}\"")).collect();
    let live: Vec<String> = RunStatus::ALL.iter().filter(|s| !s.is_final()).map(|s| format!("\"{s}\"")).collect();
    let triggers: Vec<String> = Trigger::ALL.iter().map(|t| format!("  {t}: \"{}\",", t.label())).collect();
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
         export const TRIGGER_LABEL = {{\n{}\n}};\n",
        statuses.join(", "),
        tones.join("\n"),
        labels.join("\n"),
        never.join(", "),
        live.join(", "),
        triggers.join("\n"),
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
}
