//! The tools for the agent of a run, from the engine that supervises it: each run this engine
//! starts here gets a Unix socket in its run folder (`mcp.sock`) answering MCP for that run, and
//! `nightshiftctl mcp` started by its agent carries stdio to it ([`bridge`]).
//!
//! Why not let `nightshiftctl mcp` open the home itself, as it does outside a run: in the
//! machine's sandbox the home's database is hidden from the run (as it must be), so a server
//! started by the agent could read nothing; and the run it belongs to would be whatever its
//! environment claims. Served from here, the caller is the run this engine started — its
//! follow-ups carry it as `parent_run`, its account is the only one they may pin — and the
//! sandbox needs no hole but the socket (a path socket crosses the network namespace; the run
//! folder is visible read-only, which `connect` needs no write for).

use super::{stdio::Stdio, Caller, McpServer};
use crate::events::EngineEvent;
use crate::run::RunRecord;
use crate::Engine;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The socket's name in a run's folder: Nightshift's tools for the run.
pub const SOCKET: &str = "mcp.sock";
/// The run's approvals (`on_denial: ask`): Claude Code's permission prompt tool alone.
pub const ASK_SOCKET: &str = "ask.sock";

/// The longest path a Unix socket may have (`sun_path`, less its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Serve the tools to every run `engine` starts here, for as long as the task lives (the app,
/// `nightshiftctl daemon` and `nightshiftctl run` start it beside their engine).
pub fn offer_to_runs(engine: &Engine) -> tokio::task::JoinHandle<()> {
    let mut events = engine.subscribe();
    let engine = engine.clone();
    // Runs started from now on are given the tools (counted until this task ends).
    let offering = Offering::start(&engine);
    tokio::spawn(async move {
        let _offering = offering;
        let mut open: HashMap<String, Endpoint> = HashMap::new();
        loop {
            match events.recv().await {
                Ok(EngineEvent::RunStarted { run }) if run.host.is_none() && !open.contains_key(&run.id) => {
                    if let Some(endpoint) = Endpoint::bind(&engine, *run) {
                        open.insert(endpoint.run.clone(), endpoint);
                    }
                }
                Ok(EngineEvent::RunFinished { run }) => {
                    open.remove(&run.id);
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    // Finishes may have been missed: close what has ended.
                    open.retain(|id, _| engine.run(id).is_ok_and(|r| !r.status.is_final()));
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                Ok(_) => {}
            }
        }
    })
}

/// This process offers the run sockets while it lives ([`crate::engine::state::Core::offers_tools`]).
struct Offering(Engine);

impl Offering {
    fn start(engine: &Engine) -> Offering {
        engine.core.offers_tools.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Offering(engine.clone())
    }
}

impl Drop for Offering {
    fn drop(&mut self) {
        self.0.core.offers_tools.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// One run's sockets: answering while it lives, removed when dropped.
struct Endpoint {
    run: String,
    sockets: Vec<(PathBuf, tokio::task::JoinHandle<()>)>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        for (path, task) in &self.sockets {
            task.abort();
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Endpoint {
    fn bind(engine: &Engine, run: RunRecord) -> Option<Endpoint> {
        let dir = PathBuf::from(&run.run_dir);
        // The event comes as the run starts, maybe before its folder is made.
        let _ = std::fs::create_dir_all(&dir);
        let caller = Caller { run: Some(run.clone()), may_act: true };
        let mut sockets = Vec::new();
        for (name, server) in [(SOCKET, McpServer::new(engine.clone(), caller.clone())), (ASK_SOCKET, McpServer::approvals(engine.clone(), caller))] {
            let path = dir.join(name);
            match listen(&path, server) {
                Ok(task) => sockets.push((path, task)),
                Err(why) => {
                    tracing::warn!(run = %run.id, path = %path.display(), "cannot offer the run MCP at its socket: {why}");
                    return None;
                }
            }
        }
        tracing::debug!(run = %run.id, dir = %dir.display(), "MCP tools offered to the run");
        Some(Endpoint { run: run.id, sockets })
    }
}

/// Answer `server`'s MCP at a Unix socket at `path` (only this user may connect).
fn listen(path: &Path, server: McpServer) -> Result<tokio::task::JoinHandle<()>, String> {
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        return Err("the run folder's path is too long for a Unix socket".into());
    }
    let _ = std::fs::remove_file(path);
    let listener = tokio::net::UnixListener::bind(path).map_err(|e| e.to_string())?;
    let _ = std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600));
    Ok(tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { break };
            let server = server.clone();
            tokio::spawn(async move {
                use rmcp::ServiceExt;
                let (read, write) = stream.into_split();
                match server.serve(Stdio::over(read, write)).await {
                    Ok(running) => {
                        let _ = running.waiting().await;
                    }
                    Err(e) => tracing::debug!(error = %e, "an MCP client of a run left before its session started"),
                }
            });
        }
    }))
}

/// `<this binary> nightshift-mcp-bridge [ask]`, as a run's agent starts it (the app's binary and
/// `nightshiftctl` both answer it, before anything else): carry stdio to the run's socket — its
/// approvals one with `ask` — and exit.
pub fn serve_bridge_request() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some(crate::agents::BRIDGE_ARG) {
        return;
    }
    let name = if args.next().as_deref() == Some("ask") { ASK_SOCKET } else { SOCKET };
    let code = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => with_runtime_let_go(rt, async {
            let Some(dir) = std::env::var_os("NIGHTSHIFT_RUN_DIR") else {
                eprintln!("error: {} runs inside a Nightshift run (NIGHTSHIFT_RUN_DIR is not set)", crate::agents::BRIDGE_ARG);
                return 2;
            };
            match socket_in(&PathBuf::from(dir).join(name)).await {
                Some(socket) => match bridge(&socket).await {
                    Ok(()) => 0,
                    Err(e) => {
                        eprintln!("error: {}", e.message);
                        2
                    }
                },
                None => {
                    eprintln!("error: this run's Nightshift offers no MCP socket ({name})");
                    2
                }
            }
        }),
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    };
    std::process::exit(code);
}

/// Run `work` on `rt`, then let the runtime go without waiting for its blocking threads: one of
/// them reads stdin, which the agent may keep open after the engine's side ended — a runtime
/// dropped the usual way would wait for that read forever.
fn with_runtime_let_go(rt: tokio::runtime::Runtime, work: impl std::future::Future<Output = i32>) -> i32 {
    let code = rt.block_on(work);
    rt.shutdown_background();
    code
}

/// Inside a run (`NIGHTSHIFT_RUN_DIR`): the socket its engine offers, once it is there (the run
/// may start its MCP server a moment before the engine has bound it). `None` outside a run, or
/// when no engine offers one (a run started by a command that did not stay).
pub async fn socket_of_this_run() -> Option<PathBuf> {
    socket_in(&PathBuf::from(std::env::var_os("NIGHTSHIFT_RUN_DIR")?).join(SOCKET)).await
}

/// `path` once it is there (waiting up to 5 s).
async fn socket_in(path: &Path) -> Option<PathBuf> {
    let path = path.to_path_buf();
    for _ in 0..50 {
        if path.exists() {
            return Some(path);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Carry stdin to the run's socket and its answers to stdout until either side closes.
pub async fn bridge(socket: &Path) -> crate::Result<()> {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(|e| crate::Error::new(crate::ErrorCode::Io, format!("cannot reach this run's Nightshift at {}: {e}", socket.display())))?;
    let (mut from, mut to) = stream.into_split();
    let up = async {
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut to).await;
        // stdin closed: the session is over; tell the engine's side.
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut to).await;
    };
    let down = async {
        let mut out = tokio::io::stdout();
        let _ = tokio::io::copy(&mut from, &mut out).await;
        let _ = tokio::io::AsyncWriteExt::flush(&mut out).await;
    };
    // The answers to the last requests still come after stdin closed; the session ends when the
    // engine's side has said everything. The engine's side ending first (the engine stopped) ends
    // it too: a call waiting on it would wait forever — gone, the agent's client sees its server
    // gone and goes on.
    tokio::pin!(up, down);
    tokio::select! {
        _ = &mut down => return Ok(()),
        _ = &mut up => {}
    }
    down.await;
    Ok(())
}
