//! A run of `true` on another machine over SSH, as a whole process: `nightshiftctl run R --wait`
//! for a routine placed with `host:` on a real `sshd` on loopback (started here, as the tests do:
//! needs root), measured side by side with plain `ssh box true` in the same run — the floor any
//! remote run pays — with and without connection sharing (`reuse_ssh_connections`, OpenSSH's
//! `ControlMaster`). What the difference buys: the start (environment over the channel, the
//! wrapper there), following the output home, reading the exit code, removing the remote files,
//! and settling the record. Median of `NIGHTSHIFT_BENCH_RUNS` (default 9) runs each; then the same
//! run in-process (one engine, `run_now` to the final record).

use nightshift_testkit::bench::{fmt, median};
use nightshift_testkit::SshServer;
use std::process::Command;
use std::time::Duration;

fn main() {
    let Some(server) = SshServer::start() else { return };
    let runs: usize = std::env::var("NIGHTSHIFT_BENCH_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(9);
    println!("A run of `true` on a host over loopback SSH, whole process, median of {runs}");
    println!("{:<34} {:>12} {:>12}", "", "shared conn.", "a conn. each");
    let control = tempfile::Builder::new().prefix("ns-bench").tempdir_in("/tmp").unwrap();
    let plain = |shared: bool| {
        let mut c = Command::new("ssh");
        c.arg("-F").arg(server.ssh_config()).args(["-o", "BatchMode=yes"]);
        if shared {
            c.args(["-o", "ControlMaster=auto", "-o", "ControlPersist=60"]).arg("-o").arg(format!("ControlPath={}/%C", control.path().display()));
        }
        c.args([SshServer::ALIAS, "true"]);
        c
    };
    let ssh = [median(runs, || plain(true)), median(runs, || plain(false))];
    let mut ours = Vec::new();
    let mut in_process = Vec::new();
    for shared in [true, false] {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("routines")).unwrap();
        std::fs::write(home.path().join("routines/remote.yaml"), format!("schedule: \"0 2 * * *\"\nhost: box\ndevices: [{}]\ncommand: \"true\"\n", nightshift_testkit::this_machine())).unwrap();
        std::fs::write(home.path().join("nightshift.toml"), format!("ssh_config = \"{}\"\nreuse_ssh_connections = {shared}\n", server.ssh_config().display())).unwrap();
        ours.push(median(runs, || {
            let mut c = Command::new(env!("CARGO_BIN_EXE_nightshiftctl"));
            c.args(["run", "remote", "--wait"]).env("NIGHTSHIFT_HOME", home.path());
            c
        }));
        in_process.push(in_process_median(runs, home.path()));
        let _ = Command::new("ssh").arg("-F").arg(server.ssh_config()).arg("-o").arg(format!("ControlPath={}/ssh/%C", home.path().display())).args(["-O", "exit", "box"]).output();
    }
    println!("{:<34} {:>12} {:>12}", "ssh box true (the floor)", fmt(ssh[0]), fmt(ssh[1]));
    println!("{:<34} {:>12} {:>12}", "nightshiftctl run remote --wait", fmt(ours[0]), fmt(ours[1]));
    println!("{:<34} {:>12} {:>12}", "overhead over the floor", fmt(ours[0].saturating_sub(ssh[0])), fmt(ours[1].saturating_sub(ssh[1])));
    println!("{:<34} {:>12} {:>12}", "in-process: run_now → final record", fmt(in_process[0]), fmt(in_process[1]));
    let _ = Command::new("ssh").arg("-F").arg(server.ssh_config()).arg("-o").arg(format!("ControlPath={}/%C", control.path().display())).args(["-O", "exit", "box"]).output();
}

/// The same run in-process: one engine on the home, `run_now` to the final record, `n` times.
fn in_process_median(n: usize, home: &std::path::Path) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let engine = nightshift_core::Engine::open(nightshift_core::EngineOptions::new(nightshift_core::Home::at(home))).unwrap();
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let start = std::time::Instant::now();
            let record = engine.run_now("remote", nightshift_core::Trigger::Manual).await.unwrap().wait().await.unwrap();
            assert_eq!(record.status, nightshift_core::RunStatus::Completed, "{record:?}");
            times.push(start.elapsed());
        }
        times.sort();
        times[n / 2]
    })
}
