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

pub async fn answer(engine: &Engine, run: &str, allow: bool, for_run: bool) -> Result<Outcome, Error> {
    let ask = engine.answer_and_rerun(run, allow, for_run, "cli").await?;
    let what = ask_words(&ask.tool, &ask.input);
    match (allow, ask.for_run, &ask.rerun) {
        // Asked after the run (it ended `blocked · needs_approval`): approving reruns it.
        (true, _, Some(rerun)) => {
            println!("{rerun}");
            eprintln!("approved for one rerun of run {}: {what} — started as run {rerun}; follow it with `nightshiftctl logs {rerun} --follow`", ask.run_id);
            // Queued behind a busy lane, it outlives this command: say who starts it.
            engine.hand_off_queued()?;
        }
        (true, _, None) if !ask.held => println!("approved for one rerun of run {}: {what} (the app or the daemon starts it)", ask.run_id),
        (true, true, None) => println!("approved for the rest of run {}: {} (and every later {} call)", ask.run_id, what, ask.tool),
        (true, false, None) => println!("approved once for run {}: {what}", ask.run_id),
        (false, _, _) if !ask.held => println!("denied for run {}: {what} (it stays blocked)", ask.run_id),
        (false, _, _) => println!("denied for run {}: {what}", ask.run_id),
    }
    Ok(Outcome::Ok)
}
