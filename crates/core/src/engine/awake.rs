//! Keeping the machine awake while a run of this engine goes (`keep_awake`, on by default): a
//! sleep inhibitor taken when the first run starts and released when the last one ends — on
//! Linux logind's `Inhibit("sleep", …, "block")` over D-Bus, held as the file descriptor logind
//! hands back (closing it releases the inhibitor, and a process that dies releases it too).
//!
//! Taking one goes over D-Bus and may be slow, so a worker thread of its own does it: the engine
//! only says what it wants, never waits. An inhibitor that cannot be taken (no logind, a
//! container, a policy that refuses) is logged once and never fails or delays a run.

use std::sync::mpsc;
use std::sync::Mutex;

/// How long logind may take to answer.
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

pub(crate) struct Awake {
    /// The D-Bus address logind is reached at; `None`: the system bus.
    bus: Option<String>,
    /// To the worker (started at the first wish).
    wishes: Mutex<Option<mpsc::Sender<bool>>>,
}

impl Awake {
    pub fn new(bus: Option<String>) -> Awake {
        Awake { bus, wishes: Mutex::new(None) }
    }

    /// Keep the machine awake (`true`: a run of this engine goes and `keep_awake` is on) or let
    /// it sleep. Returns at once.
    pub fn want(&self, awake: bool) {
        let mut wishes = self.wishes.lock().unwrap_or_else(|e| e.into_inner());
        if wishes.is_none() && !awake {
            return; // nothing held, nothing to let go
        }
        let tx = wishes.get_or_insert_with(|| {
            let (tx, rx) = mpsc::channel();
            let bus = self.bus.clone();
            // The engine's runtime, when there is one: zbus then does its I/O there, not on
            // `async-io`'s pool (whose idle threads wake every 500 ms for the life of the process).
            let runtime = tokio::runtime::Handle::try_current().ok();
            std::thread::Builder::new().name("nightshift-awake".into()).spawn(move || worker(rx, bus, runtime)).ok();
            tx
        });
        let _ = tx.send(awake);
    }
}

/// Applies the latest wish; holds the inhibitor while wanted. Ends (releasing it) when the
/// engine is gone.
fn worker(wishes: mpsc::Receiver<bool>, bus: Option<String>, runtime: Option<tokio::runtime::Handle>) {
    let mut held: Option<Inhibitor> = None;
    let mut said = false;
    while let Ok(mut awake) = wishes.recv() {
        while let Ok(later) = wishes.try_recv() {
            awake = later;
        }
        match (awake, held.is_some()) {
            (true, false) => match inhibit(bus.as_deref(), runtime.as_ref()) {
                Ok(inhibitor) => {
                    tracing::info!("keeping the machine awake while runs go (keep_awake)");
                    held = Some(inhibitor);
                }
                Err(e) if !said => {
                    said = true;
                    tracing::warn!("cannot keep the machine awake while runs go: {e} (runs go on; set keep_awake = false in nightshift.toml to stop trying)");
                }
                Err(_) => {}
            },
            (false, true) => {
                held = None;
                tracing::info!("runs ended: the machine may sleep again");
            }
            _ => {}
        }
    }
}

#[cfg(target_os = "linux")]
type Inhibitor = zbus::zvariant::OwnedFd;

#[cfg(target_os = "linux")]
fn inhibit(bus: Option<&str>, runtime: Option<&tokio::runtime::Handle>) -> Result<Inhibitor, String> {
    let asked = async {
        let builder = match bus {
            Some(address) => zbus::connection::Builder::address(address),
            None => zbus::connection::Builder::system(),
        };
        let conn = match builder.map(|b| b.method_timeout(ANSWER_WITHIN)) {
            Ok(b) => b.build().await,
            Err(e) => Err(e),
        }
        .map_err(|e| format!("no connection to logind: {e}"))?;
        let reply = conn
            .call_method(Some("org.freedesktop.login1"), "/org/freedesktop/login1", Some("org.freedesktop.login1.Manager"), "Inhibit", &("sleep", "Nightshift", "a routine is running", "block"))
            .await
            .map_err(|e| format!("logind refused the sleep inhibitor: {e}"))?;
        reply.body().deserialize::<zbus::zvariant::OwnedFd>().map_err(|e| format!("logind answered without a descriptor: {e}"))
    };
    match runtime {
        Some(rt) => rt.block_on(asked),
        None => zbus::block_on(asked),
    }
}

#[cfg(not(target_os = "linux"))]
type Inhibitor = ();

#[cfg(not(target_os = "linux"))]
fn inhibit(_bus: Option<&str>, _runtime: Option<&tokio::runtime::Handle>) -> Result<Inhibitor, String> {
    let _ = ANSWER_WITHIN;
    Err("keeping the machine awake is not built for this platform yet".into())
}
