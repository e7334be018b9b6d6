//! Budgets as the engine keeps them: which apply to a run (its routine's, `[budget]`'s, its
//! account's), whether one is spent (the driver blocks the run), where each stands (`usage`, the
//! Usage view), and which one a settled run carried past 80 % (its notification says so — once,
//! since only one run crosses). A routine's budget counts in the routine's zone; `[budget]` and
//! an account's in this machine's zone (they are not any one routine's).

use crate::engine::state::Core;
use crate::budget::{Budget, Reached};
use crate::routine::Routine;
use crate::run::RunRecord;
use crate::settings::{AccountSettings, Settings};
use crate::store::{Spender, Store};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;

/// One budget: whose it is, its caps, the zone its days and months are counted in.
struct Applies<'a> {
    scope: String,
    by: Spender<'a>,
    budget: &'a Budget,
    tz: Tz,
}

impl<'a> Applies<'a> {
    /// `[budget]`: all runs, in this machine's zone.
    fn all(settings: &'a Settings) -> Self {
        Applies { scope: "all runs".into(), by: Spender::All, budget: &settings.budget, tz: crate::schedule::local_tz() }
    }

    /// An account's `budget`, in this machine's zone.
    fn account(a: &'a AccountSettings) -> Option<Self> {
        let budget = a.budget.as_ref()?;
        Some(Applies { scope: format!("account {}", a.email), by: Spender::Account(&a.email), budget, tz: crate::schedule::local_tz() })
    }

    /// A routine's `budget:`, in the routine's zone.
    fn routine(r: &'a Routine) -> Option<Self> {
        let budget = r.budget.as_ref()?;
        Some(Applies { scope: format!("routine {}", r.name), by: Spender::Routine(&r.name), budget, tz: r.timezone })
    }
}

/// The budgets a run of `routine` counts against: its own, `[budget]`'s, and — when it runs on
/// one — its account's.
fn applying<'a>(settings: &'a Settings, routine: &'a Routine, account: Option<&str>) -> Vec<Applies<'a>> {
    let of_account = account.and_then(|email| settings.accounts.iter().find(|a| a.email == email && a.agent == routine.agent()));
    Applies::routine(routine).into_iter().chain([Applies::all(settings)]).chain(of_account.and_then(Applies::account)).collect()
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
        a.budget.caps().into_iter().find_map(|(period, cap)| {
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
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct BudgetState {
    /// "all runs", "routine nightly", "account work@acme.dev".
    pub scope: String,
    #[cfg_attr(feature = "typescript", ts(type = "\"day\" | \"month\""))]
    pub period: String,
    /// What runs reported spending in the period so far (USD).
    pub spent: f64,
    pub cap: f64,
    /// When the period ends and the budget frees.
    #[serde(serialize_with = "crate::words::ser_time")]
    pub frees_at: DateTime<Utc>,
    pub timezone: String,
}

/// Every day's and month's budget there is — `[budget]`'s, each account's, each routine's — and
/// where it stands now.
pub(crate) fn states(core: &Core) -> crate::error::Result<Vec<BudgetState>> {
    let settings = core.settings();
    let routines = core.routines();
    let now = core.clock.now();
    let all = std::iter::once(Applies::all(&settings)).chain(settings.accounts.iter().filter_map(Applies::account)).chain(routines.routines.iter().filter_map(Applies::routine));
    let mut out = Vec::new();
    for a in all {
        for (period, cap) in a.budget.caps() {
            let Some(cap) = cap else { continue };
            out.push(BudgetState {
                scope: a.scope.clone(),
                period: period.as_str().to_string(),
                spent: core.store.spent(a.by, period.start(now, a.tz))?,
                cap,
                frees_at: period.end(now, a.tz),
                timezone: a.tz.name().to_string(),
            });
        }
    }
    Ok(out)
}
