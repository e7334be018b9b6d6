//! What happened over time: a routine's slots explained, the strips, usage and disk use.

use super::blocking;
use crate::error::{Error, ErrorCode, Result};
use crate::store::UsageBy;
use crate::Engine;

/// Tokens and cost since `since` (RFC 3339) grouped `by`, as `nightshiftctl usage` sums them.
pub async fn usage_rows(engine: &Engine, by: UsageBy, since: &str) -> Result<Vec<crate::store::UsageRow>> {
    let since = crate::words::parse_time(since).ok_or_else(|| Error::new(ErrorCode::Usage, format!("\"{since}\" is not a time (RFC 3339)")))?;
    blocking(engine, move |e| e.usage(by, since)).await
}

/// Where each budget stands (spent of its cap in its day or month, when it frees).
pub async fn budgets(engine: &Engine) -> Result<Vec<crate::engine::BudgetState>> {
    blocking(engine, |e| e.budgets()).await
}

/// Every slot of a routine in the last `days` days explained, newest first, and its next fire.
pub async fn routine_why(engine: &Engine, name: &str, days: u32) -> Result<crate::view::why::Why> {
    let name = name.to_string();
    blocking(engine, move |e| crate::view::why::why(&e, &name, days.clamp(1, 366)).map(|w| redact_why(&e, w))).await
}

/// Each valid routine's strip: its slots over the last 14 days as at most 168 marks.
pub async fn routine_strips(engine: &Engine) -> Result<std::collections::BTreeMap<String, Vec<crate::view::why::Mark>>> {
    blocking(engine, |e| {
        use crate::view::why::{why_with, Surroundings};
        let set = e.routine_set();
        // This device's presence and the global pause, read once for every routine.
        let around = Surroundings::over_days(&e, STRIP_DAYS)?;
        let mut out = std::collections::BTreeMap::new();
        for r in &set.routines {
            let why = redact_why(&e, why_with(&e, &set, &around, &r.name, STRIP_DAYS)?);
            out.insert(r.name.clone(), why.strip(STRIP_MARKS));
        }
        Ok(out)
    })
    .await
}

/// The Routines view's strips: two weeks, two hours a mark at most.
pub const STRIP_DAYS: u32 = 14;
pub const STRIP_MARKS: usize = 168;

/// Sentences quote run messages and file errors: masked like every other message the window gets.
fn redact_why(e: &Engine, mut why: crate::view::why::Why) -> crate::view::why::Why {
    for l in &mut why.lines {
        if let std::borrow::Cow::Owned(text) = &l.sentence {
            l.sentence = e.redact(text).into();
        }
    }
    for n in &mut why.notes {
        *n = e.redact(n);
    }
    why
}

/// The Usage view: per day over the last `days` days, stacked by routine or account.
pub async fn usage_report(engine: &Engine, days: u32, by: Option<UsageBy>) -> Result<crate::view::usage::UsageReport> {
    let by = match by.unwrap_or(UsageBy::Routine) {
        by @ (UsageBy::Routine | UsageBy::Account) => by,
        other => return Err(Error::new(ErrorCode::Usage, format!("usage is stacked by routine or account, not {other}"))),
    };
    blocking(engine, move |e| crate::view::usage::report(&e, days, by)).await
}

/// Disk used by each routine's runs (a walk of `runs/`).
pub async fn disk_usage(engine: &Engine) -> Result<Vec<crate::view::usage::DiskUse>> {
    blocking(engine, |e| Ok(crate::view::usage::disk_by_routine(&e.home().runs_dir()))).await
}
