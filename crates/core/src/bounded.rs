//! Calls into the desktop that can hang — the OS keychain over D-Bus, a notification server —
//! run on a thread of their own and are waited for at most a limit, so an unanswering service
//! costs the engine a bounded wait and a sentence, never a hung scheduler. (Child processes are
//! bounded where they are run: `runner` for runs, `git` for git.)

use std::time::Duration;

/// `f` on a thread of its own; its result if it returns within `limit`, else `None` (the thread
/// is left to finish on its own — the caller has moved on).
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_answers_in_time_gives_its_answer_and_one_that_hangs_gives_none() {
        assert_eq!(within(Duration::from_secs(5), || 42), Some(42));
        let started = std::time::Instant::now();
        assert_eq!(within(Duration::from_millis(100), || std::thread::sleep(Duration::from_secs(3))), None);
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
