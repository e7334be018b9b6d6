//! `nightshiftctl prune`: what the app and the daemon do every hour, now — worktrees older than
//! `keep_worktrees_days`, and the files of runs past `keep_runs_days` / `keep_runs_per_routine`
//! (their records stay).

use crate::format;
use crate::Outcome;
use nightshift_core::{Engine, Error, ErrorCode};

/// Runs listed one by one (a larger prune is summed up).
const RUNS_LISTED: usize = 20;

pub async fn prune(engine: &Engine, dry_run: bool, json: bool) -> Result<Outcome, Error> {
    let worktrees = engine.prune_worktrees(dry_run).await;
    let runs = engine.prune_runs(dry_run).await;
    if json {
        format::json(&serde_json::json!({ "worktrees": worktrees, "runs": runs }));
        return Ok(Outcome::Ok);
    }
    let s = engine.settings();
    if worktrees.is_empty() && runs.is_empty() {
        println!(
            "nothing to prune: no settled run's worktree is older than {} days (keep_worktrees_days), and no run's files are older than {} days or beyond the newest {} of its routine (keep_runs_days, keep_runs_per_routine)",
            s.keep_worktrees_days, s.keep_runs_days, s.keep_runs_per_routine
        );
    }
    for p in &worktrees {
        println!("{} ({} run {})", p.outcome, p.routine, p.run_id);
    }
    if !runs.is_empty() {
        for r in runs.iter().take(RUNS_LISTED) {
            println!("{} the files of {} run {} ({})", if dry_run { "would remove" } else { "removed" }, r.routine, r.run_id, format::bytes(r.bytes));
        }
        if runs.len() > RUNS_LISTED {
            println!("… and {} more runs", runs.len() - RUNS_LISTED);
        }
        let bytes: u64 = runs.iter().map(|r| r.bytes).sum();
        let verb = if dry_run { "would free" } else { "freed" };
        println!("{} runs: {verb} {}; their records stay (history, usage, `show`)", runs.len(), format::bytes(bytes));
    }
    let failed = worktrees.iter().filter(|p| !p.removed && !dry_run).count();
    if failed > 0 {
        return Err(Error::new(ErrorCode::Io, format!("{failed} worktree(s) could not be removed (see above)")));
    }
    Ok(Outcome::Ok)
}
