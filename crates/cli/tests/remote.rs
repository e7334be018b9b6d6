//! Routines placed on another machine (`host:`), through the real `nightshiftctl` and the real
//! OpenSSH client against a real `sshd` on loopback (started by the test, with its own keys, an
//! `ssh_config` alias `box` and a separate remote home). Drills: success, the limit and cancel
//! kept on the remote side, a cut connection, kill -9 of the engine, an unreachable host, the
//! token never resting there, the real Claude CLI on the "remote" side, and the machine's sandbox
//! built there.

mod common;

use common::{ctl, ctl_bus, home_with_accounts, json, keychain_available, runs, set_token, start_daemon, stderr, tokio_ctl};
use nightshift_testkit::home::require_claude_cli;
use nightshift_testkit::{processes_holding, FakeAnthropic, Reply, SshServer, TestHome};
use std::time::Duration;

/// Point the home at the test's sshd (its own `ssh_config`), keeping whatever `toml` says.
fn use_server(th: &TestHome, server: &SshServer, toml: &str) {
    let path = th.path().join("nightshift.toml");
    let before = std::fs::read_to_string(&path).unwrap_or_default();
    let grace = if before.contains("kill_grace_secs") { "" } else { "kill_grace_secs = 1\n" };
    std::fs::write(&path, format!("ssh_config = \"{}\"\n{grace}{before}{toml}", server.ssh_config().display())).unwrap();
}

fn remote_runs(server: &SshServer) -> Vec<String> {
    std::fs::read_dir(server.remote_home().join(".nightshift/runs")).map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default()
}

fn log_of(rec: &serde_json::Value) -> String {
    std::fs::read_to_string(std::path::Path::new(rec["run_dir"].as_str().unwrap()).join("stdout.log")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_on_a_host_is_a_run_here_with_its_output_and_no_remote_leftovers() {
    let Some(server) = SshServer::start() else { return };
    let th = TestHome::new();
    use_server(&th, &server, "");
    std::fs::create_dir_all(server.remote_home().join("src/app")).unwrap();
    th.routine_sent_from_here(
        "nightly",
        "schedule: \"0 2 * * *\"\nhostStrategy: host\nhost: box\nremoteCwd: ~/src/app\nenv: { GREETING: hello }\n\
         command: 'echo \"$GREETING from $(pwd) as $NIGHTSHIFT_ROUTINE\"; echo warn >&2; exit 0'\n",
    );
    let (rec, code) = common::run_wait(&th, "nightly").await;
    assert_eq!((code, rec["status"].as_str(), rec["host"].as_str()), (0, Some("completed"), Some("box")), "{rec:#}");
    assert_eq!(log_of(&rec), format!("hello from {} as nightly\n", server.remote_home().join("src/app").display()));
    assert_eq!(rec["exit_code"], 0);
    assert!(remote_runs(&server).is_empty(), "the settled run's remote files are removed: {:?}", remote_runs(&server));
    // The host's health: seen just now, no error.
    let hosts = json(&ctl(&th).args(["hosts", "list", "--json"]).output().unwrap());
    assert_eq!((hosts[0]["host"].as_str(), hosts[0]["last_error"].as_str()), (Some("box"), None), "{hosts:#}");
    assert!(hosts[0]["last_seen"].is_string(), "{hosts:#}");
    assert_eq!(hosts[0]["routines"], serde_json::json!(["nightly"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_and_cancel_end_the_whole_remote_process_group() {
    let Some(server) = SshServer::start() else { return };
    let th = TestHome::new();
    use_server(&th, &server, "");
    // Sleeps this test alone runs (so no other process can be mistaken for them).
    let (first, second) = (format!("sleep {}", 4000 + std::process::id() % 4000), format!("sleep {}", 8001 + std::process::id() % 4000));
    th.routine_sent_from_here("slow", &format!("schedule: \"0 2 * * *\"\nhost: box\ntimeout: 2s\ncommand: '{first} & {first}; wait'\n"));
    let (rec, _) = common::run_wait(&th, "slow").await;
    assert_eq!(rec["status"], "timed_out", "{rec:#}");
    nightshift_testkit::wait_until("the remote group to be gone after its limit", Duration::from_secs(10), || processes_holding(&first).is_empty());

    th.routine_sent_from_here("long", &format!("schedule: \"0 2 * * *\"\nhost: box\ntimeout: 5m\ncommand: 'echo started; {second} & {second}; wait'\n"));
    let waiting = tokio_ctl(&th).args(["run", "long", "--wait", "--json"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    nightshift_testkit::wait_until("the run to be going on the host", Duration::from_secs(20), || processes_holding(&format!("{second} ")).len() >= 2);
    // Ctrl-C, as a user at the terminal cancels it.
    unsafe { libc::kill(waiting.id().unwrap() as i32, libc::SIGINT) };
    let out = waiting.wait_with_output().await.unwrap();
    let rec = json(&out);
    assert_eq!(rec["status"], "cancelled", "{rec:#}\n{}", stderr(&out));
    assert_eq!(log_of(&rec), "started\n");
    nightshift_testkit::wait_until("the cancelled remote group to be gone", Duration::from_secs(10), || processes_holding(&second).is_empty());
    assert!(remote_runs(&server).is_empty(), "{:?}", remote_runs(&server));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_connection_and_a_killed_engine_lose_nothing_and_settle_the_run_once() {
    let Some(server) = SshServer::start() else { return };
    let th = TestHome::new();
    use_server(&th, &server, "");
    // 40 lines over ~4 s: long enough to cut its connection and kill its engine mid-run.
    th.routine_sent_from_here("lines", "schedule: \"0 2 * * *\"\nhost: box\ncommand: 'i=0; while [ $i -lt 40 ]; do echo line $i; i=$((i + 1)); sleep 0.1; done'\n");
    let daemon = start_daemon(&th);
    let out = ctl(&th).args(["run", "lines"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // The CLI that started it returned: the daemon re-attaches and follows it — through an ssh
    // client here (the `tail` on the host side shows up first, and is not the one to cut).
    let ssh_clients = || -> Vec<i32> { processes_holding("tail -c +").into_iter().filter(|(_, argv)| argv.starts_with("ssh ")).map(|(pid, _)| pid as i32).collect() };
    nightshift_testkit::wait_until("the daemon to follow the run (an ssh client bringing its output home)", Duration::from_secs(15), || !ssh_clients().is_empty());
    // The ssh client bringing its output home is killed: the daemon reconnects from the last byte.
    let clients = ssh_clients();
    for pid in &clients {
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    nightshift_testkit::wait_until("the daemon to reconnect (a new ssh client bringing the output home)", Duration::from_secs(15), || {
        processes_holding("tail -c +").into_iter().any(|(pid, argv)| argv.starts_with("ssh ") && !clients.contains(&(pid as i32)))
    });
    // Then the daemon itself dies without a word; the run goes on there.
    daemon.kill9();
    let second = start_daemon(&th);
    nightshift_testkit::wait_until("the next daemon to settle the run", Duration::from_secs(40), || runs(&th).iter().any(|r| r["id"] == id.as_str() && r["status"] != "running"));
    let all = runs(&th);
    assert_eq!(all.len(), 1, "one record: {all:#?}");
    let rec = &all[0];
    assert_eq!((rec["status"].as_str(), rec["exit_code"].as_i64()), (Some("completed"), Some(0)), "{rec:#}\n{}", second.output());
    let want: String = (0..40).map(|i| format!("line {i}\n")).collect();
    assert_eq!(log_of(rec), want, "the whole log, every line once, in order");
    nightshift_testkit::wait_until("its remote files to be removed", Duration::from_secs(10), || remote_runs(&server).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_host_blocks_the_run_in_words_and_the_next_run_goes_once_it_is_back() {
    let Some(mut server) = SshServer::start() else { return };
    let th = TestHome::new();
    use_server(&th, &server, "");
    th.routine_sent_from_here("nightly", "schedule: \"0 2 * * *\"\nhosts: [box]\ncommand: echo back\n");
    server.stop();
    let (rec, code) = common::run_wait(&th, "nightly").await;
    assert_ne!(code, 0);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str(), rec["host"].as_str()), (Some("blocked"), Some("host_unreachable"), Some("box")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("Connection refused"), "{rec:#}");
    let shown = ctl(&th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap();
    assert!(common::stdout(&shown).contains("`ssh <host> true` works from here without a prompt"), "{}", common::stdout(&shown));
    let check = ctl(&th).args(["hosts", "check", "box"]).output().unwrap();
    assert_eq!(check.status.code(), Some(1), "{}", common::stdout(&check));
    assert!(common::stdout(&check).contains("box: unreachable"), "{}", common::stdout(&check));

    server.resume();
    let (rec, code) = common::run_wait(&th, "nightly").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    assert_eq!(log_of(&rec), "back\n");
    let check = ctl(&th).args(["hosts", "check", "box"]).output().unwrap();
    assert!(check.status.success() && common::stdout(&check).contains("box: reachable"), "{}", common::stdout(&check));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_agent_on_the_host_fails_the_run_with_the_fix() {
    let Some(server) = SshServer::start() else { return };
    let th = TestHome::new();
    use_server(&th, &server, "[hosts.box]\nagent_path = \"/nowhere/claude\"\n");
    th.routine_sent_from_here("triage", "schedule: \"0 2 * * *\"\nhost: box\nagent: claude\nprompt: Triage\n");
    let (rec, _) = common::run_wait(&th, "triage").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("blocked"), Some("spawn_failed")), "{rec:#}");
    assert_eq!(rec["message"], "not started: `/nowhere/claude` was not found on box's PATH for SSH commands");
    let shown = common::stdout(&ctl(&th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.contains("set its path there as `[hosts.box] agent_path`"), "{shown}");
    let check = ctl(&th).args(["hosts", "check"]).output().unwrap();
    assert_eq!(check.status.code(), Some(1));
    assert_eq!(common::stdout(&check).trim(), "box: reachable, but /nowhere/claude not found there — install it, or set `[hosts.box] agent_path` in nightshift.toml");
}

/// The real Claude Code CLI on the "remote" side, against the fake API on loopback, with the
/// account's token from the OS keychain: it arrives in the run's environment there and rests in
/// no remote file and no process's argv.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_claude_cli_runs_on_the_host_with_the_token_only_in_its_environment() {
    if require_claude_cli().is_none() || !keychain_available() {
        return;
    }
    let Some(server) = SshServer::start() else { return };
    let fake = FakeAnthropic::start(None).await;
    let token = "sk-ant-oat01-remote-drill-token-0042";
    fake.set(token, Reply::Success { text: "## Remote triage\n\nAll quiet.".into() });
    let (th, _service) = home_with_accounts(&["me@home.dev"]);
    let claude = nightshift_testkit::home::workspace_root().join("tests/agents-cli/node_modules/.bin/claude");
    use_server(&th, &server, &format!("[hosts.box]\nagent_path = \"{}\"\n", claude.display()));
    let stored = set_token(&th, "me@home.dev", token);
    assert!(stored.status.success(), "{}", stderr(&stored));
    th.routine_sent_from_here(
        "triage",
        &format!("schedule: \"0 2 * * *\"\nhost: box\nagent: claude\nmode: plan\naccount: me@home.dev\nprompt: Triage\ntimeout: 2m\nenv:\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n", fake.url()),
    );
    let waiting = tokio::process::Command::from(ctl_bus(&th)).args(["run", "triage", "--wait", "--json"]).output();
    let watching = async {
        // While it runs: no process anywhere carries the token in its argv.
        let mut seen = Vec::new();
        for _ in 0..100 {
            seen.extend(processes_holding(token));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        seen
    };
    let (out, seen) = tokio::join!(waiting, watching);
    let out = out.unwrap();
    assert!(seen.is_empty(), "the token was in a process's argv: {seen:?}");
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["host"].as_str(), rec["account"].as_str()), (Some("completed"), Some("box"), Some("me@home.dev")), "{rec:#}\n{}", stderr(&out));
    assert!(rec["cost_usd"].as_f64().unwrap() > 0.0, "{rec:#}");
    assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), "## Remote triage\n\nAll quiet.");
    // In the machine's sandbox there (an agent routine's default where it can be built), the
    // fake API reached through the proxy on the host.
    common::assert_sandboxed(&rec);
    let rest = std::process::Command::new("grep").args(["-r", "-l", token]).arg(server.remote_home()).output().unwrap();
    assert!(rest.stdout.is_empty(), "the token rests in a remote file: {}", String::from_utf8_lossy(&rest.stdout));
    let here = std::process::Command::new("grep").args(["-r", "-l", token]).arg(th.path()).output().unwrap();
    assert!(here.stdout.is_empty(), "the token rests in a file of the home: {}", String::from_utf8_lossy(&here.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_several_hosts_an_unreachable_one_is_skipped_and_remembered() {
    let Some(server) = SshServer::start() else { return };
    let th = TestHome::new();
    // `dead`: a host nobody answers for (port 1 on loopback refuses at once); `box`: the server.
    let config = th.path().join("ssh_config");
    std::fs::write(&config, format!("Include {}\nHost dead\n  HostName 127.0.0.1\n  Port 1\n", server.ssh_config().display())).unwrap();
    std::fs::write(th.path().join("nightshift.toml"), format!("ssh_config = \"{}\"\n", config.display())).unwrap();
    th.routine_sent_from_here("nightly", "schedule: \"0 2 * * *\"\nhosts: [dead, box]\ncommand: echo from box\n");
    let (rec, code) = common::run_wait(&th, "nightly").await;
    assert_eq!((code, rec["status"].as_str(), rec["host"].as_str()), (0, Some("completed"), Some("box")), "{rec:#}");
    assert_eq!(log_of(&rec), "from box\n");
    let hosts = json(&ctl(&th).args(["hosts", "list", "--json"]).output().unwrap());
    let by = |name: &str| hosts.as_array().unwrap().iter().find(|h| h["host"] == name).cloned().unwrap();
    assert!(by("dead")["last_error"].as_str().unwrap().contains("Connection refused") && by("dead")["last_seen"].is_null(), "{hosts:#}");
    assert!(by("box")["last_error"].is_null() && by("box")["last_seen"].is_string(), "{hosts:#}");
    let routines = common::stdout(&ctl(&th).args(["routines", "list"]).output().unwrap());
    assert!(routines.lines().any(|l| l.starts_with("nightly") && l.contains("command on dead|box")), "{routines}");
    let listed = common::stdout(&ctl(&th).args(["hosts", "list"]).output().unwrap());
    assert!(listed.lines().any(|l| l.starts_with("dead") && l.contains("never") && l.contains("Connection refused") && l.contains("nightly")), "{listed}");
}

/// `hostStrategy: fleet`: any machine nightshift.toml lists — the one with the fewest runs going
/// first. With a run going on `box`, the next fleet run tries `dead` first (no run there), finds it
/// unreachable, and goes to `box`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_run_goes_to_the_machine_with_the_fewest_runs_that_answers() {
    let Some(server) = SshServer::start() else { return };
    let th = TestHome::new();
    let config = th.path().join("ssh_config");
    std::fs::write(&config, format!("Include {}\nHost dead\n  HostName 127.0.0.1\n  Port 1\n", server.ssh_config().display())).unwrap();
    std::fs::write(th.path().join("nightshift.toml"), format!("ssh_config = \"{}\"\nkill_grace_secs = 1\nmax_parallel = 4\ndevice_name = \"laptop\"\n[hosts.box]\n[hosts.dead]\n", config.display())).unwrap();
    let sleep = format!("sleep {}", 12001 + std::process::id() % 4000);
    th.routine("long", &format!("schedule: \"0 2 * * *\"\nhosts: [box]\ndevices: [laptop]\ntimeout: 5m\ncommand: '{sleep}'\n"));
    th.routine("fleet", "schedule: \"0 2 * * *\"\nhostStrategy: fleet\ndevices: [laptop]\ncommand: echo from the fleet\n");
    // Nobody tried `dead` yet: listed in name order, `box` would come first.
    let waiting = tokio_ctl(&th).args(["run", "long", "--wait", "--json"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    nightshift_testkit::wait_until("the long run to be going on box", Duration::from_secs(20), || !processes_holding(&sleep).is_empty());
    let (rec, code) = common::run_wait(&th, "fleet").await;
    assert_eq!((code, rec["status"].as_str(), rec["host"].as_str()), (0, Some("completed"), Some("box")), "{rec:#}");
    assert_eq!(log_of(&rec), "from the fleet\n");
    let hosts = json(&ctl(&th).args(["hosts", "list", "--json"]).output().unwrap());
    let dead = hosts.as_array().unwrap().iter().find(|h| h["host"] == "dead").cloned().unwrap();
    assert!(dead["last_error"].as_str().is_some_and(|e| e.contains("Connection refused")), "dead was tried first (fewest runs): {hosts:#}");
    unsafe { libc::kill(waiting.id().unwrap() as i32, libc::SIGINT) };
    let out = waiting.wait_with_output().await.unwrap();
    assert_eq!(json(&out)["status"], "cancelled");
}

/// A routine's secret reaches its run on a host over the SSH channel (as the account's token
/// does) — in its environment there, never in argv or a file on either side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routine_secret_reaches_its_run_on_a_host() {
    let Some(server) = SshServer::start() else { return };
    let th = TestHome::new();
    use_server(&th, &server, "keychain_service = \"nightshift-test-remote-secret-none\"\ndevice_name = \"laptop\"\n");
    th.routine("deploy", "schedule: \"0 2 * * *\"\nhost: box\ndevices: [laptop]\nsecrets: [DEPLOY_KEY]\ncommand: 'echo \"length=${#DEPLOY_KEY}\"'\n");
    let value = "remote-deploy-key-0123456789";
    let out = tokio_ctl(&th).args(["run", "deploy", "--wait", "--json"]).env("NIGHTSHIFT_SECRET_DEPLOY_KEY", value).output().await.unwrap();
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["host"].as_str()), (Some("completed"), Some("box")), "{rec:#}\n{}", stderr(&out));
    assert_eq!(log_of(&rec), format!("length={}\n", value.len()));
    assert!(common::files_containing(th.path(), value).is_empty() && common::files_containing(&server.remote_home(), value).is_empty(), "the secret rests nowhere");
}

/// The machine's sandbox on an SSH host, with the real parts there: real `sshd`, real bubblewrap,
/// the Nightshift helper shipped to the host over the channel (once), the proxy there. A routine
/// that asks for it keeps to its folder on the host: its work there goes through; a write outside,
/// the host's SSH key and a loopback server not allowed are refused; the refused connection comes
/// home as the run's denial; `show` says it was sandboxed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_run_on_a_host_keeps_to_its_folder_there() {
    let Some(server) = SshServer::start() else { return };
    let th = TestHome::new();
    use_server(&th, &server, "");
    let remote = server.remote_home();
    std::fs::create_dir_all(remote.join("src/app")).unwrap();
    std::fs::create_dir_all(remote.join(".ssh")).unwrap();
    std::fs::write(remote.join(".ssh/id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\nthe-hosts-key\n").unwrap();
    let outside_dir = common::outside_dir();
    let outside = outside_dir.path().join("outside.txt");
    let (port, reached) = common::counting_server();
    th.routine_sent_from_here(
        "nightly",
        &format!(
            "schedule: \"0 2 * * *\"\nhost: box\nremoteCwd: ~/src/app\nsandbox: on\n\
             command: 'echo done > here.txt; echo changed > {} || echo outside-refused; cat ~/.ssh/id_ed25519 || echo key-refused; curl -fsS -m 10 http://127.0.0.1:{port}/ || echo net-refused'\n",
            outside.display()
        ),
    );
    let (rec, _) = common::run_wait(&th, "nightly").await;
    assert_eq!((rec["status"].as_str(), rec["host"].as_str()), (Some("completed"), Some("box")), "{rec:#}");
    let log = log_of(&rec);
    let err = std::fs::read_to_string(std::path::Path::new(rec["run_dir"].as_str().unwrap()).join("stderr.log")).unwrap_or_default();
    assert!(log.contains("outside-refused") && log.contains("key-refused") && log.contains("net-refused"), "{log}\n{err}");
    assert!(err.contains("Read-only file system") && err.contains("Permission denied"), "{err}");
    assert!(!log.contains("the-hosts-key"), "{log}");
    assert_eq!(std::fs::read_to_string(remote.join("src/app/here.txt")).unwrap(), "done\n", "its folder there is its own");
    assert!(!outside.exists(), "a write outside its folders went through");
    assert_eq!(reached.load(std::sync::atomic::Ordering::SeqCst), 0, "the refused host was never reached");
    let refused: Vec<&serde_json::Value> = rec["denials"].as_array().unwrap().iter().filter(|d| d["tool"] == "Network").collect();
    assert_eq!(refused.len(), 1, "{rec:#}");
    assert_eq!(refused[0]["input"], format!("127.0.0.1:{port}"), "{rec:#}");
    let shown = common::stdout(&ctl(&th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.contains("sandbox      on"), "{shown}");
    // The helper went to the host once, and stays for the next run (no second copy).
    let shipped = || std::fs::read_dir(remote.join(".nightshift/bin")).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect::<Vec<_>>();
    let first = shipped();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].starts_with("nightshift-helper-"), "{first:?}");
    let (again, _) = common::run_wait(&th, "nightly").await;
    assert_eq!(again["status"], "completed", "{again:#}");
    assert_eq!(shipped(), first);
    assert!(remote_runs(&server).is_empty(), "{:?}", remote_runs(&server));
}

/// A host that cannot build the sandbox (here: no bubblewrap on the PATH an SSH command gets
/// there) blocks a routine that asks for one — `blocked · no_sandbox`, the host and the fix in
/// words — and an agent routine that does not ask runs there without one, `show` saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_without_bubblewrap_blocks_a_routine_that_asks_and_says_why_otherwise() {
    let Some(mut server) = SshServer::start() else { return };
    let th = TestHome::new();
    // The host's PATH: every program of the machine's but bubblewrap (and a stand-in Claude).
    let bin = server.remote_home().join("bin");
    use_server(&th, &server, &format!("[hosts.box]\nagent_path = \"{}\"\n", bin.join("claude-fake").display()));
    std::fs::create_dir_all(&bin).unwrap();
    for dir in ["/usr/local/bin", "/usr/bin", "/bin"] {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let name = entry.file_name();
            if name != "bwrap" && !bin.join(&name).exists() {
                std::os::unix::fs::symlink(entry.path(), bin.join(&name)).unwrap();
            }
        }
    }
    server.set_remote_path(&bin);
    th.routine_sent_from_here("strict", "schedule: \"0 2 * * *\"\nhost: box\nsandbox: on\ncommand: 'echo ran'\n");
    let (rec, _) = common::run_wait(&th, "strict").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("blocked"), Some("no_sandbox")), "{rec:#}");
    let message = rec["message"].as_str().unwrap();
    assert!(message.contains("none can be built on box") && message.contains("apt install bubblewrap"), "{message}");
    // An agent routine that does not ask runs there without one, and says why.
    let fake_agent = bin.join("claude-fake");
    std::fs::write(&fake_agent, "#!/bin/sh\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\",\"session_id\":\"s-1\"}'\n").unwrap();
    std::fs::set_permissions(&fake_agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    th.routine_sent_from_here("lenient", "schedule: \"0 2 * * *\"\nhost: box\nagent: claude\nprompt: Look\n");
    let (rec, _) = common::run_wait(&th, "lenient").await;
    assert_eq!(rec["status"], "completed", "{rec:#}");
    let shown = common::stdout(&ctl(&th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.contains("sandbox      off:") && shown.contains("apt install bubblewrap"), "{shown}");
}

/// Retries never repeat work: the real Claude Code CLI on the host ran a command, then the API
/// failed (529, its own retries off). Its session is on the host, and Nightshift continues a
/// session only here, so the run is not started again: `failed · interrupted`, saying how many
/// changing tool calls it had run and what to do; the command ran once; one try.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_on_a_host_that_changed_things_is_not_started_again() {
    if require_claude_cli().is_none() {
        return;
    }
    let Some(server) = SshServer::start() else { return };
    let fake = FakeAnthropic::start(None).await;
    let counter = server.remote_home().join("commands-run");
    let call = serde_json::json!({"command": format!("echo ran >> {}", counter.display()), "description": "record a run"});
    fake.set("tok-host-work", Reply::DropsAfterTool { tool: "Bash".into(), input: call, text: "done".into() });
    let th = TestHome::new();
    let claude = nightshift_testkit::home::workspace_root().join("tests/agents-cli/node_modules/.bin/claude");
    use_server(&th, &server, &format!("[hosts.box]\nagent_path = \"{}\"\n", claude.display()));
    th.routine_sent_from_here(
        "bump",
        &format!(
            "schedule: \"0 2 * * *\"\nhost: box\nagent: claude\nmode: edit\nallow: {{tools: [\"Bash(echo *)\"]}}\nprompt: Bump\nretries: 1\nretry_backoff: 1s\ntimeout: 2m\nenv:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_OAUTH_TOKEN: tok-host-work\n",
            fake.url()
        ),
    );
    let (rec, _) = common::run_wait(&th, "bump").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("interrupted")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("not retried: it had already run 1 tool call that change"), "{rec:#}");
    assert_eq!(std::fs::read_to_string(&counter).unwrap(), "ran\n", "the command ran once");
    assert!(rec["attempts"].as_array().map_or(0, Vec::len) <= 1, "no second start: {rec:#}");
}
