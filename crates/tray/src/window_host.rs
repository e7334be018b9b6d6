//! The resident's side of the window: it starts the window process (`nightshift-window`, the
//! Tauri app beside this binary) when the window should appear, keeps at most one, sends it every
//! engine event and answers its commands with the engine ([`crate::bridge`]).
//!
//! "Show this" goes to the window process that is up; a new one is started only when none is.
//! A window process that has just closed its window hands a "show" back (`Missed`), and it is
//! shown in a new one — so "Open" never does nothing, however the clicks and the close interleave.

use crate::bridge::{self, FromWindow, Open, ToWindow};
use nightshift_core::api::Face;
use nightshift_core::Engine;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

/// Messages waiting for a window process that does not read (frozen, stopped): beyond this,
/// events are dropped — and the page told to reload what it shows once it reads again — rather
/// than held without end or blocking the engine.
const BACKLOG: usize = 4096;

/// The window process that is up, if any.
#[derive(Default)]
pub struct WindowHost {
    current: Mutex<Option<Current>>,
    /// `GDK_GL` as the user had it (the resident turns GL off for itself only).
    users_gdk_gl: Option<std::ffi::OsString>,
}

struct Current {
    pid: u32,
    pipe: Arc<Pipe>,
}

/// The way to a window process's stdin: a writer thread fed by a bounded channel, so the engine
/// never blocks on a window. Closing it (dropping the only sender) closes the process's stdin.
struct Pipe {
    tx: Mutex<Option<SyncSender<ToWindow>>>,
    /// Something was dropped for want of room: the page must reload what it shows.
    dropped: AtomicBool,
}

impl Pipe {
    fn new(tx: SyncSender<ToWindow>) -> Pipe {
        Pipe { tx: Mutex::new(Some(tx)), dropped: AtomicBool::new(false) }
    }

    /// Queue `message`; `false` once the window process is gone (or the pipe closed).
    fn send(&self, message: ToWindow) -> bool {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let Some(tx) = tx.as_ref() else { return false };
        if self.dropped.load(Ordering::Relaxed) && tx.try_send(resync()).is_ok() {
            self.dropped.store(false, Ordering::Relaxed);
        }
        match tx.try_send(message) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.dropped.store(true, Ordering::Relaxed);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    fn close(&self) {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// "Reload what you show": the engine event the page already answers after a gap (events dropped
/// here, or missed by the engine's channel).
fn resync() -> ToWindow {
    ToWindow::Emit { event: bridge::WINDOW_EVENT.to_string(), payload: serde_json::json!({ "type": "resync" }) }
}

/// What the window process's commands run against, in this process.
#[derive(Clone)]
pub struct Backend {
    pub engine: Engine,
    pub face: Arc<dyn Face>,
    pub runtime: tokio::runtime::Handle,
    /// The window's binary ([`window_binary`]).
    pub exe: std::path::PathBuf,
}

impl WindowHost {
    pub fn new(users_gdk_gl: Option<std::ffi::OsString>) -> WindowHost {
        WindowHost { current: Mutex::default(), users_gdk_gl }
    }

    /// Show the window with `open`: in the window process that is up, else in a new one.
    pub fn open(self: &Arc<Self>, backend: &Backend, open: Open) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = current.as_ref() {
            if c.pipe.send(ToWindow::Show(open.clone())) {
                tracing::info!(pid = c.pid, "asked the window process that is up to show the window");
                return;
            }
        }
        *current = match self.start(backend, &open) {
            Ok(started) => Some(started),
            Err(e) => {
                tracing::error!("could not open the window: {e}");
                None
            }
        };
    }

    /// Send an event to the page, if a window is up (`payload` is built only then).
    pub fn emit(&self, event: &str, payload: impl FnOnce() -> Option<Value>) {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = current.as_ref() {
            if let Some(payload) = payload() {
                c.pipe.send(ToWindow::Emit { event: event.to_string(), payload });
            }
        }
    }

    /// Tell the page to reload what it shows (it missed events), if a window is up.
    pub fn resync(&self) {
        if let Some(c) = self.current.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            c.pipe.send(resync());
        }
    }

    /// Close the window (Quit): its process exits once its stdin closes.
    pub fn close(&self) {
        if let Some(c) = self.current.lock().unwrap_or_else(|e| e.into_inner()).take() {
            c.pipe.close();
        }
    }

    fn start(self: &Arc<Self>, backend: &Backend, open: &Open) -> std::io::Result<Current> {
        let open_json = serde_json::to_string(open).map_err(std::io::Error::other)?;
        let mut command = Command::new(&backend.exe);
        command.arg(bridge::OPEN_FLAG).arg(open_json).stdin(Stdio::piped()).stdout(Stdio::piped());
        match &self.users_gdk_gl {
            Some(gl) => command.env("GDK_GL", gl),
            None => command.env_remove("GDK_GL"),
        };
        let mut child = command.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => std::io::Error::new(e.kind(), format!("{} is missing; it is installed with Nightshift (a source build makes it with `cargo build --bins`)", backend.exe.display())),
            _ => std::io::Error::new(e.kind(), format!("starting {} failed: {e}", backend.exe.display())),
        })?;
        let pid = child.id();
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the window process has no pipes"));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel::<ToWindow>(BACKLOG);
        let pipe = Arc::new(Pipe::new(tx));
        std::thread::Builder::new().name("to-window".into()).spawn(move || {
            for message in rx {
                if !bridge::send(&mut stdin, &message) {
                    return;
                }
            }
        })?;
        let (host, backend, replies) = (Arc::clone(self), backend.clone(), Arc::clone(&pipe));
        std::thread::Builder::new().name("from-window".into()).spawn(move || {
            let reply = move |m: ToWindow| {
                replies.send(m);
            };
            let (engine, face, runtime) = (backend.engine.clone(), Arc::clone(&backend.face), backend.runtime.clone());
            bridge::serve(std::io::BufReader::new(stdout), engine, face, runtime, reply, |message| match message {
                FromWindow::Closed => host.forget(pid),
                FromWindow::Missed(open) => host.open(&backend, open),
                FromWindow::Call { .. } => {}
            });
            // Its stdout closed: the process is ending (or was killed). Reap it, and hand back
            // what serving it freed (pages of runs and logs it asked for).
            host.forget(pid);
            nightshift_core::allocator::release_freed();
            match child.wait() {
                Ok(status) if !status.success() => tracing::warn!(pid, %status, "the window process ended abnormally; runs are not affected"),
                Ok(_) => tracing::debug!(pid, "the window process ended"),
                Err(e) => tracing::warn!(pid, error = %e, "could not reap the window process"),
            }
        })?;
        tracing::info!(pid, "started a window process");
        Ok(Current { pid, pipe })
    }

    /// Window process `pid` closed its window or ended: close its pipe (it exits) and start the
    /// next "Open" in a new one.
    fn forget(&self, pid: u32) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().is_some_and(|c| c.pid == pid) {
            if let Some(c) = current.take() {
                c.pipe.close();
            }
        }
    }
}

/// The window's binary: `nightshift-window` beside this one.
pub fn window_binary() -> std::path::PathBuf {
    let name = format!("nightshift-window{}", std::env::consts::EXE_SUFFIX);
    this_binary().parent().map(|dir| dir.join(&name)).unwrap_or_else(|| name.into())
}

/// This binary's path. After a package upgrade replaced it on disk, Linux names the running image
/// "… (deleted)": the file now at that path is the one meant.
pub fn this_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|_| "nightshift".into());
    match exe.to_str().and_then(|s| s.strip_suffix(" (deleted)")) {
        Some(path) => path.into(),
        None => exe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: u64) -> ToWindow {
        ToWindow::Emit { event: "engine".into(), payload: serde_json::json!({ "n": n }) }
    }

    #[test]
    fn a_window_that_does_not_read_never_blocks_the_engine_and_resyncs_when_it_does() {
        let (tx, rx) = std::sync::mpsc::sync_channel(2);
        let pipe = Pipe::new(tx);
        for n in 0..5 {
            assert!(pipe.send(event(n)), "a full pipe is not a gone window");
        }
        let got: Vec<String> = rx.try_iter().map(|m| format!("{m:?}")).collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(pipe.send(event(9)));
        let got: Vec<String> = rx.try_iter().map(|m| format!("{m:?}")).collect();
        assert!(got[0].contains("resync") && got[1].contains("9"), "told to reload, then the next event: {got:?}");
        drop(rx);
        assert!(!pipe.send(event(10)), "a window process that is gone");
        pipe.close();
        assert!(!pipe.send(event(11)));
    }
}
