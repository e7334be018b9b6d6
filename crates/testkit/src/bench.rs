//! Measuring one whole process for the benchmarks: wall time and peak memory as the kernel counts
//! them (`wait4`'s rusage). The caller must stay small itself: on Linux a child's `ru_maxrss`
//! starts from its parent's peak (the address space is copied at fork).

use std::process::Command;
use std::time::{Duration, Instant};

pub struct Measured {
    pub time: Duration,
    /// Peak resident memory, KiB.
    pub peak_kib: u64,
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
}

/// Run `cmd` to its end with its output discarded.
pub fn measure(cmd: &mut Command) -> Measured {
    let start = Instant::now();
    // Reaped by wait4 below (which also gives its rusage).
    #[allow(clippy::zombie_processes)]
    let child = cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().expect("spawn");
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value of that plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child with valid out-pointers.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Measured { time: start.elapsed(), peak_kib: usage.ru_maxrss as u64, code }
}

/// The burst benchmarks' baseline: `n` processes of `sh -c true`, `lanes` at a time, no engine —
/// what spawning the runs costs by itself. Returns the wall time.
pub fn spawn_in_lanes(n: usize, lanes: usize) -> Duration {
    let start = Instant::now();
    let (mut pending, mut running) = (n, std::collections::VecDeque::new());
    while pending > 0 || !running.is_empty() {
        while running.len() < lanes && pending > 0 {
            running.push_back(Command::new("/bin/sh").args(["-c", "true"]).spawn().expect("spawn sh"));
            pending -= 1;
        }
        if let Some(mut oldest) = running.pop_front() {
            oldest.wait().expect("wait for sh");
        }
    }
    start.elapsed()
}

/// "12.3 ms" below a second, "1.23 s" above.
pub fn fmt(d: Duration) -> String {
    if d.as_secs_f64() >= 1.0 {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}
