//! Putting a run in the machine's sandbox: bubblewrap (`bwrap`) on Linux, and a network that
//! reaches only what the run may reach, through a proxy of Nightshift's own.
//!
//! The run's process tree, under its wrapper (`runner::process`):
//!
//! ```text
//! <nightshift> __sandbox-run <run dir> -- <agent> <args…>     outside: the proxy, on a Unix socket
//!   └ bwrap … --unshare-net …                                   the machine read-only, secrets hidden
//!       └ <nightshift> __sandbox-net <socket> <ports> -- …      inside: loopback → the proxy
//!           └ <agent> <args…>                                   HTTPS_PROXY=http://127.0.0.1:<port>
//! ```
//!
//! The proxy lives in the run's own process group, not in the engine: a run outlives its engine by
//! design (`runner::process`), and its network must too. Everything the sandbox is built from is
//! the [`Plan`], written to the run's folder before it starts (a run with one was sandboxed).

pub mod handover;
pub mod helper;
pub mod proxy;
pub mod seatbelt;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the sandbox's folder of the run (`<run dir>/sandbox`) is seen inside: a short path, so
/// the proxy's socket path fits a Unix socket's 108 bytes whatever the run's folder is.
pub const INSIDE_DIR: &str = "/tmp/.nightshift-sandbox";
/// The proxy's socket in that folder.
pub const SOCKET: &str = "proxy.sock";
/// An empty file nobody may read, laid over each hidden file.
pub const HIDDEN_FILE: &str = "hidden";

/// What one run's sandbox is built from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Folders the run may write (its working folder, its run folder, its account's folders,
    /// `allow.dirs`, its agent's own state).
    pub writable: Vec<PathBuf>,
    /// Paths under `/tmp` it must still see (the sandbox's `/tmp` is its own): its program, its
    /// `PATH`, what its environment names.
    pub visible: Vec<PathBuf>,
    /// Paths it may not see at all (`~/.ssh`, the database, other accounts…).
    pub hidden: Vec<PathBuf>,
    /// Hosts it may reach through the proxy (`host` or `host:port`, `*.x`).
    pub hosts: Vec<String>,
    /// Hosts its CLI calls on its own (update checks): refused, and not the run's denials.
    #[serde(default)]
    pub background: Vec<String>,
    /// Loopback ports among `hosts`, forwarded inside so `http://127.0.0.1:<port>` works as
    /// written (a local model server, a test API) even for a client that ignores proxy settings.
    pub forwards: Vec<u16>,
    /// Where the run starts.
    pub cwd: Option<PathBuf>,
}

impl Plan {
    /// bubblewrap's arguments for the run, up to (not including) the program it starts. Order
    /// matters: the machine read-only, a private `/tmp`, what must stay visible under it, the
    /// writable folders, and the hidden list laid over all of them (a hidden folder inside a
    /// writable one stays hidden).
    pub fn bwrap_args(&self, run_dir: &Path, as_root: bool) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
        push(&["--die-with-parent", "--unshare-net", "--unshare-pid", "--unshare-ipc"]);
        // As root, bubblewrap keeps every capability unless told: without this, the run could
        // remount what is read-only and unmount what hides.
        if as_root {
            push(&["--cap-drop", "ALL"]);
        }
        push(&["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]);
        let shown = |p: &PathBuf| p.display().to_string();
        for v in self.visible.iter().filter(|p| p.exists()) {
            a.extend(["--ro-bind".into(), shown(v), shown(v)]);
        }
        let mut writable: Vec<&PathBuf> = self.writable.iter().filter(|p| p.exists()).collect();
        writable.sort_by_key(|p| p.components().count());
        for w in writable {
            a.extend(["--bind".into(), shown(w), shown(w)]);
        }
        let own = run_dir.join(crate::run_dir::SANDBOX_DIR);
        a.extend(["--bind".into(), shown(&own), INSIDE_DIR.into()]);
        for h in &self.hidden {
            match std::fs::symlink_metadata(h) {
                Ok(m) if m.is_dir() => a.extend(["--perms".into(), "0000".into(), "--tmpfs".into(), shown(h)]),
                Ok(_) => a.extend(["--ro-bind".into(), shown(&own.join(HIDDEN_FILE)), shown(h)]),
                Err(_) => {}
            }
        }
        if let Some(cwd) = &self.cwd {
            a.extend(["--chdir".into(), shown(cwd)]);
        }
        a
    }
}

impl Plan {
    /// Complete the plan on the machine the run starts on, from what only that machine knows (the
    /// helper does this before bubblewrap, so a plan written elsewhere — for a run on an SSH host —
    /// works as well as one written here): `~` in its paths is `home`; what must stay visible
    /// under the private `/tmp` (the program, `PATH`, the paths `env` names); the session's
    /// runtime folder hidden (its bus and keyring). What is already there stays as it is.
    pub fn complete_here(&mut self, home: Option<&Path>, program: &Path, env: &BTreeMap<String, String>) {
        if let Some(home) = home {
            let expand = |p: &mut PathBuf| {
                if let Ok(rest) = p.strip_prefix("~") {
                    *p = home.join(rest);
                }
            };
            self.writable.iter_mut().chain(self.visible.iter_mut()).chain(self.hidden.iter_mut()).chain(self.cwd.iter_mut()).for_each(expand);
        }
        for v in visible_under_tmp(program, env) {
            if !self.visible.contains(&v) {
                self.visible.push(v);
            }
        }
        if let Some(runtime) = env.get("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|r| r.is_absolute() && !self.hidden.contains(r)) {
            self.hidden.push(runtime);
        }
    }
}

/// What must stay visible under the sandbox's own `/tmp`: the program (an npm CLI: its whole
/// package folder), every `PATH` folder and every path the run's environment names.
fn visible_under_tmp(program: &Path, env: &BTreeMap<String, String>) -> Vec<PathBuf> {
    let tmp = Path::new("/tmp");
    let mut paths: Vec<PathBuf> = Vec::new();
    if let Ok(real) = std::fs::canonicalize(program) {
        paths.push(install_root(&real));
    }
    paths.push(program.parent().map(Path::to_path_buf).unwrap_or_default());
    paths.extend(env.get("PATH").into_iter().flat_map(|p| std::env::split_paths(p).collect::<Vec<_>>()));
    paths.extend(env.values().map(PathBuf::from).filter(|p| p.is_absolute()));
    let mut under: Vec<PathBuf> = paths.into_iter().filter(|p| p.starts_with(tmp) && p != tmp && p.exists()).collect();
    under.sort();
    under.dedup();
    under
}

/// Where an installed program's files are: the folder holding its outermost `node_modules` (a
/// node CLI needs its whole package tree), else its own folder.
fn install_root(real: &Path) -> PathBuf {
    match real.ancestors().filter(|a| a.file_name().is_some_and(|n| n == "node_modules")).last() {
        Some(modules) => modules.parent().unwrap_or(modules).to_path_buf(),
        None => real.parent().unwrap_or(real).to_path_buf(),
    }
}

/// A stream whose writing half can be closed while its reading half goes on.
pub(crate) trait HalfClose: std::io::Write {
    fn close_write(&self);
}

impl HalfClose for std::net::TcpStream {
    fn close_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

impl HalfClose for std::os::unix::net::UnixStream {
    fn close_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

/// Carry bytes both ways — `from_a` to `to_b` on a thread of its own, `from_b` to `to_a` here —
/// until each side has said all it will (each end's writing half closed after its last byte).
pub(crate) fn splice<R: std::io::Read + std::os::fd::AsRawFd + Send + 'static, W: HalfClose + std::os::fd::AsRawFd + Send + 'static>(
    from_a: R,
    to_b: W,
    from_b: impl std::io::Read + std::os::fd::AsRawFd,
    to_a: impl HalfClose + std::os::fd::AsRawFd,
) {
    let up = std::thread::spawn(move || pump(from_a, to_b));
    pump(from_b, to_a);
    let _ = up.join();
}

/// Move everything `from` says to `to`, then close `to`'s writing half. In the kernel where it can
/// (`splice(2)` through a pipe: the bytes are never copied into this process), else through a
/// large buffer — the proxy is on the path of every byte a sandboxed run downloads.
fn pump(mut from: impl std::io::Read + std::os::fd::AsRawFd, mut to: impl HalfClose + std::os::fd::AsRawFd) {
    if kernel_pump(from.as_raw_fd(), to.as_raw_fd()).is_err() {
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
    }
    to.close_write();
}

/// `from` → pipe → `to` with `splice(2)`, until `from` ends. `Err` before the first byte moved when
/// the kernel cannot splice these (the caller copies instead).
#[cfg(target_os = "linux")]
fn kernel_pump(from: std::os::fd::RawFd, to: std::os::fd::RawFd) -> std::io::Result<()> {
    let (read_end, write_end) = std::io::pipe()?;
    use std::os::fd::AsRawFd;
    const CHUNK: usize = 1 << 20;
    // A pipe holds 64 KiB unless told: each splice would move no more. As much as CHUNK where the
    // system allows (an unprivileged pipe may grow to /proc/sys/fs/pipe-max-size, 1 MiB by default).
    // SAFETY: F_SETPIPE_SZ on a pipe this function owns; a refusal leaves the default size.
    unsafe { libc::fcntl(write_end.as_raw_fd(), libc::F_SETPIPE_SZ, CHUNK as libc::c_int) };
    loop {
        // SAFETY: splicing between open descriptors this function's callers own; no memory is passed.
        let n = unsafe { libc::splice(from, std::ptr::null_mut(), write_end.as_raw_fd(), std::ptr::null_mut(), CHUNK, libc::SPLICE_F_MOVE) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Ok(());
        }
        let mut left = n as usize;
        while left > 0 {
            // SAFETY: as above.
            let m = unsafe { libc::splice(read_end.as_raw_fd(), std::ptr::null_mut(), to, std::ptr::null_mut(), left, libc::SPLICE_F_MOVE) };
            if m < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                // The bytes in the pipe cannot be taken back: the connection is over either way.
                return Ok(());
            }
            if m == 0 {
                return Ok(());
            }
            left -= m as usize;
        }
    }
}

/// `splice(2)` is Linux's: elsewhere the caller copies.
#[cfg(not(target_os = "linux"))]
fn kernel_pump(_from: std::os::fd::RawFd, _to: std::os::fd::RawFd) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Whether this process runs as root (bubblewrap then needs `--cap-drop ALL`).
pub fn as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// [`probe`], remembered in `cache` (a file of the home's data folder) for this boot: every
/// `nightshiftctl` command is an engine of its own, and the check costs each one milliseconds
/// (docs/performance.md). A sandbox found to work is kept with what that depends on — which
/// `bwrap`, its size and time, the boot — and checked again when any of them changed; one found
/// not to work is checked again every time (it may have been fixed since).
pub fn probe_cached(cache: &Path, path_var: Option<&str>) -> Result<PathBuf, String> {
    let bwrap = crate::fsutil::find_on_path("bwrap", path_var);
    let facts = bwrap.as_deref().and_then(|b| {
        let meta = std::fs::metadata(b).ok()?;
        let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        Some(format!("{}\n{} {mtime}\n{}\n", b.display(), meta.len(), boot.trim()))
    });
    if let (Some(bwrap), Some(facts)) = (&bwrap, &facts) {
        if std::fs::read_to_string(cache).is_ok_and(|kept| kept == *facts) {
            return Ok(bwrap.clone());
        }
    }
    let found = probe(path_var);
    match (&found, facts) {
        (Ok(_), Some(facts)) => {
            let _ = crate::fsutil::write_atomic(cache, facts.as_bytes());
        }
        _ => {
            let _ = std::fs::remove_file(cache);
        }
    }
    found
}

/// Can a sandbox be built here? `bwrap` found on `path_var` and able to make the namespaces the
/// plan asks for (user namespaces allowed, not inside a container that forbids them). `Ok`: the
/// `bwrap` to use; `Err`: why not, with the fix in words.
/// On macOS: `sandbox-exec` ([`seatbelt`], untested).
pub fn probe(path_var: Option<&str>) -> Result<PathBuf, String> {
    if cfg!(target_os = "macos") {
        return seatbelt::probe(path_var);
    }
    let bwrap = crate::fsutil::find_on_path("bwrap", path_var)
        .ok_or_else(|| "bubblewrap (`bwrap`) is not installed; install it (Debian and Ubuntu: `apt install bubblewrap`), or set `sandbox: off` on the routine".to_string())?;
    let mut cmd = std::process::Command::new(&bwrap);
    cmd.args(["--die-with-parent", "--unshare-net", "--unshare-pid", "--unshare-ipc"]);
    if as_root() {
        cmd.args(["--cap-drop", "ALL"]);
    }
    cmd.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "true"]);
    let out = cmd.stdin(std::process::Stdio::null()).output().map_err(|e| format!("{} could not be started: {e}", bwrap.display()))?;
    if out.status.success() {
        return Ok(bwrap);
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(format!(
        "bubblewrap cannot make a sandbox here ({}): user namespaces may be turned off (`sysctl kernel.unprivileged_userns_clone=1`, or AppArmor's `kernel.apparmor_restrict_unprivileged_userns=0`), or this is a container that forbids them; or set `sandbox: off` on the routine",
        crate::words::first_line(said.trim(), 200)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_paths_are_laid_over_the_writable_folders_and_only_existing_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".netrc"), "machine x").unwrap();
        let run_dir = dir.path().join("run");
        std::fs::create_dir_all(run_dir.join("sandbox")).unwrap();
        let plan = Plan {
            writable: vec![home.join("work/deep"), home.clone(), run_dir.clone()],
            hidden: vec![home.join(".ssh"), home.join(".netrc"), home.join(".aws")],
            cwd: Some(home.clone()),
            ..Plan::default()
        };
        std::fs::create_dir_all(home.join("work/deep")).unwrap();
        let args = plan.bwrap_args(&run_dir, false).join(" ");
        let at = |needle: &str| args.find(needle).unwrap_or_else(|| panic!("{needle} not in {args}"));
        assert!(at(&format!("--bind {} {}", home.display(), home.display())) < at(&format!("--bind {0} {0}", home.join("work/deep").display())), "shallow first: {args}");
        assert!(at("--tmpfs /tmp") < at(&format!("--bind {0} {0}", run_dir.display())), "{args}");
        assert!(at(&format!("--perms 0000 --tmpfs {}", home.join(".ssh").display())) > at(&format!("--bind {0} {0}", home.display())), "hidden over writable: {args}");
        assert!(args.contains(&format!("--ro-bind {} {}", run_dir.join("sandbox/hidden").display(), home.join(".netrc").display())), "{args}");
        assert!(!args.contains(".aws"), "a path that does not exist is not named: {args}");
        assert!(!args.contains("--cap-drop"), "{args}");
        assert!(plan.bwrap_args(&run_dir, true).join(" ").contains("--cap-drop ALL"));
        assert!(args.ends_with(&format!("--chdir {}", home.display())), "{args}");
    }
}

#[cfg(test)]
mod probe_tests {
    use super::probe_cached;
    use std::os::unix::fs::PermissionsExt;

    /// A sandbox found to work is remembered with the `bwrap` it was found with: the same file is
    /// not tried again, a changed one is, and one that fails is forgotten.
    #[test]
    fn a_working_sandbox_is_remembered_until_its_bubblewrap_changes() {
        let dir = tempfile::tempdir().unwrap();
        let bwrap = dir.path().join("bwrap");
        let write = |code: u8| {
            std::fs::write(&bwrap, format!("#!/bin/sh\nexit {code}\n")).unwrap();
            std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        let path = dir.path().display().to_string();
        let cache = dir.path().join("sandbox-works");
        write(0);
        assert_eq!(probe_cached(&cache, Some(&path)), Ok(bwrap.clone()));
        assert!(cache.is_file());
        // The same size and time, another behaviour: not tried again.
        let when = std::fs::metadata(&bwrap).unwrap().modified().unwrap();
        write(1);
        std::fs::File::options().write(true).open(&bwrap).unwrap().set_modified(when).unwrap();
        assert_eq!(probe_cached(&cache, Some(&path)), Ok(bwrap.clone()));
        // A changed bwrap is tried again; one that fails is not remembered.
        std::fs::File::options().write(true).open(&bwrap).unwrap().set_modified(when + std::time::Duration::from_secs(1)).unwrap();
        assert!(probe_cached(&cache, Some(&path)).is_err());
        assert!(!cache.exists());
    }
}
