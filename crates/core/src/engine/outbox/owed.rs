//! What a final row owes the user — its outbox entries — decided in one place for both ways a row
//! becomes final: a run that settled (`finalize`) and a slot the scheduler's claim writes final
//! (missed, skipped). The entries are written in the same transaction as the final row, so what
//! is owed is never lost and never owed twice.

use crate::run::{Channel, PingEvent, Reason, RunStatus};
use crate::settings::Settings;

/// The facts of a final row that decide what it owes.
pub(crate) struct Final<'a> {
    pub status: RunStatus,
    pub reason: Option<Reason>,
    /// The webhooks its routine lists (`webhooks:`).
    pub webhooks: &'a [String],
    /// Its routine wants a slot that did nothing told (`notify_missed`).
    pub notify_missed: bool,
    /// Its routine has a heartbeat (`ping:`) and the run started (its start ping is owed too).
    pub pings: bool,
    /// A worktree run's branch still has to be pushed.
    pub push_pending: bool,
}

/// The outbox channels `row` owes: a run that settled owes its finish notification, its
/// webhooks (those it lists, and those whose `on` takes it), its end ping and a pending push; a
/// slot that did nothing owes a notice — notification and the webhooks that hear of failures —
/// only when its routine wants it told, and a slot made up by a later one nothing.
pub(crate) fn owed(row: &Final<'_>, settings: &Settings) -> Vec<Channel> {
    if matches!(row.status, RunStatus::Missed | RunStatus::Skipped) {
        if !(row.notify_missed && row.status.is_quiet_slot(row.reason)) {
            return Vec::new();
        }
        let mut owed = vec![Channel::Notify];
        owed.extend(crate::webhook::owed(true, row.webhooks, settings));
        return owed;
    }
    let mut owed = vec![Channel::Notify];
    owed.extend(crate::webhook::owed(row.status.is_failure(), row.webhooks, settings));
    if row.pings {
        owed.push(Channel::Ping(PingEvent::End));
    }
    if row.push_pending {
        owed.push(Channel::Push);
    }
    owed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: RunStatus, reason: Option<Reason>) -> Final<'static> {
        Final { status, reason, webhooks: &[], notify_missed: true, pings: false, push_pending: false }
    }

    #[test]
    fn settled_runs_and_quiet_slots_owe_from_one_rule() {
        let s: Settings = toml::from_str("[[webhooks]]\nname = \"team\"\nurl = \"http://127.0.0.1:1/\"\non = \"failures\"\n").unwrap();
        let team = Channel::Webhook("team".into());
        assert_eq!(owed(&row(RunStatus::Completed, None), &s), [Channel::Notify]);
        assert_eq!(owed(&row(RunStatus::Failed, Some(Reason::ExitNonzero)), &s), [Channel::Notify, team.clone()]);
        let full = Final { pings: true, push_pending: true, ..row(RunStatus::Completed, None) };
        assert_eq!(owed(&full, &s), [Channel::Notify, Channel::Ping(PingEvent::End), Channel::Push]);
        // A slot that did nothing: told like a failure, when the routine wants it.
        assert_eq!(owed(&row(RunStatus::Missed, None), &s), [Channel::Notify, team.clone()]);
        assert_eq!(owed(&row(RunStatus::Skipped, Some(Reason::ActiveRun)), &s), [Channel::Notify, team]);
        assert!(owed(&Final { notify_missed: false, ..row(RunStatus::Missed, None) }, &s).is_empty());
        assert!(owed(&row(RunStatus::Missed, Some(Reason::Superseded)), &s).is_empty(), "made up by a later slot's run");
    }
}
