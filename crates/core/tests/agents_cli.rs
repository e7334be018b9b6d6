//! agents-cli's routine files load as they are (`import_agents_cli`): the corpus in
//! `tests/fixtures/agents-cli/` covers its keys; each file loads with the right schedule, zone,
//! agent, mode, prompt and next fire and the warnings at the right lines, or is refused saying why.
//! One test per binary touches `HOME` (where `~/.agents/routines/` is), so nothing races it.

use chrono::{DateTime, Utc};
use nightshift_core::routine::{Action, Mode, RoutineSet, Severity};
use nightshift_core::words::Agent;
use nightshift_core::EngineOptions;
use nightshift_testkit::TestHome;
use std::path::Path;

fn corpus() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents-cli")
}

/// A diagnostic as shown, its file cut to the file's name.
fn short(shown: &str) -> String {
    let (file, rest) = shown.split_once(':').unwrap();
    format!("{}:{rest}", Path::new(file).file_name().unwrap().to_string_lossy())
}

/// "file:line:col: warning: text" of a routine's warnings, the file part cut to the file's name.
fn warnings(set: &RoutineSet, name: &str) -> Vec<String> {
    let r = set.get(name).unwrap_or_else(|| panic!("{name} did not load: {:?}", set.get_invalid(name)));
    r.warnings
        .iter()
        .map(|w| {
            assert_eq!(w.severity, Severity::Warning);
            short(&w.to_string())
        })
        .collect()
}

fn errors(set: &RoutineSet, name: &str) -> Vec<String> {
    let bad = set.get_invalid(name).unwrap_or_else(|| panic!("{name} loaded, but should be refused"));
    bad.errors.iter().map(|e| short(&e.to_string())).collect()
}

fn agent_of(set: &RoutineSet, name: &str) -> (Agent, Mode, String) {
    match &set.get(name).unwrap().action {
        Action::Agent { agent, mode, prompt, .. } => (*agent, *mode, prompt.clone()),
        other => panic!("{other:?}"),
    }
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// The corpus through `import_agents_cli` (`~/.agents/routines/`), then as a project's routines
/// (`<repo>/.agents/routines/`, opted in under `projects`): the same routines, the same words.
#[test]
fn agents_cli_routine_files_load_as_they_are_through_the_import_and_as_project_routines() {
    let th = TestHome::new();
    let user_home = th.path().join("user");
    let project = th.path().join("code/app");
    for dir in [user_home.join(".agents/routines"), project.join(".agents/routines")] {
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(corpus()).unwrap().flatten() {
            if entry.path().extension().is_some_and(|e| e == "yml") {
                std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
            }
        }
    }
    std::fs::create_dir_all(user_home.join("code")).unwrap();
    std::fs::create_dir_all(user_home.join("docs")).unwrap();
    // The only test of this binary: no other thread reads HOME meanwhile.
    std::env::set_var("HOME", &user_home);
    let imported = EngineOptions::for_test(th.path()).settings("import_agents_cli = true\n[[hosts.buildbox]]\n").open();
    assert_corpus(&imported.routines(), &user_home);
    drop(imported);
    std::fs::remove_dir_all(user_home.join(".agents")).unwrap();
    let settings = format!("projects = [\"{}\"]\n[[hosts.buildbox]]\n", project.display());
    let opted_in = EngineOptions::for_test(th.path()).settings(&settings).open();
    assert_corpus(&opted_in.routines(), &user_home);
}

/// What each file of the corpus becomes, wherever it was read from.
fn assert_corpus(set: &RoutineSet, user_home: &Path) {
    // Nightshift's own keys as agents-cli writes them; the rest said, at its line.
    let r = set.get("release-train").unwrap();
    assert_eq!((r.schedule.as_ref().unwrap().expr.as_str(), r.timezone.name()), ("0 */4 * * *", "America/Los_Angeles"));
    assert_eq!(r.timeout, std::time::Duration::from_secs(7200));
    let (agent, mode, prompt) = agent_of(set, "release-train");
    assert_eq!((agent, mode), (Agent::Claude, Mode::Skip));
    assert_eq!(r.sandbox.asked, None, "agents-cli's `sandbox: false` does not opt out of Nightshift's");
    assert!(prompt.starts_with("Publish what is merged"), "{prompt}");
    assert_eq!(
        warnings(set, "release-train"),
        ["release-train.yml:8:10: warning: agents-cli's `sandbox: false` is not taken as `sandbox: off`: Nightshift's default applies (its sandbox for agent routines, none for commands); write `sandbox: off` to opt out"]
    );
    // `effort: low` is passed to Claude Code as its own `--effort low`.
    assert!(matches!(&r.action, Action::Agent { effort: Some(nightshift_core::routine::Effort::Low), .. }), "{:?}", r.action);
    let next = r.next_slot(at("2026-12-03T10:30:00Z")).unwrap();
    assert_eq!(next, at("2026-12-03T12:00:00Z"), "04:00 in Los Angeles");

    // A trigger is the events it runs on: without a schedule, only those (and Run now).
    assert_eq!(warnings(set, "pr-review"), Vec::<String>::new());
    let pr = set.get("pr-review").unwrap();
    assert_eq!(pr.trigger.as_ref().map(|t| t.words()).as_deref(), Some("github:pull_request (acme/app, action=opened)"));
    assert_eq!(pr.next_slot(at("2026-12-03T10:30:00Z")), None);
    assert_eq!(agent_of(set, "pr-review").1, Mode::Plan);
    assert_eq!(warnings(set, "linear-pickup"), Vec::<String>::new());
    let pickup = set.get("linear-pickup").unwrap();
    assert_eq!(pickup.trigger.as_ref().map(|t| t.words()).as_deref(), Some("linear:Issue (team=ENG, stateTo=In Progress)"));
    assert_eq!((agent_of(set, "linear-pickup").0, pickup.timezone.name()), (Agent::Codex, "Europe/Berlin"));

    // runOnce, endAt (taken), createdAt (said).
    let once = set.get("at-once").unwrap();
    assert!(once.run_once);
    assert_eq!(once.end_at, Some(at("2099-01-01T00:00:00Z")));
    assert_eq!(warnings(set, "at-once"), ["at-once.yml:8:1: warning: `createdAt` is ignored: agents-cli's bookkeeping; Nightshift keeps its own history"]);

    // A project-synced file: every bookkeeping key said at its line; a relative cwd under HOME.
    let synced = set.get("synced").unwrap();
    assert_eq!(synced.cwd.as_deref(), Some(user_home.join("code").as_path()));
    let w = warnings(set, "synced");
    let lines: Vec<&str> = w.iter().map(|l| l.split(": warning: ").next().unwrap()).collect();
    assert_eq!(lines, ["synced.yml:11:1", "synced.yml:12:1", "synced.yml:13:1", "synced.yml:14:1"], "{w:#?}");
    // (With the version of the `claude` on PATH when one is installed there, as npm installs it.)
    assert!(w[2].contains("`version: 2.1.332` is not pinned: no `[agents.claude.versions]` entry maps it to a binary in nightshift.toml, so the `claude` on PATH") && w[2].ends_with(" runs"), "{w:#?}");
    assert!(w[3].contains("`source` is ignored"), "{w:#?}");
    // `config.<key>` goes to the agent as its own setting (Claude Code's `--settings`).
    let Action::Agent { config, .. } = &synced.action else { panic!("an agent routine") };
    assert_eq!(config, &[("reasoning".to_string(), serde_json::json!("high"))]);

    // Placement as agents-cli means it.
    assert!(set.get("local-wins").unwrap().placement.is_none(), "hostStrategy: local wins");
    assert_eq!(warnings(set, "local-wins"), ["local-wins.yml:6:15: warning: `hostStrategy: local` runs it on this machine: `host: buildbox` is not used (as agents-cli does); remove one of them to say which you mean"]);
    // A host routine names the machine that sends it (agents-cli refuses it too): the fix names
    // this one.
    assert_eq!(
        errors(set, "on-a-host"),
        [format!("on-a-host.yml:5:1: a routine on a host needs `devices:`: without it every machine that reads this file fires it and sends the run over SSH (a routines folder synced between two machines runs it twice); add the machine that sends it, `devices: [{}]`", nightshift_testkit::this_machine())]
    );

    // A bare number of seconds.
    assert_eq!(set.get("bare-timeout").unwrap().timeout, std::time::Duration::from_secs(45));
    assert_eq!(warnings(set, "bare-timeout"), ["bare-timeout.yml:5:10: warning: `timeout: 45` has no unit: taken as 45 seconds; write 45s (or 10m, 1h) to say so"]);

    // agents-cli's `workflow:` and `loop:`: the file loads and runs its own prompt, each slot; what
    // is not run is said where it is written.
    assert!(warnings(set, "workflow")[0].starts_with("workflow.yml:5:1: warning: `workflow` is ignored: agents-cli's `workflow` (several steps in one routine) is not run"), "{:?}", warnings(set, "workflow"));
    assert!(warnings(set, "loop")[0].starts_with("loop.yml:5:1: warning: `loop` is ignored: agents-cli's `loop` (running again until a condition holds) is not run"), "{:?}", warnings(set, "loop"));
    // Refused where running it would not be what its author meant, saying what to use.
    assert!(errors(set, "cloud")[0].starts_with("cloud.yml:5:15: `hostStrategy: cloud` is not supported"));
    // `allow:` as agents-cli writes it: the agent's tool set, and a folder under the home.
    let guard = set.get("allow").unwrap().guard().unwrap().clone();
    assert_eq!((guard.allow_tools, guard.allow_dirs), (Some(vec!["Read".to_string(), "Grep".to_string()]), vec![user_home.join("docs")]));
    assert!(warnings(set, "allow").is_empty());

    // Neither tool's key: an error with the nearest key.
    assert!(errors(set, "typo").contains(&"typo.yml:2:1: unknown key `scheduel`; did you mean `schedule`?".to_string()), "{:?}", errors(set, "typo"));

    // Everything else loaded.
    let loaded: Vec<&str> = set.routines.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(loaded, ["allow", "at-once", "bare-timeout", "linear-pickup", "local-wins", "loop", "pr-review", "release-train", "synced", "workflow"]);
}
