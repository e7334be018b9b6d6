//! `nightshiftctl usage`: tokens and cost per routine, account or day, as a table, JSON or CSV.

use crate::format;
use crate::Outcome;
use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use nightshift_core::records::{UsageBy, UsageRow};
use nightshift_core::{Engine, Error, ErrorCode};

#[derive(clap::Args)]
pub struct UsageArgs {
    /// Group by routine, account, day or final status (the status counts every final run,
    /// missed and skipped slots too).
    #[arg(long, value_parser = ["routine", "account", "day", "status"], default_value = "routine")]
    pub by: String,
    /// From when: a duration back from now (30d, 12h) or a date (2026-11-01, local time).
    #[arg(long, default_value = "30d")]
    pub since: String,
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    #[arg(long)]
    pub csv: bool,
    /// Only the budgets (`budget:`, `[budget]`, the accounts'): what was spent of each in its day
    /// or month so far, and when it frees (the table shows them below the usage too).
    #[arg(long, conflicts_with = "csv")]
    pub budgets: bool,
}

/// Where the sums come from: this home's engine, or another home's (`--home`).
enum Source<'a> {
    Here(&'a Engine),
    There(&'a nightshift_core::homes::HomeClient),
}

impl Source<'_> {
    async fn rows(&self, by: UsageBy, since: DateTime<Utc>) -> Result<Vec<UsageRow>, Error> {
        match self {
            Source::Here(e) => e.usage(by, since),
            Source::There(h) => h.call("usage_rows", serde_json::json!({ "by": by, "since": nightshift_core::words::fmt_time(&since) })).await,
        }
    }

    async fn budgets(&self) -> Result<Vec<nightshift_core::engine::BudgetState>, Error> {
        match self {
            Source::Here(e) => e.budgets(),
            Source::There(h) => h.call("budgets", serde_json::json!({})).await,
        }
    }
}

pub async fn usage(engine: &Engine, args: UsageArgs) -> Result<Outcome, Error> {
    print_usage(Source::Here(engine), args).await
}

/// `usage --home NAME`: that home's sums and budgets.
pub async fn usage_there(home: &nightshift_core::homes::HomeClient, args: UsageArgs) -> Result<Outcome, Error> {
    print_usage(Source::There(home), args).await
}

async fn print_usage(source: Source<'_>, args: UsageArgs) -> Result<Outcome, Error> {
    let by = match args.by.as_str() {
        "account" => UsageBy::Account,
        "day" => UsageBy::Day,
        "status" => UsageBy::Status,
        _ => UsageBy::Routine,
    };
    let since = since(&args.since, Utc::now())?;
    if args.budgets {
        let budgets = source.budgets().await?;
        match args.json {
            true => format::json(&budgets),
            false if budgets.is_empty() => println!("no budgets: set `budget:` on a routine, `[budget]` or an account's `budget` in nightshift.toml"),
            false => print_budgets(&budgets),
        }
        return Ok(Outcome::Ok);
    }
    let rows = source.rows(by, since).await?;
    if args.json {
        format::json(&rows);
    } else if args.csv {
        println!("{},runs,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd", args.by);
        for r in &rows {
            let n = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
            println!("{},{},{},{},{},{},{}", csv(&r.key), r.runs, n(r.input_tokens), n(r.output_tokens), n(r.cache_read_tokens), n(r.cache_write_tokens), r.cost_usd.map(|c| format!("{c:.6}")).unwrap_or_default());
        }
    } else {
        print_table(&args.by, &rows, since);
        let budgets = source.budgets().await?;
        if !budgets.is_empty() {
            println!();
            print_budgets(&budgets);
        }
    }
    Ok(Outcome::Ok)
}

/// Each budget: whose, its period, spent of cap, how much of it, when it frees.
fn print_budgets(budgets: &[nightshift_core::engine::BudgetState]) {
    let table: Vec<Vec<String>> = budgets
        .iter()
        .map(|b| {
            let used = if b.cap > 0.0 { format!("{:.0} %", b.spent / b.cap * 100.0) } else { "\u{2013}".into() };
            vec![b.scope.clone(), b.period.to_string(), nightshift_core::budget::dollars(b.spent), nightshift_core::budget::dollars(b.cap), used, format::local(&b.frees_at)]
        })
        .collect();
    format::table(&["BUDGET", "PERIOD", "SPENT", "OF", "USED", "FREES"], &table);
}

fn print_table(by: &str, rows: &[UsageRow], since: DateTime<Utc>) {
    if rows.is_empty() {
        println!("no runs since {}", format::local(&since));
        return;
    }
    let n = |v: Option<u64>| v.map(format::thousands).unwrap_or_else(|| "\u{2013}".into());
    let mut table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vec![r.key.clone(), r.runs.to_string(), n(r.input_tokens), n(r.output_tokens), n(r.cache_read_tokens), n(r.cache_write_tokens), format::cost(r.cost_usd)])
        .collect();
    let sum = |f: fn(&UsageRow) -> Option<u64>| rows.iter().filter_map(f).reduce(|a, b| a + b);
    let cost = rows.iter().filter_map(|r| r.cost_usd).reduce(|a, b| a + b);
    table.push(vec![
        "total".into(),
        rows.iter().map(|r| r.runs).sum::<u64>().to_string(),
        n(sum(|r| r.input_tokens)),
        n(sum(|r| r.output_tokens)),
        n(sum(|r| r.cache_read_tokens)),
        n(sum(|r| r.cache_write_tokens)),
        format::cost(cost),
    ]);
    let header = by.to_uppercase();
    format::table(&[&header, "RUNS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "COST"], &table);
    println!("since {} (\u{2013}: no run reported that figure)", format::local(&since));
}

/// "30d", "12h" back from `now`, or a local date.
fn since(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, Error> {
    if let Ok(d) = humantime::parse_duration(text) {
        return chrono::Duration::from_std(d).ok().and_then(|d| now.checked_sub_signed(d)).ok_or_else(|| bad(text));
    }
    let date = NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| bad(text))?;
    let midnight = date.and_hms_opt(0, 0, 0).ok_or_else(|| bad(text))?;
    chrono::Local.from_local_datetime(&midnight).earliest().map(|t| t.with_timezone(&Utc)).ok_or_else(|| bad(text))
}

fn bad(text: &str) -> Error {
    Error::new(ErrorCode::Usage, format!("--since {text:?}: give a duration back from now (30d, 12h) or a date (2026-11-01)"))
}

/// A CSV field, quoted when it must be.
fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
