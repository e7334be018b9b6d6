//! `push.pr`: a worktree run's branch, pushed to a real bare remote, becomes a pull request on the
//! fake GitHub REST API (GitHub's payload shapes and error answers) — a draft with the run's
//! report as its body (masked, inert, bounded) and a footer naming the run, labelled and with its
//! reviewers asked; the routine's next run continues that pull request's branch and updates it
//! instead of opening a second; once it is merged the next run opens a fresh one; a run that
//! changed nothing opens none; no token is the pull request's failure in words.
//!
//! `on_review: rerun`: a review of that pull request — delivered signed to the daemon's receiver,
//! and the same review seen by polling GitHub's Events API — brings the routine back once, on the
//! pull request's branch with the review's comments; it answers in the pull request; the loop
//! ends after `review_rounds` or a round that changed nothing (said in the pull request and on a
//! real notification server); Nightshift's own reviews and strangers' are never answered.

mod common;

use common::{ctl, free_port, github_delivery, json, start_daemon_with, Daemon};
use nightshift_testkit::dbus::NotificationBus;
use nightshift_testkit::fake_github::TOKEN_USER;
use nightshift_testkit::webhook_receiver::{Answer, WebhookReceiver};
use nightshift_testkit::{secs, wait_until};
use serde_json::json;
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
    scene_doing(push, &format!("command: {command}\n")).await
}

/// [`scene`] whose routine does `action` (its `command:` or `agent:` lines).
async fn scene_doing(push: &str, action: &str) -> Scene {
    let th = TestHome::new();
    let project = th.path().join("project");
    let bare = th.path().join("origin.git");
    init_repo(&project, &[("README.md", "# app\n")]);
    init_bare(&bare);
    git(&project, &["remote", "add", "origin", bare.to_str().unwrap()]);
    git(&project, &["push", "-q", "origin", "main"]);
    let github = FakeGithub::start(TOKEN).await;
    std::fs::write(th.path().join("nightshift.toml"), format!("[github]\napi_url = \"{}\"\n", github.url())).unwrap();
    th.routine("deps", &format!("schedule: \"0 2 * * 1\"\nworkspace: worktree\ncwd: {}\npush: {push}\n{action}", project.display()));
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

const HOOK_SECRET: &str = "gh-webhook-secret-for-the-review-tests";

/// [`scene`] whose routine answers reviews (`review`: the routine's `on_review` lines), with a
/// daemon that takes deliveries on a port of its own, has the GitHub token, and notifies a real
/// notification server; octocat is a collaborator of acme/app. The routine's first run has opened
/// pull request #1.
async fn review_scene(review: &str, action: &str) -> (Scene, u16, Daemon, NotificationBus, WebhookReceiver) {
    let s = scene_doing(PUSH, action).await;
    let port = free_port();
    let hook = WebhookReceiver::start(vec![Answer::Accept], None).await;
    let file = s.th.path().join("routines/deps.yaml");
    std::fs::write(&file, format!("{}{review}", std::fs::read_to_string(&file).unwrap())).unwrap();
    let settings = s.th.path().join("nightshift.toml");
    std::fs::write(&settings, format!("kill_grace_secs = 1\n[hooks]\nlisten = \"127.0.0.1:{port}\"\n[[webhooks]]\nname = \"team\"\nurl = \"{}\"\non = \"all\"\n{}", hook.url(), std::fs::read_to_string(&settings).unwrap())).unwrap();
    s.github.add_collaborator("acme/app", "octocat");
    s.github.add_repo("acme/app");
    let first = run(&s, Some(TOKEN));
    assert_eq!(first["pull_request"]["state"], "opened", "{first:#}");
    let bus = NotificationBus::start(s.th.path(), "record");
    let d = start_daemon_with(&s.th, &["--notify"], &[("GH_TOKEN", TOKEN), ("NIGHTSHIFT_HOOK_SECRET_GITHUB", HOOK_SECRET), ("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str())]);
    d.wait_scheduling();
    (s, port, d, bus, hook)
}

/// The `pull_request` posts webhook `team` took for run `id` (its JSON bodies).
fn pull_request_posts(hook: &WebhookReceiver, id: &str) -> Vec<Value> {
    hook.received().iter().filter_map(|r| serde_json::from_str::<Value>(&r.body).ok()).filter(|b| b["event"] == "pull_request" && b["run_id"] == id).collect()
}

/// Deliver `payload` as review delivery `id`; what became of it for `deps`.
fn deliver_review(port: u16, id: &str, payload: &Value) -> Value {
    let (status, answer) = github_delivery(port, HOOK_SECRET, "pull_request_review", id, payload);
    assert_eq!(status, 202, "{answer:#}");
    answer["verdicts"].as_array().and_then(|v| v.iter().find(|x| x["routine"] == "deps")).cloned().unwrap_or(Value::Null)
}

/// The runs of `deps` a review fired, oldest first.
fn review_runs(s: &Scene) -> Vec<Value> {
    let mut all: Vec<Value> = common::runs(&s.th).into_iter().filter(|r| r["routine"] == "deps" && r["trigger"] == "event").collect();
    all.reverse();
    all
}

/// The record of run `id` once its pull request step is done (its answer posted, or not).
fn answered(s: &Scene, id: &str) -> Value {
    let mut rec = Value::Null;
    wait_until(&format!("run {id} to answer its review"), secs(60), || {
        rec = json(&ctl(&s.th).args(["show", id, "--json"]).output().unwrap());
        rec["pull_request"]["state"].as_str().is_some_and(|st| st != "pending")
    });
    rec
}

/// Writes a new stamp (a change), and says the review's comments it was given in its report.
const ANSWERS: &str = "\"date +%s%N > stamp.txt; echo '## Weekly bump'; if [ -n \\\"$NIGHTSHIFT_EVENT_PATH\\\" ]; then grep -o 'Say why[^\\\"]*' \\\"$NIGHTSHIFT_EVENT_PATH\\\"; fi\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_brings_the_routine_back_once_on_its_branch_and_the_rounds_are_bounded() {
    let (s, port, _d, bus, hook) = review_scene("on_review: rerun\nreview_rounds: 2\n", &format!("command: {ANSWERS}\n")).await;
    let branch = s.github.pulls("acme/app")[0]["head"]["ref"].as_str().unwrap().to_string();
    // The webhook hears of the pull request the first run opened, with its address.
    let opener = common::runs(&s.th).into_iter().find(|r| r["routine"] == "deps").unwrap()["id"].as_str().unwrap().to_string();
    wait_until("the webhook's post of the opened pull request", secs(20), || !pull_request_posts(&hook, &opener).is_empty());
    let post = &pull_request_posts(&hook, &opener)[0];
    assert_eq!(post["excerpt"], "pull request #1 opened: https://github.com/acme/app/pull/1", "{post:#}");
    // Polling's place is set (its first answer fires nothing): the review is new to it.
    let polled = ctl(&s.th).args(["github", "poll"]).env("GH_TOKEN", TOKEN).output().unwrap();
    assert!(polled.status.success(), "{}", common::stderr(&polled));

    // A review with two comments, delivered signed: one run, on the pull request's branch.
    let review = s.github.submit_review("acme/app", 1, "octocat", "CHANGES_REQUESTED", "Two things.", &[("stamp.txt", 1, "Say why the stamp moves."), ("README.md", 1, "Typo in the title.")]);
    let fired = deliver_review(port, "review-1", &review);
    assert_eq!(fired["outcome"], "fired", "{fired:#}");
    let run_id = fired["run_id"].as_str().unwrap().to_string();
    // The same review, seen by polling (the Events API's trimmed payload): the same run.
    let trimmed = json!({"action": "submitted", "review": review["review"], "pull_request": {"number": 1, "url": "https://api.github.com/repos/acme/app/pulls/1"}});
    s.github.add_event("acme/app", "PullRequestReviewEvent", "octocat", trimmed, chrono::Utc::now());
    let polled = ctl(&s.th).args(["github", "poll"]).env("GH_TOKEN", TOKEN).output().unwrap();
    assert!(polled.status.success(), "{}", common::stderr(&polled));
    let list = common::stdout(&ctl(&s.th).args(["hooks", "list"]).output().unwrap());
    assert!(list.lines().any(|l| l.contains("(polled)") && l.contains(&format!("deps: duplicate of {run_id}"))), "the polled sighting was taken, as the same review: {list}");
    let rec = answered(&s, &run_id);
    assert_eq!(review_runs(&s).len(), 1, "one run for one review, delivered and polled");
    assert_eq!((rec["status"].as_str(), rec["pull_request"]["state"].as_str(), rec["pull_request"]["number"].as_u64()), (Some("completed"), Some("answered"), Some(1)), "{rec:#}");
    assert_eq!(rec["changes"]["push"]["onto"].as_str(), Some(branch.as_str()), "pushed onto the pull request's branch: {rec:#}");
    assert_eq!(git(&s.bare, &["rev-list", "--count", &format!("main..{branch}")]).trim(), "2", "one new commit on the pull request's branch");
    assert_eq!(s.github.pulls("acme/app").len(), 1, "no second pull request");
    let report = std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap();
    assert!(report.contains("Say why the stamp moves."), "the review's comments were in NIGHTSHIFT_EVENT_PATH: {report}");
    let comments = s.github.comments("acme/app", 1);
    assert_eq!(comments.len(), 1, "one answer: {comments:#?}");
    let said = comments[0]["body"].as_str().unwrap();
    assert!(said.starts_with("**Nightshift** answered @octocat's review (round 1 of 2) with 1 commit pushed to `"), "{said}");
    assert!(said.contains("Say why the stamp moves.") && said.contains(&format!("run `{run_id}`")), "{said}");
    // The webhook hears of the answer with its address (the run's finish post went out before it).
    wait_until("the webhook's pull_request post", secs(20), || !pull_request_posts(&hook, &run_id).is_empty());
    let post = &pull_request_posts(&hook, &run_id)[0];
    assert_eq!((post["pull_request"]["state"].as_str(), post["pull_request"]["number"].as_u64()), (Some("answered"), Some(1)), "{post:#}");
    assert!(post["excerpt"].as_str().unwrap().starts_with("review answered in pull request #1: https://github.com/acme/app/pull/1#issuecomment-"), "{post:#}");
    let shown = common::stdout(&ctl(&s.th).args(["show", &run_id]).output().unwrap());
    assert!(shown.contains("pull request answered the review in #1 https://github.com/acme/app/pull/1#issuecomment-"), "{shown}");

    // Nightshift's own answer, delivered back as GitHub sends it, fires nothing.
    let own_comment = json!({"action": "created", "issue": {"number": 1, "title": "Weekly bump", "pull_request": {"url": "https://api.github.com/repos/acme/app/pulls/1"}},
        "comment": comments[0].clone(), "repository": {"full_name": "acme/app"}, "sender": {"login": TOKEN_USER}});
    let (status, answer) = github_delivery(port, HOOK_SECRET, "issue_comment", "own-comment", &own_comment);
    assert_eq!((status, answer["verdicts"].as_array().map(Vec::len)), (202, Some(0)), "{answer:#}");

    // Nightshift's own review, and a stranger's: never answered.
    let own = s.github.submit_review("acme/app", 1, TOKEN_USER, "COMMENTED", "", &[("stamp.txt", 1, "Say why again.")]);
    let verdict = deliver_review(port, "review-own", &own);
    assert_eq!(verdict["outcome"], "filtered", "{verdict:#}");
    assert!(verdict["why"].as_str().unwrap().contains("Nightshift's own GitHub token (@nightshift-bot)"), "{verdict:#}");
    let stranger = s.github.submit_review("acme/app", 1, "mallory", "CHANGES_REQUESTED", "Add my miner.", &[]);
    let verdict = deliver_review(port, "review-stranger", &stranger);
    assert_eq!(verdict["why"], "@mallory is not a collaborator of acme/app (`review_from: anyone` answers anyone's reviews)", "{verdict:#}");
    // An approval asks for nothing.
    let approval = s.github.submit_review("acme/app", 1, "octocat", "APPROVED", "", &[]);
    assert_eq!(deliver_review(port, "review-approved", &approval)["outcome"], "filtered");

    // The second round is the last: it says so.
    let second = s.github.submit_review("acme/app", 1, "octocat", "COMMENTED", "", &[("stamp.txt", 1, "Say why, once more.")]);
    let fired = deliver_review(port, "review-2", &second);
    assert_eq!(fired["outcome"], "fired", "{fired:#}");
    let rec = answered(&s, fired["run_id"].as_str().unwrap());
    assert_eq!(rec["pull_request"]["state"], "answered", "{rec:#}");
    let comments = s.github.comments("acme/app", 1);
    assert_eq!(comments.len(), 2);
    let said = comments[1]["body"].as_str().unwrap();
    assert!(said.contains("(round 2 of 2)") && said.contains("This was the last review round (`review_rounds: 2`)"), "{said}");
    wait_until("the desktop to hear the loop ended", secs(20), || bus.notifications().iter().any(|n| n["summary"] == "✋ deps: no more review rounds on acme/app#1"));

    // A third review: nothing runs, nothing more is said in the pull request.
    let third = s.github.submit_review("acme/app", 1, "octocat", "CHANGES_REQUESTED", "And another thing.", &[]);
    let verdict = deliver_review(port, "review-3", &third);
    assert_eq!((verdict["outcome"].as_str(), verdict["why"].as_str()), (Some("ended"), Some("its 2 review rounds are spent (`review_rounds: 2`)")), "{verdict:#}");
    assert_eq!(review_runs(&s).len(), 2);
    assert_eq!(s.github.comments("acme/app", 1).len(), 2);
    assert_eq!(git(&s.bare, &["rev-list", "--count", &format!("main..{branch}")]).trim(), "3", "one commit per answered round");
}

/// Two reviews delivered at the same moment with one round left: one run, the other told the
/// rounds are spent (the count is taken in the claim's own transaction).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_reviews_at_once_take_the_last_round_once() {
    let (s, port, _d, _bus, _hook) = review_scene("on_review: rerun\nreview_rounds: 1\n", &format!("command: {ANSWERS}\n")).await;
    let first = s.github.submit_review("acme/app", 1, "octocat", "CHANGES_REQUESTED", "First thing.", &[]);
    let second = s.github.submit_review("acme/app", 1, "octocat", "CHANGES_REQUESTED", "Second thing.", &[]);
    let (a, b) = (std::thread::spawn(move || deliver_review(port, "review-a", &first)), std::thread::spawn(move || deliver_review(port, "review-b", &second)));
    let mut outcomes: Vec<String> = [a.join().unwrap(), b.join().unwrap()].iter().map(|v| v["outcome"].as_str().unwrap_or("?").to_string()).collect();
    outcomes.sort();
    assert_eq!(outcomes, ["ended", "fired"]);
    assert_eq!(review_runs(&s).len(), 1);
}

/// Changes nothing when a review brings it back (`NIGHTSHIFT_EVENT_PATH` set).
const ANSWERS_NOTHING: &str = "\"if [ -n \\\"$NIGHTSHIFT_EVENT_PATH\\\" ]; then echo 'Nothing to change: the comment is a question.'; else date +%s%N > stamp.txt; echo '## Weekly bump'; fi\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_that_changes_nothing_ends_the_loop_and_says_so() {
    let (s, port, _d, bus, _hook) = review_scene("on_review: rerun\nreview_from: anyone\n", &format!("command: {ANSWERS_NOTHING}\n")).await;
    // `review_from: anyone`: a stranger's review is answered.
    let review = s.github.submit_review("acme/app", 1, "mallory", "COMMENTED", "Why the stamp?", &[]);
    let fired = deliver_review(port, "review-1", &review);
    assert_eq!(fired["outcome"], "fired", "{fired:#}");
    let rec = answered(&s, fired["run_id"].as_str().unwrap());
    assert_eq!(rec["pull_request"]["state"], "unchanged", "{rec:#}");
    let said = s.github.comments("acme/app", 1)[0]["body"].as_str().unwrap().to_string();
    assert!(said.starts_with("**Nightshift** made no change for @mallory's review (round 1 of 3):") && said.contains("Nothing to change: the comment is a question.") && said.contains("A round that changes nothing ends the loop"), "{said}");
    wait_until("the desktop to hear the loop ended", secs(20), || bus.notifications().iter().any(|n| n["summary"] == "✋ deps: no more review rounds on acme/app#1"));
    let again = s.github.submit_review("acme/app", 1, "octocat", "CHANGES_REQUESTED", "Please change it.", &[]);
    let verdict = deliver_review(port, "review-2", &again);
    assert_eq!(verdict["outcome"], "ended", "{verdict:#}");
    assert!(verdict["why"].as_str().unwrap().contains("after a round that changed nothing"), "{verdict:#}");
    assert_eq!(review_runs(&s).len(), 1);
}

/// The real Claude Code CLI answers a review: its prompt is the task, then what it answers and
/// the review's words and line comments, quoted; its commit lands on the pull request's branch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_claude_cli_is_told_the_review_it_answers() {
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    let fake = nightshift_testkit::FakeAnthropic::start(None).await;
    let call = json!({"command": "date +%s%N >> stamp.txt", "description": "move the stamp"});
    fake.set("tok-review-rounds", nightshift_testkit::Reply::ToolCall { tool: "Bash".into(), input: call, text: "## Stamp moved\n\nThe stamp moves so the bump is visible.".into() });
    let agent = format!(
        "agent: claude\nmode: edit\nallow: {{tools: [Bash]}}\nprompt: Move the stamp.\ntimeout: 2m\nenv:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_OAUTH_TOKEN: tok-review-rounds\n",
        fake.url()
    );
    let (s, port, _d, _bus, _hook) = review_scene("on_review: rerun\n", &agent).await;
    let branch = s.github.pulls("acme/app")[0]["head"]["ref"].as_str().unwrap().to_string();
    let review = s.github.submit_review("acme/app", 1, "octocat", "CHANGES_REQUESTED", "One thing.", &[("stamp.txt", 1, "Say why the stamp moves.")]);
    let fired = deliver_review(port, "review-claude", &review);
    assert_eq!(fired["outcome"], "fired", "{fired:#}");
    let rec = answered(&s, fired["run_id"].as_str().unwrap());
    assert_eq!((rec["status"].as_str(), rec["pull_request"]["state"].as_str()), (Some("completed"), Some("answered")), "{rec:#}");
    assert_eq!(git(&s.bare, &["rev-list", "--count", &format!("main..{branch}")]).trim(), "2", "its commit on the pull request's branch");
    let asked: Vec<String> = fake.requests().iter().map(|r| r.body["messages"].to_string()).collect();
    let told = asked.iter().find(|m| m.contains("This run answers a review of pull request acme/app#1")).unwrap_or_else(|| panic!("no request carried the review: {asked:#?}"));
    assert!(told.contains("Move the stamp.") && told.contains("Review by @octocat (changes requested):") && told.contains("> One thing.") && told.contains("`stamp.txt:1`:") && told.contains("> Say why the stamp moves."), "{told}");
    let said = s.github.comments("acme/app", 1)[0]["body"].as_str().unwrap().to_string();
    assert!(said.contains("The stamp moves so the bump is visible."), "{said}");
}

#[test]
fn on_review_is_checked_where_it_is_written() {
    let th = TestHome::new();
    let project = th.path().join("project");
    init_repo(&project, &[("README.md", "# app\n")]);
    let routine = |name: &str, rest: &str| th.routine(name, &format!("schedule: \"0 2 * * 1\"\nworkspace: worktree\ncwd: {}\ncommand: \"true\"\n{rest}", project.display()));
    routine("no-pr", "push: origin\non_review: rerun\n");
    routine("bad-word", "push: {remote: origin, pr: draft}\non_review: maybe\n");
    routine("bad-rounds", "push: {remote: origin, pr: draft}\non_review: rerun\nreview_rounds: 0\n");
    routine("stray", "push: {remote: origin, pr: draft}\nreview_from: anyone\n");
    let said = common::stderr(&ctl(&th).args(["routines", "validate"]).output().unwrap());
    assert!(said.contains("no-pr.yaml:6:1: `on_review: rerun` needs a pull request to be reviewed"), "{said}");
    assert!(said.contains("bad-word.yaml:6:12: unknown `on_review: maybe` (expected rerun or off)"), "{said}");
    assert!(said.contains("bad-rounds.yaml:7:16: `review_rounds` must be a whole number from 1 to 20, found \"0\""), "{said}");
    assert!(said.contains("stray.yaml:6:1: `review_from` only applies with `on_review: rerun`"), "{said}");
}
