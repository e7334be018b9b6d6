//! `nightshiftctl accounts list | add | remove | set | set-token | check`

use crate::format::{self, json, table};
use crate::Outcome;
use clap::Subcommand;
use nightshift_core::health::{AccountHealth, CredentialSource};
use nightshift_core::words::Verdict;
use nightshift_core::words::Agent;
use nightshift_core::{Engine, Error, ErrorCode};
use std::io::{IsTerminal, Read};

#[derive(Subcommand)]
pub enum AccountsCommand {
    /// Every account with its auth health, the evidence behind it and its credential source.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add an account: AGENT is claude, codex, gemini, opencode or copilot; EMAIL its identity.
    Add {
        agent: String,
        email: String,
        /// OpenCode: the provider its key is for (openai, openrouter, …; anthropic when left out);
        /// runs get the key as <PROVIDER>_API_KEY. Copilot: github (a GitHub token, when left out)
        /// or a bring-your-own-key type (openai, azure, anthropic).
        #[arg(long)]
        provider: Option<String>,
    },
    /// Remove an account and its setup token from the OS keychain.
    Remove { email: String },
    /// Store the account's secret in the OS keychain — a Claude setup token (`claude
    /// setup-token`), an OpenAI API key, a Gemini API key, an OpenCode account's provider key, a
    /// GitHub token (or a Copilot account's provider key); read from stdin, never echoed.
    #[command(visible_alias = "set-key")]
    SetToken { email: String },
    /// Set what Nightshift does with an account's usage windows; a flag left out keeps its value.
    Set {
        email: String,
        /// Percent of its five-hour and seven-day windows kept from scheduled runs (0–100), or
        /// `none`.
        #[arg(long, value_name = "PERCENT|none")]
        reserve: Option<String>,
        /// Read its windows from Claude's OAuth usage endpoint every 10 minutes while the app or
        /// daemon runs: `on` or `off` (off by default; a request you would not otherwise make).
        #[arg(long, value_name = "on|off")]
        usage_probe: Option<String>,
    },
    /// Check accounts now; exit 1 if any needs attention (revoked, unconfigured, expired).
    Check {
        email: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(engine: &Engine, cmd: AccountsCommand) -> Result<Outcome, Error> {
    match cmd {
        AccountsCommand::List { json: as_json } => {
            let all = health(engine, None).await?;
            let inherited = engine.inherited_credentials();
            let settings = engine.settings();
            let listed: Vec<Listed> = all
                .into_iter()
                .map(|health| {
                    let set = settings.accounts.iter().find(|a| a.email == health.account && a.agent == health.agent);
                    Listed { reserve: set.and_then(|a| a.reserve), usage_probe: set.is_some_and(|a| a.usage_probe), health }
                })
                .collect();
            print_list(&listed, &inherited, as_json);
            Ok(Outcome::Ok)
        }
        AccountsCommand::Add { agent, email, provider } => {
            let kind = Agent::parse_cli(&agent)
                .ok_or_else(|| Error::new(ErrorCode::Usage, format!("unknown agent \"{agent}\" for an account (expected {})", Agent::cli_words())))?;
            engine.add_account(kind, &email, provider.as_deref())?;
            println!("added {email} ({agent}); its config dir is under {}", engine.home().accounts_dir().display());
            if let Some(note) = nightshift_core::agents::driver(kind).secret_note(provider.as_deref()) {
                println!("{note}");
            }
            if let Some(auth) = nightshift_core::accounts::AgentAuth::of(kind) {
                // A bring-your-own-key account is asked for its provider's key.
                let (secret, how) = nightshift_core::accounts::secret_words(kind, provider.as_deref());
                println!("next: `nightshiftctl accounts set-token {email}` with a {secret} (from {how}), or `{}` with {} set to its config dir", auth.login_command, auth.config_dir_var);
            }
            Ok(Outcome::Ok)
        }
        AccountsCommand::Remove { email } => {
            let had_token = engine.remove_account(&email)?;
            println!("removed {email}{}", if had_token { " and its setup token" } else { "" });
            Ok(Outcome::Ok)
        }
        AccountsCommand::Set { email, reserve, usage_probe } => {
            let settings = engine.settings();
            let now = settings.accounts.iter().find(|a| a.email == email).ok_or_else(|| Error::new(ErrorCode::Usage, format!("no account {email}")))?;
            let reserve = match reserve.as_deref() {
                None => now.reserve,
                Some("none") => None,
                Some(p) => Some(p.trim_end_matches('%').parse::<u8>().ok().filter(|r| *r <= 100).ok_or_else(|| Error::new(ErrorCode::Usage, format!("--reserve takes a percent from 0 to 100, or none; found \"{p}\"")))?),
            };
            let usage_probe = match usage_probe.as_deref() {
                None => now.usage_probe,
                Some("on") => true,
                Some("off") => false,
                Some(other) => return Err(Error::new(ErrorCode::Usage, format!("--usage-probe takes on or off; found \"{other}\""))),
            };
            engine.set_account_options(&email, reserve, usage_probe)?;
            let reserve_words = reserve.map(|r| format!("reserve {r} %")).unwrap_or_else(|| "no reserve".into());
            println!("{email}: {reserve_words}, usage probe {}", if usage_probe { "on" } else { "off" });
            Ok(Outcome::Ok)
        }
        AccountsCommand::SetToken { email } => {
            let what = engine.account(&email)?.auth().secret_name;
            let token = read_secret(&format!("Paste the {what} for {email} (input hidden), then Enter: "))?;
            engine.set_token(&email, &token).await?;
            println!("stored the {what} for {email} in the OS keychain");
            Ok(Outcome::Ok)
        }
        AccountsCommand::Check { email, json: as_json } => {
            let all = health(engine, email.as_deref()).await?;
            let mut checked = Vec::with_capacity(all.len());
            for h in all {
                let history = engine.account_history(&h.account, 5)?;
                checked.push((h, history));
            }
            print_checked(checked, as_json)
        }
    }
}

/// An account as another home's window lists it (`list_accounts`, `check_account`): the parts
/// `accounts list|check --home` show.
#[derive(serde::Deserialize)]
struct ThereAccount {
    health: AccountHealth,
    history: Vec<nightshift_core::records::HealthRecord>,
    reserve: Option<u8>,
    usage_probe: bool,
}

/// `accounts list|check --home NAME`: that home's accounts and their health, read there.
pub async fn there(home: &nightshift_core::homes::HomeClient, cmd: AccountsCommand) -> Result<Outcome, Error> {
    match cmd {
        AccountsCommand::List { json: as_json } => {
            let all: Vec<ThereAccount> = home.call("list_accounts", serde_json::json!({})).await?;
            let listed: Vec<Listed> = all.into_iter().map(|a| Listed { health: a.health, reserve: a.reserve, usage_probe: a.usage_probe }).collect();
            print_list(&listed, &[], as_json);
            Ok(Outcome::Ok)
        }
        AccountsCommand::Check { email, json: as_json } => {
            let all: Vec<ThereAccount> = match email {
                Some(email) => vec![home.call("check_account", serde_json::json!({ "email": email })).await?],
                None => home.call("list_accounts", serde_json::json!({})).await?,
            };
            print_checked(all.into_iter().map(|a| (a.health, a.history)).collect(), as_json)
        }
        _ => Err(crate::homes::not_there("accounts add|remove|set|set-token", &home.name)),
    }
}

/// `accounts check`: each account's verdict, evidence, fix and recent verdicts; exit 1 when one
/// needs attention.
fn print_checked(all: Vec<(AccountHealth, Vec<nightshift_core::records::HealthRecord>)>, as_json: bool) -> Result<Outcome, Error> {
    if as_json {
        json(&all.iter().map(|(h, _)| h).collect::<Vec<_>>());
    } else {
        for (h, history) in &all {
            println!("{} · {}", h.account, h.verdict.as_str());
            println!("  {}", h.evidence);
            if let Some(fix) = &h.fix {
                println!("  fix: {fix}");
            }
            for past in history {
                println!("  {}  {:<12} {}", format::local(&past.at), past.verdict.as_str(), past.evidence);
            }
        }
    }
    let attention = all.iter().any(|(h, _)| h.verdict.blocks() || h.verdict == Verdict::Expired);
    Ok(if attention { Outcome::RunNotCompleted } else { Outcome::Ok })
}

/// Health off the async workers (the keychain is asked on a thread of its own, with a limit).
async fn health(engine: &Engine, only: Option<&str>) -> Result<Vec<AccountHealth>, Error> {
    let e = engine.clone();
    let only = only.map(str::to_string);
    tokio::task::spawn_blocking(move || match only {
        Some(email) => e.account_health(&email).map(|h| vec![h]),
        None => Ok(e.accounts_health()),
    })
    .await
    .map_err(|err| Error::new(ErrorCode::Io, format!("checking accounts failed: {err}")))?
}

/// An account as `accounts list` shows it: its health, and what the user set for its windows.
#[derive(serde::Serialize)]
struct Listed {
    #[serde(flatten)]
    health: AccountHealth,
    /// `reserve` (percent of its windows kept from scheduled runs), as set.
    reserve: Option<u8>,
    usage_probe: bool,
}

/// The accounts' table, then the credentials runs inherit from the engine's environment (an
/// agent with no account: "environment (inherited)", the variable named, never its value).
fn print_list(all: &[Listed], inherited: &[(Agent, &str)], as_json: bool) {
    if as_json {
        json(&all);
        return;
    }
    for (agent, var) in inherited {
        println!("{agent} · environment (inherited): {var} — used by {agent} routines, as no {agent} account is configured");
    }
    if all.is_empty() {
        println!("No accounts yet. Add one with `nightshiftctl accounts add claude you@example.com`.");
        return;
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|listed| {
            let h = &listed.health;
            let when = match (h.verdict, h.resets_at, h.expires_at) {
                (Verdict::RateLimited, Some(t), _) => format!("resets {}", format::local(&t)),
                (_, _, Some(t)) => format!("expires {}", format::local(&t)),
                _ => h.since.map(|t| format!("since {}", format::local(&t))).unwrap_or_default(),
            };
            let source = match h.source {
                CredentialSource::Keychain => "keychain",
                CredentialSource::Env => "env",
                CredentialSource::AgentLogin => "agent login",
                CredentialSource::None => "none",
            };
            // "5h 85 % (resets 17:43) · 7d 40 %": each window its agent reported, "–" before any.
            let windows: Vec<String> = h
                .windows
                .iter()
                .map(|w| match (w.status.as_str(), w.resets_at) {
                    ("reset", _) | (_, None) => w.used_words(),
                    (_, Some(t)) => format!("{} (resets {})", w.used_words(), format::local(&t)),
                })
                .collect();
            let windows = if windows.is_empty() { "–".to_string() } else { windows.join(" · ") };
            // "reserve 20 % · probe": what scheduled runs leave, and whether the probe asks.
            let kept: Vec<String> = listed.reserve.map(|r| format!("reserve {r} %")).into_iter().chain(listed.usage_probe.then(|| "probe".to_string())).collect();
            let kept = if kept.is_empty() { "–".to_string() } else { kept.join(" · ") };
            vec![h.account.clone(), h.agent.as_str().into(), h.verdict.as_str().into(), source.into(), windows, kept, when, h.evidence.clone()]
        })
        .collect();
    table(&["ACCOUNT", "AGENT", "HEALTH", "CREDENTIAL", "WINDOWS", "KEEPS", "WHEN", "EVIDENCE"], &rows);
    for h in all.iter().map(|l| &l.health).filter(|h| h.fix.is_some()) {
        eprintln!("{}: {}", h.account, h.fix.as_deref().unwrap_or(""));
    }
}

/// Read a secret: hidden when typed at a terminal, else all of stdin. Never echoed, never in argv.
pub(crate) fn read_secret(prompt: &str) -> Result<String, Error> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut s = String::new();
        stdin.lock().read_to_string(&mut s).map_err(|e| Error::new(ErrorCode::Io, format!("cannot read the token from stdin: {e}")))?;
        return Ok(s.trim().to_string());
    }
    eprint!("{prompt}");
    let fd = libc::STDIN_FILENO;
    // SAFETY: plain termios calls on stdin; the original settings are restored below.
    let mut term: libc::termios = unsafe { std::mem::zeroed() };
    let have = unsafe { libc::tcgetattr(fd, &mut term) } == 0;
    let original = term;
    if have {
        term.c_lflag &= !libc::ECHO;
        unsafe { libc::tcsetattr(fd, libc::TCSANOW, &term) };
    }
    let mut line = String::new();
    let read = stdin.read_line(&mut line);
    if have {
        unsafe { libc::tcsetattr(fd, libc::TCSANOW, &original) };
    }
    eprintln!();
    read.map_err(|e| Error::new(ErrorCode::Io, format!("cannot read the token: {e}")))?;
    Ok(line.trim().to_string())
}
