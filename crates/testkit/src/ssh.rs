//! A real OpenSSH server on loopback, for tests of what Nightshift does over SSH: Debian's `sshd`
//! started by the test with a generated host key and user key, a private `ssh_config` with one
//! host alias (so the real `ssh` client is used exactly as a user's own config would have it), and
//! a separate "remote" home directory the sessions land in. Stop and start it again to make the
//! host unreachable and reachable; drop it to kill it.
//!
//! sshd must run as root to accept logins (CI runs as root); elsewhere a test gets a loud failure,
//! or `None` with `NIGHTSHIFT_SKIP_ROOT_TESTS=1`. `scripts/test.sh` installs `openssh-server`; on a
//! machine without it, `NIGHTSHIFT_SKIP_SSH=1` skips these tests (else they fail saying so).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const SSHD: &str = "/usr/sbin/sshd";

pub struct SshServer {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl SshServer {
    /// Generate keys and configs and start sshd. `None` only when not root and the developer chose
    /// to skip root tests.
    pub fn start() -> Option<SshServer> {
        if std::env::var("NIGHTSHIFT_SKIP_SSH").as_deref() == Ok("1") {
            eprintln!("skipping: NIGHTSHIFT_SKIP_SSH=1 (this test starts a real sshd)");
            return None;
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            if std::env::var("NIGHTSHIFT_SKIP_ROOT_TESTS").as_deref() == Ok("1") {
                eprintln!("skipping: sshd accepts logins only when started as root, and NIGHTSHIFT_SKIP_ROOT_TESTS=1");
                return None;
            }
            panic!("this test starts sshd, which needs root (CI runs as root); set NIGHTSHIFT_SKIP_ROOT_TESTS=1 to skip it");
        }
        assert!(Path::new(SSHD).exists(), "{SSHD} is missing: install openssh-server (scripts/test.sh does), or set NIGHTSHIFT_SKIP_SSH=1 to skip the SSH tests");
        let dir = tempfile::tempdir().expect("temp dir");
        let d = dir.path();
        for key in ["host_key", "user_key"] {
            let ok = Command::new("ssh-keygen").args(["-q", "-N", "", "-t", "ed25519", "-f"]).arg(d.join(key)).status().expect("run ssh-keygen");
            assert!(ok.success(), "ssh-keygen failed");
        }
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).expect("authorized_keys");
        std::fs::create_dir_all(d.join("remote-home")).expect("remote home");
        // sshd's privilege separation directory.
        std::fs::create_dir_all("/run/sshd").expect("/run/sshd");
        let port = free_port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "ListenAddress 127.0.0.1:{port}\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 PidFile {d}/sshd.pid\nSetEnv HOME={d}/remote-home\nPermitUserEnvironment no\n",
                d = d.display()
            ),
        )
        .expect("sshd_config");
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {d}/user_key\n  IdentitiesOnly yes\n\
                 \x20 UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking accept-new\n  BatchMode yes\n  ConnectTimeout 5\n  LogLevel ERROR\n",
                alias = Self::ALIAS,
                d = d.display()
            ),
        )
        .expect("ssh_config");
        let mut server = SshServer { dir, port, child: None };
        server.resume();
        Some(server)
    }

    /// The host alias of the private `ssh_config`.
    pub const ALIAS: &'static str = "box";

    /// The client config to pass with `ssh -F`.
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// Where sessions land (`$HOME` of the remote side).
    pub fn remote_home(&self) -> PathBuf {
        self.dir.path().join("remote-home")
    }

    /// `ssh -F <config> box <command>`: the real client, as a user's config would run it.
    pub fn ssh(&self, command: &str) -> Command {
        let mut c = Command::new("ssh");
        c.arg("-F").arg(self.ssh_config()).arg(Self::ALIAS).arg(command);
        c
    }

    /// Stop the server (the host becomes unreachable; sessions already open are cut).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Start it again on the same port with the same keys (after [`SshServer::stop`]).
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "sshd is already running");
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.path().join("sshd.log")).expect("sshd.log");
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(self.dir.path().join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        self.child = Some(child);
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        let up = crate::waited(Duration::from_secs(10), || std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok());
        assert!(up, "sshd did not listen on {addr}:\n{}", self.log());
    }

    /// Give every later SSH command `PATH=<path>` on the remote side (restarts sshd): a host
    /// whose commands find only what that folder holds.
    pub fn set_remote_path(&mut self, path: &Path) {
        let config = self.dir.path().join("sshd_config");
        let text = std::fs::read_to_string(&config).expect("sshd_config");
        let text = text.replace("SetEnv HOME=", &format!("SetEnv PATH={} HOME=", path.display()));
        std::fs::write(&config, text).expect("sshd_config");
        self.stop();
        self.resume();
    }

    /// What sshd logged (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for SshServer {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(c: &mut Command) -> (bool, String, String) {
        let out = c.output().expect("run ssh");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    #[test]
    fn the_alias_reaches_a_separate_home_and_a_stopped_server_is_unreachable_without_a_prompt() {
        let Some(mut server) = SshServer::start() else { return };
        let (ok, out, err) = run(&mut server.ssh("cd && pwd"));
        assert!(ok, "{err}\n{}", server.log());
        assert_eq!(out.trim(), server.remote_home().display().to_string());
        // Stopped: the real client fails at once in batch mode (no password prompt, no hang).
        server.stop();
        let (ok, _, err) = run(server.ssh("true").stdin(Stdio::null()));
        assert!(!ok);
        assert!(err.contains("Connection refused"), "{err}");
        server.resume();
        let (ok, out, err) = run(&mut server.ssh("echo back"));
        assert!(ok && out.trim() == "back", "{err}");
    }
}
