//! `routines new | edit | rename | duplicate | remove | removed | restore` as a user meets them:
//! the same checks as the window's form (one validator), files written atomically, an editor
//! session that never makes a half-typed routine live.

mod common;

use common::{ctl, json, stderr, stdout};
use nightshift_testkit::TestHome;

#[test]
fn new_round_trips_through_validate_and_list() {
    let th = TestHome::new();
    let out = ctl(&th)
        .args(["routines", "new", "standup", "--command", "echo standup notes", "--schedule", "30 9 * * 1-5", "--timezone", "Europe/Berlin", "--notify", "never", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "name: standup\ncommand: echo standup notes\nschedule: 30 9 * * 1-5\ntimezone: Europe/Berlin\nnotify: never\n");
    assert!(stderr(&out).starts_with("At 09:30 on weekdays, Europe/Berlin\n  next: "), "{}", stderr(&out));
    assert!(!th.path().join("routines/standup.yaml").exists(), "a dry run writes nothing");

    let out = ctl(&th).args(["routines", "new", "standup", "--command", "echo standup notes", "--schedule", "30 9 * * 1-5", "--timezone", "Europe/Berlin", "--notify", "never"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("✓ created routines/standup.yaml\nAt 09:30 on weekdays, Europe/Berlin\n"), "{}", stdout(&out));
    let out = ctl(&th).args(["routines", "validate"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = ctl(&th).args(["routines", "list", "--json"]).output().unwrap();
    let rows = json(&out);
    let row = rows.as_array().unwrap().iter().find(|r| r["name"] == "standup").unwrap();
    assert_eq!(row["schedule"], "30 9 * * 1-5");
    assert_eq!(row["timezone"], "Europe/Berlin");
    assert_eq!(row["valid"], true);

    // The same name again: refused on its field, exit 2, the file untouched.
    let before = std::fs::read_to_string(th.path().join("routines/standup.yaml")).unwrap();
    let out = ctl(&th).args(["routines", "new", "standup", "--command", "true", "--schedule", "@daily"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: name: a routine named \"standup\" already exists (routines/standup.yaml)\n");
    assert_eq!(std::fs::read_to_string(th.path().join("routines/standup.yaml")).unwrap(), before);
}

#[test]
fn new_names_every_problem_by_field() {
    let th = TestHome::new();
    let out = ctl(&th).args(["routines", "new", "bad", "--agent", "claude", "--prompt", "hi", "--schedule", "0 25 * * *", "--timezone", "Nowhere/Land", "--account", "x@y.z"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("error: schedule: invalid cron expression \"0 25 * * *\""), "{err}");
    assert!(err.contains("error: timezone: unknown time zone \"Nowhere/Land\""), "{err}");
    assert!(err.contains("error: account: no claude account \"x@y.z\" (none is configured; add one under Accounts)"), "{err}");
    assert!(!th.path().join("routines/bad.yaml").exists());
}

#[test]
fn new_places_a_routine_on_another_machine() {
    let th = TestHome::new();
    let out = ctl(&th).args(["routines", "new", "there", "--command", "uptime", "--schedule", "@daily", "--host", "buildbox", "--remote-cwd", "/srv/app", "--dry-run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // This machine sends its runs: `devices:` names it (a synced routines folder fires it nowhere else).
    let here = nightshift_testkit::this_machine();
    assert_eq!(stdout(&out), format!("name: there\ncommand: uptime\nhost: buildbox\nremote_cwd: /srv/app\nschedule: \"@daily\"\ndevices: [\"{here}\"]\n"));
    let out = ctl(&th).args(["routines", "new", "desk", "--command", "uptime", "--schedule", "@daily", "--host", "buildbox", "--device", "desk", "--dry-run"]).output().unwrap();
    assert_eq!(stdout(&out), "name: desk\ncommand: uptime\nhost: buildbox\nschedule: \"@daily\"\ndevices: [\"desk\"]\n");
    // agents-cli's placement, written as `hostStrategy`: the fleet nightshift.toml lists.
    std::fs::write(th.path().join("nightshift.toml"), "[hosts.buildbox]\n").unwrap();
    let out = ctl(&th).args(["routines", "new", "anywhere", "--command", "uptime", "--schedule", "@daily", "--placement", "fleet"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(th.path().join("routines/anywhere.yaml")).unwrap(), format!("name: anywhere\ncommand: uptime\nhostStrategy: fleet\nschedule: \"@daily\"\ndevices: [\"{here}\"]\n"));
    let out = ctl(&th).args(["routines", "new", "nowhere", "--command", "uptime", "--schedule", "@daily", "--placement", "host"]).output().unwrap();
    assert_eq!((out.status.code(), stderr(&out)), (Some(2), "error: hostStrategy: `hostStrategy: host` needs `host:` (an SSH host or alias) or `hosts:` (several)\n".to_string()));
    // A routine file on a host without `devices:` is refused, the fix naming this machine.
    th.routine("synced", "schedule: \"@daily\"\ncommand: uptime\nhost: buildbox\n");
    let out = ctl(&th).args(["routines", "validate"]).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains(&format!("routines/synced.yaml:3:1: a routine on a host needs `devices:`: without it every machine that reads this file fires it and sends the run over SSH (a routines folder synced between two machines runs it twice); add the machine that sends it, `devices: [{here}]`")), "{}", stderr(&out));
    // A folder there without a machine: the loader's words, on the field.
    let out = ctl(&th).args(["routines", "new", "here", "--command", "true", "--schedule", "@daily", "--remote-cwd", "/srv/app"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: remote_cwd: `remote_cwd` only applies to a routine placed on another machine with `host:`\n");
}

/// An "editor" that applies a sed expression to the file it is given.
fn sed_editor(th: &TestHome, expr: &str) -> String {
    let script = th.script("ed-sed", &format!("#!/bin/sh\nsed -i '{expr}' \"$1\"\n"));
    script.display().to_string()
}

#[test]
fn edit_checks_before_saving_and_keeps_the_users_work() {
    let th = TestHome::new();
    let original = "# mine — keep\nname: tidy\nschedule: \"0 3 * * *\"\ncommand: echo tidy\n";
    th.routine("tidy", original);

    // A valid edit is saved; the comment survives.
    let out = ctl(&th).args(["routines", "edit", "tidy"]).env("EDITOR", sed_editor(&th, "s/echo tidy/echo tidier/")).env_remove("VISUAL").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "✓ saved routines/tidy.yaml\n");
    let saved = std::fs::read_to_string(th.path().join("routines/tidy.yaml")).unwrap();
    assert_eq!(saved, original.replace("echo tidy", "echo tidier"));

    // A broken edit: the problem at its line and column, the offer to edit again (answered no),
    // the file untouched and the edited copy kept.
    let out = ctl(&th)
        .args(["routines", "edit", "tidy"])
        .env("EDITOR", sed_editor(&th, "s/0 3 \\* \\* \\*/0 3 * */"))
        .env_remove("VISUAL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with("error: routines/tidy.yaml:3:11: invalid cron expression \"0 3 * *\""), "{err}");
    assert!(err.contains("Edit again? [Y/n]"), "{err}");
    assert!(err.contains("error: not saved: routines/tidy.yaml is unchanged"), "{err}");
    let kept = err.lines().find_map(|l| l.strip_prefix("error: Your edited copy is kept at ")).expect("the copy is named");
    assert!(std::fs::read_to_string(kept).unwrap().contains("0 3 * *\""));
    assert_eq!(std::fs::read_to_string(th.path().join("routines/tidy.yaml")).unwrap(), saved);
    std::fs::remove_file(kept).unwrap();

    // Answering yes re-opens the editor: here a second pass that fixes it (the script appends a
    // field only once, then the problem is gone because sed restores the expression).
    let fixer = th.script("ed-twice", "#!/bin/sh\nif grep -q 'echo again' \"$1\"; then sed -i 's/ \\* \\*\"/ * * *\"/' \"$1\"; else sed -i 's/0 3 \\* \\* \\*/0 3 * */; s/echo tidier/echo again/' \"$1\"; fi\n");
    let mut child = ctl(&th)
        .args(["routines", "edit", "tidy"])
        .env("EDITOR", fixer)
        .env_remove("VISUAL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"y\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("Edit again?"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(th.path().join("routines/tidy.yaml")).unwrap(), original.replace("echo tidy", "echo again"));
}

#[test]
fn rename_duplicate_remove_and_restore() {
    let th = TestHome::new();
    th.routine("alpha", "name: alpha\nschedule: \"0 9 * * *\"\ncommand: echo a\n");
    let out = ctl(&th).args(["run", "alpha", "--wait"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let out = ctl(&th).args(["routines", "rename", "alpha", "beta"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "✓ renamed alpha to beta (routines/beta.yaml); its run history follows it\n");
    let out = ctl(&th).args(["runs", "--routine", "beta", "--json"]).output().unwrap();
    assert_eq!(json(&out).as_array().map(Vec::len), Some(1), "{}", stdout(&out));

    let out = ctl(&th).args(["routines", "duplicate", "beta", "gamma"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = ctl(&th).args(["routines", "duplicate", "beta", "gamma"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: a routine named \"gamma\" already exists (routines/gamma.yaml)\n");

    let out = ctl(&th).args(["routines", "remove", "gamma"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = ctl(&th).args(["routines", "removed", "--json"]).output().unwrap();
    let removed = json(&out);
    let id = removed[0]["id"].as_str().unwrap().to_string();
    assert_eq!(removed[0]["name"], "gamma");
    let out = ctl(&th).args(["routines", "restore", &id]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "✓ restored gamma (routines/gamma.yaml)\n");
    let out = ctl(&th).args(["routines", "removed"]).output().unwrap();
    assert_eq!(stdout(&out), "The trash is empty.\n");
}

/// `routines new` writes guardrails, budgets and secrets as the window's form does; a rule the
/// agent cannot express and a budget that is not an amount are refused on their fields.
#[test]
fn new_writes_guardrails_budgets_and_secrets() {
    let th = TestHome::new();
    let out = ctl(&th)
        .args(["routines", "new", "guarded", "--agent", "claude", "--prompt", "Summarise", "--schedule", "@daily", "--timezone", "UTC", "--effort", "high"])
        .args(["--allow-tool", "Read", "--allow-tool", "Bash(git status)", "--deny-tool", "WebFetch", "--fail-on-denial", "--budget-run", "0.5", "--budget-day", "5", "--secret", "DEPLOY_KEY", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "name: guarded\nagent: claude\nprompt: Summarise\nschedule: \"@daily\"\ntimezone: UTC\neffort: high\non_denial: fail\nallow:\n  tools: [\"Read\", \"Bash(git status)\"]\ndeny:\n  tools: [\"WebFetch\"]\nbudget:\n  run: 0.5\n  day: 5\nsecrets: [\"DEPLOY_KEY\"]\n"
    );
    let out = ctl(&th).args(["routines", "new", "codexy", "--agent", "codex", "--prompt", "hi", "--schedule", "@daily", "--allow-tool", "Read", "--budget-day", "lots"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("error: allow_tools: codex cannot be limited to `allow.tools`"), "{err}");
    assert!(err.contains("error: budget: `budget.day` must be an amount in US dollars"), "{err}");
}

/// `--trigger KEY=VALUE`: the routine runs on the events it names; a bad value is named by field.
#[test]
fn new_writes_a_trigger() {
    let th = TestHome::new();
    let out = ctl(&th).args(["routines", "new", "gate", "--command", "true", "--trigger", "type=github_event", "--trigger", "event=pull_request", "--trigger", "repo=acme/app"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(th.path().join("routines/gate.yaml")).unwrap();
    assert!(written.ends_with("trigger:\n  type: github_event\n  event: pull_request\n  repo: acme/app\n") && !written.contains("schedule"), "{written}");
    let out = ctl(&th).args(["routines", "new", "bad", "--command", "true", "--trigger", "type=github_event", "--trigger", "event=pulls"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("error: trigger: unknown github_event event \"pulls\""), "{}", stderr(&out));
}
