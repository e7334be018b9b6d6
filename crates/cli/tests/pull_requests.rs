//! `push.pr`: a worktree run's branch, pushed to a real bare remote, becomes a pull request on the
//! fake GitHub REST API (GitHub's payload shapes and error answers) — a draft with the run's
//! report as its body (masked, inert, bounded) and a footer naming the run, labelled and with its
//! reviewers asked; the routine's next run continues that pull request's branch and updates it
//! instead of opening a second; once it is merged the next run opens a fresh one; a run that
//! changed nothing opens none; no token is the pull request's failure in words.

mod common;

use common::{ctl, json};
use nightshift_testkit::fake_github::FakeGithub;
use nightshift_testkit::git::{git, init_bare, init_repo};
use nightshift_testkit::TestHome;
use serde_json::Value;
use std::path::PathBuf;

const TOKEN: &str = "ghp_fake0123456789abcdefghij";

struct Scene {
    th: TestHome,
    bare: PathBuf,
    github: FakeGithub,
}

/// A project pushed to a bare remote `origin`, a routine `deps` that writes `stamp.txt` and
/// prints `report` (its report), pushing with `push` — and the fake GitHub as `[github] api_url`.
async fn scene(push: &str, command: &str) -> Scene {
    let th = TestHome::new();
    let project = th.path().join("project");
    let bare = th.path().join("origin.git");
    init_repo(&project, &[("README.md", "# app\n")]);
    init_bare(&bare);
    git(&project, &["remote", "add", "origin", bare.to_str().unwrap()]);
    git(&project, &["push", "-q", "origin", "main"]);
    let github = FakeGithub::start(TOKEN).await;
    std::fs::write(th.path().join("nightshift.toml"), format!("[github]\napi_url = \"{}\"\n", github.url())).unwrap();
    th.routine("deps", &format!("schedule: \"0 2 * * 1\"\nworkspace: worktree\ncwd: {}\npush: {push}\ncommand: {command}\n", project.display()));
    Scene { th, bare, github }
}

/// `run deps --wait --json` with the GitHub token in the environment (or none): the record after
/// its push and pull request.
fn run(s: &Scene, token: Option<&str>) -> Value {
    let mut cmd = ctl(&s.th);
    cmd.args(["run", "deps", "--wait", "--json"]);
    if let Some(t) = token {
        cmd.env("GH_TOKEN", t);
    }
    let out = cmd.output().unwrap();
    assert!(!common::stderr(&out).contains("error:"), "{}", common::stderr(&out));
    json(&out)
}

const PUSH: &str = "{remote: origin, pr: draft, base: main, repo: acme/app, labels: [nightshift], reviewers: [octocat]}";
const BUMP: &str = "\"date +%s%N > stamp.txt; echo '## Weekly bump'; echo 'Bumped 3 dependencies.'\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_open_pull_request_per_routine_updated_by_its_next_run_and_a_fresh_one_after_the_merge() {
    let s = scene(PUSH, BUMP).await;
    let first = run(&s, Some(TOKEN));
    let pr = &first["pull_request"];
    assert_eq!((pr["state"].as_str(), pr["number"].as_u64(), pr["url"].as_str()), (Some("opened"), Some(1), Some("https://github.com/acme/app/pull/1")), "{first:#}");
    let pulls = s.github.pulls("acme/app");
    assert_eq!(pulls.len(), 1);
    let branch = first["changes"]["branch"].as_str().unwrap().to_string();
    let opened = &pulls[0];
    assert_eq!((opened["draft"].as_bool(), opened["head"]["ref"].as_str(), opened["base"]["ref"].as_str(), opened["title"].as_str()), (Some(true), Some(branch.as_str()), Some("main"), Some("Weekly bump")), "{opened:#}");
    let body = opened["body"].as_str().unwrap();
    assert!(body.starts_with("## Weekly bump\nBumped 3 dependencies."), "{body}");
    assert!(body.contains(&format!("Opened by Nightshift · routine `deps` · run `{}` · command", first["id"].as_str().unwrap())), "{body}");
    assert_eq!((opened["labels"][0]["name"].as_str(), opened["requested_reviewers"][0]["login"].as_str()), (Some("nightshift"), Some("octocat")), "{opened:#}");
    let shown = common::stdout(&ctl(&s.th).args(["show", first["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.contains("pull request opened #1 https://github.com/acme/app/pull/1"), "{shown}");

    // While it is open: the next run continues its branch, pushes onto it, updates it.
    let second = run(&s, Some(TOKEN));
    assert_eq!((second["pull_request"]["state"].as_str(), second["pull_request"]["number"].as_u64()), (Some("updated"), Some(1)), "{second:#}");
    assert_eq!(second["changes"]["push"]["onto"].as_str(), Some(branch.as_str()), "{second:#}");
    assert_eq!(s.github.pulls("acme/app").len(), 1, "no second pull request");
    assert_eq!(git(&s.bare, &["rev-list", "--count", &format!("main..{branch}")]).trim(), "2", "both runs' commits on the pull request's branch");
    assert!(s.github.pulls("acme/app")[0]["body"].as_str().unwrap().contains(second["id"].as_str().unwrap()), "its body is the newer run's");

    // Merged by hand: the next run starts afresh and opens a new one on its own branch.
    s.github.merge_pull("acme/app", 1);
    let third = run(&s, Some(TOKEN));
    assert_eq!((third["pull_request"]["state"].as_str(), third["pull_request"]["number"].as_u64()), (Some("opened"), Some(2)), "{third:#}");
    assert_eq!(third["changes"]["push"]["onto"], Value::Null, "{third:#}");
    assert_eq!(s.github.pulls("acme/app")[1]["head"]["ref"], third["changes"]["branch"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_changes_opens_none_and_says_so() {
    let s = scene(PUSH, "\"echo nothing to do\"").await;
    let rec = run(&s, Some(TOKEN));
    let shown = json(&ctl(&s.th).args(["show", rec["id"].as_str().unwrap(), "--json"]).output().unwrap());
    assert_eq!(shown["pull_request"]["state"], "none", "{shown:#}");
    assert!(s.github.pulls("acme/app").is_empty());
    let words = common::stdout(&ctl(&s.th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(words.contains("pull request none: the run changed nothing"), "{words}");
}

/// A hostile report — tags, a key-shaped string, the token itself, 5 MB — is an inert, masked,
/// bounded body; without a token the pull request fails saying where one comes from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_report_is_an_inert_bounded_masked_body_and_no_token_says_where_one_comes_from() {
    // 5 MB of output, then the hostile lines, then 60 KB more: the report (the end of the output,
    // at most 64 KiB) starts with the hostile lines and is longer than a body may be.
    let hostile = format!("\"date +%s%N > stamp.txt; head -c 5000000 /dev/zero | tr '\\\\0' x; echo; echo '<script>alert(1)</script> <img src=x onerror=alert(2)>'; echo 'key sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345 token {TOKEN}'; for i in $(seq 20); do head -c 3000 /dev/zero | tr '\\\\0' y; echo; done\"");
    let s = scene("{remote: origin, pr: ready, base: main, repo: acme/app}", &hostile).await;
    let rec = run(&s, Some(TOKEN));
    assert_eq!(rec["pull_request"]["state"], "opened", "{rec:#}");
    let body = s.github.pulls("acme/app")[0]["body"].as_str().unwrap().to_string();
    assert!(!body.contains("<script") && !body.contains("<img") && body.contains("&lt;script>alert(1)&lt;/script>"), "tags shown, never rendered: {}", &body[..300.min(body.len())]);
    assert!(!body.contains("sk-ant-api03-abcdef") && !body.contains(TOKEN), "secrets masked");
    assert!(body.chars().count() < 61_000 && body.contains("… (cut here: the whole report is in the run's folder"), "bounded: {} characters", body.chars().count());
    assert_eq!(s.github.pulls("acme/app")[0]["draft"], false, "pr: ready");

    let s = scene(PUSH, BUMP).await;
    let rec = run(&s, None);
    let pr = &rec["pull_request"];
    assert_eq!(pr["state"], "failed", "{rec:#}");
    assert!(pr["error"].as_str().unwrap().contains("no GitHub token") && pr["error"].as_str().unwrap().contains("nightshiftctl github set-token"), "{pr:#}");
    assert_eq!(rec["changes"]["push"]["state"], "pushed", "the branch is pushed all the same");
}

#[test]
fn push_as_a_mapping_is_checked_where_it_is_written() {
    let th = TestHome::new();
    let project = th.path().join("project");
    init_repo(&project, &[("README.md", "# app\n")]);
    let routine = |name: &str, push: &str| th.routine(name, &format!("schedule: \"0 2 * * 1\"\nworkspace: worktree\ncwd: {}\npush: {push}\ncommand: \"true\"\n", project.display()));
    routine("no-remote", "{pr: draft}");
    routine("bad-pr", "{remote: origin, pr: maybe}");
    routine("bad-repo", "{remote: origin, pr: draft, repo: acme}");
    routine("bad-key", "{remote: origin, pull: draft}");
    let said = common::stderr(&ctl(&th).args(["routines", "validate"]).output().unwrap());
    assert!(said.contains("no-remote.yaml:4:7: `push` needs `remote`"), "{said}");
    assert!(said.contains("bad-pr.yaml:4:28: unknown `push.pr: maybe` (expected draft, ready or off)"), "{said}");
    assert_eq!(said.matches("no-remote.yaml").count(), 1, "said once: {said}");
    assert!(said.contains("bad-repo.yaml:4:41: `push.repo: acme` must be owner/name"), "{said}");
    assert!(said.contains("bad-key.yaml:4:24: unknown key `push.pull`"), "{said}");
}
