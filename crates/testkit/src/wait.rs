//! Waiting for what a test cannot be told about — another process's row, a file, a port: look
//! every 50 ms until it holds, and fail naming what was awaited. (Where the engine can say it —
//! an event, a run's handle — tests await that instead.)

use std::time::{Duration, Instant};

const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Block until `done` holds; panic with "timed out after … waiting for {what}" after `limit`.
pub fn wait_until(what: &str, limit: Duration, done: impl FnMut() -> bool) {
    assert!(waited(limit, done), "timed out after {limit:?} waiting for {what}");
}

/// Block until `done` holds or `limit` passed; whether it held (for a failure message that
/// shows what the test saw by then).
pub fn waited(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(LOOK_EVERY);
    }
    true
}

/// [`wait_until`] from async code (the runtime keeps working between looks).
pub async fn wait_until_async(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    wait_for_async(what, limit, || done().then_some(())).await
}

/// Wait until `found` gives something, and give it; from async code.
pub async fn wait_for_async<T>(what: &str, limit: Duration, mut found: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = found() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out after {limit:?} waiting for {what}");
        tokio::time::sleep(LOOK_EVERY).await;
    }
}

/// Seconds, for call sites that read as "wait until … (10 s)".
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}
