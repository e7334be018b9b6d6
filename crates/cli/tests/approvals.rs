//! `on_denial: ask` with the real Claude Code CLI against the fake API, in the machine's sandbox:
//! the model asks for a `Bash` call its routine's mode does not allow; the call is held while the
//! run waits (`nightshiftctl approvals` lists it); approved, it runs; denied, or not answered by
//! `ask_timeout`, it does not, and the agent is told why and goes on.

mod common;

use common::{ctl, json, stdout};
use nightshift_testkit::{FakeAnthropic, Reply, TestHome};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

const REPORT: &str = "## Dependencies\n\nBumped and pushed.";

struct Scene {
    th: TestHome,
    project: PathBuf,
    fake: FakeAnthropic,
}

async fn scene(extra: &str) -> Scene {
    scene_timed(extra, "3m").await
}

/// [`scene`] with the routine's `timeout`.
async fn scene_timed(extra: &str, timeout: &str) -> Scene {
    let th = TestHome::new();
    let project = th.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let fake = FakeAnthropic::start(None).await;
    fake.set("tok-ask", Reply::ToolCall { tool: "Bash".into(), input: json!({ "command": "sh -c 'echo pushed > pushed.txt'", "description": "push the branch" }), text: REPORT.into() });
    th.routine(
        "deps",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Bump the dependencies and push\nmode: edit\non_denial: ask\n{extra}timeout: {timeout}\ncwd: {}\nenv:\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_OAUTH_TOKEN: tok-ask\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n",
            project.display(),
            fake.url()
        ),
    );
    Scene { th, project, fake }
}

/// The run, started in the background; and the ask it holds, once `approvals` lists it.
async fn run_until_it_asks(s: &Scene) -> (tokio::task::JoinHandle<Value>, Value) {
    let mut cmd = common::tokio_ctl(&s.th);
    cmd.args(["run", "deps", "--wait", "--json"]);
    let running = tokio::spawn(async move { json(&cmd.output().await.unwrap()) });
    let mut ask = Value::Null;
    nightshift_testkit::wait_until("the run to ask", Duration::from_secs(90), || {
        let open = json(&ctl(&s.th).args(["approvals", "--json"]).output().unwrap());
        ask = open.get(0).cloned().unwrap_or(Value::Null);
        !ask.is_null() || running.is_finished()
    });
    if ask.is_null() {
        let rec = running.await.unwrap();
        let log = std::fs::read_to_string(std::path::Path::new(rec["run_dir"].as_str().unwrap_or("/")).join("stdout.log")).unwrap_or_default();
        panic!("the run ended without asking: {rec:#}\n{log}");
    }
    (running, ask)
}

/// What the agent was told of its Bash call (the tool result the CLI sent the model).
fn told(fake: &FakeAnthropic) -> String {
    fake.requests()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result")
        .map(|c| c["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_runs_and_a_denied_one_does_not() {
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    // Approved.
    let s = scene("").await;
    let (running, ask) = run_until_it_asks(&s).await;
    assert_eq!(ask["tool"], "Bash", "{ask}");
    assert!(ask["input"].as_str().unwrap().contains("echo pushed > pushed.txt"), "{ask}");
    let listed = stdout(&ctl(&s.th).arg("approvals").output().unwrap());
    assert!(listed.contains("Bash(sh -c 'echo pushed > pushed.txt')"), "{listed}");
    let run_id = ask["run_id"].as_str().unwrap().to_string();
    let approved = ctl(&s.th).args(["approve", &run_id]).output().unwrap();
    assert!(approved.status.success(), "{}", common::stderr(&approved));
    let rec = running.await.unwrap();
    assert_eq!(rec["status"], "completed", "{rec:#}");
    common::assert_sandboxed(&rec);
    assert_eq!(std::fs::read_to_string(s.project.join("pushed.txt")).unwrap(), "pushed\n", "the approved call ran");
    assert_eq!(rec["denials"], json!([]), "{rec:#}");
    let shown = stdout(&ctl(&s.th).args(["show", &run_id]).output().unwrap());
    assert!(shown.contains("asked        Bash(sh -c 'echo pushed > pushed.txt') — approved (cli, "), "{shown}");
    // A second answer finds nothing to answer.
    let again = ctl(&s.th).args(["deny", &run_id]).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(common::stderr(&again).contains("waits for no approval"), "{}", common::stderr(&again));
    assert_eq!(json(&ctl(&s.th).args(["approvals", "--json"]).output().unwrap()), json!([]));

    // Denied.
    let s = scene("").await;
    let (running, ask) = run_until_it_asks(&s).await;
    let denied = ctl(&s.th).args(["deny", ask["run_id"].as_str().unwrap()]).output().unwrap();
    assert!(denied.status.success(), "{}", common::stderr(&denied));
    let rec = running.await.unwrap();
    assert!(!s.project.join("pushed.txt").exists(), "the denied call did not run");
    assert!(told(&s.fake).contains("The user denied this (cli"), "{}", told(&s.fake));
    assert_eq!(rec["denials"][0]["tool"], "Bash", "a denied ask is one of the run's denials: {rec:#}");
    let shown = stdout(&ctl(&s.th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.contains("— denied (cli, "), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_nobody_answers_in_time_is_a_denial() {
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    let s = scene("ask_timeout: 2s\n").await;
    let (running, _) = run_until_it_asks(&s).await;
    let rec = running.await.unwrap();
    assert!(!s.project.join("pushed.txt").exists());
    assert!(told(&s.fake).contains("Nobody approved this within 2s"), "{}", told(&s.fake));
    assert_eq!(rec["denials"][0]["tool"], "Bash", "{rec:#}");
    let store = nightshift_core::store::Store::open(&s.th.path().join("nightshift.db")).unwrap();
    let asks = store.asks_of(rec["id"].as_str().unwrap()).unwrap();
    assert_eq!((asks.len(), asks[0].answer.as_deref(), asks[0].answered_by.as_deref()), (1, Some("timeout"), Some("timeout")), "{asks:?}");
    let shown = stdout(&ctl(&s.th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.contains("— not answered by ") && shown.contains(": refused"), "{shown}");
}

/// One raw HTTP POST of the window's API to `serve`; the JSON answer.
fn api(served: &common::Served, command: &str, args: Value) -> Value {
    use std::io::{Read, Write};
    let body = args.to_string();
    let mut stream = std::net::TcpStream::connect(&served.addr).unwrap();
    let req = format!("POST /api/{command} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", served.addr, served.token, body.len());
    stream.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    let payload = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    serde_json::from_str(payload).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// The window's way (its API, here through `serve`): the ask is listed, "Allow for this run"
/// lets the call run and the run's next call of the same tool without asking again; the run's
/// detail shows both asks and how each was answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_for_the_rest_of_the_run_from_the_window() {
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    let s = scene("").await;
    let calls = vec![
        ("Bash".to_string(), json!({ "command": "sh -c 'echo one > one.txt'", "description": "first" })),
        ("Bash".to_string(), json!({ "command": "sh -c 'echo two > two.txt'", "description": "second" })),
    ];
    s.fake.set("tok-ask", Reply::ToolCalls { calls, text: REPORT.into() });
    let served = common::serve(&s.th, "127.0.0.1:0", &[]);
    let (running, _) = run_until_it_asks(&s).await;
    let listed = api(&served, "list_asks", json!({}));
    assert_eq!(listed[0]["tool"], "Bash", "{listed}");
    let run_id = listed[0]["run_id"].as_str().unwrap().to_string();
    let answered = api(&served, "answer_ask", json!({ "run": run_id, "allow": true, "forRun": true }));
    assert_eq!((&answered["answer"], &answered["for_run"], &answered["answered_by"]), (&json!("allow"), &json!(true), &json!("window")), "{answered}");
    let rec = running.await.unwrap();
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert!(s.project.join("one.txt").exists() && s.project.join("two.txt").exists(), "both calls ran");
    let detail = api(&served, "get_run", json!({ "id": run_id }));
    let asks = detail["asks"].as_array().unwrap();
    assert_eq!(asks.len(), 2, "{detail:#}");
    assert_eq!((&asks[1]["answer"], &asks[1]["answered_by"]), (&json!("allow"), &json!("earlier")), "the second call was not asked again: {detail:#}");
}

#[test]
fn ask_is_refused_where_the_cli_cannot_hold_a_call() {
    let th = TestHome::new();
    th.routine("codex-asks", "schedule: \"0 2 * * *\"\nagent: codex\nprompt: x\non_denial: ask\n");
    th.routine("no-ask", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: x\nask_timeout: 5m\n");
    th.routine("too-long", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: x\non_denial: ask\nask_timeout: 13h\n");
    let out = ctl(&th).args(["routines", "validate"]).output().unwrap();
    let said = common::stderr(&out);
    assert!(said.contains("codex-asks.yaml:4:12: `on_denial: ask` cannot be kept by codex: "), "{said}");
    assert!(said.contains("no-ask.yaml:4:14: `ask_timeout` is how long `on_denial: ask` waits"), "{said}");
    assert!(said.contains("too-long.yaml:5:14: `ask_timeout` must be more than 0 and at most 12h"), "{said}");
}

/// The ask on the desktop: a real notification server on a private session bus shows
/// "deps asks…" with the call in words and Approve and Deny; clicking Approve lets the call run,
/// and the ask says it was answered there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_from_the_desktop_notification() {
    use nightshift_testkit::dbus::NotificationBus;
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    let s = scene("").await;
    let bus = NotificationBus::start(s.th.path(), "record");
    let mut cmd = common::tokio_ctl(&s.th);
    cmd.env("DBUS_SESSION_BUS_ADDRESS", &bus.address).args(["run", "deps", "--wait", "--notify", "--json"]);
    let running = tokio::spawn(async move { json(&cmd.output().await.unwrap()) });
    let mut asked = None;
    nightshift_testkit::wait_until("the ask's notification", Duration::from_secs(90), || {
        asked = bus.notifications().iter().position(|n| n["actions"].as_array().is_some_and(|a| a.iter().any(|x| x == "approve")));
        asked.is_some() || running.is_finished()
    });
    let at = asked.expect("no notification with Approve");
    let shown = &bus.notifications()[at];
    assert_eq!(shown["app_name"], "Nightshift");
    assert!(shown["summary"].as_str().unwrap().starts_with("? deps asks"), "{shown}");
    assert!(shown["body"].as_str().unwrap().starts_with("Bash(sh -c 'echo pushed > pushed.txt')\nDenied if not answered by "), "{shown}");
    assert_eq!(shown["actions"], json!(["default", "Open", "open", "Open", "approve", "Approve", "deny", "Deny"]));
    bus.click(at + 1, "approve");
    let rec = running.await.unwrap();
    assert_eq!(rec["status"], "completed", "{rec:#}");
    // The ask's notification became its answer (the same notification, replaced).
    let mut answered = None;
    nightshift_testkit::wait_until("the answer's notification", Duration::from_secs(20), || {
        answered = bus.notifications().into_iter().find(|n| n["summary"].as_str().is_some_and(|s| s.starts_with("✓ deps: approved")));
        answered.is_some()
    });
    let answered = answered.unwrap();
    assert_eq!((answered["summary"].as_str(), answered["replaces"].as_u64()), (Some("✓ deps: approved (desktop)"), Some(at as u64 + 1)), "{answered}");
    assert!(s.project.join("pushed.txt").exists(), "approved from the notification, the call ran");
    let store = nightshift_core::store::Store::open(&s.th.path().join("nightshift.db")).unwrap();
    let asks = store.asks_of(rec["id"].as_str().unwrap()).unwrap();
    assert_eq!((asks[0].answer.as_deref(), asks[0].answered_by.as_deref()), (Some("allow"), Some("desktop")), "{asks:?}");
}

/// The phone: the ask posted to an ntfy topic (a loopback receiver standing in for ntfy.sh) with
/// Approve and Deny buttons calling back `serve` through signed links; a forged, altered or
/// opened-in-a-browser link is refused, the Approve link answers once (a replay, and Deny after
/// it, are refused with words), and the call runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_from_the_phone_by_a_signed_link() {
    use nightshift_testkit::webhook_receiver::{Answer, WebhookReceiver};
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    let s = scene("").await;
    let ntfy = WebhookReceiver::start(vec![Answer::Accept], None).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    std::fs::write(s.th.path().join("nightshift.toml"), format!("[approvals]\nntfy = \"{}\"\n[serve]\nlisten = \"127.0.0.1:{port}\"\n", ntfy.url())).unwrap();
    let _served = common::serve(&s.th, &format!("127.0.0.1:{port}"), &[]);
    let (running, ask) = run_until_it_asks(&s).await;
    nightshift_testkit::wait_until("the ask posted to ntfy", Duration::from_secs(20), || !ntfy.received().is_empty());
    let posted = ntfy.received().remove(0);
    let header = |name: &str| posted.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone()).unwrap_or_default();
    assert_eq!(header("Title"), "Nightshift: deps waits for approval");
    assert!(posted.body.starts_with("Bash(sh -c 'echo pushed > pushed.txt')\nDenied if not answered by "), "{}", posted.body);
    let actions = header("Actions");
    let link = |label: &str| actions.split(';').find(|a| a.contains(&format!(", {label}, "))).and_then(|a| a.split(", ").nth(2)).unwrap_or_else(|| panic!("no {label} in {actions}")).to_string();
    let (approve, deny) = (link("Approve"), link("Deny"));
    assert!(approve.starts_with(&format!("http://127.0.0.1:{port}/approvals/{}/allow?until=", ask["id"].as_str().unwrap())), "{approve}");
    // Refused: a forged signature, the signature moved to the other answer, a link opened in a browser.
    let forged = format!("{}{}", &approve[..approve.len() - 1], if approve.ends_with('0') { '1' } else { '0' });
    assert_eq!(common::http("POST", &forged).0, 403);
    assert_eq!(common::http("POST", &approve.replace("/allow?", "/deny?")).0, 403);
    assert_eq!(common::http("GET", &approve).0, 405);
    assert!(json(&ctl(&s.th).args(["approvals", "--json"]).output().unwrap()).as_array().unwrap().len() == 1, "still waiting");
    let (status, said) = common::http("POST", &approve);
    assert_eq!(status, 200, "{said}");
    assert!(said.contains("— approved (phone, "), "{said}");
    // Used once: a replay, and the Deny link after it.
    let (status, said) = common::http("POST", &approve);
    assert_eq!(status, 409, "{said}");
    assert!(said.starts_with("answered already: allow (phone, "), "{said}");
    assert_eq!(common::http("POST", &deny).0, 409);
    let rec = running.await.unwrap();
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert!(s.project.join("pushed.txt").exists(), "approved from the phone, the call ran");
    let shown = stdout(&ctl(&s.th).args(["show", rec["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.contains("— approved (phone, "), "{shown}");
}

/// Waiting for an answer is silence, not a stall: approved after longer than `stall_timeout`, the
/// run goes on and completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_an_answer_is_no_stall() {
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    let s = scene("stall_timeout: 2s\n").await;
    let (running, ask) = run_until_it_asks(&s).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!running.is_finished(), "still waiting for the answer after more than its stall_timeout");
    assert!(ctl(&s.th).args(["approve", ask["run_id"].as_str().unwrap()]).output().unwrap().status.success());
    let rec = running.await.unwrap();
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert!(!std::path::Path::new(rec["run_dir"].as_str().unwrap()).join("asking").exists(), "the mark is gone with the wait");
}

/// The wait counts toward the run's `timeout`: an ask (here the default 30m) ends 30 s before the
/// run would be stopped — a refusal the agent hears in time to finish — never with the run killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_ends_before_the_runs_timeout() {
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    let s = scene_timed("", "40s").await;
    let (running, _) = run_until_it_asks(&s).await;
    let rec = running.await.unwrap();
    assert_eq!(rec["status"], "completed", "refused in time, not timed out: {rec:#}");
    assert!(told(&s.fake).contains("Nobody approved this within "), "{}", told(&s.fake));
    assert!(!s.project.join("pushed.txt").exists());
}

/// An engine killed while its run waits for approval: the ask outlives it. The run's agent loses
/// its engine's answer and ends; the daemon settles the run once, `blocked · needs_approval`, the
/// ask still open (now after the run); approving it reruns the routine resuming Claude Code's
/// session with exactly that call allowed — the call runs, the rerun completes, and the blocked
/// run stays as it was settled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_outlives_its_engine_and_its_approval_reruns_the_run_once() {
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    let s = scene("").await;
    // Claude Code keeps its sessions in ~/.claude, there on any machine it ran on before (the
    // sandbox lets a run write there; a folder that is not there is not made for it).
    std::fs::create_dir_all(s.th.user_home().join(".claude")).unwrap();
    let mut engine = common::tokio_ctl(&s.th).args(["run", "deps", "--wait", "--json"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let mut ask = Value::Null;
    nightshift_testkit::wait_until("the run to ask", Duration::from_secs(90), || {
        ask = json(&ctl(&s.th).args(["approvals", "--json"]).output().unwrap()).get(0).cloned().unwrap_or(Value::Null);
        !ask.is_null()
    });
    let run_id = ask["run_id"].as_str().unwrap().to_string();
    engine.kill().await.unwrap();

    let daemon = common::start_daemon(&s.th);
    let mut blocked = Value::Null;
    nightshift_testkit::wait_until("the run to be settled", Duration::from_secs(90), || {
        blocked = json(&ctl(&s.th).args(["show", &run_id, "--json"]).output().unwrap());
        !matches!(blocked["status"].as_str(), Some("queued" | "running"))
    });
    assert_eq!((blocked["status"].as_str(), blocked["reason"].as_str()), (Some("blocked"), Some("needs_approval")), "{blocked:#}");
    assert!(blocked["message"].as_str().unwrap().contains("the engine stopped while it waited for the answer"), "{blocked:#}");
    assert!(!s.project.join("pushed.txt").exists(), "nothing ran without an answer");
    let open = json(&ctl(&s.th).args(["approvals", "--json"]).output().unwrap());
    assert_eq!((open[0]["id"].as_str(), open[0]["held"].as_bool()), (ask["id"].as_str(), Some(false)), "the same ask, still open: {open:#}");

    let approved = ctl(&s.th).args(["approve", &run_id]).output().unwrap();
    assert!(approved.status.success(), "{}", common::stderr(&approved));
    let rerun_id = stdout(&approved).trim().to_string();
    let mut rerun = Value::Null;
    nightshift_testkit::wait_until("the rerun to end", Duration::from_secs(90), || {
        rerun = json(&ctl(&s.th).args(["show", &rerun_id, "--json"]).output().unwrap());
        !matches!(rerun["status"].as_str(), Some("queued" | "running"))
    });
    assert_eq!((rerun["status"].as_str(), rerun["trigger"].as_str()), (Some("completed"), Some("approval")), "{rerun:#}");
    assert_eq!(std::fs::read_to_string(s.project.join("pushed.txt")).unwrap(), "pushed\n", "the approved call ran in the rerun");
    assert_eq!(rerun["session_id"], blocked["session_id"], "the rerun continued the blocked run's session: {rerun:#}");
    let runs = common::runs(&s.th);
    assert_eq!(runs.len(), 2, "one run and one rerun: {runs:#?}");
    assert_eq!(json(&ctl(&s.th).args(["show", &run_id, "--json"]).output().unwrap())["finished_at"], blocked["finished_at"], "settled once");
    common::stop(daemon);
}
