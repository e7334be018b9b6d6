//! Settling a finished run from its files, as a whole process: `nightshiftctl show ID` on a home
//! whose run ended while no engine was alive (its row still `running`, its engine gone), so the
//! command classifies the log, scrubs what is left of it and writes the final row. Wall time and
//! peak memory (the process's max RSS), side by side with the peer's way in the same run — Node
//! reading the whole log and parsing every line (`benches/baseline/parse-log.mjs`) — for logs of
//! 16 MB to 1 GB, with and without a secret in the middle of the log.
//!
//! Two cases per log: the run's wrapper scrubbed the log at the run's end (what a run with no
//! engine following it does: `nightshiftctl __scrub-run-logs DIR`, measured here as its own
//! process, the cost the run's end pays), then `show` settles it; and a log nothing scrubbed (its
//! wrapper was killed before it could), which `show` scans whole.
//! `NIGHTSHIFT_BENCH_QUICK=1`: 16 and 64 MB only.

use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::store::{NewRun, Store};
use std::process::Command;
use nightshift_testkit::bench::fmt;
use std::time::Duration;

const SECRET: &str = "sk-ant-oat01-benchmark-secret-000000000000000000000000";

fn main() {
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let sizes: &[usize] = if quick { &[16, 64] } else { &[16, 256, 1024] };
    let node = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/baseline/parse-log.mjs");
    println!("Settling a finished run from its files, whole process ({})", if quick { "quick" } else { "full" });
    println!(
        "{:>8} {:>7} {:>11} {:>10} {:>14} {:>10} {:>12} {:>10} {:>9} {:>16} {:>10}",
        "log", "secret", "node", "node peak", "wrapper scrub", "its peak", "settle", "its peak", "speed-up", "settle, unscrubbed", "its peak"
    );
    let ctl = || Command::new(env!("CARGO_BIN_EXE_nightshiftctl"));
    for &mb in sizes {
        for secret in [false, true] {
            let home = tempfile::tempdir().unwrap();
            let (id, log) = finished_run(home.path(), mb, secret);
            let base = measure(Command::new("node").arg(&node).arg(&log));
            // The run's end: its wrapper has the binary scrub the logs (the secrets it knows are
            // in its environment, as a run's would be).
            let run_dir = log.parent().unwrap();
            let (scrub, scrub_kb) = measure(ctl().arg("__scrub-run-logs").arg(run_dir).env("CLAUDE_CODE_OAUTH_TOKEN", SECRET)).expect("the wrapper's scrub");
            if secret {
                assert!(!contains(&log, SECRET.as_bytes()), "the wrapper's scrub masked the secret");
            }
            let (ours, ours_kb) = measure(ctl().args(["show", &id, "--json"]).env("NIGHTSHIFT_HOME", home.path())).expect("nightshiftctl show settles the run");
            assert_settled(home.path(), &id);
            if mb == sizes[0] && !secret {
                // The same command on the run once it is settled: the process's own floor.
                let (t, kb) = measure(ctl().args(["show", &id, "--json"]).env("NIGHTSHIFT_HOME", home.path())).expect("show");
                println!("(floor: `show` of the settled run: {}, {} MiB)", fmt(t), kb / 1024);
            }
            // The same log that nothing scrubbed: settling scans all of it.
            let home2 = tempfile::tempdir().unwrap();
            let (id2, log2) = finished_run(home2.path(), mb, secret);
            let (whole, whole_kb) = measure(ctl().args(["show", &id2, "--json"]).env("NIGHTSHIFT_HOME", home2.path())).expect("nightshiftctl show settles the run");
            assert_settled(home2.path(), &id2);
            if secret {
                assert!(!contains(&log2, SECRET.as_bytes()), "settling masked the secret");
            }
            let (base_time, base_peak, speedup) = match base {
                Some((t, kb)) => (fmt(t), format!("{} MiB", kb / 1024), format!("{:.0}×", t.as_secs_f64() / ours.as_secs_f64())),
                None => ("fails".to_string(), "-".to_string(), "-".to_string()),
            };
            println!(
                "{:>5} MB {:>7} {:>11} {:>10} {:>14} {:>6} MiB {:>12} {:>6} MiB {:>9} {:>16} {:>6} MiB",
                mb,
                if secret { "yes" } else { "no" },
                base_time,
                base_peak,
                fmt(scrub),
                scrub_kb / 1024,
                fmt(ours),
                ours_kb / 1024,
                speedup,
                fmt(whole),
                whole_kb / 1024
            );
        }
    }
}

fn assert_settled(home: &std::path::Path, id: &str) {
    let settled = Store::open(&home.join("nightshift.db")).unwrap().get_run(id).unwrap();
    assert_eq!(settled.status, RunStatus::Completed, "the run was settled");
}

/// A home with one claude run that finished while no engine was alive: its log of `mb` MB, an
/// exit code, and a row still `running` owned by a process that is gone.
fn finished_run(home: &std::path::Path, mb: usize, secret: bool) -> (String, std::path::PathBuf) {
    std::fs::create_dir_all(home.join("routines")).unwrap();
    std::fs::write(home.join("routines/big.yaml"), "schedule: \"0 3 * * *\"\nagent: claude\nprompt: go\n").unwrap();
    let id = "01bench0000000000000000000".to_string();
    let run_dir = home.join("runs/big").join(&id);
    std::fs::create_dir_all(&run_dir).unwrap();
    let log = run_dir.join("stdout.log");
    nightshift_testkit::streams::write_claude_stream(&log, mb, secret.then_some(SECRET));
    std::fs::write(run_dir.join("stderr.log"), "").unwrap();
    std::fs::write(run_dir.join("exit_code"), "0\n").unwrap();
    let store = Store::open(&home.join("nightshift.db")).unwrap();
    let now = chrono::Utc::now();
    store
        .insert_run(&NewRun {
            id: id.clone(),
            routine: "big".into(),
            trigger: Trigger::Cli,
            agent: nightshift_core::words::Agent::Claude,
            status: RunStatus::Running,
            reason: None,
            message: None,
            scheduled_for: None,
            started_at: Some(now),
            finished_at: None,
            account: None,
            run_dir: run_dir.display().to_string(),
            owner: Some((999_999, "gone".into())),
            sort_at: now,
        })
        .unwrap();
    store.set_process(&id, 999_999, Some("gone")).unwrap();
    // The page cache holds the log either way (it was just written): both sides read it warm.
    (id, log)
}

/// Does the file contain `needle`? Read a chunk at a time: this process must stay small, since
/// a child's peak memory (`ru_maxrss`) can start from its parent's peak.
fn contains(path: &std::path::Path, needle: &[u8]) -> bool {
    use std::io::Read;
    let mut f = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            return false;
        }
        carry.extend_from_slice(&buf[..n]);
        if carry.windows(needle.len()).any(|w| w == needle) {
            return true;
        }
        carry.drain(..carry.len().saturating_sub(needle.len()));
    }
}

/// Wall time and peak RSS (KiB) of one process; `None` if it failed (Node cannot hold a 1 GB log
/// in one string).
fn measure(cmd: &mut Command) -> Option<(Duration, u64)> {
    let m = nightshift_testkit::bench::measure(cmd);
    (m.code == Some(0)).then_some((m.time, m.peak_kib))
}
