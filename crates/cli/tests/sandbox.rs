//! The sandbox with the real parts: real bubblewrap, the real Claude Code CLI against the fake
//! Anthropic API on loopback (reached through the sandbox's own proxy), real files and a real
//! loopback server the run may not reach. What the agent tries is a script in its folder, run
//! through Bash (allowed by the routine; as root Claude Code refuses `skip`), so Claude Code's own
//! path checks never see the paths and the sandbox is what refuses.

mod common;

use common::{ctl, json, stdout, tokio_ctl};
use nightshift_testkit::home::require_claude_cli;
use nightshift_testkit::{FakeAnthropic, Reply, TestHome};
use std::path::Path;
use std::sync::atomic::Ordering;

const REPORT: &str = "## Sandbox\n\nTried it all; only the folder's work went through.";
/// The run's account's token, from the engine's environment (as on a headless machine).
const TOKEN_VAR: &str = "CLAUDE_CODE_OAUTH_TOKEN_MINE_AT_EXAMPLE_DOT_COM";
const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-the-users-key\n";

/// Every file under `dir` with its bytes, for a before/after comparison.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = common::files_under(dir).into_iter().map(|p| (p.display().to_string(), std::fs::read(&p).unwrap_or_default())).collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_claude_run_keeps_to_its_folder_and_its_api_and_every_refusal_is_recorded() {
    if require_claude_cli().is_none() {
        return;
    }
    let th = TestHome::new();
    let home = th.user_home();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), KEY).unwrap();
    // This run's account and another one, each with its own folder under the home.
    let (mine, other) = (home.join(".claude-mine"), home.join(".claude-other"));
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join(".credentials.json"), "{\"claudeAiOauth\":{\"accessToken\":\"sk-ant-oat01-other-account\"}}").unwrap();
    let account = |email: &str, dir: &Path| format!("[[accounts]]\nagent = \"claude\"\nemail = \"{email}\"\nconfig_dir = \"{}\"\n", dir.display());
    std::fs::write(th.path().join("nightshift.toml"), account("mine@example.com", &mine) + &account("other@example.com", &other)).unwrap();
    let project = th.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let (port, reached) = common::counting_server();
    let db = th.path().join("nightshift.db");
    std::fs::write(
        project.join("probe.sh"),
        format!(
            "case $1 in\n  key) cat \"$HOME/.ssh/id_ed25519\" ;;\n  outside) echo changed > \"$HOME/outside.txt\" ;;\n  account) cat {}/.credentials.json ;;\n  db) head -c 16 {} ;;\n  bus) ls \"$XDG_RUNTIME_DIR\" ;;\n  net) curl -fsS -m 10 http://127.0.0.1:{port}/ ;;\n  edit) echo done > result.txt ;;\nesac\n",
            other.display(),
            db.display()
        ),
    )
    .unwrap();
    let fake = FakeAnthropic::start(None).await;
    let calls: Vec<(String, serde_json::Value)> = ["key", "outside", "account", "db", "bus", "net", "edit"]
        .iter()
        .map(|what| ("Bash".to_string(), serde_json::json!({"command": format!("sh probe.sh {what}"), "description": format!("try {what}")})))
        .collect();
    fake.set("tok-sandbox", Reply::ToolCalls { calls, text: REPORT.into() });
    let routine = |extra: &str| {
        th.routine(
            "boxed",
            &format!(
                "schedule: \"0 2 * * *\"\nagent: claude\naccount: mine@example.com\nprompt: Try everything\nmode: edit\nallow: {{tools: [Bash]}}\n{extra}timeout: 2m\ncwd: {}\nenv:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n",
                project.display(),
                fake.url()
            ),
        );
    };
    routine("");
    // The database exists before the run (the first command makes it).
    let listed = ctl(&th).args(["routines", "list"]).output().unwrap();
    assert!(db.exists(), "{}", String::from_utf8_lossy(&listed.stderr));
    let outside_before = snapshot(&home.join(".ssh")).into_iter().chain(snapshot(&other)).collect::<Vec<_>>();

    // The user's session runtime folder (the session bus's and the keyring's sockets).
    let runtime = th.path().join("run-user");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::write(runtime.join("bus"), "").unwrap();
    let run = || async { json(&tokio_ctl(&th).env(TOKEN_VAR, "tok-sandbox").env("XDG_RUNTIME_DIR", &runtime).args(["run", "boxed", "--wait", "--json"]).output().await.unwrap()) };
    let rec = run().await;
    assert_eq!((rec["status"].as_str(), rec["account"].as_str()), (Some("completed"), Some("mine@example.com")), "{rec:#}");
    let run_dir = Path::new(rec["run_dir"].as_str().unwrap());
    assert!(run_dir.join("sandbox/plan.json").is_file(), "the run was sandboxed: {rec:#}");
    // Each attempt is a recorded denial; the allowed work is not.
    let denials: Vec<String> = rec["denials"].as_array().unwrap().iter().map(|d| format!("{}({})", d["tool"].as_str().unwrap(), d["input"].as_str().unwrap())).collect();
    for what in ["key", "outside", "account", "db", "bus"] {
        assert!(denials.contains(&format!("Bash(sh probe.sh {what})")), "{what} refused and recorded: {denials:?}\n{}", std::fs::read_to_string(run_dir.join("sandbox/plan.json")).unwrap());
    }
    assert!(denials.contains(&format!("Network(127.0.0.1:{port})")), "{denials:?}");
    assert!(!denials.iter().any(|d| d.contains("edit")), "{denials:?}");
    assert_eq!(reached.load(Ordering::SeqCst), 0, "the refused host was never reached");
    // The work in its folder happened; the API was reached (through the proxy) for every turn.
    assert_eq!(std::fs::read_to_string(project.join("result.txt")).unwrap(), "done\n");
    assert!(fake.requests().len() >= 8, "one request per turn: {}", fake.requests().len());
    // Nothing outside its folder changed, and no secret reached its output.
    assert!(!home.join("outside.txt").exists());
    assert_eq!(snapshot(&home.join(".ssh")).into_iter().chain(snapshot(&other)).collect::<Vec<_>>(), outside_before);
    let log = std::fs::read_to_string(run_dir.join("stdout.log")).unwrap();
    assert!(!log.contains("the-users-key") && !log.contains("other-account") && !log.contains("SQLite format"), "{log}");
    assert!(log.contains("Permission denied") && log.contains("Read-only file system"), "{log}");
    let shown = stdout(&ctl(&th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.lines().any(|l| l.starts_with("sandbox      on")), "{shown}");
    assert!(shown.lines().any(|l| l == format!("refused      Network(127.0.0.1:{port})")), "{shown}");

    // `on_denial: fail`: what the sandbox refused fails the run.
    routine("on_denial: fail\n");
    let rec = run().await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("permission_denied")), "{rec:#}");

    // `sandbox: off` opts out: shown in the list, and the run reads what it asked for.
    routine("sandbox: off\n");
    let listed = stdout(&ctl(&th).args(["routines", "list"]).output().unwrap());
    assert!(listed.lines().any(|l| l.starts_with("boxed") && l.contains("sandbox off")), "{listed}");
    let rec = run().await;
    let run_dir = Path::new(rec["run_dir"].as_str().unwrap());
    assert!(!run_dir.join("sandbox/plan.json").exists(), "{rec:#}");
    assert!(std::fs::read_to_string(run_dir.join("stdout.log")).unwrap().contains("the-users-key"), "unsandboxed, the key was read");
    assert_eq!(reached.load(Ordering::SeqCst), 1, "unsandboxed, the host was reached");
}

/// A routine that asks for the sandbox where none can be built is blocked before anything runs,
/// with the fix in words — never run without it. (Here bubblewrap is kept off the engine's PATH.)
#[test]
fn asking_for_a_sandbox_that_cannot_be_built_blocks_the_run() {
    let th = TestHome::new();
    let marker = th.path().join("ran");
    th.routine("boxed", &format!("schedule: \"0 2 * * *\"\ncommand: touch {}\nsandbox: on\n", marker.display()));
    let out = ctl(&th).env("PATH", th.bin_dir()).args(["run", "boxed", "--wait", "--json"]).output().unwrap();
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("blocked"), Some("no_sandbox")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("bubblewrap (`bwrap`) is not installed; install it (Debian and Ubuntu: `apt install bubblewrap`)"), "{rec:#}");
    assert!(!marker.exists());

    // A command routine that does not ask runs without one, and says so.
    th.routine("plain", &format!("schedule: \"0 2 * * *\"\ncommand: touch {}\n", marker.display()));
    let rec = json(&ctl(&th).args(["run", "plain", "--wait", "--json"]).output().unwrap());
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert!(marker.exists());
    let shown = stdout(&ctl(&th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.lines().any(|l| l == "sandbox      off: `sandbox: off` (a command routine's default)"), "{shown}");
}

/// What a routine names for the sandbox can never widen it: `/`, `..`, a link to `~/.ssh`, a NUL —
/// each a located error, and the routine does not run.
#[test]
fn hostile_sandbox_paths_are_located_errors() {
    let th = TestHome::new();
    let home = th.user_home();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
    let file = th.routine(
        "hostile",
        "schedule: \"0 2 * * *\"\nagent: claude\nprompt: x\nallow:\n  dirs: [/, keys, \"work/../.ssh\", \"a\\0b\"]\n  hosts: [\"https://evil.example/x\"]\nsandbox_hide: [/]\nsandbox: maybe\n",
    );
    let out = ctl(&th).args(["routines", "validate"]).output().unwrap();
    let said = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{said}");
    let at = |line: usize, col: usize, words: &str| {
        let want = format!("routines/{}:{line}:{col}:", file.file_name().unwrap().to_str().unwrap());
        assert!(said.lines().any(|l| l.contains(&want) && l.contains(words)), "{want} … {words} in:\n{said}");
    };
    at(5, 10, "`/` is the whole machine");
    at(5, 13, "is a link (to ");
    at(5, 19, "climbs out with `..`");
    at(5, 35, "NUL");
    at(6, 11, "is not a host name");
    at(7, 16, "`/` is the whole machine");
    at(8, 10, "unknown sandbox \"maybe\"");
}

/// `[defaults] sandbox` in nightshift.toml: a routine that does not say takes it (`off` is shown in
/// the list like a routine's own); a word other than on or off is located in the settings file.
#[test]
fn the_default_comes_from_the_settings() {
    let th = TestHome::new();
    th.routine("tidy", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Tidy\n");
    th.routine("boxed", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Tidy\nsandbox: on\n");
    std::fs::write(th.path().join("nightshift.toml"), "[defaults]\nsandbox = \"off\"\n").unwrap();
    let listed = stdout(&ctl(&th).args(["routines", "list"]).output().unwrap());
    assert!(listed.lines().any(|l| l.starts_with("tidy") && l.contains("claude · sandbox off")), "{listed}");
    assert!(listed.lines().any(|l| l.starts_with("boxed") && !l.contains("sandbox off")), "its own word wins: {listed}");
    std::fs::write(th.path().join("nightshift.toml"), "[defaults]\nsandbox = \"maybe\"\n").unwrap();
    let out = ctl(&th).args(["routines", "list"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("nightshift.toml:2:11:") && said.contains("maybe"), "{said}");
}

/// A GitHub Actions host's runs are on GitHub's runners, which Nightshift does not sandbox:
/// `sandbox: on` there is an error located at the field; `[defaults] sandbox = "on"` reaches a
/// routine on an SSH host (built there) but not one on an Actions host.
#[test]
fn sandbox_on_cannot_be_kept_on_a_github_actions_host() {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), "[defaults]\nsandbox = \"on\"\n[hosts.ci]\ngithub = \"acme/app\"\n").unwrap();
    th.routine_sent_from_here("onci", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Tidy\nhost: ci\nsandbox: on\n");
    th.routine_sent_from_here("defaulted", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Tidy\nhost: ci\n");
    th.routine_sent_from_here("onbox", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Tidy\nhost: box\nsandbox: on\n");
    let out = ctl(&th).args(["routines", "validate"]).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("routines/onci.yaml:5:10: `sandbox: on` cannot be kept on `ci`, a GitHub Actions host"), "{said}");
    assert!(said.contains("2 valid, 1 invalid"), "{said}");
    assert!(!said.contains("defaulted.yaml") && !said.contains("onbox.yaml"), "{said}");
}

/// A sandboxed run in a worktree of its own commits into the repository the worktree belongs to
/// (its `.git` folders are writable), and nothing else of the checkout changes.
#[test]
fn a_sandboxed_worktree_run_commits_to_its_branch() {
    let th = TestHome::new();
    let repo = th.path().join("repo");
    nightshift_testkit::git::init_repo(&repo, &[("README.md", "hello\n")]);
    th.routine(
        "wt",
        &format!("schedule: \"0 3 * * *\"\ncommand: \"echo x > x.txt && git add x.txt && git -c user.email=n@example.com -c user.name=n commit -qm 'from the sandbox' && touch {}/escaped\"\nsandbox: on\ncwd: {}\nworkspace: worktree\n", repo.display(), repo.display()),
    );
    let rec = json(&ctl(&th).args(["run", "wt", "--wait", "--json"]).output().unwrap());
    // Its last step writes into the checkout itself, outside the worktree: the checkout (under
    // `/tmp` here) is not in the sandbox, so the file lands in the run's own `/tmp`, gone with it.
    assert_eq!(rec["status"], "completed", "{rec:#}");
    let run_dir = Path::new(rec["run_dir"].as_str().unwrap());
    assert!(run_dir.join("sandbox/plan.json").is_file(), "{rec:#}");
    let branch = format!("nightshift/wt/{}", rec["id"].as_str().unwrap());
    let log = nightshift_testkit::git::git(&repo, &["log", "--format=%s", &branch]);
    assert!(log.starts_with("from the sandbox\n"), "the commit is on its branch: {log}");
    assert!(!repo.join("escaped").exists() && !repo.join("x.txt").exists(), "the checkout is untouched");
}
