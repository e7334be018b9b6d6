//! Idle cost of the scheduler: CPU time and memory of `nightshiftctl daemon` with 100 and 1000
//! routines over 60 s, side by side with a baseline poller (wakes every second, re-reads every routine
//! file and asks the database — how a naive scheduler stays current). CPU time is the kernel's
//! nanosecond count over all the process's threads (`/proc/PID/task/*/schedstat`, sampled through
//! the window so threads that end or start in it are counted: `testkit::bench::cpu_ns_over`). Then, on the same
//! home, one-shot commands as whole processes (medians of 7): `routines list` and `run NAME --wait`
//! of a routine running `true`, beside the same on a home with one routine (the fixed cost of a
//! process that opens the database). `NIGHTSHIFT_BENCH_QUICK=1` measures 5 s instead of 60 s.
//!
//! Wake-ups are counted too (context switches of all its threads over the window). With
//! `NIGHTSHIFT_BENCH_MAIN_BIN=<an older nightshiftctl>` (e.g. main's build before a change) that
//! binary is measured in the same run, on the same home, beside this one.

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
        let main = std::env::var_os("NIGHTSHIFT_BENCH_MAIN_BIN").map(|bin| measure(Command::new(bin).arg("daemon").env("NIGHTSHIFT_HOME", home.path()), window));
        println!("Idle scheduler with {n} routines over {} s ({})", window.as_secs(), if quick { "quick" } else { "full" });
        println!("{:<34} {:>12} {:>12} {:>12} {:>12}", "", "CPU time", "wake-ups", "RSS now", "RSS peak");
        let rows = [("baseline: 1 s poller", Some(base)), ("nightshiftctl daemon, main's build", main), ("nightshiftctl daemon", Some(ours))];
        for (name, m) in rows.into_iter().filter_map(|(name, m)| Some((name, m?))) {
            println!("{:<34} {:>9.2} ms {:>12} {:>9.1} MB {:>9.1} MB", name, m.cpu_ns as f64 / 1e6, m.switches, m.rss_kb as f64 / 1024.0, m.hwm_kb as f64 / 1024.0);
        }
        let one = tempfile::tempdir().unwrap();
        write_routines(one.path(), 1);
        println!("{:<28} {:>12} {:>12}", "one-shot, whole process", "1 routine", format!("{n} routines"));
        for (name, args) in [("routines list", vec!["routines", "list"]), ("run r000 --wait (true)", vec!["run", "r000", "--wait"])] {
            let time = |home: &std::path::Path| {
                let mut all: Vec<Duration> = (0..7)
                    .map(|_| {
                        let m = nightshift_testkit::bench::measure(Command::new(env!("CARGO_BIN_EXE_nightshiftctl")).args(&args).env("NIGHTSHIFT_HOME", home));
                        assert_eq!(m.code, Some(0), "{name}");
                        m.time
                    })
                    .collect();
                all.sort();
                all[3]
            };
            let (small, big) = (time(one.path()), time(home.path()));
            println!("{:<28} {:>12} {:>12}", name, nightshift_testkit::bench::fmt(small), nightshift_testkit::bench::fmt(big));
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
        let command = if i == 0 { "true".to_string() } else { format!("echo routine {i}") };
        let yaml = format!("schedule: \"{} {h} * * *\"\ntimezone: UTC\ncommand: {command}\n", i % 60);
        std::fs::write(dir.join(format!("r{i:03}.yaml")), yaml).unwrap();
    }
}

struct Measure {
    cpu_ns: u64,
    switches: u64,
    rss_kb: u64,
    hwm_kb: u64,
}

/// Start the process, let it settle in (2 s), then measure CPU used during `window` and memory.
fn measure(cmd: &mut Command, window: Duration) -> Measure {
    let mut child: Child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let seen = nightshift_testkit::bench::activity_over(child.id(), window);
    let (rss_kb, hwm_kb) = nightshift_testkit::bench::memory_kb(child.id());
    let _ = child.kill();
    let _ = child.wait();
    Measure { cpu_ns: seen.cpu_ns, switches: seen.switches, rss_kb, hwm_kb }
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
