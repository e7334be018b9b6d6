//! `nightshiftctl hosts list|check|workflow|setup`: where routines are placed (`host:`) — SSH
//! machines and repositories' GitHub Actions runners — and their health as reaching them showed.

use crate::format::{json, table};
use crate::Outcome;
use clap::Subcommand;
use nightshift_core::{Engine, Error};

#[derive(Subcommand)]
pub enum HostsCommand {
    /// Every host a routine names or a run went to: last seen, last error, its routines.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Try each host (or one) now: over SSH, non-interactively, looking for its routines' agents
    /// there; on GitHub Actions, the token, the repository, the workflow, the secrets and a
    /// runner. Exits 1 when something a run needs is missing.
    Check {
        host: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Print the workflow a host on GitHub Actions needs (commit it as
    /// `.github/workflows/<workflow>` on the host's ref).
    Workflow { host: String },
    /// Write the credentials the routines on a host on GitHub Actions need as repository
    /// secrets (sealed with the repository's key; only names are shown), and say whether the
    /// workflow on its ref is current. Exits 1 when something is left to do.
    Setup {
        host: String,
        #[arg(long)]
        json: bool,
    },
}

/// An Actions host's lines, one a thing looked at (✓ or ✗ and what to do).
fn print_actions(check: &nightshift_core::engine::ActionsCheck) {
    println!("{} (GitHub Actions, {}):", check.host, check.repo);
    for line in &check.lines {
        println!("  {} {:<10} {}", if line.ok { "✓" } else { "✗" }, line.what, line.words);
    }
}

pub async fn hosts(engine: &Engine, command: HostsCommand) -> Result<Outcome, Error> {
    match command {
        HostsCommand::List { json: as_json } => {
            let hosts = engine.hosts()?;
            if as_json {
                json(&hosts);
            } else if hosts.is_empty() {
                println!("No hosts — place a routine on another machine with `host: <ssh host or alias>`.");
            } else {
                let when = |t: Option<chrono::DateTime<chrono::Utc>>| t.map(|t| t.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M").to_string()).unwrap_or_else(|| "never".into());
                let rows: Vec<Vec<String>> = hosts
                    .iter()
                    .map(|h| {
                        let name = match &h.github {
                            Some(repo) => format!("{} (GitHub Actions: {repo})", h.host),
                            None => h.host.clone(),
                        };
                        vec![name, when(h.last_seen), h.last_error.clone().unwrap_or_else(|| "—".into()), h.routines.join(", ")]
                    })
                    .collect();
                table(&["HOST", "LAST SEEN", "LAST ERROR", "ROUTINES"], &rows);
            }
            Ok(Outcome::Ok)
        }
        HostsCommand::Check { host, json: as_json } => {
            let names = match host {
                Some(h) => vec![h],
                None => engine.hosts()?.into_iter().map(|h| h.host).collect(),
            };
            let (mut checks, mut on_actions) = (Vec::new(), Vec::new());
            for name in names {
                if engine.is_actions_host(&name) {
                    on_actions.push(engine.check_actions_host(&name).await?);
                } else {
                    checks.push(engine.check_host(&name).await);
                }
            }
            let healthy = checks.iter().all(|c| c.reachable && c.missing.is_empty()) && on_actions.iter().all(|c| c.ok);
            if as_json {
                // SSH hosts as before; hosts on Actions with their lines.
                let all: Vec<serde_json::Value> = checks.iter().map(|c| serde_json::to_value(c).unwrap_or_default()).chain(on_actions.iter().map(|c| serde_json::to_value(c).unwrap_or_default())).collect();
                json(&all);
            } else {
                for c in &checks {
                    println!("{}", c.message);
                }
                for c in &on_actions {
                    print_actions(c);
                }
            }
            Ok(if healthy { Outcome::Ok } else { Outcome::RunNotCompleted })
        }
        HostsCommand::Workflow { host } => {
            print!("{}", engine.host_workflow(&host)?);
            Ok(Outcome::Ok)
        }
        HostsCommand::Setup { host, json: as_json } => {
            let check = engine.setup_actions_host(&host).await?;
            if as_json {
                json(&check);
            } else {
                print_actions(&check);
            }
            Ok(if check.ok { Outcome::Ok } else { Outcome::RunNotCompleted })
        }
    }
}
