//! Running routines for real: processes, process groups, timeouts, cancel, settle hooks, prompts.

use nightshift_core::events::EngineEvent;
use nightshift_core::run::{Reason, RunRecord, RunStatus, Trigger};
use nightshift_core::runner::SettleHook;
use nightshift_core::{Engine, EngineOptions};
use nightshift_testkit::TestHome;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn engine(th: &TestHome) -> Engine {
    EngineOptions::for_test(th.path())
        .settings("kill_grace_secs = 1\n")
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .path_first(&th.bin_dir())
        .env("HOME", th.user_home().display().to_string())
        .open()
}

async fn run(engine: &Engine, name: &str) -> RunRecord {
    let handle = engine.run_now(name, Trigger::Manual).await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), handle.wait()).await.expect("run settles").unwrap()
}

fn pid_alive(pid: i32) -> bool {
    // A zombie is dead for our purposes.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty() && !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z')
}

/// While an engine follows a run, the engine keeps its limit: the wrapper's watcher waits on the
/// engine (no timer, no `sleep` process) and is gone with the run, and the run is not marked
/// `unwatched`. A command runs in the wrapper's own shell, as a fresh `sh -c` would see it.
#[tokio::test]
async fn a_followed_run_leaves_nothing_behind_and_its_command_sees_a_fresh_shell() {
    let th = TestHome::new();
    let group = th.path().join("group");
    th.routine(
        "quick",
        &format!("schedule: \"0 * * * *\"\ntimeout: 1h\ncommand: 'echo $$ > {}; echo \"args=$# f=$f t=$t x=$x\"'\n", group.display()),
    );
    let engine = engine(&th);
    let rec = run(&engine, "quick").await;
    assert_eq!(rec.status, RunStatus::Completed);
    let run_dir = std::path::PathBuf::from(&rec.run_dir);
    let output = std::fs::read_to_string(run_dir.join("stdout.log")).unwrap();
    assert_eq!(output, "args=0 f= t= x=\n", "no positional parameters or wrapper variables leak into the command");
    assert!(!run_dir.join("unwatched").exists(), "its engine followed it to the end");
    let pgid: i32 = std::fs::read_to_string(&group).unwrap().trim().parse().unwrap();
    // Live members of the run's group (a zombie is not alive; who reaps an orphan is the init's
    // business, not the run's).
    let members = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
                fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
            })
            .collect()
    };
    nightshift_testkit::wait_until_async("the run's process group to be empty", Duration::from_millis(500), || members().is_empty()).await;
}

#[tokio::test]
async fn a_command_completes_with_its_output_as_report() {
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 * * * *\"\ncommand: 'echo line one; echo line two; echo oops >&2'\n");
    let engine = engine(&th);
    let mut events = engine.subscribe();
    let rec = run(&engine, "hello").await;
    assert_eq!(rec.status, RunStatus::Completed);
    assert_eq!(rec.exit_code, Some(0));
    assert_eq!(rec.trigger, Trigger::Manual);
    assert_eq!(rec.agent.as_str(), "command");
    let report = std::fs::read_to_string(rec.report_path.as_ref().unwrap()).unwrap();
    assert_eq!(report, "line one\nline two");
    let dir = std::path::Path::new(&rec.run_dir);
    assert_eq!(std::fs::read_to_string(dir.join("stderr.log")).unwrap(), "oops\n");
    assert!(dir.starts_with(th.path().join("runs/hello")));
    // Started then finished, once each.
    let mut seen = Vec::new();
    while let Ok(ev) = events.try_recv() {
        seen.push(match ev {
            EngineEvent::RunQueued { run } => format!("queued {}", run.status),
            EngineEvent::RunStarted { run } => format!("started {}", run.status),
            EngineEvent::RunFinished { run } => format!("finished {}", run.status),
            EngineEvent::EngineState { .. } => continue,
            other => format!("{other:?}"),
        });
    }
    assert_eq!(seen, vec!["queued queued", "started running", "finished completed"]);
    // The stored record is the one returned.
    assert_eq!(engine.store().get_run(&rec.id).unwrap(), rec);
}

#[tokio::test]
async fn a_failing_command_says_why() {
    let th = TestHome::new();
    th.routine("bad", "schedule: \"0 * * * *\"\ncommand: 'echo working; echo \"disk quota exceeded\" >&2; exit 3'\n");
    let rec = run(&engine(&th), "bad").await;
    assert_eq!((rec.status, rec.reason), (RunStatus::Failed, Some(Reason::ExitNonzero)));
    assert_eq!(rec.exit_code, Some(3));
    assert_eq!(rec.message.as_deref(), Some("exited with code 3: disk quota exceeded"));
    // Its report is not its output: it explains the verdict, the output as evidence.
    let report = std::fs::read_to_string(rec.report_path.as_deref().expect("a failed run's report explains it")).unwrap();
    assert_eq!(
        report,
        format!("# bad · failed · exit_nonzero\n\nThe command failed: exited with code 3: disk quota exceeded\n\n**What to do:** Its log (`nightshiftctl logs {}`) shows what it printed.\n\n**Its output ended with:**\n\n    working\n\n**Its error output ended with:**\n\n    disk quota exceeded\n", rec.id)
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group_including_children_that_ignore_sigterm() {
    let th = TestHome::new();
    let pids = th.path().join("pids");
    th.routine(
        "stuck",
        &format!(
            "schedule: \"0 * * * *\"\ntimeout: 1s\ncommand: |\n  sh -c 'trap \"\" TERM; echo $$ >> {p}; while :; do sleep 1; done' &\n  sh -c 'trap \"\" TERM; echo $$ >> {p}; while :; do sleep 1; done' &\n  trap '' TERM\n  wait\n",
            p = pids.display()
        ),
    );
    let rec = run(&engine(&th), "stuck").await;
    assert_eq!(rec.status, RunStatus::TimedOut);
    assert_eq!(rec.message.as_deref(), Some("timed out after 1s"));
    let children: Vec<i32> = std::fs::read_to_string(&pids).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(children.len(), 2);
    for pid in children {
        assert!(!pid_alive(pid), "child {pid} survived the timeout");
    }
}

#[tokio::test]
async fn the_kill_grace_ends_when_the_run_is_gone() {
    // A run that stops on SIGTERM ends then — timed out by its wrapper, or cancelled by the
    // engine — not after the whole grace (the engine's own exited wrapper, a zombie until
    // reaped, does not count as part of the run).
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "kill_grace_secs = 20\n").unwrap();
    th.routine("slow", "schedule: \"0 * * * *\"\ntimeout: 1s\ncommand: sleep 30\n");
    th.routine("long", "schedule: \"0 * * * *\"\ncommand: sleep 30\n");
    let engine = engine(&th);
    let started = std::time::Instant::now();
    let rec = run(&engine, "slow").await;
    assert_eq!(rec.status, RunStatus::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(6), "the 20 s grace was not waited out: {:?}", started.elapsed());
    let handle = engine.run_now("long", Trigger::Manual).await.unwrap();
    nightshift_testkit::wait_until_async("long to be running", Duration::from_secs(10), || engine.run(&handle.id).is_ok_and(|r| r.status == RunStatus::Running)).await;
    let started = std::time::Instant::now();
    assert!(engine.cancel(&handle.id).await);
    let rec = tokio::time::timeout(Duration::from_secs(30), handle.wait()).await.unwrap().unwrap();
    assert_eq!(rec.status, RunStatus::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5), "cancel did not wait out the grace: {:?}", started.elapsed());
}

#[tokio::test]
async fn cancel_stops_the_run_and_its_children() {
    let th = TestHome::new();
    let pids = th.path().join("pids");
    th.routine(
        "long",
        &format!("schedule: \"0 * * * *\"\ncommand: \"sh -c 'echo $$ > {}; sleep 300' & wait\"\n", pids.display()),
    );
    let engine = engine(&th);
    let handle = engine.run_now("long", Trigger::Manual).await.unwrap();
    nightshift_testkit::wait_until_async("the run to write its pids", Duration::from_secs(5), || pids.exists()).await;
    assert!(engine.cancel(&handle.id).await);
    let rec = tokio::time::timeout(Duration::from_secs(30), handle.wait()).await.unwrap().unwrap();
    assert_eq!(rec.status, RunStatus::Cancelled);
    let child: i32 = std::fs::read_to_string(&pids).unwrap().trim().parse().unwrap();
    assert!(!pid_alive(child));
    assert!(!engine.cancel(&rec.id).await, "a settled run cannot be cancelled again");
}

#[tokio::test]
async fn a_missing_agent_binary_is_recorded_with_how_to_install_it() {
    let th = TestHome::new();
    th.routine("review", "schedule: \"0 9 * * *\"\nagent: codex\nprompt: hi\n");
    let engine = EngineOptions::for_test(th.path()).env("PATH", th.bin_dir().display().to_string()).open();
    let rec = run(&engine, "review").await;
    assert_eq!((rec.status, rec.reason), (RunStatus::Failed, Some(Reason::SpawnFailed)));
    let msg = rec.message.unwrap();
    assert!(msg.contains("`codex` was not found on PATH"), "{msg}");
    assert!(msg.contains("npm install -g @openai/codex"), "{msg}");
}

#[tokio::test]
async fn a_missing_working_directory_blocks_the_run_saying_which() {
    let th = TestHome::new();
    th.routine("r", "schedule: \"0 9 * * *\"\ncommand: ls\ncwd: /nonexistent/nightshift-test\n");
    let rec = run(&engine(&th), "r").await;
    assert_eq!((rec.status, rec.reason), (RunStatus::Blocked, Some(Reason::NoCwd)));
    assert!(rec.message.unwrap().contains("its folder /nonexistent/nightshift-test (`cwd:`) does not exist"));
}

#[tokio::test]
async fn unknown_and_invalid_routines_are_errors_not_runs() {
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 * * * *\"\ncommand: ls\n");
    th.routine("broken", "schedule: \"0 * * *\"\ncommand: ls\n");
    let engine = engine(&th);
    let err = engine.run_now("helo", Trigger::Manual).await.err().unwrap();
    assert_eq!(err.message, "no routine named \"helo\"; did you mean \"hello\"?");
    let err = engine.run_now("broken", Trigger::Manual).await.err().unwrap();
    assert!(err.message.contains("routines/broken.yaml:1:11: invalid cron expression"), "{}", err.message);
    assert!(engine.store().list_runs(&Default::default()).unwrap().runs.is_empty());
}

struct Panicking;
impl SettleHook for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }
    fn on_settled(&self, _: &RunRecord) -> Result<(), String> {
        panic!("hook bug")
    }
}
struct Hanging(Arc<AtomicUsize>);
impl SettleHook for Hanging {
    fn name(&self) -> &str {
        "hanging"
    }
    fn on_settled(&self, _: &RunRecord) -> Result<(), String> {
        self.0.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_secs(7));
        Ok(())
    }
}
struct Failing(Arc<AtomicUsize>);
impl SettleHook for Failing {
    fn name(&self) -> &str {
        "failing"
    }
    fn on_settled(&self, _: &RunRecord) -> Result<(), String> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err("notification server missing".into())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_that_panic_fail_or_hang_do_not_affect_settling() {
    let th = TestHome::new();
    th.routine("a", "schedule: \"0 * * * *\"\ncommand: echo a\n");
    th.routine("b", "schedule: \"0 * * * *\"\ncommand: echo b\n");
    let engine = engine(&th);
    let hung = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    engine.add_settle_hook(Arc::new(Panicking));
    engine.add_settle_hook(Arc::new(Hanging(hung.clone())));
    engine.add_settle_hook(Arc::new(Failing(failed.clone())));
    let mut events = engine.subscribe();
    let a = engine.run_now("a", Trigger::Manual).await.unwrap();
    let b = engine.run_now("b", Trigger::Manual).await.unwrap();
    // Both records become final while the hanging hook is still sleeping.
    let mut finished = 0;
    while finished < 2 {
        if let EngineEvent::RunFinished { run } = tokio::time::timeout(Duration::from_secs(20), events.recv()).await.unwrap().unwrap() {
            assert_eq!(engine.store().get_run(&run.id).unwrap().status, RunStatus::Completed);
            finished += 1;
        }
    }
    // wait() returns once the hooks' bounded time is up, with the final record.
    assert_eq!(a.wait().await.unwrap().status, RunStatus::Completed);
    assert_eq!(b.wait().await.unwrap().status, RunStatus::Completed);
    assert_eq!(hung.load(Ordering::SeqCst), 2, "each hook called once per run");
    assert_eq!(failed.load(Ordering::SeqCst), 2);
}

/// A fake `claude` that records its prompt and replays a recorded real stream.
fn fake_claude(th: &TestHome) {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.332");
    th.script(
        "claude",
        &format!(
            "printf '%s' \"$2\" > \"$NIGHTSHIFT_RUN_DIR/prompt.txt\"\nf=$(cat {home}/next-fixture)\ncat {fx}/$f.jsonl\nexit $(cat {fx}/$f.exit)",
            home = th.path().display(),
            fx = fixtures.display()
        ),
    );
}

#[tokio::test]
async fn last_report_comes_only_from_completed_runs() {
    let th = TestHome::new();
    fake_claude(&th);
    th.routine("review", "schedule: \"0 9 * * *\"\nagent: claude\nprompt: \"Previously: {last_report}\"\n");
    let engine = engine(&th);
    let next = |f: &str| std::fs::write(th.path().join("next-fixture"), f).unwrap();

    next("success");
    let first = run(&engine, "review").await;
    assert_eq!(first.status, RunStatus::Completed);
    assert_eq!(std::fs::read_to_string(format!("{}/prompt.txt", first.run_dir)).unwrap(), "Previously: (no previous report)");

    next("logged-out");
    let second = run(&engine, "review").await;
    assert_eq!((second.status, second.reason), (RunStatus::Failed, Some(Reason::AuthFailed)));
    assert_eq!(second.message.as_deref(), Some("Not logged in · Please run /login"));
    // Its report explains the verdict (so "open the report" finds something) — and never feeds
    // `{last_report}`.
    let report = std::fs::read_to_string(second.report_path.as_deref().expect("a failed run has a report")).unwrap();
    assert!(report.starts_with("# review · failed · auth_failed\n\nThe agent's own sign-in is logged out or its login was refused.\n\nNot logged in · Please run /login\n\n**What to do:** Sign the agent in (claude /login)"), "{report}");

    next("success");
    let third = run(&engine, "review").await;
    let prompt = std::fs::read_to_string(format!("{}/prompt.txt", third.run_dir)).unwrap();
    assert_eq!(prompt, "Previously: ## PR review\n\nAll 3 open PRs look good. No action needed.");
    assert!(!prompt.contains("login"));
}

#[tokio::test]
async fn claude_runs_get_the_stream_flags_and_a_clean_environment() {
    let th = TestHome::new();
    th.script("claude", "printf '%s\\n' \"$@\" > \"$NIGHTSHIFT_RUN_DIR/args\"; env > \"$NIGHTSHIFT_RUN_DIR/env\"; exit 0");
    th.routine("r", "schedule: \"0 9 * * *\"\nagent: claude\nprompt: hi\nmode: edit\nmodel: opus\nenv: { EXTRA: yes }\n");
    let engine = EngineOptions::for_test(th.path())
        .path_first(&th.bin_dir())
        .env("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-inherited-secret")
        .env("OPENAI_API_KEY", "sk-openai-inherited")
        .env("AWS_SECRET_ACCESS_KEY", "aws-inherited")
        .open();
    let rec = run(&engine, "r").await;
    let args = std::fs::read_to_string(format!("{}/args", rec.run_dir)).unwrap();
    assert_eq!(args, "-p\nhi\n--verbose\n--output-format\nstream-json\n--permission-mode\nacceptEdits\n--model\nopus\n");
    let env = std::fs::read_to_string(format!("{}/env", rec.run_dir)).unwrap();
    // Claude's own token (no Claude account is configured) and nothing else of the engine's secrets.
    assert!(env.contains("CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-inherited-secret"), "{env}");
    assert!(!env.contains("sk-openai-inherited") && !env.contains("aws-inherited"), "{env}");
    assert!(env.contains("EXTRA=yes"));
    // Exit 0 with no result event is not a success.
    assert_eq!((rec.status, rec.reason), (RunStatus::Failed, Some(Reason::AgentError)));
}

/// `[agents.<agent>] model`: the model of that agent's routines that name none; a routine's own
/// `model:` wins.
#[tokio::test]
async fn an_agents_default_model_is_used_where_a_routine_names_none() {
    let th = TestHome::new();
    th.script("claude", "printf '%s\\n' \"$@\" > \"$NIGHTSHIFT_RUN_DIR/args\"; exit 0");
    th.routine("plain", "schedule: \"0 9 * * *\"\nagent: claude\nprompt: hi\n");
    th.routine("own", "schedule: \"0 9 * * *\"\nagent: claude\nprompt: hi\nmodel: opus\n");
    let engine = EngineOptions::for_test(th.path()).settings("[agents.claude]\nmodel = \"sonnet\"\n").path_first(&th.bin_dir()).env("CLAUDE_CODE_OAUTH_TOKEN", "tok").open();
    let args = |rec: RunRecord| std::fs::read_to_string(format!("{}/args", rec.run_dir)).unwrap();
    assert!(args(run(&engine, "plain").await).ends_with("--model\nsonnet\n"));
    assert!(args(run(&engine, "own").await).ends_with("--model\nopus\n"));
}

#[tokio::test]
async fn a_long_stream_settles_from_its_tail() {
    // ~30 MB of agent output before the real result event, written by a fake `claude`.
    let th = TestHome::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.332");
    th.script(
        "claude",
        &format!(
            "head -n 1 {fx}/success.jsonl\nyes '{{\"type\":\"user\",\"message\":{{\"content\":\"'$(printf '%0500d' 0)'\"}}}}' | head -n 60000\ntail -n 1 {fx}/success.jsonl",
            fx = fixtures.display()
        ),
    );
    th.routine("big", "schedule: \"0 9 * * *\"\nagent: claude\nprompt: go\n");
    let rec = run(&engine(&th), "big").await;
    let size = std::fs::metadata(format!("{}/stdout.log", rec.run_dir)).unwrap().len();
    assert!(size > 30_000_000, "{size}");
    assert_eq!(rec.status, RunStatus::Completed, "{rec:?}");
    assert_eq!(std::fs::read_to_string(rec.report_path.unwrap()).unwrap(), "## PR review\n\nAll 3 open PRs look good. No action needed.");
}

#[tokio::test]
async fn a_stored_word_this_version_does_not_know_is_a_clear_error_not_a_default() {
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 * * * *\"\ncommand: echo hi\n");
    let engine = engine(&th);
    let rec = run(&engine, "hello").await;
    let conn = rusqlite::Connection::open(th.path().join("nightshift.db")).unwrap();
    conn.execute("UPDATE runs SET status = 'exploded' WHERE id = ?1", [&rec.id]).unwrap();
    // Never shown as `failed` (the old silent default): the error names the column and the value.
    let err = engine.run(&rec.id).unwrap_err();
    assert!(err.message.contains("unknown status \"exploded\" in the run history"), "{}", err.message);
    let query = nightshift_core::store::RunQuery { routine: None, status: None, cursor: None, limit: 10 };
    assert!(engine.runs(&query).unwrap_err().message.contains("unknown status \"exploded\""));
    conn.execute("UPDATE runs SET status = 'completed', trigger = 'telepathy' WHERE id = ?1", [&rec.id]).unwrap();
    assert!(engine.run(&rec.id).unwrap_err().message.contains("unknown trigger \"telepathy\""));
}

#[tokio::test]
async fn a_run_lives_in_its_routines_time_zone() {
    let th = TestHome::new();
    th.routine("tokyo", "schedule: \"0 9 * * *\"\ntimezone: Asia/Tokyo\ncommand: \"echo $TZ; date +%Z\"\n");
    th.routine("mine", "schedule: \"0 9 * * *\"\ntimezone: Asia/Tokyo\nenv: { TZ: UTC }\ncommand: \"date +%Z\"\n");
    let engine = engine(&th);
    let rec = run(&engine, "tokyo").await;
    assert_eq!(std::fs::read_to_string(rec.report_path.unwrap()).unwrap(), "Asia/Tokyo\nJST");
    let rec = run(&engine, "mine").await;
    assert_eq!(std::fs::read_to_string(rec.report_path.unwrap()).unwrap(), "UTC", "the routine's own env wins");
}

/// Tokens and model travel from the agent's final event into the record and back from the store;
/// a command run has none; a figure the agent left out stays empty.
#[tokio::test]
async fn a_runs_usage_comes_from_the_agents_own_final_event() {
    let th = TestHome::new();
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1","total_cost_usd":0.0123,"usage":{"input_tokens":1200,"output_tokens":340,"cache_read_input_tokens":20},"modelUsage":{"claude-haiku-5":{"outputTokens":40},"claude-sonnet-5-5":{"outputTokens":300}}}"#;
    th.script("claude", &format!("echo '{result}'"));
    th.routine("ask", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: hi\n");
    th.routine("plain", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    let engine = engine(&th);
    let rec = run(&engine, "ask").await;
    assert_eq!(rec.status, RunStatus::Completed, "{:?}", rec.message);
    let u = rec.usage.clone().expect("usage");
    assert_eq!((u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens), (Some(1200), Some(340), Some(20), None));
    assert_eq!(u.model.as_deref(), Some("claude-sonnet-5-5, claude-haiku-5"));
    assert_eq!(engine.run(&rec.id).unwrap().usage, Some(u));
    assert_eq!(run(&engine, "plain").await.usage, None);
}

/// `min_free_memory_mb` above what the machine has: a run waits queued saying so, and starts once
/// the setting allows it. `[agents.claude] max_running = 1`: a second claude run waits, saying
/// why, while commands still start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn low_memory_and_a_per_agent_cap_keep_runs_queued_with_the_reason() {
    let th = TestHome::new();
    th.routine("quick", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    let e = EngineOptions::for_test(th.path()).settings("min_free_memory_mb = 1048576\n").open();
    let handle = e.run_now("quick", Trigger::Manual).await.unwrap();
    let id = handle.id.clone();
    nightshift_testkit::wait_until_async("the reason", nightshift_testkit::secs(5), || {
        e.store().get_run(&id).unwrap().message.is_some_and(|m| m.contains("waiting for memory: ") && m.ends_with("MiB available, `min_free_memory_mb` is 1048576"))
    })
    .await;
    assert_eq!(e.store().get_run(&id).unwrap().status, RunStatus::Queued);
    std::fs::write(th.path().join("nightshift.toml"), "min_free_memory_mb = 0\n").unwrap();
    let done = tokio::time::timeout(Duration::from_secs(10), handle.wait()).await.expect("started once memory allows").unwrap();
    assert_eq!(done.status, RunStatus::Completed);

    let th = TestHome::new();
    th.script("claude", "sleep 3");
    for name in ["a", "b"] {
        th.routine(name, "schedule: \"0 3 * * *\"\nagent: claude\nprompt: hi\n");
    }
    th.routine("cmd", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    let e = EngineOptions::for_test(th.path()).settings("max_parallel = 4\n[agents.claude]\nmax_running = 1\n").path_first(&th.bin_dir()).env("CLAUDE_CODE_OAUTH_TOKEN", "tok-for-tests").open();
    let a = e.run_now("a", Trigger::Manual).await.unwrap();
    let b = e.run_now("b", Trigger::Manual).await.unwrap();
    let cmd = run(&e, "cmd").await;
    assert_eq!(cmd.status, RunStatus::Completed, "commands are not capped");
    let queued = e.store().get_run(&b.id).unwrap();
    assert_eq!((queued.status, queued.message.as_deref()), (RunStatus::Queued, Some("queued (position 1): waiting: 1 claude run is already going (`[agents.claude] max_running = 1`)")));
    assert_eq!(e.store().get_run(&a.id).unwrap().status, RunStatus::Running);
    let (ra, rb) = (a.wait().await.unwrap(), b.wait().await.unwrap());
    assert!(rb.started_at.unwrap() >= ra.finished_at.unwrap(), "one after the other");
}

/// An agent whose binary is missing for a moment (an upgrade replacing it) is tried again like
/// an outage: the run waits in the queue, and completes once the binary is back — one record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_agent_is_missing_for_a_moment_is_tried_again() {
    let th = TestHome::new();
    th.routine("review", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: hi\nretries: 2\nretry_backoff: 1s\n");
    let e = EngineOptions::for_test(th.path()).env("PATH", "/usr/bin:/bin").path_first(&th.bin_dir()).env("CLAUDE_CODE_OAUTH_TOKEN", "tok-for-tests").open();
    let handle = e.run_now("review", Trigger::Manual).await.unwrap();
    let id = handle.id.clone();
    nightshift_testkit::wait_until_async("the run to wait for its next try", nightshift_testkit::secs(10), || {
        let r = e.store().get_run(&id).unwrap();
        r.status == RunStatus::Queued && r.due_at.is_some()
    })
    .await;
    let waiting = e.store().get_run(&id).unwrap();
    assert_eq!(waiting.attempts[0].reason, Some(Reason::SpawnFailed), "{waiting:?}");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.332");
    th.script("claude", &format!("cat {}/success.jsonl", fixtures.display()));
    let done = tokio::time::timeout(Duration::from_secs(20), handle.wait()).await.expect("tried again").unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{done:?}");
    assert_eq!(done.attempts.len(), 2, "{done:?}");
    assert_eq!(e.store().list_runs(&nightshift_core::store::RunQuery { limit: 10, ..Default::default() }).unwrap().runs.len(), 1);
}

/// A scheduled run whose host cannot be reached (the box rebooting at 3 a.m.) waits in the queue
/// and is tried again — not failed at once, not run twice — and completes there once the host is
/// back: one record, two tries, the first `host_unreachable`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_run_is_tried_again_across_an_unreachable_host() {
    let Some(mut server) = nightshift_testkit::SshServer::start() else { return };
    let th = TestHome::new();
    th.routine("nightly", "schedule: \"0 3 * * *\"\nhost: box\ndevices: [laptop]\nretry_backoff: 1s\ncommand: echo made it there\n");
    let settings = format!("device_name = \"laptop\"\nssh_config = \"{}\"\nreuse_ssh_connections = false\n", server.ssh_config().display());
    let e = EngineOptions::for_test(th.path()).settings(&settings).open();
    server.stop();
    let handle = e.run_now("nightly", Trigger::Schedule).await.unwrap();
    let id = handle.id.clone();
    nightshift_testkit::wait_until_async("the run to wait for its next try", nightshift_testkit::secs(20), || {
        let r = e.store().get_run(&id).unwrap();
        r.status == RunStatus::Queued && r.due_at.is_some()
    })
    .await;
    let waiting = e.store().get_run(&id).unwrap();
    assert_eq!(waiting.attempts[0].reason, Some(Reason::HostUnreachable), "{waiting:?}");
    server.resume();
    let done = tokio::time::timeout(Duration::from_secs(30), handle.wait()).await.expect("tried again").unwrap();
    assert_eq!((done.status, done.host.as_deref()), (RunStatus::Completed, Some("box")), "{done:?}");
    assert_eq!(done.attempts.len(), 2, "{done:?}");
    assert_eq!(e.store().list_runs(&nightshift_core::store::RunQuery { limit: 10, ..Default::default() }).unwrap().runs.len(), 1, "one record");
    let log = std::fs::read_to_string(std::path::Path::new(&done.run_dir).join("stdout.log")).unwrap_or_default();
    assert_eq!(log, "made it there\n", "run once, there");
}

/// An agent whose output stops while it still runs — waiting on a question nobody will answer —
/// ends `timed_out · stalled` after its `stall_timeout`, with the last thing it printed; a quiet
/// command is not stalled unless it asks to be watched.
#[tokio::test]
async fn a_stalled_agent_ends_timed_out_with_its_last_output() {
    let th = TestHome::new();
    th.script("claude", "echo '{\"type\":\"system\",\"subtype\":\"init\"}'\necho 'Do you trust the files in this folder? (y/n)' >&2\nexec sleep 60");
    th.routine("asks", "schedule: \"0 9 * * *\"\nagent: claude\nprompt: hi\ntimeout: 5m\nstall_timeout: 1s\n");
    th.routine("quiet", "schedule: \"0 9 * * *\"\ncommand: \"sleep 2; echo done\"\n");
    let engine = EngineOptions::for_test(th.path()).settings("kill_grace_secs = 1\n").path_first(&th.bin_dir()).env("CLAUDE_CODE_OAUTH_TOKEN", "tok-for-tests").open();
    let rec = run(&engine, "asks").await;
    assert_eq!((rec.status, rec.reason), (RunStatus::TimedOut, Some(Reason::Stalled)), "{rec:?}");
    assert_eq!(rec.message.as_deref(), Some("stalled: no output for 1s while it was still running (`stall_timeout`); its last output: Do you trust the files in this folder? (y/n)"));
    let quiet = run(&engine, "quiet").await;
    assert_eq!(quiet.status, RunStatus::Completed, "{quiet:?}");
}

/// `secrets:` — a missing secret blocks the run before anything starts, saying how to set it; one
/// in the engine's environment (`NIGHTSHIFT_SECRET_<NAME>`, the fallback without a keychain)
/// reaches that routine's run only, masked in its log.
#[tokio::test]
async fn a_routines_secrets_reach_its_runs_only_and_a_missing_one_blocks() {
    let th = TestHome::new();
    th.routine("deploy", "schedule: \"0 9 * * *\"\ncommand: 'echo \"key=$DEPLOY_KEY length=${#DEPLOY_KEY}\"'\nsecrets: [DEPLOY_KEY]\n");
    th.routine("other", "schedule: \"0 9 * * *\"\ncommand: 'echo \"key=${DEPLOY_KEY:-none}\"'\n");
    // No keychain in this engine's world: the keychain is asked under a service nobody uses.
    let settings = "keychain_service = \"nightshift-test-secrets-none\"\n";
    let missing = EngineOptions::for_test(th.path()).settings(settings).open();
    let rec = run(&missing, "deploy").await;
    assert_eq!((rec.status, rec.reason), (RunStatus::Blocked, Some(Reason::MissingSecret)), "{rec:?}");
    let message = rec.message.clone().unwrap();
    assert!(message.starts_with("not started: the secret DEPLOY_KEY ") && message.contains("NIGHTSHIFT_SECRET_DEPLOY_KEY"), "{message}");
    drop(missing);

    let value = "deploy-key-0123456789-abcdef";
    let engine = EngineOptions::for_test(th.path()).settings(settings).env("NIGHTSHIFT_SECRET_DEPLOY_KEY", value).open();
    let rec = run(&engine, "deploy").await;
    assert_eq!(rec.status, RunStatus::Completed, "{rec:?}");
    let log = std::fs::read_to_string(format!("{}/stdout.log", rec.run_dir)).unwrap();
    assert!(log.contains(&format!("length={}", value.len())) && !log.contains(value), "masked, and it was there: {log}");
    let other = run(&engine, "other").await;
    assert_eq!(std::fs::read_to_string(format!("{}/stdout.log", other.run_dir)).unwrap(), "key=none\n", "only the routine that names it gets it");
    assert_eq!(engine.secrets().unwrap().iter().map(|s| (s.name.as_str(), s.source)).collect::<Vec<_>>(), [("DEPLOY_KEY", nightshift_core::engine::secrets::SecretSource::Environment)]);
}
