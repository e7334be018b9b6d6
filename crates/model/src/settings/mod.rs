//! `nightshift.toml`: optional settings. Every key has a default, so a missing file is fine;
//! a malformed one is an error that names file:line:col.

mod homes;
mod hosts;
mod mcp;
mod serve;
pub use mcp::{looseness, McpPower, McpSettings};
pub use serve::{public_host, ServeSettings};
pub use homes::{home_name_problem, read_pin, show_pin, write_pin, HomeSettings, HomeUrl, DEFAULT_SERVE_PORT};
pub use hosts::{ActionsHost, AgentPath, HostSettings, RunsOn};

use crate::error::{Error, ErrorCode, Result};
use crate::words::Agent;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Runs at once across all routines (the scheduler issue uses it).
    pub max_parallel: usize,
    /// This machine's name for `devices:` filters; default: the hostname.
    pub device_name: Option<String>,
    /// Also read routines from agents-cli's `~/.agents/routines/`.
    pub import_agents_cli: bool,
    /// Seconds between SIGTERM and SIGKILL when a run times out or is cancelled.
    pub kill_grace_secs: u64,
    /// Pause a routine after this many failed runs in a row (0 = never).
    pub auto_pause_after: usize,
    /// Per-agent overrides, e.g. `[agents.claude] path = "/opt/claude/bin/claude"`.
    pub agents: BTreeMap<Agent, AgentSettings>,
    /// The accounts runs may use (`[[accounts]]`; `nightshiftctl accounts add` writes them).
    pub accounts: Vec<AccountSettings>,
    /// The OS keychain service name setup tokens are stored under.
    pub keychain_service: String,
    /// How long an account counts as rate limited when the agent did not say when it resets.
    pub rate_limit_cooldown_mins: u64,
    /// Where finished runs are posted (`[[webhooks]]`).
    pub webhooks: Vec<WebhookSettings>,
    /// Days a settled worktree run's directory is kept (its branch stays); 0 = removed at the
    /// next cleanup.
    pub keep_worktrees_days: u64,
    /// When a worktree is removed, also delete its branch if it is merged into the routine's
    /// `base` (or the repository's `HEAD`).
    pub delete_merged_branches: bool,
    /// Days a finished run's files (logs, report) are kept; 0 = forever. Its record stays.
    pub keep_runs_days: u64,
    /// At most this many runs per routine keep their files (the newest); 0 = no limit.
    pub keep_runs_per_routine: u64,
    /// Machines routines are placed on with `host:` (`[hosts.<name>]`): what differs there.
    pub hosts: BTreeMap<String, HostSettings>,
    /// Other machines' Nightshift this one shows and controls (`[[homes]]`; `nightshiftctl homes
    /// add` writes them).
    pub homes: Vec<HomeSettings>,
    /// The `ssh_config` runs on hosts use (`ssh -F`); default: your own (`~/.ssh/config`).
    pub ssh_config: Option<PathBuf>,
    /// Keep one SSH connection per host open for a minute after use (OpenSSH's
    /// `ControlMaster`), so a run's start, output and settling share it.
    pub reuse_ssh_connections: bool,
    /// No run starts while the machine's available memory (`MemAvailable`) is below this many
    /// MiB: it waits queued, saying so. 0 = no check.
    pub min_free_memory_mb: u64,
    /// Hold a sleep inhibitor while a run of this machine goes (logind on Linux).
    pub keep_awake: bool,
    /// At most this many worktrees at once: worktree runs going (a further one waits queued) and,
    /// counted with them, the kept worktrees of settled runs (the oldest removed early — its
    /// branch stays — to make room for a run that starts).
    pub max_worktrees: u64,
    /// `[defaults]`: what a routine that does not set a key gets.
    pub defaults: RoutineDefaults,
    /// Project folders whose own routines (`<folder>/.agents/routines/*.yml`, agents-cli's
    /// project layer) are read — only folders listed here (`nightshiftctl routines add-project`),
    /// never a clone by itself.
    pub projects: Vec<PathBuf>,
    /// `[budget]`: caps (USD) on what all runs together spend in a day or month, and on each run.
    pub budget: crate::budget::Budget,
    /// Where `usage_probe` reads Claude's usage (its OAuth usage endpoint; another URL for a
    /// proxy or a test).
    pub usage_probe_url: String,
    /// `[hooks]`: where the app and the daemon take GitHub's and Linear's deliveries.
    pub hooks: HooksSettings,
    /// `[github]`: polling GitHub for the events `trigger:`s name, on a machine nothing reaches.
    pub github: GithubSettings,
    /// `[serve]`: the app and the daemon serve the window and other homes' viewers.
    pub serve: ServeSettings,
    /// `[mcp]`: what agents may do through Nightshift's MCP server.
    pub mcp: McpSettings,
    /// `[approvals]`: where else a run's ask (`on_denial: ask`) is sent.
    pub approvals: ApprovalsSettings,
}

/// `[approvals]` in nightshift.toml.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalsSettings {
    /// `ntfy = "https://ntfy.sh/<topic>"`: each ask is also posted to this ntfy topic (a public or
    /// self-hosted server), with Approve and Deny buttons that call back this home's `serve`
    /// (`[serve] public_url`, else its `listen` address) through signed, single-use links.
    pub ntfy: Option<String>,
}

/// `[github]` in nightshift.toml.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GithubSettings {
    /// `poll = "2m"`: the app and `nightshiftctl daemon` ask GitHub's Events API this often for
    /// each repository a `github_event` trigger names (unset: no polling; deliveries only).
    /// GitHub's own `X-Poll-Interval` (60 s on github.com) is the least wait between two asks.
    pub poll: Option<String>,
    /// The REST API's address: GitHub Enterprise Server's is `https://HOST/api/v3`.
    pub api_url: String,
    /// How often a run on a host on GitHub Actions is looked at while it goes (default 5 s; an
    /// unchanged answer is a 304, which costs no rate limit).
    pub actions_poll: Option<String>,
}

impl Default for GithubSettings {
    fn default() -> Self {
        GithubSettings { poll: None, api_url: "https://api.github.com".into(), actions_poll: None }
    }
}

impl GithubSettings {
    /// The poll interval, when polling is on (checked when the settings were loaded).
    pub fn poll(&self) -> Option<Duration> {
        self.poll.as_deref().and_then(|t| humantime::parse_duration(t.trim()).ok())
    }

    /// How often a run on GitHub Actions is looked at (`actions_poll`, default 5 s).
    pub fn actions_poll(&self) -> Duration {
        self.actions_poll.as_deref().and_then(|t| humantime::parse_duration(t.trim()).ok()).unwrap_or(Duration::from_secs(5))
    }
}

/// `[hooks]` in nightshift.toml.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HooksSettings {
    /// `listen = "127.0.0.1:8787"`: the app and `nightshiftctl daemon` take deliveries at
    /// `POST /hooks/github` and `/hooks/linear` there (unset: they do not listen; `nightshiftctl
    /// serve` takes them beside its pages either way). Loopback is the default to choose: a
    /// tunnel in front of it reaches it from GitHub.
    pub listen: Option<std::net::SocketAddr>,
}

/// `[defaults]` in nightshift.toml.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RoutineDefaults {
    /// `timeout` of routines without one (a duration: 90s, 30m, 2h; Nightshift's own default is
    /// 10m).
    pub timeout: Option<String>,
    /// `sandbox = "on" | "off"` for routines that do not say (`sandbox:`); unset: on for agent
    /// routines where bubblewrap works, off for commands ([`crate::sandbox`]).
    pub sandbox: Option<crate::sandbox::Switch>,
}

impl RoutineDefaults {
    /// The default timeout, when set (checked when the settings were loaded).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout.as_deref().and_then(|t| humantime::parse_duration(t.trim()).ok())
    }
}

/// One `[[webhooks]]` entry. Its signing secret (optional) lives in the OS keychain, never here.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    pub name: String,
    pub url: String,
    #[serde(default)]
    pub format: WebhookFormat,
    /// Which runs besides those of routines that list it in `webhooks:`.
    #[serde(default)]
    pub on: WebhookRuns,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    /// The run as a JSON object (documented in docs/webhooks.md).
    #[default]
    Json,
    /// A Slack incoming-webhook message (`{"text": …}`).
    Slack,
    /// An ntfy topic: the excerpt as the body, a `Title` header.
    Ntfy,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WebhookRuns {
    /// Only routines whose file lists this webhook in `webhooks:`.
    #[default]
    Listed,
    /// Every run that ended (not `missed`/`skipped`).
    All,
    /// Runs that did not complete (failed, timed out, blocked).
    Failures,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccountSettings {
    /// `claude` (default), `codex` or `gemini`.
    #[serde(default = "default_agent")]
    pub agent: Agent,
    pub email: String,
    /// The agent's config dir for this account; default `accounts/<agent>/<slug>/` in the home.
    pub config_dir: Option<PathBuf>,
    /// `budget = { day = 20 }`: what runs on this account may spend in a day or month (USD).
    #[serde(default)]
    pub budget: Option<crate::budget::Budget>,
    /// `reserve = 20`: the last percent of its five-hour and seven-day windows kept for the user's
    /// own daytime work — scheduled and catch-up runs do not start on it past `100 − reserve`.
    #[serde(default)]
    pub reserve: Option<u8>,
    /// `usage_probe = true` (Claude accounts only; off by default): while the app or a daemon
    /// runs, read the account's windows from Claude's OAuth usage endpoint at most every 10
    /// minutes — a request the user did not otherwise make, so only when asked for.
    #[serde(default)]
    pub usage_probe: bool,
    /// `provider = "openai"` (OpenCode and Copilot accounts only): the provider the account's
    /// stored key is for. OpenCode: a run gets it as `<PROVIDER>_API_KEY` (anthropic when unset).
    /// Copilot: `github` (unset: a GitHub token) or a bring-your-own-key type (`openai`, `azure`,
    /// `anthropic`: the key as `COPILOT_PROVIDER_API_KEY`, the type as `COPILOT_PROVIDER_TYPE`).
    #[serde(default)]
    pub provider: Option<String>,
}

/// What is wrong with an account's `reserve` (a percent) and `usage_probe` (only Claude has the
/// endpoint it reads), if anything — in the same words for the file and for the edit the CLI and
/// the window make (`settings_edit::set_account_options`).
pub fn options_problem(agent: Agent, email: &str, reserve: Option<u8>, usage_probe: bool) -> Option<String> {
    if reserve.is_some_and(|r| r > 100) {
        Some(format!("`reserve` of {email} is a percent of its windows: 0 to 100"))
    } else if usage_probe && crate::agents::driver(agent).usage_endpoint().is_none() {
        Some(format!("`usage_probe` of {email} reads Claude's OAuth usage endpoint; {} has none (its windows come from its runs)", agent.as_str()))
    } else {
        None
    }
}

/// What is wrong with `provider = p` on account `email` of `agent`, if anything: only OpenCode and
/// Copilot accounts have one (the others have one provider each); the agent says
/// ([`crate::agents::AgentDriver::provider_problem`]).
pub fn provider_problem(agent: Agent, email: &str, p: &str) -> Option<String> {
    crate::agents::driver(agent).provider_problem(email, p)
}

/// An account that names no agent is Claude Code's (the file's first accounts were all Claude's).
fn default_agent() -> Agent {
    Agent::Claude
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSettings {
    /// The executable to run instead of looking the agent's name up on PATH.
    pub path: Option<PathBuf>,
    /// At most this many runs of this agent at once (beside `max_parallel`).
    pub max_running: Option<usize>,
    /// At most this many runs of this agent wait for a lane; a scheduled or event run past it is
    /// `skipped · queue_full` (a person's run always waits).
    pub max_queued: Option<usize>,
    /// `model = "sonnet"`: the model of this agent's routines that name none (`model:`).
    pub model: Option<String>,
    /// `account = "me@home.dev"`: the account this agent's routines that name none (`account:`,
    /// `accounts:`) use — as if they said `account:` (one of this agent's `[[accounts]]`).
    pub account: Option<String>,
    /// `auto_compact_tokens = 120000` (agents-cli's): the context size at which the agent
    /// compacts its conversation, passed as the CLI's own setting where it has one.
    pub auto_compact_tokens: Option<u64>,
    /// `fast_mode_models = ["opus"]` (agents-cli's): the models run in the CLI's fast mode, where
    /// it has one.
    pub fast_mode_models: Vec<String>,
    /// `[agents.<agent>.versions]`: the executable of each version a routine may pin with
    /// `version:` (agents-cli's key), e.g. `"2.1.332" = "/opt/claude-2.1.332/bin/claude"`.
    pub versions: BTreeMap<String, PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_parallel: 2,
            device_name: None,
            import_agents_cli: false,
            kill_grace_secs: 5,
            auto_pause_after: 3,
            agents: BTreeMap::new(),
            accounts: Vec::new(),
            keychain_service: "nightshift".into(),
            rate_limit_cooldown_mins: 60,
            webhooks: Vec::new(),
            keep_worktrees_days: 7,
            delete_merged_branches: false,
            keep_runs_days: 90,
            keep_runs_per_routine: 1000,
            hosts: BTreeMap::new(),
            homes: Vec::new(),
            ssh_config: None,
            reuse_ssh_connections: true,
            min_free_memory_mb: 512,
            keep_awake: true,
            max_worktrees: 20,
            defaults: RoutineDefaults::default(),
            projects: Vec::new(),
            budget: crate::budget::Budget::default(),
            usage_probe_url: "https://api.anthropic.com/api/oauth/usage".into(),
            hooks: HooksSettings::default(),
            serve: ServeSettings::default(),
            mcp: McpSettings::default(),
            approvals: ApprovalsSettings::default(),
            github: GithubSettings::default(),
        }
    }
}

/// The documented range of each numeric setting (docs/files.md).
pub struct Ranges {
    pub max_parallel: (u64, u64),
    pub kill_grace_secs: (u64, u64),
    pub auto_pause_after: (u64, u64),
    pub rate_limit_cooldown_mins: (u64, u64),
    pub keep_worktrees_days: (u64, u64),
    pub keep_runs_days: (u64, u64),
    pub keep_runs_per_routine: (u64, u64),
    pub min_free_memory_mb: (u64, u64),
    pub max_running: (u64, u64),
    pub max_queued: (u64, u64),
    pub max_worktrees: (u64, u64),
}

/// The machine's hostname, as `gethostname(2)` gives it ("localhost" if it cannot).
fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) } == 0;
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    if ok { String::from_utf8_lossy(&buf[..end]).into_owned() } else { "localhost".into() }
}

pub const RANGES: Ranges =
    Ranges { max_parallel: (1, 64), kill_grace_secs: (0, 3600), auto_pause_after: (0, 10_000), rate_limit_cooldown_mins: (1, 10_080), keep_worktrees_days: (0, 3650), keep_runs_days: (0, 36_500), keep_runs_per_routine: (0, 1_000_000), min_free_memory_mb: (0, 1_048_576), max_running: (1, 64), max_queued: (0, 64), max_worktrees: (1, 1000) };

impl Settings {
    /// This machine's name for `devices:` filters: the `device_name` setting, else the hostname.
    pub fn device_name(&self) -> String {
        self.device_name.clone().unwrap_or_else(hostname)
    }

    /// Load from `path`; a missing file gives the defaults.
    pub fn load(path: &Path) -> Result<Settings> {
        if std::fs::symlink_metadata(path).is_err() {
            return Ok(Settings::default());
        }
        let text = crate::fsutil::read_text_file(path, crate::fsutil::MAX_TEXT_FILE)
            .map_err(|problem| Error::new(ErrorCode::SettingsInvalid, format!("{}:1:1: {problem}", path.display())))?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let located = |offset: usize, message: &str| {
            let (line, col) = crate::words::line_col(text, offset);
            Error::new(ErrorCode::SettingsInvalid, format!("{}:{line}:{col}: {}", path.display(), message.trim()))
        };
        let settings = toml::from_str::<Settings>(text).map_err(|e| located(e.span().map(|s| s.start).unwrap_or(0), e.message()))?;
        // Every number in range (no arithmetic on them can overflow), located where it is written.
        for (key, value, range) in [
            ("max_parallel", settings.max_parallel as u64, RANGES.max_parallel),
            ("kill_grace_secs", settings.kill_grace_secs, RANGES.kill_grace_secs),
            ("auto_pause_after", settings.auto_pause_after as u64, RANGES.auto_pause_after),
            ("rate_limit_cooldown_mins", settings.rate_limit_cooldown_mins, RANGES.rate_limit_cooldown_mins),
            ("keep_worktrees_days", settings.keep_worktrees_days, RANGES.keep_worktrees_days),
            ("keep_runs_days", settings.keep_runs_days, RANGES.keep_runs_days),
            ("keep_runs_per_routine", settings.keep_runs_per_routine, RANGES.keep_runs_per_routine),
            ("min_free_memory_mb", settings.min_free_memory_mb, RANGES.min_free_memory_mb),
            ("max_worktrees", settings.max_worktrees, RANGES.max_worktrees),
        ]
        .into_iter()
        .chain(settings.agents.values().filter_map(|a| a.max_running).map(|n| ("max_running", n as u64, RANGES.max_running)))
        .chain(settings.agents.values().filter_map(|a| a.max_queued).map(|n| ("max_queued", n as u64, RANGES.max_queued)))
        {
            if !(range.0..=range.1).contains(&value) {
                let at = value_offset(text, key).unwrap_or(0);
                return Err(located(at, &format!("`{key}` must be between {} and {} (found {value})", range.0, range.1)));
            }
        }
        // Each duration in its bounds (the least with its words, the most with its), located.
        for (key, value, least, most, examples) in [
            ("[defaults] timeout", &settings.defaults.timeout, (Duration::from_nanos(1), "must be longer than zero"), (crate::words::MAX_DURATION, "is longer than the longest allowed, 7 days"), "90s, 30m, 2h"),
            ("[github] poll", &settings.github.poll, (Duration::from_secs(1), "is shorter than a second"), (Duration::from_secs(86_400), "is longer than a day"), "60s, 2m, 15m"),
            ("[github] actions_poll", &settings.github.actions_poll, (Duration::from_millis(200), "is shorter than 200ms"), (Duration::from_secs(600), "is longer than 10 minutes"), "5s, 30s"),
        ] {
            let Some(value) = value else { continue };
            if let Some(bad) = duration_problem(value, least, most, examples) {
                return Err(located(text.find(value.as_str()).unwrap_or(0), &format!("`{key} = \"{value}\"` {bad}")));
            }
        }
        if !(settings.github.api_url.starts_with("https://") || settings.github.api_url.starts_with("http://")) {
            let at = text.find(settings.github.api_url.as_str()).unwrap_or(0);
            return Err(located(at, &format!("`[github] api_url = \"{}\"` is not an http(s) address (GitHub Enterprise Server: https://HOST/api/v3)", settings.github.api_url)));
        }
        // `command` is a word of runs, not an agent CLI with a login or an executable to find.
        if settings.accounts.iter().any(|a| a.agent == Agent::Command) || settings.agents.contains_key(&Agent::Command) {
            let at = text.find("command").unwrap_or(0);
            return Err(located(at, &format!("`command` is not an agent CLI here: accounts and `[agents.<name>]` name {}", Agent::cli_words())));
        }
        // A default account is one of that agent's own.
        for (agent, a) in &settings.agents {
            let Some(email) = a.account.as_deref() else { continue };
            if !settings.accounts.iter().any(|acc| acc.agent == *agent && acc.email == email) {
                let known: Vec<&str> = settings.accounts.iter().filter(|acc| acc.agent == *agent).map(|acc| acc.email.as_str()).collect();
                let listed = if known.is_empty() { format!("none is configured; add it with `nightshiftctl accounts add {email} --agent {agent}`") } else { format!("configured: {}", known.join(", ")) };
                return Err(located(text.find(&format!("\"{email}\"")).unwrap_or(0), &format!("`[agents.{agent}] account = \"{email}\"` is not one of its {agent} accounts ({listed})")));
            }
        }
        // One login per account (agents-cli refuses shared homes too): the same email twice for
        // one agent, or two accounts in one config dir, would sign one in as the other.
        let nth = |needle: &str, n: usize| text.match_indices(needle).nth(n).map(|(i, _)| i).unwrap_or(0);
        for (i, a) in settings.accounts.iter().enumerate() {
            let earlier = &settings.accounts[..i];
            if earlier.iter().any(|b| b.agent == a.agent && b.email == a.email) {
                let n = earlier.iter().filter(|b| b.email == a.email).count();
                return Err(located(nth(&format!("\"{}\"", a.email), n), &format!("the {} account {} is listed twice; keep one `[[accounts]]` entry for it", a.agent, a.email)));
            }
            if let Some(dir) = &a.config_dir {
                if let Some(b) = earlier.iter().find(|b| b.config_dir.as_ref() == Some(dir)) {
                    let shown = dir.display().to_string();
                    let n = earlier.iter().filter(|b| b.config_dir.as_ref() == Some(dir)).count();
                    return Err(located(
                        nth(&shown, n),
                        &format!("{} and {} share the config dir {shown}: each account needs its own (one login lives there), or leave `config_dir` out for Nightshift's own", b.email, a.email),
                    ));
                }
            }
        }
        // Budgets: amounts in dollars, at their table.
        for (budget, table) in std::iter::once((Some(&settings.budget), "[budget]".to_string())).chain(settings.accounts.iter().map(|a| (a.budget.as_ref(), format!("\"{}\"", a.email)))) {
            if let Some(problem) = budget.and_then(|b| b.problem()) {
                return Err(located(text.find(&table).unwrap_or(0), &problem));
            }
        }
        for a in settings.accounts.iter() {
            let problem = options_problem(a.agent, &a.email, a.reserve, a.usage_probe).or_else(|| a.provider.as_deref().and_then(|p| provider_problem(a.agent, &a.email, p)));
            if let Some(problem) = problem {
                return Err(located(text.find(&format!("\"{}\"", a.email)).unwrap_or(0), &problem));
            }
        }
        for (name, host) in &settings.hosts {
            if let Some((needle, problem)) = host.problem(name) {
                return Err(located(text.find(&needle).unwrap_or(0), &problem));
            }
        }
        if let Some((needle, problem)) = settings.serve.problem() {
            return Err(located(text.find(&needle).unwrap_or(0), &problem));
        }
        if let Some(url) = settings.approvals.ntfy.as_deref().filter(|u| !(u.starts_with("https://") || u.starts_with("http://"))) {
            return Err(located(text.find(url).unwrap_or(0), &format!("`[approvals] ntfy` must be an ntfy topic's address, https://ntfy.sh/<topic> or your own server's (found \"{url}\")")));
        }
        let mut homes = std::collections::HashSet::new();
        for h in &settings.homes {
            if let Some((needle, problem)) = h.problem() {
                return Err(located(text.find(&needle).unwrap_or(0), &problem));
            }
            if !homes.insert(h.name.as_str()) {
                return Err(located(nth(&format!("\"{}\"", h.name), 1), &format!("two homes are named \"{}\"; give each its own `name`", h.name)));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for w in &settings.webhooks {
            let at = text.find(&format!("\"{}\"", w.name)).unwrap_or(0);
            if !seen.insert(w.name.as_str()) {
                return Err(located(at, &format!("two webhooks are named \"{}\"; give each its own `name`", w.name)));
            }
            if !(w.url.starts_with("https://") || w.url.starts_with("http://")) {
                let at = text.find(&w.url).unwrap_or(at);
                return Err(located(at, &format!("webhook \"{}\": `url` must start with https:// or http:// (found \"{}\")", w.name, w.url)));
            }
        }
        Ok(settings)
    }

    /// The home named `name` (`[[homes]]`).
    pub fn home(&self, name: &str) -> Option<&HomeSettings> {
        self.homes.iter().find(|h| h.name == name)
    }

    /// The webhook named `name`.
    pub fn webhook(&self, name: &str) -> Option<&WebhookSettings> {
        self.webhooks.iter().find(|w| w.name == name)
    }

    pub fn kill_grace(&self) -> Duration {
        Duration::from_secs(self.kill_grace_secs)
    }

    /// The executable `[agents.<agent>.versions]` maps `version` to.
    pub fn agent_version_path(&self, agent: Agent, version: &str) -> Option<&Path> {
        self.agents.get(&agent).and_then(|a| a.versions.get(version)).map(PathBuf::as_path)
    }

    pub fn agent_path(&self, agent: Agent) -> Option<&Path> {
        self.agents.get(&agent).and_then(|a| a.path.as_deref())
    }

    /// `host` as a repository's GitHub Actions runners, when `[hosts.<host>]` says it is one.
    pub fn actions_host(&self, host: &str) -> Option<ActionsHost> {
        self.hosts.get(host)?.actions(host)
    }

    /// The agent's executable on `host` (`[hosts.<host>] agent_path`), if set there.
    pub fn host_agent_path(&self, host: &str, agent: Agent) -> Option<&str> {
        match self.hosts.get(host)?.agent_path.as_ref()? {
            AgentPath::Every(path) => Some(path),
            AgentPath::PerAgent(paths) => paths.get(agent.as_str()).map(String::as_str),
        }
    }
}

/// What is wrong with a duration written as `value`: not a duration (with `examples`), below
/// `least` or above `most` (each with its words).
fn duration_problem(value: &str, least: (Duration, &str), most: (Duration, &str), examples: &str) -> Option<String> {
    match humantime::parse_duration(value.trim()) {
        Ok(d) if d < least.0 => Some(least.1.to_string()),
        Ok(d) if d > most.0 => Some(most.1.to_string()),
        Ok(_) => None,
        Err(e) => Some(format!("is not a duration ({e}; examples: {examples})")),
    }
}

/// Where the value of top-level `key = …` starts in `text` (a number too large for a TOML
/// parser's integer still has a place to point at).
fn value_offset(text: &str, key: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_start();
        if body.starts_with('[') {
            return None; // past the top-level keys
        }
        if let Some(rest) = body.strip_prefix(key) {
            if let Some(after_eq) = rest.trim_start().strip_prefix('=') {
                let value = after_eq.trim_start();
                return Some(offset + line.len() - value.len());
            }
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_is_for_opencode_accounts_and_names_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.toml");
        std::fs::write(&path, "[[accounts]]\nagent = \"opencode\"\nemail = \"o@x.dev\"\nprovider = \"openrouter\"\n").unwrap();
        assert_eq!(Settings::load(&path).unwrap().accounts[0].provider.as_deref(), Some("openrouter"));
        assert_eq!(crate::agents::auth::provider_key_var("openrouter"), "OPENROUTER_API_KEY");
        assert_eq!(crate::agents::auth::provider_key_var("amazon-bedrock"), "AMAZON_BEDROCK_API_KEY");
        std::fs::write(&path, "[[accounts]]\nagent = \"codex\"\nemail = \"c@x.dev\"\nprovider = \"openai\"\n").unwrap();
        assert!(Settings::load(&path).unwrap_err().to_string().contains("`provider` of c@x.dev names the provider of an OpenCode or Copilot account's key; codex has one provider"));
        std::fs::write(&path, "[[accounts]]\nagent = \"opencode\"\nemail = \"o@x.dev\"\nprovider = \"Open AI\"\n").unwrap();
        assert!(Settings::load(&path).unwrap_err().to_string().contains("must be OpenCode's provider id"));
        std::fs::write(&path, "[[accounts]]\nagent = \"copilot\"\nemail = \"g@x.dev\"\nprovider = \"azure\"\n").unwrap();
        assert_eq!(Settings::load(&path).unwrap().accounts[0].provider.as_deref(), Some("azure"));
        std::fs::write(&path, "[[accounts]]\nagent = \"copilot\"\nemail = \"g@x.dev\"\nprovider = \"openrouter\"\n").unwrap();
        assert!(Settings::load(&path).unwrap_err().to_string().contains("must be github (a GitHub token, the default) or a bring-your-own-key type"));
    }

    #[test]
    fn an_agents_default_account_is_one_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.toml");
        std::fs::write(&path, "[[accounts]]\nemail = \"a@x.dev\"\n[agents.claude]\naccount = \"b@x.dev\"\n").unwrap();
        let e = Settings::load(&path).unwrap_err();
        assert_eq!(e.message, format!("{}:4:11: `[agents.claude] account = \"b@x.dev\"` is not one of its claude accounts (configured: a@x.dev)", path.display()));
        std::fs::write(&path, "[[accounts]]\nemail = \"a@x.dev\"\n[agents.claude]\naccount = \"a@x.dev\"\nmodel = \"sonnet\"\n").unwrap();
        let ok = Settings::load(&path).unwrap();
        assert_eq!((ok.agents[&Agent::Claude].account.as_deref(), ok.agents[&Agent::Claude].model.as_deref()), (Some("a@x.dev"), Some("sonnet")));
    }

    #[test]
    fn numbers_out_of_range_and_special_files_are_located_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.toml");
        std::fs::write(&path, "max_parallel = 2\nkill_grace_secs = 18446744073709551615\n").unwrap();
        let e = Settings::load(&path).unwrap_err();
        assert_eq!(e.message, format!("{}:2:19: `kill_grace_secs` must be between 0 and 3600 (found 18446744073709551615)", path.display()));
        std::fs::write(&path, "max_parallel = 0\n").unwrap();
        assert!(Settings::load(&path).unwrap_err().message.ends_with(":1:16: `max_parallel` must be between 1 and 64 (found 0)"));
        std::fs::write(&path, "rate_limit_cooldown_mins = 99999999\n").unwrap();
        assert!(Settings::load(&path).unwrap_err().message.contains("`rate_limit_cooldown_mins` must be between 1 and 10080"));
        // Each range's top is accepted, and a byte-order mark too.
        std::fs::write(&path, "\u{feff}max_parallel = 64\nkill_grace_secs = 3600\nauto_pause_after = 10000\nrate_limit_cooldown_mins = 10080\n").unwrap();
        let s = Settings::load(&path).unwrap();
        assert_eq!(s.kill_grace(), Duration::from_secs(3600));
        // Never opened when it is not a regular file: a FIFO would hang every command.
        std::fs::remove_file(&path).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        let e = Settings::load(&path).unwrap_err();
        assert!(e.message.ends_with(":1:1: this is a FIFO, not a file; only regular files are read"), "{}", e.message);
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert!(Settings::load(&path).unwrap_err().message.contains("this is a device"));
    }

    /// One login per account: the same email twice for one agent, or two accounts in one config
    /// dir, is an error at the second one's line (the same email for two agents is fine).
    #[test]
    fn accounts_that_would_share_a_login_are_refused_where_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.toml");
        std::fs::write(&path, "[[accounts]]\nemail = \"me@x.dev\"\n[[accounts]]\nagent = \"codex\"\nemail = \"me@x.dev\"\n").unwrap();
        assert_eq!(Settings::load(&path).unwrap().accounts.len(), 2);
        std::fs::write(&path, "[[accounts]]\nemail = \"me@x.dev\"\n[[accounts]]\nemail = \"me@x.dev\"\n").unwrap();
        let e = Settings::load(&path).unwrap_err();
        assert!(e.message.ends_with("nightshift.toml:4:9: the claude account me@x.dev is listed twice; keep one `[[accounts]]` entry for it"), "{}", e.message);
        let shared = "[[accounts]]\nemail = \"a@x.dev\"\nconfig_dir = \"/home/u/.claude\"\n[[accounts]]\nemail = \"b@x.dev\"\nconfig_dir = \"/home/u/.claude\"\n";
        std::fs::write(&path, shared).unwrap();
        let e = Settings::load(&path).unwrap_err();
        assert!(e.message.ends_with("nightshift.toml:6:15: a@x.dev and b@x.dev share the config dir /home/u/.claude: each account needs its own (one login lives there), or leave `config_dir` out for Nightshift's own"), "{}", e.message);
    }

    #[test]
    fn missing_file_gives_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let s = Settings::load(&dir.path().join("nightshift.toml")).unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(s.max_parallel, 2);
    }

    #[test]
    fn reads_agent_path_and_rejects_unknown_keys_with_location() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.toml");
        std::fs::write(&path, "max_parallel = 4\n[agents.claude]\npath = \"/opt/claude\"\n").unwrap();
        let s = Settings::load(&path).unwrap();
        assert_eq!(s.max_parallel, 4);
        assert_eq!(s.agent_path(Agent::Claude), Some(Path::new("/opt/claude")));

        std::fs::write(&path, "max_parallel = 4\nmax_paralel = 3\n").unwrap();
        let err = Settings::load(&path).unwrap_err();
        assert_eq!(err.code, ErrorCode::SettingsInvalid);
        assert!(err.message.contains("nightshift.toml:2:1:"), "{}", err.message);
        assert!(err.message.contains("max_paralel"), "{}", err.message);
    }

    #[test]
    fn agents_are_named_by_the_agent_words_and_command_is_not_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.toml");
        for (text, at, says) in [
            ("max_parallel = 4\n[agents.claud]\npath = \"/opt/claude\"\n", "nightshift.toml:2:9:", "claud"),
            ("[[accounts]]\nagent = \"command\"\nemail = \"a@b.c\"\n", "nightshift.toml:2:10:", "`command` is not an agent CLI"),
            ("[agents.command]\npath = \"/bin/sh\"\n", "nightshift.toml:1:9:", "`command` is not an agent CLI"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = Settings::load(&path).unwrap_err();
            assert_eq!(err.code, ErrorCode::SettingsInvalid);
            assert!(err.message.contains(at) && err.message.contains(says), "{text}: {}", err.message);
        }
        std::fs::write(&path, "[[accounts]]\nagent = \"gemini\"\nemail = \"g@x.dev\"\n").unwrap();
        assert_eq!(Settings::load(&path).unwrap().accounts[0].agent, Agent::Gemini);
    }

    #[test]
    fn reads_a_hosts_agent_path_for_every_agent_or_per_agent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.toml");
        let text = "ssh_config = \"/etc/nightshift/ssh_config\"\nreuse_ssh_connections = false\n\
                    [hosts.box]\nagent_path = \"/opt/bin/claude\"\n[hosts.server]\nagent_path = { codex = \"/usr/local/bin/codex\" }\n";
        std::fs::write(&path, text).unwrap();
        let s = Settings::load(&path).unwrap();
        assert_eq!(s.ssh_config.as_deref(), Some(Path::new("/etc/nightshift/ssh_config")));
        assert!(!s.reuse_ssh_connections);
        assert_eq!(s.host_agent_path("box", Agent::Gemini), Some("/opt/bin/claude"));
        assert_eq!(s.host_agent_path("server", Agent::Codex), Some("/usr/local/bin/codex"));
        assert_eq!(s.host_agent_path("server", Agent::Claude), None);
        assert_eq!(s.host_agent_path("elsewhere", Agent::Claude), None);
        std::fs::write(&path, "[hosts.box]\nagent = \"/opt\"\n").unwrap();
        let err = Settings::load(&path).unwrap_err();
        assert!(err.message.contains("nightshift.toml:2:1:") && err.message.contains("agent"), "{}", err.message);
    }
}
