//! What Nightshift adds to a run on a host on GitHub Actions, and what it asks of GitHub's API.
//!
//! Against the testkit's fake GitHub REST API, which runs the generated workflow under `act` (host
//! mode) with no queue delay, a `command: echo built` routine on `host: ci` is run N times, as a
//! whole process (`nightshiftctl run build --wait`) and in-process (`Engine::run_now` to the final
//! record), with `[github] actions_poll = "1s"`. For each run, beside the fake's own floor (the job
//! itself: act taking it to its end):
//! - **to dispatch**: from the start of the run (the command started, or `run_now` called) to the
//!   dispatch arriving at GitHub;
//! - **job end → settled**: from the job's end at GitHub to the run's final record (goal: within
//!   one poll interval);
//! - **API calls per run**: requests that count against GitHub's rate limit, and conditional ones
//!   answered 304 (which do not), counted separately.
//!
//! Then idle: `nightshiftctl daemon` with 100 routines on Actions hosts (none due) for a window —
//! the GitHub API calls it makes per idle hour (goal: far inside GitHub's 5,000/hour).
//! `NIGHTSHIFT_BENCH_QUICK=1`: fewer runs and a shorter window. Needs `act` (`NIGHTSHIFT_TEST_ACT`,
//! installed by scripts/test.sh); without it the bench says so and stops.

use nightshift_testkit::fake_github::ActionsRepo;
use nightshift_testkit::FakeGithub;
use std::process::{Command, Stdio};
use std::time::Duration;

const TOKEN: &str = "ghp_BenchActionsToken000000000000000000001";

fn main() {
    let Some(act) = std::env::var_os("NIGHTSHIFT_TEST_ACT") else {
        println!("actions bench: NIGHTSHIFT_TEST_ACT is not set (scripts/test.sh installs act from PyPI); nothing measured");
        return;
    };
    let quick = std::env::var("NIGHTSHIFT_BENCH_QUICK").as_deref() == Ok("1");
    let (runs, window) = if quick { (3, Duration::from_secs(10)) } else { (10, Duration::from_secs(60)) };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).thread_name("fake-github").enable_all().build().unwrap();
    let fake = rt.block_on(FakeGithub::start(TOKEN));
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("routines")).unwrap();
    std::fs::write(home.path().join("routines/build.yaml"), format!("schedule: \"0 3 * * *\"\nhost: ci\ndevices: [{}]\ntimeout: 5m\ncommand: echo built\n", nightshift_testkit::this_machine())).unwrap();
    std::fs::write(
        home.path().join("nightshift.toml"),
        format!("[github]\napi_url = \"{}\"\nactions_poll = \"1s\"\n\n[hosts.ci]\ngithub = \"acme/app\"\nruns_on = [\"self-hosted\"]\n", fake.url()),
    )
    .unwrap();
    let out = ctl(home.path()).args(["hosts", "workflow", "ci"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let checkout = nightshift_testkit::fake_github::actions::checkout(&String::from_utf8_lossy(&out.stdout));
    fake.add_actions_repo("acme/app", ActionsRepo::new(checkout.path(), act.into(), &["self-hosted"], "/usr/local/bin:/usr/bin:/bin".into()));

    // Whole process.
    let mut whole = Samples::default();
    for _ in 0..runs {
        let started = chrono::Utc::now();
        let out = ctl(home.path()).args(["run", "build", "--wait", "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        whole.add(&fake, started, &serde_json::from_slice(&out.stdout).unwrap());
    }
    // In-process: one engine, run_now to the final record.
    let engine_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let engine = nightshift_core::EngineOptions::for_test(home.path()).env("GH_TOKEN", TOKEN).open();
    let mut inproc = Samples { last: fake.actions_asks(), ..Samples::default() };
    for _ in 0..runs {
        let started = chrono::Utc::now();
        let rec = engine_rt.block_on(async { engine.run_now("build", nightshift_core::Trigger::Manual).await.unwrap().wait().await.unwrap() });
        assert_eq!(rec.status, nightshift_core::RunStatus::Completed, "{rec:?}");
        inproc.add(&fake, started, &serde_json::to_value(&rec).unwrap());
    }
    println!("A run of `echo built` on a host on GitHub Actions (fake API, the workflow run by act, actions_poll 1s), {runs} runs each");
    println!("{:<44} {:>10} {:>10} {:>10} {:>10}", "", "p50", "p99", "p50 in-p.", "p99 in-p.");
    for (label, pick) in [
        ("the job itself at GitHub (the fake's floor)", 0usize),
        ("start of the run → dispatch at GitHub", 1),
        ("the job's end → the run's final record", 2),
    ] {
        let (a, b) = (whole.pick(pick), inproc.pick(pick));
        println!("{label:<44} {:>10} {:>10} {:>10} {:>10}", ms(pct(&a, 50)), ms(pct(&a, 99)), ms(pct(&b, 50)), ms(pct(&b, 99)));
    }
    let per_run = |s: &Samples| format!("{:.1} / {:.1}", s.calls as f64 / runs as f64, s.not_modified as f64 / runs as f64);
    println!("{:<44} {:>21} {:>21}", "GitHub API calls per run (counted / 304)", per_run(&whole), per_run(&inproc));

    // Idle: 100 routines on Actions hosts, none due, a daemon scheduling them.
    for i in 0..100 {
        std::fs::write(home.path().join(format!("routines/nightly-{i:03}.yaml")), format!("schedule: \"0 3 1 1 *\"\nhost: ci\ndevices: [{}]\ncommand: echo {i}\n", nightshift_testkit::this_machine())).unwrap();
    }
    let mut daemon = ctl(home.path()).arg("daemon").stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let (before, before_304) = fake.actions_asks();
    std::thread::sleep(window);
    let (after, after_304) = fake.actions_asks();
    let _ = daemon.kill();
    let _ = daemon.wait();
    let per_hour = |n: u64| n as f64 * 3600.0 / window.as_secs_f64();
    println!(
        "Idle, 100 routines on Actions hosts, `nightshiftctl daemon` for {}s: {:.0} GitHub API calls per hour ({:.0} answered 304); GitHub allows 5,000",
        window.as_secs(),
        per_hour(after - before),
        per_hour(after_304 - before_304)
    );
}

fn ctl(home: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nightshiftctl"));
    c.env("NIGHTSHIFT_HOME", home).env("GH_TOKEN", TOKEN);
    c
}

#[derive(Default)]
struct Samples {
    /// Per run: (the job at GitHub, start → dispatch, job end → final record), in ms.
    each: Vec<(i64, i64, i64)>,
    calls: u64,
    not_modified: u64,
    last: (u64, u64),
}

impl Samples {
    fn add(&mut self, fake: &FakeGithub, started: chrono::DateTime<chrono::Utc>, rec: &serde_json::Value) {
        let id: u64 = rec["remote_url"].as_str().and_then(|u| u.rsplit('/').next()).and_then(|n| n.parse().ok()).expect("a workflow run");
        let (dispatched, taken, completed) = fake.job_times(id).unwrap();
        let (taken, completed) = (taken.unwrap(), completed.unwrap());
        let settled = rec["finished_at"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).unwrap().with_timezone(&chrono::Utc);
        self.each.push(((completed - taken).num_milliseconds(), (dispatched - started).num_milliseconds(), (settled - completed).num_milliseconds()));
        let (calls, not_modified) = fake.actions_asks();
        self.calls += calls - self.last.0;
        self.not_modified += not_modified - self.last.1;
        self.last = (calls, not_modified);
    }
    fn pick(&self, i: usize) -> Vec<i64> {
        let mut v: Vec<i64> = self.each.iter().map(|t| [t.0, t.1, t.2][i]).collect();
        v.sort();
        v
    }
}

fn pct(sorted: &[i64], p: usize) -> i64 {
    sorted[((sorted.len() - 1) * p).div_ceil(100).min(sorted.len() - 1)]
}

fn ms(v: i64) -> String {
    format!("{v} ms")
}
