//! Routines written for the user (the window's form and editor, `routines new|edit|…`): the file
//! is the source of truth, every check is the loader's own, nothing is overwritten blindly, and a
//! rename carries the run history with it.

use nightshift_core::routine::author::Draft;
use nightshift_core::run::{RunStatus, Trigger};
use nightshift_core::{Engine, EngineOptions, ErrorCode};
use nightshift_testkit::TestHome;
use std::time::Duration;

fn engine(th: &TestHome) -> Engine {
    EngineOptions::for_test(th.path())
        .settings("[[accounts]]\nemail = \"me@home.dev\"\n\n[[webhooks]]\nname = \"team\"\nurl = \"http://127.0.0.1:9/\"\n")
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", th.user_home().display().to_string())
        .open()
}

fn command_draft(name: &str) -> Draft {
    Draft { name: name.into(), command: "echo hello from the form".into(), schedule: "0 9 * * 1-5".into(), timezone: "Europe/Berlin".into(), ..Draft::default() }
}

fn field_problems(engine: &Engine, draft: &Draft) -> Vec<(String, String)> {
    engine.check_draft(draft).problems.into_iter().map(|p| (p.field.unwrap_or_default(), p.message)).collect()
}

#[tokio::test]
async fn a_draft_becomes_a_file_the_loader_reads_back_and_it_runs() {
    let th = TestHome::new();
    let engine = engine(&th);
    let draft = command_draft("morning");
    let check = engine.check_draft(&draft);
    assert!(check.problems.is_empty(), "{:?}", check.problems);
    assert_eq!(check.file, "routines/morning.yaml");
    let preview = check.preview.unwrap();
    assert_eq!(preview.words, "At 09:00 on weekdays");
    assert_eq!(preview.fires.len(), 5);
    assert!(preview.fires.iter().all(|f| f.in_zone.contains("09:00")), "{:?}", preview.fires);

    let written = engine.create_routine(&draft).unwrap();
    assert_eq!(written.file, "routines/morning.yaml");
    let r = engine.routine("morning").unwrap();
    assert_eq!(r.timezone.name(), "Europe/Berlin");
    assert_eq!(r.schedule.unwrap().expr, "0 9 * * 1-5");
    // At once, not after a second: run it.
    let rec = engine.run_now("morning", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(rec.status, RunStatus::Completed);
    // Never replaced: creating it again is refused on the name field and by the write.
    assert_eq!(field_problems(&engine, &draft), vec![("name".to_string(), "a routine named \"morning\" already exists (routines/morning.yaml)".to_string())]);
    assert_eq!(engine.create_routine(&draft).unwrap_err().code, ErrorCode::RoutineInvalid);
}

#[tokio::test]
async fn every_problem_is_on_its_field_with_the_validators_words() {
    let th = TestHome::new();
    let engine = engine(&th);
    let draft = Draft {
        name: "x y".into(),
        agent: "claude".into(),
        prompt: "".into(),
        account: "nobody@x.dev".into(),
        schedule: "61 9 * * *".into(),
        timezone: "Mars/Olympus".into(),
        cwd: "/no/such/folder".into(),
        mode: "yolo".into(),
        webhooks: vec!["nope".into()],
        ..Draft::default()
    };
    let problems = field_problems(&engine, &draft);
    let on = |field: &str| problems.iter().filter(|(f, _)| f == field).map(|(_, m)| m.as_str()).collect::<Vec<_>>().join(" | ");
    assert!(on("name").contains("contains ' '"), "{problems:?}");
    assert!(on("prompt").contains("an agent routine needs a `prompt`"), "{problems:?}");
    assert!(on("account").contains("no claude account \"nobody@x.dev\" (configured: me@home.dev)"), "{problems:?}");
    assert!(on("schedule").contains("invalid cron expression \"61 9 * * *\""), "{problems:?}");
    assert!(on("timezone").contains("unknown time zone \"Mars/Olympus\""), "{problems:?}");
    assert!(on("cwd").contains("no such folder: /no/such/folder"), "{problems:?}");
    assert!(on("mode").contains("unknown mode \"yolo\""), "{problems:?}");
    // The same words `routines validate` prints for the file.
    std::fs::write(th.path().join("routines/probe.yaml"), "schedule: \"61 9 * * *\"\ncommand: true\n").unwrap();
    let loader: Vec<String> = engine.routines().diagnostics().map(|d| d.message.clone()).collect();
    assert!(loader.iter().any(|m| on("schedule").contains(m.as_str())), "{loader:?} vs {problems:?}");

    // Webhooks only surface once the rest parses.
    let hooks = Draft { webhooks: vec!["nope".into()], ..command_draft("hooked") };
    assert_eq!(
        field_problems(&engine, &hooks),
        vec![("webhooks".to_string(), "no webhook named \"nope\" in nightshift.toml (defined: team)".to_string())]
    );
    // Nothing given at all: the name asked for (not a file called ".yaml"), and the routine's
    // missing parts on the fields the messages name.
    let problems = field_problems(&engine, &Draft::default());
    assert!(problems.contains(&("name".to_string(), "give the routine a name (letters, digits, '-', '_' and '.'; it names its file)".to_string())), "{problems:?}");
    assert!(!problems.iter().any(|(_, m)| m.contains(".yaml")), "{problems:?}");
    assert!(problems.iter().any(|(f, m)| f == "schedule" && m.starts_with("missing `schedule`")), "{problems:?}");
    assert!(problems.iter().any(|(f, m)| f == "agent" && m.starts_with("missing `agent`")), "{problems:?}");
}

#[tokio::test]
async fn a_multi_line_prompt_survives_exactly() {
    let th = TestHome::new();
    let engine = engine(&th);
    let prompt = "Review the open PRs.\n\n  - be brief: one line each\n  - \"quote\" # not a comment\n";
    let draft = Draft { name: "review".into(), agent: "claude".into(), prompt: prompt.into(), account: "me@home.dev".into(), schedule: "@daily".into(), ..Draft::default() };
    let check = engine.check_draft(&draft);
    assert!(check.problems.is_empty(), "{:?}", check.problems);
    assert!(check.yaml.contains("prompt: |\n  Review the open PRs.\n"), "{}", check.yaml);
    engine.create_routine(&draft).unwrap();
    match engine.routine("review").unwrap().action {
        nightshift_core::routine::Action::Agent { prompt: p, .. } => assert_eq!(p, prompt),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_editor_keeps_comments_and_never_overwrites_a_change_it_did_not_see() {
    let th = TestHome::new();
    let engine = engine(&th);
    let original = "# Nightly clean-up — keep this note\nname: tidy\nschedule: \"0 3 * * *\" # 03:00\ncommand: echo tidy\n";
    th.routine("tidy", original);
    let opened = engine.routine_source("tidy").unwrap();
    assert_eq!(opened.text, original);
    assert_eq!(opened.file, "routines/tidy.yaml");

    // Live validation at line and column.
    let broken = original.replace("0 3 * * *", "0 3 * *");
    let problems = engine.check_routine_text("tidy", &broken).unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!((problems[0].line, problems[0].col), (3, 11));
    assert!(problems[0].message.contains("expected 5 fields"), "{problems:?}");
    // Invalid text is not saved: the file is live.
    let refused = engine.save_routine_text("tidy", &broken, &opened.version, false).unwrap_err();
    assert_eq!(refused.code, ErrorCode::RoutineInvalid);
    assert_eq!(std::fs::read_to_string(th.path().join("routines/tidy.yaml")).unwrap(), original);
    // A name change in the text is a rename: said at the name, not saved.
    let renamed = original.replace("name: tidy", "name: neat");
    let problems = engine.check_routine_text("tidy", &renamed).unwrap();
    assert_eq!((problems[0].line, problems[0].col), (2, 7));
    assert!(problems[0].message.contains("use Rename instead"), "{problems:?}");

    let edited = original.replace("echo tidy", "echo tidier");
    let saved = engine.save_routine_text("tidy", &edited, &opened.version, false).unwrap();
    assert_eq!(std::fs::read_to_string(th.path().join("routines/tidy.yaml")).unwrap(), edited);
    assert!(saved.text.contains("# Nightly clean-up — keep this note") && saved.text.contains("# 03:00"));

    // Someone else (a sync, an editor) changes the file; a save from the old version is refused.
    let theirs = edited.replace("03:00", "three o'clock");
    std::fs::write(th.path().join("routines/tidy.yaml"), &theirs).unwrap();
    let mine = edited.replace("echo tidier", "echo mine");
    let conflict = engine.save_routine_text("tidy", &mine, &saved.version, false).unwrap_err();
    assert_eq!(conflict.code, ErrorCode::Conflict);
    assert!(conflict.message.contains("changed on disk since you opened it"), "{}", conflict.message);
    assert_eq!(std::fs::read_to_string(th.path().join("routines/tidy.yaml")).unwrap(), theirs);
    // …unless the user chooses to overwrite.
    engine.save_routine_text("tidy", &mine, &saved.version, true).unwrap();
    assert_eq!(std::fs::read_to_string(th.path().join("routines/tidy.yaml")).unwrap(), mine);
}

#[tokio::test]
async fn a_broken_file_opens_to_be_fixed() {
    let th = TestHome::new();
    let engine = engine(&th);
    th.routine("broken", "name: broken\ncommand: echo hi\nschedule: \"0 9 * * *\"\nretrys: 3\n");
    let opened = engine.routine_source("broken").unwrap();
    let fixed = opened.text.replace("retrys: 3\n", "");
    assert!(engine.check_routine_text("broken", &fixed).unwrap().is_empty());
    engine.save_routine_text("broken", &fixed, &opened.version, false).unwrap();
    assert!(engine.routine("broken").is_ok());
}

#[tokio::test]
async fn rename_carries_the_history_and_the_pause_and_refuses_while_running() {
    let th = TestHome::new();
    let engine = engine(&th);
    th.routine("old", "# mine\nname: old\nschedule: \"0 9 * * *\"\ncommand: sleep 0.2\n");
    let first = engine.run_now("old", Trigger::Manual).await.unwrap().wait().await.unwrap();
    engine.set_routine_paused("old", true).unwrap();

    // While a run is going: refused, nothing changed.
    let going = engine.run_now("old", Trigger::Manual).await.unwrap();
    let refused = engine.rename_routine("old", "new").unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert!(refused.message.contains("queued or running"), "{}", refused.message);
    assert!(th.path().join("routines/old.yaml").exists() && !th.path().join("routines/new.yaml").exists());
    let second = going.wait().await.unwrap();

    let written = engine.rename_routine("old", "new").unwrap();
    assert_eq!(written.file, "routines/new.yaml");
    assert!(!th.path().join("routines/old.yaml").exists());
    assert_eq!(std::fs::read_to_string(th.path().join("routines/new.yaml")).unwrap(), "# mine\nname: new\nschedule: \"0 9 * * *\"\ncommand: sleep 0.2\n");
    assert!(engine.routine("old").is_err());
    let history = engine.runs(&nightshift_core::store::RunQuery { routine: Some("new".into()), status: None, cursor: None, limit: 10 }).unwrap();
    let ids: Vec<&str> = history.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, vec![second.id.as_str(), first.id.as_str()]);
    // Its run files are where they were; the records still find them.
    assert!(std::path::Path::new(&engine.run(&first.id).unwrap().run_dir).is_dir());
    assert!(engine.routines().get("new").is_some());
    let overview = nightshift_core::view::routines::overview(&engine, chrono::Utc::now()).unwrap();
    let row = overview.iter().find(|r| r.name == "new").unwrap();
    assert_eq!(row.state, nightshift_core::view::routines::RoutineState::Paused, "the pause followed");
    assert_eq!(row.last_run.as_ref().map(|l| l.id.as_str()), Some(second.id.as_str()));

    // A name whose history exists (a removed routine's) is refused: two histories would mix.
    th.routine("other", "name: other\nschedule: \"0 9 * * *\"\ncommand: true\n");
    let refused = engine.rename_routine("other", "new").unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert!(refused.message.contains("already exists"), "{}", refused.message);
}

#[tokio::test]
async fn duplicate_remove_and_restore() {
    let th = TestHome::new();
    let engine = engine(&th);
    th.routine("base", "# keep\nname: base\nschedule: \"0 9 * * *\"\ncommand: true # note\n");
    engine.run_now("base", Trigger::Manual).await.unwrap().wait().await.unwrap();

    let copy = engine.duplicate_routine("base", "base-copy").unwrap();
    assert_eq!(copy.file, "routines/base-copy.yaml");
    assert_eq!(std::fs::read_to_string(th.path().join("routines/base-copy.yaml")).unwrap(), "# keep\nname: base-copy\nschedule: \"0 9 * * *\"\ncommand: true # note\n");
    assert_eq!(engine.duplicate_routine("base", "base-copy").unwrap_err().code, ErrorCode::Conflict);

    let removed = engine.remove_routine("base").unwrap();
    assert!(removed.id.ends_with("-base.yaml"), "{}", removed.id);
    assert!(!th.path().join("routines/base.yaml").exists());
    assert!(th.path().join("routines/.trash").join(&removed.id).is_file());
    assert!(engine.routine("base").is_err(), "gone from the routines");
    // History kept.
    let runs = engine.runs(&nightshift_core::store::RunQuery { routine: Some("base".into()), status: None, cursor: None, limit: 10 }).unwrap();
    assert_eq!(runs.runs.len(), 1);
    let listed = engine.removed_routines().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "base");

    // Restore refuses when the name is taken again, then works once it is free.
    th.routine("base", "name: base\nschedule: \"0 8 * * *\"\ncommand: true\n");
    assert_eq!(engine.restore_routine(&removed.id).unwrap_err().code, ErrorCode::Conflict);
    std::fs::remove_file(th.path().join("routines/base.yaml")).unwrap();
    let restored = engine.restore_routine(&removed.id).unwrap();
    assert_eq!(restored.name, "base");
    assert!(std::fs::read_to_string(th.path().join("routines/base.yaml")).unwrap().starts_with("# keep\n"));
    assert!(engine.removed_routines().unwrap().is_empty());
    assert!(engine.routine("base").is_ok());
    // Ids that are not trash entries are refused.
    for bad in ["../base.yaml", "base.yaml", "20261130T163000Z-../../x.yaml"] {
        assert!(engine.restore_routine(bad).is_err(), "{bad}");
    }
}

#[tokio::test]
async fn remove_waits_for_a_running_run() {
    let th = TestHome::new();
    let engine = engine(&th);
    th.routine("slow", "name: slow\nschedule: \"0 9 * * *\"\ncommand: sleep 1\n");
    let going = engine.run_now("slow", Trigger::Manual).await.unwrap();
    let refused = engine.remove_routine("slow").unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert!(th.path().join("routines/slow.yaml").exists());
    tokio::time::timeout(Duration::from_secs(10), going.wait()).await.unwrap().unwrap();
    engine.remove_routine("slow").unwrap();
}

#[tokio::test]
async fn hostile_input_is_refused_in_the_loaders_words_and_never_hangs() {
    let th = TestHome::new();
    let engine = engine(&th);
    th.routine("small", "schedule: \"0 9 * * *\"\ncommand: true\n");
    let opened = engine.routine_source("small").unwrap();

    // Text the loader would refuse (over 1 MiB) is refused before it is parsed or written.
    let huge = format!("{}# {}\n", opened.text, "x".repeat(2 << 20));
    let problems = engine.check_routine_text("small", &huge).unwrap();
    assert_eq!(problems.len(), 1);
    assert_eq!((problems[0].line, problems[0].col), (1, 1));
    assert!(problems[0].message.contains("it may be at most 1 MiB"), "{problems:?}");
    assert_eq!(engine.save_routine_text("small", &huge, &opened.version, false).unwrap_err().code, ErrorCode::RoutineInvalid);
    let draft = Draft { prompt: "y".repeat(2 << 20), agent: "claude".into(), ..command_draft("big") };
    let check = engine.check_draft(&draft);
    assert!(check.problems.iter().any(|p| p.message.contains("it may be at most 1 MiB")), "{:?}", check.problems);
    assert_eq!(engine.create_routine(&draft).unwrap_err().code, ErrorCode::RoutineInvalid);
    assert!(!th.path().join("routines/big.yaml").exists());
    // A NUL byte: located, not a panic.
    let problems = engine.check_routine_text("small", "schedule: \"0 9 * * *\"\ncommand: tr\0ue\n").unwrap();
    assert_eq!((problems[0].line, problems[0].col), (2, 12), "{problems:?}");

    // A FIFO and a huge file dropped into the trash: listed by their names, never read whole, no hang.
    let trash = th.path().join("routines/.trash");
    std::fs::create_dir_all(&trash).unwrap();
    let fifo = trash.join("20261130T163000Z-piped.yaml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::fs::write(trash.join("20261130T163001Z-huge.yaml"), "#".repeat(3 << 20)).unwrap();
    let listed = tokio::time::timeout(Duration::from_secs(5), tokio::task::spawn_blocking({
        let engine = engine.clone();
        move || engine.removed_routines().unwrap()
    }))
    .await
    .expect("listing the trash does not hang on a FIFO")
    .unwrap();
    let names: Vec<&str> = listed.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, vec!["huge", "piped"]);
    assert_eq!(engine.restore_routine("20261130T163000Z-piped.yaml").unwrap_err().code, ErrorCode::RoutineNotFound, "a FIFO is not a removed routine file");
}

#[tokio::test]
async fn a_worktree_routine_from_the_form_is_checked_on_its_fields() {
    let th = TestHome::new();
    let engine = engine(&th);
    let plain = th.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let outside = Draft { cwd: plain.display().to_string(), workspace: "worktree".into(), push: "origin".into(), ..command_draft("wt") };
    let problems = field_problems(&engine, &outside);
    assert_eq!(
        problems,
        vec![("cwd".to_string(), format!("`workspace: worktree` needs `cwd` in a git repository; {} is not in one (no .git in it or above)", plain.display()))]
    );
    let stray = Draft { push: "origin".into(), ..command_draft("wt") };
    assert_eq!(field_problems(&engine, &stray), vec![("push".to_string(), "`push` only applies to `workspace: worktree`".to_string())]);
    std::fs::create_dir_all(plain.join(".git")).unwrap();
    assert_eq!(field_problems(&engine, &outside), vec![]);
    let yaml = outside.to_yaml();
    assert!(yaml.contains(&format!("cwd: {}\nworkspace: worktree\npush: origin\n", plain.display())), "{yaml}");
}

#[tokio::test]
async fn a_routine_placed_on_another_machine_from_the_form() {
    let th = TestHome::new();
    let engine = EngineOptions::for_test(th.path()).settings("[hosts.buildbox]\nagent_path = \"/opt/bin/claude\"\n").open();
    // The form suggests the machines nightshift.toml and the routines name.
    std::fs::write(th.path().join("routines/elsewhere.yaml"), "schedule: \"@daily\"\ncommand: true\nhost: \"me@ci.example\"\ndevices: [laptop]\n").unwrap();
    assert_eq!(nightshift_core::api::routine_form(&engine).hosts, vec!["buildbox".to_string(), "me@ci.example".to_string()]);

    let placed = Draft { host: "buildbox".into(), remote_cwd: "/srv/app".into(), ..command_draft("there") };
    assert_eq!(field_problems(&engine, &placed), vec![]);
    assert!(placed.to_yaml().contains("host: buildbox\nremote_cwd: /srv/app\n"), "{}", placed.to_yaml());
    // This machine sends its runs: the file names it in `devices:`, so a routines folder synced to
    // another machine does not fire it there too.
    let here = nightshift_testkit::this_machine();
    assert!(engine.check_draft(&placed).yaml.ends_with(&format!("devices: [\"{here}\"]\n")), "{}", engine.check_draft(&placed).yaml);
    engine.create_routine(&placed).unwrap();
    let there = engine.routine("there").unwrap();
    assert_eq!(there.devices, vec![here.clone()]);
    let placement = there.placement.unwrap();
    assert_eq!((placement.hosts, placement.remote_cwd.as_deref()), (vec!["buildbox".to_string()], Some("/srv/app")));
    // Devices named in the form are kept.
    let named = Draft { host: "buildbox".into(), devices: vec!["desk".into()], ..command_draft("named") };
    assert!(engine.check_draft(&named).yaml.ends_with("devices: [\"desk\"]\n"), "{}", engine.check_draft(&named).yaml);
    // `hostStrategy` as agents-cli's placement: the fleet nightshift.toml lists, sent from here.
    let fleet = Draft { placement: "fleet".into(), ..command_draft("fleet") };
    assert_eq!(field_problems(&engine, &fleet), vec![]);
    engine.create_routine(&fleet).unwrap();
    let fleet = engine.routine("fleet").unwrap();
    assert_eq!((fleet.placement.unwrap().hosts, fleet.devices), (vec!["buildbox".to_string()], vec![here]));
    let unknown = Draft { placement: "cloud".into(), ..command_draft("cloudy") };
    assert!(field_problems(&engine, &unknown).iter().any(|(f, m)| f == "hostStrategy" && m.starts_with("`hostStrategy: cloud` is not supported")), "{:?}", field_problems(&engine, &unknown));

    // The loader's words, on the fields.
    let stray = Draft { remote_cwd: "/srv/app".into(), ..command_draft("here") };
    assert_eq!(field_problems(&engine, &stray), vec![("remote_cwd".to_string(), "`remote_cwd` only applies to a routine placed on another machine with `host:`".to_string())]);
    let option = Draft { host: "-oProxyCommand=x".into(), ..command_draft("bad") };
    let problems = field_problems(&engine, &option);
    assert!(problems.iter().any(|(f, m)| f == "host" && m.contains("is not an SSH host")), "{problems:?}");
}

/// The editor's check lists warnings with their severity, and a file with only warnings saves.
#[test]
fn a_file_with_only_warnings_is_checked_and_saved() {
    let th = TestHome::new();
    th.routine("synced", "schedule: \"0 8 * * 1\"\ncommand: echo hi\n");
    let engine = EngineOptions::for_test(th.path()).open();
    let text = "schedule: \"0 8 * * 1\"\ncommand: echo hi\nsandbox: false\n";
    let problems = engine.check_routine_text("synced", text).unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!((problems[0].severity, problems[0].line, problems[0].col), (nightshift_core::routine::Severity::Warning, 3, 10));
    let source = engine.routine_source("synced").unwrap();
    engine.save_routine_text("synced", text, &source.version, false).expect("warnings never block a save");
    assert_eq!(std::fs::read_to_string(th.path().join("routines/synced.yaml")).unwrap(), text);
}

/// The form's "On a GitHub or Linear event": the draft's trigger becomes the file's `trigger:`
/// block, its problems land on the trigger field, and the preview says what it runs on.
#[tokio::test]
async fn a_draft_on_an_event_writes_its_trigger() {
    let th = TestHome::new();
    let engine = engine(&th);
    let trigger = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let draft = Draft {
        name: "pr-review".into(),
        command: "true".into(),
        trigger: trigger(&[("type", "github_event"), ("event", "pull_request"), ("repo", "acme/app"), ("action", "opened"), ("label", "")]),
        ..Draft::default()
    };
    let check = engine.check_draft(&draft);
    assert!(check.problems.is_empty(), "{:?}", check.problems);
    assert!(check.yaml.ends_with("trigger:\n  type: github_event\n  event: pull_request\n  repo: acme/app\n  action: opened\n"), "{}", check.yaml);
    assert_eq!(check.preview.map(|p| (p.words, p.fires.len())), Some(("On github:pull_request (acme/app, action=opened)".to_string(), 0)));
    engine.create_routine(&draft).unwrap();
    assert_eq!(engine.routine("pr-review").unwrap().trigger.unwrap().words(), "github:pull_request (acme/app, action=opened)");
    let bad = Draft { name: "bad".into(), trigger: trigger(&[("type", "github_event"), ("event", "pull_request"), ("repo", "acme")]), ..draft };
    assert_eq!(field_problems(&engine, &bad), vec![("trigger".to_string(), "`trigger.repo` is owner/name, such as acme/app (found \"acme\")".to_string())]);
}
