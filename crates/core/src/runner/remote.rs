//! A run's process on another machine, over the user's own OpenSSH: start, follow, cancel,
//! remove (the engine's side of a run on a host is `engine::remote_run`).
//!
//! * **The same wrapper as a local run** ([`super::process`]), started on the remote side in a
//!   per-run directory under the remote user's home (`~/.nightshift/runs/<run id>/`, laid out as a
//!   local run directory: `stdout.log`, `stderr.log`, `exit_code`). The session sshd starts is its
//!   own process group, so a timeout or cancel reaches everything the agent forked.
//! * **Autonomous once started**: the wrapper's stdin is `/dev/null`, so it keeps the wall-clock
//!   limit itself from the first second (a local run's wrapper does that only once its engine is
//!   gone); the start command returns at once, and no connection has to stay open for the run to
//!   go on — a dropped connection or a dead engine never ends it.
//! * **Secrets travel only over the channel**: the start command reads `NAME=value` lines from
//!   its stdin with the shell's `read` builtin and exports them — never in any argv (`ps`), never in
//!   a remote file.
//! * **Output comes home by following**: `tail -c +<next byte> --pid=<wrapper> -f` per log, run
//!   over SSH, appends to the local files from the last byte they have, and ends when the wrapper
//!   ends — so following again after a drop continues exactly where it stopped. (GNU `tail`; the
//!   remote side is expected to be Linux.)

use crate::run_dir::{EXIT_CODE_FILE, STDERR_LOG, STDOUT_LOG, TIMED_OUT_FILE};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// Where runs live on the remote side, under its `$HOME`.
pub(crate) const REMOTE_RUNS: &str = ".nightshift/runs";

/// How to reach a host: an alias or `user@host` from the user's `~/.ssh/config`, never a prompt.
#[derive(Debug, Clone)]
pub struct Target {
    pub host: String,
    /// An `ssh_config` to use instead of the user's (`-F`).
    pub config: Option<PathBuf>,
    /// Where connection-sharing sockets live (`ControlMaster`); `None`: a connection per command.
    pub control_dir: Option<PathBuf>,
    /// The SSH port when not the config's (`ssh://host:2222`).
    pub port: Option<u16>,
}

/// How long a shared connection stays open after its last use.
const CONTROL_PERSIST_SECS: u32 = 60;

impl Target {
    pub fn new(host: impl Into<String>) -> Target {
        Target { host: host.into(), config: None, control_dir: None, port: None }
    }

    /// How a home with `settings` and its data in `data_dir` reaches `host`: the user's ssh config
    /// (or `ssh_config`), sharing one connection per host under `data_dir/ssh` unless
    /// `reuse_ssh_connections = false`.
    pub fn of_home(host: &str, settings: &crate::settings::Settings, data_dir: &Path) -> Target {
        let control_dir = settings.reuse_ssh_connections.then(|| data_dir.join("ssh"));
        if let Some(dir) = &control_dir {
            // Sockets of the user's connections: only the user may reach them.
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
        }
        Target { host: host.to_string(), config: settings.ssh_config.clone(), control_dir, port: None }
    }

    /// `ssh … host -- <remote command>`: batch mode (a missing key is an error, not a password
    /// prompt nobody answers) and a connect timeout (an unreachable host fails in seconds).
    pub(crate) fn ssh(&self, remote: &str) -> tokio::process::Command {
        let mut c = self.client();
        c.arg("-T").arg(&self.host).arg("--").arg(remote);
        c.stdin(Stdio::null()).kill_on_drop(true);
        c
    }

    /// `ssh … -W 127.0.0.1:<port> host`: the client's stdin and stdout become one TCP connection
    /// to that port on the host's loopback (another home's `serve`), over the shared connection —
    /// nothing listens on either machine for it.
    pub fn stream_to_loopback(&self, port: u16) -> tokio::process::Command {
        let mut c = self.client();
        c.arg("-W").arg(format!("127.0.0.1:{port}")).arg(&self.host);
        c.kill_on_drop(true);
        c
    }

    /// The ssh client with this target's options: batch mode, a connect timeout, the config, the
    /// port, and the shared connection.
    fn client(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::new("ssh");
        if let Some(config) = &self.config {
            c.arg("-F").arg(config);
        }
        c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]);
        if let Some(port) = self.port {
            c.arg("-p").arg(port.to_string());
        }
        if let Some(dir) = &self.control_dir {
            // `%C`: a hash of the connection's ends, short enough for a socket path.
            c.args(["-o", "ControlMaster=auto", "-o", &format!("ControlPersist={CONTROL_PERSIST_SECS}")]);
            c.arg("-o").arg(format!("ControlPath={}/%C", dir.display()));
        }
        c
    }

    pub(crate) async fn output(&self, remote: &str) -> Result<String, Failure> {
        let out = self.ssh(remote).output().await.map_err(no_ssh)?;
        match out.status.success() {
            true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
            false => Err(Failure::of(&self.host, &out.stderr, out.status.code())),
        }
    }

    /// Whether the host answers (non-interactively) and has each of `programs` (those missing
    /// are returned).
    pub async fn check(&self, programs: &[&str]) -> Result<Vec<String>, Failure> {
        let script: String = programs.iter().map(|p| format!("command -v {} >/dev/null 2>&1 || echo {}\n", quote(p), quote(p))).collect();
        let said = self.output(&format!("sh -c {}", quote(&format!("{script}true")))).await?;
        Ok(said.lines().map(str::to_string).filter(|l| programs.contains(&l.as_str())).collect())
    }
}

/// Why a remote command failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// ssh could not reach the host or log in (its exit code 255): the host is unreachable.
    Unreachable(String),
    /// The host answered, and the program to run is not there (nothing was started).
    Missing(String),
    /// The host answered, and the command there failed.
    Refused(String),
}

impl Failure {
    pub(crate) fn of(host: &str, stderr: &[u8], code: Option<i32>) -> Failure {
        let words = said(host, stderr, code);
        match code {
            // 255: ssh's own failure; none: the client was killed — the connection is gone.
            Some(255) | None => Failure::Unreachable(words),
            _ => Failure::Refused(words),
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Failure::Unreachable(m) | Failure::Missing(m) | Failure::Refused(m) => m,
        }
    }
}

/// The ssh client itself could not be run.
pub(crate) fn no_ssh(e: std::io::Error) -> Failure {
    Failure::Unreachable(format!("could not run ssh ({e}); install OpenSSH's client (`ssh`)"))
}

/// ssh's own words for a failure, with the host named.
fn said(host: &str, stderr: &[u8], code: Option<i32>) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    match (text.is_empty(), code) {
        (false, _) => format!("{host}: {text}"),
        (true, Some(255)) => format!("{host}: ssh could not connect"),
        (true, None) => format!("{host}: the connection was cut (ssh was stopped)"),
        (true, code) => format!("{host}: the remote command failed (exit code {})", code.map_or("none".into(), |c| c.to_string())),
    }
}

/// What runs on the remote side.
#[derive(Debug, Clone)]
pub struct RemoteCommand {
    pub run_id: String,
    /// The program and its arguments, or `["sh", "-c", COMMAND]` for a shell command.
    pub argv: Vec<String>,
    /// Where it runs (remote path; `~` is the remote home); `None`: the remote home.
    pub cwd: Option<String>,
    /// The run's environment on top of what an SSH command gets there — all of it sent over the
    /// channel, so a token never rests anywhere.
    pub env: Vec<(String, String)>,
    pub timeout: Option<Duration>,
    pub kill_grace: Duration,
    /// The machine's sandbox there, when the run goes in one.
    pub sandbox: Option<Sandboxed>,
}

/// A run's sandbox on its host: the Nightshift helper there, its bubblewrap, and the plan
/// (its paths under `~`, completed there by the helper: [`super::sandbox::Plan::complete_here`]).
#[derive(Debug, Clone)]
pub struct Sandboxed {
    pub helper: String,
    pub bwrap: String,
    pub plan: String,
}

/// A started remote run: where its files are and which process group is it (kept with the run's
/// record, so the next engine can re-attach).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OnHost {
    /// The run's directory on the remote side (absolute).
    pub dir: String,
    /// The wrapper's pid (it lives exactly as long as the run) and its process group.
    pub pid: u32,
    pub pgid: u32,
    /// When its wall-clock limit runs out there (seconds since the epoch; 0: none).
    #[serde(default)]
    pub deadline: u64,
}

/// How a remote run ended, as its directory there tells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RemoteEnd {
    /// `None`: it ended without one (killed before the wrapper could write it).
    pub code: Option<i32>,
    /// The wrapper ended it at its limit.
    pub timed_out: bool,
}

/// What a start script prints when the program is missing there (exit code 127, as a shell's).
const MISSING: &str = "nightshift-missing";

/// `'text'` for a POSIX shell.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A remote path as a shell word: `~/x` stays relative to the remote home.
fn remote_path(path: &str) -> String {
    match path.strip_prefix("~/") {
        Some(rest) => format!("\"$HOME\"/{}", quote(rest)),
        None if path == "~" => "\"$HOME\"".into(),
        None => quote(path),
    }
}

/// Start `cmd` on `target` and return once it runs there (the run itself goes on alone).
pub async fn start(target: &Target, cmd: &RemoteCommand) -> Result<OnHost, Failure> {
    use super::process::whole_secs;
    let timeout = cmd.timeout.map(whole_secs).unwrap_or(0);
    let program = cmd.argv.first().map(|p| quote(p)).unwrap_or_default();
    let argv: Vec<String> = cmd.argv.iter().map(|a| quote(a)).collect();
    let cwd = cmd.cwd.as_deref().map(remote_path).unwrap_or_else(|| "\"$HOME\"".into());
    // In the machine's sandbox: its plan and its hidden file in the run's folder, and the helper
    // (outside: the proxy, then bubblewrap) starting the program.
    let (sandbox_files, sandboxed) = match &cmd.sandbox {
        Some(s) => (
            format!(
                "mkdir -p \"$d/{own}\"; printf '%s' {plan} > \"$d/{own}/{plan_file}\"; : > \"$d/{own}/{hidden}\"; chmod 000 \"$d/{own}/{hidden}\"\n",
                own = crate::run_dir::SANDBOX_DIR,
                plan = quote(&s.plan),
                plan_file = crate::run_dir::SANDBOX_PLAN_FILE,
                hidden = super::sandbox::HIDDEN_FILE,
            ),
            format!("{} {} {} \"$d\" -- ", quote(&s.helper), super::sandbox::helper::RUN_ARG, quote(&s.bwrap)),
        ),
        None => (String::new(), String::new()),
    };
    // The environment first (read, exported, never echoed); the program looked up (a missing one
    // is a clear refusal, not a run that fails at once); then the run directory, the wrapper
    // started in the background with stdin from /dev/null (it keeps the limit itself), its pid
    // reported. `$$` of `sh -c` here is the session's process group leader sshd made, or in its group.
    let script = format!(
        "set -e\n\
         while IFS= read -r kv && [ -n \"$kv\" ]; do export \"$kv\"; done\n\
         command -v {program} >/dev/null 2>&1 || {{ echo {MISSING}; exit 127; }}\n\
         d=\"$HOME/{REMOTE_RUNS}/\"{id}\n\
         mkdir -p \"$d\"\n\
         {sandbox_files}\
         export NIGHTSHIFT_RUN_DIR=\"$d\"\n\
         cd {cwd}\n\
         : > \"$d/{out}\"; : > \"$d/{err}\"; printf '%s' {room} > \"$d/{exit}\"\n\
         now=$(date +%s)\n\
         sh -c {wrapper} nightshift-run \"$d/{exit}\" {timeout} $((now + {timeout})) {grace} '' {sandboxed}{argv} </dev/null >\"$d/{out}\" 2>\"$d/{err}\" &\n\
         w=$!\n\
         g=$(ps -o pgid= -p \"$w\" 2>/dev/null | tr -d ' ') || true\n\
         [ -n \"$g\" ] || g=$(cut -d' ' -f5 /proc/$w/stat)\n\
         printf '%s %s %s\\n' \"$d\" \"$w\" \"$g\"\n",
        id = quote(&cmd.run_id),
        out = STDOUT_LOG,
        err = STDERR_LOG,
        exit = EXIT_CODE_FILE,
        room = quote(super::process::EXIT_CODE_ROOM),
        wrapper = quote(super::process::WRAPPER),
        grace = whole_secs(cmd.kill_grace).max(1),
        argv = argv.join(" "),
    );
    let mut env = String::new();
    for (k, v) in &cmd.env {
        // A line break would end the value early and run the rest as another variable: refused.
        if v.contains('\n') || k.contains(['\n', '=']) || k.is_empty() {
            return Err(Failure::Refused(format!("the variable {k} cannot be sent to {}: it holds a line break", target.host)));
        }
        env.push_str(&format!("{k}={v}\n"));
    }
    env.push('\n');
    let mut child = target.ssh(&format!("sh -c {}", quote(&script))).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(no_ssh)?;
    if let Some(mut stdin) = child.stdin.take() {
        // A host that never answers closes the pipe: what ssh says then is the error below.
        let _ = stdin.write_all(env.as_bytes()).await;
    }
    let out = child.wait_with_output().await.map_err(no_ssh)?;
    let said_out = String::from_utf8_lossy(&out.stdout);
    if out.status.code() == Some(127) && said_out.lines().any(|l| l == MISSING) {
        let name = cmd.argv.first().map(String::as_str).unwrap_or_default();
        return Err(Failure::Missing(format!("`{name}` was not found on {}'s PATH for SSH commands", target.host)));
    }
    if !out.status.success() {
        return Err(Failure::of(&target.host, &out.stderr, out.status.code()));
    }
    // The last line: a login shell's startup files may print before the script runs.
    let line = said_out.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let mut parts = line.split_whitespace();
    let deadline = match timeout {
        0 => 0,
        t => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) + t,
    };
    match (parts.next(), parts.next().and_then(|p| p.parse().ok()), parts.next().and_then(|g| g.parse().ok())) {
        (Some(dir), Some(pid), Some(pgid)) => Ok(OnHost { dir: dir.to_string(), pid, pgid, deadline }),
        _ => Err(Failure::Refused(format!("{}: the run started but did not say where (got {:?})", target.host, line.trim()))),
    }
}

/// Bring the run's output home: append what the remote logs have past the local files' ends,
/// following until the run ends there; then how it ended. Call again after a drop: it continues
/// from the last byte the local files have.
pub async fn follow(target: &Target, run: &OnHost, local_stdout: &Path, local_stderr: &Path) -> Result<RemoteEnd, Failure> {
    let (a, b) = tokio::join!(follow_one(target, run, STDOUT_LOG, local_stdout), follow_one(target, run, STDERR_LOG, local_stderr));
    a?;
    b?;
    let d = quote(&run.dir);
    let said = target.output(&format!("cat {d}/{EXIT_CODE_FILE}; echo; [ ! -e {d}/{TIMED_OUT_FILE} ] || echo {TIMED_OUT_FILE}")).await?;
    Ok(RemoteEnd { code: said.lines().next().and_then(|l| l.trim().parse().ok()), timed_out: said.lines().any(|l| l == TIMED_OUT_FILE) })
}

async fn follow_one(target: &Target, run: &OnHost, name: &str, local: &Path) -> Result<(), Failure> {
    use std::io::Write;
    use tokio::io::AsyncReadExt;
    let have = std::fs::metadata(local).map(|m| m.len()).unwrap_or(0);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(local)
        .map_err(|e| Failure::Refused(format!("could not write {}: {e}", local.display())))?;
    // `--pid`: tail ends once the wrapper is gone, after a last read.
    let remote = format!("tail -c +{} --pid={} -f {}/{name}", have + 1, run.pid, quote(&run.dir));
    // The bytes pass through this process (not ssh writing the file itself): should this process
    // die, its ssh gets a broken pipe and stops, so a stray follower can never append to the log
    // while the next engine follows it from where it ends.
    let mut child = target.ssh(&remote).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(no_ssh)?;
    let mut stdout = child.stdout.take().ok_or_else(|| Failure::Refused("ssh gave no output pipe".into()))?;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = stdout.read(&mut buf).await.map_err(|e| Failure::Unreachable(format!("{}: reading the run's output failed: {e}", target.host)))?;
        if n == 0 {
            break;
        }
        file.write_all(&buf[..n]).map_err(|e| Failure::Refused(format!("could not write {}: {e}", local.display())))?;
    }
    let status = child.wait_with_output().await.map_err(no_ssh)?;
    match status.status.success() {
        true => Ok(()),
        false => Err(Failure::of(&target.host, &status.stderr, status.status.code())),
    }
}

/// A file of the run's folder there (`rel`, under it), or `None` when it has none.
pub async fn read_file(target: &Target, run: &OnHost, rel: &str) -> Result<Option<Vec<u8>>, Failure> {
    let path = format!("{}/{rel}", run.dir);
    let said = target.output(&format!("[ -f {p} ] && {{ echo present; cat {p}; }} || echo absent", p = quote(&path))).await?;
    Ok(said.strip_prefix("present\n").map(|text| text.as_bytes().to_vec()))
}

/// End the run on the remote side: SIGTERM to its process group, SIGKILL after the grace.
pub async fn cancel(target: &Target, run: &OnHost, grace: Duration) -> Result<(), Failure> {
    let g = run.pgid;
    let script = format!(
        "kill -TERM -{g} 2>/dev/null || exit 0\n\
         n=0; while kill -0 -{g} 2>/dev/null && [ $n -lt {grace} ]; do sleep 1; n=$((n + 1)); done\n\
         kill -KILL -{g} 2>/dev/null; exit 0\n",
        grace = grace.as_secs().max(1)
    );
    target.output(&format!("sh -c {}", quote(&script))).await.map(|_| ())
}

/// Remove the run's remote directory (once its output is home and it is settled).
pub async fn remove(target: &Target, run: &OnHost) -> Result<(), Failure> {
    // Only ever a directory under the runs folder: never an arbitrary path from a record.
    if !run.dir.contains(&format!("/{REMOTE_RUNS}/")) {
        return Err(Failure::Refused(format!("refusing to remove {} on {}: not a run directory", run.dir, target.host)));
    }
    target.output(&format!("rm -rf -- {}", quote(&run.dir))).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_the_remote_shell() {
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(remote_path("~/src/my repo"), "\"$HOME\"/'src/my repo'");
        assert_eq!(remote_path("/srv/x"), "'/srv/x'");
    }

    fn target(server: &nightshift_testkit::SshServer) -> Target {
        Target { host: nightshift_testkit::SshServer::ALIAS.into(), config: Some(server.ssh_config()), control_dir: None, port: None }
    }

    /// Where a run's output comes home (kept while the first value lives).
    fn local_logs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let local = tempfile::tempdir().unwrap();
        let (out, err) = (local.path().join("stdout.log"), local.path().join("stderr.log"));
        (local, out, err)
    }

    fn command(id: &str, script: &str, timeout: Option<Duration>) -> RemoteCommand {
        RemoteCommand { run_id: id.into(), argv: vec!["sh".into(), "-c".into(), script.into()], cwd: None, env: Vec::new(), timeout, kill_grace: Duration::from_secs(1), sandbox: None }
    }

    fn pgroup_alive(pgid: u32) -> bool {
        // SAFETY: signal 0 only checks that the group exists.
        unsafe { libc::kill(-(pgid as i32), 0) == 0 }
    }

    #[tokio::test]
    async fn a_run_goes_there_its_output_comes_home_and_the_token_rests_nowhere() {
        let Some(server) = nightshift_testkit::SshServer::start() else { return };
        let t = target(&server);
        let (_local, out, err) = local_logs();
        let token = "sk-ant-oat01-remote-token-never-in-argv";
        let mut cmd = command("r1", "echo out; echo err >&2; printf '%s' \"$TOKEN\" | wc -c; sleep 1; pwd; exit 3", None);
        cmd.env = vec![("TOKEN".into(), token.into())];
        cmd.cwd = Some("~".into());
        let run = start(&t, &cmd).await.unwrap();
        assert!(run.dir.starts_with(&server.remote_home().display().to_string()), "{run:?}");
        assert!(nightshift_testkit::processes_holding(token).is_empty(), "the token is in a process's argv: {:?}", nightshift_testkit::processes_holding(token));
        assert_eq!(follow(&t, &run, &out, &err).await.unwrap(), RemoteEnd { code: Some(3), timed_out: false });
        let said = std::fs::read_to_string(&out).unwrap();
        assert_eq!(said, format!("out\n{}\n{}\n", token.len(), server.remote_home().display()), "the token reached the run's environment");
        assert_eq!(std::fs::read_to_string(&err).unwrap(), "err\n");
        let rest = std::process::Command::new("grep").args(["-r", "-l", token]).arg(server.remote_home()).output().unwrap();
        assert!(rest.stdout.is_empty(), "the token rests in a remote file: {}", String::from_utf8_lossy(&rest.stdout));
        remove(&t, &run).await.unwrap();
        assert!(!std::path::Path::new(&run.dir).exists(), "the remote run directory is removed");
    }

    #[tokio::test]
    async fn the_remote_side_keeps_the_limit_and_cancel_ends_the_whole_group() {
        let Some(server) = nightshift_testkit::SshServer::start() else { return };
        let t = target(&server);
        let (_local, out, err) = local_logs();
        // Nobody follows this one: the wrapper ends it at its limit by itself.
        let run = start(&t, &command("slow", "sleep 30 & sleep 30; wait", Some(Duration::from_secs(1)))).await.unwrap();
        let end = tokio::time::timeout(Duration::from_secs(15), follow(&t, &run, &out, &err)).await.expect("ended at its limit").unwrap();
        // The wrapper's SIGKILL to the group after the grace may take the wrapper itself before it
        // writes a code: the timeout is told by the marker, never by the code.
        assert!(end.timed_out, "{end:?}");
        assert_ne!(end.code, Some(0), "a run ended at its limit is not a success");
        nightshift_testkit::wait_until_async("the group to be gone", Duration::from_secs(5), || !pgroup_alive(run.pgid)).await;

        let run = start(&t, &command("cancelled", "sleep 30 & sleep 30; wait", None)).await.unwrap();
        assert!(pgroup_alive(run.pgid));
        cancel(&t, &run, Duration::from_secs(1)).await.unwrap();
        let end = tokio::time::timeout(Duration::from_secs(10), follow(&t, &run, &out, &err)).await.expect("ended by cancel").unwrap();
        assert!(!end.timed_out && end.code != Some(0), "{end:?}");
        nightshift_testkit::wait_until_async("the cancelled group to be gone", Duration::from_secs(5), || !pgroup_alive(run.pgid)).await;
    }

    #[tokio::test]
    async fn a_dropped_connection_loses_nothing_and_following_again_continues_where_it_stopped() {
        let Some(mut server) = nightshift_testkit::SshServer::start() else { return };
        let t = target(&server);
        let (_local, out, err) = local_logs();
        let run = start(&t, &command("long", "i=0; while [ $i -lt 30 ]; do echo line $i; i=$((i + 1)); sleep 0.1; done", None)).await.unwrap();
        // Follow for a while, then the server goes away under the follower (every session cut).
        let following = tokio::spawn({
            let (t, run, out, err) = (t.clone(), run.clone(), out.clone(), err.clone());
            async move { follow(&t, &run, &out, &err).await }
        });
        nightshift_testkit::wait_until_async("some output home", Duration::from_secs(10), || std::fs::metadata(&out).is_ok_and(|m| m.len() > 0)).await;
        server.stop();
        assert!(following.await.unwrap().is_err(), "the follower notices the drop");
        assert!(pgroup_alive(run.pgid) || std::fs::read_to_string(std::path::Path::new(&run.dir).join("exit_code")).unwrap().trim() == "0", "the run went on without a connection");
        server.resume();
        assert_eq!(follow(&t, &run, &out, &err).await.unwrap().code, Some(0));
        let want: String = (0..30).map(|i| format!("line {i}\n")).collect();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), want, "every line once, in order");
    }

    #[tokio::test]
    async fn an_unreachable_host_fails_in_words_without_a_prompt() {
        let Some(mut server) = nightshift_testkit::SshServer::start() else { return };
        server.stop();
        let err = start(&target(&server), &command("never", "true", None)).await.unwrap_err();
        assert!(matches!(&err, Failure::Unreachable(m) if m.starts_with("box: ") && m.contains("Connection refused")), "{err:?}");
    }

    #[tokio::test]
    async fn a_missing_program_is_refused_before_anything_runs_and_check_names_it() {
        let Some(server) = nightshift_testkit::SshServer::start() else { return };
        let mut cmd = command("missing", "", None);
        cmd.argv = vec!["no-such-agent-here".into(), "-p".into()];
        let err = start(&target(&server), &cmd).await.unwrap_err();
        assert_eq!(err, Failure::Missing("`no-such-agent-here` was not found on box's PATH for SSH commands".into()));
        assert!(!server.remote_home().join(".nightshift/runs/missing").exists(), "nothing was set up for it");
        assert_eq!(target(&server).check(&["sh", "no-such-agent-here"]).await.unwrap(), vec!["no-such-agent-here".to_string()]);
    }

    #[tokio::test]
    async fn a_shared_connection_carries_start_follow_and_removal() {
        let Some(server) = nightshift_testkit::SshServer::start() else { return };
        let control = tempfile::Builder::new().prefix("ns-ssh").tempdir_in("/tmp").unwrap();
        let t = Target { control_dir: Some(control.path().to_path_buf()), ..target(&server) };
        let (_local, out, err) = local_logs();
        let run = start(&t, &command("shared", "echo shared", None)).await.unwrap();
        assert_eq!(follow(&t, &run, &out, &err).await.unwrap().code, Some(0));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "shared\n");
        assert_eq!(std::fs::read_dir(control.path()).unwrap().count(), 1, "one master connection's socket");
        remove(&t, &run).await.unwrap();
        // The master ends with the test (it would after a minute idle).
        let _ = std::process::Command::new("ssh").arg("-F").arg(server.ssh_config()).arg("-o").arg(format!("ControlPath={}/%C", control.path().display())).args(["-O", "exit", "box"]).output();
    }

    #[test]
    fn failures_name_the_host() {
        assert_eq!(said("box", b"ssh: connect to host 127.0.0.1 port 1: Connection refused\n", Some(255)), "box: ssh: connect to host 127.0.0.1 port 1: Connection refused");
        assert_eq!(said("box", b"", Some(255)), "box: ssh could not connect");
    }
}
