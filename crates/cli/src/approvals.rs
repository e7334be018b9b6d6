//! `nightshiftctl approvals [--json]`, `approve RUN [--for-run]`, `deny RUN`: the tool calls runs
//! hold while they ask (`on_denial: ask`), answered from a terminal. The first answer wins,
//! wherever it was given.

use crate::format::{self, json};
use crate::Outcome;
use nightshift_core::engine::ask_words;
use nightshift_core::{Engine, Error};

pub fn list(engine: &Engine, as_json: bool) -> Result<Outcome, Error> {
    let open = engine.open_asks()?;
    if as_json {
        json(&open);
        return Ok(Outcome::Ok);
    }
    if open.is_empty() {
        println!("No run waits for approval.");
        return Ok(Outcome::Ok);
    }
    let now = chrono::Utc::now();
    let rows: Vec<Vec<String>> = open
        .iter()
        .map(|a| vec![a.run_id.clone(), a.routine.clone(), ask_words(&a.tool, &a.input), format!("{} ({})", format::local(&a.expires_at), format::relative(&a.expires_at, now))])
        .collect();
    format::table(&["RUN", "ROUTINE", "WANTS", "DENIED IF NOT ANSWERED BY"], &rows);
    println!("Answer with `nightshiftctl approve RUN` (--for-run: that tool for the rest of the run) or `nightshiftctl deny RUN`.");
    Ok(Outcome::Ok)
}

pub fn answer(engine: &Engine, run: &str, allow: bool, for_run: bool) -> Result<Outcome, Error> {
    let ask = engine.answer_ask(run, allow, for_run, "cli")?;
    let what = ask_words(&ask.tool, &ask.input);
    match (allow, ask.for_run) {
        (true, true) => println!("approved for the rest of run {}: {} (and every later {} call)", ask.run_id, what, ask.tool),
        (true, false) => println!("approved once for run {}: {what}", ask.run_id),
        (false, _) => println!("denied for run {}: {what}", ask.run_id),
    }
    Ok(Outcome::Ok)
}
