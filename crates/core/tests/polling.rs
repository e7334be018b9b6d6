//! The GitHub poller in-process (`Engine::poll_github`), against the testkit's loopback fake of
//! GitHub's REST API: what the window is told when polling cannot go on, and the first answer
//! setting a repository's place. (The daemon's polling end to end: crates/cli/tests/hooks.rs.)

use nightshift_core::EngineOptions;
use nightshift_testkit::{FakeGithub, TestHome};

const TOKEN: &str = "github_pat_core_tests_0000000000000000";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_the_window_is_told_and_with_one_the_first_answer_only_sets_the_place() {
    let fake = FakeGithub::start(TOKEN).await;
    fake.add_event("acme/app", "PullRequestEvent", "octocat", serde_json::json!({"action": "opened", "number": 1}), chrono::Utc::now());
    let th = TestHome::new();
    th.routine("review", "trigger: {type: github_event, event: pull_request, repo: acme/app}\ncommand: 'true'\n");
    let settings = format!("[github]\npoll = \"2m\"\napi_url = \"{}\"\n", fake.url());

    let engine = EngineOptions::for_test(th.path()).settings(&settings).env("PATH", "/nonexistent").open();
    let pass = engine.poll_github().await;
    assert_eq!(pass.asked, 0);
    let said = engine.problems().join("\n");
    assert!(said.contains("not polling GitHub (`[github] poll`): no GitHub token") && said.contains("nightshiftctl github set-token"), "{said}");
    assert!(fake.asks().is_empty(), "nothing asked without a token");

    let engine = EngineOptions::for_test(th.path()).settings(&settings).env("GITHUB_TOKEN", TOKEN).open();
    let pass = engine.poll_github().await;
    assert_eq!((pass.asked, pass.started, pass.taken), (1, 1, 0), "{pass:?}");
    assert!(!engine.problems().join("\n").contains("GitHub"), "{:?}", engine.problems());
    assert!(engine.runs(&Default::default()).unwrap().runs.is_empty(), "history is not fired");
    let again = engine.poll_github().await;
    assert_eq!((again.unchanged, fake.asks().last().map(|a| a.status)), (1, Some(304)));
}

/// The token is read once and kept for the next passes (no keychain call every `poll`) — until
/// GitHub refuses it: then the next pass reads it again (a `github set-token` in between wins).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_kept_between_passes_and_read_again_once_refused() {
    use nightshift_core::engine::github_poll::Poller;
    let fake = FakeGithub::start(TOKEN).await;
    fake.add_repo("acme/app");
    let th = TestHome::new();
    th.routine("review", "trigger: {type: github_event, event: pull_request, repo: acme/app}\ncommand: 'true'\n");
    let settings = format!("[github]\npoll = \"2m\"\napi_url = \"{}\"\n", fake.url());
    // Three engines on one home, each with its own environment; one poller carried across them.
    let wrong = EngineOptions::for_test(th.path()).settings(&settings).env("GITHUB_TOKEN", "github_pat_wrong_one").open();
    let right = EngineOptions::for_test(th.path()).settings(&settings).env("GITHUB_TOKEN", TOKEN).open();
    let none = EngineOptions::for_test(th.path()).settings(&settings).env("PATH", "/nonexistent").open();
    let mut poller = Poller::default();

    let refused = poller.pass(&wrong).await;
    assert!(refused.problems[0].1.contains("HTTP 401") && refused.problems[0].1.contains("github set-token"), "{refused:?}");
    let read_again = poller.pass(&right).await;
    assert_eq!((read_again.asked, read_again.problems.len()), (1, 0), "the refused token was not kept: {read_again:?}");
    let kept = poller.pass(&none).await;
    assert_eq!((kept.asked, kept.unchanged, kept.problems.len()), (1, 1, 0), "the token read before is kept: {kept:?}");
    assert_eq!(fake.asks().iter().map(|a| a.status).collect::<Vec<_>>(), vec![401, 200, 304]);
}

/// With no token in the keychain or the environment, the GitHub CLI's own login is asked last
/// (`gh auth token` on the engine's PATH): one that prints a token signs polling in; one that is
/// signed out (exit 1) leaves polling off, saying where a token comes from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_github_clis_own_login_is_asked_last() {
    use std::os::unix::fs::PermissionsExt;
    let fake = FakeGithub::start(TOKEN).await;
    fake.add_repo("acme/app");
    let th = TestHome::new();
    th.routine("review", "trigger: {type: github_event, event: pull_request, repo: acme/app}\ncommand: 'true'\n");
    let settings = format!("[github]\npoll = \"2m\"\napi_url = \"{}\"\n", fake.url());
    let gh = |name: &str, script: &str| {
        let dir = th.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("gh"), format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(dir.join("gh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        dir.display().to_string()
    };
    let signed_out = gh("signed-out", "echo 'You are not logged into any GitHub hosts. To log in, run: gh auth login' >&2; exit 1");
    let engine = EngineOptions::for_test(th.path()).settings(&settings).env("PATH", &signed_out).open();
    let pass = engine.poll_github().await;
    assert_eq!(pass.asked, 0, "{pass:?}");
    assert!(pass.problems[0].1.contains("no GitHub token") && pass.problems[0].1.contains("gh auth login"), "{pass:?}");

    let signed_in = gh("signed-in", &format!("[ \"$1 $2\" = 'auth token' ] && echo {TOKEN}"));
    let engine = EngineOptions::for_test(th.path()).settings(&settings).env("PATH", &signed_in).open();
    let pass = engine.poll_github().await;
    assert_eq!((pass.asked, pass.started, pass.problems.len()), (1, 1, 0), "{pass:?}");
    assert_eq!(fake.asks().iter().map(|a| a.status).collect::<Vec<_>>(), vec![200], "asked once, with the token gh printed");
}
