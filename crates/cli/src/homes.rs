//! `nightshiftctl homes add|list|remove`, and every command with `--home NAME`: the same command
//! answered by another machine's Nightshift (its `serve`), through the window's commands.

use crate::format::{self, json, table};
use crate::Outcome;
use clap::Subcommand;
use nightshift_core::homes::{self, HomeClient};
use nightshift_core::{Engine, Error, ErrorCode};
use std::io::{IsTerminal, Read};

#[derive(Subcommand)]
pub enum HomesCommand {
    /// Look at another machine's Nightshift from here. URL: `ssh://[user@]host[/serve-port]`
    /// (through SSH to its `serve` on loopback; default port 7878), `https://host[:port]` (a TLS
    /// proxy in front of it: its certificate verified, or pinned now with its fingerprint shown)
    /// or `http://127.0.0.1:PORT`. Its access token (what its `serve` printed after `?token=`) is
    /// read from stdin into the OS keychain — never an argument, never a file.
    Add {
        name: String,
        url: String,
        /// Replace a home of that name (a new address or token).
        #[arg(long)]
        replace: bool,
    },
    /// Every home: reachable, last seen, what it schedules.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Stop looking at a home (its entry and token here; nothing changes there).
    Remove { name: String },
}

pub async fn homes(engine: &Engine, cmd: HomesCommand) -> Result<Outcome, Error> {
    match cmd {
        HomesCommand::Add { name, url, replace } => {
            let token = read_token(&name)?;
            let added = homes::add(engine, &name, &url, &token, replace).await?;
            let parsed = &added.url;
            if let Some((fingerprint, why)) = &added.pinned {
                println!("pinned the certificate of {parsed} on first use — no authority this machine trusts vouches for it ({why}).");
                println!("  SHA-256 {fingerprint}");
                println!("  Compare it with the server's (`openssl x509 -noout -fingerprint -sha256 -in CERT` there); only this certificate is accepted from now on.");
            }
            // Say at once whether it answers (the entry stays either way: the box may be asleep).
            let there = homes::client(engine, &name)?;
            match there.call::<serde_json::Value>("engine_state", serde_json::json!({})).await {
                Ok(state) => println!("added {name} ({parsed}): reachable, {} there", state["device"].as_str().unwrap_or("?")),
                Err(e) => {
                    println!("added {name} ({parsed})");
                    eprintln!("note: not reachable now — {}", e.message);
                }
            }
            Ok(Outcome::Ok)
        }
        HomesCommand::List { json: as_json } => {
            let all = homes::statuses(engine).await;
            if as_json {
                json(&all);
                return Ok(Outcome::Ok);
            }
            if all.is_empty() {
                println!("No other homes. Add one with `nightshiftctl homes add NAME ssh://user@host` (its token on stdin).");
                return Ok(Outcome::Ok);
            }
            let rows: Vec<Vec<String>> = all
                .iter()
                .map(|h| {
                    let state = match (&h.error, h.reachable) {
                        (_, true) => format!("✓ reachable · {}", h.device.as_deref().unwrap_or("?")),
                        (Some(e), false) => format!("✗ {e}"),
                        (None, false) => "✗ unreachable".to_string(),
                    };
                    let schedules = match (h.reachable, h.scheduling) {
                        (false, _) => "-".to_string(),
                        (true, false) => format!("{} routines (not scheduling: start its daemon)", h.routines.len()),
                        (true, true) => match h.routines.len() {
                            0 => "no routines".to_string(),
                            _ => h.routines.join(", "),
                        },
                    };
                    vec![h.name.clone(), h.url.clone(), state, h.last_seen.map(|t| format::local(&t)).unwrap_or_else(|| "never".into()), schedules]
                })
                .collect();
            table(&["NAME", "URL", "STATE", "LAST SEEN", "SCHEDULES"], &rows);
            Ok(Outcome::Ok)
        }
        HomesCommand::Remove { name } => {
            homes::remove(engine, &name)?;
            println!("removed {name} (its token too; nothing changed on that machine)");
            Ok(Outcome::Ok)
        }
    }
}

/// The token from stdin: one line, not echoed on a terminal.
fn read_token(name: &str) -> Result<String, Error> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("Access token of {name} (what its `nightshiftctl serve` printed after ?token=): ");
        let token = rpassword_like_read()?;
        eprintln!();
        return Ok(token);
    }
    let mut text = String::new();
    stdin.lock().take(4096).read_to_string(&mut text).map_err(|e| Error::new(ErrorCode::Io, format!("cannot read the token from stdin: {e}")))?;
    Ok(text.trim().to_string())
}

/// One line from the terminal with echo off (restored however the read ends).
fn rpassword_like_read() -> Result<String, Error> {
    let fd = libc::STDIN_FILENO;
    // SAFETY: termios calls on our own stdin with a zeroed struct the kernel fills.
    let mut old: libc::termios = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::tcgetattr(fd, &mut old) } == 0;
    if got {
        let mut quiet = old;
        quiet.c_lflag &= !libc::ECHO;
        unsafe { libc::tcsetattr(fd, libc::TCSANOW, &quiet) };
    }
    let mut line = String::new();
    let read = std::io::stdin().read_line(&mut line);
    if got {
        unsafe { libc::tcsetattr(fd, libc::TCSANOW, &old) };
    }
    read.map_err(|e| Error::new(ErrorCode::Io, format!("cannot read the token: {e}")))?;
    Ok(line.trim().to_string())
}

/// Say which home answers (on stderr: `--json` output stays JSON).
pub fn say_home(home: &HomeClient) {
    eprintln!("(home {})", home.name);
}

/// A command that does not (yet) reach another home says so, and what to do instead.
pub fn not_there(command: &str, home: &str) -> Error {
    Error::new(
        ErrorCode::Usage,
        format!("`{command}` does not take --home yet; run it on that machine (ssh there and `nightshiftctl {command}`), or leave --home out for this one. `--home {home}` works with runs, show, report, logs, why, usage, run, cancel, pause, resume, routines list|new|edit|validate|remove and accounts list|check"),
    )
}
