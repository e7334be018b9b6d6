//! The real Gemini CLI (npm `@google/gemini-cli`, pinned in tests/agents-cli), driven by
//! `nightshiftctl run --wait --json` against the fake Gemini API on loopback: every mode's flags
//! are accepted by the pinned CLI (in a folder nobody trusted), and every outcome is judged right.
//!
//! `NIGHTSHIFT_RECORD_FIXTURES=1` copies each run's streams into
//! `crates/core/tests/fixtures/gemini-<version>/` (how the fixtures there were made).

mod common;

use common::{ctl, record_fixture, run_wait};
use nightshift_testkit::fake_gemini::{gemini_settings, FakeGemini, Reply};
use nightshift_testkit::home::require_agent_cli;
use nightshift_testkit::TestHome;

const REPORT: &str = "## Nightly triage\n\n2 new issues labelled; nothing urgent.";

/// A gemini routine in `mode` whose settings send the CLI to `fake` with `key`.
fn routine(th: &TestHome, fake: &FakeGemini, key: &str, mode: &str, attempts: u32) {
    let gemini_home = th.path().join("gemini-home");
    std::fs::create_dir_all(gemini_home.join(".gemini")).unwrap();
    std::fs::write(gemini_home.join(".gemini/settings.json"), gemini_settings(attempts)).unwrap();
    th.routine(
        "triage",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: gemini\nmode: {mode}\nmodel: gemini-2.5-flash\nprompt: Triage new issues\ntimeout: 2m\ncwd: {}\nenv:\n  GEMINI_CLI_HOME: {}\n  GEMINI_API_KEY: {key}\n  GOOGLE_GEMINI_BASE_URL: {}\n",
            th.user_home().display(),
            gemini_home.display(),
            fake.url()
        ),
    );
}

async fn run(th: &TestHome, record_as: &str) -> (serde_json::Value, i32) {
    let (rec, code) = run_wait(th, "triage").await;
    record_fixture(&rec, "gemini-0.61.0", record_as);
    (rec, code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_starts_in_an_untrusted_folder_and_a_success_is_completed() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    fake.set("AIza-good", Reply::Success { text: REPORT.into() });
    for mode in ["auto", "edit", "plan", "skip"] {
        let th = TestHome::new();
        routine(&th, &fake, "AIza-good", mode, 1);
        let (rec, code) = run(&th, "success").await;
        assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "mode {mode}: {rec:#}");
        // Inside the machine's sandbox, with nothing it needed refused.
        common::assert_sandboxed(&rec);
        // The fake API's usageMetadata (100 prompt, 7 candidates tokens); no cache-write figure.
        assert_eq!((&rec["usage"]["input_tokens"], &rec["usage"]["output_tokens"], &rec["usage"]["cache_write_tokens"]), (&serde_json::json!(100), &serde_json::json!(7), &serde_json::Value::Null), "{rec:#}");
        assert!(rec["session_id"].as_str().is_some(), "{rec:#}");
        assert_eq!(std::fs::read_to_string(rec["report_path"].as_str().unwrap()).unwrap(), REPORT, "mode {mode}");
    }
    assert_eq!(fake.generate_keys(), vec!["AIza-good"; 4], "one API call per run, with the routine's key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_or_expired_key_is_auth_failed() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    fake.set("AIza-expired", Reply::Unauthenticated);
    for (key, name, exit) in [("AIza-unknown", "invalid-key", 144), ("AIza-expired", "unauthenticated", 145)] {
        let th = TestHome::new();
        routine(&th, &fake, key, "auto", 1);
        let (rec, code) = run(&th, name).await;
        assert_eq!(code, 1);
        assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{name}: {rec:#}");
        assert_eq!(rec["exit_code"], exit, "the HTTP status cut to 8 bits: {rec:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_daily_quota_is_rate_limited_until_pacific_midnight() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    fake.set("AIza-quota", Reply::QuotaExhausted);
    let th = TestHome::new();
    routine(&th, &fake, "AIza-quota", "auto", 1);
    let (rec, _) = run(&th, "quota").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("rate_limited")), "{rec:#}");
    // The CLI reports a per-day quota in its own words (its stderr dump holds the API's).
    // … and a manual run says when the quota resets, without waiting for it.
    let message = rec["message"].as_str().unwrap();
    assert!(message.starts_with("[API Error: You have exhausted your daily quota on this model.]; the limit resets at "), "{rec:#}");
    assert!(message.ends_with("`--wait-for-limit` waits for it"), "{rec:#}");
    // Daily quotas reset at midnight Pacific time.
    use chrono::TimeZone;
    let pacific: chrono_tz::Tz = "America/Los_Angeles".parse().unwrap();
    let midnight = chrono::Utc::now().with_timezone(&pacific).date_naive().succ_opt().unwrap().and_hms_opt(0, 0, 0).unwrap();
    let expected = pacific.from_local_datetime(&midnight).earliest().unwrap().with_timezone(&chrono::Utc);
    let resets = chrono::DateTime::parse_from_rfc3339(rec["resets_at"].as_str().expect("resets_at")).unwrap();
    assert_eq!(resets, expected, "{rec:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_api_unavailable_and_a_retried_one_completes() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    fake.set("AIza-500", Reply::ServerError);
    fake.set("AIza-flaky", Reply::Flaky { failures: 1, text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, &fake, "AIza-500", "auto", 1);
    let (rec, _) = run(&th, "500").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("api_unavailable")), "{rec:#}");
    assert!(!rec["message"].as_str().unwrap().contains('\u{1b}'), "no ANSI codes in messages: {rec:#}");
    let th = TestHome::new();
    routine(&th, &fake, "AIza-flaky", "auto", 3);
    let (rec, code) = run(&th, "retried-success").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
}

/// `allow.dirs` reaches Gemini CLI as `--include-directories`: the pinned CLI takes it and tells
/// the model the folder is in its workspace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_dirs_reach_gemini() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    fake.set("AIza-dirs", Reply::Success { text: REPORT.into() });
    let th = TestHome::new();
    routine(&th, &fake, "AIza-dirs", "edit", 1);
    let docs = common::allow_a_folder(&th, "triage");
    let (rec, code) = run_wait(&th, "triage").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    let said = fake.requests().into_iter().filter(|r| r.path.contains("enerateContent")).map(|r| r.body.to_string()).collect::<String>();
    assert!(said.contains(&docs.display().to_string()), "the folder is not in what Gemini CLI told the model");
}

/// `allow.tools` and `deny.tools` reach Gemini CLI as a policy of its own policy engine, and the
/// fake API's model asks for a shell command: with `allow.tools: [read_file, grep_search]` the
/// shell tool is not there for it — the command never runs, in every mode — and the run lists the
/// call under `denials`; `on_denial: fail` makes it a failure; `run_shell_command(touch)` allowed
/// lets it run, even in `edit` (where the CLI itself would ask); `deny.tools` refuses it in `skip`
/// (yolo) too. The policy file is in the run's directory, never the user's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_and_deny_decide_which_tool_calls_run_and_refusals_are_recorded() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    let th = TestHome::new();
    let marker = th.user_home().join("touched-by-gemini");
    fake.set("AIza-tools", Reply::Shell { command: format!("touch {}", marker.display()), text: REPORT.into() });
    let attempt = |mode: &str, extra: &str| {
        routine(&th, &fake, "AIza-tools", mode, 1);
        let file = th.path().join("routines/triage.yaml");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, format!("{text}{extra}")).unwrap();
    };
    for mode in ["edit", "auto", "plan", "skip"] {
        attempt(mode, "allow: {tools: [read_file, grep_search]}\n");
        let (rec, code) = run_wait(&th, "triage").await;
        assert!(!marker.exists(), "mode {mode}: a tool outside allow.tools ran: {rec:#}");
        assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "mode {mode}: {rec:#}");
        let denials = rec["denials"].as_array().unwrap();
        assert!(denials.iter().any(|d| d["tool"] == "run_shell_command" && d["input"].as_str().unwrap().starts_with("touch ")), "mode {mode}: {rec:#}");
        let run_dir = std::path::PathBuf::from(rec["run_dir"].as_str().unwrap());
        assert!(std::fs::read_to_string(run_dir.join("gemini-policy.toml")).unwrap().contains("toolName = \"read_file\""), "mode {mode}");
    }
    attempt("edit", "allow: {tools: [read_file]}\non_denial: fail\n");
    let (rec, _) = run_wait(&th, "triage").await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("permission_denied")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().starts_with("1 tool call refused: run_shell_command(touch "), "{rec:#}");

    attempt("skip", "deny: {tools: [\"run_shell_command(touch)\"]}\n");
    let (rec, _) = run_wait(&th, "triage").await;
    assert!(!marker.exists(), "deny.tools refuses in skip (yolo) mode: {rec:#}");
    assert!(rec["denials"].as_array().unwrap().iter().any(|d| d["tool"] == "run_shell_command"), "{rec:#}");

    attempt("edit", "allow: {tools: [read_file, \"run_shell_command(touch *)\"]}\n");
    let (rec, code) = run_wait(&th, "triage").await;
    assert_eq!((code, rec["status"].as_str()), (0, Some("completed")), "{rec:#}");
    assert!(marker.exists(), "the allowed rule ran: {rec:#}");
    assert_eq!(rec["denials"], serde_json::json!([]), "{rec:#}");
    assert!(!th.user_home().join(".gemini/policies").exists(), "nothing written into the user's own Gemini settings");
}

/// Retries that resume: the first try ran a shell command, then the API failed (500, the CLI's
/// own retries off); the next try is `gemini --resume <session>` with the words to check what was
/// done — the fake sees the session's earlier turns (the call and its result) followed by those
/// words, the command ran once, one record with both tries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_work_resumes_the_session_and_never_repeats_the_command() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    let th = TestHome::new();
    let counter = th.user_home().join("commands-run");
    fake.set("AIza-resume", Reply::DropsAfterShell { command: format!("echo ran >> {}", counter.display()), text: REPORT.into() });
    routine(&th, &fake, "AIza-resume", "auto", 1);
    let file = th.path().join("routines/triage.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}retries: 1\nretry_backoff: 1s\n")).unwrap();
    let (rec, _) = run_wait(&th, "triage").await;
    common::assert_resumed_once(&th, &rec, &counter);
    let turns: Vec<serde_json::Value> = fake.requests().into_iter().filter(|r| r.path.contains("streamGenerateContent")).map(|r| r.body).collect();
    let said = turns.last().unwrap()["contents"].to_string();
    assert!(said.contains("functionResponse") && said.contains(common::RESUME_WORDS), "{said}");
}

/// A home whose `triage` routine (Gemini, `edit`, `allow.tools: [read_file]`, `on_denial: ask`,
/// plus `extra`) is asked by the fake's model to `touch` a file outside its rules: the home, the
/// file the command would make, the routine's file and its text.
async fn asking_home(extra: &str) -> (FakeGemini, TestHome, std::path::PathBuf, std::path::PathBuf, String) {
    let fake = FakeGemini::start(None).await;
    let th = TestHome::new();
    let marker = th.user_home().join("touched-after-approval");
    fake.set("AIza-ask", Reply::Shell { command: format!("touch {}", marker.display()), text: REPORT.into() });
    routine(&th, &fake, "AIza-ask", "edit", 1);
    let file = th.path().join("routines/triage.yaml");
    let text = format!("{}allow: {{tools: [read_file]}}\non_denial: ask\n{extra}", std::fs::read_to_string(&file).unwrap());
    std::fs::write(&file, &text).unwrap();
    (fake, th, marker, file, text)
}

/// `on_denial: ask` with an agent that cannot hold a call (Gemini CLI has no prompt hook): the
/// shell command outside `allow.tools` is refused, and the run ends `blocked · needs_approval`
/// naming it, with one ask after the run; `approve` reruns it (trigger `approval`) with exactly
/// that call allowed, resuming the session — the fake sees the earlier turns and the approval's
/// words, the command runs once, the rerun completes; the routine's file is never changed; the
/// approval is answered once, and `show` and the report tell it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_after_the_run_reruns_it_with_the_one_call_allowed() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let (fake, th, marker, file, text) = asking_home("").await;

    let (blocked, code) = run_wait(&th, "triage").await;
    assert_eq!((blocked["status"].as_str(), blocked["reason"].as_str()), (Some("blocked"), Some("needs_approval")), "{blocked:#}");
    assert_ne!(code, 0, "a blocked run is not a success");
    let message = blocked["message"].as_str().unwrap();
    assert!(message.starts_with("needs approval for run_shell_command(touch ") && message.contains("gemini could not ask while it ran"), "{message}");
    assert!(!marker.exists(), "the refused command did not run");
    let id = blocked["id"].as_str().unwrap();

    let asks = common::json(&ctl(&th).args(["approvals", "--json"]).output().unwrap());
    assert_eq!(asks.as_array().unwrap().len(), 1, "{asks:#}");
    assert_eq!((&asks[0]["run_id"], &asks[0]["held"], &asks[0]["tool"]), (&serde_json::json!(id), &serde_json::json!(false), &serde_json::json!("run_shell_command")), "{asks:#}");

    let out = ctl(&th).args(["approve", id]).output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let rerun_id = common::stdout(&out).trim().to_string();
    assert!(common::stderr(&out).contains(&format!("approved for one rerun of run {id}")), "{}", common::stderr(&out));
    let rerun = settled(&th, &rerun_id).await;
    assert_eq!((rerun["status"].as_str(), rerun["trigger"].as_str()), (Some("completed"), Some("approval")), "{rerun:#}");
    assert!(marker.exists(), "the approved command ran in the rerun: {rerun:#}");
    assert_eq!(rerun["denials"], serde_json::json!([]), "{rerun:#}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "an approval never changes the routine's file");
    let policy = std::fs::read_to_string(std::path::Path::new(rerun["run_dir"].as_str().unwrap()).join("gemini-policy.toml")).unwrap();
    assert!(policy.contains(&format!("commandPrefix = \"touch {}\"", marker.display())), "exactly that call allowed: {policy}");
    // The blocked run's session, continued: its earlier turns, then the approval's words.
    let turns: Vec<serde_json::Value> = fake.requests().into_iter().filter(|r| r.path.contains("streamGenerateContent")).map(|r| r.body).collect();
    let resumed = turns.iter().map(|t| t["contents"].to_string()).find(|c| c.contains("has now approved it for this run")).expect("the rerun was told of the approval");
    assert!(resumed.contains("functionCall") && resumed.contains("functionResponse"), "the rerun continued the session: {resumed}");

    let again = ctl(&th).args(["approve", id]).output().unwrap();
    assert!(!again.status.success() && common::stderr(&again).contains("waits for no approval"), "answered once: {}", common::stderr(&again));
    let shown = common::stdout(&ctl(&th).args(["show", id]).output().unwrap());
    assert!(shown.contains("approved (cli, ") && shown.contains(&format!("rerun as run {rerun_id}")), "{shown}");
    let report = common::stdout(&ctl(&th).args(["report", &rerun_id]).output().unwrap());
    assert!(report.contains(&format!("rerun of run {id} after approval (cli, ")) && report.contains("run_shell_command(touch "), "{report}");
}

/// The same ask answered from where the routine's webhook lands: the blocked run's post carries
/// `serve`'s signed Approve and Deny links (with the calls in words); the Approve link answers
/// once and starts the rerun there — a replay and the Deny link after it are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_after_the_run_from_the_webhooks_signed_link() {
    use nightshift_testkit::webhook_receiver::{Answer, WebhookReceiver};
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let (_fake, th, marker, _, _) = asking_home("webhooks: [team]\n").await;
    let receiver = WebhookReceiver::start(vec![Answer::Accept], None).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    std::fs::write(th.path().join("nightshift.toml"), format!("[serve]\nlisten = \"127.0.0.1:{port}\"\n[[webhooks]]\nname = \"team\"\nurl = \"{}\"\n", receiver.url())).unwrap();
    let _served = common::serve(&th, &format!("127.0.0.1:{port}"), &[]);

    let (blocked, _) = run_wait(&th, "triage").await;
    assert_eq!(blocked["reason"], "needs_approval", "{blocked:#}");
    nightshift_testkit::wait_until("the webhook's post", std::time::Duration::from_secs(20), || !receiver.received().is_empty());
    let posted: serde_json::Value = serde_json::from_str(&receiver.received()[0].body).unwrap();
    let approval = &posted["approval"];
    assert!(approval["calls"].as_str().unwrap().starts_with("run_shell_command(touch "), "{posted:#}");
    let approve = approval["approve"].as_str().unwrap().to_string();
    let deny = approval["deny"].as_str().unwrap().to_string();
    assert!(approve.starts_with(&format!("http://127.0.0.1:{port}/approvals/")) && approve.contains("/allow?until="), "{approve}");
    let (status, said) = common::http("POST", &approve);
    assert_eq!(status, 200, "{said}");
    assert!(said.contains("— approved (phone, ") && said.contains("rerun as run "), "{said}");
    let rerun_id = said.split("rerun as run ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    let (status, said) = common::http("POST", &approve);
    assert_eq!(status, 409, "used once: {said}");
    assert_eq!(common::http("POST", &deny).0, 409, "answered already");
    let rerun = settled(&th, &rerun_id).await;
    assert_eq!((rerun["status"].as_str(), rerun["trigger"].as_str()), (Some("completed"), Some("approval")), "{rerun:#}");
    assert!(marker.exists(), "approved from the link, the command ran in the rerun");
}

/// The same ask on the desktop: the daemon delivers the blocked run's finish notification — "?
/// triage · needs approval", the calls in its body, Approve and Deny on a real notification server
/// —; clicking Approve there reruns it in the daemon, and the rerun completes with the call run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_after_the_run_from_the_desktop_notification() {
    use nightshift_testkit::dbus::NotificationBus;
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let (_fake, th, marker, _, _) = asking_home("").await;
    let bus = NotificationBus::start(th.path(), "record");
    let daemon = common::start_daemon_with(&th, &["--notify"], &[("DBUS_SESSION_BUS_ADDRESS", bus.address.as_str())]);
    daemon.wait_scheduling();

    let (blocked, _) = run_wait(&th, "triage").await;
    assert_eq!(blocked["reason"], "needs_approval", "{blocked:#}");
    let mut asked = None;
    nightshift_testkit::wait_until("the blocked run's notification", std::time::Duration::from_secs(30), || {
        asked = bus.notifications().iter().position(|n| n["actions"].as_array().is_some_and(|a| a.iter().any(|x| x == "approve")));
        asked.is_some()
    });
    let at = asked.unwrap();
    let shown = &bus.notifications()[at];
    assert_eq!(shown["summary"], "? triage · needs approval", "{shown}");
    assert!(shown["body"].as_str().unwrap().starts_with("needs approval for run_shell_command(touch "), "{shown}");
    bus.click(at + 1, "approve");
    let mut rerun = serde_json::Value::Null;
    nightshift_testkit::wait_until("the rerun to end", std::time::Duration::from_secs(60), || {
        rerun = common::runs(&th).into_iter().find(|r| r["trigger"] == "approval").unwrap_or_default();
        matches!(rerun["status"].as_str(), Some(s) if s != "queued" && s != "running")
    });
    assert_eq!(rerun["status"], "completed", "{rerun:#}");
    assert!(marker.exists(), "approved from the notification, the command ran in the rerun");
    let shown = common::stdout(&ctl(&th).args(["show", blocked["id"].as_str().unwrap()]).output().unwrap());
    assert!(shown.contains("approved (desktop, "), "{shown}");
    common::stop(daemon);
}

/// An approval whose process stopped before it started the rerun (here: written into the
/// database by a process that then went away): the daemon's scheduler starts it, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_whose_process_stopped_is_rerun_by_the_daemon() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let (_fake, th, marker, _, _) = asking_home("").await;
    let (blocked, _) = run_wait(&th, "triage").await;
    assert_eq!(blocked["reason"], "needs_approval", "{blocked:#}");
    let store = nightshift_core::store::Store::open(&th.path().join("nightshift.db")).unwrap();
    let ask = store.asks_of(blocked["id"].as_str().unwrap()).unwrap().remove(0);
    assert!(store.answer_ask(&ask.id, "allow", false, "phone", chrono::Utc::now()).unwrap());
    drop(store);
    let daemon = common::start_daemon(&th);
    let mut rerun = serde_json::Value::Null;
    nightshift_testkit::wait_until("the daemon's rerun to end", std::time::Duration::from_secs(60), || {
        rerun = common::runs(&th).into_iter().find(|r| r["trigger"] == "approval").unwrap_or_default();
        matches!(rerun["status"].as_str(), Some(s) if s != "queued" && s != "running")
    });
    assert_eq!(rerun["status"], "completed", "{rerun:#}");
    assert!(marker.exists());
    assert_eq!(common::runs(&th).iter().filter(|r| r["trigger"] == "approval").count(), 1, "one rerun");
    common::stop(daemon);
}

/// Run `id`'s record once it is final (the CLI that started it has returned; the next command
/// settles it), within a minute.
async fn settled(th: &TestHome, id: &str) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let rec = common::json(&ctl(th).args(["show", id, "--json"]).output().unwrap());
        if !matches!(rec["status"].as_str(), Some("queued" | "running")) {
            return rec;
        }
        assert!(std::time::Instant::now() < deadline, "run {id} did not end within a minute: {rec:#}");
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}

/// In the machine's sandbox (`mode: skip`: nothing of Gemini CLI's own asks), a shell command
/// that writes outside the run's folders fails, nothing is written, and the refusal is one of the
/// run's denials, read from the command's result in Gemini CLI's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_outside_its_folders_is_refused_by_the_sandbox_and_is_a_denial() {
    if require_agent_cli("gemini").is_none() {
        return;
    }
    let fake = FakeGemini::start(None).await;
    let th = TestHome::new();
    let outside_dir = common::outside_dir();
    let outside = outside_dir.path().join("outside.txt");
    fake.set("AIza-outside", Reply::Shell { command: format!("echo changed > {}", outside.display()), text: REPORT.into() });
    routine(&th, &fake, "AIza-outside", "skip", 1);
    let (rec, _) = run_wait(&th, "triage").await;
    common::assert_write_refused(&rec, &outside, "run_shell_command");
}
