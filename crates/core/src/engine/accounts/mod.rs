//! Accounts in the engine: choosing the account for a run (preflight and failover), updating
//! health from outcomes and new logins. Making up held work is the scheduler's job (`held`).

pub(crate) mod budgets;
pub mod secrets;
pub(crate) mod github_token;
pub(crate) mod sign_in;
pub(crate) mod usage_probe;
pub(crate) mod windows;
use super::state::Core;
use super::state::Engine;
use crate::accounts::{self, keychain, Account};
use crate::agents::Outcome;
use crate::error::{Error, ErrorCode, Result};
use crate::events::EngineEvent;
use crate::health::{self, AccountHealth, Credential};
use crate::words::Verdict;
use crate::routine::{AccountChoice, Routine};
use crate::run::Reason;
use crate::store::HealthRecord;
use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;

/// What a run will authenticate with.
pub(crate) enum AccountPlan {
    /// No account involved (a command, or no accounts configured for this agent).
    Default,
    Use(Account, Credential),
    /// Refused before spawning anything.
    Blocked { reason: Reason, message: String, account: Option<String>, resets_at: Option<DateTime<Utc>> },
    /// Scheduled work kept off the user's `reserve` of an account's window: it waits for the
    /// window's reset like a rate-limited run (`message` says which window and why).
    Held { message: String, account: String, resets_at: Option<DateTime<Utc>> },
}

impl Core {
    pub(crate) fn accounts(&self) -> Vec<Account> {
        accounts::accounts(&self.home, &self.settings())
    }

    pub(crate) fn credential(&self, account: &Account) -> Credential {
        let cred = health::credential(account, &self.settings().keychain_service, &self.env);
        if let Some(t) = &cred.token {
            self.redactor.register(t);
        }
        cred
    }

    pub(crate) fn assess(&self, account: &Account, cred: &Credential) -> AccountHealth {
        let record = self.store.account_health(&account.email).ok().flatten();
        let mut h = health::assess(account, cred, record.as_ref(), self.clock.now());
        h.windows = self.windows(&account.email);
        h
    }

    /// An account's usage windows as last reported, as they stand now (past a reset: reset).
    pub(crate) fn windows(&self, email: &str) -> Vec<crate::run::LimitWindow> {
        let now = self.clock.now();
        self.store.account_windows(email).unwrap_or_default().into_iter().map(|w| w.as_of(now)).collect()
    }
}

/// Where a try runs, for what its environment may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Where {
    Here,
    OnAHost,
}

/// What a try's environment gets from its account, here or on a host: its stored secret
/// (keychain or environment, when there is one) and, for a run on this machine, the account's own
/// config dir (a local path means nothing on a host). Runs get it through [`credentials_env`],
/// the one place credentials enter a run.
pub(crate) fn account_env(account: &Account, cred: &Credential, at: Where) -> Vec<(String, String)> {
    let dirs = if at == Where::Here { account.dir_env().into_iter().map(|(k, v)| (k.to_string(), v)).collect() } else { Vec::new() };
    let secret = cred.token.clone().map(|t| (account.secret_var(), t));
    let provider = account.provider_env().into_iter().map(|(k, v)| (k.to_string(), v));
    dirs.into_iter().chain(provider).chain(secret).collect()
}

/// The login a pinned `account:` names by the identity a config dir is signed in as, when no
/// account is configured under that email (agents-cli pins accounts that way): a configured
/// account's dir signed in as `email` (that account), or Claude's own `~/.claude` (an account of
/// its own, in that dir). Claude's login says its identity; other agents' logins do not.
fn signed_in_as(core: &Core, agent: crate::words::Agent, configured: &[Account], email: &str) -> Option<Account> {
    // Only an agent whose login says whom it is signed in as has a dir of its own to look in.
    let d = crate::agents::driver(agent);
    let own = d.own_config_dir()?;
    let signed_in = |dir: &std::path::Path| d.login(dir).email.is_some_and(|e| e.eq_ignore_ascii_case(email));
    if let Some(a) = configured.iter().find(|a| signed_in(&a.config_dir)) {
        return Some(a.clone());
    }
    let own = core.env.iter().find(|(k, _)| k == "HOME").map(|(_, v)| std::path::PathBuf::from(v).join(own))?;
    signed_in(&own).then(|| Account { agent, email: email.to_string(), config_dir: own, provider: None })
}

/// The agent's credential in the engine's own environment (`CLAUDE_CODE_OAUTH_TOKEN`,
/// `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`), for an agent no account of which is
/// configured — a headless machine set up the way the agent documents. Never beside an account:
/// an account's own secret is never shadowed. Its value is masked like every secret.
pub(crate) fn inherited_env(core: &Core, agent: crate::words::Agent) -> Vec<(&'static str, String)> {
    let Some(auth) = accounts::AgentAuth::of(agent) else { return Vec::new() };
    if core.accounts().iter().any(|a| a.agent == agent) {
        return Vec::new();
    }
    auth.inherited
        .iter()
        .filter_map(|var| core.env.iter().find(|(k, v)| k == var && !v.trim().is_empty()).map(|(_, v)| (*var, v.clone())))
        .inspect(|(_, v)| core.redactor.register(v))
        .collect()
}

/// What a try authenticates and works with: its account and credential (when it has one), and
/// the routine's secrets as they were read before it started (`secrets:`).
#[derive(Clone, Copy, Default)]
pub(crate) struct RunCreds<'a> {
    pub account: Option<(&'a Account, &'a Credential)>,
    pub secrets: &'a [(String, String)],
}

/// What a try's environment gets to authenticate and to work: its account's
/// ([`account_env`]) or, without one, the agent's credential inherited from the engine's
/// environment ([`inherited_env`]); and the routine's secrets, each as its own variable.
pub(crate) fn credentials_env(core: &Core, routine: &Routine, creds: RunCreds<'_>, at: Where) -> Vec<(String, String)> {
    let agent = match creds.account {
        Some((account, cred)) => account_env(account, cred, at),
        None => routine.agent().cli().map(|agent| inherited_env(core, agent)).unwrap_or_default().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
    };
    agent.into_iter().chain(creds.secrets.iter().cloned()).collect()
}

/// Choose the account for a run of `routine`: `prefer` first (the lane decision reserved it),
/// never one in `skip` (tried already) and, for pools, none `busy` with another run.
/// Choose the account for a try: the pinned one, or the healthy one of the routine's pool with the
/// most headroom in its tightest usage window (ties keep the listed order). A scheduled or
/// catch-up run (`may_use_reserve` false) leaves alone an account whose five-hour or seven-day
/// window is past its `reserve`; when that leaves none, it waits for the window's reset like a
/// rate-limited run.
pub(crate) fn plan(core: &Core, routine: &Routine, prefer: Option<&str>, skip: &[String], busy: &[String], may_use_reserve: bool) -> AccountPlan {
    let Some(agent) = routine.agent().cli() else { return AccountPlan::Default };
    let all: Vec<Account> = core.accounts().into_iter().filter(|a| a.agent == agent).collect();
    // A pinned account is used whatever its pool state: only a verdict that blocks stops it.
    if let AccountChoice::Pinned(email) = &routine.account {
        let found = all.iter().find(|a| a.email == *email).cloned().or_else(|| signed_in_as(core, agent, &all, email));
        let Some(account) = found.as_ref() else {
            return AccountPlan::Blocked {
                reason: Reason::NoAccount,
                message: format!("account {email} is not configured; add it with `nightshiftctl accounts add {} {email}`", agent.as_str()),
                account: Some(email.clone()),
                resets_at: None,
            };
        };
        let cred = core.credential(account);
        let h = core.assess(account, &cred);
        if h.verdict.blocks() {
            return blocked_by(account, &h);
        }
        if let Some(held) = past_reserve(core, &h, routine.timezone, may_use_reserve) {
            return held;
        }
        return AccountPlan::Use(account.clone(), cred);
    }
    let configured: Vec<String> = all.iter().map(|a| a.email.clone()).collect();
    let Some(order) = routine.candidate_accounts(&configured, prefer) else { return AccountPlan::Default };
    let mut refused: Vec<AccountHealth> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut taken: Vec<String> = Vec::new();
    let mut held: Vec<AccountPlan> = Vec::new();
    // The healthy ones, with their headroom: the most wins, the listed order breaks ties.
    let mut best: Option<(f64, Account, Credential)> = None;
    for email in order.into_iter().filter(|e| !skip.contains(e)) {
        if busy.contains(&email) {
            taken.push(email);
            continue;
        }
        let email = &email;
        let Some(account) = all.iter().find(|a| a.email == *email) else {
            unknown.push(email.clone());
            continue;
        };
        let cred = core.credential(account);
        let h = core.assess(account, &cred);
        if h.verdict.healthy() {
            if let Some(plan) = past_reserve(core, &h, routine.timezone, may_use_reserve) {
                held.push(plan);
                continue;
            }
            let room = headroom(&h.windows);
            if best.as_ref().is_none_or(|(most, _, _)| room > *most) {
                best = Some((room, account.clone(), cred));
            }
            continue;
        }
        refused.push(h);
    }
    if let Some((_, account, cred)) = best {
        return AccountPlan::Use(account, cred);
    }
    // Every healthy one is keeping its reserve: wait for the first of those windows to reset.
    if let Some(first) = held.into_iter().min_by_key(|p| match p {
        AccountPlan::Held { resets_at, .. } => *resets_at,
        _ => None,
    }) {
        return first;
    }
    // Nobody healthy. Rate limits pass; say when the first one resets.
    if let Some(first) = refused.iter().filter(|h| h.verdict == Verdict::RateLimited).min_by_key(|h| h.resets_at) {
        let list: Vec<String> = refused
            .iter()
            .map(|h| format!("{} {}", h.account, h.verdict.as_str()))
            .chain(taken.iter().map(|a| format!("{a} busy with another run")))
            .collect();
        return AccountPlan::Blocked {
            reason: Reason::RateLimited,
            message: format!("no account can run now ({}); the first limit resets at {}", list.join(", "), first.resets_at.map(|t| crate::words::fmt_time(&t)).unwrap_or_default()),
            account: Some(first.account.clone()),
            resets_at: first.resets_at,
        };
    }
    if let Some(h) = refused.first() {
        if let Some(account) = all.iter().find(|a| a.email == h.account) {
            return blocked_by(account, h);
        }
    }
    if !taken.is_empty() {
        return AccountPlan::Blocked {
            reason: Reason::RateLimited,
            message: format!("no free account: {} busy with other runs (one run per account at a time)", taken.join(", ")),
            account: None,
            resets_at: None,
        };
    }
    AccountPlan::Blocked {
        reason: Reason::NoAccount,
        message: format!("none of the accounts {} is configured; add one with `nightshiftctl accounts add {} EMAIL`", unknown.join(", "), agent.as_str()),
        account: None,
        resets_at: None,
    }
}

/// The headroom of an account: 100 minus the used share of its tightest window (100 when no
/// window was reported yet).
pub(crate) fn headroom(windows: &[crate::run::LimitWindow]) -> f64 {
    100.0 - windows.iter().map(|w| w.used_percent).fold(0.0, f64::max)
}

/// A scheduled run's hold on an account past its `reserve` in its five-hour or a seven-day window:
/// rate limited until that window resets, in words that say it is the user's reserve. Never for a
/// run that `may_use_reserve` (a person's own).
fn past_reserve(core: &Core, h: &AccountHealth, tz: chrono_tz::Tz, may_use_reserve: bool) -> Option<AccountPlan> {
    if may_use_reserve {
        return None;
    }
    let reserve = core.settings().accounts.iter().find(|a| a.email == h.account).and_then(|a| a.reserve)?;
    let line = 100.0 - f64::from(reserve);
    let w = h.windows.iter().filter(|w| w.window == "five_hour" || w.window.starts_with("seven_day")).filter(|w| w.used_percent > line).max_by(|a, b| a.used_percent.total_cmp(&b.used_percent))?;
    let resets = w.resets_at.map(|t| format!("; it resets {}", t.with_timezone(&tz).format("%a %-d %b %H:%M %Z"))).unwrap_or_default();
    Some(AccountPlan::Held {
        message: format!(
            "keeping {}'s reserve: its {} window is {:.0} % used, and `reserve = {reserve}` keeps the last {reserve} % for your own work{resets}",
            h.account,
            w.short_name(),
            w.used_percent
        ),
        account: h.account.clone(),
        resets_at: w.resets_at,
    })
}

fn blocked_by(account: &Account, h: &AccountHealth) -> AccountPlan {
    let what = match h.verdict {
        Verdict::Revoked => "was refused by the API (revoked or logged out)",
        Verdict::Unconfigured => "has no usable credential",
        _ => "cannot run",
    };
    AccountPlan::Blocked {
        reason: Reason::AuthPreflight,
        message: format!("account {} {what}: {} — {}", account.email, h.evidence, health::relogin_hint(account)),
        account: Some(account.email.clone()),
        resets_at: None,
    }
}

/// Record what a run's outcome says about its account. When the account works again after a
/// sign-in failure, the scheduler is woken to make up the work that failure held.
pub(crate) fn record_outcome(core: &Arc<Core>, account: &str, run_id: &str, outcome: &Outcome) {
    let now = core.clock.now();
    if !outcome.windows.is_empty() {
        let windows: Vec<_> = outcome.windows.iter().cloned().map(|w| crate::run::LimitWindow { run_id: Some(run_id.into()), ..w }).collect();
        match core.store.record_windows(account, &windows) {
            Ok(_) => core.emit(EngineEvent::AccountsChanged),
            Err(e) => tracing::error!(account, error = %e, "could not record the account's usage windows"),
        }
    }
    let message = outcome.message.clone().unwrap_or_default();
    let (verdict, evidence, resets_at) = match (outcome.status(), outcome.reason) {
        (crate::run::RunStatus::Completed, _) => (Verdict::Live, format!("run {run_id} authenticated"), None),
        (_, Some(Reason::AuthFailed)) => (Verdict::Revoked, format!("run {run_id} failed auth_failed: {message}"), None),
        (_, Some(Reason::RateLimited)) => (
            Verdict::RateLimited,
            format!("run {run_id} was rate limited: {message}"),
            Some(outcome.resets_at.unwrap_or(now + Duration::minutes(core.settings().rate_limit_cooldown_mins as i64))),
        ),
        _ => return,
    };
    let record = HealthRecord {
        account: account.into(),
        verdict,
        evidence,
        at: now,
        resets_at,
        run_id: Some(run_id.into()),
    };
    set_health(core, &record);
}

/// Record a verdict; tell the faces when it changed and the scheduler when the account works.
pub(crate) fn set_health(core: &Arc<Core>, record: &HealthRecord) {
    match core.store.set_account_health(record) {
        Ok(true) => core.emit(EngineEvent::AccountsChanged),
        Ok(false) => {}
        Err(e) => tracing::error!(account = %record.account, error = %e, "could not record account health"),
    }
    if matches!(record.verdict, Verdict::Live | Verdict::Ok) {
        core.wakes.kick(super::signal::Wake::Scheduler);
    }
}

/// A new agent login in an account's config dir (`claude /login`, `codex login`, Gemini's `/auth`
/// — what the tray's Re-login runs) after the account was refused: the account may work again.
/// Only a stat per revoked account; called by the scheduler on each pass and when a login file
/// changes.
pub(crate) fn notice_new_logins(core: &Arc<Core>) {
    for account in core.accounts() {
        let Some(h) = core.store.account_health(&account.email).ok().flatten() else { continue };
        if h.verdict != Verdict::Revoked {
            continue;
        }
        let file = account.config_dir.join(account.auth().login_file);
        let Ok(changed) = std::fs::metadata(&file).and_then(|m| m.modified()) else { continue };
        let changed: DateTime<Utc> = changed.into();
        // The file changed; an agent whose login says more (Claude's: a token) must say it is there.
        let present = crate::agents::driver(account.agent).login(&account.config_dir).present;
        if changed > h.at && present {
            tracing::info!(account = %account.email, "a new agent login was found; the account may work again");
            set_health(core, &HealthRecord {
                account: account.email.clone(),
                verdict: Verdict::Ok,
                evidence: format!("a new login was written to {} at {}", file.display(), crate::words::fmt_time(&changed)),
                at: core.clock.now().max(changed),
                resets_at: None,
                run_id: None,
            });
        }
    }
}

impl Engine {
    /// Configured accounts.
    pub fn accounts(&self) -> Vec<Account> {
        self.core.accounts()
    }

    /// A configured account by its email; the error says how to add it.
    pub fn account(&self, email: &str) -> Result<Account> {
        self.core.accounts().into_iter().find(|a| a.email == email).ok_or_else(|| {
            Error::new(ErrorCode::Usage, format!("no account {email}; add it with `nightshiftctl accounts add claude|codex|gemini {email}`"))
        })
    }

    /// The agents whose runs get a credential from the engine's own environment (no account of
    /// theirs is configured), with the variable — never its value — that holds it.
    pub fn inherited_credentials(&self) -> Vec<(crate::words::Agent, &'static str)> {
        crate::words::Agent::CLIS
            .iter()
            .flat_map(|agent| inherited_env(&self.core, *agent).into_iter().map(move |(var, _)| (*agent, var)))
            .collect()
    }

    /// Health of every account (reads the keychain: call off latency-sensitive paths).
    pub fn accounts_health(&self) -> Vec<AccountHealth> {
        self.core
            .accounts()
            .iter()
            .map(|a| {
                let cred = self.core.credential(a);
                self.core.assess(a, &cred)
            })
            .collect()
    }

    pub fn account_health(&self, email: &str) -> Result<AccountHealth> {
        let a = self.account(email)?;
        let cred = self.core.credential(&a);
        Ok(self.core.assess(&a, &cred))
    }

    /// Verdict history of an account, newest first.
    pub fn account_history(&self, email: &str, limit: usize) -> Result<Vec<HealthRecord>> {
        self.core.store.account_health_history(email, limit)
    }

    /// When `email` hit a rate limit since `since`, newest first.
    pub fn rate_limits_since(&self, email: &str, since: chrono::DateTime<chrono::Utc>) -> Result<Vec<HealthRecord>> {
        self.core.store.rate_limits_since(email, since)
    }

    /// Store a setup token in the OS keychain. The account is healthy again as far as we know:
    /// routines held by it in the last 24 h run once (the scheduler makes them up).
    pub async fn set_token(&self, email: &str, token: &str) -> Result<()> {
        let a = self.account(email)?;
        let token = token.trim();
        if token.is_empty() {
            let (secret, how) = a.secret_words();
            return Err(Error::new(ErrorCode::Usage, format!("the {secret} is empty (paste it on stdin; get one from {how})")));
        }
        self.core.redactor.register(token);
        keychain::set_token(&self.core.settings().keychain_service, &a, token).map_err(|e| Error::new(ErrorCode::Usage, e.0))?;
        let now = self.core.clock.now();
        set_health(&self.core, &HealthRecord {
            account: a.email.clone(),
            verdict: Verdict::Ok,
            evidence: "setup token stored in the OS keychain".into(),
            at: now,
            resets_at: None,
            run_id: None,
        });
        self.core.emit(EngineEvent::AccountsChanged);
        // A scheduler in another process (the app, a daemon) makes up held work at once.
        super::signal::wake(&self.core);
        Ok(())
    }

    /// Add an account to nightshift.toml (the engine must be reopened to use it).
    pub fn add_account(&self, agent: crate::words::Agent, email: &str, provider: Option<&str>) -> Result<()> {
        crate::settings_edit::add_account(&self.core.home, agent, email, provider)
    }

    /// Set an account's `reserve` and `usage_probe` in nightshift.toml (running engines pick the
    /// change up within a second).
    pub fn set_account_options(&self, email: &str, reserve: Option<u8>, usage_probe: bool) -> Result<()> {
        crate::settings_edit::set_account_options(&self.core.home, email, reserve, usage_probe)?;
        self.core.emit(EngineEvent::AccountsChanged);
        Ok(())
    }

    /// Remove an account from nightshift.toml and its setup token from the keychain.
    pub fn remove_account(&self, email: &str) -> Result<bool> {
        let a = self.account(email)?;
        let removed = keychain::delete_token(&self.core.settings().keychain_service, &a).unwrap_or(false);
        crate::settings_edit::remove_account(&self.core.home, email)?;
        self.core.emit(EngineEvent::AccountsChanged);
        Ok(removed)
    }

    /// The engine's secret masker (for faces that print anything agent- or account-derived).
    pub fn redact(&self, text: &str) -> String {
        self.core.redactor.redact(text)
    }
}
