//! `nightshiftctl webhooks …` and `nightshiftctl deliveries …`: signing secrets in the OS keychain,
//! and what each run's webhooks did.

use crate::format::{json, table};
use crate::Outcome;
use clap::Subcommand;
use nightshift_core::{Engine, Error};

#[derive(Subcommand)]
pub enum WebhooksCommand {
    /// The webhooks in nightshift.toml.
    List,
    /// Store a webhook's signing secret in the OS keychain (read from stdin, never echoed, never
    /// in the file). Requests then carry an HMAC-SHA256 signature.
    SetSecret { name: String },
}

#[derive(Subcommand)]
pub enum DeliveriesCommand {
    /// Try a run's webhook deliveries again from the start (all, or `--webhook NAME`).
    Retry {
        run_id: String,
        #[arg(long)]
        webhook: Option<String>,
    },
}

pub fn webhooks(engine: &Engine, command: WebhooksCommand) -> Result<Outcome, Error> {
    match command {
        WebhooksCommand::List => {
            let rows: Vec<Vec<String>> = engine
                .settings()
                .webhooks
                .iter()
                .map(|w| vec![w.name.clone(), format!("{:?}", w.format).to_lowercase(), format!("{:?}", w.on).to_lowercase(), w.url.clone()])
                .collect();
            if rows.is_empty() {
                println!("No webhooks — add a [[webhooks]] entry to {}.", engine.home().settings_path().display());
            } else {
                table(&["NAME", "FORMAT", "ON", "URL"], &rows);
            }
            Ok(Outcome::Ok)
        }
        WebhooksCommand::SetSecret { name } => {
            let secret = crate::accounts::read_secret(&format!("Signing secret for webhook {name}: "))?;
            if secret.is_empty() {
                return Err(Error::new(nightshift_core::ErrorCode::Usage, "no secret given (type it, or pipe it to stdin)"));
            }
            engine.set_webhook_secret(&name, &secret)?;
            eprintln!("Stored the signing secret of webhook {name} in the OS keychain.");
            Ok(Outcome::Ok)
        }
    }
}

/// `deliveries [--failed] [--json]` or `deliveries retry RUN [--webhook NAME]`.
pub fn deliveries(engine: &Engine, command: Option<DeliveriesCommand>, failed: bool, as_json: bool) -> Result<Outcome, Error> {
    if let Some(DeliveriesCommand::Retry { run_id, webhook }) = command {
        let id = engine.run(&run_id)?.id;
        let n = engine.retry_deliveries(&id, webhook.as_deref())?;
        if n == 0 {
            eprintln!("Nothing to retry for run {id}: its webhook deliveries were delivered (or it has none).");
        } else {
            eprintln!("Retrying {n} webhook deliver{} of run {id} (the app or `nightshiftctl daemon` sends them).", if n == 1 { "y" } else { "ies" });
        }
        return Ok(Outcome::Ok);
    }
    let rows = engine.webhook_deliveries(failed, 200)?;
    if as_json {
        json(&rows);
        return Ok(Outcome::Ok);
    }
    if rows.is_empty() {
        println!("{}", if failed { "No failed webhook deliveries." } else { "No webhook deliveries yet." });
        return Ok(Outcome::Ok);
    }
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|d| {
            vec![
                d.run_id.clone(),
                d.routine.clone(),
                d.webhook.clone().unwrap_or_default(),
                d.state.as_str().to_string(),
                d.attempts.to_string(),
                d.delivered_at.clone().or_else(|| d.next_at.map(|t| format!("next {}", nightshift_core::words::fmt_time(&t)))).unwrap_or_default(),
                d.last_error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(&["RUN", "ROUTINE", "WEBHOOK", "STATE", "TRIES", "WHEN", "LAST ERROR"], &lines);
    Ok(Outcome::Ok)
}
