//! `nightshiftctl why ROUTINE`: every slot in the window, newest first, with its fate in words and
//! the evidence; then the next fire and what it depends on.

use crate::format;
use chrono::Timelike;
use crate::Outcome;
use nightshift_core::view::why::{local_day_time, Why};
use nightshift_core::{Engine, Error};

#[derive(clap::Args)]
pub struct WhyArgs {
    /// The routine.
    pub routine: String,
    /// How many days back.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=366))]
    pub days: u32,
    #[arg(long)]
    pub json: bool,
}

pub fn why(engine: &Engine, args: WhyArgs) -> Result<Outcome, Error> {
    print_why(&nightshift_core::view::why::why(engine, &args.routine, args.days)?, &args)
}

/// `why ROUTINE --home NAME`: the routine's slots as that home saw them (its presence, its runs).
pub async fn why_there(home: &nightshift_core::homes::HomeClient, args: WhyArgs) -> Result<Outcome, Error> {
    let why: Why = home.call("routine_why", serde_json::json!({ "name": args.routine, "days": args.days })).await?;
    print_why(&why, &args)
}

fn print_why(why: &Why, args: &WhyArgs) -> Result<Outcome, Error> {
    if args.json {
        format::json(why);
    } else {
        print!("{}", text(why, args.days));
    }
    Ok(Outcome::Ok)
}

/// The readable form: a header, one line per slot (or group of slots), notes, the next fire.
fn text(why: &Why, days: u32) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let schedule = why.schedule_words.as_deref().unwrap_or("no schedule");
    let _ = writeln!(out, "{} — {schedule}; the last {days} day{}, newest first", why.routine, if days == 1 { "" } else { "s" });
    if let Some(by) = &why.scheduled_by {
        let _ = writeln!(out, "A follow-up an agent {by}.");
    }
    let tz = nightshift_core::schedule::parse_tz(&why.timezone).unwrap_or_else(|_| nightshift_core::schedule::local_tz());
    // A schedule with seconds shows them.
    let seconds = why.lines.iter().any(|l| l.at.second() != 0 || l.from.second() != 0);
    let local_day_time = |t| if seconds { format!("{}:{:02}", local_day_time(t, tz), t.with_timezone(&tz).second()) } else { local_day_time(t, tz) };
    for l in &why.lines {
        let when = if l.slots > 1 {
            format!("{} … {} ({} slots)", local_day_time(l.from), local_day_time(l.at), l.slots)
        } else {
            local_day_time(l.at)
        };
        let run = match (&l.run_id, l.fate) {
            (Some(id), nightshift_core::view::why::Fate::Ran) => format!(" (run {id})"),
            _ => String::new(),
        };
        let took = match (l.fate, l.duration_ms) {
            (nightshift_core::view::why::Fate::Ran, Some(ms)) => format!(" in {}", nightshift_core::words::duration(ms.max(0) as u64)),
            _ => String::new(),
        };
        let _ = writeln!(out, "  {when}  {}{took}{run}", l.sentence);
    }
    if !why.events.is_empty() {
        let _ = writeln!(out, "events, newest first:");
    }
    for e in &why.events {
        let said = match (e.run_id.as_deref(), e.why.as_deref()) {
            (Some(run), _) if e.outcome == "duplicate" => format!("duplicate of run {run}"),
            (Some(run), _) => format!("{} (run {run})", e.outcome),
            (None, Some(why)) => format!("{} — {why}", e.outcome),
            (None, None) => e.outcome.clone(),
        };
        let times = if e.times > 1 { format!(" (arrived {} times)", e.times) } else { String::new() };
        let _ = writeln!(out, "  {}  {}: {said}{times}", local_day_time(e.received_at), e.summary);
    }
    for n in &why.notes {
        let _ = writeln!(out, "  {n}");
    }
    let _ = writeln!(out, "next: {}", why.next);
    out
}
