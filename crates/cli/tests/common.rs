//! Running the real `nightshiftctl` binary against a throwaway home.
#![allow(dead_code)]

use nightshift_testkit::TestHome;
use std::process::{Child, Output, Stdio};
use std::time::Duration;

pub fn ctl(th: &TestHome) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_nightshiftctl"));
    cmd.env_clear()
        .env("NIGHTSHIFT_HOME", th.path())
        .env("HOME", th.user_home())
        .env("PATH", path_with(th))
        .env("LANG", "C.UTF-8")
        .current_dir(th.path());
    cmd
}

pub fn tokio_ctl(th: &TestHome) -> tokio::process::Command {
    tokio::process::Command::from(ctl(th))
}

/// The test home's bin dir, the real agent CLIs (if installed), then the system.
pub fn path_with(th: &TestHome) -> String {
    let real = nightshift_testkit::home::workspace_root().join("tests/agents-cli/node_modules/.bin");
    format!("{}:{}:/usr/local/bin:/usr/bin:/bin", th.bin_dir().display(), real.display())
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(o), stderr(o)))
}

/// A running daemon whose output goes to a file (read when it stops, or when a test fails).
pub struct Daemon {
    pub child: Child,
    log: std::path::PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // Never leave a daemon behind, even when the test fails.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start_daemon(th: &TestHome) -> Daemon {
    start_daemon_with(th, &[], &[])
}

/// A daemon with extra arguments (`--notify`) and environment.
pub fn start_daemon_with(th: &TestHome, args: &[&str], env: &[(&str, &str)]) -> Daemon {
    let log = th.path().join(format!("daemon-{}.log", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()));
    let out = std::fs::File::create(&log).unwrap();
    let err = out.try_clone().unwrap();
    let child = ctl(th).arg("daemon").args(args).envs(env.iter().copied()).stdout(Stdio::from(out)).stderr(Stdio::from(err)).spawn().unwrap();
    Daemon { child, log }
}

impl Daemon {
    /// Kill it with SIGKILL (no chance to clean up) and reap it.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Wait until it holds the home's scheduler (its banner, printed once it has the lock).
    pub fn wait_scheduling(&self) {
        let up = nightshift_testkit::waited(Duration::from_secs(30), || self.output().contains("nightshift daemon: scheduling"));
        assert!(up, "the daemon did not start scheduling within 30 s; it said:\n{}", self.output());
    }
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

pub fn stop(mut d: Daemon) -> (i32, String) {
    unsafe { libc::kill(d.child.id() as i32, libc::SIGTERM) };
    let mut status = None;
    nightshift_testkit::wait_until("the daemon to stop on SIGTERM", Duration::from_secs(10), || {
        status = d.child.try_wait().unwrap();
        status.is_some()
    });
    (status.and_then(|s| s.code()).unwrap_or(-1), d.output())
}

pub fn runs(th: &TestHome) -> Vec<serde_json::Value> {
    json(&ctl(th).args(["runs", "--json", "--limit", "1000"]).output().unwrap()).as_array().unwrap().clone()
}


/// `nightshiftctl run ROUTINE --wait --json` (no `error:` line allowed): the record and exit code.
pub async fn run_wait(th: &TestHome, routine: &str) -> (serde_json::Value, i32) {
    let out = tokio_ctl(th).args(["run", routine, "--wait", "--json"]).output().await.unwrap();
    assert!(!stderr(&out).contains("error:"), "{}", stderr(&out));
    (json(&out), out.status.code().unwrap_or(-1))
}

/// With NIGHTSHIFT_RECORD_FIXTURES=1, keep a run's streams as fixture `name` in
/// `crates/core/tests/fixtures/<dir>/` (how the recorded agent streams there were made).
pub fn record_fixture(rec: &serde_json::Value, dir: &str, name: &str) {
    if std::env::var("NIGHTSHIFT_RECORD_FIXTURES").as_deref() != Ok("1") {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/fixtures").join(dir);
    let run_dir = std::path::Path::new(rec["run_dir"].as_str().unwrap());
    std::fs::copy(run_dir.join("stdout.log"), dir.join(format!("{name}.jsonl"))).unwrap();
    std::fs::copy(run_dir.join("stderr.log"), dir.join(format!("{name}.stderr"))).unwrap();
    std::fs::write(dir.join(format!("{name}.exit")), format!("{}\n", rec["exit_code"])).unwrap();
    // What an agent writes beside its streams (Copilot's usage file), when it wrote it.
    for extra in ["copilot-usage.json"] {
        if run_dir.join(extra).is_file() {
            std::fs::copy(run_dir.join(extra), dir.join(format!("{name}.{extra}"))).unwrap();
        }
    }
}

/// Tests that need the real keychain fail loudly without one, unless skipped on purpose.
pub fn keychain_available() -> bool {
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some() {
        return true;
    }
    if std::env::var("NIGHTSHIFT_SKIP_KEYCHAIN").as_deref() == Ok("1") {
        eprintln!("skipping: no D-Bus session and NIGHTSHIFT_SKIP_KEYCHAIN=1");
        return false;
    }
    panic!("no D-Bus session bus: run the suite through scripts/test.sh (it starts one with gnome-keyring), or set NIGHTSHIFT_SKIP_KEYCHAIN=1");
}

/// A home whose keychain service is unique to this test; accounts are `email` (Claude) or
/// `agent:email`.
pub fn home_with_accounts(accounts: &[&str]) -> (TestHome, String) {
    let th = TestHome::new();
    let service = format!("nightshift-test-{}", th.path().file_name().unwrap().to_string_lossy());
    let mut toml = format!("keychain_service = \"{service}\"\nkill_grace_secs = 1\n");
    for a in accounts {
        let (agent, email) = a.split_once(':').unwrap_or(("claude", a));
        toml += &format!("[[accounts]]\nagent = \"{agent}\"\nemail = \"{email}\"\n");
    }
    std::fs::write(th.path().join("nightshift.toml"), toml).unwrap();
    (th, service)
}

/// The test's D-Bus session (its keychain) as variables, for a command built another way.
pub fn bus_env() -> Vec<(&'static str, String)> {
    ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "XDG_DATA_HOME"].into_iter().filter_map(|v| std::env::var(v).ok().map(|x| (v, x))).collect()
}

/// `nightshiftctl` on the test's D-Bus session (its keychain).
pub fn ctl_bus(th: &TestHome) -> std::process::Command {
    let mut c = ctl(th);
    c.envs(bus_env());
    c
}

/// Watches every process's command line for a secret until [`ArgvWatch::seen`]: a secret passed as
/// an argument would be readable by every user of the machine (`/proc/*/cmdline`).
pub struct ArgvWatch {
    watching: std::sync::Arc<std::sync::atomic::AtomicBool>,
    seen: std::thread::JoinHandle<bool>,
}

impl ArgvWatch {
    pub fn start(secret: &str) -> ArgvWatch {
        let watching = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let (still, secret) = (std::sync::Arc::clone(&watching), secret.as_bytes().to_vec());
        let seen = std::thread::spawn(move || {
            let mut seen = false;
            while still.load(std::sync::atomic::Ordering::Relaxed) {
                for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                    seen |= std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c.windows(secret.len()).any(|w| w == secret.as_slice()));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            seen
        });
        ArgvWatch { watching, seen }
    }

    /// Stop watching: whether any process's command line held the secret meanwhile.
    pub fn seen(self) -> bool {
        self.watching.store(false, std::sync::atomic::Ordering::Relaxed);
        self.seen.join().unwrap()
    }
}

/// `nightshiftctl accounts set-token EMAIL`, the token typed on stdin.
pub fn set_token(th: &TestHome, email: &str, token: &str) -> Output {
    use std::io::Write;
    let mut child = ctl_bus(th).args(["accounts", "set-token", email]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(format!("{token}\n").as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// Every file under `dir`, depth first.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files
}

/// Every file under `dir` (the whole home: database, logs, reports, account dirs) holding `needle`.
pub fn files_containing(dir: &std::path::Path, needle: &str) -> Vec<String> {
    files_under(dir)
        .into_iter()
        .filter(|p| std::fs::read(p).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes())))
        .map(|p| p.display().to_string())
        .collect()
}

/// Give `routines/<name>.yaml` an `allow.dirs` of a fresh folder (`shared-docs` in the test's
/// directory); returns the folder.
pub fn allow_a_folder(th: &TestHome, name: &str) -> std::path::PathBuf {
    let docs = th.path().join("shared-docs");
    std::fs::create_dir_all(&docs).unwrap();
    let file = th.path().join(format!("routines/{name}.yaml"));
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}allow: {{dirs: [{}]}}\n", docs.display())).unwrap();
    docs
}

/// A running `nightshiftctl serve` of a test home (on the test's session bus: its keychain holds
/// the tokens of the homes it lists), killed when dropped.
pub struct Served {
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub port: u16,
    pub token: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve --addr ADDR EXTRA…` on `th`, once it has printed its URL with the token.
pub fn serve(th: &TestHome, addr: &str, extra: &[&str]) -> Served {
    use std::io::BufRead;
    let mut child = ctl_bus(th).args(["serve", "--addr", addr]).args(extra).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("no URL in {line:?}")).to_string();
    let (base, token) = url.split_once("/?token=").unwrap();
    let addr = base.trim_start_matches("http://").to_string();
    let port = addr.rsplit(':').next().unwrap().parse().unwrap();
    Served { child, base: base.to_string(), addr, port, token: token.to_string() }
}

/// The run went in the machine's sandbox (its plan is in its folder) and the sandbox refused
/// nothing its agent tried to reach: the agent's own needs are in its file (`sandbox_needs`).
pub fn assert_sandboxed(rec: &serde_json::Value) {
    let dir = std::path::Path::new(rec["run_dir"].as_str().expect("run_dir"));
    assert!(dir.join("sandbox/plan.json").is_file(), "not sandboxed: {rec:#}");
    let refused: Vec<&serde_json::Value> = rec["denials"].as_array().into_iter().flatten().filter(|d| d["tool"] == "Network").collect();
    assert!(refused.is_empty(), "the sandbox refused what the agent needed: {refused:?}");
}

/// A run whose first try ran one command (`counter` got one line) and then lost the API was
/// continued by its second try — the agent's own session resumed, not the task started again:
/// completed, the command ran once, the first try's `work` and session, the second try's
/// `resumed`, and `show` saying so. Returns the session.
pub fn assert_resumed_once(th: &TestHome, rec: &serde_json::Value, counter: &std::path::Path) -> String {
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert_eq!(std::fs::read_to_string(counter).unwrap_or_default(), "ran\n", "the command ran once: {rec:#}");
    let attempts = rec["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{rec:#}");
    let session = attempts[0]["session"].as_str().expect("the first try's session").to_string();
    assert_eq!((attempts[0]["reason"].as_str(), attempts[0]["work"].as_u64()), (Some("api_unavailable"), Some(1)), "{rec:#}");
    assert_eq!(attempts[1]["resumed"].as_str(), Some(session.as_str()), "{rec:#}");
    let shown = stdout(&ctl(th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.contains(&format!("resumed session {session}")), "{shown}");
    session
}

/// The words a resumed session is given instead of the task (`engine::run::attempt`).
pub const RESUME_WORDS: &str = "check what was already done";

/// A folder no run's sandbox may write, for a test's "write outside" (the test homes are under
/// `/tmp`, which a sandboxed run sees as its own empty `/tmp`: a write there would land in it,
/// unseen, instead of being refused).
pub fn outside_dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("nightshift-outside-").tempdir_in("/var/tmp").expect("a folder under /var/tmp")
}

/// A completed run whose write of `outside` (in [`outside_dir`]) the sandbox refused: nothing
/// written, and the refusal one of its denials, a call of `tool` naming the file.
pub fn assert_write_refused(rec: &serde_json::Value, outside: &std::path::Path, tool: &str) {
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert!(!outside.exists(), "the write went through: {rec:#}");
    let named = outside.file_name().unwrap().to_string_lossy();
    let denials = rec["denials"].as_array().expect("denials");
    assert!(denials.iter().any(|d| d["tool"] == tool && d["input"].as_str().unwrap_or_default().contains(&*named)), "{rec:#}");
}

/// A loopback server that counts the connections that reached it (what a sandbox must refuse).
pub fn counting_server() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&seen);
    std::thread::spawn(move || {
        for mut c in listener.incoming().flatten() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
        }
    });
    (port, seen)
}

/// One raw HTTP request to `url` (`http://HOST:PORT/path?query`): (status, body).
pub fn http(method: &str, url: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    stream.write_all(format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").as_bytes()).unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

/// A free loopback port (bound, then let go for the daemon to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One HTTP/1.1 POST to the receiver on `port`; (status, body as JSON, or null).
pub fn post(port: u16, path: &str, headers: &[(&str, String)], body: &[u8]) -> (u16, serde_json::Value) {
    use std::io::{Read, Write};
    let mut s = None;
    nightshift_testkit::wait_until("the receiver to listen", Duration::from_secs(10), || {
        s = std::net::TcpStream::connect(("127.0.0.1", port)).ok();
        s.is_some()
    });
    let mut s = s.unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("POST {path} HTTP/1.1\r\nHost: hooks.example.net\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req += &format!("{k}: {v}\r\n");
    }
    req += "\r\n";
    s.write_all(req.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(serde_json::Value::Null))
}

/// A GitHub delivery of `event`, signed under `secret` as GitHub signs it, to the receiver on `port`.
pub fn github_delivery(port: u16, secret: &str, event: &str, delivery: &str, payload: &serde_json::Value) -> (u16, serde_json::Value) {
    let body = payload.to_string();
    let sig = format!("sha256={}", nightshift_core::incoming::signature::sign(secret, body.as_bytes()));
    post(port, "/hooks/github", &[("X-GitHub-Event", event.into()), ("X-GitHub-Delivery", delivery.into()), ("X-Hub-Signature-256", sig)], body.as_bytes())
}
