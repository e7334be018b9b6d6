//! What this engine found wrong and the user must hear about — a damaged database, a run that
//! could not be recorded, a webhook that gave up — one sentence each, said atop the window, in the
//! tray and by `nightshiftctl`, until what caused it is gone. Each is kept under what it is about,
//! so it is said once however often it happens, and cleared by the part that saw it mended.

use crate::run::Channel;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// What a problem is about (told in this order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum About {
    /// `nightshift.toml` does not parse (the previous settings stay in effect).
    Settings,
    /// The database cannot be opened or read.
    Database,
    /// Queued runs cannot start (a pass cannot write).
    Dispatch,
    /// `[hooks] listen` cannot be bound.
    Hooks,
    /// `[serve] listen` cannot be bound.
    Serve,
    /// `[github] poll` cannot ask GitHub.
    Polling,
    /// A run ended but its final row cannot be written yet (its id).
    Unrecorded(String),
    /// A webhook or ping gave up on a delivery.
    Delivery(Channel),
}

#[derive(Default)]
pub(crate) struct Problems(Mutex<BTreeMap<About, String>>);

impl Problems {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<About, String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Say `sentence` about `about`; returns what was said about it before, if anything.
    pub(crate) fn tell(&self, about: About, sentence: String) -> Option<String> {
        self.lock().insert(about, sentence)
    }

    /// What caused it is gone; returns whether anything was said about it.
    pub(crate) fn clear(&self, about: &About) -> bool {
        self.lock().remove(about).is_some()
    }

    /// Every sentence, in order.
    pub(crate) fn sentences(&self) -> Vec<String> {
        self.lock().values().cloned().collect()
    }
}
