//! Routine files: every problem reported with file:line:col, all at once; one bad file never
//! stops the others.

use nightshift_core::routine::{load_dir, AccountChoice, Action, Mode, NotifyPolicy};
use nightshift_core::words::Agent;
use nightshift_core::{EngineOptions, Home};
use nightshift_testkit::TestHome;
use std::time::Duration;

fn messages(th: &TestHome) -> Vec<String> {
    let set = load_dir(&Home::at(th.path()), &[]);
    set.diagnostics().map(|d| d.to_string()).collect()
}

#[test]
fn a_full_routine_parses_with_agents_cli_field_names() {
    let th = TestHome::new();
    th.routine(
        "pr-review",
        r#"
schedule: "0 9 * * 1-5"
timezone: Europe/Berlin
agent: claude
prompt: "Review open PRs in {repo}. Last time: {last_report}"
mode: plan
config:
  model: opus
timeout: 30m
cwd: /tmp
env: { FOO: bar }
accounts: [me@home.dev, work@acme.dev]
catchup: false
variables: { repo: acme/app }
"#,
    );
    let set = load_dir(&Home::at(th.path()), &[]);
    assert!(set.invalid.is_empty(), "{:?}", set.invalid);
    let r = set.get("pr-review").unwrap();
    assert_eq!(r.timezone.name(), "Europe/Berlin");
    assert_eq!(r.timeout, Duration::from_secs(1800));
    assert!(!r.catchup);
    assert!(r.enabled);
    assert_eq!(r.notify, NotifyPolicy::Always, "agent routines notify always by default");
    assert_eq!(r.account, AccountChoice::Pool(vec!["me@home.dev".into(), "work@acme.dev".into()]));
    match &r.action {
        Action::Agent { agent, mode, model, .. } => {
            assert_eq!(*agent, Agent::Claude);
            assert_eq!(*mode, Mode::Plan);
            assert_eq!(model.as_deref(), Some("opus"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn command_routines_default_to_failure_notifications_and_ten_minutes() {
    let th = TestHome::new();
    th.routine("check", "schedule: \"*/5 * * * *\"\ncommand: ./check.sh\n");
    let set = load_dir(&Home::at(th.path()), &[]);
    let r = set.get("check").unwrap();
    assert_eq!(r.notify, NotifyPolicy::Failures);
    assert_eq!(r.timeout, Duration::from_secs(600));
}

#[test]
fn every_problem_in_a_file_is_reported_with_its_position() {
    let th = TestHome::new();
    th.routine(
        "x",
        "schedule: \"61 9 * * *\"\ntimezone: Mars/Olympus\nagent: claud\nshedule: x\ntimeout: soon\nmode: yolo\n",
    );
    let msgs = messages(&th);
    let expect = [
        "routines/x.yaml:1:11: invalid cron expression \"61 9 * * *\"",
        "routines/x.yaml:2:11: unknown time zone \"Mars/Olympus\"",
        "routines/x.yaml:3:8: unknown agent \"claud\" (expected claude, codex, gemini, opencode, copilot); did you mean \"claude\"?",
        "routines/x.yaml:4:1: unknown key `shedule`; did you mean `schedule`?",
        "routines/x.yaml:5:10: invalid duration \"soon\" for `timeout`",
        "routines/x.yaml:6:7: unknown mode \"yolo\"",
    ];
    for e in expect {
        assert!(msgs.iter().any(|m| m.starts_with(e)), "missing {e:?} in {msgs:#?}");
    }
    // The agent has no prompt either.
    assert!(msgs.iter().any(|m| m.contains("needs a `prompt`")), "{msgs:#?}");
}

/// What a night does through outages, overlaps and stampedes is checked where it is written.
#[test]
fn retry_overlap_catchup_jitter_and_ping_fields_are_checked_with_their_positions() {
    let th = TestHome::new();
    th.routine("a", "schedule: \"0 2 * * *\"\ncommand: ls\nretries: 11\nretry_backoff: 2h\noverlap: sometimes\njitter: 25h\n");
    th.routine("b", "at: \"2026-12-24T18:00:00Z\"\ncommand: ls\njitter: 5m\ncatchup: soon\nretries: two\n");
    th.routine("c", "schedule: \"0 2 * * *\"\ncommand: ls\njitter: 30\nping: ftp://hc-ping.com/x\nnotify_missed: sometimes\n");
    th.routine("d", "schedule: \"0 2 * * *\"\ncommand: ls\nping: \"https://hc-ping.com/abc?x=1\"\n");
    let msgs = messages(&th);
    let expect = [
        "routines/a.yaml:3:10: `retries: 11` is more than 10",
        "routines/a.yaml:4:16: `retry_backoff` is at most 1h",
        "routines/a.yaml:5:10: unknown overlap \"sometimes\" (expected skip, queue or replace)",
        "routines/a.yaml:6:9: `jitter` is at most 24h",
        "routines/b.yaml:3:1: `jitter` spreads the slots of a `schedule`",
        "routines/b.yaml:4:10: invalid duration \"soon\" for `catchup`",
        "routines/b.yaml:5:10: `retries` must be a whole number from 0 to 10, found \"two\"",
        "routines/c.yaml:3:9: `jitter: 30` has no unit",
        "routines/c.yaml:4:7: `ping` must be an http(s) URL such as https://hc-ping.com/<uuid> (found \"ftp://hc-ping.com/x\")",
        "routines/c.yaml:5:16: `notify_missed` must be true or false",
        "routines/d.yaml:3:7: `ping` takes a plain URL (no `?` or `#`)",
    ];
    for e in expect {
        assert!(msgs.iter().any(|m| m.starts_with(e)), "missing {e:?} in {msgs:#?}");
    }
    th.routine("ok", "schedule: \"0 2 * * *\"\ncommand: ls\njitter: 10m\nping: https://hc-ping.com/abc/\n");
    let set = load_dir(&Home::at(th.path()), &[]);
    let ok = set.get("ok").unwrap();
    assert_eq!(ok.schedule.as_ref().unwrap().jitter.unwrap().span, Duration::from_secs(600));
    assert_eq!(ok.ping.as_deref(), Some("https://hc-ping.com/abc"));
    assert!(!ok.notify_missed, "a command does not tell of missed slots unless it asks");
}

#[test]
fn both_or_neither_of_agent_and_command() {
    let th = TestHome::new();
    th.routine("both", "schedule: \"0 * * * *\"\nagent: claude\nprompt: hi\ncommand: ls\n");
    th.routine("neither", "schedule: \"0 * * * *\"\n");
    let msgs = messages(&th);
    assert!(msgs.iter().any(|m| m.starts_with("routines/both.yaml:4:1: give either `agent`")), "{msgs:#?}");
    assert!(msgs.iter().any(|m| m.starts_with("routines/neither.yaml:1:1: missing `agent`")), "{msgs:#?}");
}

#[test]
fn unsafe_names_are_rejected() {
    let th = TestHome::new();
    th.routine("a", "name: ../../etc\nschedule: \"0 * * * *\"\ncommand: ls\n");
    th.routine("b", "name: \"\"\nschedule: \"0 * * * *\"\ncommand: ls\n");
    th.routine("c", "name: \"a/b\"\nschedule: \"0 * * * *\"\ncommand: ls\n");
    let set = load_dir(&Home::at(th.path()), &[]);
    assert!(set.routines.is_empty());
    let msgs: Vec<String> = set.diagnostics().map(|d| d.to_string()).collect();
    assert!(msgs.iter().any(|m| m.starts_with("routines/a.yaml:1:7: routine name \"../../etc\" must not start with a dot")), "{msgs:#?}");
    assert!(msgs.iter().any(|m| m.starts_with("routines/c.yaml:1:7: routine name \"a/b\" contains '/'")), "{msgs:#?}");
    assert_eq!(set.invalid.len(), 3);
}

#[test]
fn duplicate_names_across_files_invalidate_each_and_name_the_other() {
    let th = TestHome::new();
    th.routine("one", "name: same\nschedule: \"0 * * * *\"\ncommand: ls\n");
    th.routine("two", "name: same\nschedule: \"0 * * * *\"\ncommand: ls\n");
    th.routine("ok", "schedule: \"0 * * * *\"\ncommand: ls\n");
    let set = load_dir(&Home::at(th.path()), &[]);
    assert_eq!(set.routines.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), vec!["ok"]);
    let msgs: Vec<String> = set.diagnostics().map(|d| d.to_string()).collect();
    assert!(msgs.contains(&"routines/one.yaml:1:1: duplicate routine name \"same\" (also in routines/two.yaml); give each routine its own `name:`".to_string()), "{msgs:#?}");
    assert!(msgs.iter().any(|m| m.starts_with("routines/two.yaml:1:1: duplicate routine name \"same\" (also in routines/one.yaml)")), "{msgs:#?}");
}

#[test]
fn a_syntax_error_in_one_file_does_not_stop_the_others() {
    let th = TestHome::new();
    th.routine("broken", "schedule: [unclosed\ncommand: ls\n");
    th.routine("fine", "schedule: \"0 * * * *\"\ncommand: ls\n");
    std::fs::write(th.path().join("routines/also.yml"), "schedule: \"0 * * * *\"\ncommand: ls\n").unwrap();
    std::fs::write(th.path().join("routines/notes.txt"), "not a routine").unwrap();
    let set = load_dir(&Home::at(th.path()), &[]);
    let mut names: Vec<&str> = set.routines.iter().map(|r| r.name.as_str()).collect();
    names.sort();
    assert_eq!(names, vec!["also", "fine"]);
    let msgs: Vec<String> = set.diagnostics().map(|d| d.to_string()).collect();
    assert_eq!(msgs.len(), 1, "{msgs:#?}");
    assert!(msgs[0].starts_with("routines/broken.yaml:2:"), "{msgs:#?}");
    assert!(msgs[0].contains("YAML syntax error"), "{msgs:#?}");
}

#[test]
fn wrong_value_shapes_are_explained() {
    let th = TestHome::new();
    th.routine("s", "schedule: \"0 * * * *\"\ncommand: ls\nenv: [a, b]\nenabled: maybe\naccount: x\n");
    let msgs = messages(&th);
    assert!(msgs.iter().any(|m| m.starts_with("routines/s.yaml:3:6: `env` must be a mapping")), "{msgs:#?}");
    assert!(msgs.iter().any(|m| m.starts_with("routines/s.yaml:4:10: `enabled` must be true or false")), "{msgs:#?}");
    assert!(msgs.iter().any(|m| m.starts_with("routines/s.yaml:5:1: accounts only apply to agent routines")), "{msgs:#?}");
}

#[test]
fn bootstrap_writes_working_examples_once() {
    let th = tempfile::tempdir().unwrap();
    let home = Home::at(th.path().join("home"));
    let b = home.bootstrap().unwrap();
    assert!(b.created);
    assert_eq!(b.example_routines.len(), 2);
    let set = load_dir(&home, &[]);
    assert!(set.invalid.is_empty(), "examples must be valid: {:?}", set.invalid);
    assert!(set.get("hello").unwrap().enabled);
    assert!(!set.get("pr-review").unwrap().enabled, "the agent example stays disabled until set up");
    std::fs::remove_file(home.routines_dir().join("hello.yaml")).unwrap();
    let again = home.bootstrap().unwrap();
    assert!(!again.created, "a deleted example is not written back");
    assert!(!home.routines_dir().join("hello.yaml").exists());
}

/// Hostile routine folders: special files, huge and binary files, a million unknown keys —
/// each a located error in bounded time, the valid neighbours still loading.
#[test]
fn hostile_files_are_located_errors_in_bounded_time() {
    let th = TestHome::new();
    th.routine("ok", "schedule: \"0 9 * * *\"\ncommand: echo fine\n");
    let dir = th.path().join("routines");
    // A FIFO named like a routine: reported, never opened (opening would block).
    let fifo = dir.join("pipe.yaml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.yaml")).unwrap();
    std::fs::write(dir.join("huge.yaml"), vec![b'#'; 2 << 20]).unwrap();
    std::fs::write(dir.join("binary.yaml"), b"schedule: \"0 9 * * *\"\ncommand: \xff\xfe\n").unwrap();
    let keys: String = (0..40_000).map(|i| format!("unknown_key_{i}: 1\n")).collect();
    std::fs::write(dir.join("keys.yaml"), format!("schedule: \"0 9 * * *\"\ncommand: echo\n{keys}")).unwrap();
    // A 600 KB key (an explicit `? key` — YAML caps implicit keys at 1024 characters).
    std::fs::write(dir.join("longkey.yaml"), format!("schedule: \"0 9 * * *\"\ncommand: echo\n? {}\n: 1\n", "k".repeat(600_000))).unwrap();
    std::fs::write(dir.join("bom.yaml"), "\u{feff}schedule: \"0 9 * * *\"\ncommand: echo bom\n").unwrap();
    let t = std::time::Instant::now();
    let set = nightshift_core::routine::load_dir(&nightshift_core::Home::at(th.path()), &[]);
    let took = t.elapsed();
    let names: Vec<&str> = set.routines.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, vec!["bom", "ok"], "valid files still load; a byte-order mark is fine");
    let problem = |name: &str| set.get_invalid(name).unwrap_or_else(|| panic!("{name} not reported")).errors.iter().map(ToString::to_string).collect::<Vec<_>>();
    assert_eq!(problem("pipe"), vec!["routines/pipe.yaml:1:1: this is a FIFO, not a file; only regular files are read"]);
    assert_eq!(problem("zero"), vec!["routines/zero.yaml:1:1: this is a device, not a file; only regular files are read"]);
    assert!(problem("huge")[0].contains("it may be at most 1 MiB"), "{:?}", problem("huge"));
    assert!(problem("binary")[0].contains("not UTF-8"), "{:?}", problem("binary"));
    let keys = problem("keys");
    assert_eq!(keys.len(), 51, "50 listed, then a count");
    assert!(keys[50].ends_with("… and 39950 more problems"), "{}", keys[50]);
    assert!(problem("longkey")[0].contains("characters long"), "{:?}", problem("longkey"));
    assert!(took < std::time::Duration::from_secs(10), "bounded: {took:?}");
}

#[test]
fn a_timeout_beyond_a_week_is_refused_where_it_is_written() {
    let th = TestHome::new();
    th.routine("long", "schedule: \"0 9 * * *\"\ntimeout: 100000000y\ncommand: echo\n");
    th.routine("week", "schedule: \"0 9 * * *\"\ntimeout: 7days\ncommand: echo\n");
    assert_eq!(messages(&th), vec!["routines/long.yaml:2:10: `timeout: 100000000y` is longer than the longest allowed, 7 days"]);
}

#[test]
fn schedules_that_can_never_run_are_refused() {
    let th = TestHome::new();
    th.routine("feb31", "schedule: \"0 0 31 2 *\"\ncommand: echo\n");
    th.routine("backwards", "at: 2027-01-02T09:00:00Z\nend_at: 2027-01-01T00:00:00Z\ncommand: echo\n");
    let m = messages(&th);
    assert!(m.contains(&"routines/feb31.yaml:1:11: the cron expression \"0 0 31 2 *\" never fires (no date matches it)".to_string()), "{m:?}");
    assert!(m.contains(&"routines/backwards.yaml:2:1: `end_at` is before `at`: the routine would never run".to_string()), "{m:?}");
}

#[test]
fn a_routine_placed_on_a_host_parses_with_agents_cli_field_names() {
    let th = TestHome::new();
    th.routine_sent_from_here("one", "schedule: \"0 2 * * *\"\ncommand: make nightly\nhostStrategy: host\nhost: workstation\nremoteCwd: ~/src/app\n");
    th.routine_sent_from_here("several", "schedule: \"0 2 * * *\"\ncommand: make\nhosts: [box, me@server.lan]\nremote_cwd: /srv/app\n");
    th.routine("here", "schedule: \"0 2 * * *\"\ncommand: make\nhostStrategy: local\n");
    let set = load_dir(&Home::at(th.path()), &[]);
    assert!(set.invalid.is_empty(), "{:?}", set.invalid);
    let one = set.get("one").unwrap().placement.clone().unwrap();
    assert_eq!((one.hosts, one.remote_cwd.as_deref()), (vec!["workstation".to_string()], Some("~/src/app")));
    let several = set.get("several").unwrap().placement.clone().unwrap();
    assert_eq!((several.hosts, several.remote_cwd.as_deref()), (vec!["box".to_string(), "me@server.lan".to_string()], Some("/srv/app")));
    assert_eq!(set.get("here").unwrap().placement, None);
}

#[test]
fn placements_that_cannot_work_are_refused_where_they_are_written() {
    let th = TestHome::new();
    th.routine("cloud", "schedule: \"0 2 * * *\"\ncommand: make\nhostStrategy: cloud\n");
    th.routine("nohost", "schedule: \"0 2 * * *\"\ncommand: make\nhostStrategy: host\n");
    th.routine("both", "schedule: \"0 2 * * *\"\ncommand: make\nhost: a\nhosts: [b]\n");
    th.routine("option", "schedule: \"0 2 * * *\"\ncommand: make\nhost: -oProxyCommand=x\n");
    th.routine("cwd", "schedule: \"0 2 * * *\"\ncommand: make\nhost: box\ncwd: /tmp\n");
    th.routine("stray", "schedule: \"0 2 * * *\"\ncommand: make\nremoteCwd: /srv\n");
    th.routine("contradiction", "schedule: \"0 2 * * *\"\ncommand: make\nhost: box\nhostStrategy: local\n");
    let msgs = messages(&th);
    for expected in [
        "routines/cloud.yaml:3:15: `hostStrategy: cloud` is not supported: Nightshift runs on your own machines — use `host:`",
        "routines/nohost.yaml:3:15: `hostStrategy: host` needs `host:`",
        "routines/both.yaml:4:1: give either `host` (one machine) or `hosts`",
        "routines/option.yaml:3:7: \"-oProxyCommand=x\" is not an SSH host",
        "routines/cwd.yaml:4:1: `cwd` is a directory on this machine; a run on a host works in `remote_cwd:`",
        "routines/stray.yaml:3:1: `remoteCwd` only applies to a routine placed on another machine",
    ] {
        assert!(msgs.iter().any(|m| m.starts_with(expected)), "missing {expected:?} in {msgs:#?}");
    }
    // `hostStrategy: local` with `host:` runs here, as agents-cli does: said, not refused.
    let set = load_dir(&Home::at(th.path()), &[]);
    let here = set.get("contradiction").expect("valid");
    assert!(here.placement.is_none());
    assert!(here.warnings[0].to_string().starts_with("routines/contradiction.yaml:4:15: warning: `hostStrategy: local` runs it on this machine"), "{:?}", here.warnings);
}

/// `[defaults] timeout` is the timeout of routines that set none; a routine's own wins; a bad
/// default is an error at its line.
#[test]
fn the_default_timeout_applies_to_routines_without_one() {
    let th = TestHome::new();
    th.routine("plain", "schedule: \"0 3 * * *\"\ncommand: \"true\"\n");
    th.routine("own", "schedule: \"0 3 * * *\"\ncommand: \"true\"\ntimeout: 5m\n");
    let engine = EngineOptions::for_test(th.path()).settings("[defaults]\ntimeout = \"45m\"\n").open();
    let set = engine.routines();
    assert_eq!(set.get("plain").unwrap().timeout, std::time::Duration::from_secs(45 * 60));
    assert_eq!(set.get("own").unwrap().timeout, std::time::Duration::from_secs(5 * 60));
    std::fs::write(th.path().join("nightshift.toml"), "[defaults]\ntimeout = \"soon\"\n").unwrap();
    let err = nightshift_core::settings::Settings::load(&th.path().join("nightshift.toml")).unwrap_err();
    assert!(err.message.ends_with("nightshift.toml:2:12: `[defaults] timeout = \"soon\"` is not a duration (expected number at 0; examples: 90s, 30m, 2h)"), "{}", err.message);
    for (value, said) in [("0s", "must be longer than zero"), ("8d", "is longer than the longest allowed, 7 days")] {
        std::fs::write(th.path().join("nightshift.toml"), format!("[defaults]\ntimeout = \"{value}\"\n")).unwrap();
        let err = nightshift_core::settings::Settings::load(&th.path().join("nightshift.toml")).unwrap_err();
        assert!(err.message.ends_with(&format!("nightshift.toml:2:12: `[defaults] timeout = \"{value}\"` {said}")), "{}", err.message);
    }
}

/// `[github]`: the poll interval and the API's address, each refused at its line when wrong.
#[test]
fn github_polling_settings_are_checked_where_they_are_written() {
    let th = TestHome::new();
    let path = th.path().join("nightshift.toml");
    let load = |text: &str| {
        std::fs::write(&path, text).unwrap();
        nightshift_core::settings::Settings::load(&path)
    };
    let ok = load("[github]\npoll = \"2m\"\napi_url = \"https://ghe.example.com/api/v3\"\n").unwrap();
    assert_eq!((ok.github.poll(), ok.github.api_url.as_str()), (Some(std::time::Duration::from_secs(120)), "https://ghe.example.com/api/v3"));
    let default = load("").unwrap();
    assert_eq!((default.github.poll(), default.github.api_url.as_str()), (None, "https://api.github.com"), "no polling unless asked");
    let err = load("[github]\npoll = \"often\"\n").unwrap_err();
    assert!(err.message.ends_with("nightshift.toml:2:9: `[github] poll = \"often\"` is not a duration (expected number at 0; examples: 60s, 2m, 15m)"), "{}", err.message);
    let err = load("[github]\npoll = \"2d\"\n").unwrap_err();
    assert!(err.message.ends_with("`[github] poll = \"2d\"` is longer than a day"), "{}", err.message);
    let err = load("[github]\npoll = \"500ms\"\n").unwrap_err();
    assert!(err.message.ends_with("nightshift.toml:2:9: `[github] poll = \"500ms\"` is shorter than a second"), "{}", err.message);
    let err = load("[github]\napi_url = \"api.github.com\"\n").unwrap_err();
    assert!(err.message.contains("nightshift.toml:2:12: `[github] api_url = \"api.github.com\"` is not an http(s) address"), "{}", err.message);
}

/// `devices:` names are compared as agents-cli compares host names: without case or domain.
#[test]
fn devices_match_the_machine_without_case_or_domain() {
    let th = TestHome::new();
    th.routine("studio-only", "schedule: \"0 3 * * *\"\ncommand: \"true\"\ndevices: [Studio.local]\n");
    let engine = EngineOptions::for_test(th.path()).settings("device_name = \"studio\"\n").open();
    let r = engine.routines().get("studio-only").cloned().unwrap();
    assert!(r.runs_on("studio") && r.runs_on("STUDIO.lan") && !r.runs_on("laptop"));
}

/// `version:` (agents-cli) runs the executable `[agents.<agent>.versions]` maps it to; a version
/// nothing maps is a warning, and the usual agent runs.
#[tokio::test]
async fn a_pinned_version_runs_the_binary_the_settings_map_it_to() {
    let th = TestHome::new();
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}"#;
    let pinned = th.script("claude-2.1.332", &format!("echo pinned\necho '{result}'"));
    th.script("claude", &format!("echo on-path\necho '{result}'"));
    th.routine("old", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: hi\nversion: 2.1.332\n");
    th.routine("new", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: hi\nversion: 9.9.9\n");
    let engine = EngineOptions::for_test(th.path())
        .settings(&format!("[agents.claude.versions]\n\"2.1.332\" = \"{}\"\n", pinned.display()))
        .path_first(&th.bin_dir())
        .env("CLAUDE_CODE_OAUTH_TOKEN", "tok-for-tests")
        .open();
    let set = engine.routines();
    assert!(set.get("old").unwrap().warnings.is_empty());
    let w = set.get("new").unwrap().warnings[0].to_string();
    assert_eq!(w, "routines/new.yaml:4:1: warning: `version: 9.9.9` is not pinned: no `[agents.claude.versions]` entry maps it to a binary in nightshift.toml, so the `claude` on PATH runs");
    for (name, said) in [("old", "pinned"), ("new", "on-path")] {
        let run = engine.run_now(name, nightshift_core::run::Trigger::Manual).await.unwrap().wait().await.unwrap();
        let log = std::fs::read_to_string(th.path().join(format!("runs/{name}/{}/stdout.log", run.id))).unwrap();
        assert!(log.starts_with(said), "{name}: {log}");
    }
}

/// `hostStrategy: fleet` (agents-cli): the machines nightshift.toml lists; with none listed (a
/// user moving over has not listed them yet) the file loads with a warning saying what to add,
/// and a run started so is `blocked · no_hosts` in the same words; with `host:` too, the file is
/// invalid saying which to remove.
#[tokio::test]
async fn a_fleet_routine_runs_on_the_machines_the_settings_list() {
    let th = TestHome::new();
    th.routine("fleet", "schedule: \"0 2 * * *\"\ncommand: make\nhostStrategy: fleet\ndevices: [laptop]\n");
    th.routine("both", "schedule: \"0 2 * * *\"\ncommand: make\nhostStrategy: fleet\nhost: box\n");
    std::fs::write(th.path().join("nightshift.toml"), "device_name = \"laptop\"\n").unwrap();
    let engine = EngineOptions::for_test(th.path()).open();
    let set = engine.routines();
    let said = "`hostStrategy: fleet` runs on one of the machines nightshift.toml lists as `[hosts.<name>]`, and it lists none";
    let w = set.get("fleet").unwrap().warnings.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(w.contains(&format!("routines/fleet.yaml:3:15: warning: {said}")), "{w}");
    assert!(set.get_invalid("both").unwrap().errors[0].to_string().contains("remove `host:`/`hosts:`"));
    let rec = engine.run_now("fleet", nightshift_core::Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((rec.status, rec.reason), (nightshift_core::RunStatus::Blocked, Some(nightshift_core::Reason::NoHosts)), "{rec:?}");
    assert!(rec.message.as_deref().unwrap_or_default().contains(said), "{rec:?}");
    assert!(rec.attempts.is_empty(), "{rec:?}");
    drop(engine);
    std::fs::write(th.path().join("nightshift.toml"), "[hosts.buildbox]\n[hosts.spare]\n").unwrap();
    let engine = EngineOptions::for_test(th.path()).open();
    let p = engine.routines().get("fleet").unwrap().placement.clone().unwrap();
    assert!(p.fleet);
    assert_eq!(p.hosts, ["buildbox", "spare"]);
}

/// `effort:` and `args:` are checked where they are written: an unknown effort, an argument
/// Nightshift sets itself (with the field to use), either on a command routine; Gemini's missing
/// effort setting is a warning.
#[test]
fn effort_and_args_are_checked_where_they_are_written() {
    let th = TestHome::new();
    th.routine("bad", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: hi\neffort: turbo\nargs: [--add-dir, ../docs, --output-format, text, \"--model=opus\"]\n");
    th.routine("cmd", "schedule: \"0 2 * * *\"\ncommand: make\neffort: high\nargs: [-v]\n");
    th.routine("codex", "schedule: \"0 2 * * *\"\nagent: codex\nprompt: hi\nargs: [-c, model_reasoning_effort=high]\n");
    th.routine("gem", "schedule: \"0 2 * * *\"\nagent: gemini\nprompt: hi\neffort: high\n");
    let msgs = messages(&th);
    for expected in [
        "routines/bad.yaml:4:9: unknown effort \"turbo\" (expected low, medium, high, xhigh, max or auto",
        "routines/bad.yaml:5:28: `args`: `--output-format` is Nightshift's to set for claude: Nightshift reads the agent's own event stream",
        "routines/bad.yaml:5:51: `args`: `--model` is Nightshift's to set for claude: use `model:`",
        "routines/cmd.yaml:3:1: `effort` only applies to agent routines",
        "routines/cmd.yaml:4:1: `args` only applies to agent routines",
        "routines/codex.yaml:4:12: `args`: `model_reasoning_effort=high` sets Codex's reasoning effort: use `effort:`",
    ] {
        assert!(msgs.iter().any(|m| m.starts_with(expected)), "missing {expected:?} in {msgs:#?}");
    }
    let set = load_dir(&Home::at(th.path()), &[]);
    let gem = set.get("gem").unwrap();
    assert_eq!(gem.warnings[0].to_string(), "routines/gem.yaml:4:1: warning: `effort: high` is ignored: Gemini CLI has no effort setting");
}

/// `allow:`/`deny:`/`on_denial:` are checked where they are written; a rule an agent cannot
/// express is an error naming the agent and the rule, never dropped.
#[test]
fn guardrails_are_checked_per_agent_where_they_are_written() {
    let th = TestHome::new();
    th.routine("codex", "schedule: \"0 2 * * *\"\nagent: codex\nprompt: hi\nallow: {tools: [Read]}\n");
    th.routine("gem", "schedule: \"0 2 * * *\"\nagent: gemini\nprompt: hi\ndeny:\n  tools: [Bash]\n");
    th.routine("gemok", "schedule: \"0 2 * * *\"\nagent: gemini\nprompt: hi\nallow: {tools: [read_file, \"run_shell_command(git status)\"]}\n");
    th.routine("gemhost", "schedule: \"0 2 * * *\"\nagent: gemini\nprompt: hi\nhost: box\ndevices: [here]\nallow: {tools: [read_file]}\n");
    th.routine("cmd", "schedule: \"0 2 * * *\"\ncommand: make\nallow: {tools: [Read]}\n");
    th.routine("bad", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: hi\nallow: {tools: [Read], folders: [x], dirs: [/no/such/folder]}\non_denial: explode\n");
    th.routine("ok", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: hi\nallow: {tools: [Read, \"Bash(git status)\"], dirs: [/tmp]}\ndeny: {tools: [WebFetch]}\non_denial: fail\n");
    let msgs = messages(&th);
    for expected in [
        "routines/codex.yaml:4:9: codex cannot be limited to `allow.tools`: Codex CLI has no tool list",
        "routines/gem.yaml:5:3: `deny.tools`: `Bash` is Claude Code's name; Gemini CLI calls that tool run_shell_command (write `run_shell_command`)",
        "routines/gemhost.yaml:6:9: gemini's tool rules are a policy file beside the run, on this machine; a run on a host (`host:`) cannot have them yet",
        "routines/cmd.yaml:3:1: `allow` only applies to agent routines",
        "routines/bad.yaml:4:24: unknown key `allow.folders` (expected `allow.tools`, `allow.dirs` or `allow.hosts`)",
        "routines/bad.yaml:5:12: unknown on_denial \"explode\" (expected fail",
    ] {
        assert!(msgs.iter().any(|m| m.starts_with(expected)), "missing {expected:?} in {msgs:#?}");
    }
    assert!(!msgs.iter().any(|m| m.starts_with("routines/gemok.yaml")), "Gemini's own tool names are taken: {msgs:#?}");
    // A folder that is not there (yet) is a warning, not an error (`blocked · no_cwd` at start).
    assert!(!msgs.iter().any(|m| m.contains("/no/such/folder")), "{msgs:#?}");
    let set = load_dir(&Home::at(th.path()), &[]);
    let g = set.get("ok").unwrap().guard().unwrap().clone();
    assert_eq!(g.allow_tools.as_deref(), Some(&["Read".to_string(), "Bash(git status)".to_string()][..]));
    assert_eq!((g.allowed_tool_names(), g.fail_on_denial), (vec!["Read".to_string(), "Bash".to_string()], true));
    assert_eq!(g.deny_tools, ["WebFetch"]);
}

/// `config.<key>` reaches the agent as its own setting, in its CLI's form and before the prompt;
/// a setting a routine field decides is an error naming the field; Gemini's is a warning.
#[test]
fn config_keys_are_passed_to_the_agent_or_said_why_not() {
    let th = TestHome::new();
    th.routine("codex", "schedule: \"0 2 * * *\"\nagent: codex\nprompt: hi\nconfig:\n  model: gpt-5\n  reasoning_summary: concise\n");
    th.routine("claude", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: hi\nconfig: {cleanupPeriodDays: 7}\n");
    th.routine("sandbox", "schedule: \"0 2 * * *\"\nagent: codex\nprompt: hi\nconfig:\n  sandbox_mode: danger-full-access\n");
    th.routine("gem", "schedule: \"0 2 * * *\"\nagent: gemini\nprompt: hi\nconfig:\n  theme: dark\n");
    let set = load_dir(&Home::at(th.path()), &[]);
    let codex = set.get("codex").unwrap().action.invocation("hi", None, None).args;
    let tail: Vec<&str> = codex.iter().rev().take(5).rev().map(String::as_str).collect();
    assert_eq!(tail, ["--model", "gpt-5", "-c", "reasoning_summary=\"concise\"", "hi"], "{codex:?}");
    let claude = set.get("claude").unwrap().action.invocation("hi", Some(0.5), None).args;
    let at = claude.iter().position(|a| a == "--settings").expect("--settings");
    assert_eq!(claude[at + 1], r#"{"cleanupPeriodDays":7}"#);
    let cap = claude.iter().position(|a| a == "--max-budget-usd").expect("the run's cap");
    assert_eq!(claude[cap + 1], "0.5");
    assert_eq!(
        set.get_invalid("sandbox").unwrap().errors[0].to_string(),
        "routines/sandbox.yaml:5:3: `config.sandbox_mode` is Nightshift's to set for codex: use `mode:`"
    );
    let gem = set.get("gem").unwrap();
    assert_eq!(gem.warnings[0].to_string(), "routines/gem.yaml:5:3: warning: `config.theme` is ignored: Gemini CLI takes no settings on its command line (put it in ~/.gemini/settings.json)");
}

/// agents-cli's `[agents.<agent>] auto_compact_tokens` and `fast_mode_models` reach the CLI as its
/// own setting (Claude Code's `autoCompactWindow` and `fastMode`, Codex's
/// `model_auto_compact_token_limit`); a routine's own `config.` key wins; an agent without such a
/// setting is warned at its `agent:`.
#[test]
fn agents_cli_compaction_and_fast_mode_settings_pass_through_or_are_said_ignored() {
    let th = TestHome::new();
    th.routine("fast", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: hi\nmodel: opus\n");
    th.routine("slow", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: hi\nmodel: sonnet\nconfig: {autoCompactWindow: 90000}\n");
    th.routine("codex", "schedule: \"0 2 * * *\"\nagent: codex\nprompt: hi\n");
    th.routine("gem", "schedule: \"0 2 * * *\"\nagent: gemini\nprompt: hi\nmodel: gemini-2.5-pro\n");
    std::fs::write(
        th.path().join("nightshift.toml"),
        "[agents.claude]\nauto_compact_tokens = 120000\nfast_mode_models = [\"opus\"]\n[agents.codex]\nauto_compact_tokens = 200000\n[agents.gemini]\nauto_compact_tokens = 100000\nfast_mode_models = [\"gemini-2.5-pro\"]\n",
    )
    .unwrap();
    let engine = EngineOptions::for_test(th.path()).open();
    let set = engine.routines();
    let settings_of = |name: &str| {
        let args = set.get(name).unwrap().action.invocation("hi", None, None).args;
        let at = args.iter().position(|a| a == "--settings").expect("--settings");
        serde_json::from_str::<serde_json::Value>(&args[at + 1]).unwrap()
    };
    assert_eq!(settings_of("fast"), serde_json::json!({"autoCompactWindow": 120000, "fastMode": true}));
    assert_eq!(settings_of("slow"), serde_json::json!({"autoCompactWindow": 90000}), "the routine's own key wins; sonnet is not listed fast");
    let codex = set.get("codex").unwrap().action.invocation("hi", None, None).args;
    assert!(codex.windows(2).any(|w| w == ["-c", "model_auto_compact_token_limit=200000"]), "{codex:?}");
    assert!(set.get("codex").unwrap().warnings.is_empty());
    let gem = set.get("gem").unwrap();
    assert_eq!(
        gem.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["routines/gem.yaml:2:1: warning: `[agents.gemini] auto_compact_tokens` and `[agents.gemini] fast_mode_models` (for gemini-2.5-pro) are ignored: the gemini CLI has no such setting Nightshift can pass"]
    );
}

/// OpenCode's settings travel in OPENCODE_CONFIG_CONTENT: `config.` keys join it, one a field
/// decides is an error, and so is an `env:` that would replace it.
#[test]
fn opencode_takes_config_keys_in_its_config_content_and_keeps_its_own() {
    let th = TestHome::new();
    th.routine("oc", "schedule: \"0 2 * * *\"\nagent: opencode\nprompt: hi\nconfig:\n  snapshot: false\n");
    th.routine("perm", "schedule: \"0 2 * * *\"\nagent: opencode\nprompt: hi\nconfig:\n  permission: {bash: allow}\n");
    th.routine("env", "schedule: \"0 2 * * *\"\nagent: opencode\nprompt: hi\nenv:\n  OPENCODE_PERMISSION: '{\"bash\":\"allow\"}'\n");
    th.routine("rule", "schedule: \"0 2 * * *\"\nagent: opencode\nprompt: hi\ndeny: {tools: [\"Bash(git push)\"]}\n");
    let set = load_dir(&Home::at(th.path()), &[]);
    let oc = set.get("oc").unwrap().action.invocation("hi", None, None);
    let content = oc.env.iter().find(|(k, _)| *k == "OPENCODE_CONFIG_CONTENT").map(|(_, v)| v.clone()).expect("the config");
    let content: serde_json::Value = serde_json::from_str(&content).unwrap();
    assert_eq!((content["snapshot"].as_bool(), content["permission"]["bash"].as_str()), (Some(false), Some("allow")), "{content}");
    assert!(!oc.args.iter().any(|a| a.contains("snapshot")), "settings are not arguments: {:?}", oc.args);
    assert_eq!(set.get_invalid("perm").unwrap().errors[0].to_string(), "routines/perm.yaml:5:3: `config.permission` is Nightshift's to set for opencode: use `mode:`, `allow:` and `deny:`");
    assert_eq!(set.get_invalid("env").unwrap().errors[0].to_string(), "routines/env.yaml:4:1: `env: OPENCODE_PERMISSION` is Nightshift's to set for opencode: use `mode:`, `allow:` and `deny:`");
    assert!(set.get_invalid("rule").unwrap().errors[0].to_string().contains("OpenCode calls that permission bash (write `bash(git push)`)"));
}

/// Copilot CLI takes no settings on its command line (a `config.` key is a warning, never
/// silently dropped); its permission flags and COPILOT_ALLOW_ALL are the mode's; its rules are its
/// own permission patterns.
#[test]
fn copilot_keeps_its_permissions_and_names_its_rules() {
    let th = TestHome::new();
    th.routine("ok", "schedule: \"0 2 * * *\"\nagent: copilot\nprompt: hi\nallow: {tools: [\"shell(git:*)\", write]}\nconfig:\n  theme: dark\n");
    th.routine("args", "schedule: \"0 2 * * *\"\nagent: copilot\nprompt: hi\nargs: [--yolo]\n");
    th.routine("env", "schedule: \"0 2 * * *\"\nagent: copilot\nprompt: hi\nenv:\n  COPILOT_ALLOW_ALL: \"true\"\n");
    th.routine("rule", "schedule: \"0 2 * * *\"\nagent: copilot\nprompt: hi\ndeny: {tools: [\"Bash(git push)\"]}\n");
    let set = load_dir(&Home::at(th.path()), &[]);
    let ok = set.get("ok").unwrap();
    assert_eq!(ok.warnings[0].to_string(), "routines/ok.yaml:6:3: warning: `config.theme` is ignored: Copilot CLI takes no settings on its command line (put it in the account's settings.json, or use `copilot config`)");
    let inv = ok.action.invocation("hi", None, None);
    assert!(inv.args.contains(&"--allow-tool=shell(git:*)".to_string()) && !inv.args.contains(&"--allow-all-tools".to_string()), "{:?}", inv.args);
    assert_eq!(set.get_invalid("args").unwrap().errors[0].to_string(), "routines/args.yaml:4:8: `args`: `--yolo` is Nightshift's to set for copilot: use `mode: skip`");
    assert_eq!(set.get_invalid("env").unwrap().errors[0].to_string(), "routines/env.yaml:4:1: `env: COPILOT_ALLOW_ALL` is Nightshift's to set for copilot: use `mode:` (skip allows everything)");
    assert_eq!(set.get_invalid("rule").unwrap().errors[0].to_string(), "routines/rule.yaml:4:8: `deny.tools`: `Bash(git push)`: Copilot CLI calls that permission shell (write `shell(git push)`)");
}

/// `trigger:` is checked field by field where it stands: its type and event, the filters that
/// type has, the shape of each value. A routine may have a schedule, a trigger, or both.
#[test]
fn triggers_are_checked_where_they_stand() {
    let th = TestHome::new();
    let base = "command: 'true'\n";
    th.routine("both", &format!("schedule: \"0 9 * * *\"\ntrigger: {{type: github_event, event: push, branch: main}}\n{base}"));
    th.routine("only", &format!("trigger:\n  type: linear_event\n  event: Issue\n  teamKey: ENG\n  stateTo: Todo\n{base}"));
    let bad = [
        ("t1", "trigger: {event: push}\n", "routines/t1.yaml:1:10: `trigger` needs a `type`: github_event or linear_event (trigger: {type: github_event, event: pull_request, repo: acme/app})"),
        ("t2", "trigger: {type: github_events, event: push}\n", "routines/t2.yaml:1:17: unknown trigger type \"github_events\" (expected github_event or linear_event); did you mean \"github_event\"?"),
        ("t3", "trigger: {type: github_event, event: pull_requests}\n", "routines/t3.yaml:1:38: unknown github_event event \"pull_requests\" (expected pull_request, push, issue_comment, workflow_run); did you mean \"pull_request\"?"),
        ("t4", "trigger: {type: github_event, event: push, action: opened}\n", "routines/t4.yaml:1:52: a push has no action (GitHub sends none): leave `trigger.action` out"),
        ("t5", "trigger: {type: github_event, event: pull_request, repo: acme}\n", "routines/t5.yaml:1:58: `trigger.repo` is owner/name, such as acme/app (found \"acme\")"),
        ("t6", "trigger: {type: linear_event, event: Issue, repo: acme/app}\n", "routines/t6.yaml:1:51: `trigger.repo` is a GitHub filter; a linear_event has `teamKey`, `action`, `label`, `stateTo` and `stateFrom`"),
        ("t7", "trigger: {type: linear_event, event: Comment, stateTo: Done}\n", "routines/t7.yaml:1:56: `trigger.stateTo` is an Issue's workflow state; a Comment has none"),
        ("t8", "trigger: {type: linear_event, event: Issue, action: updated}\n", "routines/t8.yaml:1:53: unknown Linear action \"updated\" (expected create, update, remove)"),
        ("t9", "trigger: {type: github_event, event: push, lable: x}\n", "routines/t9.yaml:1:44: unknown key `trigger.lable` (expected `trigger.type`, `trigger.event`, `trigger.repo`, `trigger.branch`, `trigger.action`, `trigger.label`, `trigger.teamKey`, `trigger.stateTo` or `trigger.stateFrom`)"),
        ("t10", "prompt: x\nagent: claude\n", "routines/t10.yaml:1:1: missing `schedule` (a cron expression such as \"0 9 * * 1-5\"), `at` (a one-shot time) or `trigger` (the GitHub or Linear events it runs on)"),
    ];
    for (name, yaml, _) in &bad {
        let body = if yaml.contains("command") || yaml.contains("prompt") { yaml.to_string() } else { format!("{yaml}{base}") };
        th.routine(name, &body);
    }
    let set = load_dir(&Home::at(th.path()), &[]);
    let both = set.get("both").unwrap();
    assert!(both.schedule.is_some() && both.trigger.as_ref().is_some_and(|t| t.words() == "github:push (branch=main)"));
    assert_eq!(set.get("only").unwrap().trigger.as_ref().unwrap().words(), "linear:Issue (team=ENG, stateTo=Todo)");
    assert!(set.get("only").unwrap().schedule.is_none());
    for (name, _, want) in &bad {
        let errors: Vec<String> = set.get_invalid(name).unwrap_or_else(|| panic!("{name} should be invalid")).errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.first().map(String::as_str), Some(*want), "{name}: {errors:?}");
    }
}
