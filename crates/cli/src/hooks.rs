//! `nightshiftctl hooks set-secret github|linear | list`: the events routines run on (`trigger:`)
//! — the secrets their deliveries are signed with (stdin, never echoed, kept in the OS keychain)
//! and what came in lately and what became of each.

use crate::format::{self, json, table};
use crate::Outcome;
use clap::Subcommand;
use nightshift_core::incoming::Source;
use nightshift_core::{Engine, Error, ErrorCode};

#[derive(Subcommand)]
pub enum HooksCommand {
    /// Store the secret GitHub's or Linear's webhook signs its deliveries with (on stdin,
    /// hidden when typed): SOURCE is github or linear.
    SetSecret { source: String },
    /// The latest deliveries, newest first: the event, and for each routine whose trigger names
    /// it what became of it (fired as run X, filtered out by which filter, duplicate, skipped).
    List {
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
}

pub fn hooks(engine: &Engine, command: HooksCommand) -> Result<Outcome, Error> {
    match command {
        HooksCommand::SetSecret { source } => {
            let source = Source::parse(&source).ok_or_else(|| Error::new(ErrorCode::Usage, format!("unknown source \"{source}\" (expected github or linear)")))?;
            let secret = crate::accounts::read_secret(&format!("Paste the {} webhook's secret (input hidden), then Enter: ", source.as_str()))?;
            engine.set_hook_secret(source, &secret)?;
            println!("stored the {} webhook's secret in the OS keychain; deliveries to /hooks/{} are checked against it", source.as_str(), source.as_str());
            Ok(Outcome::Ok)
        }
        HooksCommand::List { limit, json: as_json } => {
            let all = engine.deliveries(limit.clamp(1, 1000))?;
            if as_json {
                json(&all);
            } else if all.is_empty() {
                println!("No deliveries yet. Routines with a `trigger:` run on the GitHub and Linear deliveries taken at /hooks/github and /hooks/linear (`nightshiftctl serve`, or `[hooks] listen` for the app and the daemon).");
            } else {
                let rows: Vec<Vec<String>> = all
                    .iter()
                    .map(|d| {
                        let verdicts: Vec<String> = d
                            .verdicts
                            .iter()
                            .map(|v| match (v.run_id.as_deref(), v.why.as_deref()) {
                                (Some(run), _) if v.outcome != "duplicate" => format!("{}: {} {run}", v.routine, v.outcome),
                                (Some(run), _) => format!("{}: duplicate of {run}", v.routine),
                                (None, Some(why)) => format!("{}: {} ({why})", v.routine, v.outcome),
                                (None, None) => format!("{}: {}", v.routine, v.outcome),
                            })
                            .collect();
                        let times = if d.times > 1 { format!(" ×{}", d.times) } else { String::new() };
                        let times = if d.delivery.starts_with("events-api:") { format!("{times} (polled)") } else { times };
                        vec![format::local(&d.received_at), format!("{}{times}", d.summary), if verdicts.is_empty() { "no routine's trigger names it".into() } else { verdicts.join("; ") }]
                    })
                    .collect();
                table(&["RECEIVED", "EVENT", "WHAT BECAME OF IT"], &rows);
            }
            Ok(Outcome::Ok)
        }
    }
}
