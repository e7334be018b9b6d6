//! The window's Usage view: cost, tokens and runs per local day, stacked by routine, account or
//! final status; the routines that cost most; the month so far; and the disk each routine's runs
//! take. Every figure is the store's sums (a covering-index range per day); a day or a group with
//! no run reporting a figure carries `None`, which the charts draw as nothing and the tables as "–".

use crate::engine::Engine;
use crate::error::Result;
use crate::store::{DayUsage, UsageBy, UsageRow};
use chrono::{DateTime, Datelike, Duration as Span, Local, TimeZone, Utc};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// One group's values, one per day of the report (oldest first).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Series {
    pub key: String,
    pub values: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct UsageReport {
    /// The local days, oldest first (every day, also those without runs).
    pub days: Vec<String>,
    /// What cost and tokens are stacked by: `routine` or `account`.
    #[cfg_attr(feature = "typescript", ts(type = "\"routine\" | \"account\""))]
    pub by: &'static str,
    pub cost: Vec<Series>,
    /// Input + output tokens (cache reads and writes are in the tables of `top`).
    pub tokens: Vec<Series>,
    pub runs_by_status: Vec<Series>,
    /// Routines by cost over the report's days (then by output tokens).
    pub top: Vec<UsageRow>,
    /// The current local month so far.
    pub month: UsageRow,
    /// "November 2026".
    pub month_name: String,
    /// Every day's and month's budget and where it stands (spent of cap, until when).
    pub budgets: Vec<crate::engine::BudgetState>,
    /// Each account's usage windows as its runs reported them: the highest share used (0–100)
    /// each day, one series per account and window ("work@acme.dev · 5h").
    pub windows: Vec<Series>,
}

/// Usage over the last `days` local days (today included), stacked `by` routine or account.
pub fn report(engine: &Engine, days: u32, by: UsageBy) -> Result<UsageReport> {
    let store = engine.core_store();
    let now = engine.clock_now();
    let today = now.with_timezone(&Local).date_naive();
    let first = today - Span::days(days.clamp(1, 366) as i64 - 1);
    let since = Local.from_local_datetime(&first.and_hms_opt(0, 0, 0).unwrap_or_default()).earliest().map(|t| t.with_timezone(&Utc)).unwrap_or(now - Span::days(days as i64));
    let day_list: Vec<String> = first.iter_days().take_while(|d| *d <= today).map(|d| d.to_string()).collect();
    let by = if by == UsageBy::Account { UsageBy::Account } else { UsageBy::Routine };
    let grouped = store.usage_by_day(Some(by), since, now)?;
    let cost = series(&day_list, &grouped, |u| u.cost_usd);
    let tokens = series(&day_list, &grouped, |u| match (u.input_tokens, u.output_tokens) {
        (None, None) => None,
        (i, o) => Some((i.unwrap_or(0) + o.unwrap_or(0)) as f64),
    });
    let statuses = store.usage_by_day(Some(UsageBy::Status), since, now)?;
    let runs_by_status = series(&day_list, &statuses, |u| Some(u.runs as f64));
    let mut top = store.usage(UsageBy::Routine, since, now)?;
    top.truncate(10);
    let month_start = today.with_day(1).unwrap_or(today);
    let month_since = Local.from_local_datetime(&month_start.and_hms_opt(0, 0, 0).unwrap_or_default()).earliest().map(|t| t.with_timezone(&Utc)).unwrap_or(since);
    let windows = window_series(&day_list, &store.window_history(since)?);
    let month = store.usage_by_day(None, month_since, now)?.into_iter().map(|d| d.usage).fold(UsageRow { key: "month".into(), ..Default::default() }, add);
    Ok(UsageReport {
        days: day_list,
        by: if by == UsageBy::Account { "account" } else { "routine" },
        cost,
        tokens,
        runs_by_status,
        top,
        month,
        month_name: today.format("%B %Y").to_string(),
        budgets: engine.budgets()?,
        windows,
    })
}

/// The highest share of each account's window used per local day, a series per account and
/// window in the order first seen.
fn window_series(days: &[String], reports: &[(String, crate::run::LimitWindow)]) -> Vec<Series> {
    let index: BTreeMap<String, usize> = days.iter().enumerate().map(|(i, d)| (d.clone(), i)).collect();
    let mut out: Vec<Series> = Vec::new();
    for (account, w) in reports {
        let Some(&i) = index.get(&w.seen_at.with_timezone(&Local).date_naive().to_string()) else { continue };
        let key = format!("{account} · {}", w.short_name());
        let at = match out.iter().position(|s| s.key == key) {
            Some(at) => at,
            None => {
                out.push(Series { key, values: vec![None; days.len()] });
                out.len() - 1
            }
        };
        let v = &mut out[at].values[i];
        *v = Some(v.unwrap_or(0.0).max(w.used_percent));
    }
    out
}

/// Days × groups into one series per group (groups in order of their total, largest first).
fn series(days: &[String], rows: &[DayUsage], value: impl Fn(&UsageRow) -> Option<f64>) -> Vec<Series> {
    let index: BTreeMap<&str, usize> = days.iter().enumerate().map(|(i, d)| (d.as_str(), i)).collect();
    let mut by_key: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
    for r in rows {
        let (Some(&i), Some(v)) = (index.get(r.day.as_str()), value(&r.usage)) else { continue };
        let values = by_key.entry(r.usage.key.clone()).or_insert_with(|| vec![None; days.len()]);
        values[i] = Some(values[i].unwrap_or(0.0) + v);
    }
    let mut out: Vec<Series> = by_key.into_iter().map(|(key, values)| Series { key, values }).collect();
    let total = |s: &Series| s.values.iter().flatten().sum::<f64>();
    out.sort_by(|a, b| total(b).partial_cmp(&total(a)).unwrap_or(std::cmp::Ordering::Equal).then(a.key.cmp(&b.key)));
    out
}

/// Two groups' sums added (a figure stays `None` only when neither had it).
fn add(a: UsageRow, b: UsageRow) -> UsageRow {
    let n = |x: Option<u64>, y: Option<u64>| if x.is_none() && y.is_none() { None } else { Some(x.unwrap_or(0) + y.unwrap_or(0)) };
    UsageRow {
        key: a.key,
        runs: a.runs + b.runs,
        input_tokens: n(a.input_tokens, b.input_tokens),
        output_tokens: n(a.output_tokens, b.output_tokens),
        cache_read_tokens: n(a.cache_read_tokens, b.cache_read_tokens),
        cache_write_tokens: n(a.cache_write_tokens, b.cache_write_tokens),
        cost_usd: if a.cost_usd.is_none() && b.cost_usd.is_none() { None } else { Some(a.cost_usd.unwrap_or(0.0) + b.cost_usd.unwrap_or(0.0)) },
    }
}

/// What one routine's run directories take on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct DiskUse {
    pub routine: String,
    /// Allocated on disk (what `du` says), not the files' apparent length.
    pub bytes: u64,
    pub runs: u64,
}

/// Disk used per routine under `runs/`, largest first (a walk of the directory tree; call it off
/// the async workers).
pub fn disk_by_routine(runs_dir: &Path) -> Vec<DiskUse> {
    let mut out: Vec<DiskUse> = std::fs::read_dir(runs_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            let runs = std::fs::read_dir(e.path()).into_iter().flatten().flatten().filter(|r| r.file_type().is_ok_and(|t| t.is_dir())).count() as u64;
            DiskUse { routine: e.file_name().to_string_lossy().into_owned(), bytes: crate::fsutil::disk_usage(&e.path()), runs }
        })
        .collect();
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.routine.cmp(&b.routine)));
    out
}

/// Bytes allocated under `path` (symlinks are not followed).
/// Runs and tokens of each account in the last 5 hours and 7 days (the windows Claude's limits
/// are counted in), by account.
pub fn account_windows(engine: &Engine, now: DateTime<Utc>) -> Result<(BTreeMap<String, UsageRow>, BTreeMap<String, UsageRow>)> {
    let store = engine.core_store();
    let by = |since| -> Result<BTreeMap<String, UsageRow>> { Ok(store.usage(UsageBy::Account, since, now)?.into_iter().map(|r| (r.key.clone(), r)).collect()) };
    Ok((by(now - Span::hours(5))?, by(now - Span::days(7))?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_use_counts_what_is_allocated_per_routine() {
        let dir = tempfile::tempdir().unwrap();
        for (routine, run, len) in [("big", "r1", 300_000usize), ("big", "r2", 100_000), ("small", "r3", 10)] {
            let d = dir.path().join(routine).join(run);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("stdout.log"), vec![b'x'; len]).unwrap();
        }
        let got = disk_by_routine(dir.path());
        assert_eq!(got.iter().map(|d| (d.routine.as_str(), d.runs)).collect::<Vec<_>>(), vec![("big", 2), ("small", 1)]);
        assert!(got[0].bytes >= 400_000 && got[0].bytes < 500_000, "{got:?}");
        assert!(got[1].bytes > 0 && got[1].bytes < 64 * 1024, "{got:?}");
        assert!(disk_by_routine(&dir.path().join("missing")).is_empty());
    }

    #[test]
    fn window_history_is_each_days_highest_share_per_account_and_window() {
        let noon = |day: &str| Local.from_local_datetime(&chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").unwrap().and_hms_opt(12, 0, 0).unwrap()).unwrap().with_timezone(&Utc);
        let report = |account: &str, window: &str, used: f64, day: &str| {
            (account.to_string(), crate::run::LimitWindow { window: window.into(), used_percent: used, resets_at: None, status: "allowed".into(), seen_at: noon(day), run_id: None })
        };
        let days = vec!["2026-11-29".to_string(), "2026-11-30".into()];
        let reports = [
            report("a@x.dev", "five_hour", 40.0, "2026-11-29"),
            report("a@x.dev", "five_hour", 85.0, "2026-11-29"),
            report("a@x.dev", "seven_day", 30.0, "2026-11-29"),
            report("a@x.dev", "five_hour", 20.0, "2026-11-30"),
            report("b@x.dev", "five_hour", 10.0, "2026-11-30"),
            report("b@x.dev", "five_hour", 99.0, "2026-11-01"),
        ];
        let got: Vec<(String, Vec<Option<f64>>)> = window_series(&days, &reports).into_iter().map(|s| (s.key, s.values)).collect();
        assert_eq!(
            got,
            [
                ("a@x.dev · 5h".to_string(), vec![Some(85.0), Some(20.0)]),
                ("a@x.dev · 7d".to_string(), vec![Some(30.0), None]),
                ("b@x.dev · 5h".to_string(), vec![None, Some(10.0)]),
            ],
            "a day's highest; a day without a report is empty; a report outside the days is left out"
        );
    }

    #[test]
    fn series_put_each_day_in_its_place_and_leave_missing_figures_empty() {
        let days = vec!["2026-11-28".to_string(), "2026-11-29".into(), "2026-11-30".into()];
        let row = |day: &str, key: &str, cost: Option<f64>| DayUsage { day: day.into(), usage: UsageRow { key: key.into(), runs: 1, cost_usd: cost, ..Default::default() } };
        let rows = [row("2026-11-28", "a", Some(1.0)), row("2026-11-30", "a", Some(2.0)), row("2026-11-29", "b", Some(5.0)), row("2026-11-30", "c", None)];
        let s = series(&days, &rows, |u| u.cost_usd);
        assert_eq!(s.len(), 2, "a group that never reported a cost has no series");
        assert_eq!((s[0].key.as_str(), s[0].values.clone()), ("b", vec![None, Some(5.0), None]));
        assert_eq!((s[1].key.as_str(), s[1].values.clone()), ("a", vec![Some(1.0), None, Some(2.0)]));
    }
}
