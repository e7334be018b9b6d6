//! Budgets as the engine keeps them: which apply to a run (its routine's, `[budget]`'s, its
//! account's), whether one is spent (the driver blocks the run), where each stands (`usage`, the
//! Usage view), and which one a settled run carried past 80 % (its notification says so — once,
//! since only one run crosses). A routine's budget counts in the routine's zone; `[budget]` and
//! an account's in this machine's zone (they are not any one routine's).

use super::Core;
use crate::budget::{Budget, Period, Reached};
use crate::routine::Routine;
use crate::run::RunRecord;
use crate::settings::Settings;
use crate::store::{Spender, Store};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;

/// One budget that applies: whose it is, its caps, the zone its days and months are counted in.
struct Applies<'a> {
    scope: String,
    by: Spender<'a>,
    budget: &'a Budget,
    tz: Tz,
}

/// The budgets a run of `routine` counts against: its own, `[budget]`'s, and — when it runs on
/// one — its account's.
fn applying<'a>(settings: &'a Settings, routine: &'a Routine, account: Option<&'a str>) -> Vec<Applies<'a>> {
    let local = crate::schedule::local_tz();
    let mut all = Vec::new();
    if let Some(b) = &routine.budget {
        all.push(Applies { scope: format!("routine {}", routine.name), by: Spender::Routine(&routine.name), budget: b, tz: routine.timezone });
    }
    all.push(Applies { scope: "all runs".into(), by: Spender::All, budget: &settings.budget, tz: local });
    if let Some(email) = account {
        if let Some(b) = settings.accounts.iter().find(|a| a.email == email && a.agent == routine.agent()).and_then(|a| a.budget.as_ref()) {
            all.push(Applies { scope: format!("account {email}"), by: Spender::Account(email), budget: b, tz: local });
        }
    }
    all
}

fn spent<'a>(store: &'a Store, by: Spender<'a>) -> impl Fn(DateTime<Utc>) -> f64 + 'a {
    move |since| {
        store.spent(by, since).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "could not read what runs spent");
            0.0
        })
    }
}

/// The first spent day's or month's budget that stops a run of `routine` (with `account`: only
/// that account's; without: the routine's and `[budget]`'s), with the zone it is counted in.
pub(crate) fn reached(core: &Core, routine: &Routine, account: Option<&str>) -> Option<(Reached, Tz)> {
    let settings = core.settings();
    let now = core.clock.now();
    applying(&settings, routine, account)
        .into_iter()
        .filter(|a| matches!(a.by, Spender::Account(_)) == account.is_some())
        .find_map(|a| crate::budget::reached(a.budget, &a.scope, spent(&core.store, a.by), now, a.tz).map(|r| (r, a.tz)))
}

/// The words for the notification of `run` when it carried a budget past 80 %: "82 % of a budget:
/// spent $8.20 of $10 today (all runs); frees at midnight UTC".
pub(crate) fn crossed(core: &Core, routine: &Routine, run: &RunRecord) -> Option<String> {
    let cost = run.cost_usd.filter(|c| *c > 0.0)?;
    let at = run.started_at?;
    let settings = core.settings();
    applying(&settings, routine, run.account.as_deref()).into_iter().find_map(|a| {
        [(Period::Day, a.budget.day), (Period::Month, a.budget.month)].into_iter().find_map(|(period, cap)| {
            let cap = cap.filter(|c| *c > 0.0)?;
            let before = core.store.spent_before(a.by, period.start(at, a.tz), &run.id).ok()?;
            let after = before + cost;
            (before < 0.8 * cap && after >= 0.8 * cap).then(|| {
                let r = Reached { scope: a.scope.clone(), period, spent: after, cap, frees_at: period.end(at, a.tz) };
                format!("{} % of a budget: {}", ((after / cap) * 100.0).floor().min(999.0), r.words(a.tz))
            })
        })
    })
}

/// Where one budget stands (`usage`, the Usage view).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BudgetState {
    /// "all runs", "routine nightly", "account work@acme.dev".
    pub scope: String,
    #[cfg_attr(test, ts(type = "\"day\" | \"month\""))]
    pub period: &'static str,
    /// What runs reported spending in the period so far (USD).
    pub spent: f64,
    pub cap: f64,
    /// RFC 3339: when the period ends and the budget frees.
    pub frees_at: String,
    pub timezone: String,
}

/// Every day's and month's budget there is — `[budget]`'s, each account's, each routine's — and
/// where it stands now.
pub(crate) fn states(core: &Core) -> crate::error::Result<Vec<BudgetState>> {
    let settings = core.settings();
    let routines = core.routines();
    let now = core.clock.now();
    let local = crate::schedule::local_tz();
    let mut all: Vec<(String, Spender<'_>, &Budget, Tz)> = vec![("all runs".into(), Spender::All, &settings.budget, local)];
    for a in &settings.accounts {
        if let Some(b) = &a.budget {
            all.push((format!("account {}", a.email), Spender::Account(&a.email), b, local));
        }
    }
    for r in &routines.routines {
        if let Some(b) = &r.budget {
            all.push((format!("routine {}", r.name), Spender::Routine(&r.name), b, r.timezone));
        }
    }
    let mut out = Vec::new();
    for (scope, by, budget, tz) in all {
        for (period, word, cap) in [(Period::Day, "day", budget.day), (Period::Month, "month", budget.month)] {
            let Some(cap) = cap else { continue };
            out.push(BudgetState {
                scope: scope.clone(),
                period: word,
                spent: core.store.spent(by, period.start(now, tz))?,
                cap,
                frees_at: crate::words::fmt_time(&period.end(now, tz)),
                timezone: tz.name().to_string(),
            });
        }
    }
    Ok(out)
}
