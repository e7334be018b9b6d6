//! Running the `git` CLI — for workspaces, and to check a routine's `cwd` — bounded in time,
//! never interactive, never touching the user's index by accident, and its failures said in words.
//!
//! Why the CLI and not a library: it is what the user's repository already trusts — their
//! config, hooks setup, credential helpers, `core.sshCommand`, partial clones and every object
//! format — and `git worktree` is a porcelain whose bookkeeping (`.git/worktrees/<id>`, locks,
//! `prune`) a library would have to re-implement.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Long enough for a checkout of a large repository; a push has its own bound.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(300);
pub const PUSH_LIMIT: Duration = Duration::from_secs(120);

/// Who Nightshift's own commits are by (also the committer of them).
pub const AUTHOR_NAME: &str = "Nightshift";
pub const AUTHOR_EMAIL: &str = "nightshift@localhost";

/// One git invocation.
pub struct Git {
    cmd: Command,
    what: String,
    limit: Duration,
}

/// What a finished git command printed.
#[derive(Debug)]
pub struct Output {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.status == 0
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim_end().to_string()
    }
}

impl Git {
    /// `git -C dir args…`, with a prompt-free, locale-stable environment.
    pub fn new(dir: &Path, args: &[&str]) -> Git {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(dir).args(args);
        // Never a prompt an unattended run would wait on: no terminal (git runs in a session of
        // its own, so ssh cannot open /dev/tty either), no askpass window.
        // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                libc::setsid();
                Ok(())
            });
        }
        cmd.env("GIT_TERMINAL_PROMPT", "0")
            .env("SSH_ASKPASS_REQUIRE", "never")
            .env_remove("GIT_ASKPASS")
            .env_remove("SSH_ASKPASS")
            // Reads (status, diff) must not refresh and rewrite the user's index behind their back.
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("LC_ALL", "C")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Git { cmd, what: format!("git {}", args.first().copied().unwrap_or("")), limit: DEFAULT_LIMIT }
    }

    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Git {
        self.cmd.env(key, value);
        self
    }

    /// One more argument (a path, or anything not UTF-8).
    pub fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> Git {
        self.cmd.arg(arg);
        self
    }

    pub fn limit(mut self, limit: Duration) -> Git {
        self.limit = limit;
        self
    }

    /// Commits made by Nightshift itself: its name on them, and no signing prompt or hook that
    /// could hang an unattended run.
    pub fn as_nightshift(self) -> Git {
        self.env("GIT_AUTHOR_NAME", AUTHOR_NAME)
            .env("GIT_AUTHOR_EMAIL", AUTHOR_EMAIL)
            .env("GIT_COMMITTER_NAME", AUTHOR_NAME)
            .env("GIT_COMMITTER_EMAIL", AUTHOR_EMAIL)
    }

    /// Run to the end (or the limit: then it is killed and that is the error).
    pub fn output(mut self) -> Result<Output, String> {
        let child = self.cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "git was not found on PATH; workspaces need it (install git, e.g. `apt install git`)".to_string(),
            _ => format!("could not start git: {e}"),
        })?;
        match crate::bounded::child_output(child, self.limit) {
            Ok(Some(out)) => Ok(Output { status: out.status.code().unwrap_or(-1), stdout: out.stdout, stderr: String::from_utf8_lossy(&out.stderr).into_owned() }),
            Ok(None) => Err(format!("{} did not finish within {} s and was stopped", self.what, self.limit.as_secs())),
            Err(e) => Err(format!("waiting for {} failed: {e}", self.what)),
        }
    }

    /// Run and require success; the error is git's own first line of complaint.
    pub fn run(self) -> Result<String, String> {
        let what = self.what.clone();
        let out = self.output()?;
        if out.ok() {
            Ok(out.text())
        } else {
            Err(complaint(&what, &out.stderr))
        }
    }
}

/// "git worktree failed: fatal: …" — git's most telling line (a `fatal:`/`error:` line first).
pub fn complaint(what: &str, stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("hint:")).collect();
    let line = lines.iter().find(|l| l.starts_with("fatal:") || l.starts_with("error:")).or(lines.first()).copied().unwrap_or("no message");
    let line: String = line.chars().take(300).collect();
    format!("{what} failed: {line}")
}

/// The top of the git working tree that holds `dir` — found by looking for `.git` in `dir` and
/// above (no process: routine files are validated often). `None` when `dir` is in no repository.
pub fn find_repo_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}
