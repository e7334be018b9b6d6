//! Where Nightshift keeps its files (docs/files.md is the contract).
//!
//! `NIGHTSHIFT_HOME=/dir` puts everything under one directory — tests and CI always set it, and it
//! is the one switch that isolates a test (no other global state). Without it the platform's
//! config dir holds settings and routines and its data dir holds the database, runs and accounts.

use crate::error::{Error, ErrorCode, Result};
use std::path::{Path, PathBuf};

pub const HOME_ENV: &str = "NIGHTSHIFT_HOME";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    config_dir: PathBuf,
    data_dir: PathBuf,
}

/// What [`Home::bootstrap`] did, so a face can tell the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bootstrap {
    pub created: bool,
    pub example_routines: Vec<PathBuf>,
}

impl Home {
    /// One directory for everything.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        Home { config_dir: dir.clone(), data_dir: dir }
    }

    /// `NIGHTSHIFT_HOME` when set (and not empty), else the platform directories.
    pub fn from_env() -> Result<Self> {
        match std::env::var_os(HOME_ENV) {
            Some(dir) if !dir.is_empty() => Ok(Home::at(PathBuf::from(dir))),
            _ => {
                let dirs = directories::ProjectDirs::from("dev", "nightshift", "Nightshift").ok_or_else(|| {
                    Error::new(
                        ErrorCode::Io,
                        format!("cannot find a home directory for Nightshift; set {HOME_ENV}=/some/dir"),
                    )
                })?;
                Ok(Home { config_dir: dirs.config_dir().to_path_buf(), data_dir: dirs.data_dir().to_path_buf() })
            }
        }
    }

    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }
    pub fn settings_path(&self) -> PathBuf {
        self.config_dir.join("nightshift.toml")
    }
    pub fn routines_dir(&self) -> PathBuf {
        self.config_dir.join("routines")
    }
    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join("nightshift.db")
    }
    pub fn runs_dir(&self) -> PathBuf {
        self.data_dir.join("runs")
    }
    pub fn run_dir(&self, routine: &str, run_id: &str) -> PathBuf {
        self.runs_dir().join(routine).join(run_id)
    }
    /// Worktrees of `workspace: worktree` runs, one directory per run id.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.data_dir.join("worktrees")
    }
    /// Touched whenever a process on this home queues or settles a run, so long-running engines
    /// in other processes look at the queue at once (a file watch; no polling).
    pub fn wake_path(&self) -> PathBuf {
        self.data_dir().join("wake").join("queue")
    }
    pub fn accounts_dir(&self) -> PathBuf {
        self.data_dir.join("accounts")
    }

    /// A path as the user should see it in messages: relative to the config dir when inside it
    /// (`routines/x.yaml`), absolute otherwise.
    pub fn display_path(&self, path: &Path) -> String {
        path.strip_prefix(&self.config_dir).unwrap_or(path).display().to_string()
    }

    /// Create the directories; on the very first launch (no routines directory yet) also write the
    /// example routines so a new user sees a real run at once. Never overwrites anything.
    pub fn bootstrap(&self) -> Result<Bootstrap> {
        let routines = self.routines_dir();
        let created = !routines.exists();
        for dir in [&self.config_dir, &self.data_dir, &routines, &self.runs_dir()] {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, &e))?;
        }
        let mut example_routines = Vec::new();
        if created {
            for (file, text) in EXAMPLES {
                let path = routines.join(file);
                crate::fsutil::write_atomic(&path, text.as_bytes())?;
                example_routines.push(path);
            }
        }
        Ok(Bootstrap { created, example_routines })
    }
}

/// Written on first launch. `hello` works with no account at all; `pr-review` shows the schema
/// for an agent routine and stays disabled until the user has an account set up.
const EXAMPLES: [(&str, &str); 2] = [
    (
        "hello.yaml",
        r#"# An example routine: a plain command, no account needed. Run it now with
#   nightshiftctl run hello --wait
# or from the tray menu (Run now ▸ hello). Edit or delete this file freely.
schedule: "0 * * * *"        # every hour, on the hour
command: 'echo "Hello from Nightshift on $(hostname) at $(date)"; echo "Working directory: $(pwd)"'
notify: always
timeout: 1m
"#,
    ),
    (
        "pr-review.yaml",
        r#"# An example agent routine. Enable it once `claude` is installed and logged in.
name: pr-review
enabled: false
schedule: "0 9 * * 1-5"      # weekdays at 09:00
# timezone: Europe/Berlin    # default: this machine's zone
agent: claude                # claude | codex | gemini
mode: plan                   # plan | edit | auto | skip
prompt: |
  Review the open pull requests in {repo} and summarise what needs my attention.
  Last time you wrote: {last_report}
variables:
  repo: my-org/my-app
cwd: ~/code/my-app
timeout: 30m
notify: always
"#,
    ),
];
