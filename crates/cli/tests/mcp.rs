//! `nightshiftctl mcp` — Nightshift's tools over the Model Context Protocol — driven as a client
//! drives it: the real binary on stdio, one JSON-RPC message per line. The protocol (initialize,
//! tools/list with schemas a JSON Schema validator accepts, malformed and oversized frames, stdin
//! closed mid-call), every tool's answer and refusal, the `[mcp]` limits on what an agent may
//! create, and `serve`'s `/mcp` behind its tokens.

mod common;

use common::{ctl, json};
use nightshift_testkit::TestHome;
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// A client session with `nightshiftctl mcp`: what it writes on stdout, line by line; stderr kept
/// apart (only protocol may reach stdout).
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Session {
    fn start(th: &TestHome, env: &[(&str, &str)]) -> Session {
        let mut child = ctl(th).arg("mcp").envs(env.iter().copied()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut s = Session { child, stdin, lines, next_id: 1 };
        let init = s.request("initialize", json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "test", "version": "1" } }));
        assert_eq!(init["result"]["serverInfo"]["name"], "nightshift", "{init}");
        s.send_raw(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string());
        s
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line on stdout, which must be a JSON-RPC message.
    fn next(&mut self) -> Value {
        match self.lines.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout carried something not JSON-RPC ({e}): {line:?}")),
            Err(RecvTimeoutError::Timeout) => panic!("no answer within 60 s; the server said: {}", self.stderr()),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed stdout: {}", self.stderr()),
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send_raw(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string());
        let answer = self.next();
        assert_eq!(answer["id"], id, "answers come in order here: {answer}");
        answer
    }

    /// A tool's answer: `Ok(JSON it returned)` or `Err((code, message))` of a tool error.
    fn tool(&mut self, name: &str, args: Value) -> Result<Value, (String, String)> {
        let answer = self.request("tools/call", json!({ "name": name, "arguments": args }));
        let result = &answer["result"];
        assert!(result.is_object(), "{name}: not a tool result: {answer}");
        let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{name}: no text content: {answer}"));
        if result["isError"] == true {
            let e = &result["structuredContent"];
            return Err((e["code"].as_str().unwrap().to_string(), e["message"].as_str().unwrap().to_string()));
        }
        let answer: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: the text is not JSON ({e}): {text}"));
        assert!(answer.is_object(), "{name}: every answer is an object: {answer}");
        assert_eq!(result["structuredContent"], answer, "{name}: the structured content is the text's JSON");
        Ok(answer)
    }

    fn stderr(&mut self) -> String {
        let _ = self.child.kill();
        let mut s = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut s);
        }
        s
    }
}

fn settings(th: &TestHome, toml: &str) {
    std::fs::write(th.path().join("nightshift.toml"), toml).unwrap();
}

const TOOLS: &[&str] = &[
    "routines_list", "routine_show", "runs_list", "run_show", "run_report", "why", "usage", "accounts_health",
    "run_now", "run_cancel", "routine_create", "routine_schedule_once", "routine_pause", "routine_resume",
];

#[test]
fn every_tool_is_listed_with_a_schema_a_json_schema_validator_accepts() {
    let th = TestHome::new();
    let mut s = Session::start(&th, &[]);
    let listed = s.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOLS);
    for t in tools {
        assert!(!t["description"].as_str().unwrap().is_empty());
        let acts = t["description"].as_str().unwrap().contains("[mcp] allow");
        assert_eq!(t["annotations"]["readOnlyHint"], !acts, "{t}");
    }
    // Each schema through a real validator's meta-schema check (Python's `jsonschema`).
    let python = std::env::var("NIGHTSHIFT_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let schemas: Vec<&Value> = tools.iter().map(|t| &t["inputSchema"]).collect();
    let check = "import json,sys\nfrom jsonschema.validators import validator_for\nfor s in json.load(sys.stdin):\n    validator_for(s).check_schema(s)\n    assert s['type'] == 'object', s\nprint('ok')\n";
    let mut py = std::process::Command::new(&python).args(["-c", check]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("python3 with jsonschema (scripts/test.sh installs it)");
    py.stdin.take().unwrap().write_all(serde_json::to_string(&schemas).unwrap().as_bytes()).unwrap();
    let out = py.wait_with_output().unwrap();
    assert!(out.status.success(), "a schema is not valid JSON Schema: {}", String::from_utf8_lossy(&out.stderr));
    // The schema says what the tool reads: routine_create's fields, with their descriptions.
    let create = tools.iter().find(|t| t["name"] == "routine_create").unwrap();
    assert_eq!(create["inputSchema"]["required"], json!(["name"]));
    assert!(create["inputSchema"]["properties"]["mode"]["description"].as_str().unwrap().contains("max_mode"));
    assert!(create["inputSchema"]["properties"].get("secrets").is_none(), "no key that reaches secrets");
}

#[test]
fn reading_tools_answer_and_acting_ones_wait_for_the_users_leave() {
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 3 * * *\"\ncommand: echo hello from the routine\nnotify: never\n");
    settings(&th, "[[accounts]]\nagent = \"claude\"\nemail = \"me@home.dev\"\n");
    let mut s = Session::start(&th, &[]);
    let routines = s.tool("routines_list", json!({})).unwrap();
    assert_eq!(routines["routines"][0]["name"], "hello");
    let shown = s.tool("routine_show", json!({ "name": "hello", "fires": 3 })).unwrap();
    assert_eq!(shown["command"], "echo hello from the routine");
    assert_eq!(shown["next_fires"].as_array().unwrap().len(), 3);
    assert_eq!(s.tool("routine_show", json!({ "name": "nope" })).unwrap_err().0, "routine_not_found");
    assert_eq!(s.tool("runs_list", json!({})).unwrap()["runs"], json!([]));
    assert_eq!(s.tool("run_show", json!({ "id": "01NOPE" })).unwrap_err().0, "run_not_found");
    assert!(s.tool("why", json!({ "routine": "hello", "days": 2 })).unwrap()["next"].is_string());
    assert!(s.tool("usage", json!({ "by": "account" })).is_ok());
    assert_eq!(s.tool("usage", json!({ "by": "moon" })).unwrap_err().0, "usage");
    // An account's health, never where its login lives or what its secret is.
    let health = s.tool("accounts_health", json!({})).unwrap();
    let account = &health["accounts"][0];
    assert_eq!(account["account"], "me@home.dev", "{health}");
    for kept in ["config_dir", "secret", "secret_how", "token"] {
        assert!(account.get(kept).is_none(), "{kept} stays out: {health}");
    }

    // Acting: refused by default, naming the setting that allows it.
    let (code, message) = s.tool("run_now", json!({ "routine": "hello" })).unwrap_err();
    assert_eq!(code, "not_allowed");
    assert!(message.contains("[mcp] allow") && message.contains("\"run\""), "{message}");
    assert_eq!(s.tool("routine_pause", json!({ "name": "hello" })).unwrap_err().0, "not_allowed");
    assert_eq!(s.tool("routine_create", json!({ "name": "x", "command": "true", "schedule": "0 1 * * *" })).unwrap_err().0, "not_allowed");
    assert!(common::runs(&th).is_empty(), "nothing ran");

    // The user allows running (nightshift.toml is looked at again at most once a second: no
    // restart).
    settings(&th, "[[accounts]]\nagent = \"claude\"\nemail = \"me@home.dev\"\n[mcp]\nallow = [\"run\"]\n");
    std::thread::sleep(Duration::from_millis(1100));
    let started = s.tool("run_now", json!({ "routine": "hello", "wait_seconds": 60 })).unwrap();
    assert_eq!(started["finished"], true, "{started}");
    let id = started["run_id"].as_str().unwrap().to_string();
    assert_eq!(started["run"]["status"], "completed");
    assert_eq!(started["run"]["trigger"], "mcp", "the run says who started it");
    let shown = s.tool("run_show", json!({ "id": id })).unwrap();
    assert_eq!(shown["run"]["id"], id.as_str());
    assert!(shown.get("deliveries").is_none() && shown.get("report_html").is_none());
    assert!(s.tool("run_report", json!({ "id": id })).unwrap()["report"].as_str().unwrap().contains("hello from the routine"));
    let page = s.tool("runs_list", json!({ "routine": "hello", "status": "completed" })).unwrap();
    assert_eq!(page["runs"][0]["id"], id.as_str());
    assert_eq!(s.tool("run_cancel", json!({ "id": id })).unwrap()["cancelled"], json!(false), "it had ended");
    s.tool("routine_pause", json!({ "name": "hello" })).unwrap();
    assert_eq!(json(&ctl(&th).args(["routines", "list", "--json"]).output().unwrap())[0]["paused"], true);
    s.tool("routine_resume", json!({ "name": "hello" })).unwrap();
    assert_eq!(json(&ctl(&th).args(["routines", "list", "--json"]).output().unwrap())[0]["paused"], false);
    // Bad arguments are the tool's error, and the server goes on.
    let (code, message) = s.tool("why", json!({ "routine": "hello", "weeks": 2 })).unwrap_err();
    assert_eq!(code, "usage");
    assert!(message.contains("unknown field `weeks`"), "{message}");
    assert_eq!(s.tool("routines_list", json!({})).unwrap()["routines"][0]["name"], "hello");
    let stderr = s.stderr();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_routine_an_agent_creates_is_marked_disabled_no_looser_than_allowed_and_counted() {
    let th = TestHome::new();
    let work = th.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    settings(&th, "[mcp]\nallow = [\"create\"]\nmax_created_per_day = 2\n");
    let mut s = Session::start(&th, &[]);
    let cwd = work.display().to_string();

    // Beyond max_mode (edit by default): refused with the setting's name.
    let (code, message) = s.tool("routine_create", json!({ "name": "wild", "agent": "claude", "prompt": "go", "schedule": "0 1 * * *", "mode": "skip", "cwd": cwd })).unwrap_err();
    assert_eq!(code, "not_allowed");
    assert!(message.contains("`[mcp] max_mode = \"edit\"`"), "{message}");
    let (code, message) = s.tool("routine_create", json!({ "name": "shell", "command": "rm -rf ~", "schedule": "0 1 * * *" })).unwrap_err();
    assert_eq!(code, "not_allowed", "a command counts as skip");
    assert!(message.contains("shell command"), "{message}");
    // An account it was not given.
    let (code, message) = s.tool("routine_create", json!({ "name": "acct", "agent": "claude", "prompt": "go", "schedule": "0 1 * * *", "account": "boss@acme.dev", "cwd": cwd })).unwrap_err();
    assert_eq!(code, "not_allowed");
    assert!(message.contains("boss@acme.dev"), "{message}");
    // Problems come back by field.
    let (code, message) = s.tool("routine_create", json!({ "name": "bad", "agent": "claude", "prompt": "go", "schedule": "every day", "cwd": cwd })).unwrap_err();
    assert_eq!(code, "routine_invalid");
    assert!(message.starts_with("schedule:"), "{message}");
    // A key that would reach secrets or the sandbox is not one it has.
    assert_eq!(s.tool("routine_create", json!({ "name": "sneaky", "agent": "claude", "prompt": "go", "schedule": "0 1 * * *", "secrets": ["GH"] })).unwrap_err().0, "usage");
    assert_eq!(s.tool("routine_create", json!({ "name": "sneaky", "agent": "claude", "prompt": "go", "schedule": "0 1 * * *", "sandbox": "off" })).unwrap_err().0, "usage");

    // Within the limits: written disabled, marked, at the loosest mode allowed.
    let made = s.tool("routine_create", json!({ "name": "nightly-check", "agent": "claude", "prompt": "check CI", "schedule": "0 7 * * *", "cwd": cwd })).unwrap();
    assert_eq!(made["enabled"], false);
    assert_eq!(made["created_by"], "mcp");
    assert!(made["note"].as_str().unwrap().contains("enable_created"), "{made}");
    let text = std::fs::read_to_string(th.path().join("routines/nightly-check.yaml")).unwrap();
    assert!(text.contains("created_by: mcp") && text.contains("enabled: false") && text.contains("mode: edit"), "{text}");
    assert!(!text.contains("parent_run"), "not called from a run: {text}");
    let listed = json(&ctl(&th).args(["routines", "list", "--json"]).output().unwrap());
    let row = listed.as_array().unwrap().iter().find(|r| r["name"] == "nightly-check").unwrap();
    assert_eq!(row["created_by"], "mcp");
    assert_eq!(row["enabled"], false);
    let human = common::stdout(&ctl(&th).args(["routines", "list"]).output().unwrap());
    assert!(human.contains("by an agent (mcp)"), "{human}");

    // The user lets them start enabled; the second of the day is the last.
    settings(&th, "[mcp]\nallow = [\"create\"]\nmax_created_per_day = 2\nenable_created = true\nmax_mode = \"plan\"\n");
    std::thread::sleep(Duration::from_millis(1100));
    let once = s.tool("routine_schedule_once", json!({ "name": "later", "prompt": "look again", "after": "2h", "cwd": cwd })).unwrap();
    assert_eq!(once["enabled"], true);
    assert_eq!(once["next_fires"].as_array().unwrap().len(), 1);
    let text = std::fs::read_to_string(th.path().join("routines/later.yaml")).unwrap();
    assert!(text.contains("at: ") && text.contains("mode: plan"), "max_mode is the default mode: {text}");
    let (code, message) = s.tool("routine_schedule_once", json!({ "prompt": "a third", "after": "3h", "cwd": cwd })).unwrap_err();
    assert_eq!(code, "not_allowed");
    assert!(message.contains("max_created_per_day = 2"), "{message}");
    // A routine removed since still counted the day.
    std::fs::remove_file(th.path().join("routines/later.yaml")).unwrap();
    assert_eq!(s.tool("routine_schedule_once", json!({ "prompt": "a third", "after": "3h", "cwd": cwd })).unwrap_err().0, "not_allowed");
    assert_eq!(s.tool("routine_schedule_once", json!({ "prompt": "when?", "cwd": cwd })).unwrap_err().0, "usage");
}

#[test]
fn malformed_and_oversized_frames_get_errors_and_the_server_reads_on() {
    let th = TestHome::new();
    let mut s = Session::start(&th, &[]);
    s.send_raw("{not json");
    let e = s.next();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert_eq!(e["id"], Value::Null);
    s.send_raw(r#"{"jsonrpc":"2.0","id":41}"#);
    let e = s.next();
    assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!(41), json!(-32600)), "{e}");
    // 10 MB in one line: answered, skipped, never held whole.
    let big = format!(r#"{{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{{"name":"why","arguments":{{"routine":"{}"}}}}}}"#, "x".repeat(10 * 1024 * 1024));
    s.send_raw(&big);
    let e = s.next();
    assert_eq!(e["error"]["code"], -32600, "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("too large"), "{e}");
    let unknown = s.request("nightshift/launch", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let no_tool = s.request("tools/call", json!({ "name": "rm_rf", "arguments": {} }));
    assert_eq!(no_tool["error"]["code"], -32602, "{no_tool}");
    // Still serving.
    assert_eq!(s.request("ping", json!({}))["result"], json!({}));
    let stderr = s.stderr();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn stdin_closed_mid_call_ends_the_server_cleanly() {
    let th = TestHome::new();
    th.routine("slow", "schedule: \"0 3 * * *\"\ncommand: sleep 3\nnotify: never\n");
    settings(&th, "[mcp]\nallow = [\"run\"]\n");
    let mut s = Session::start(&th, &[]);
    s.send_raw(&json!({ "jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": { "name": "run_now", "arguments": { "routine": "slow", "wait_seconds": 30 } } }).to_string());
    drop(s.stdin.take());
    let mut status = None;
    nightshift_testkit::wait_until("the server to exit once stdin closed", Duration::from_secs(40), || {
        status = s.child.try_wait().unwrap();
        status.is_some()
    });
    let stderr = s.stderr();
    assert_eq!(status.unwrap().code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `serve`'s `/mcp`: one raw HTTP request; (status, the JSON-RPC answer in its body).
fn post_mcp(addr: &str, token: Option<&str>, body: &Value) -> (u16, Value) {
    use std::io::Read;
    let body = body.to_string();
    let mut req = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n", body.len());
    if let Some(t) = token {
        req += &format!("Authorization: Bearer {t}\r\n");
    }
    req += "\r\n";
    req += &body;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let payload = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let json = match (payload.find('{'), payload.rfind('}')) {
        (Some(a), Some(b)) => serde_json::from_str(&payload[a..=b]).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (status, json)
}

#[test]
fn serves_mcp_over_http_behind_the_token_and_a_read_only_token_cannot_act() {
    let th = TestHome::new();
    th.routine("hello", "schedule: \"0 3 * * *\"\ncommand: echo hi\nnotify: never\n");
    settings(&th, "[mcp]\nallow = [\"run\"]\n");
    let served = common::serve(&th, "127.0.0.1:0", &[]);
    let read_only = std::fs::read_to_string(th.path().join("serve-token-read-only")).unwrap();
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "routines_list", "arguments": {} } });
    let run = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "run_now", "arguments": { "routine": "hello" } } });

    assert_eq!(post_mcp(&served.addr, None, &init).0, 401, "the token is required");
    assert_eq!(post_mcp(&served.addr, Some("wrong"), &init).0, 401);
    let (code, answer) = post_mcp(&served.addr, Some(&served.token), &init);
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["result"]["serverInfo"]["name"], "nightshift", "{answer}");
    let (_, answer) = post_mcp(&served.addr, Some(read_only.trim()), &list);
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("\"hello\""), "a read-only token reads: {answer}");
    let (_, answer) = post_mcp(&served.addr, Some(read_only.trim()), &run);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(answer["result"]["structuredContent"]["code"], "read_only", "{answer}");
    assert!(common::runs(&th).is_empty(), "the read-only token started nothing");
    let (_, answer) = post_mcp(&served.addr, Some(&served.token), &run);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let id = answer["result"]["structuredContent"]["run_id"].as_str().unwrap().to_string();
    nightshift_testkit::wait_until("the run /mcp started to end", Duration::from_secs(30), || common::runs(&th).iter().any(|r| r["id"] == id.as_str() && r["status"] == "completed"));
}

/// The real Claude Code CLI, in a Nightshift run in the machine's sandbox, with `nightshiftctl
/// mcp` in its `--mcp-config`: the fake model lists the routines, schedules a follow-up "in 2
/// seconds" and asks `why` of it. The follow-up exists, enabled as the settings say, marked, with
/// the run as its parent; the daemon fires it once; `why` says whose follow-up it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_in_a_sandboxed_run_schedules_its_own_follow_up() {
    use nightshift_testkit::{FakeAnthropic, Reply};
    if nightshift_testkit::home::require_claude_cli().is_none() {
        return;
    }
    let th = TestHome::new();
    let project = th.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    settings(&th, "[mcp]\nallow = [\"create\"]\nenable_created = true\n");
    // In its folder: the sandbox gives the run a /tmp of its own.
    let config = project.join("mcp.json");
    std::fs::write(&config, json!({ "mcpServers": { "nightshift": { "type": "stdio", "command": env!("CARGO_BIN_EXE_nightshiftctl"), "args": ["mcp"] } } }).to_string()).unwrap();
    let fake = FakeAnthropic::start(None).await;
    let calls = vec![
        ("mcp__nightshift__routines_list".to_string(), json!({})),
        ("mcp__nightshift__routine_schedule_once".to_string(), json!({ "name": "check-ci", "prompt": "Check whether CI went green", "after": "2s" })),
        ("mcp__nightshift__why".to_string(), json!({ "routine": "check-ci" })),
    ];
    fake.set("tok-mcp", Reply::ToolCalls { calls, text: "Scheduled check-ci.".into() });
    th.routine(
        "nightly",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Fix the build, then schedule a check\nmode: edit\nallow: {{tools: [mcp__nightshift]}}\nargs: [--mcp-config, {}]\ntimeout: 2m\ncwd: {}\nenv:\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_OAUTH_TOKEN: tok-mcp\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n",
            config.display(),
            project.display(),
            fake.url()
        ),
    );
    let daemon = common::start_daemon(&th);
    daemon.wait_scheduling();
    let out = common::tokio_ctl(&th).args(["run", "nightly", "--wait", "--json"]).output().await.unwrap();
    let parent = json(&out);
    let log = |name: &str| std::fs::read_to_string(std::path::Path::new(parent["run_dir"].as_str().unwrap_or("/")).join(name)).unwrap_or_default();
    assert_eq!(parent["status"], "completed", "{}\n{}\n{}\n{}", parent["message"], common::stderr(&out), log("stdout.log"), log("stderr.log"));
    let parent_id = parent["id"].as_str().unwrap();
    common::assert_sandboxed(&parent);

    // What the tools answered, as the model saw it.
    let results: Vec<String> = fake
        .requests()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result")
        .map(|c| c["content"].to_string())
        .collect();
    assert!(results.iter().any(|r| r.contains("nightly")), "routines_list answered: {results:?}");
    assert!(results.iter().any(|r| r.contains("check-ci") && r.contains(parent_id)), "routine_schedule_once answered with the parent run: {results:?}");
    assert!(results.iter().any(|r| r.contains("scheduled by nightly")), "why named the parent: {results:?}");

    let text = std::fs::read_to_string(th.path().join("routines/check-ci.yaml")).unwrap();
    assert!(text.contains("created_by: mcp") && text.contains(&format!("parent_run: {parent_id}")) && text.contains("enabled: true") && text.contains(&format!("cwd: {}", project.display())), "{text}");
    assert!(text.contains(&fake.url()), "a follow-up works with its parent's env: {text}");
    // The daemon fires it once.
    nightshift_testkit::wait_until("the follow-up to run and end", Duration::from_secs(90), || {
        common::runs(&th).iter().any(|r| r["routine"] == "check-ci" && r["status"] == "completed")
    });
    std::thread::sleep(Duration::from_secs(3));
    let followups: Vec<Value> = common::runs(&th).into_iter().filter(|r| r["routine"] == "check-ci").collect();
    assert_eq!(followups.len(), 1, "{followups:#?}\n{}", daemon.output());
    // The follow-up's run says whose it is (the window's run detail reads the same field).
    let mut s = Session::start(&th, &[]);
    let shown = s.tool("run_show", json!({ "id": followups[0]["id"] })).unwrap();
    assert!(shown["scheduled_by"].as_str().unwrap().contains(&format!("scheduled by nightly at ")), "{shown:#}");
    drop(s);
    let why = json(&ctl(&th).args(["why", "check-ci", "--json"]).output().unwrap());
    assert!(why["scheduled_by"].as_str().unwrap().starts_with(&format!("scheduled by nightly at ")), "{why:#}");
    let said = common::stdout(&ctl(&th).args(["why", "check-ci"]).output().unwrap());
    assert!(said.contains(&format!("(run {parent_id})")), "{said}");
    common::stop(daemon);
}

/// The real Gemini CLI in a sandboxed run, with `nightshiftctl mcp` in its own `mcpServers`
/// settings: the same tools answer it (the server is not Claude's alone), and the follow-up it
/// schedules carries its run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_in_a_sandboxed_run_uses_the_same_tools() {
    use nightshift_testkit::fake_gemini::{FakeGemini, Reply};
    if nightshift_testkit::home::require_agent_cli("gemini").is_none() {
        return;
    }
    let th = TestHome::new();
    let project = th.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    settings(&th, "[mcp]\nallow = [\"create\"]\n");
    let gemini_home = th.path().join("gemini-home");
    std::fs::create_dir_all(gemini_home.join(".gemini")).unwrap();
    let mut config: Value = serde_json::from_str(&nightshift_testkit::fake_gemini::gemini_settings(1)).unwrap();
    config["mcpServers"] = json!({ "nightshift": { "command": env!("CARGO_BIN_EXE_nightshiftctl"), "args": ["mcp"], "trust": true } });
    std::fs::write(gemini_home.join(".gemini/settings.json"), config.to_string()).unwrap();
    let fake = FakeGemini::start(None).await;
    let calls = vec![
        ("mcp_nightshift_routines_list".to_string(), json!({})),
        ("mcp_nightshift_routine_schedule_once".to_string(), json!({ "name": "look-again", "prompt": "Look at the issues again", "at": "2030-01-02 09:00" })),
    ];
    fake.set("AIza-mcp", Reply::Calls { calls, text: "Scheduled look-again.".into() });
    th.routine(
        "triage",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: gemini\nmode: edit\nmodel: gemini-2.5-flash\nprompt: Triage, then schedule a second look\ntimeout: 2m\ncwd: {}\nenv:\n  GEMINI_CLI_HOME: {}\n  GEMINI_API_KEY: AIza-mcp\n  GOOGLE_GEMINI_BASE_URL: {}\n",
            project.display(),
            gemini_home.display(),
            fake.url()
        ),
    );
    let (rec, _) = common::run_wait(&th, "triage").await;
    let log = std::fs::read_to_string(std::path::Path::new(rec["run_dir"].as_str().unwrap()).join("stdout.log")).unwrap_or_default();
    assert_eq!(rec["status"], "completed", "{rec:#}\n{log}");
    common::assert_sandboxed(&rec);
    let id = rec["id"].as_str().unwrap();
    let answers: Vec<String> = fake
        .requests()
        .iter()
        .flat_map(|r| r.body["contents"].as_array().cloned().unwrap_or_default())
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.get("functionResponse").map(ToString::to_string))
        .collect();
    assert!(answers.iter().any(|a| a.contains("triage")), "routines_list answered: {answers:?}");
    assert!(answers.iter().any(|a| a.contains("look-again") && a.contains(id)), "routine_schedule_once answered with the run: {answers:?}");
    let text = std::fs::read_to_string(th.path().join("routines/look-again.yaml")).unwrap();
    assert!(text.contains("agent: gemini") && text.contains("created_by: mcp") && text.contains(&format!("parent_run: {id}")) && text.contains("enabled: false"), "{text}");
}
