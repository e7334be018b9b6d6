//! The CLI's own definition as shell completions and manual pages (clap's generators), so they
//! can never drift from the commands: `nightshiftctl completions bash|zsh|fish` for a source
//! install; `nightshiftctl manpages DIR` (hidden: the packaging step runs it) writes
//! `nightshiftctl.1`, a page per subcommand (`nightshiftctl-run.1`, …) and `nightshift.1`, the
//! tray app's page (its few flags, described here: the app has no argument parser to draw from).

use crate::Outcome;
use clap::CommandFactory;
use nightshift_core::{Error, ErrorCode};
use std::path::Path;

/// Print the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<Outcome, Error> {
    let mut cmd = crate::Cli::command();
    clap_complete::generate(shell, &mut cmd, "nightshiftctl", &mut std::io::stdout());
    Ok(Outcome::Ok)
}

/// The tray app as a user starts it (`nightshift`, src-tauri's `MINIMIZED`, `QUIT`, `--run-now`).
fn app_command() -> clap::Command {
    use clap::{Arg, ArgAction};
    clap::Command::new("nightshift")
        .version(env!("CARGO_PKG_VERSION"))
        // The app answers neither: it starts (or raises the running one).
        .disable_help_flag(true)
        .disable_version_flag(true)
        .about("Nightshift: runs AI coding agents and commands on a schedule, unattended, and tells the truth about every run")
        .long_about(
            "The tray app: it hosts the routine engine, shows a status icon (Run now, re-login an account, pause, open the window) and sends a notification when a run finishes. The first launch creates a home with an example routine. A second launch opens the running app's window. The same engine without a GUI is nightshiftctl(1).",
        )
        .arg(Arg::new("minimized").long("minimized").action(ArgAction::SetTrue).help("Start in the tray without opening the window (what Start at login launches)"))
        .arg(Arg::new("run-now").long("run-now").value_name("ROUTINE").help("Run this routine now (in the running app, when one runs)"))
        .arg(Arg::new("quit").long("quit").action(ArgAction::SetTrue).help("Quit the running app (it asks first when runs are going)"))
        .after_help("Environment: NIGHTSHIFT_HOME (one folder for everything, instead of the platform's folders). See nightshiftctl(1).")
}

/// Write the manual pages into `dir` (made if missing); prints each file written.
pub fn manpages(dir: &Path) -> Result<Outcome, Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, &e))?;
    let cmd = crate::Cli::command().version(env!("CARGO_PKG_VERSION"));
    let failed = |e: std::io::Error| Error::new(ErrorCode::Io, format!("cannot write the manual pages into {}: {e}", dir.display()));
    clap_mangen::generate_to(cmd, dir).map_err(failed)?;
    let mut app = Vec::new();
    clap_mangen::Man::new(app_command()).render(&mut app).map_err(failed)?;
    std::fs::write(dir.join("nightshift.1"), app).map_err(failed)?;
    let mut pages: Vec<_> = std::fs::read_dir(dir).map_err(|e| Error::io("read", dir, &e))?.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "1")).collect();
    pages.sort();
    for p in pages {
        println!("{}", p.display());
    }
    Ok(Outcome::Ok)
}
