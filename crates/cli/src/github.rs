//! `nightshiftctl github set-token | poll`: polling GitHub for the events routines run on
//! (`[github] poll`) — the token it asks with (stdin, never echoed, kept in the OS keychain), and
//! one pass now with what each repository answered.

use crate::Outcome;
use clap::Subcommand;
use nightshift_core::{Engine, Error};

#[derive(Subcommand)]
pub enum GithubCommand {
    /// Store the GitHub token polling asks with (on stdin, hidden when typed): a fine-grained
    /// token with read access to the repositories' metadata, or a classic one with `repo`.
    SetToken,
    /// Ask GitHub for every repository a `github_event` trigger names, once, now: what is new
    /// fires as it would at the next `[github] poll` (the first ask only sets each one's place).
    Poll,
}

pub async fn github(engine: &Engine, command: GithubCommand) -> Result<Outcome, Error> {
    match command {
        GithubCommand::SetToken => {
            let token = crate::accounts::read_secret("Paste the GitHub token (input hidden), then Enter: ")?;
            engine.set_github_token(&token)?;
            println!("stored the GitHub token in the OS keychain; `[github] poll` asks with it");
            Ok(Outcome::Ok)
        }
        GithubCommand::Poll => {
            let pass = engine.poll_github().await;
            // Runs it fired that wait for a lane outlive this command as queued rows.
            engine.hand_off_queued()?;
            if pass.asked == 0 && pass.problems.is_empty() {
                println!("No routine's trigger names a GitHub repository to poll (`trigger: {{type: github_event, event: pull_request, repo: owner/name}}`; workflow_run comes by delivery only).");
                return Ok(Outcome::Ok);
            }
            println!(
                "asked {} repositor{}: {} unchanged (304), {} new event{} taken, {} started (history not fired)",
                pass.asked,
                if pass.asked == 1 { "y" } else { "ies" },
                pass.unchanged,
                pass.taken,
                if pass.taken == 1 { "" } else { "s" },
                pass.started
            );
            for (repo, words) in &pass.problems {
                let repo = if repo == "*" { "GitHub" } else { repo };
                eprintln!("✗ {repo}: {words}");
            }
            Ok(if pass.problems.is_empty() { Outcome::Ok } else { Outcome::Invalid })
        }
    }
}
