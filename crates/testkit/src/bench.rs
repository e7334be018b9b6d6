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

/// The median wall time of `n` runs of the command `make` builds (each must succeed).
pub fn median(n: usize, make: impl Fn() -> Command) -> Duration {
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let m = measure(&mut make());
            assert_eq!(m.code, Some(0), "the measured command failed");
            m.time
        })
        .collect();
    times.sort();
    times[n / 2]
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

/// Time on CPU of a process's threads during `window`, in nanoseconds (`/proc/PID/task/*/
/// schedstat`, sampled every 50 ms). A thread that ends inside the window (a runtime lets an idle
/// blocking thread go after 10 s) keeps what it was last seen using; one that starts inside it
/// counts from zero — so threads coming and going never make the sum shrink, and what is lost is
/// at most one sample's worth of a thread's last 50 ms.
pub fn cpu_ns_over(pid: u32, window: std::time::Duration) -> u64 {
    activity_over(pid, window).cpu_ns
}

/// What a process did over a window, summed over its threads (those that start or end in it too).
#[derive(Debug, Clone, Copy, Default)]
pub struct Activity {
    /// CPU time (`schedstat`), in ns.
    pub cpu_ns: u64,
    /// Context switches (`voluntary_ctxt_switches` + `nonvoluntary_ctxt_switches`): each time a
    /// thread was woken and ran, at least one — the wake-ups a battery pays for.
    pub switches: u64,
}

/// [`cpu_ns_over`], with the context switches of the same threads over the same window.
pub fn activity_over(pid: u32, window: std::time::Duration) -> Activity {
    use std::collections::HashMap;
    let threads = || -> HashMap<u32, (u64, u64)> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|t| {
                let tid = t.file_name().to_str()?.parse().ok()?;
                let ns = std::fs::read_to_string(t.path().join("schedstat")).ok()?.split_whitespace().next()?.parse().ok()?;
                let status = std::fs::read_to_string(t.path().join("status")).ok()?;
                let field = |name: &str| status.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
                Some((tid, (ns, field("voluntary_ctxt_switches:") + field("nonvoluntary_ctxt_switches:"))))
            })
            .collect()
    };
    let start = threads();
    let mut last = start.clone();
    let until = std::time::Instant::now() + window;
    while std::time::Instant::now() < until {
        // Sampled coarsely: the sampler's own reads must not be what the process is measured by
        // (it only reads /proc; the process is not woken by it).
        std::thread::sleep(std::time::Duration::from_millis(50).min(until.saturating_duration_since(std::time::Instant::now())));
        last.extend(threads());
    }
    last.iter().fold(Activity::default(), |a, (tid, (ns, sw))| {
        let (ns0, sw0) = start.get(tid).copied().unwrap_or((0, 0));
        Activity { cpu_ns: a.cpu_ns + ns.saturating_sub(ns0), switches: a.switches + sw.saturating_sub(sw0) }
    })
}

/// A process's resident memory now and at its peak, in KiB (`VmRSS`, `VmHWM`).
pub fn memory_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}
