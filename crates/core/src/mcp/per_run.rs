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

/// The socket's name in a run's folder.
pub const SOCKET: &str = "mcp.sock";

/// The longest path a Unix socket may have (`sun_path`, less its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Serve the tools to every run `engine` starts here, for as long as the task lives (the app,
/// `nightshiftctl daemon` and `nightshiftctl run` start it beside their engine).
pub fn offer_to_runs(engine: &Engine) -> tokio::task::JoinHandle<()> {
    let mut events = engine.subscribe();
    let engine = engine.clone();
    tokio::spawn(async move {
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

/// One run's socket: answering while it lives, removed when dropped.
struct Endpoint {
    run: String,
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Endpoint {
    fn bind(engine: &Engine, run: RunRecord) -> Option<Endpoint> {
        let path = Path::new(&run.run_dir).join(SOCKET);
        if path.as_os_str().len() > MAX_SOCKET_PATH {
            tracing::warn!(run = %run.id, path = %path.display(), "the run folder's path is too long for a Unix socket; its agent gets no Nightshift MCP tools from this engine");
            return None;
        }
        // The event comes as the run starts, maybe before its folder is made.
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::remove_file(&path);
        let listener = match tokio::net::UnixListener::bind(&path) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(run = %run.id, path = %path.display(), error = %e, "cannot offer the MCP tools to the run");
                return None;
            }
        };
        // Only this user reaches it (as the run folder's other files).
        let _ = std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600));
        let (id, server) = (run.id.clone(), McpServer::new(engine.clone(), Caller { run: Some(run), may_act: true }));
        let task = tokio::spawn(async move {
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
        });
        tracing::debug!(run = %id, path = %path.display(), "MCP tools offered to the run");
        Some(Endpoint { run: id, path, task })
    }
}

/// Inside a run (`NIGHTSHIFT_RUN_DIR`): the socket its engine offers, once it is there (the run
/// may start its MCP server a moment before the engine has bound it). `None` outside a run, or
/// when no engine offers one (a run started by a command that did not stay).
pub async fn socket_of_this_run() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os("NIGHTSHIFT_RUN_DIR")?).join(SOCKET);
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
    // engine's side has said everything.
    tokio::join!(up, down);
    Ok(())
}
