//! `nightshiftctl usage`: what runs used, from the agents' own final events, added up by routine,
//! account and day — as a table, JSON and CSV; a figure no run reported stays empty.

mod common;
use common::*;
use nightshift_testkit::TestHome;

#[test]
fn usage_adds_up_what_the_agents_reported() {
    let th = TestHome::new();
    // A stand-in Claude Code that ends with the result event the real CLI writes.
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","total_cost_usd":0.25,"usage":{"input_tokens":1000,"output_tokens":200,"cache_read_input_tokens":50,"cache_creation_input_tokens":5},"modelUsage":{"claude-sonnet-5-5":{"outputTokens":200}}}"#;
    th.script("claude", &format!("echo '{result}'"));
    th.routine("review", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: review\n");
    th.routine("plain", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    for name in ["review", "review", "plain"] {
        let out = ctl(&th).args(["run", name, "--wait"]).output().unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
    }
    let rows = json(&ctl(&th).args(["usage", "--json"]).output().unwrap());
    assert_eq!(
        rows,
        serde_json::json!([
            {"key": "review", "runs": 2, "input_tokens": 2000, "output_tokens": 400, "cache_read_tokens": 100, "cache_write_tokens": 10, "cost_usd": 0.5},
            {"key": "plain", "runs": 1, "input_tokens": null, "output_tokens": null, "cache_read_tokens": null, "cache_write_tokens": null, "cost_usd": null}
        ])
    );
    let by_status = json(&ctl(&th).args(["usage", "--by", "status", "--json"]).output().unwrap());
    assert_eq!((by_status[0]["key"].as_str(), by_status[0]["runs"].as_u64()), (Some("completed"), Some(3)), "{by_status}");
    let by_account = json(&ctl(&th).args(["usage", "--by", "account", "--json"]).output().unwrap());
    assert_eq!((by_account[0]["key"].as_str(), by_account[0]["runs"].as_u64()), (Some("-"), Some(3)));
    let today = chrono::Local::now().format("%Y-%m-%d").to_string();
    let csv = stdout(&ctl(&th).args(["usage", "--by", "day", "--csv"]).output().unwrap());
    assert_eq!(csv, format!("day,runs,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd\n{today},3,2000,400,100,10,0.500000\n"));
    let table = stdout(&ctl(&th).args(["usage"]).output().unwrap());
    assert!(table.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["review", "2", "2,000", "400", "100", "10", "$0.5000"]), "{table}");
    assert!(table.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["plain", "1", "\u{2013}", "\u{2013}", "\u{2013}", "\u{2013}", "-"]), "{table}");
    // Nothing before the window.
    let tomorrow = (chrono::Local::now() + chrono::Duration::days(1)).format("%Y-%m-%d").to_string();
    assert_eq!(stdout(&ctl(&th).args(["usage", "--since", &tomorrow]).output().unwrap()).lines().next().map(|l| l.starts_with("no runs since")), Some(true));
    let bad = ctl(&th).args(["usage", "--since", "yesterday-ish"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("give a duration back from now (30d, 12h) or a date (2026-11-01)"), "{}", stderr(&bad));
    // `show` says it too.
    let id = json(&ctl(&th).args(["runs", "--routine", "review", "--json"]).output().unwrap())[0]["id"].as_str().unwrap().to_string();
    let shown = stdout(&ctl(&th).args(["show", &id]).output().unwrap());
    assert!(shown.contains("tokens       in 1,000 · out 200 · cache read 50 · cache write 5 · claude-sonnet-5-5"), "{shown}");
}

/// A spent day's budget: `run` says so and exits 1 with nothing started; `--ignore-budget`
/// (a person at the keyboard) starts it anyway.
#[test]
fn a_spent_budget_blocks_run_unless_told_to_ignore_it() {
    let th = TestHome::new();
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s","total_cost_usd":0.25}"#;
    th.script("claude", &format!("echo '{result}'"));
    th.routine("review", "schedule: \"0 3 * * *\"\ntimezone: UTC\nagent: claude\nprompt: review\nbudget: {day: 0.2}\n");
    let first = ctl(&th).args(["run", "review", "--wait", "--json"]).output().unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let out = ctl(&th).args(["run", "review", "--wait", "--json"]).output().unwrap();
    let rec = json(&out);
    assert_eq!((out.status.code(), rec["status"].as_str(), rec["reason"].as_str()), (Some(1), Some("blocked"), Some("budget")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().starts_with("not started: spent $0.25 of $0.20 today (routine review); frees at midnight UTC"), "{rec:#}");
    let anyway = ctl(&th).args(["run", "review", "--wait", "--json", "--ignore-budget"]).output().unwrap();
    assert_eq!(json(&anyway)["status"], "completed", "{}", stderr(&anyway));
    // Where the budget stands: alone as JSON, and below the usage table.
    let budgets = json(&ctl(&th).args(["usage", "--budgets", "--json"]).output().unwrap());
    assert_eq!(budgets.as_array().unwrap().len(), 1, "{budgets:#}");
    assert_eq!((budgets[0]["scope"].as_str(), budgets[0]["period"].as_str(), budgets[0]["spent"].as_f64(), budgets[0]["cap"].as_f64()), (Some("routine review"), Some("day"), Some(0.5), Some(0.2)));
    assert_eq!(budgets[0]["timezone"], "UTC");
    let table = stdout(&ctl(&th).args(["usage"]).output().unwrap());
    assert!(table.lines().any(|l| l.split_whitespace().take(6).collect::<Vec<_>>() == ["routine", "review", "day", "$0.50", "$0.20", "250"]), "{table}");
}
