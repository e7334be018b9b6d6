//! Idle cost of the scheduler: CPU time and memory of `nightshiftctl daemon` with 100 and 1000
//! routines over 60 s, side by side with a baseline poller (wakes every second, re-reads every routine
//! file and asks the database — how a naive scheduler stays current). `NIGHTSHIFT_BENCH_QUICK=1`
//! measures 5 s instead of 60 s.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn main() {
    if std::env::args().any(|a| a == "--baseline-poller") {
        return baseline_poller();
    }
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let window = Duration::from_secs(if quick { 5 } else { 60 });
    let counts: &[usize] = if quick { &[100] } else { &[100, 1000] };
    for &n in counts {
        let home = tempfile::tempdir().unwrap();
        write_routines(home.path(), n);
        let ours = measure(
            Command::new(env!("CARGO_BIN_EXE_nightshiftctl")).arg("daemon").env("NIGHTSHIFT_HOME", home.path()),
            window,
        );
        let base = measure(Command::new(std::env::current_exe().unwrap()).arg("--baseline-poller").env("NIGHTSHIFT_HOME", home.path()), window);
        println!("Idle scheduler with {n} routines over {} s ({})", window.as_secs(), if quick { "quick" } else { "full" });
        println!("{:<28} {:>12} {:>12} {:>12}", "", "CPU time", "RSS now", "RSS peak");
        for (name, m) in [("baseline: 1 s poller", base), ("nightshiftctl daemon", ours)] {
            println!("{:<28} {:>9} ms {:>9} MB {:>9} MB", name, m.cpu_ms, m.rss_kb / 1024, m.hwm_kb / 1024);
        }
    }
}

/// `n` daily routines, none due in the next hours, so the window is pure idle.
fn write_routines(home: &std::path::Path, n: usize) {
    let dir = home.join("routines");
    std::fs::create_dir_all(&dir).unwrap();
    let hour = chrono::Utc::now().format("%H").to_string().parse::<u32>().unwrap();
    for i in 0..n {
        let h = (hour + 3 + (i as u32 % 18)) % 24;
        let yaml = format!("schedule: \"{} {h} * * *\"\ntimezone: UTC\ncommand: echo routine {i}\n", i % 60);
        std::fs::write(dir.join(format!("r{i:03}.yaml")), yaml).unwrap();
    }
}

struct Measure {
    cpu_ms: u64,
    rss_kb: u64,
    hwm_kb: u64,
}

/// Start the process, let it settle in (2 s), then measure CPU used during `window` and memory.
fn measure(cmd: &mut Command, window: Duration) -> Measure {
    let mut child: Child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let before = cpu_ticks(child.id());
    std::thread::sleep(window);
    let after = cpu_ticks(child.id());
    let (rss_kb, hwm_kb) = memory_kb(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Measure { cpu_ms: (after - before) * 1000 / hz, rss_kb, hwm_kb }
}

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn memory_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The baseline: every second, re-read all routine files, compute next fires, query the store.
fn baseline_poller() {
    let home = nightshift_core::Home::from_env().unwrap();
    let store = nightshift_core::store::Store::open(&home.db_path()).unwrap();
    loop {
        let set = nightshift_core::routine::load_dir(&home, &[]);
        let now = chrono::Utc::now();
        for r in &set.routines {
            if let Some(s) = &r.schedule {
                let _ = s.next_after(now);
            }
            let _ = store.last_slot(&r.name);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
