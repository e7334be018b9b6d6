//! An account's usage windows as the engine tells of them: when a window passes 80 % or 95 %
//! (a line in the finish notification of the run whose report passed it — once per mark and
//! reset, since only one report is the first of its period to pass a mark, and the outbox sends
//! each run's notification once), and when a window that held work resets (a notice as that work
//! starts, once per account and reset).

use crate::engine::state::Core;
use crate::notify::Notice;
use crate::run::{LimitWindow, Reason, RunRecord};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::collections::{BTreeMap, HashSet};

/// The lines for `run`'s finish notification, one per window its report carried past a mark
/// (the highest mark passed), times in `tz`.
pub(crate) fn marks_passed(core: &Core, run: &RunRecord, tz: Tz) -> Vec<String> {
    let reports = core.store.windows_of_run(&run.id).unwrap_or_else(|e| {
        tracing::warn!(run = %run.id, error = %e, "could not read the run's usage windows");
        Vec::new()
    });
    let mut passed: BTreeMap<(String, String), (LimitWindow, f64)> = BTreeMap::new();
    for (account, w, before) in reports {
        let Some(mark) = w.mark_passed(before) else { continue };
        let key = (account, w.window.clone());
        if passed.get(&key).is_none_or(|(_, m)| *m < mark) {
            passed.insert(key, (w, mark));
        }
    }
    passed.into_iter().map(|((account, _), (w, mark))| mark_words(&account, &w, mark, tz)).collect()
}

/// "work@acme.dev's 5h window is 85 % used (past 80 %); it resets Fri 4 Dec 04:12 CET".
pub(crate) fn mark_words(account: &str, w: &LimitWindow, mark: f64, tz: Tz) -> String {
    let resets = w.resets_at.map(|t| format!("; it resets {}", t.with_timezone(&tz).format("%a %-d %b %H:%M %Z"))).unwrap_or_default();
    format!("{account}'s {} window is {:.0} % used (past {mark:.0} %){resets}", w.short_name(), w.used_percent.floor())
}

/// The notice for a run that starts because the window that held it reset — a run whose last
/// try met its account's limit (or was kept off its reserve) and waited for the reset — once per
/// account and reset (`told` remembers which were told). Times in `tz`.
pub(crate) fn reset_notice(run: &RunRecord, now: DateTime<Utc>, tz: Tz, told: &mut HashSet<(String, String)>) -> Option<Notice> {
    let last = run.attempts.last().filter(|a| a.reason == Some(Reason::RateLimited))?;
    let account = last.account.clone()?;
    let reset = last.resets_at.or(last.next_at).filter(|t| *t <= now)?;
    if !told.insert((account.clone(), crate::words::fmt_time(&reset))) {
        return None;
    }
    let waited = last.finished_at.map(|t| format!(" (it waited since {})", t.with_timezone(&tz).format("%H:%M"))).unwrap_or_default();
    Some(Notice {
        summary: format!("↻ {account}'s limit reset · held work starts"),
        body: format!("{} starts now{waited}", run.routine),
        run_id: Some(run.id.clone()),
        critical: false,
        asks: false,
        tag: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Attempt, RunStatus};

    fn window(used: f64) -> LimitWindow {
        LimitWindow { window: "five_hour".into(), used_percent: used, resets_at: None, status: "allowed".into(), seen_at: Utc::now(), run_id: None }
    }

    #[test]
    fn a_mark_is_passed_once_per_period_and_the_highest_one_counts() {
        assert_eq!(window(85.0).mark_passed(None), Some(80.0), "the first report of a period");
        assert_eq!(window(85.0).mark_passed(Some(70.0)), Some(80.0));
        assert_eq!(window(85.0).mark_passed(Some(82.0)), None, "an earlier report passed it");
        assert_eq!(window(97.0).mark_passed(Some(82.0)), Some(95.0));
        assert_eq!(window(97.0).mark_passed(Some(10.0)), Some(95.0), "past both: the higher one is told");
        assert_eq!(window(79.9).mark_passed(None), None);
        assert_eq!(window(80.0).mark_passed(Some(79.0)), Some(80.0), "reaching the mark passes it");
    }

    #[test]
    fn a_reset_that_held_work_is_told_once_per_account_and_reset() {
        let now = Utc::now();
        let reset = now - chrono::Duration::minutes(1);
        let limited = Attempt {
            account: Some("work@acme.dev".into()),
            status: RunStatus::Failed,
            reason: Some(Reason::RateLimited),
            message: None,
            resets_at: Some(reset),
            started_at: None,
            finished_at: Some(now - chrono::Duration::hours(2)),
            next_at: Some(reset),
            session: None,
            work: 0,
            resumed: None,
        };
        let run = |id: &str, attempts: Vec<Attempt>| RunRecord { id: id.into(), routine: "nightly".into(), attempts, ..RunRecord::sample(RunStatus::Running, None) };
        let mut told = HashSet::new();
        let n = reset_notice(&run("r1", vec![limited.clone()]), now, Tz::UTC, &mut told).expect("told");
        assert_eq!(n.summary, "↻ work@acme.dev's limit reset · held work starts");
        assert!(n.body.starts_with("nightly starts now (it waited since "), "{}", n.body);
        assert!(reset_notice(&run("r2", vec![limited.clone()]), now, Tz::UTC, &mut told).is_none(), "the same reset is told once");
        let failed = Attempt { reason: Some(Reason::ExitNonzero), ..limited.clone() };
        assert!(reset_notice(&run("r3", vec![failed]), now, Tz::UTC, &mut HashSet::new()).is_none(), "a retry after a failure is no reset");
        assert!(reset_notice(&run("r4", vec![]), now, Tz::UTC, &mut HashSet::new()).is_none(), "a first start is no reset");
    }
}
