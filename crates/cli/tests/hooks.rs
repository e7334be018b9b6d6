//! Routines that run on events (`trigger:`): signed GitHub and Linear deliveries — payloads shaped
//! as GitHub's and Linear's documentation shows them — sent over HTTP to the real receiver (the
//! daemon's `[hooks] listen`, and `nightshiftctl serve`), each filter, replays, refusals, a
//! restart between two arrivals of one delivery, and two receivers on one home.

mod common;

use common::{bus_env, ctl, free_port, json, keychain_available, post, runs, start_daemon_with, stdout, Daemon};
use nightshift_core::incoming::signature::sign;
use nightshift_testkit::{secs, wait_until, TestHome};
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

const GITHUB_SECRET: &str = "gh-webhook-secret-for-the-tests-0001";
const LINEAR_SECRET: &str = "lin_wh_secret_for_the_tests_0002";

/// A home whose daemon takes deliveries on `port`, with the routines given.
fn home(port: u16, routines: &[(&str, &str)]) -> TestHome {
    let th = TestHome::new();
    std::fs::write(th.path().join("nightshift.toml"), format!("kill_grace_secs = 1\n[hooks]\nlisten = \"127.0.0.1:{port}\"\n")).unwrap();
    for (name, yaml) in routines {
        th.routine(name, yaml);
    }
    th
}

fn daemon(th: &TestHome) -> Daemon {
    let d = start_daemon_with(th, &[], &[("NIGHTSHIFT_HOOK_SECRET_GITHUB", GITHUB_SECRET), ("NIGHTSHIFT_HOOK_SECRET_LINEAR", LINEAR_SECRET)]);
    d.wait_scheduling();
    d
}

/// A GitHub delivery as GitHub signs it.
fn github(port: u16, event: &str, delivery: &str, payload: &Value) -> (u16, Value) {
    common::github_delivery(port, GITHUB_SECRET, event, delivery, payload)
}

/// A Linear delivery as Linear signs it, sent now (its `webhookTimestamp`).
fn linear(port: u16, delivery: &str, mut payload: Value) -> (u16, Value) {
    if payload.get("webhookTimestamp").is_none() {
        payload["webhookTimestamp"] = json!(chrono::Utc::now().timestamp_millis());
    }
    let body = payload.to_string();
    post(port, "/hooks/linear", &[("Linear-Event", payload["type"].as_str().unwrap_or("").into()), ("Linear-Delivery", delivery.into()), ("Linear-Signature", sign(LINEAR_SECRET, body.as_bytes()))], body.as_bytes())
}

/// GitHub's `pull_request` payload (its documented shape, trimmed to what matters here).
fn pull_request(action: &str, number: u64, base: &str, label: Option<&str>) -> Value {
    json!({
        "action": action,
        "number": number,
        "pull_request": {"number": number, "title": format!("Fix the login redirect #{number}"), "html_url": format!("https://github.com/acme/app/pull/{number}"),
            "state": "open", "base": {"ref": base}, "head": {"ref": "fix-login"}, "labels": label.map(|l| vec![json!({"name": l})]).unwrap_or_default()},
        "label": label.map(|l| json!({"name": l})),
        "repository": {"id": 1296269, "full_name": "acme/app", "html_url": "https://github.com/acme/app"},
        "sender": {"login": "octocat"}
    })
}

fn event_runs(th: &TestHome, routine: &str) -> Vec<Value> {
    runs(th).into_iter().filter(|r| r["routine"] == routine).collect()
}

fn verdict<'a>(answer: &'a Value, routine: &str) -> &'a Value {
    answer["verdicts"].as_array().and_then(|v| v.iter().find(|x| x["routine"] == routine)).unwrap_or(&Value::Null)
}

#[test]
fn a_signed_pull_request_fires_its_routine_once_with_the_event_and_each_filter_says_why_not() {
    let port = free_port();
    let review = "trigger:\n  type: github_event\n  event: pull_request\n  repo: acme/app\n  branch: main\n  action: opened\ncommand: 'cp \"$NIGHTSHIFT_EVENT_PATH\" \"$NIGHTSHIFT_RUN_DIR/seen.json\"'\n";
    let ux = "trigger: {type: github_event, event: pull_request, action: labeled, label: ux-approved}\ncommand: 'true'\n";
    let off = "trigger: {type: github_event, event: pull_request}\nenabled: false\ncommand: 'true'\n";
    let th = home(port, &[("review", review), ("ux", ux), ("off", off)]);
    let d = daemon(&th);

    let opened = pull_request("opened", 41, "main", None);
    let (status, answer) = github(port, "pull_request", "d-0001", &opened);
    assert_eq!(status, 202, "{answer:#}");
    assert_eq!(verdict(&answer, "review")["outcome"], "fired", "{answer:#}");
    assert_eq!(verdict(&answer, "ux")["why"], "action: opened, not labeled", "{answer:#}");
    assert_eq!((verdict(&answer, "off")["outcome"].as_str(), verdict(&answer, "off")["why"].as_str()), (Some("disabled"), Some("the routine is disabled")), "as a slot would be");
    let run_id = verdict(&answer, "review")["run_id"].as_str().unwrap().to_string();
    wait_until("the fired run to complete", secs(20), || event_runs(&th, "review").iter().any(|r| r["status"] == "completed"));

    // The same delivery again (GitHub's redelivery): the same run, no second one.
    let (status, again) = github(port, "pull_request", "d-0001", &opened);
    assert_eq!((status, verdict(&again, "review")["outcome"].as_str(), verdict(&again, "review")["run_id"].as_str()), (202, Some("duplicate"), Some(run_id.as_str())), "{again:#}");
    // Another branch, a label added: one fires, the other is filtered by its branch.
    let (_, dev) = github(port, "pull_request", "d-0002", &pull_request("opened", 42, "dev", None));
    assert_eq!(verdict(&dev, "review")["why"], "branch: dev, not main", "{dev:#}");
    let (_, labeled) = github(port, "pull_request", "d-0003", &pull_request("labeled", 41, "main", Some("ux-approved")));
    assert_eq!((verdict(&labeled, "ux")["outcome"].as_str(), verdict(&labeled, "review")["why"].as_str()), (Some("fired"), Some("action: labeled, not opened")), "{labeled:#}");

    let fired = event_runs(&th, "review");
    assert_eq!(fired.len(), 1, "one run for d-0001 however often it came: {fired:#?}");
    let run = &fired[0];
    assert_eq!((run["trigger"].as_str(), run["id"].as_str()), (Some("event"), Some(run_id.as_str())));
    let e = &run["event"];
    assert_eq!(
        (e["source"].as_str(), e["name"].as_str(), e["action"].as_str(), e["repo"].as_str(), e["number"].as_u64(), e["branch"].as_str(), e["sender"].as_str(), e["delivery"].as_str()),
        (Some("github"), Some("pull_request"), Some("opened"), Some("acme/app"), Some(41), Some("main"), Some("octocat"), Some("d-0001")),
        "{run:#}"
    );
    assert_eq!((e["title"].as_str(), e["url"].as_str()), (Some("Fix the login redirect #41"), Some("https://github.com/acme/app/pull/41")));
    // The payload, byte for byte, at NIGHTSHIFT_EVENT_PATH.
    let seen = std::fs::read(std::path::Path::new(run["run_dir"].as_str().unwrap()).join("seen.json")).unwrap();
    assert_eq!(seen, opened.to_string().into_bytes());
    assert_eq!(event_runs(&th, "ux").len(), 1);

    // What came in and what became of it.
    let listed = json(&ctl(&th).args(["hooks", "list", "--json"]).output().unwrap());
    let first = listed.as_array().unwrap().iter().find(|d| d["delivery"] == "d-0001").unwrap().clone();
    assert_eq!((first["times"].as_u64(), first["verdicts"].as_array().map(Vec::len)), (Some(2), Some(3)), "{first:#}");
    let table = stdout(&ctl(&th).args(["hooks", "list"]).output().unwrap());
    assert!(table.contains(&format!("review: fired {run_id}")) && table.contains("review: filtered (branch: dev, not main)") && table.contains(" ×2"), "{table}");
    let listed = stdout(&ctl(&th).args(["routines", "list"]).output().unwrap());
    assert!(listed.contains("on github:pull_request (acme/app@main, action=opened)"), "{listed}");
    // `why` tells the events beside the slots: what became of each, and what it waits for next.
    let why = stdout(&ctl(&th).args(["why", "review"]).output().unwrap());
    assert!(why.contains(&format!("github:pull_request opened acme/app#41 “Fix the login redirect #41”: fired (run {run_id}) (arrived 2 times)")), "{why}");
    assert!(why.contains("github:pull_request opened acme/app#42 “Fix the login redirect #42”: filtered — branch: dev, not main"), "{why}");
    assert!(why.contains("next: on the next delivery of github:pull_request (acme/app@main, action=opened) — it has no clock"), "{why}");
    drop(d);
}

#[test]
fn deliveries_that_cannot_be_believed_are_refused_and_fire_nothing() {
    let port = free_port();
    let th = home(port, &[("any", "trigger: {type: github_event, event: push}\ncommand: 'true'\n")]);
    let _d = daemon(&th);
    let push = json!({"ref": "refs/heads/main", "repository": {"full_name": "acme/app"}, "head_commit": {"message": "Bump"}, "sender": {"login": "octocat"}});
    let body = push.to_string();
    let headers = |sig: Option<String>| {
        let mut h = vec![("X-GitHub-Event", "push".to_string()), ("X-GitHub-Delivery", "d-bad".to_string())];
        if let Some(s) = sig {
            h.push(("X-Hub-Signature-256", s));
        }
        h
    };
    let (status, answer) = post(port, "/hooks/github", &headers(None), body.as_bytes());
    assert_eq!((status, answer["message"].as_str()), (401, Some("refused: no signature — nothing was fired")));
    let wrong = format!("sha256={}", sign("not the secret", body.as_bytes()));
    let (status, answer) = post(port, "/hooks/github", &headers(Some(wrong)), body.as_bytes());
    assert_eq!(status, 401, "{answer:#}");
    assert!(answer["message"].as_str().unwrap().contains("does not match the body"));
    // Signed right, but a body one byte different from the one signed.
    let sig = format!("sha256={}", sign(GITHUB_SECRET, body.as_bytes()));
    let (status, _) = post(port, "/hooks/github", &headers(Some(sig)), format!("{body} ").as_bytes());
    assert_eq!(status, 401);
    // Linear: a minute and a half old.
    let stale = json!({"action": "create", "type": "Issue", "data": {"number": 1, "title": "x", "team": {"key": "ENG"}, "state": {"id": "s", "name": "Todo"}}, "webhookTimestamp": chrono::Utc::now().timestamp_millis() - 90_000});
    let (status, answer) = linear(port, "l-stale", stale);
    assert_eq!(status, 401, "{answer:#}");
    assert!(answer["message"].as_str().unwrap().contains("webhookTimestamp"));
    // Over 25 MB.
    let big = vec![b' '; 25 * 1024 * 1024 + 1];
    let (status, answer) = post(port, "/hooks/github", &headers(Some(format!("sha256={}", sign(GITHUB_SECRET, &big)))), &big);
    assert_eq!(status, 413, "{answer:#}");
    // GitHub's ping when the webhook is made: answered, nothing fired.
    let (status, answer) = github(port, "ping", "d-ping", &json!({"zen": "Design for failure.", "hook_id": 1}));
    assert_eq!(status, 200);
    assert!(answer["message"].as_str().unwrap().starts_with("pong"));
    assert!(runs(&th).is_empty(), "nothing fired");
    assert_eq!(json(&ctl(&th).args(["hooks", "list", "--json"]).output().unwrap()), json!([]), "refused deliveries are not events");
    // More than 600 GitHub requests in a minute (five so far): the rest are 429 until it frees.
    let answers: Vec<(u16, Value)> = (0..600).map(|_| post(port, "/hooks/github", &headers(None), body.as_bytes())).collect();
    assert!(answers[..595].iter().all(|(s, _)| *s == 401), "within the minute's 600");
    assert!(answers[595..].iter().all(|(s, a)| *s == 429 && a["message"].as_str().unwrap().contains("more than 600 github deliveries in a minute")), "{:?}", &answers[595..]);
    // Linear's minute is its own.
    let (status, _) = linear(port, "l-after", json!({"action": "create", "type": "Reaction", "data": {}}));
    assert_eq!(status, 202);
}

#[test]
fn a_linear_issue_moving_into_its_state_fires_and_a_later_edit_does_not() {
    let port = free_port();
    let pickup = "trigger:\n  type: linear_event\n  event: Issue\n  teamKey: ENG\n  stateTo: Todo\n  stateFrom: Backlog\ncommand: 'true'\n";
    let th = home(port, &[("pickup", pickup)]);
    let _d = daemon(&th);
    let issue = |state: (&str, &str), from: Option<&str>, action: &str| {
        json!({
            "action": action, "type": "Issue", "actor": {"id": "u1", "name": "Ada Lovelace"},
            "data": {"id": "i-1", "number": 123, "identifier": "ENG-123", "title": "Flaky login test",
                "state": {"id": state.0, "name": state.1}, "team": {"id": "t1", "key": "ENG"}, "labels": []},
            "updatedFrom": from.map(|f| json!({"stateId": f})).unwrap_or(json!({"title": "Flaky test"})),
            "url": "https://linear.app/acme/issue/ENG-123/flaky-login-test"
        })
    };
    // Made in Backlog (its name learned), moved into Todo, then edited while in Todo.
    let (status, made) = linear(port, "l-1", issue(("s-backlog", "Backlog"), None, "create"));
    assert_eq!((status, verdict(&made, "pickup")["why"].as_str()), (202, Some("stateTo: Backlog, not Todo")), "{made:#}");
    let (_, moved) = linear(port, "l-2", issue(("s-todo", "Todo"), Some("s-backlog"), "update"));
    assert_eq!(verdict(&moved, "pickup")["outcome"], "fired", "{moved:#}");
    let (_, edited) = linear(port, "l-3", issue(("s-todo", "Todo"), None, "update"));
    assert_eq!(verdict(&edited, "pickup")["why"], "stateTo: already Todo (an edit, not a move into it)", "{edited:#}");
    let fired = event_runs(&th, "pickup");
    assert_eq!(fired.len(), 1);
    let e = &fired[0]["event"];
    assert_eq!((e["source"].as_str(), e["name"].as_str(), e["number"].as_u64(), e["sender"].as_str()), (Some("linear"), Some("Issue"), Some(123), Some("Ada Lovelace")));
}

/// The daemon is killed after taking a delivery; GitHub delivers it again to the new one: still
/// one run.
#[test]
fn a_delivery_that_comes_again_after_a_restart_is_one_run() {
    let port = free_port();
    let th = home(port, &[("review", "trigger: {type: github_event, event: pull_request}\ncommand: 'true'\n")]);
    let d = daemon(&th);
    let pr = pull_request("synchronize", 7, "main", None);
    let (_, first) = github(port, "pull_request", "d-restart", &pr);
    assert_eq!(verdict(&first, "review")["outcome"], "fired", "{first:#}");
    d.kill9();
    let _d = daemon(&th);
    let (_, again) = github(port, "pull_request", "d-restart", &pr);
    assert_eq!((verdict(&again, "review")["outcome"].as_str(), verdict(&again, "review")["run_id"].clone()), (Some("duplicate"), verdict(&first, "review")["run_id"].clone()), "{again:#}");
    wait_until("the run to be settled", secs(20), || event_runs(&th, "review").iter().all(|r| r["status"] != "running" && r["status"] != "queued"));
    assert_eq!(event_runs(&th, "review").len(), 1);
}

/// `nightshiftctl serve` takes deliveries beside its pages without its access token (the
/// signature is the credential), and, with the daemon's receiver on the same home, a delivery
/// both see is one run: 500 deliveries, each sent to both at once.
#[test]
fn two_receivers_on_one_home_make_each_delivery_one_run() {
    let port = free_port();
    let th = home(port, &[("sync", "trigger: {type: github_event, event: pull_request}\noverlap: queue\ncommand: 'true'\n")]);
    let _d = daemon(&th);
    let mut serve = ctl(&th).args(["serve", "--addr", "127.0.0.1:0"]).env("NIGHTSHIFT_HOOK_SECRET_GITHUB", GITHUB_SECRET).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).spawn().unwrap();
    // Its output is read for the URL and closed: serve prints a second line (the daemon
    // schedules) to nobody, and goes on serving.
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(serve.stdout.take().unwrap()), &mut line).unwrap();
    let serve_port: u16 = line.split("127.0.0.1:").nth(1).and_then(|r| r.split('/').next()).and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{line}"));
    let n = 500;
    let senders: Vec<_> = [port, serve_port]
        .into_iter()
        .map(|p| {
            std::thread::spawn(move || {
                (0..n).map(|i| github(p, "pull_request", &format!("d-both-{i:04}"), &pull_request("synchronize", i, "main", None)).0).collect::<Vec<u16>>()
            })
        })
        .collect();
    for s in senders {
        assert!(s.join().unwrap().iter().all(|status| *status == 202), "every delivery taken by both");
    }
    assert_eq!(serve.try_wait().unwrap(), None, "serve is still up");
    let _ = serve.kill();
    let _ = serve.wait();
    let all = event_runs(&th, "sync");
    let mut per_delivery = std::collections::HashMap::<String, usize>::new();
    for r in &all {
        *per_delivery.entry(r["event"]["delivery"].as_str().unwrap().to_string()).or_default() += 1;
    }
    assert_eq!(per_delivery.len(), n as usize, "every delivery has its run (fired or skipped)");
    assert!(per_delivery.values().all(|c| *c == 1), "no delivery has two: {:?}", per_delivery.iter().filter(|(_, c)| **c > 1).collect::<Vec<_>>());
    // The burst is bounded by `overlap: queue`: one running, one waiting, the rest skipped.
    let skipped = all.iter().filter(|r| r["status"] == "skipped").count();
    assert!(skipped > 0 && all.iter().all(|r| ["completed", "skipped", "queued", "running"].contains(&r["status"].as_str().unwrap())), "{skipped} skipped of {}", all.len());
}

#[test]
fn the_secret_set_in_the_keychain_checks_deliveries() {
    if !keychain_available() {
        return;
    }
    let port = free_port();
    let th = home(port, &[("review", "trigger: {type: github_event, event: pull_request}\ncommand: 'true'\n")]);
    let service = format!("nightshift-test-{}", th.path().file_name().unwrap().to_string_lossy());
    let settings = th.path().join("nightshift.toml");
    std::fs::write(&settings, format!("keychain_service = \"{service}\"\n{}", std::fs::read_to_string(&settings).unwrap())).unwrap();
    let mut set = ctl(&th).args(["hooks", "set-secret", "github"]).envs(bus_env()).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    set.stdin.take().unwrap().write_all(format!("{GITHUB_SECRET}\n").as_bytes()).unwrap();
    assert!(set.wait_with_output().unwrap().status.success());
    let refs: Vec<(&str, String)> = bus_env();
    let d = start_daemon_with(&th, &[], &refs.iter().map(|(k, v)| (*k, v.as_str())).collect::<Vec<_>>());
    d.wait_scheduling();
    let (status, answer) = github(port, "pull_request", "d-kc", &pull_request("opened", 1, "main", None));
    assert_eq!((status, verdict(&answer, "review")["outcome"].as_str()), (202, Some("fired")), "{answer:#}");
    let unknown = ctl(&th).args(["hooks", "set-secret", "gitlab"]).stdin(std::process::Stdio::null()).output().unwrap();
    assert!(common::stderr(&unknown).contains("unknown source \"gitlab\" (expected github or linear)"), "{}", common::stderr(&unknown));
}

/// The real Claude Code CLI reviews a "pull request" a delivery announced: the event's parts in
/// its prompt, the payload at NIGHTSHIFT_EVENT_PATH, the run completed with its report.
#[test]
fn the_real_claude_cli_reviews_the_pull_request_a_delivery_announced() {
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(nightshift_testkit::FakeAnthropic::start(None));
    fake.set("tok-review-events", nightshift_testkit::Reply::Success { text: "## Review\n\nLooks good; one nit in the redirect.".into() });
    let port = free_port();
    let th = TestHome::new();
    let review = format!(
        "trigger: {{type: github_event, event: pull_request, repo: acme/app, action: opened}}\nagent: claude\nmode: plan\nprompt: 'Review {{event.repo}}#{{event.number}} “{{event.title}}” ({{event.url}}), opened by {{event.sender}} into {{event.branch}}.'\ntimeout: 2m\ncwd: {}\nenv:\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_OAUTH_TOKEN: tok-review-events\n",
        th.user_home().display(),
        fake.url()
    );
    std::fs::write(th.path().join("nightshift.toml"), format!("[hooks]\nlisten = \"127.0.0.1:{port}\"\n")).unwrap();
    th.routine("review", &review);
    let _d = daemon(&th);
    let (status, answer) = github(port, "pull_request", "d-claude", &pull_request("opened", 41, "main", None));
    assert_eq!((status, verdict(&answer, "review")["outcome"].as_str()), (202, Some("fired")), "{answer:#}");
    wait_until("the review to finish", secs(90), || event_runs(&th, "review").iter().any(|r| r["status"] != "running" && r["status"] != "queued"));
    let run = event_runs(&th, "review").remove(0);
    assert_eq!(run["status"], "completed", "{run:#}");
    let asked = fake.requests().iter().map(|r| r.body.to_string()).find(|b| b.contains("Review acme/app#41")).expect("the prompt reached the API");
    assert!(asked.contains("Review acme/app#41 “Fix the login redirect #41” (https://github.com/acme/app/pull/41), opened by octocat into main."), "{asked}");
    assert!(std::fs::read_to_string(run["report_path"].as_str().unwrap()).unwrap().contains("Looks good"));
}

// --- Polling (`[github] poll`): the same routines, fired from GitHub's Events API, for a machine
// no delivery reaches. A loopback fake of the REST API (ETags, 304s, pages, rate-limit headers).

const GITHUB_TOKEN: &str = "github_pat_11AAAAAAA0fake0token0for0the0polling0tests";

/// A home that polls `fake` every second (and takes deliveries on `port`).
fn polling_home(port: u16, fake: &nightshift_testkit::FakeGithub, routines: &[(&str, &str)]) -> TestHome {
    let th = home(port, routines);
    let settings = th.path().join("nightshift.toml");
    std::fs::write(&settings, format!("{}[github]\npoll = \"1s\"\napi_url = \"{}\"\n", std::fs::read_to_string(&settings).unwrap(), fake.url())).unwrap();
    th
}

fn polling_daemon(th: &TestHome) -> Daemon {
    let d = start_daemon_with(th, &[], &[("NIGHTSHIFT_HOOK_SECRET_GITHUB", GITHUB_SECRET), ("GH_TOKEN", GITHUB_TOKEN)]);
    d.wait_scheduling();
    d
}

/// The Events API's `PullRequestEvent` payload, trimmed as GitHub trims it (the whole pull
/// request is asked for separately).
fn polled_pull_request(action: &str, number: u64, label: Option<&str>) -> Value {
    let mut payload = json!({"action": action, "number": number, "pull_request": {"number": number, "url": format!("https://api.github.com/repos/acme/app/pulls/{number}")}});
    if let Some(l) = label {
        payload["label"] = json!({"name": l});
    }
    payload
}

/// The whole pull request `GET /repos/acme/app/pulls/N` answers.
fn whole_pull_request(number: u64, base: &str, labels: &[&str], updated_at: &str) -> Value {
    json!({"number": number, "title": format!("Fix the login redirect #{number}"), "html_url": format!("https://github.com/acme/app/pull/{number}"), "state": "open",
        "base": {"ref": base}, "head": {"ref": "fix-login"}, "labels": labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>(), "updated_at": updated_at})
}

/// A fake GitHub with `acme/app` (and the runtime serving it), a free port and a home polling it.
fn polling_scene(routines: &[(&str, &str)]) -> (tokio::runtime::Runtime, nightshift_testkit::FakeGithub, u16, TestHome) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(nightshift_testkit::FakeGithub::start(GITHUB_TOKEN));
    fake.add_repo("acme/app");
    let port = free_port();
    let th = polling_home(port, &fake, routines);
    (rt, fake, port, th)
}

/// [`polling_daemon`], once it has asked for `acme/app` (its place set).
fn polling_daemon_asked(th: &TestHome, fake: &nightshift_testkit::FakeGithub) -> Daemon {
    let d = polling_daemon(th);
    wait_until("the first ask", secs(20), || !asks_of(fake, "acme/app").is_empty());
    d
}

fn asks_of(fake: &nightshift_testkit::FakeGithub, repo: &str) -> Vec<nightshift_testkit::fake_github::Ask> {
    fake.asks().into_iter().filter(|a| a.path == format!("/repos/{repo}/events")).collect()
}

#[test]
fn polling_fires_new_events_once_and_an_unchanged_feed_costs_no_rate_limit() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = rt.block_on(nightshift_testkit::FakeGithub::start(GITHUB_TOKEN));
    let t0 = chrono::Utc::now();
    // History: an opened pull request from before polling began — never fired.
    fake.add_event("acme/app", "PullRequestEvent", "octocat", polled_pull_request("opened", 40, None), t0 - chrono::Duration::hours(1));
    fake.add_repo("acme/lib");
    let port = free_port();
    let review = "trigger: {type: github_event, event: pull_request, repo: acme/app, branch: main, action: opened}\ncommand: 'cp \"$NIGHTSHIFT_EVENT_PATH\" \"$NIGHTSHIFT_RUN_DIR/seen.json\"'\n";
    let pushes = "trigger: {type: github_event, event: push, repo: acme/lib, branch: main}\ncommand: 'true'\n";
    let th = polling_home(port, &fake, &[("review", review), ("pushes", pushes)]);
    let _d = polling_daemon(&th);
    wait_until("both repositories asked", secs(20), || !asks_of(&fake, "acme/app").is_empty() && !asks_of(&fake, "acme/lib").is_empty());

    let id = fake.add_event("acme/app", "PullRequestEvent", "octocat", polled_pull_request("opened", 41, None), chrono::Utc::now());
    fake.set_object("acme/app", "pulls", 41, whole_pull_request(41, "main", &[], &chrono::Utc::now().to_rfc3339()));
    fake.add_event("acme/lib", "PushEvent", "hubot", json!({"repository_id": 7, "push_id": 99, "ref": "refs/heads/main", "head": "0123456789abcdef0123456789abcdef01234567", "before": "fedcba9876543210fedcba9876543210fedcba98"}), chrono::Utc::now());
    wait_until("the polled pull request and push to fire", secs(20), || event_runs(&th, "review").iter().any(|r| r["status"] == "completed") && !event_runs(&th, "pushes").is_empty());
    let fired = event_runs(&th, "review");
    assert_eq!(fired.len(), 1, "the new pull request only, not the history: {fired:#?}");
    let e = &fired[0]["event"];
    assert_eq!(
        (e["source"].as_str(), e["name"].as_str(), e["action"].as_str(), e["repo"].as_str(), e["number"].as_u64(), e["branch"].as_str(), e["sender"].as_str(), e["title"].as_str()),
        (Some("github"), Some("pull_request"), Some("opened"), Some("acme/app"), Some(41), Some("main"), Some("octocat"), Some("Fix the login redirect #41")),
        "the same shape as a delivered one (the trimmed payload filled in): {e:#}"
    );
    assert_eq!(e["delivery"].as_str(), Some(format!("events-api:{id}").as_str()));
    let seen: Value = serde_json::from_slice(&std::fs::read(std::path::Path::new(fired[0]["run_dir"].as_str().unwrap()).join("seen.json")).unwrap()).unwrap();
    assert_eq!((seen["repository"]["full_name"].as_str(), seen["sender"]["login"].as_str(), seen["pull_request"]["base"]["ref"].as_str()), (Some("acme/app"), Some("octocat"), Some("main")), "event.json in a delivery's shape: {seen:#}");
    assert_eq!(event_runs(&th, "pushes")[0]["event"]["branch"], "main");

    // Nothing new: every further ask carries the ETag and is a 304, which costs no rate limit.
    let spent = fake.remaining();
    fake.clear_asks();
    wait_until("three more asks of each", secs(20), || asks_of(&fake, "acme/app").len() >= 3 && asks_of(&fake, "acme/lib").len() >= 3);
    let asks = fake.asks();
    assert!(asks.iter().all(|a| a.status == 304 && a.if_none_match.is_some()), "{asks:#?}");
    assert_eq!(fake.remaining(), spent, "304s cost no rate limit");
    assert_eq!(event_runs(&th, "review").len(), 1, "nothing fired twice");
    let list = stdout(&ctl(&th).args(["hooks", "list"]).output().unwrap());
    assert!(list.contains("(polled)") && list.contains("acme/app#41"), "{list}");
}

/// The receiver and the poller both see one pull request labelled: one run, whichever is first;
/// the same label added again later is a new event and fires again.
#[test]
fn an_event_seen_by_both_paths_is_one_run() {
    let (_rt, fake, port, th) = polling_scene(&[("ux", "trigger: {type: github_event, event: pull_request, repo: acme/app, action: labeled, label: ux-approved}\noverlap: queue\ncommand: 'true'\n")]);
    let _d = polling_daemon_asked(&th, &fake);

    // Delivered first, polled after.
    let at = chrono::Utc::now() - chrono::Duration::minutes(30);
    let mut delivered = pull_request("labeled", 41, "main", Some("ux-approved"));
    delivered["pull_request"]["updated_at"] = json!(at.to_rfc3339());
    let (_, answer) = github(port, "pull_request", "d-both-paths-1", &delivered);
    assert_eq!(verdict(&answer, "ux")["outcome"], "fired", "{answer:#}");
    fake.set_object("acme/app", "pulls", 41, whole_pull_request(41, "main", &["ux-approved"], &at.to_rfc3339()));
    fake.add_event("acme/app", "PullRequestEvent", "octocat", polled_pull_request("labeled", 41, Some("ux-approved")), at + chrono::Duration::seconds(1));
    // Polled first, delivered after.
    let later = at + chrono::Duration::minutes(10);
    fake.set_object("acme/app", "pulls", 42, whole_pull_request(42, "main", &["ux-approved"], &later.to_rfc3339()));
    fake.add_event("acme/app", "PullRequestEvent", "octocat", polled_pull_request("labeled", 42, Some("ux-approved")), later);
    wait_until("the polled entries taken", secs(20), || event_runs(&th, "ux").len() >= 2 && stdout(&ctl(&th).args(["hooks", "list"]).output().unwrap()).matches("(polled)").count() >= 2);
    let mut second = pull_request("labeled", 42, "main", Some("ux-approved"));
    second["pull_request"]["updated_at"] = json!(later.to_rfc3339());
    let (_, answer) = github(port, "pull_request", "d-both-paths-2", &second);
    assert_eq!(verdict(&answer, "ux")["outcome"], "duplicate", "polled first, then delivered: {answer:#}");
    // The label taken off and added again a quarter of an hour on: a new event.
    let again = later + chrono::Duration::minutes(15);
    fake.set_object("acme/app", "pulls", 42, whole_pull_request(42, "main", &["ux-approved"], &again.to_rfc3339()));
    fake.add_event("acme/app", "PullRequestEvent", "octocat", polled_pull_request("labeled", 42, Some("ux-approved")), again);
    wait_until("the new labelling to fire", secs(20), || event_runs(&th, "ux").len() >= 3);
    std::thread::sleep(Duration::from_secs(2));
    let all = event_runs(&th, "ux");
    let numbers: Vec<u64> = all.iter().map(|r| r["event"]["number"].as_u64().unwrap()).collect();
    assert_eq!(all.len(), 3, "#41 once (delivered, then polled), #42 once (polled, then delivered), #42 again later: {numbers:?}");
    let json_list = json(&ctl(&th).args(["hooks", "list", "--json"]).output().unwrap());
    let duplicates = json_list.as_array().unwrap().iter().filter(|d| d["verdicts"][0]["outcome"] == "duplicate").count();
    assert_eq!(duplicates, 2, "{json_list:#}");
}

/// Killed while asking for the second page, and again while taking a page's entries: after each
/// restart every entry has exactly one run — none missed, none repeated.
#[test]
fn a_restart_in_the_middle_of_a_page_neither_misses_nor_repeats_an_event() {
    let (_rt, fake, _port, th) = polling_scene(&[("pushes", "trigger: {type: github_event, event: push, repo: acme/app}\noverlap: queue\ncommand: 'true'\n")]);
    // Each push's own head and before (their first twelve digits name them in the compare URL).
    let push = |i: usize| json!({"ref": "refs/heads/main", "head": format!("{i:012x}{}", "a".repeat(28)), "before": format!("{:012x}{}", i + 1_000_000, "b".repeat(28)), "push_id": i});
    let d = polling_daemon_asked(&th, &fake);

    // Twelve pushes over three pages of five; the second page hangs, and the daemon dies waiting.
    fake.set_per_page(5);
    fake.slow_page(2, Duration::from_secs(60));
    let t = chrono::Utc::now();
    for i in 0..12 {
        fake.add_event("acme/app", "PushEvent", "octocat", push(i), t + chrono::Duration::seconds(i as i64));
    }
    wait_until("the second page to be asked for", secs(20), || fake.asks().iter().any(|a| a.page == 2));
    d.kill9();
    fake.no_slow_page();
    let d = polling_daemon(&th);
    wait_until("the twelve pushes", secs(30), || event_runs(&th, "pushes").len() >= 12);

    // Thirty more on one page; killed as soon as the first of them has its run.
    fake.set_per_page(100);
    let t = chrono::Utc::now() + chrono::Duration::minutes(5);
    for i in 12..42 {
        fake.add_event("acme/app", "PushEvent", "octocat", push(i), t + chrono::Duration::seconds(i as i64));
    }
    wait_until("the first of the thirty", secs(20), || event_runs(&th, "pushes").len() > 12);
    d.kill9();
    let at_kill = event_runs(&th, "pushes").len();
    eprintln!("killed with {at_kill} of 42 pushes fired");
    let _d = polling_daemon(&th);
    wait_until("all forty-two", secs(30), || event_runs(&th, "pushes").len() >= 42);
    std::thread::sleep(Duration::from_secs(2));
    let all = event_runs(&th, "pushes");
    let mut per_sha = std::collections::HashMap::<String, usize>::new();
    for r in &all {
        *per_sha.entry(r["event"]["url"].as_str().unwrap_or_default().to_string()).or_default() += 1;
    }
    assert_eq!((all.len(), per_sha.len()), (42, 42), "one run per push (killed with {at_kill} of 42 in): {per_sha:#?}");
}

#[test]
fn a_spent_rate_limit_holds_polling_until_it_resets_and_problems_are_said() {
    let (_rt, fake, _port, th) = polling_scene(&[("review", "trigger: {type: github_event, event: pull_request, repo: acme/app}\ncommand: 'true'\n")]);

    // Without a token, `github poll` says where one comes from; with a wrong one, that it was refused.
    let none = ctl(&th).args(["github", "poll"]).output().unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(common::stderr(&none).contains("no GitHub token") && common::stderr(&none).contains("nightshiftctl github set-token") && common::stderr(&none).contains("GH_TOKEN"), "{}", common::stderr(&none));
    let wrong = ctl(&th).args(["github", "poll"]).env("GH_TOKEN", "github_pat_wrong").output().unwrap();
    assert!(common::stderr(&wrong).contains("HTTP 401") && common::stderr(&wrong).contains("Bad credentials") && !common::stderr(&wrong).contains("github_pat_wrong"), "{}", common::stderr(&wrong));
    let first = ctl(&th).args(["github", "poll"]).env("GITHUB_TOKEN", GITHUB_TOKEN).output().unwrap();
    assert!(stdout(&first).contains("asked 1 repository") && stdout(&first).contains("1 started"), "{}", stdout(&first));

    // The limit is spent for the next few seconds: one ask meets it, and none follows until it resets.
    let reset = chrono::Utc::now().timestamp() + 4;
    fake.set_rate_limit(0, reset);
    fake.clear_asks();
    let _d = polling_daemon(&th);
    wait_until("the spent limit met", secs(20), || fake.asks().iter().any(|a| a.status == 403));
    std::thread::sleep(Duration::from_millis(2500));
    let while_spent = fake.asks().len();
    fake.set_rate_limit(5000, reset + 3600);
    assert_eq!(while_spent, 1, "no ask while the limit is spent: {:#?}", fake.asks());
    wait_until("polling to go on after the reset", secs(20), || fake.asks().iter().any(|a| a.status == 200 || a.status == 304));
    assert!(chrono::Utc::now().timestamp() >= reset, "not before the reset");
}

/// `github set-token` keeps the token in the OS keychain, and polling asks with it.
#[test]
fn the_token_set_in_the_keychain_is_the_one_polling_asks_with() {
    if !keychain_available() {
        return;
    }
    let (_rt, fake, _port, th) = polling_scene(&[("review", "trigger: {type: github_event, event: pull_request, repo: acme/app}\ncommand: 'true'\n")]);
    let service = format!("nightshift-test-{}", th.path().file_name().unwrap().to_string_lossy());
    let settings = th.path().join("nightshift.toml");
    std::fs::write(&settings, format!("keychain_service = \"{service}\"\n{}", std::fs::read_to_string(&settings).unwrap())).unwrap();
    let mut set = ctl(&th).args(["github", "set-token"]).envs(bus_env()).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    set.stdin.take().unwrap().write_all(format!("{GITHUB_TOKEN}\n").as_bytes()).unwrap();
    let out = set.wait_with_output().unwrap();
    assert!(out.status.success() && stdout(&out).contains("stored the GitHub token in the OS keychain"), "{}", stdout(&out));
    let poll = ctl(&th).args(["github", "poll"]).envs(bus_env()).output().unwrap();
    assert!(poll.status.success() && stdout(&poll).contains("asked 1 repository"), "{}{}", stdout(&poll), common::stderr(&poll));
    assert_eq!(fake.asks().iter().map(|a| a.status).collect::<Vec<_>>(), vec![200], "asked with the stored token");
    let empty = ctl(&th).args(["github", "set-token"]).envs(bus_env()).stdin(std::process::Stdio::null()).output().unwrap();
    assert!(!empty.status.success() && common::stderr(&empty).contains("the GitHub token is empty"), "{}", common::stderr(&empty));
}
