//! Throwaway Nightshift homes (`NIGHTSHIFT_HOME`) with routine files, and the paths of the real
//! agent CLIs installed by `.ci/run` into `tests/agents-cli/node_modules`.

use std::path::{Path, PathBuf};

pub struct TestHome {
    pub dir: tempfile::TempDir,
}

impl TestHome {
    pub fn new() -> TestHome {
        let dir = tempfile::Builder::new().prefix("nightshift-test-").tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("routines")).unwrap();
        TestHome { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write `routines/<name>.yaml`.
    pub fn routine(&self, name: &str, yaml: &str) -> PathBuf {
        let path = self.path().join("routines").join(format!("{name}.yaml"));
        std::fs::write(&path, yaml).unwrap();
        path
    }

    /// Write `routines/<name>.yaml` for a routine placed on another machine (`host:`, `hosts:`,
    /// the fleet), with `devices:` naming this machine (its hostname) as the one that sends its
    /// runs — a placed routine without `devices:` is refused.
    pub fn routine_sent_from_here(&self, name: &str, yaml: &str) -> PathBuf {
        self.routine(name, &format!("{yaml}{}devices: [{}]\n", if yaml.ends_with('\n') { "" } else { "\n" }, this_machine()))
    }

    /// An isolated HOME for agent CLIs (their config, caches) inside this test home.
    pub fn user_home(&self) -> PathBuf {
        let p = self.path().join("user-home");
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// A directory for fake agent executables; put it first on PATH.
    pub fn bin_dir(&self) -> PathBuf {
        let p = self.path().join("bin");
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// Write an executable script named `name` into [`bin_dir`](Self::bin_dir).
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        // The executable is written by a child process (`install`), never by this one: a file
        // this process holds open for writing is inherited by every child another test thread
        // forks meanwhile, and exec of it fails with "Text file busy" (ETXTBSY) until that child
        // execs — a flake of parallel tests. Only the plain source copy is written here.
        let path = self.bin_dir().join(name);
        let source = self.bin_dir().join(format!(".{name}.source"));
        std::fs::write(&source, format!("#!/bin/sh\n{body}\n")).unwrap();
        let status = std::process::Command::new("install").arg("-m").arg("755").arg(&source).arg(&path).status().expect("run install(1)");
        assert!(status.success(), "install {} failed", path.display());
        std::fs::remove_file(&source).unwrap();
        path
    }
}

impl Default for TestHome {
    fn default() -> Self {
        TestHome::new()
    }
}

/// The workspace root (where `tests/agents-cli` lives).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("workspace root").to_path_buf()
}

/// A real agent CLI (`claude`, `codex`, `gemini`, `opencode`) installed by `.ci/run` (`npm install
/// --no-save` in tests/agents-cli), if present.
pub fn agent_cli(name: &str) -> Option<PathBuf> {
    let p = workspace_root().join("tests/agents-cli/node_modules/.bin").join(name);
    p.exists().then_some(p)
}

/// Like [`agent_cli`], but a test that needs the real CLI fails loudly when it is missing,
/// unless `NIGHTSHIFT_SKIP_REAL_CLI=1` says the developer chose to skip those tests.
pub fn require_agent_cli(name: &str) -> Option<PathBuf> {
    match agent_cli(name) {
        Some(p) => Some(p),
        None if std::env::var("NIGHTSHIFT_SKIP_REAL_CLI").as_deref() == Ok("1") => {
            eprintln!("skipping: the real {name} CLI is not installed and NIGHTSHIFT_SKIP_REAL_CLI=1");
            None
        }
        None => panic!(
            "the real {name} CLI is not installed: run `npm install --no-save --prefix tests/agents-cli` (the test script does it), \
             or set NIGHTSHIFT_SKIP_REAL_CLI=1 to skip these tests"
        ),
    }
}

/// The real Claude Code CLI, if installed.
pub fn claude_cli() -> Option<PathBuf> {
    agent_cli("claude")
}

/// The real Claude Code CLI, or a loud failure (see [`require_agent_cli`]).
pub fn require_claude_cli() -> Option<PathBuf> {
    require_agent_cli("claude")
}

/// This machine's hostname: the engine's name for it in `devices:` unless `device_name` is set.
pub fn this_machine() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) } == 0;
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    if ok { String::from_utf8_lossy(&buf[..end]).into_owned() } else { "localhost".into() }
}
