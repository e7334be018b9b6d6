//! Real git repositories for workspace tests: one `git` runner with a fixed identity (tests must
//! not depend on the machine's git config) that fails loudly with git's own words.

use std::path::Path;
use std::process::Command;

/// `git -C dir args…` as the test's user; its output, trimmed. Panics with git's stderr on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "User")
        .env("GIT_AUTHOR_EMAIL", "user@example.com")
        .env("GIT_COMMITTER_NAME", "User")
        .env("GIT_COMMITTER_EMAIL", "user@example.com")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// A new repository at `dir` on branch `main` with `files` (path, content) in its first commit.
pub fn init_repo(dir: &Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    for (path, content) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", "first"]);
}

/// A bare repository at `dir` — a remote to push to.
pub fn init_bare(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "--bare"]);
}

/// Make the remote at `bare` refuse every push with `message` (a pre-receive hook: works as root,
/// where file permissions would not stop a write).
pub fn refuse_pushes(bare: &Path, message: &str) {
    let hook = bare.join("hooks/pre-receive");
    std::fs::write(&hook, format!("#!/bin/sh\necho '{message}' >&2\nexit 1\n")).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// Let the remote at `bare` take pushes again.
pub fn accept_pushes(bare: &Path) {
    std::fs::remove_file(bare.join("hooks/pre-receive")).unwrap();
}
