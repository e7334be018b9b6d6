//! Follow a growing stdout log: turn new lines into progress messages, and notice the line after
//! which the agent will not end by itself ([`AgentDriver::ends_run_at`]).

use crate::agents::AgentDriver;
use std::path::PathBuf;
use std::time::Duration;

const POLL: Duration = Duration::from_millis(250);
/// Longest line we keep buffering for progress; longer ones are skipped (they are never progress).
const MAX_LINE: usize = 1 << 20;

/// Read new lines from `path` until the task is aborted, calling `emit` for each progress message
/// and notifying `settled` (once) on a line that settles the run.
pub async fn follow(path: PathBuf, driver: &'static dyn AgentDriver, emit: impl Fn(String) + Send + 'static, settled: std::sync::Arc<tokio::sync::Notify>) {
    let mut offset = 0u64;
    let mut partial: Vec<u8> = Vec::new();
    let mut skipping = false;
    loop {
        let (chunk, _) = crate::run_dir::read_range(&path, offset, 8 << 20);
        offset += chunk.len() as u64;
        for byte_line in chunk.split_inclusive(|b| *b == b'\n') {
            let complete = byte_line.ends_with(b"\n");
            if !skipping {
                partial.extend_from_slice(byte_line);
            }
            if partial.len() > MAX_LINE {
                partial.clear();
                skipping = true;
            }
            if complete {
                if !skipping {
                    let line = String::from_utf8_lossy(&partial);
                    if let Some(msg) = driver.progress(line.trim_end()) {
                        emit(msg);
                    }
                    if driver.ends_run_at(line.trim_end()) {
                        settled.notify_one();
                    }
                }
                partial.clear();
                skipping = false;
            }
        }
        tokio::time::sleep(POLL).await;
    }
}
