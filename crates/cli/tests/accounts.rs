//! Accounts for real: the OS keychain (gnome-keyring on a private D-Bus session, started by
//! scripts/test.sh), the "no Secret Service" path, and the real Claude, Codex and Gemini CLIs
//! against the loopback fake APIs answering by credential — failover, revocation, preflight,
//! recovery, redaction.

mod common;

use common::{ctl, ctl_bus, files_containing, home_with_accounts, json, keychain_available, set_token, stderr, stdout, tokio_ctl};
use nightshift_testkit::home::{require_agent_cli, require_claude_cli};
use nightshift_testkit::{FakeAnthropic, Reply, TestHome};
use std::io::Write;
use std::process::{Command, Stdio};

fn health(th: &TestHome) -> Vec<serde_json::Value> {
    json(&ctl_bus(th).args(["accounts", "list", "--json"]).output().unwrap()).as_array().unwrap().clone()
}

fn health_of(th: &TestHome, email: &str) -> serde_json::Value {
    health(th).into_iter().find(|h| h["account"] == email).unwrap()
}

#[test]
fn setup_tokens_live_in_the_os_keychain() {
    if !keychain_available() {
        return;
    }
    let (th, service) = home_with_accounts(&[]);
    let out = ctl_bus(&th).args(["accounts", "add", "claude", "me@home.dev"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(health_of(&th, "me@home.dev")["verdict"], "unconfigured");

    let out = set_token(&th, "me@home.dev", "nightshift-test-setup-token-0001");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("nightshift-test-setup-token-0001") && !stderr(&out).contains("nightshift-test-setup-token-0001"), "never echoed");
    let h = health_of(&th, "me@home.dev");
    assert_eq!((h["verdict"].as_str(), h["source"].as_str()), (Some("ok"), Some("keychain")), "{h:#}");
    // The item is a normal Secret Service item: another program can read it…
    let looked = Command::new("secret-tool").args(["lookup", "service", &service, "username", "claude:me@home.dev"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&looked.stdout), "nightshift-test-setup-token-0001");
    // …and an item another program wrote is read by us.
    let mut st = Command::new("secret-tool")
        .args(["store", "--label=test", "service", &service, "username", "claude:other@home.dev"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    st.stdin.take().unwrap().write_all(b"written-by-secret-tool-0002").unwrap();
    assert!(st.wait().unwrap().success());
    ctl_bus(&th).args(["accounts", "add", "claude", "other@home.dev"]).output().unwrap();
    assert_eq!(health_of(&th, "other@home.dev")["source"], "keychain");
    // Nothing secret in what the CLI prints.
    let listing = ctl_bus(&th).args(["accounts", "list", "--json"]).output().unwrap();
    assert!(!stdout(&listing).contains("nightshift-test-setup-token") && !stdout(&listing).contains("written-by-secret-tool"));
    // Remove deletes the keychain item too.
    assert!(ctl_bus(&th).args(["accounts", "remove", "me@home.dev"]).status().unwrap().success());
    assert!(ctl_bus(&th).args(["accounts", "remove", "other@home.dev"]).status().unwrap().success());
    let gone = Command::new("secret-tool").args(["lookup", "service", &service, "username", "claude:me@home.dev"]).output().unwrap();
    assert!(!gone.status.success());
}

#[test]
fn without_a_secret_service_accounts_say_why_and_everything_else_works() {
    // A private session bus that starts no services: no org.freedesktop.secrets.
    let conf = std::fs::read_to_string("/usr/share/dbus-1/session.conf").expect("dbus session.conf");
    let bare: String = conf.lines().filter(|l| !l.contains("servicedir") && !l.contains("standard_session_servicedirs")).collect::<Vec<_>>().join("\n");
    let (th, _) = home_with_accounts(&["me@home.dev"]);
    let conf_path = th.path().join("bare-session.conf");
    std::fs::write(&conf_path, bare).unwrap();
    th.routine("hello", "schedule: \"0 * * * *\"\ncommand: echo still works\n");
    let script = format!(
        "{ctl} accounts list --json > {d}/list.json 2> {d}/list.err; echo token-abcdefgh | {ctl} accounts set-token me@home.dev > {d}/set.out 2> {d}/set.err; echo $? > {d}/set.code; {ctl} run hello --wait --json > {d}/run.json",
        ctl = env!("CARGO_BIN_EXE_nightshiftctl"),
        d = th.path().display()
    );
    let out = Command::new("dbus-run-session")
        .arg(format!("--config-file={}", conf_path.display()))
        .args(["--", "sh", "-c", &script])
        .env("NIGHTSHIFT_HOME", th.path())
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", th.user_home())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read = |f: &str| std::fs::read_to_string(th.path().join(f)).unwrap();
    let list: serde_json::Value = serde_json::from_str(&read("list.json")).unwrap();
    assert_eq!(list[0]["verdict"], "unconfigured");
    assert_eq!(
        list[0]["evidence"],
        "OS keychain unavailable: no Secret Service on the session bus — start gnome-keyring (or another Secret Service) or set CLAUDE_CODE_OAUTH_TOKEN_ME_AT_HOME_DOT_DEV"
    );
    assert_eq!(read("set.code").trim(), "2");
    assert!(read("set.err").starts_with("error: OS keychain unavailable: no Secret Service on the session bus"), "{}", read("set.err"));
    let run: serde_json::Value = serde_json::from_str(&read("run.json")).unwrap();
    assert_eq!(run["status"], "completed", "command routines keep working");
}

#[test]
fn an_environment_token_is_the_headless_fallback() {
    let (th, _) = home_with_accounts(&["me@home.dev"]);
    let out = ctl(&th)
        .args(["accounts", "list", "--json"])
        .env("CLAUDE_CODE_OAUTH_TOKEN_ME_AT_HOME_DOT_DEV", "env-token-for-headless-0003")
        .output()
        .unwrap();
    let h = &json(&out)[0];
    assert_eq!((h["verdict"].as_str(), h["source"].as_str()), (Some("ok"), Some("env")), "{h:#}");
    assert!(!stdout(&out).contains("env-token-for-headless"));
}

/// With no account of an agent, its token in the environment is what its runs use: listed as
/// "environment (inherited)", by the variable's name, never its value.
#[test]
fn an_inherited_agent_token_is_listed_without_its_value() {
    let th = TestHome::new();
    let out = ctl(&th).args(["accounts", "list"]).env("GEMINI_API_KEY", "AIza-inherited-key-for-the-list-0004").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(said.starts_with("gemini · environment (inherited): GEMINI_API_KEY — used by gemini routines, as no gemini account is configured\n"), "{said}");
    assert!(!said.contains("AIza-inherited"), "{said}");
}

const TOK_A: &str = "nightshift-test-token-alpha-0001";
const TOK_B: &str = "nightshift-test-token-bravo-0002";
const TOK_C: &str = "nightshift-test-token-charlie-0003";
const TOK_C2: &str = "nightshift-test-token-charlie-new-0004";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_revocation_preflight_recovery_and_no_leaks_with_the_real_cli() {
    if require_claude_cli().is_none() || !keychain_available() {
        return;
    }
    let reset = (chrono::Utc::now().timestamp() / 3600 + 3) * 3600;
    let fake = FakeAnthropic::start(None).await;
    fake.set(TOK_A, Reply::UnifiedLimit { reset_epoch: reset });
    fake.set(TOK_B, Reply::Success { text: "Triaged 4 issues.".into() });
    fake.set(TOK_C, Reply::Unauthorized);
    fake.set(TOK_C2, Reply::Success { text: "Back in business.".into() });
    let (th, _) = home_with_accounts(&["a@x.dev", "b@x.dev", "c@x.dev"]);
    for (email, tok) in [("a@x.dev", TOK_A), ("b@x.dev", TOK_B), ("c@x.dev", TOK_C)] {
        assert!(set_token(&th, email, tok).status.success());
    }
    let env = format!("env:\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n", fake.url());
    th.routine("pool", &format!("schedule: \"0 2 * * *\"\nagent: claude\nprompt: Triage\naccounts: [a@x.dev, b@x.dev]\ncwd: {}\n{env}", th.user_home().display()));
    th.routine("pinned", &format!("schedule: \"0 3 * * *\"\nagent: claude\nprompt: Check\naccount: c@x.dev\ncwd: {}\n{env}", th.user_home().display()));
    let mut printed = String::new();
    let run = |name: &'static str| {
        let th = &th;
        async move {
            let mut cmd = tokio_ctl(th);
            for var in ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "XDG_DATA_HOME"] {
                if let Some(v) = std::env::var_os(var) {
                    cmd.env(var, v);
                }
            }
            let out = cmd.args(["run", name, "--wait", "--json"]).output().await.unwrap();
            (json(&out), format!("{}{}", stdout(&out), stderr(&out)))
        }
    };

    // A is limited → the same run retries on B and completes; A is rate limited until the reset.
    let (rec, out) = run("pool").await;
    printed += &out;
    assert_eq!((rec["status"].as_str(), rec["account"].as_str()), (Some("completed"), Some("b@x.dev")), "{rec:#}");
    let attempts = rec["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{rec:#}");
    assert_eq!((attempts[0]["account"].as_str(), attempts[0]["reason"].as_str()), (Some("a@x.dev"), Some("rate_limited")));
    assert_eq!(attempts[1]["status"], "completed");
    assert_eq!(fake.message_credentials(), vec![TOK_A, TOK_B], "the API saw A's token, then B's");
    let expected_reset = nightshift_core::words::fmt_time(&chrono::DateTime::from_timestamp(reset, 0).unwrap());
    let a = health_of(&th, "a@x.dev");
    assert_eq!((a["verdict"].as_str(), a["resets_at"].as_str()), (Some("rate_limited"), Some(expected_reset.as_str())), "{a:#}");
    assert_eq!(health_of(&th, "b@x.dev")["verdict"], "live");

    // C's token is refused → failed/auth_failed, no failover, C revoked.
    let (rec, out) = run("pinned").await;
    printed += &out;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{rec:#}");
    assert_eq!(rec["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(health_of(&th, "c@x.dev")["verdict"], "revoked");

    // The next run on C is blocked before anything is spawned.
    let seen = fake.requests().len();
    let (rec, out) = run("pinned").await;
    printed += &out;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("blocked"), Some("auth_preflight")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("nightshiftctl accounts set-token c@x.dev"), "{rec:#}");
    assert_eq!(fake.requests().len(), seen, "nothing reached the API");

    // A new token → it runs, and C is live again.
    assert!(set_token(&th, "c@x.dev", TOK_C2).status.success());
    let (rec, out) = run("pinned").await;
    printed += &out;
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert_eq!(health_of(&th, "c@x.dev")["verdict"], "live");

    // No token anywhere: not in the home (database, logs, reports, account dirs), not in output.
    for tok in [TOK_A, TOK_B, TOK_C, TOK_C2] {
        assert_eq!(files_containing(th.path(), tok), Vec::<String>::new(), "{tok} leaked");
        assert!(!printed.contains(tok), "{tok} printed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_claude_login_is_auth_failed_and_the_account_revoked() {
    if require_claude_cli().is_none() {
        return;
    }
    let fake = FakeAnthropic::start(None).await; // every credential gets 401
    let (th, _) = home_with_accounts(&["old@x.dev"]);
    let dir = th.path().join("accounts/claude/old-at-x.dev");
    std::fs::create_dir_all(&dir).unwrap();
    let expires = (chrono::Utc::now().timestamp() + 86_400) * 1000;
    std::fs::write(
        dir.join(".credentials.json"),
        format!(r#"{{"claudeAiOauth":{{"accessToken":"stale-access-token-0005","refreshToken":"stale-refresh-0006","expiresAt":{expires},"scopes":["user:inference"],"subscriptionType":"max"}}}}"#),
    )
    .unwrap();
    th.routine(
        "r",
        &format!("schedule: \"0 2 * * *\"\nagent: claude\nprompt: Go\naccount: old@x.dev\ncwd: {}\nenv:\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n", th.user_home().display(), fake.url()),
    );
    assert_eq!(json(&ctl(&th).args(["accounts", "list", "--json"]).output().unwrap())[0]["source"], "agent_login");
    let out = tokio_ctl(&th).args(["run", "r", "--wait", "--json"]).output().await.unwrap();
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{rec:#}");
    let h = &json(&ctl(&th).args(["accounts", "list", "--json"]).output().unwrap())[0];
    assert_eq!(h["verdict"], "revoked", "{h:#}");
    // A login with no credentials at all never reaches the CLI: it is blocked as unconfigured.
    std::fs::remove_file(dir.join(".credentials.json")).unwrap();
    let _ = std::fs::remove_file(th.path().join("nightshift.db"));
    let out = tokio_ctl(&th).args(["run", "r", "--wait", "--json"]).output().await.unwrap();
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("blocked"), Some("auth_preflight")), "{rec:#}");
}

#[test]
fn a_pinned_account_that_is_not_configured_blocks_with_no_account() {
    let (th, _) = home_with_accounts(&[]);
    th.script("claude", "echo should not run > ran; exit 0");
    th.routine("r", "schedule: \"0 2 * * *\"\nagent: claude\nprompt: Go\naccount: ghost@x.dev\n");
    let out = ctl(&th).args(["run", "r", "--wait", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("blocked"), Some("no_account")), "{rec:#}");
    assert_eq!(rec["message"], "account ghost@x.dev is not configured; add it with `nightshiftctl accounts add claude ghost@x.dev`");
    assert!(!th.path().join("ran").exists(), "nothing was spawned");
}

/// Codex accounts a@x.dev and b@x.dev, each CODEX_HOME (its config dir) pointing Codex at
/// `fake`, and a routine `merge` on the pool of both.
fn codex_pool(fake: &nightshift_testkit::fake_openai::FakeOpenAi) -> TestHome {
    let (th, _) = home_with_accounts(&["codex:a@x.dev", "codex:b@x.dev"]);
    for slug in ["a-at-x.dev", "b-at-x.dev"] {
        let dir = th.path().join("accounts/codex").join(slug);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), fake.codex_config(0)).unwrap();
    }
    th.routine("merge", &format!("schedule: \"0 2 * * *\"\nagent: codex\nprompt: Merge green PRs\naccounts: [a@x.dev, b@x.dev]\ncwd: {}\n", th.user_home().display()));
    th
}

const KEY_A: &str = "sk-test-codex-alpha-000000000001";
const KEY_B: &str = "sk-test-codex-bravo-000000000002";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_accounts_get_their_own_key_and_codex_home_and_fail_over_on_a_usage_limit() {
    use nightshift_testkit::fake_openai::{FakeOpenAi, Reply as OpenAiReply};
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    let reset = (chrono::Utc::now().timestamp() / 60 + 5 * 60) * 60;
    fake.set(KEY_A, OpenAiReply::UsageLimit { resets_at: reset });
    fake.set(KEY_B, OpenAiReply::Success { text: "Merged 2 PRs.".into() });
    let th = codex_pool(&fake);
    let out = tokio_ctl(&th)
        .args(["run", "merge", "--wait", "--json"])
        .env("OPENAI_API_KEY_A_AT_X_DOT_DEV", KEY_A)
        .env("OPENAI_API_KEY_B_AT_X_DOT_DEV", KEY_B)
        .env("OPENAI_API_KEY", "sk-inherited-must-not-reach-the-run-0000")
        .output()
        .await
        .unwrap();
    let rec = json(&out);
    assert_eq!((rec["status"].as_str(), rec["account"].as_str()), (Some("completed"), Some("b@x.dev")), "{rec:#}");
    let tried: Vec<(&str, &str)> = rec["attempts"].as_array().unwrap().iter().map(|a| (a["account"].as_str().unwrap(), a["status"].as_str().unwrap())).collect();
    assert_eq!(tried, vec![("a@x.dev", "failed"), ("b@x.dev", "completed")]);
    assert_eq!(rec["attempts"][0]["reason"], "rate_limited");
    assert_eq!(fake.response_keys(), vec![KEY_A, KEY_B], "each account's own key, nothing inherited");
    let h = json(&ctl(&th).args(["accounts", "list", "--json"]).env("OPENAI_API_KEY_A_AT_X_DOT_DEV", KEY_A).output().unwrap());
    let a = h.as_array().unwrap().iter().find(|x| x["account"] == "a@x.dev").unwrap().clone();
    assert_eq!((a["verdict"].as_str(), a["agent"].as_str(), a["source"].as_str()), (Some("rate_limited"), Some("codex"), Some("env")), "{a:#}");
    let resets = chrono::DateTime::parse_from_rfc3339(a["resets_at"].as_str().unwrap()).unwrap().timestamp();
    assert_eq!(resets, reset, "the reset Codex named, not the 60-minute fallback");
    for key in [KEY_A, KEY_B] {
        assert_eq!(files_containing(th.path(), key), Vec::<String>::new(), "{key} leaked");
        assert!(!stdout(&out).contains(key) && !stderr(&out).contains(key));
    }
    // Codex's shell snapshots (which would hold the run's environment) are off.
    let snapshots: Vec<_> = std::fs::read_dir(th.path().join("accounts/codex/a-at-x.dev/shell_snapshots")).into_iter().flatten().collect();
    assert!(snapshots.is_empty(), "{snapshots:?}");
}

/// The real Codex CLI keeps a ChatGPT plan's windows (the backend's `x-codex-primary-*` and
/// `x-codex-secondary-*` headers) in its session's rollout file under the account's CODEX_HOME:
/// they become the account's windows, and the pool's next run goes to the account with more
/// headroom.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_codex_cli_reports_its_plans_windows() {
    use nightshift_testkit::fake_openai::{FakeOpenAi, Reply as OpenAiReply};
    if require_agent_cli("codex").is_none() {
        return;
    }
    let fake = FakeOpenAi::start(None).await;
    let reset = chrono::Utc::now().timestamp() + 2 * 3600;
    fake.set(KEY_A, OpenAiReply::Windows { five_hour: 85.0, five_hour_reset: reset, weekly: 40.0, weekly_reset: reset + 3 * 86_400, text: "Merged.".into() });
    fake.set(KEY_B, OpenAiReply::Success { text: "Merged.".into() });
    let th = codex_pool(&fake);
    let run = || async {
        json(&tokio_ctl(&th).args(["run", "merge", "--wait", "--json"]).env("OPENAI_API_KEY_A_AT_X_DOT_DEV", KEY_A).env("OPENAI_API_KEY_B_AT_X_DOT_DEV", KEY_B).output().await.unwrap())
    };
    let first = run().await;
    assert_eq!((first["status"].as_str(), first["account"].as_str()), (Some("completed"), Some("a@x.dev")), "no windows known: the listed order: {first:#}");
    let listed = ctl(&th).args(["accounts", "list", "--json"]).output().unwrap();
    assert!(!stdout(&listed).contains(KEY_A), "no key in the account's JSON");
    let a = json(&listed).as_array().unwrap().iter().find(|x| x["account"] == "a@x.dev").unwrap().clone();
    let seen: Vec<(&str, f64, &str)> = a["windows"].as_array().unwrap().iter().map(|w| (w["window"].as_str().unwrap(), w["used_percent"].as_f64().unwrap(), w["status"].as_str().unwrap())).collect();
    assert_eq!(seen, [("five_hour", 85.0, "allowed_warning"), ("seven_day", 40.0, "allowed")], "{a:#}");
    assert_eq!(a["windows"][0]["resets_at"].as_str().map(|t| chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp()), Some(reset), "{a:#}");
    assert_eq!(a["windows"][0]["run_id"], first["id"], "{a:#}");
    let second = run().await;
    assert_eq!(second["account"], "b@x.dev", "the most headroom first: {second:#}");
    assert_eq!(fake.response_keys(), vec![KEY_A, KEY_B]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_gemini_key_revokes_the_account_and_a_new_key_in_the_keychain_brings_it_back() {
    use nightshift_testkit::fake_gemini::{FakeGemini, Reply as GeminiReply};
    if require_agent_cli("gemini").is_none() || !keychain_available() {
        return;
    }
    const OLD: &str = "AIzaSyTest-old-key-000000000000000001";
    const NEW: &str = "AIzaSyTest-new-key-000000000000000002";
    let fake = FakeGemini::start(None).await; // unknown keys: 400 API_KEY_INVALID
    fake.set(NEW, GeminiReply::Success { text: "Triaged.".into() });
    let (th, service) = home_with_accounts(&["gemini:g@x.dev"]);
    th.routine(
        "triage",
        &format!(
            "schedule: \"0 2 * * *\"\nagent: gemini\nmodel: gemini-2.5-flash\nprompt: Triage\naccount: g@x.dev\ncwd: {}\nenv:\n  GOOGLE_GEMINI_BASE_URL: {}\n",
            th.user_home().display(),
            fake.url()
        ),
    );
    assert!(set_token(&th, "g@x.dev", OLD).status.success());
    let run = || async { json(&ctl_bus(&th).args(["run", "triage", "--wait", "--json"]).output().unwrap()) };
    let rec = run().await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("failed"), Some("auth_failed")), "{rec:#}");
    assert_eq!(health_of(&th, "g@x.dev")["verdict"], "revoked");
    // The next run is held before anything reaches the API, with the fix for this agent.
    let seen = fake.requests().len();
    let rec = run().await;
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("blocked"), Some("auth_preflight")), "{rec:#}");
    let msg = rec["message"].as_str().unwrap();
    assert!(msg.contains("nightshiftctl accounts set-token g@x.dev (a Gemini API key") && msg.contains("GEMINI_CLI_HOME="), "{msg}");
    assert_eq!(fake.requests().len(), seen);
    // A new key (`set-key` is the same command): it runs, on API-key auth the CLI was told to use.
    let mut child = ctl_bus(&th).args(["accounts", "set-key", "g@x.dev"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(format!("{NEW}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("stored the Gemini API key for g@x.dev"), "{}", stdout(&out));
    let rec = run().await;
    assert_eq!(rec["status"], "completed", "{rec:#}");
    assert_eq!(fake.generate_keys().last().map(String::as_str), Some(NEW));
    let settings = std::fs::read_to_string(th.path().join("accounts/gemini/g-at-x.dev/.gemini/settings.json")).unwrap();
    assert!(settings.contains("gemini-api-key"), "{settings}");
    for key in [OLD, NEW] {
        assert_eq!(files_containing(th.path(), key), Vec::<String>::new(), "{key} leaked");
    }
    let acc = nightshift_core::accounts::Account { agent: nightshift_core::words::Agent::Gemini, email: "g@x.dev".into(), config_dir: "/x".into(), provider: None };
    let _ = nightshift_core::accounts::keychain::delete_token(&service, &acc);
}

/// `secrets set NAME` (stdin, never echoed) keeps a routine's secret in the real OS keychain; a
/// run of the routine gets it as $NAME, and it is in no file under the home and in no output;
/// `secrets list` names it, `secrets remove` removes it, and the next run is blocked saying how
/// to set it.
#[test]
fn a_routine_secret_lives_in_the_keychain_and_reaches_its_run_only() {
    if !keychain_available() {
        return;
    }
    let th = TestHome::new();
    let service = format!("nightshift-test-{}", th.path().file_name().unwrap().to_string_lossy());
    std::fs::write(th.path().join("nightshift.toml"), format!("keychain_service = \"{service}\"\n")).unwrap();
    th.routine("deploy", "schedule: \"0 9 * * *\"\ncommand: 'echo \"length=${#GITHUB_TOKEN} value=$GITHUB_TOKEN\"'\nsecrets: [GITHUB_TOKEN]\n");
    let value = "ghp_secretvalueforthetest0123456789abcd";
    let mut child = ctl_bus(&th).args(["secrets", "set", "GITHUB_TOKEN"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(format!("{value}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains(value));
    let listed = ctl_bus(&th).args(["secrets", "list"]).output().unwrap();
    assert!(stdout(&listed).lines().any(|l| l.starts_with("GITHUB_TOKEN") && l.contains("OS keychain")), "{}", stdout(&listed));
    let out = ctl_bus(&th).args(["run", "deploy", "--wait", "--json"]).output().unwrap();
    let rec = json(&out);
    assert_eq!(rec["status"], "completed", "{rec:#}");
    let log = std::fs::read_to_string(std::path::Path::new(rec["run_dir"].as_str().unwrap()).join("stdout.log")).unwrap();
    assert!(log.starts_with(&format!("length={} value=", value.len())), "{log}");
    assert_eq!(files_containing(th.path(), value), Vec::<String>::new(), "the secret rests nowhere under the home");
    assert!(!stdout(&out).contains(value) && !stderr(&out).contains(value));

    let out = ctl_bus(&th).args(["secrets", "remove", "GITHUB_TOKEN"]).output().unwrap();
    assert_eq!(stdout(&out), "removed GITHUB_TOKEN from the OS keychain\n");
    let rec = json(&ctl_bus(&th).args(["run", "deploy", "--wait", "--json"]).output().unwrap());
    assert_eq!((rec["status"].as_str(), rec["reason"].as_str()), (Some("blocked"), Some("missing_secret")), "{rec:#}");
    assert!(rec["message"].as_str().unwrap().contains("`nightshiftctl secrets set GITHUB_TOKEN`"), "{rec:#}");
}

/// The real Claude CLI reports a subscription's windows on an ordinary successful answer (the fake
/// API sends Anthropic's unified headers: five hours at 85 %, seven days at 40 %): they become the
/// account's, in `accounts list` and its `--json` (`windows`), with when each resets and the run
/// that saw them — and no token anywhere near them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_cli_reports_the_accounts_windows_on_a_success() {
    if require_claude_cli().is_none() || !keychain_available() {
        return;
    }
    let five_hours = chrono::Utc::now().timestamp() + 2 * 3600;
    let fake = FakeAnthropic::start(None).await;
    fake.set(TOK_A, Reply::Windows { five_hour: 0.85, five_hour_reset: five_hours, seven_day: 0.4, seven_day_reset: five_hours + 3 * 86_400, text: "Reviewed.".into() });
    let (th, _) = home_with_accounts(&["a@x.dev"]);
    assert!(set_token(&th, "a@x.dev", TOK_A).status.success());
    th.routine(
        "review",
        &format!("schedule: \"0 2 * * *\"\nagent: claude\nprompt: Review\naccount: a@x.dev\ncwd: {}\nenv:\n  ANTHROPIC_BASE_URL: {}\n  CLAUDE_CODE_MAX_RETRIES: \"0\"\n", th.user_home().display(), fake.url()),
    );
    let out = ctl_bus(&th).args(["run", "review", "--wait", "--json"]).output().unwrap();
    let rec = json(&out);
    assert_eq!(rec["status"], "completed", "{rec:#}");
    let listed = ctl_bus(&th).args(["accounts", "list", "--json"]).output().unwrap();
    let text = stdout(&listed);
    assert!(!text.contains(TOK_A), "no token in the account's JSON");
    let windows = &json(&listed)[0]["windows"];
    let seen: Vec<(String, f64, String)> = windows.as_array().unwrap().iter().map(|w| (w["window"].as_str().unwrap().to_string(), w["used_percent"].as_f64().unwrap(), w["status"].as_str().unwrap().to_string())).collect();
    assert_eq!(seen, [("five_hour".to_string(), 85.0, "allowed_warning".to_string()), ("seven_day".to_string(), 40.0, "allowed".to_string())], "{windows:#}");
    assert_eq!(windows[0]["resets_at"].as_str().map(|t| chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp()), Some(five_hours), "{windows:#}");
    assert_eq!((windows[0]["run_id"].as_str(), windows[0]["seen_at"].is_string()), (rec["id"].as_str(), true), "{windows:#}");
    let table = stdout(&ctl_bus(&th).args(["accounts", "list"]).output().unwrap());
    assert!(table.contains("5h 85 % (resets ") && table.contains(" · 7d 40 % (resets "), "{table}");
}

/// `accounts set` writes `reserve` and `usage_probe` into the account's own table, keeping the
/// user's comments; bad values and a probe on an account without the endpoint are refused with
/// words that say why; a flag left out keeps its value.
#[test]
fn accounts_set_writes_the_reserve_and_the_usage_probe() {
    let th = TestHome::new();
    let toml = "# my accounts\n[[accounts]]\nemail = \"a@x.dev\" # work\n[[accounts]]\nagent = \"codex\"\nemail = \"c@x.dev\"\n";
    std::fs::write(th.path().join("nightshift.toml"), toml).unwrap();
    let out = ctl(&th).args(["accounts", "set", "a@x.dev", "--reserve", "20", "--usage-probe", "on"]).output().unwrap();
    assert_eq!(stdout(&out), "a@x.dev: reserve 20 %, usage probe on\n", "{}", stderr(&out));
    let written = std::fs::read_to_string(th.path().join("nightshift.toml")).unwrap();
    assert!(written.starts_with("# my accounts\n[[accounts]]\nemail = \"a@x.dev\" # work\nreserve = 20\nusage_probe = true\n"), "{written}");
    let listed = json(&ctl(&th).args(["accounts", "list", "--json"]).output().unwrap());
    assert_eq!((listed[0]["account"].as_str(), listed[0]["reserve"].as_u64(), listed[0]["usage_probe"].as_bool()), (Some("a@x.dev"), Some(20), Some(true)), "{listed:#}");
    assert_eq!((listed[1]["reserve"].as_u64(), listed[1]["usage_probe"].as_bool()), (None, Some(false)), "{listed:#}");
    let table = stdout(&ctl(&th).args(["accounts", "list"]).output().unwrap());
    assert!(table.lines().next().unwrap().contains(" KEEPS ") && table.lines().nth(1).unwrap().contains(" reserve 20 % · probe "), "{table}");
    let out = ctl(&th).args(["accounts", "set", "a@x.dev", "--reserve", "none"]).output().unwrap();
    assert_eq!(stdout(&out), "a@x.dev: no reserve, usage probe on\n", "the probe kept its value");
    for (args, words) in [
        (vec!["--reserve", "120"], "--reserve takes a percent from 0 to 100, or none; found \"120\""),
        (vec!["--usage-probe", "yes"], "--usage-probe takes on or off; found \"yes\""),
    ] {
        let out = ctl(&th).args(["accounts", "set", "a@x.dev"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains(words), "{}", stderr(&out));
    }
    let out = ctl(&th).args(["accounts", "set", "c@x.dev", "--usage-probe", "on"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`usage_probe` of c@x.dev reads Claude's OAuth usage endpoint; codex has none"), "{}", stderr(&out));
    assert!(!std::fs::read_to_string(th.path().join("nightshift.toml")).unwrap().contains("reserve"), "nothing else was written");
}

/// `accounts add opencode EMAIL --provider openai`: the provider is written with the account and
/// said as the variable its key reaches OpenCode in; on another agent, or malformed, it is refused
/// and nothing is written.
#[test]
fn an_opencode_account_is_added_with_the_provider_of_its_key() {
    let th = TestHome::new();
    let out = ctl(&th).args(["accounts", "add", "opencode", "o@x.dev", "--provider", "openai"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("its key reaches OpenCode as OPENAI_API_KEY"), "{}", stdout(&out));
    let written = std::fs::read_to_string(th.path().join("nightshift.toml")).unwrap();
    assert!(written.contains("[[accounts]]\nagent = \"opencode\"\nemail = \"o@x.dev\"\nprovider = \"openai\"\n"), "{written}");
    let listed = json(&ctl(&th).args(["accounts", "list", "--json"]).output().unwrap());
    assert_eq!((listed[0]["account"].as_str(), listed[0]["agent"].as_str()), (Some("o@x.dev"), Some("opencode")), "{listed:#}");
    for (args, words) in [
        (vec!["codex", "c@x.dev", "--provider", "openai"], "`provider` of c@x.dev names the provider of an OpenCode or Copilot account's key; codex has one provider"),
        (vec!["opencode", "p@x.dev", "--provider", "Open AI"], "must be OpenCode's provider id"),
        (vec!["copilot", "g@x.dev", "--provider", "openrouter"], "`provider` of g@x.dev must be github (a GitHub token, the default) or a bring-your-own-key type: openai, azure or anthropic (found \"openrouter\")"),
    ] {
        let out = ctl(&th).args(["accounts", "add"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains(words), "{}", stderr(&out));
    }
    assert_eq!(std::fs::read_to_string(th.path().join("nightshift.toml")).unwrap(), written, "nothing else was written");
    // Copilot: a GitHub token by default, or bring your own key.
    let out = ctl(&th).args(["accounts", "add", "copilot", "g@x.dev"]).output().unwrap();
    assert!(stdout(&out).contains("its GitHub token reaches Copilot as COPILOT_GITHUB_TOKEN") && stdout(&out).contains("with a GitHub token (from a fine-grained token"), "{}", stdout(&out));
    let out = ctl(&th).args(["accounts", "add", "copilot", "b@x.dev", "--provider", "azure"]).output().unwrap();
    assert!(stdout(&out).contains("its key reaches Copilot as COPILOT_PROVIDER_API_KEY with COPILOT_PROVIDER_TYPE=azure"), "{}", stdout(&out));
    assert!(stdout(&out).contains("next: `nightshiftctl accounts set-token b@x.dev` with a provider API key (from your provider's console"), "{}", stdout(&out));
    let written = std::fs::read_to_string(th.path().join("nightshift.toml")).unwrap();
    assert!(written.ends_with("[[accounts]]\nagent = \"copilot\"\nemail = \"g@x.dev\"\n\n[[accounts]]\nagent = \"copilot\"\nemail = \"b@x.dev\"\nprovider = \"azure\"\n"), "{written}");
}
