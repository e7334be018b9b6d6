//! Settle hooks: what happens after a run's record is final (the desktop notification, later).
//!
//! A hook is untrusted with respect to the engine's health: each runs on a blocking thread, bounded
//! by a timeout, with panics caught. A hook that panics, errors or hangs cannot change the record
//! (already final) nor delay any other run.

use crate::run::RunRecord;
use std::sync::Arc;
use std::time::Duration;

pub trait SettleHook: Send + Sync + 'static {
    /// A short name for logs.
    fn name(&self) -> &str;
    /// Called once per run, after its record is final. Errors are logged, never propagated.
    fn on_settled(&self, run: &RunRecord) -> Result<(), String>;
}

pub const HOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// Run every hook concurrently, each bounded by `timeout`.
pub async fn run_hooks(hooks: &[Arc<dyn SettleHook>], run: &RunRecord, timeout: Duration) {
    let tasks: Vec<_> = hooks
        .iter()
        .map(|hook| {
            let hook = Arc::clone(hook);
            let run = run.clone();
            async move {
                let name = hook.name().to_string();
                let task = tokio::task::spawn_blocking(move || hook.on_settled(&run));
                match tokio::time::timeout(timeout, task).await {
                    Ok(Ok(Ok(()))) => {}
                    Ok(Ok(Err(e))) => tracing::warn!(hook = %name, error = %e, "settle hook failed"),
                    Ok(Err(join)) => tracing::error!(hook = %name, error = %join, "settle hook panicked"),
                    Err(_) => tracing::warn!(hook = %name, timeout_ms = timeout.as_millis() as u64, "settle hook timed out; left running in the background"),
                }
            }
        })
        .collect();
    for t in tasks {
        t.await;
    }
}
