//! `nightshiftctl`: the headless face of Nightshift — same engine as the tray app, no GUI
//! libraries. For servers, scripts and people who live in a terminal.
//!
//! Exit codes: 0 success; 1 a run (with `--wait`) ended other than `completed`; 2 usage or
//! configuration errors (bad arguments, invalid routine, unknown run…), printed as `error: …`.

mod accounts;
mod approvals;
mod daemon;
mod docs;
mod format;
mod github;
mod history;
mod homes;
mod hooks;
mod hosts;
mod routines;
mod run;
mod secrets;
mod prune;
mod serve;
mod usage;
mod why;
mod webhooks;
mod workspaces;

use clap::{Parser, Subcommand};
use nightshift_core::{Engine, EngineOptions, Error, ErrorCode, Home, RecoveryMode};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "nightshiftctl", version, about = "Run AI coding agents and commands on a schedule — headless Nightshift")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Ask another machine's Nightshift (a `[[homes]]` name; `nightshiftctl homes list`) instead
    /// of this one's: runs, show, report, logs, why, usage, run, cancel, pause, resume,
    /// routines list|new|edit|validate|remove, accounts list|check.
    #[arg(long, global = true, value_name = "NAME")]
    home: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// List, validate and preview routines.
    Routines {
        #[command(subcommand)]
        command: routines::RoutinesCommand,
    },
    /// Run a routine now.
    Run(run::RunArgs),
    /// Run history, newest first.
    Runs(history::RunsArgs),
    /// One run in detail.
    Show {
        run_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Drop a queued run (also one waiting for a retry or a limit's reset), whichever process
    /// queued it.
    Cancel { run_id: String },
    /// The tool calls runs hold while they ask you (`on_denial: ask`).
    Approvals {
        #[arg(long)]
        json: bool,
    },
    /// Let a run that waits for approval make the call it asked for.
    Approve {
        run_id: String,
        /// That tool for the rest of the run, not only this call.
        #[arg(long)]
        for_run: bool,
    },
    /// Refuse the call a run waits for approval of (the agent is told, and goes on without it).
    Deny { run_id: String },
    /// Print a run's report (Markdown).
    Report { run_id: String },
    /// Print a run's output log.
    Logs {
        run_id: String,
        /// Keep printing new output until the run ends.
        #[arg(long, short)]
        follow: bool,
        /// Show stderr instead of stdout.
        #[arg(long)]
        stderr: bool,
    },
    /// Accounts: auth health, setup tokens in the OS keychain.
    Accounts {
        #[command(subcommand)]
        command: accounts::AccountsCommand,
    },
    /// The machines routines run on over SSH (`host:`): their health, a fresh check.
    Hosts {
        #[command(subcommand)]
        command: hosts::HostsCommand,
    },
    /// Create the home directory with example routines (the tray app does this on first launch).
    Init,
    /// Print shell completions: `nightshiftctl completions bash > ~/.local/share/bash-completion/completions/nightshiftctl`
    /// (zsh: a file `_nightshiftctl` on your `fpath`; fish: `~/.config/fish/completions/nightshiftctl.fish`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the manual pages (nightshiftctl.1 and one per subcommand) into DIR.
    #[command(hide = true)]
    Manpages { dir: std::path::PathBuf },
    /// Other machines' Nightshift this one looks at and controls (`--home NAME`), and whose
    /// finish notifications it shows.
    Homes {
        #[command(subcommand)]
        command: homes::HomesCommand,
    },
    /// Run the scheduler in the foreground, printing what happens (one per home).
    Daemon {
        /// One JSON event per line instead of readable lines.
        #[arg(long)]
        json: bool,
        /// Also send desktop notifications (finish notices, revoked accounts, auto-pauses).
        #[arg(long)]
        notify: bool,
    },
    /// The window in a browser (for machines without a display); schedules the home unless a
    /// daemon or the app does. Prints the URL with its access token.
    Serve(serve::ServeArgs),
    /// Secrets routines name in `secrets:` (a deploy key, a token), kept in the OS keychain.
    Secrets {
        #[command(subcommand)]
        command: secrets::SecretsCommand,
    },
    /// Events routines run on (`trigger:`): the secrets GitHub's and Linear's deliveries are
    /// signed with, and the latest deliveries with what became of each.
    Hooks {
        #[command(subcommand)]
        command: hooks::HooksCommand,
    },
    /// Polling GitHub for the events routines run on (`[github] poll`): the token it asks
    /// with, and one pass now.
    Github {
        #[command(subcommand)]
        command: github::GithubCommand,
    },
    /// Webhooks: the ones configured, their signing secrets in the OS keychain.
    Webhooks {
        #[command(subcommand)]
        command: webhooks::WebhooksCommand,
    },
    /// What each run's webhooks did (newest first), or `retry RUN` to send them again.
    Deliveries {
        #[command(subcommand)]
        command: Option<webhooks::DeliveriesCommand>,
        /// Only deliveries that gave up.
        #[arg(long)]
        failed: bool,
        #[arg(long)]
        json: bool,
    },
    /// Tokens and cost per routine, account or day (as the agents reported them).
    Usage(usage::UsageArgs),
    /// Why a routine did or did not run: every slot in the window with its fate and the evidence
    /// (asleep, no Nightshift running, paused, skipped, blocked, …), then its next fire.
    Why(why::WhyArgs),
    /// Serve Nightshift's tools to an AI agent over MCP (stdio): look up routines, runs, reports
    /// and `why`; with `[mcp] allow` in nightshift.toml, run routines and schedule follow-ups.
    /// Add it to an agent with `claude mcp add nightshift -- nightshiftctl mcp`.
    Mcp,
    /// Push a worktree run's branch now (after its pushes gave up, or instead of waiting).
    Push { run_id: String },
    /// Remove worktrees older than `keep_worktrees_days` (their branches stay) and the files of
    /// runs past `keep_runs_days` / `keep_runs_per_routine` (their records stay); the app and the
    /// daemon also do this every hour.
    Prune {
        /// Only list what would be removed.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Pause scheduling: one routine, or all of them (manual runs still work).
    Pause { routine: Option<String> },
    /// Resume scheduling: one routine (also after an auto-pause), or all of them.
    Resume { routine: Option<String> },
}

/// What a command ended with.
pub enum Outcome {
    Ok,
    /// A run ended other than completed (exit 1).
    RunNotCompleted,
    /// Problems were already printed (e.g. `routines validate`); exit 2.
    Invalid,
}

fn main() -> ExitCode {
    // A run's wrapper asking this binary to scrub its logs (before anything else is set up).
    nightshift_core::runner::scrub::serve_wrapper_request();
    nightshift_core::runner::sandbox::helper::serve_helper_request();
    nightshift_core::mcp::per_run::serve_bridge_request();
    nightshift_core::allocator::limit_arenas();
    match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt.block_on(cli_main()),
        Err(e) => {
            eprintln!("error: could not start: {e}");
            ExitCode::from(1)
        }
    }
}

async fn cli_main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    if only_prints(&cli.command) {
        quiet_on_a_closed_pipe();
    }
    let done = match cli.home {
        Some(name) => there(&name, cli.command).await,
        None => dispatch(cli.command).await,
    };
    match done {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::RunNotCompleted) => ExitCode::from(1),
        Ok(Outcome::Invalid) => ExitCode::from(2),
        Err(e) => {
            // A database or file error on a full or read-only disk: name the disk and the cause
            // (SQLite itself only says "unable to open database file" or "disk I/O error" and
            // cannot name the path). One cause, one line: SQLite's vaguer words give way to it.
            let trouble = match e.code {
                ErrorCode::StoreUnavailable | ErrorCode::Io => Home::from_env().ok().and_then(|h| nightshift_core::fsutil::storage_trouble(h.data_dir())),
                _ => None,
            };
            let vague = ["unable to open database file", "disk I/O error", "readonly database", "database or disk is full"].iter().any(|w| e.message.contains(w));
            match trouble {
                Some(t) if vague => eprintln!("error: {t}"),
                trouble => {
                    for line in e.message.lines() {
                        eprintln!("error: {line}");
                    }
                    if let Some(t) = trouble.filter(|t| !e.message.contains(t.as_str())) {
                        eprintln!("error: {t}");
                    }
                }
            }
            ExitCode::from(2)
        }
    }
}

/// A command that only reads and prints — what people pipe into `head`, `grep -m1` or `less`. It
/// ends quietly when the reader goes away, as `ls` and `cat` do, instead of Rust's panic on a
/// closed stdout. Never a command that runs work: the engine writes to its runs' pipes, and a run
/// that died must not take the engine down with SIGPIPE.
fn only_prints(command: &Command) -> bool {
    matches!(
        command,
        Command::Routines { .. }
            | Command::Runs(_)
            | Command::Show { .. }
            | Command::Report { .. }
            | Command::Usage(_)
            | Command::Why(_)
            | Command::Logs { .. }
            | Command::Hooks { command: hooks::HooksCommand::List { .. } }
            | Command::Completions { .. }
            | Command::Manpages { .. }
    )
}

/// Let SIGPIPE end the process, as it does any Unix filter (Rust ignores it, so a write to a
/// closed pipe is an error, and `println!` panics on it).
fn quiet_on_a_closed_pipe() {
    // SAFETY: restoring the default disposition of one signal, before any thread of ours writes.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

async fn dispatch(command: Command) -> Result<Outcome, Error> {
    // What needs no home: the CLI describing itself.
    match command {
        Command::Completions { shell } => return docs::completions(shell),
        Command::Manpages { dir } => return docs::manpages(&dir),
        _ => {}
    }
    let home = Home::from_env()?;
    match command {
        Command::Completions { .. } | Command::Manpages { .. } => unreachable!("answered above"),
        Command::Init => {
            let b = home.bootstrap()?;
            if b.created {
                println!("Created {} with example routines:", home.config_dir().display());
                for p in &b.example_routines {
                    println!("  {}", p.display());
                }
                println!("Try: nightshiftctl run hello --wait");
            } else {
                println!("{} already exists; nothing changed.", home.routines_dir().display());
            }
            Ok(Outcome::Ok)
        }
        Command::Daemon { json, notify } => daemon::daemon(Engine::open(EngineOptions::new(home).scrubbing_with_this_binary())?, json, notify).await,
        Command::Pause { routine } => pause(&open(home).await?, routine, true),
        Command::Resume { routine } => pause(&open(home).await?, routine, false),
        Command::Accounts { command } => accounts::run(&open(home).await?, command).await,
        Command::Hosts { command } => hosts::hosts(&open(home).await?, command).await,
        Command::Homes { command } => homes::homes(&open(home).await?, command).await,
        Command::Routines { command } => routines::run(&open(home).await?, command).await,
        Command::Run(args) => run::run(&open(home).await?, args).await,
        Command::Runs(args) => history::runs(&open_for_reading(home).await?, args),
        Command::Show { run_id, json } => history::show(&open_for_reading(home).await?, &run_id, json),
        Command::Report { run_id } => history::report(&open_for_reading(home).await?, &run_id),
        Command::Cancel { run_id } => run::cancel(&open(home).await?, &run_id).await,
        Command::Approvals { json } => approvals::list(&open(home).await?, json),
        Command::Approve { run_id, for_run } => approvals::answer(&open(home).await?, &run_id, true, for_run).await,
        Command::Deny { run_id } => approvals::answer(&open(home).await?, &run_id, false, false).await,
        Command::Serve(args) => serve::serve(Engine::open(EngineOptions::new(home).scrubbing_with_this_binary())?, args).await,
        Command::Secrets { command } => secrets::secrets(&open(home).await?, command),
        Command::Hooks { command } => hooks::hooks(&open(home).await?, command),
        Command::Github { command } => github::github(&open(home).await?, command).await,
        Command::Webhooks { command } => webhooks::webhooks(&open(home).await?, command),
        Command::Deliveries { command, failed, json } => webhooks::deliveries(&open(home).await?, command, failed, json),
        Command::Usage(args) => usage::usage(&open(home).await?, args).await,
        Command::Why(args) => why::why(&open_for_reading(home).await?, args),
        Command::Mcp => {
            // Inside a run: the tools its engine offers it (the run's own, sandbox or not).
            if let Some(socket) = nightshift_core::mcp::per_run::socket_of_this_run().await {
                match nightshift_core::mcp::per_run::bridge(&socket).await {
                    // Exit now: the runtime would wait for its stdin reader, which the agent may
                    // keep open after the engine's side ended (everything is flushed).
                    Ok(()) => std::process::exit(0),
                    Err(e) => tracing::warn!(error = %e.message, "answering from the home instead"),
                }
            }
            let engine = open(home).await.map_err(|e| match std::env::var_os("NIGHTSHIFT_RUN_ID") {
                // Inside a run in the machine's sandbox, the home's database is hidden (as it is
                // from every agent): say how to give a routine's runs the tools.
                Some(_) => Error::new(e.code, format!("{} — inside a sandboxed Nightshift run the home's database is hidden; give the routine `sandbox: off` for its agent to use Nightshift's MCP tools", e.message)),
                None => e,
            })?;
            let caller = nightshift_core::mcp::Caller::from_env(&engine);
            nightshift_core::mcp::serve_stdio(engine, caller).await?;
            Ok(Outcome::Ok)
        }
        Command::Push { run_id } => workspaces::push(&open(home).await?, &run_id).await,
        Command::Prune { dry_run, json } => prune::prune(&open(home).await?, dry_run, json).await,
        Command::Logs { run_id, follow, stderr } => history::logs(&open_for_reading(home).await?, &run_id, follow, stderr).await,
    }
}

/// A command answered by another home (`--home NAME`), through its `serve`.
async fn there(name: &str, command: Command) -> Result<Outcome, Error> {
    // Only this home's settings and the keychain: its database is not opened.
    let here = Home::from_env()?;
    let settings = nightshift_core::settings::Settings::load(&here.settings_path())?;
    let home = nightshift_core::homes::client_of(&here, &settings, name)?;
    let said = match &command {
        Command::Runs(_) => "runs",
        Command::Show { .. } => "show",
        Command::Logs { .. } => "logs",
        Command::Run(_) => "run",
        Command::Cancel { .. } => "cancel",
        Command::Pause { .. } => "pause",
        Command::Resume { .. } => "resume",
        Command::Routines { .. } => "routines",
        Command::Accounts { command: accounts::AccountsCommand::List { .. } | accounts::AccountsCommand::Check { .. } } => "accounts",
        Command::Why(_) => "why",
        Command::Report { .. } => "report",
        Command::Usage(_) => "usage",
        _ => return Err(Error::new(ErrorCode::Usage, format!("--home {name}: this command works on this machine only"))),
    };
    tracing::debug!(home = name, command = said, "asking another home");
    homes::say_home(&home);
    match command {
        Command::Runs(args) => history::runs_there(&home, args).await,
        Command::Show { run_id, json } => history::show_there(&home, &run_id, json).await,
        Command::Logs { run_id, follow, stderr } => history::logs_there(&home, &run_id, follow, stderr).await,
        Command::Run(args) => run::run_there(&home, args).await,
        Command::Cancel { run_id } => run::cancel_there(&home, &run_id).await,
        Command::Pause { routine } => pause_there(&home, routine, true).await,
        Command::Resume { routine } => pause_there(&home, routine, false).await,
        Command::Routines { command } => routines::there(&home, command).await,
        Command::Accounts { command } => accounts::there(&home, command).await,
        Command::Why(args) => why::why_there(&home, args).await,
        Command::Report { run_id } => history::report_there(&home, &run_id).await,
        Command::Usage(args) => usage::usage_there(&home, args).await,
        _ => unreachable!("refused above"),
    }
}

async fn pause_there(home: &nightshift_core::homes::HomeClient, routine: Option<String>, paused: bool) -> Result<Outcome, Error> {
    let verb = if paused { "paused" } else { "resumed" };
    match routine {
        Some(name) => {
            home.call::<()>("set_routine_paused", serde_json::json!({ "name": name, "paused": paused })).await?;
            println!("{verb} {name} on {}", home.name);
        }
        None => {
            home.call::<()>("set_paused", serde_json::json!({ "paused": paused })).await?;
            println!("{verb} all scheduling on {}", home.name);
        }
    }
    Ok(Outcome::Ok)
}

fn pause(engine: &Engine, routine: Option<String>, paused: bool) -> Result<Outcome, Error> {
    let verb = if paused { "paused" } else { "resumed" };
    match routine {
        Some(name) => {
            engine.set_routine_paused(&name, paused)?;
            println!("{verb} {name}");
        }
        None => {
            engine.set_paused(paused)?;
            println!("{verb} all scheduling{}", if paused { " (manual runs still work)" } else { "" });
        }
    }
    Ok(Outcome::Ok)
}

/// Open the engine and settle runs whose engine died (their process is gone). Live orphans are
/// left for a long-running engine (daemon, tray) to re-adopt.
async fn open(home: Home) -> Result<Engine, Error> {
    let engine = Engine::open(EngineOptions::new(home).scrubbing_with_this_binary())?;
    if let Err(e) = engine.recover(RecoveryMode::SettleFinished).await {
        tracing::warn!(error = %e, "could not settle runs left by a previous engine");
    }
    Ok(engine)
}

/// For the commands that only read history (`runs`, `show`, `report`, `logs`, `why`): the engine
/// as [`open`] opens it, or — on a home whose file system is read-only — its database read as it
/// is, said once on stderr, so yesterday's runs can still be looked at.
async fn open_for_reading(home: Home) -> Result<Engine, Error> {
    let read_only = nightshift_core::fsutil::space(home.data_dir()).is_some_and(|(_, read_only)| read_only);
    if !read_only {
        return open(home).await;
    }
    let trouble = nightshift_core::fsutil::storage_trouble(home.data_dir()).unwrap_or_default();
    let engine = Engine::open_read_only(EngineOptions::new(home))?;
    eprintln!("note: {trouble} — showing the history as it is; nothing is recorded or settled until it can be written");
    Ok(engine)
}

/// Desktop notifications through notify-rust, branded with the bundled icon.
pub fn desktop_notifier() -> std::sync::Arc<dyn nightshift_core::notify::Notifier> {
    use nightshift_desktop::DesktopNotifier;
    std::sync::Arc::new(DesktopNotifier::new(Some(DesktopNotifier::bundled_icon()), None))
}

/// Deliver finish notifications (and account/auto-pause notices) for as long as this runs.
pub fn enable_desktop_notifications(engine: &Engine) {
    engine.enable_notifications(answering_notifier(engine));
}

/// [`desktop_notifier`] whose "Approve" and "Deny" answer a run's ask in `engine`'s home.
pub fn answering_notifier(engine: &Engine) -> std::sync::Arc<dyn nightshift_core::notify::Notifier> {
    use nightshift_desktop::DesktopNotifier;
    let engine = engine.clone();
    // The answer comes on the notification's thread; an approval after a blocked run starts its
    // rerun on this runtime.
    let runtime = tokio::runtime::Handle::try_current().ok();
    let answer: nightshift_desktop::AnswerAsk = std::sync::Arc::new(move |run: String, allow: bool| match engine.answer_ask(&run, allow, false, "desktop") {
        Ok(ask) => {
            if let Some(rt) = &runtime {
                let engine = engine.clone();
                rt.spawn(async move {
                    if let Err(e) = engine.rerun_if_approved(ask).await {
                        tracing::warn!(error = %e.message, "the approved rerun did not start here; the scheduler starts it");
                    }
                });
            }
        }
        Err(e) => tracing::warn!(run = %run, error = %e.message, "the notification's answer was not taken"),
    });
    std::sync::Arc::new(DesktopNotifier::new(Some(DesktopNotifier::bundled_icon()), None).answering(answer))
}

/// Logs go to stderr, quiet by default; `NIGHTSHIFT_LOG=debug` (or any tracing filter) for more.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NIGHTSHIFT_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).with_target(false).try_init();
}
