//! The two sandbox helpers a run's wrapper starts through the Nightshift binary that started the
//! run (like the log scrubber, [`crate::runner::scrub`]): `__sandbox-run` outside the sandbox (the
//! proxy, then bubblewrap) and `__sandbox-net` inside it (loopback ports to the proxy, then the
//! agent). Each exits with the agent's exit code, so the wrapper records the agent's.

use super::handover::{self, Purpose};
use super::{proxy, seatbelt, Plan, INSIDE_DIR, SOCKET};
use crate::run_dir::RunDir;
use std::ffi::OsString;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// `<exe> __sandbox-run <bwrap> <run dir> -- <program> <args…>`.
pub const RUN_ARG: &str = "__sandbox-run";
/// `<exe> __sandbox-net <socket> <port,port…> -- <program> <args…>` (inside).
pub const NET_ARG: &str = "__sandbox-net";
/// `<exe> __sandbox-probe`: whether a sandbox can be built on this machine — `ok <bwrap>`, or
/// `no <why>` (exit 1). What the engine asks an SSH host before it runs there sandboxed.
pub const PROBE_ARG: &str = "__sandbox-probe";

/// The wrapper's command line for a sandboxed run of `program args`: the helper `exe` outside.
pub fn command(exe: &Path, bwrap: &Path, run_dir: &Path, program: &Path, args: &[String]) -> (PathBuf, Vec<String>) {
    let mut a = vec![RUN_ARG.to_string(), bwrap.display().to_string(), run_dir.display().to_string(), "--".into(), program.display().to_string()];
    a.extend(args.iter().cloned());
    (exe.to_path_buf(), a)
}

/// Serve a sandbox helper request if this process was started for one (call it first thing in
/// `main`; it returns when not).
pub fn serve_helper_request() {
    let args: Vec<OsString> = std::env::args_os().collect();
    let code = match args.get(1).and_then(|a| a.to_str()) {
        Some(RUN_ARG) => outside(&args[2..]),
        Some(NET_ARG) => inside(&args[2..]),
        Some(PROBE_ARG) => probe_here(),
        _ => return,
    };
    std::process::exit(code);
}

/// The agent's way of ending, as the exit code a shell would give it.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

fn fail(what: String) -> i32 {
    eprintln!("nightshift sandbox: {what}");
    // 125: the sandbox could not start the agent (the code `env` and container tools use).
    125
}

fn probe_here() -> i32 {
    match super::probe(std::env::var("PATH").ok().as_deref()) {
        Ok(bwrap) => {
            println!("ok {}", bwrap.display());
            0
        }
        Err(why) => {
            println!("no {why}");
            1
        }
    }
}

/// Outside: start the proxy on the run's socket, then bubblewrap with the plan.
fn outside(args: &[OsString]) -> i32 {
    let [bwrap, run_dir, sep, program @ ..] = args else { return fail("usage: __sandbox-run <bwrap> <run dir> -- <program> [args…]".into()) };
    if sep != "--" || program.is_empty() {
        return fail("usage: __sandbox-run <bwrap> <run dir> -- <program> [args…]".into());
    }
    let run_dir = PathBuf::from(run_dir);
    let dir = RunDir::at(&run_dir);
    let mut plan: Plan = match std::fs::read(dir.sandbox_plan()).map_err(|e| e.to_string()).and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string())) {
        Ok(plan) => plan,
        Err(e) => return fail(format!("cannot read the sandbox plan {}: {e}", dir.sandbox_plan().display())),
    };
    let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    let agent = PathBuf::from(&program[0]);
    let agent = match agent.components().count() {
        1 => crate::fsutil::find_on_path(&agent.to_string_lossy(), env.get("PATH").map(String::as_str)).unwrap_or(agent),
        _ => agent,
    };
    plan.complete_here(env.get("HOME").map(Path::new), &agent, &env);
    let rules = proxy::Rules { hosts: plan.hosts.clone(), background: plan.background.clone(), refused_log: dir.sandbox_refused() };
    if Path::new(bwrap).file_name().is_some_and(|n| n == seatbelt::SANDBOX_EXEC) {
        return under_seatbelt(bwrap, &plan, rules, program);
    }
    // Bound by a path relative to the sandbox's folder: a Unix socket's path has 108 bytes, a
    // run's folder may be longer.
    if let Err(e) = std::env::set_current_dir(dir.sandbox()) {
        return fail(format!("cannot enter {}: {e}", dir.sandbox().display()));
    }
    let _ = std::fs::remove_file(SOCKET);
    let listener = match std::os::unix::net::UnixListener::bind(SOCKET) {
        Ok(l) => l,
        Err(e) => return fail(format!("cannot open the sandbox's proxy socket in {}: {e}", dir.sandbox().display())),
    };
    std::thread::spawn(move || proxy::serve(listener, rules));
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return fail(format!("cannot find this program to start inside the sandbox: {e}")),
    };
    let forwards: Vec<String> = plan.forwards.iter().map(u16::to_string).collect();
    let mut cmd = std::process::Command::new(bwrap);
    cmd.args(plan.bwrap_args(&run_dir, super::as_root()))
        .arg("--")
        .arg(exe)
        .arg(NET_ARG)
        .arg(format!("{INSIDE_DIR}/{SOCKET}"))
        .arg(forwards.join(","))
        .arg("--")
        .args(program);
    match cmd.status() {
        Ok(status) => exit_code(status),
        Err(e) => fail(format!("cannot start bubblewrap ({}): {e}", Path::new(bwrap).display())),
    }
}

/// Outside, on macOS (untested: [`seatbelt`]): the proxy on a loopback port, then the agent under
/// `sandbox-exec` with the plan's profile, in the plan's folder.
fn under_seatbelt(exec: &OsString, plan: &Plan, rules: proxy::Rules, program: &[OsString]) -> i32 {
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => return fail(format!("cannot open the sandbox's proxy port: {e}")),
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    std::thread::spawn(move || proxy::serve_tcp(listener, rules));
    let mut cmd = std::process::Command::new(exec);
    cmd.arg("-p").arg(plan.seatbelt_profile(port)).args(program);
    if let Some(cwd) = &plan.cwd {
        cmd.current_dir(cwd);
    }
    through_proxy(&mut cmd, port);
    match cmd.status() {
        Ok(status) => exit_code(status),
        Err(e) => fail(format!("cannot start sandbox-exec ({}): {e}", Path::new(exec).display())),
    }
}

/// Point every client `cmd` starts at the proxy on `127.0.0.1:<port>`.
fn through_proxy(cmd: &mut std::process::Command, port: u16) {
    let url = format!("http://127.0.0.1:{port}");
    for var in PROXY_VARS {
        cmd.env(var, &url);
    }
    cmd.env_remove("NO_PROXY").env_remove("no_proxy");
}

/// The proxy variables every client reads, in both spellings; nothing bypasses it.
const PROXY_VARS: &[&str] = &["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// Inside: a loopback port that carries connections to the proxy (what `HTTPS_PROXY` names), the
/// forwarded loopback ports, then the agent.
fn inside(args: &[OsString]) -> i32 {
    let [socket, forwards, sep, program, rest @ ..] = args else { return fail("usage: __sandbox-net <socket> <ports> -- <program> [args…]".into()) };
    if sep != "--" {
        return fail("usage: __sandbox-net <socket> <ports> -- <program> [args…]".into());
    }
    let socket = PathBuf::from(socket);
    let listener = match TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => return fail(format!("cannot open the sandbox's loopback: {e}")),
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let through = socket.clone();
    std::thread::spawn(move || hand_over_each(listener, through, None));
    for p in forwards.to_string_lossy().split(',').filter_map(|p| p.parse::<u16>().ok()) {
        match TcpListener::bind(("127.0.0.1", p)) {
            Ok(l) => {
                let through = socket.clone();
                std::thread::spawn(move || hand_over_each(l, through, Some(p)));
            }
            Err(e) => eprintln!("nightshift sandbox: cannot forward 127.0.0.1:{p}: {e}"),
        }
    }
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest);
    through_proxy(&mut cmd, port);
    match cmd.status() {
        Ok(status) => exit_code(status),
        Err(e) => fail(format!("cannot start {} in the sandbox: {e}", Path::new(program).display())),
    }
}

/// Hand each connection on `listener` to the proxy outside ([`handover`]): as a client that speaks
/// to a proxy (`forward: None`), or one that speaks to `127.0.0.1:port` directly (`Some(port)`).
/// The proxy serves the client's own socket: no byte passes through here.
pub fn hand_over_each(listener: TcpListener, socket: PathBuf, forward: Option<u16>) {
    let purpose = forward.map_or(Purpose::Proxy, Purpose::Forward);
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let handed = UnixStream::connect(&socket).and_then(|to| handover::hand_over(&to, conn.as_raw_fd(), purpose));
        if let Err(e) = handed {
            eprintln!("nightshift sandbox: could not hand a connection to the proxy: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Inside's loopback ports, with the real proxy behind them: a client that speaks to a proxy
    /// and one that speaks to a forwarded port directly both reach the allowed origin, each over
    /// its own socket handed to the proxy; a forwarded port the rules refuse is closed, recorded.
    #[test]
    fn connections_handed_to_the_proxy_reach_only_what_is_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let origin = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = origin.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut c in origin.incoming().flatten() {
                let mut buf = [0u8; 1024];
                let n = c.read(&mut buf).unwrap_or(0);
                let _ = c.write_all(format!("origin saw {}", String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default()).as_bytes());
            }
        });
        let socket = dir.path().join("p.sock");
        let refused_log = dir.path().join("refused.jsonl");
        let rules = proxy::Rules { hosts: vec![format!("127.0.0.1:{port}")], background: Vec::new(), refused_log: refused_log.clone() };
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        std::thread::spawn(move || proxy::serve(listener, rules));
        let inside = |forward: Option<u16>| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let at = l.local_addr().unwrap().port();
            let socket = socket.clone();
            std::thread::spawn(move || hand_over_each(l, socket, forward));
            at
        };
        let talk = |at: u16, said: &str| {
            let mut c = std::net::TcpStream::connect(("127.0.0.1", at)).unwrap();
            // A refused connection may be closed before the client is done writing (seen once in
            // CI: shutdown found it gone, ENOTCONN): what it was answered is what is asserted.
            let _ = c.write_all(said.as_bytes());
            let _ = c.shutdown(std::net::Shutdown::Write);
            let mut out = String::new();
            let _ = c.read_to_string(&mut out);
            out
        };
        let proxied = talk(inside(None), &format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nGET /tunnelled HTTP/1.1\r\n\r\n"));
        assert_eq!(proxied, "HTTP/1.1 200 Connection established\r\n\r\norigin saw GET /tunnelled HTTP/1.1");
        assert_eq!(talk(inside(Some(port)), "GET /direct HTTP/1.1\r\n\r\n"), "origin saw GET /direct HTTP/1.1");
        let other = port.wrapping_add(1);
        assert_eq!(talk(inside(Some(other)), "GET / HTTP/1.1\r\n\r\n"), "", "refused: closed");
        assert_eq!(std::fs::read_to_string(&refused_log).unwrap(), format!("{{\"host\":\"127.0.0.1:{other}\"}}\n"));
    }
}
