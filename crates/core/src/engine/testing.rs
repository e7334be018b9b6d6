//! What tests need from the engine (feature `test-support`; a normal build has none of it): one
//! way to open an engine on a throwaway home, the store itself to arrange rows a crashed engine
//! would have left, and a wait for every run to settle.

use super::Clock;
use super::state::Engine;
use super::EngineOptions;
use super::Home;
use super::Store;
use std::sync::Arc;

/// The one way tests open an engine (feature `test-support`): a throwaway home, the system's own
/// binaries only, and what each test changes said in one chain —
/// `EngineOptions::for_test(dir).settings("…").clock(c).open()`.
impl EngineOptions {
    /// An engine on the home at `dir`, whose runs see `PATH=/usr/bin:/bin` and nothing else of
    /// the test process's environment (a developer's own variables never leak into a test).
    pub fn for_test(dir: &std::path::Path) -> Self {
        let mut opts = EngineOptions::new(Home::at(dir));
        opts.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
        opts
    }

    /// Write `toml` as the home's `nightshift.toml` first.
    pub fn settings(self, toml: &str) -> Self {
        std::fs::write(self.home.config_dir().join("nightshift.toml"), toml).expect("write nightshift.toml");
        self
    }

    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Set one variable for runs (`PATH` replaces the default).
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.into(), value.into()));
        self
    }

    /// Put `dir` (a test's own fake binaries) first on the runs' `PATH`.
    pub fn path_first(self, dir: &std::path::Path) -> Self {
        let rest = self.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone()).unwrap_or_default();
        self.env("PATH", format!("{}:{rest}", dir.display()))
    }

    /// Open it; a test cannot go on without it.
    pub fn open(self) -> Engine {
        Engine::open(self).unwrap_or_else(|e| panic!("could not open the test engine: {}", e.message))
    }
}

impl Engine {
    /// The store itself — for tests that arrange rows an engine would have left (the faces go
    /// through the engine's own methods; a normal build has no `store()` at all).
    pub fn store(&self) -> &Store {
        &self.core.store
    }

    /// Wait until no run of this home is queued or running, in any process (tests: after a pass,
    /// before reading its rows). Looks again on each of this engine's events, and every 50 ms for
    /// other engines' runs; panics after `limit`.
    pub async fn until_idle(&self, limit: std::time::Duration) {
        let mut events = self.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if self.activity().is_ok_and(|a| a.running == 0 && a.queued == 0) {
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "runs did not settle within {limit:?}");
            let _ = tokio::time::timeout(std::time::Duration::from_millis(50), events.recv()).await;
        }
    }
}
