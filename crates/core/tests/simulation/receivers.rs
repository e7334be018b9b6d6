//! Where the home's notices and posts go, taken down and brought back by the simulation: a
//! webhook receiver (testkit's loopback HTTP server, real requests over real sockets) and a
//! stand-in for the desktop's notification server (the real one over D-Bus is drilled in
//! `crates/desktop/tests`; here what matters is only whether it took a notice, and how often).

use nightshift_core::notify::{Notice, Notifier};
use nightshift_testkit::{Answer, WebhookReceiver};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The stand-in notification server: shows a notice while up, refuses it while down, and
/// counts both per run.
#[derive(Default)]
pub struct Desktop {
    down: AtomicBool,
    shown: Mutex<HashMap<String, usize>>,
    refused: Mutex<HashMap<String, usize>>,
    /// Notices of no one run (a summary of runs a notifier first saw more than a day late).
    pub summaries: AtomicUsize,
}

impl Notifier for Desktop {
    fn send(&self, notice: &Notice) -> Result<(), String> {
        let key = notice.run_id.clone();
        if self.down.load(Ordering::SeqCst) {
            *self.refused.lock().unwrap().entry(key.unwrap_or_default()).or_default() += 1;
            return Err("the notification server is not running (simulated)".into());
        }
        match key {
            Some(id) => *self.shown.lock().unwrap().entry(id).or_default() += 1,
            None => {
                self.summaries.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }
}

impl Desktop {
    pub fn shown_of(&self, run: &str) -> usize {
        self.shown.lock().unwrap().get(run).copied().unwrap_or(0)
    }

    pub fn refused_of(&self, run: &str) -> usize {
        self.refused.lock().unwrap().get(run).copied().unwrap_or(0)
    }

    /// Notices shown, of runs and summaries.
    pub fn shown(&self) -> usize {
        self.shown.lock().unwrap().values().sum::<usize>() + self.summaries.load(Ordering::SeqCst)
    }
}

/// Both receivers, and the runtime the webhook receiver serves on (its own: engines die around it).
pub struct Receivers {
    _net: tokio::runtime::Runtime,
    pub hook: WebhookReceiver,
    pub desktop: Arc<Desktop>,
    /// How the webhook receiver is down, if it is.
    pub hook_down: Option<Answer>,
    /// For how many more steps what is down stays down.
    pub down_for: u32,
}

impl Receivers {
    pub fn start() -> Receivers {
        let net = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let hook = net.block_on(WebhookReceiver::start(vec![Answer::Accept], None));
        hook.count_only();
        Receivers { _net: net, hook, desktop: Arc::default(), hook_down: None, down_for: 0 }
    }

    /// A step begins: what was down for its last step comes back (`true` then).
    pub fn count_down(&mut self) -> bool {
        if self.down_for == 0 {
            return false;
        }
        self.down_for -= 1;
        if self.down_for > 0 {
            return false;
        }
        self.set_desktop_down(false);
        self.set_hook_down(None);
        true
    }

    pub fn desktop_down(&self) -> bool {
        self.desktop.down.load(Ordering::SeqCst)
    }

    pub fn set_desktop_down(&self, down: bool) {
        self.desktop.down.store(down, Ordering::SeqCst);
    }

    /// The webhook receiver answers every request with `answer` (503, a dropped connection), or
    /// is back (`None`).
    pub fn set_hook_down(&mut self, answer: Option<Answer>) {
        self.hook.set_outage(answer.clone());
        self.hook_down = answer;
    }
}
