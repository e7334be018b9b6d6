//! `nightshiftctl hosts list|check`: the machines routines are placed on (`host:`) and their
//! health as connecting to them showed.

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
    /// Try each host (or one) now over SSH, non-interactively, and look for its routines'
    /// agents there. Exits 1 when one cannot be reached or lacks an agent.
    Check {
        host: Option<String>,
        #[arg(long)]
        json: bool,
    },
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
                    .map(|h| vec![h.host.clone(), when(h.last_seen), h.last_error.clone().unwrap_or_else(|| "—".into()), h.routines.join(", ")])
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
            let mut checks = Vec::new();
            for name in names {
                checks.push(engine.check_host(&name).await);
            }
            let healthy = checks.iter().all(|c| c.reachable && c.missing.is_empty());
            if as_json {
                json(&checks);
            } else {
                for c in &checks {
                    println!("{}", c.message);
                }
            }
            Ok(if healthy { Outcome::Ok } else { Outcome::RunNotCompleted })
        }
    }
}
