//! Accounts in the engine: health verdicts from facts and outcomes, and "held, not lost".

use chrono::{DateTime, Duration, Utc};
use nightshift_core::accounts::Account;
use nightshift_core::agents::LoginFacts;
use nightshift_core::health::{assess, Credential, CredentialSource};
use nightshift_core::words::Verdict;
use nightshift_core::run::{Reason, RunStatus, Trigger};
use nightshift_core::store::{HealthRecord, RunQuery};
use nightshift_core::words::Agent;
use nightshift_core::{EngineOptions, ManualClock, Scheduler};
use nightshift_testkit::TestHome;
use std::sync::Arc;

fn account() -> Account {
    Account { agent: Agent::Claude, email: "me@home.dev".into(), config_dir: "/tmp/me".into(), provider: None }
}

fn login(expires_in_h: Option<i64>, refresh: bool, now: DateTime<Utc>) -> Credential {
    Credential {
        source: CredentialSource::AgentLogin,
        token: None,
        login: LoginFacts {
            present: true,
            expires_at: expires_in_h.map(|h| now + Duration::hours(h)),
            refresh_expires_at: None,
            has_refresh_token: refresh,
            ..LoginFacts::default()
        },
        login_changed_at: Some(now - Duration::days(1)),
        keychain_problem: None,
    }
}

fn record(verdict: &str, at: DateTime<Utc>, resets: Option<DateTime<Utc>>) -> HealthRecord {
    HealthRecord { account: "me@home.dev".into(), verdict: Verdict::parse(verdict).unwrap(), evidence: format!("{verdict} evidence"), at, resets_at: resets, run_id: None }
}

#[test]
fn verdicts_from_facts_and_outcomes() {
    let now = Utc::now();
    let a = account();
    assert_eq!(assess(&a, &login(Some(24 * 30), false, now), None, now).verdict, Verdict::Ok);
    assert_eq!(assess(&a, &login(Some(10), false, now), None, now).verdict, Verdict::Expiring);
    let expired = assess(&a, &login(Some(-1), false, now), None, now);
    assert_eq!(expired.verdict, Verdict::Expired);
    assert!(expired.fix.unwrap().contains("claude /login with CLAUDE_CONFIG_DIR=/tmp/me"));
    // With a refresh token the CLI renews the access token itself: not "expired".
    assert_eq!(assess(&a, &login(Some(-1), true, now), None, now).verdict, Verdict::Ok);
    assert_eq!(assess(&a, &login(None, true, now), Some(&record("live", now, None)), now).verdict, Verdict::Live);
    let revoked = assess(&a, &login(None, true, now), Some(&record("revoked", now, None)), now);
    assert_eq!((revoked.verdict, revoked.evidence.as_str()), (Verdict::Revoked, "revoked evidence"));
    // A fresh `claude /login` after the failure clears it.
    let mut relogged = login(None, true, now);
    relogged.login_changed_at = Some(now + Duration::minutes(1));
    assert_eq!(assess(&a, &relogged, Some(&record("revoked", now, None)), now).verdict, Verdict::Ok);
    let limited = assess(&a, &login(None, true, now), Some(&record("rate_limited", now, Some(now + Duration::hours(2)))), now);
    assert_eq!((limited.verdict, limited.resets_at), (Verdict::RateLimited, Some(now + Duration::hours(2))));
    // After the reset it is fine again.
    assert_eq!(assess(&a, &login(None, true, now), Some(&record("rate_limited", now, Some(now - Duration::minutes(1)))), now).verdict, Verdict::Ok);
    let none = Credential { source: CredentialSource::None, token: None, login: LoginFacts::default(), login_changed_at: None, keychain_problem: Some("OS keychain unavailable: x".into()) };
    let h = assess(&a, &none, None, now);
    assert_eq!((h.verdict, h.evidence.as_str()), (Verdict::Unconfigured, "OS keychain unavailable: x"));
    assert!(Verdict::Revoked.blocks() && Verdict::Unconfigured.blocks() && !Verdict::Expired.blocks() && !Verdict::RateLimited.blocks());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_blocked_by_an_account_runs_once_when_it_is_healthy_again() {
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
        assert_eq!(std::env::var("NIGHTSHIFT_SKIP_KEYCHAIN").as_deref(), Ok("1"), "needs the keychain: run through scripts/test.sh");
        return;
    }
    let th = TestHome::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-2.1.332");
    th.script("claude", &format!("cat {}/success.jsonl", fixtures.display()));
    let service = format!("nightshift-test-{}", th.path().file_name().unwrap().to_string_lossy());
    std::fs::write(th.path().join("nightshift.toml"), format!("keychain_service = \"{service}\"\n[[accounts]]\nemail = \"c@x.dev\"\n")).unwrap();
    th.routine("nightly", "schedule: \"0 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: go\naccount: c@x.dev\n");
    let start = DateTime::parse_from_rfc3339("2026-11-30T09:59:00Z").unwrap().with_timezone(&Utc);
    let clock = Arc::new(ManualClock::new(start));
    let opts = EngineOptions::for_test(th.path()).clock(clock.clone()).path_first(&th.bin_dir());
    // The keychain is reached over the session bus the test runs in.
    let engine = ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"].into_iter().fold(opts, |o, var| match std::env::var(var) {
        Ok(v) => o.env(var, v),
        Err(_) => o,
    });
    let engine = engine.open();
    let sched = Scheduler::new(engine.clone());
    sched.tick().await.unwrap();
    clock.set(start + Duration::minutes(1));
    sched.tick().await.unwrap();
    let rows = || engine.store().list_runs(&RunQuery { routine: Some("nightly".into()), limit: 10, ..Default::default() }).unwrap().runs;
    let settled = std::time::Duration::from_secs(10);
    engine.until_idle(settled).await;
    let blocked = rows();
    assert_eq!(blocked.len(), 1);
    assert_eq!((blocked[0].status, blocked[0].reason), (RunStatus::Blocked, Some(Reason::AuthPreflight)), "{blocked:?}");
    assert_eq!(blocked[0].account.as_deref(), Some("c@x.dev"));

    // Moved to another machine meanwhile (`devices:`): the account works again, but the routine
    // may not fire here — the scheduler's own rule — so the work stays owed.
    let file = "schedule: \"0 * * * *\"\ntimezone: UTC\nagent: claude\nprompt: go\naccount: c@x.dev\n";
    th.routine("nightly", &format!("{file}devices: [elsewhere]\n"));
    sched.reload();
    engine.set_token("c@x.dev", "nightshift-test-token-held-0007").await.unwrap();
    clock.set(start + Duration::minutes(2));
    sched.tick().await.unwrap();
    engine.until_idle(settled).await;
    assert_eq!(rows().len(), 1, "made up on a machine its routine does not run on: {:?}", rows());
    // Back on this machine: made up once (the token change woke the running loop before).
    th.routine("nightly", file);
    sched.reload();
    sched.tick().await.unwrap();
    engine.until_idle(settled).await;
    let after = rows();
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!((after[0].status, after[0].trigger), (RunStatus::Completed, Trigger::Catchup), "{after:?}");
    assert_eq!(after[1].made_up_by.as_deref(), Some(after[0].id.as_str()), "the held row names the run that made it up");
    // Owed once, not again.
    engine.set_token("c@x.dev", "nightshift-test-token-held-0007").await.unwrap();
    clock.set(start + Duration::minutes(3));
    // A pass queues what it makes up before it returns: nothing new is there, or running.
    sched.tick().await.unwrap();
    engine.until_idle(settled).await;
    assert_eq!(rows().len(), 2);
    let _ = nightshift_core::accounts::keychain::delete_token(&service, &engine.accounts()[0]);
}

/// A headless box set up the way the agent documents — its token in the engine's own environment,
/// no account configured — gets that token in its runs, masked in their logs; once an account of
/// the agent is configured, the inherited token never reaches a run (the account's own does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_token_in_the_engines_environment_reaches_runs_only_while_no_account_is_configured() {
    let th = TestHome::new();
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}"#;
    // It says how long the token it got is (never the token itself): which one reached it.
    th.script("claude", &format!("echo \"token=${{CLAUDE_CODE_OAUTH_TOKEN:-none}} length=${{#CLAUDE_CODE_OAUTH_TOKEN}} key=${{ANTHROPIC_API_KEY:-none}}\"\necho '{result}'"));
    th.routine("ask", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: hi\n");
    let inherited = "sk-ant-oat01-inherited-from-the-daemons-environment";
    let open = |settings: &str| {
        EngineOptions::for_test(th.path())
            .settings(settings)
            .path_first(&th.bin_dir())
            .env("CLAUDE_CODE_OAUTH_TOKEN", inherited)
            .env("CLAUDE_CODE_OAUTH_TOKEN_WORK_AT_ACME_DOT_DEV", "sk-ant-oat01-the-accounts-own-token")
            .open()
    };
    let engine = open("");
    assert_eq!(engine.inherited_credentials(), [(Agent::Claude, "CLAUDE_CODE_OAUTH_TOKEN")]);
    let run = engine.run_now("ask", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    let log = std::fs::read_to_string(th.path().join(format!("runs/ask/{}/stdout.log", run.id))).unwrap();
    assert!(!log.contains(inherited), "the inherited token is masked in the log: {log}");
    assert!(log.contains(&format!("length={} key=none", inherited.len())) && !log.contains("token=none"), "{log}");
    drop(engine);

    // With an account of the agent configured, the account's credential is used, never the inherited one.
    let engine = open("[[accounts]]\nemail = \"work@acme.dev\"\n");
    assert!(engine.inherited_credentials().is_empty());
    let run = engine.run_now("ask", Trigger::Manual).await.unwrap().wait().await.unwrap();
    let log = std::fs::read_to_string(th.path().join(format!("runs/ask/{}/stdout.log", run.id))).unwrap();
    assert!(!log.contains(inherited) && !log.contains("the-accounts-own-token"), "masked: {log}");
    assert_eq!(run.account.as_deref(), Some("work@acme.dev"));
    // The account's token reached the run, not the inherited one.
    assert!(log.contains(&format!("length={} ", "sk-ant-oat01-the-accounts-own-token".len())), "{log}");
}

/// `account: jane@acme.dev` where no account is configured under that email finds the login
/// signed in as it: Claude's own `~/.claude`, or a configured account's dir (that account). Whom
/// the default config is signed in as is read where the real CLI keeps it — `~/.claude.json`,
/// beside `~/.claude` (with `CLAUDE_CONFIG_DIR`, inside that dir) — and an account configured on a
/// dir signed in as someone else says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_account_is_found_by_the_identity_a_config_dir_is_signed_in_as() {
    let Some(real_claude) = nightshift_testkit::home::require_claude_cli() else { return };
    let th = TestHome::new();
    let user_home = th.path().join("user");
    // Claude Code's login (OAuth with Anthropic's servers cannot happen here): its credentials,
    // and `oauthAccount` in the file the CLI keeps its global config in.
    let later = chrono::Utc::now().timestamp_millis() + 3_600_000;
    let sign_in = |dir: &std::path::Path, global: &std::path::Path, email: &str| {
        std::fs::create_dir_all(dir).unwrap();
        let mut config: serde_json::Value = std::fs::read_to_string(global).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_else(|| serde_json::json!({}));
        config["oauthAccount"] = serde_json::json!({ "emailAddress": email });
        std::fs::write(global, config.to_string()).unwrap();
        std::fs::write(dir.join(".credentials.json"), format!(r#"{{"claudeAiOauth":{{"accessToken":"sk-ant-oat01-login","refreshToken":"sk-ant-ort01-r","expiresAt":{later}}}}}"#)).unwrap();
    };
    // The real CLI makes its files, with the default config (no CLAUDE_CONFIG_DIR) and with a
    // config dir of its own: which is where.
    std::fs::create_dir_all(&user_home).unwrap();
    let fake = nightshift_testkit::FakeAnthropic::start(None).await;
    fake.set("tok-where", nightshift_testkit::Reply::Success { text: "ok".into() });
    let real_cli = |config_dir: Option<&std::path::Path>| {
        let mut cmd = tokio::process::Command::new(&real_claude);
        cmd.args(["-p", "hi", "--output-format", "stream-json", "--verbose"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &user_home)
            .env("ANTHROPIC_BASE_URL", fake.url())
            .env("CLAUDE_CODE_OAUTH_TOKEN", "tok-where")
            .env("CLAUDE_CODE_MAX_RETRIES", "0")
            .current_dir(&user_home);
        if let Some(dir) = config_dir {
            cmd.env("CLAUDE_CONFIG_DIR", dir);
        }
        cmd.output()
    };
    let made = real_cli(None).await.unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let global = user_home.join(".claude.json");
    assert!(global.is_file() && !user_home.join(".claude/.claude.json").exists(), "the real CLI keeps its global config beside ~/.claude");
    let work_dir = th.path().join("work-login");
    assert!(real_cli(Some(&work_dir)).await.unwrap().status.success());
    assert!(work_dir.join(".claude.json").is_file(), "with CLAUDE_CONFIG_DIR, inside it");
    sign_in(&user_home.join(".claude"), &global, "jane@acme.dev");
    sign_in(&work_dir, &work_dir.join(".claude.json"), "joe@acme.dev");
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s"}"#;
    th.script("claude", &format!("echo \"dir=$CLAUDE_CONFIG_DIR\"\necho '{result}'"));
    th.routine("jane", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: hi\naccount: jane@acme.dev\n");
    th.routine("joe", "schedule: \"0 3 * * *\"\nagent: claude\nprompt: hi\naccount: Joe@acme.dev\n");
    let engine = EngineOptions::for_test(th.path())
        .settings(&format!("[[accounts]]\nemail = \"work@acme.dev\"\nconfig_dir = \"{}\"\n", work_dir.display()))
        .path_first(&th.bin_dir())
        .env("HOME", user_home.display().to_string())
        .open();
    let log = |id: &str, routine: &str| std::fs::read_to_string(th.path().join(format!("runs/{routine}/{id}/stdout.log"))).unwrap();
    let jane = engine.run_now("jane", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((jane.status, jane.account.as_deref()), (RunStatus::Completed, Some("jane@acme.dev")), "{jane:?}");
    assert!(log(&jane.id, "jane").contains(&format!("dir={}", user_home.join(".claude").display())), "Claude's own login dir");
    let joe = engine.run_now("joe", Trigger::Manual).await.unwrap().wait().await.unwrap();
    assert_eq!((joe.status, joe.account.as_deref()), (RunStatus::Completed, Some("work@acme.dev")), "the account whose dir is signed in as joe: {joe:?}");
    assert!(log(&joe.id, "joe").contains(&format!("dir={}", work_dir.display())));
    drop(engine);

    // An account configured on the default dir under another email: told, with the fix.
    let engine = EngineOptions::for_test(th.path())
        .settings(&format!("[[accounts]]\nemail = \"me@home.dev\"\nconfig_dir = \"{}\"\n", user_home.join(".claude").display()))
        .env("HOME", user_home.display().to_string())
        .open();
    let health = engine.account_health("me@home.dev").unwrap();
    assert_eq!(health.evidence, "agent login in its config dir; but its config dir is signed in as jane@acme.dev, not me@home.dev");
    assert_eq!(health.fix.as_deref(), Some(format!("sign in there as me@home.dev: claude /login with CLAUDE_CONFIG_DIR={} — or name the account jane@acme.dev in nightshift.toml", user_home.join(".claude").display()).as_str()));
}
