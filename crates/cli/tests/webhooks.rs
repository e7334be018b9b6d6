//! Webhooks through the real `nightshiftctl`: the signing secret stored in the real OS keychain
//! (`webhooks set-secret`) and verified by the receiver; a delivery that was failing when the
//! daemon was killed with SIGKILL is resumed by the next daemon and accepted exactly once;
//! `deliveries` and `show` say what happened.

mod common;

use common::{bus_env, ctl, json, start_daemon_with, stderr, stdout};
use nightshift_testkit::{secs, wait_until, Answer, TestHome, WebhookReceiver};
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_delivery_survives_kill_9_of_the_daemon_and_is_accepted_once() {
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
        assert_eq!(std::env::var("NIGHTSHIFT_SKIP_KEYCHAIN").as_deref(), Ok("1"), "no D-Bus session bus: run through scripts/test.sh, or set NIGHTSHIFT_SKIP_KEYCHAIN=1");
        return;
    }
    let th = TestHome::new();
    // The first try fails; the retry (5 s later) is accepted.
    let receiver = WebhookReceiver::start(vec![Answer::Status(503), Answer::Accept], Some("shh-its-a-secret")).await;
    let service = format!("nightshift-test-{}", th.path().file_name().unwrap().to_string_lossy());
    std::fs::write(th.path().join("nightshift.toml"), format!("keychain_service = \"{service}\"\n[[webhooks]]\nname = \"team\"\nurl = \"{}\"\non = \"all\"\n", receiver.url())).unwrap();
    th.routine("nightly", "schedule: \"0 3 * * *\"\ncommand: \"echo all good\"\n");
    let env = bus_env();

    let mut set = ctl(&th).args(["webhooks", "set-secret", "team"]).envs(env.iter().map(|(k, v)| (*k, v.as_str()))).stdin(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    set.stdin.take().unwrap().write_all(b"shh-its-a-secret\n").unwrap();
    let out = set.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let unknown = ctl(&th).args(["webhooks", "set-secret", "nope"]).stdin(Stdio::null()).output().unwrap();
    assert!(stderr(&unknown).contains("no secret given") || stderr(&unknown).contains("no webhook named \"nope\""), "{}", stderr(&unknown));

    let refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let d = start_daemon_with(&th, &[], &refs);
    let rec = json(&ctl(&th).args(["run", "nightly", "--wait", "--json"]).envs(refs.iter().copied()).output().unwrap());
    let id = rec["id"].as_str().unwrap().to_string();
    wait_until("the first (failing) try", secs(15), || !receiver.received().is_empty());
    d.kill9();
    assert!(receiver.accepted().is_empty(), "not accepted yet");
    let listed = stdout(&ctl(&th).args(["deliveries"]).output().unwrap());
    assert!(listed.contains(&id) && listed.contains("pending") && listed.contains("HTTP 503"), "{listed}");

    let _d2 = start_daemon_with(&th, &[], &refs);
    wait_until("the retry accepted by the receiver", secs(20), || receiver.accepted().get(&id) == Some(&1));
    // Nothing more may come: a duplicate post would arrive in this time (an absence, not awaited).
    std::thread::sleep(Duration::from_millis(500));
    let seen = receiver.received();
    assert_eq!(seen.len(), 2, "one failed try, one accepted: {seen:?}");
    assert!(seen.iter().all(|r| r.signature_ok == Some(true)), "signed with the secret from the keychain");
    assert!(seen.iter().all(|r| r.key == id));
    let shown = stdout(&ctl(&th).args(["show", &id]).output().unwrap());
    assert!(shown.contains("webhook      team: delivered"), "{shown}");
    let failed = stdout(&ctl(&th).args(["deliveries", "--failed"]).output().unwrap());
    assert!(failed.contains("No failed webhook deliveries."), "{failed}");
    // Nothing secret in what the faces print.
    assert!(!shown.contains("shh-its-a-secret") && !listed.contains("shh-its-a-secret"));
}

/// `run --wait` delivers the routine's heartbeat pings before it exits, and `show` lists them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_wait_pings_start_and_end_and_show_lists_them() {
    let th = TestHome::new();
    let monitor = WebhookReceiver::start(vec![Answer::Accept], None).await;
    th.routine("nightly", &format!("schedule: \"0 3 * * *\"\ncommand: \"exit 4\"\nping: {}/nightly\n", monitor.url()));
    let out = ctl(&th).args(["run", "nightly", "--wait", "--json"]).output().unwrap();
    let id = json(&out)["id"].as_str().unwrap().to_string();
    let lines: Vec<String> = monitor.received().into_iter().map(|r| r.line).collect();
    assert_eq!(lines, ["POST /hook/nightly/start", "POST /hook/nightly/4"], "delivered before the command returned");
    let shown = stdout(&ctl(&th).args(["show", &id]).output().unwrap());
    assert!(shown.contains("ping         start: delivered") && shown.contains("ping         end: delivered"), "{shown}");
    assert!(!shown.contains(&monitor.url()), "the ping URL is the monitor's secret: {shown}");
}
