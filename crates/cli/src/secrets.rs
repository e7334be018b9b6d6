//! `nightshiftctl secrets set | list | remove NAME`: the routines' secrets in the OS keychain
//! (values read from stdin, never echoed, never printed).

use crate::format::{self, json, table};
use crate::Outcome;
use clap::Subcommand;
use nightshift_core::engine::secrets::SecretSource;
use nightshift_core::{Engine, Error};

#[derive(Subcommand)]
pub enum SecretsCommand {
    /// Store a secret a routine names in `secrets:` (its value on stdin, hidden when typed).
    Set { name: String },
    /// The secrets there are — names and where they are kept, never a value.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a secret from the OS keychain.
    Remove { name: String },
}

pub fn secrets(engine: &Engine, command: SecretsCommand) -> Result<Outcome, Error> {
    match command {
        SecretsCommand::Set { name } => {
            let value = crate::accounts::read_secret(&format!("Paste the value of {name} (input hidden), then Enter: "))?;
            engine.set_secret(&name, &value)?;
            println!("stored {name} in the OS keychain; routines that list it in `secrets:` get it as ${name}");
            Ok(Outcome::Ok)
        }
        SecretsCommand::List { json: as_json } => {
            let all = engine.secrets()?;
            if as_json {
                json(&all);
            } else if all.is_empty() {
                println!("No secrets yet. Store one with `nightshiftctl secrets set NAME` (the value on stdin).");
            } else {
                let rows: Vec<Vec<String>> = all
                    .iter()
                    .map(|s| {
                        let (source, when) = match s.source {
                            SecretSource::Keychain => ("OS keychain", s.set_at.map(|t| format!("set {}", format::local(&t))).unwrap_or_default()),
                            SecretSource::Environment => ("environment", format!("${}", nightshift_core::engine::secrets::env_var(&s.name))),
                        };
                        vec![s.name.clone(), source.to_string(), when]
                    })
                    .collect();
                table(&["NAME", "KEPT IN", ""], &rows);
            }
            Ok(Outcome::Ok)
        }
        SecretsCommand::Remove { name } => {
            let removed = engine.remove_secret(&name)?;
            println!("{}", if removed { format!("removed {name} from the OS keychain") } else { format!("{name} was not in the OS keychain") });
            Ok(Outcome::Ok)
        }
    }
}
