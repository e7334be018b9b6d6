//! Calls into the desktop that can hang — the OS keychain over D-Bus, a notification server —
//! run on a thread of their own and are waited for at most a limit, so an unanswering service
//! costs the engine a bounded wait and a sentence, never a hung scheduler. A short child process
//! (git, `gh auth token`) is bounded by [`child_output`]; runs are bounded by `runner`.

use std::process::Child;
use std::time::{Duration, Instant};

/// `f` on a thread of its own; its result if it returns within `limit`, else `None` (the thread
/// is left to finish on its own — the caller has moved on).
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).ok()
}

/// All `child` prints and how it ended, or `Ok(None)` when it ran past `limit` (it is then
/// killed). Both pipes are drained on threads while it runs: a large output must not fill a pipe
/// and stall the child.
pub fn child_output(mut child: Child, limit: Duration) -> std::io::Result<Option<std::process::Output>> {
    fn drain<R: std::io::Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait()? {
            Some(status) => break status,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(None);
            }
            None => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
        }
    };
    Ok(Some(std::process::Output { status, stdout: stdout.join().unwrap_or_default(), stderr: stderr.join().unwrap_or_default() }))
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

    #[test]
    fn a_child_that_finishes_gives_its_output_and_one_that_runs_too_long_is_killed() {
        use std::process::{Command, Stdio};
        let spawn = |script: &str| Command::new("sh").args(["-c", script]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        // More than a pipe holds (64 KiB), on both pipes: drained while it runs.
        let out = child_output(spawn("head -c 200000 /dev/zero; head -c 100000 /dev/zero >&2; exit 3"), Duration::from_secs(20)).unwrap().unwrap();
        assert_eq!((out.status.code(), out.stdout.len(), out.stderr.len()), (Some(3), 200_000, 100_000));
        let started = std::time::Instant::now();
        assert!(child_output(spawn("sleep 30"), Duration::from_millis(200)).unwrap().is_none());
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
