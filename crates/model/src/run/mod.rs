//! The run record: what `--json` prints and the UI receives (a contract: docs/verdicts.md and docs/cli.md document it; fields are only ever added).

mod changes;
mod usage;

pub use changes::{Changes, Commit, CommitBy, FileChange, PullRequest, Push, PushState, RunWorkspace, WorkspaceKind};
pub use usage::Usage;

use crate::words::{ser_opt_time, string_enum, Agent};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

string_enum!(
    /// Why a run exists.
    Trigger as "trigger" { Schedule = "schedule", Manual = "manual", Catchup = "catchup", Cli = "cli", Event = "event", Mcp = "mcp", Approval = "approval" }
);

impl Trigger {
    /// The words a person reads ("catch-up"), in notifications and the window.
    pub fn label(self) -> &'static str {
        match self {
            Trigger::Catchup => "catch-up",
            other => other.as_str(),
        }
    }
}

string_enum!(
    RunStatus as "status" {
        Queued = "queued",
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        TimedOut = "timed_out",
        Cancelled = "cancelled",
        Blocked = "blocked",
        Missed = "missed",
        Skipped = "skipped",
    }
);

string_enum!(
    /// The cause behind a status other than `completed`.
    Reason as "reason" {
        AuthFailed = "auth_failed",
        RateLimited = "rate_limited",
        AgentError = "agent_error",
        ExitNonzero = "exit_nonzero",
        SpawnFailed = "spawn_failed",
        Interrupted = "interrupted",
        AuthPreflight = "auth_preflight",
        NoAccount = "no_account",
        Superseded = "superseded",
        ActiveRun = "active_run",
        /// Its agent already had `[agents.<agent>] max_queued` runs waiting for a lane.
        QueueFull = "queue_full",
        /// None of the routine's hosts could be reached over SSH (or contact was lost for good).
        HostUnreachable = "host_unreachable",
        /// On a host on GitHub Actions, no runner picked up the job within `start_timeout`.
        NoRunner = "no_runner",
        /// The agent's API was overloaded (529), failing (5xx) or unreachable after the agent's
        /// own retries — nothing about the work; a scheduled run tries again after a backoff.
        ApiUnavailable = "api_unavailable",
        /// The process was killed by a signal Nightshift did not send (the OOM killer, a user's
        /// `kill`) — nothing about the work either.
        Killed = "killed",
        /// Its output stopped for `stall_timeout` while the agent was still running (waiting on
        /// something nobody will answer at 3 a.m.): ended as `timed_out`.
        Stalled = "stalled",
        /// A secret the routine names (`secrets:`) is not set: nothing was started.
        MissingSecret = "missing_secret",
        /// Its folder (`cwd:`) or one of its `allow.dirs` does not exist at start: nothing was
        /// started, and it is not tried again (a folder does not come back by waiting a minute).
        NoCwd = "no_cwd",
        /// `hostStrategy: fleet` with no `[hosts.<name>]` in nightshift.toml: nowhere to run it.
        NoHosts = "no_hosts",
        /// It asks for a sandbox (`sandbox: on`, `[defaults] sandbox`) and none can be built on
        /// this machine (no bubblewrap, no user namespaces): nothing was started.
        NoSandbox = "no_sandbox",
        /// Tool calls of the agent were refused and the routine says `on_denial: fail`.
        PermissionDenied = "permission_denied",
        /// `on_denial: ask` and the agent was refused a call it could not hold while you were
        /// asked (its CLI has no hook for it, or the engine stopped while it waited): Approve
        /// reruns it with that call allowed for the rerun only.
        NeedsApproval = "needs_approval",
        /// A budget is spent: blocked before starting (a day's or month's), or stopped at the
        /// run's own cap (`budget.run`).
        Budget = "budget",
    }
);

impl RunStatus {
    /// A status that will not change any more.
    pub fn is_final(self) -> bool {
        !matches!(self, RunStatus::Queued | RunStatus::Running)
    }

    /// A run that did not do its work and needs a look: it failed, timed out, or was blocked
    /// before it started. The one meaning of "failure" — `notify: failures`, a webhook's
    /// `on = "failures"`, the tray's failure icon and the faces' red all use it. (Cancelled is
    /// someone's choice; missed and skipped slots never ran; see their own words.)
    pub fn is_failure(self) -> bool {
        matches!(self, RunStatus::Failed | RunStatus::TimedOut | RunStatus::Blocked)
    }

    /// A slot that did nothing: missed or skipped, and not made up by a later slot's run
    /// (`superseded`) — what `notify_missed` tells of, and what keeps a routine "quiet".
    pub fn is_quiet_slot(self, reason: Option<Reason>) -> bool {
        matches!(self, RunStatus::Missed | RunStatus::Skipped) && reason != Some(Reason::Superseded)
    }

    /// The words a person reads ("timed out").
    pub fn label(self) -> String {
        self.as_str().replace('_', " ")
    }
}

impl Reason {
    /// The words a person reads ("auth failed").
    pub fn label(self) -> String {
        self.as_str().replace('_', " ")
    }
}

string_enum!(
    /// An outbox entry's state — a run's finish notification, a webhook, a push: waiting, or how
    /// it ended. A run record's `notified` is its notification's.
    Delivery as "delivery" {
        Pending = "pending",
        Delivered = "delivered",
        /// The policy said no notification (e.g. `notify: failures` and the run completed).
        NotNeeded = "not_needed",
        /// Folded into one summary notification (it was older than a day when first seen).
        Summarized = "summarized",
        /// Every try failed.
        NotDelivered = "not_delivered",
    }
);

/// What an outbox entry delivers: a run's finish notification, a worktree run's branch push, one
/// webhook's post, one of the routine's heartbeat pings, or — its push failed after every try —
/// that news over the notification or a webhook. Stored and sent as `notify`, `push`,
/// `webhook:<name>`, `ping:start`, `ping:end`, `push_failed:notify`, `push_failed:webhook:<name>`,
/// `pull_request:webhook:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    Notify,
    Push,
    /// The pull request that follows a pushed branch (`push.pr`).
    PullRequest,
    Webhook(String),
    Ping(PingEvent),
    /// The run's branch could not be pushed: told over the notification or one webhook.
    PushFailed(Box<Channel>),
    /// The run's pull request was opened, updated or answered in (`push.pr`): told over one
    /// webhook, with its address — the run's finish post went out before it existed.
    PullRequestNews(Box<Channel>),
}

string_enum!(
    /// Which heartbeat ping (`ping:`): the run started, or it ended (how is decided when it is sent).
    PingEvent as "ping" { Start = "start", End = "end" }
);

impl Channel {
    const WEBHOOK: &'static str = "webhook:";
    const PING: &'static str = "ping:";
    const PUSH_FAILED: &'static str = "push_failed:";
    const PULL_REQUEST_NEWS: &'static str = "pull_request:";

    /// The channel stored as `word`; `None` for a word Nightshift does not write.
    pub fn parse(word: &str) -> Option<Channel> {
        if let Some(inner) = word.strip_prefix(Channel::PUSH_FAILED) {
            return Channel::parse(inner).filter(|c| matches!(c, Channel::Notify | Channel::Webhook(_))).map(|c| Channel::PushFailed(Box::new(c)));
        }
        if let Some(inner) = word.strip_prefix(Channel::PULL_REQUEST_NEWS) {
            return Channel::parse(inner).filter(|c| matches!(c, Channel::Webhook(_))).map(|c| Channel::PullRequestNews(Box::new(c)));
        }
        match word {
            "notify" => Some(Channel::Notify),
            "push" => Some(Channel::Push),
            "pull_request" => Some(Channel::PullRequest),
            _ => match word.strip_prefix(Channel::PING) {
                Some(event) => PingEvent::parse(event).map(Channel::Ping),
                None => word.strip_prefix(Channel::WEBHOOK).filter(|n| !n.is_empty()).map(|n| Channel::Webhook(n.to_string())),
            },
        }
    }

    /// The webhook's name, for a webhook's channel (its finish post, or its push-failed post).
    pub fn webhook(&self) -> Option<&str> {
        match self {
            Channel::Webhook(name) => Some(name),
            Channel::PushFailed(inner) | Channel::PullRequestNews(inner) => inner.webhook(),
            _ => None,
        }
    }

    /// The news of a failed push over this channel.
    pub fn push_failed(self) -> Channel {
        Channel::PushFailed(Box::new(self))
    }

    /// The news of the run's pull request over this channel.
    pub fn pull_request_news(self) -> Channel {
        Channel::PullRequestNews(Box::new(self))
    }
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Channel::Notify => f.write_str("notify"),
            Channel::Push => f.write_str("push"),
            Channel::PullRequest => f.write_str("pull_request"),
            Channel::Webhook(name) => write!(f, "{}{name}", Channel::WEBHOOK),
            Channel::Ping(event) => write!(f, "{}{}", Channel::PING, event.as_str()),
            Channel::PushFailed(inner) => write!(f, "{}{inner}", Channel::PUSH_FAILED),
            Channel::PullRequestNews(inner) => write!(f, "{}{inner}", Channel::PULL_REQUEST_NEWS),
        }
    }
}

impl Serialize for Channel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Channel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let word = String::deserialize(d)?;
        Channel::parse(&word).ok_or_else(|| serde::de::Error::custom(format!("unknown outbox channel \"{word}\"")))
    }
}

/// Stored as its word.
impl rusqlite::types::ToSql for Channel {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.to_string().into())
    }
}

/// Read back from its word; any other is a loud error naming it.
impl rusqlite::types::FromSql for Channel {
    fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let s = v.as_str()?;
        Channel::parse(s).ok_or_else(|| rusqlite::types::FromSqlError::Other(format!("unknown outbox channel \"{s}\" in the run history (written by a newer Nightshift, or a damaged row)").into()))
    }
}

/// One try of a run: failover to another account, a retry after a transient failure and a wait
/// for a rate limit's reset each make another (the last one is the record's own status).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Attempt {
    pub account: Option<String>,
    pub status: RunStatus,
    pub reason: Option<Reason>,
    pub message: Option<String>,
    #[serde(serialize_with = "ser_opt_time")]
    pub resets_at: Option<DateTime<Utc>>,
    /// When this try started and ended (`null` in records written before retries existed).
    #[serde(default, serialize_with = "ser_opt_time")]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(default, serialize_with = "ser_opt_time")]
    pub finished_at: Option<DateTime<Utc>>,
    /// When the next try was due: after a retry's backoff, or at the limit's reset (plus a
    /// margin). `null` when the next try followed at once (failover) or there was none.
    #[serde(default, serialize_with = "ser_opt_time")]
    pub next_at: Option<DateTime<Utc>>,
    /// The agent's own session of this try, when its stream said it (a retry may resume it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// How many things it changed (or may have) before it ended: shell commands, edits, MCP
    /// calls — as far as its agent's stream says (Claude Code's); a retry never repeats them
    /// blindly.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub work: u32,
    /// The session of an earlier try that this one continued ("resumed session …").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One of an account's usage windows as its agent reported it in a run's stream (Claude Code's
/// `rate_limit_event` `unifiedWindows`): how much of it is used and when it resets. Subscription
/// limits count in these windows; the scheduler keeps an account's reserve by them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct LimitWindow {
    /// `five_hour`, `seven_day`, or a model's own weekly window (`seven_day_opus`).
    pub window: String,
    /// 0–100.
    pub used_percent: f64,
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub resets_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The agent's word (`allowed`, `allowed_warning`, `rejected`), or `reset` once `resets_at` has
    /// passed (the figure is then 0: what was used before no longer counts).
    pub status: String,
    /// When it was seen, and by which run.
    #[serde(serialize_with = "crate::words::ser_time")]
    pub seen_at: chrono::DateTime<chrono::Utc>,
    pub run_id: Option<String>,
}

impl LimitWindow {
    /// As it stands at `now`: past its reset, it is shown reset, not as its old figure.
    pub fn as_of(mut self, now: chrono::DateTime<chrono::Utc>) -> LimitWindow {
        if self.resets_at.is_some_and(|r| r <= now) {
            self.used_percent = 0.0;
            self.status = "reset".into();
        }
        self
    }

    /// The status word for a window reported with its share alone (Codex's rollout file, Claude's
    /// usage endpoint): `rejected` when used up, `allowed_warning` from 80 %, else `allowed` — the
    /// words Claude Code's own reports use.
    pub fn status_for_share(used_percent: f64) -> &'static str {
        if used_percent >= 100.0 {
            "rejected"
        } else if used_percent >= 80.0 {
            "allowed_warning"
        } else {
            "allowed"
        }
    }

    /// The marks (in percent) at which an account's user is told how much of a window is used.
    pub const MARKS: [f64; 2] = [80.0, 95.0];

    /// The highest of [`LimitWindow::MARKS`] this report is the first to reach in its period, given
    /// the highest share `before` it in that period (`None`: the first report of the period).
    pub fn mark_passed(&self, before: Option<f64>) -> Option<f64> {
        let before = before.unwrap_or(0.0);
        Self::MARKS.into_iter().rev().find(|m| before < *m && self.used_percent >= *m)
    }

    /// "5h 85 %", "7d reset" — the window and how much of it is used, in a list of them.
    pub fn used_words(&self) -> String {
        match self.status.as_str() {
            "reset" => format!("{} reset", self.short_name()),
            _ => format!("{} {:.0} %", self.short_name(), self.used_percent),
        }
    }

    /// "5h", "7d", "7d opus" — how the tray and the CLI name it.
    pub fn short_name(&self) -> String {
        match self.window.as_str() {
            "five_hour" => "5h".into(),
            "seven_day" => "7d".into(),
            other => other.strip_prefix("seven_day_").map(|m| format!("7d {m}")).unwrap_or_else(|| other.replace('_', " ")),
        }
    }
}

/// A tool call the agent was refused, or could not make (a tool its routine did not allow): the
/// tool and its input (secrets masked, cut to 200 characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Denial {
    pub tool: String,
    pub input: String,
}

impl Denial {
    /// `Bash(git push)` — how a person reads it.
    pub fn words(&self) -> String {
        match self.input.is_empty() {
            true => self.tool.clone(),
            false => format!("{}({})", self.tool, self.input),
        }
    }
}

/// "2 tool calls refused: Bash(git push), Read(/etc/passwd)" — for messages and notifications.
pub fn denials_words(denials: &[Denial]) -> String {
    let n = denials.len();
    let listed: Vec<String> = denials.iter().take(3).map(Denial::words).collect();
    let more = if n > 3 { format!(" and {} more", n - 3) } else { String::new() };
    format!("{n} tool call{} refused: {}{more}", if n == 1 { "" } else { "s" }, listed.join(", "))
}

/// Read back (`Deserialize`) by a viewer of another home, from that home's `serve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct RunRecord {
    pub id: String,
    pub routine: String,
    pub trigger: Trigger,
    #[serde(serialize_with = "ser_opt_time")]
    pub scheduled_for: Option<DateTime<Utc>>,
    #[serde(serialize_with = "ser_opt_time")]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "ser_opt_time")]
    pub finished_at: Option<DateTime<Utc>>,
    pub status: RunStatus,
    pub reason: Option<Reason>,
    pub message: Option<String>,
    pub exit_code: Option<i32>,
    pub account: Option<String>,
    #[serde(serialize_with = "ser_opt_time")]
    pub resets_at: Option<DateTime<Utc>>,
    pub attempts: Vec<Attempt>,
    pub duration_ms: Option<u64>,
    pub cost_usd: Option<f64>,
    pub session_id: Option<String>,
    pub report_path: Option<String>,
    /// `claude`, `codex`, `gemini` or `command`.
    pub agent: Agent,
    /// Where stdout.log, stderr.log and report.md live.
    pub run_dir: String,
    /// For a run held by a sign-in failure: the run that made it up once the account worked again.
    pub made_up_by: Option<String>,
    /// Its finish notification: `pending`, `delivered`, `not_delivered` or `summarized`; `null`
    /// when none is due (the routine's `notify:` policy, or a missed/skipped slot).
    pub notified: Option<Delivery>,
    /// What the run changed in its git workspace — files with +/−, commits, the branch of a
    /// worktree run and its push; `null` for a run outside git.
    pub changes: Option<Changes>,
    /// Tokens (input, output, cache read, cache write) and model from the agent's own final
    /// event; `null` when it gave none (a command, a run that never started). A figure the agent
    /// did not give is `null`, never 0.
    pub usage: Option<Usage>,
    /// When retention removed the run's files (logs, report); the record itself stays.
    #[serde(serialize_with = "ser_opt_time")]
    pub pruned_at: Option<DateTime<Utc>>,
    /// The machine it ran on over SSH (a routine's `host:`); `null` for a run on this machine.
    pub host: Option<String>,
    /// Where to see it on its host, when the host has a page for it: a host on GitHub Actions'
    /// workflow run (`https://github.com/acme/app/actions/runs/1234`); `null` otherwise.
    pub remote_url: Option<String>,
    /// A queued run that waits for a time — a retry after its backoff, or a rate limit's reset —
    /// starts then, not before; `null` for one that starts as soon as a lane is free.
    #[serde(serialize_with = "ser_opt_time")]
    pub due_at: Option<DateTime<Utc>>,
    /// It was asked to wait out a rate limit although it is a manual run (`run
    /// --wait-for-limit`); scheduled and catch-up runs always may.
    pub wait_for_limit: bool,
    /// Tool calls the agent was refused or could not make (`allow:`/`deny:`, its permission
    /// mode), as it reported them.
    pub denials: Vec<Denial>,
    /// A person started it past a spent day's or month's budget (`run --ignore-budget`).
    pub ignore_budget: bool,
    /// A person started it on this machine although its routine's `devices:` does not list it
    /// (`run --here`).
    pub here: bool,
    /// The GitHub or Linear event that fired it (trigger `event`): `{source, name, action, repo,
    /// number, title, url, branch, sender, delivery}`.
    pub event: Option<crate::incoming::Event>,
    /// A worktree run's pull request (`push.pr`): `{state, number, url, repo, error, tries, at}`;
    /// `null` when its routine opens none.
    #[serde(default)]
    pub pull_request: Option<PullRequest>,
}

impl Trigger {
    /// Whether a person started it (Run now, `nightshiftctl run`): it may use an account's
    /// reserve and does not wait out a limit unless asked. Scheduled, catch-up and event runs are
    /// unattended.
    pub fn by_hand(self) -> bool {
        matches!(self, Trigger::Manual | Trigger::Cli)
    }
}

/// What a person asked of a manual run beyond starting it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunAsks {
    /// `run --wait-for-limit`: should it meet a rate limit with no other account free, wait for
    /// the reset (scheduled runs always may).
    pub wait_for_limit: bool,
    /// `run --ignore-budget`: start although a day's or month's budget is spent.
    pub ignore_budget: bool,
    /// `run --here`: run on this machine although the routine's `devices:` does not list it.
    pub here: bool,
}

/// Where a run ran when not on this machine, from its `host` and `remote_url` (see
/// [`RunRecord::place`]).
pub fn place(host: Option<&str>, remote_url: Option<&str>) -> Option<String> {
    let host = host?;
    let on_actions = remote_url.and_then(|url| {
        let path = url.split_once("://")?.1.split_once('/')?.1;
        let (repo, run) = path.split_once("/actions/runs/")?;
        Some(format!("{host} · run {} · {repo}", run.trim_end_matches('/')))
    });
    Some(on_actions.unwrap_or_else(|| format!("{host} (over SSH)")))
}

impl RunRecord {
    /// Where it ran when not on this machine, in words: `ci · run 1234 · acme/app` on a host on
    /// GitHub Actions (from its workflow run's page), `workstation (over SSH)` on an SSH host.
    pub fn place(&self) -> Option<String> {
        place(self.host.as_deref(), self.remote_url.as_deref())
    }
}

/// For tests (this crate's, and the engine's with its `test-support` feature).
#[cfg(any(test, feature = "test-support"))]
impl RunRecord {
    /// A finished Claude run of `pr-review` on work@acme.dev, for unit tests to adjust.
    pub fn sample(status: RunStatus, reason: Option<Reason>) -> RunRecord {
        RunRecord {
            id: "r1".into(),
            routine: "pr-review".into(),
            trigger: Trigger::Schedule,
            scheduled_for: None,
            started_at: None,
            finished_at: None,
            status,
            reason,
            message: None,
            exit_code: None,
            account: Some("work@acme.dev".into()),
            resets_at: None,
            attempts: Vec::new(),
            duration_ms: None,
            cost_usd: None,
            session_id: None,
            report_path: None,
            agent: Agent::Claude,
            run_dir: "/x".into(),
            made_up_by: None,
            notified: None,
            changes: None,
            usage: None,
            pruned_at: None,
            host: None,
            remote_url: None,
            due_at: None,
            wait_for_limit: false,
            denials: Vec::new(),
            ignore_budget: false,
            here: false,
            event: None,
            pull_request: None,
        }
    }
}

/// A new run id: a ULID (sortable by creation time), lower-cased for paths.
pub fn new_run_id() -> String {
    ulid::Ulid::new().to_string().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every channel is stored as a word and read back as itself; a failed push's news nests
    /// only a notification or a webhook (a webhook named with colons keeps them).
    #[test]
    fn channels_are_read_back_as_they_are_written() {
        let all = [
            Channel::Notify,
            Channel::Push,
            Channel::Webhook("team".into()),
            Channel::Ping(PingEvent::End),
            Channel::Notify.push_failed(),
            Channel::Webhook("ops:night".into()).push_failed(),
            Channel::PullRequest,
            Channel::Webhook("team".into()).pull_request_news(),
        ];
        for c in all {
            assert_eq!(Channel::parse(&c.to_string()), Some(c.clone()), "{c}");
        }
        assert_eq!(Channel::Webhook("team".into()).push_failed().to_string(), "push_failed:webhook:team");
        assert_eq!(Channel::Webhook("team".into()).push_failed().webhook(), Some("team"));
        assert_eq!(Channel::parse("push_failed:push"), None);
        assert_eq!(Channel::parse("push_failed:push_failed:notify"), None);
        assert_eq!(Channel::Webhook("team".into()).pull_request_news().to_string(), "pull_request:webhook:team");
        assert_eq!(Channel::Webhook("team".into()).pull_request_news().webhook(), Some("team"));
        assert_eq!(Channel::parse("pull_request:notify"), None, "a pull request's news goes to webhooks only");
    }
}
