//! `nightshiftctl serve`: the window in a browser, for machines without a display, and the address
//! other homes' viewers reach — `nightshift_core::serve` in the foreground. It schedules the home
//! too, unless a daemon or the app already does (then it views and controls, as the app does).

use crate::Outcome;
use clap::Args;
use nightshift_core::serve::{Scheduling, ServeOptions, Server};
use nightshift_core::{Engine, Error, Scheduler, SchedulerLock};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Args)]
pub struct ServeArgs {
    /// Where to listen (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:7878")]
    addr: SocketAddr,
    /// Allow an address other than loopback without TLS (the token then crosses the network in clear).
    #[arg(long)]
    insecure: bool,
    /// Refuse every command that would change this home (403), whichever token is given: the
    /// window and other homes' viewers may only look.
    #[arg(long)]
    read_only: bool,
    /// Replace the access tokens (viewers that stored the old ones must be given the new).
    #[arg(long)]
    new_token: bool,
    /// The https:// address of a TLS proxy in front (its requests carry that name), e.g.
    /// https://box.example.net — answered beside the address listened on.
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
}

/// Whether this process took the home's scheduler, or who has it.
#[derive(Default)]
struct Taken {
    scheduling: AtomicBool,
    elsewhere: Mutex<Option<String>>,
}

impl Scheduling for Taken {
    fn scheduled_elsewhere(&self) -> Option<String> {
        self.elsewhere.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    fn scheduling(&self) -> bool {
        self.scheduling.load(Ordering::SeqCst)
    }
}

pub async fn serve(engine: Engine, args: ServeArgs) -> Result<Outcome, Error> {
    engine.check_database()?;
    let taken = Arc::new(Taken::default());
    let options = ServeOptions { addr: args.addr, insecure: args.insecure, read_only: args.read_only, new_token: args.new_token, public_url: args.public_url };
    let server = Server::bind(&engine, &options, taken.clone()).await?;

    // Schedule this home unless someone else does; deliver its webhooks either way.
    engine.enable_webhooks();
    // The agents of the runs this process starts reach Nightshift's MCP tools through each run's
    // own socket.
    let _tools = nightshift_core::mcp::per_run::offer_to_runs(&engine);
    let lock = match SchedulerLock::take(engine.home(), "nightshiftctl serve") {
        Ok(lock) => {
            engine.recover(nightshift_core::RecoveryMode::Adopt).await?;
            taken.scheduling.store(true, Ordering::SeqCst);
            let sched = Scheduler::new(engine.clone());
            let scheduling = engine.clone();
            tokio::spawn(async move { nightshift_core::daemon::run(&scheduling, sched, Arc::new(tokio::sync::Notify::new())).await });
            Some(lock)
        }
        Err(nightshift_core::engine::NotTaken::Held { holder }) => {
            tracing::info!("{holder} schedules this home; serving it as a viewer and controller");
            *taken.elsewhere.lock().unwrap_or_else(|e| e.into_inner()) = Some(holder);
            None
        }
        Err(nightshift_core::engine::NotTaken::Failed(e)) => return Err(e),
    };
    if !server.addr().ip().is_loopback() {
        eprintln!("warning: serving on {} without TLS (--insecure): anyone on the network path can read the token", server.addr());
    }
    // Said once at start; a reader that has gone away by then (`serve | head -1`, a closed
    // terminal) must not take the server down with it — the token is in the file too.
    use std::io::Write;
    let mut out = std::io::stdout();
    let (token_file, read_only_file) = server.token_files();
    let _ = writeln!(out, "Nightshift is at {} (the token is also in {}; a read-only one in {})", server.url(), token_file.display(), read_only_file.display());
    if args.read_only {
        let _ = writeln!(out, "Read-only: commands that would change this home are refused.");
    }
    if let Some(holder) = taken.scheduled_elsewhere() {
        let _ = writeln!(out, "{holder} schedules this home; this page views and controls it.");
    }
    let _ = out.flush();

    let shutdown = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    };
    server.run(shutdown).await?;
    let _ = engine.hand_off_queued();
    drop(lock);
    Ok(Outcome::Ok)
}
