// Generated from the engine's types (crates/core/src/view/typescript.rs) — do not edit: a test fails when
// this file and the engine disagree; `NIGHTSHIFT_BLESS=1 cargo test -p nightshift-core typescript` writes it again.

/**
 * An account's health as the UI and CLI show it.
 * (`Deserialize`: `accounts list --home` reads another home's.)
 */
export type AccountHealth = { account: string, agent: Agent, verdict: Verdict, 
/**
 * Why, in words ("run 01j… failed auth_failed: Invalid bearer token").
 */
evidence: string, 
/**
 * When the evidence was seen.
 */
since: string | null, source: CredentialSource, expires_at: string | null, resets_at: string | null, config_dir: string, 
/**
 * The exact fix, when there is one.
 */
fix: string | null, 
/**
 * What this agent's stored secret is ("setup token", "OpenAI API key", "Gemini API key")
 * and where a user gets one — so every face words Set token the same way.
 */
secret: string, secret_how: string, 
/**
 * Its usage windows as its runs' agents last reported them (five_hour, seven_day, …); a
 * window past its reset shows as reset. Empty until a run reports one.
 */
windows: Array<LimitWindow>, };

/**
 * An account for the Accounts view: its health and the verdicts behind it.
 */
export type AccountView = { health: AccountHealth, history: Array<HealthRecord>, 
/**
 * Runs and tokens in the last 5 hours and 7 days (`None`: no run in that window).
 */
last_5h: UsageRow | null, last_7d: UsageRow | null, 
/**
 * When it hit a rate limit in the last 30 days (and when that limit reset), newest first.
 */
limits: Array<HealthRecord>, 
/**
 * `reserve` (percent of its windows kept from scheduled runs) and `usage_probe`, as set.
 */
reserve: number | null, usage_probe: boolean, };

/**
 * Who does a run's work: one of the agent CLIs Nightshift drives, or `command` (a shell
 * command). The routine's `agent:`, the run record's `agent`, `[agents.<word>]` in the
 * settings, the accounts and the drivers (`agents::driver`) all use this one word; a new
 * agent is one more word here and one module in `agents/`.
 */
export type Agent = "claude" | "codex" | "gemini" | "opencode" | "copilot" | "command";

export type AgentChoice = { agent: Agent, accounts: Array<string>, };

/**
 * One ask.
 */
export type Ask = { id: string, run_id: string, routine: string, 
/**
 * The tool as the agent names it (`Bash`).
 */
tool: string, 
/**
 * Its input as JSON text, secrets masked (what the user is shown, inert).
 */
input: string, asked_at: string, expires_at: string, 
/**
 * `allow`, `deny` or `timeout`; `None` while it waits.
 */
answer: string | null, 
/**
 * Allowed for the rest of the run (that tool), not only this once.
 */
for_run: boolean, answered_at: string | null, 
/**
 * Where it was answered: `cli`, `window`, `desktop`, `phone`, `timeout`, `earlier` (an
 * answer for the rest of the run).
 */
answered_by: string | null, 
/**
 * The agent waits on it while it runs (`false`: asked after the run ended, `blocked ·
 * needs_approval`). (Missing from an earlier release's answer: every ask was held then.)
 */
held: boolean, 
/**
 * The run an approval after the run started, with the call allowed.
 */
rerun: string | null, };

/**
 * One try of a run: failover to another account, a retry after a transient failure and a wait
 * for a rate limit's reset each make another (the last one is the record's own status).
 */
export type Attempt = { account: string | null, status: RunStatus, reason: Reason | null, message: string | null, resets_at: string | null, 
/**
 * When this try started and ended (`null` in records written before retries existed).
 */
started_at: string | null, finished_at: string | null, 
/**
 * When the next try was due: after a retry's backoff, or at the limit's reset (plus a
 * margin). `null` when the next try followed at once (failover) or there was none.
 */
next_at: string | null, 
/**
 * The agent's own session of this try, when its stream said it (a retry may resume it).
 */
session?: string | null, 
/**
 * How many things it changed (or may have) before it ended: shell commands, edits, MCP
 * calls — as far as its agent's stream says (Claude Code's); a retry never repeats them
 * blindly.
 */
work?: number, 
/**
 * The session of an earlier try that this one continued ("resumed session …").
 */
resumed?: string | null, };

/**
 * Where one budget stands (`usage`, the Usage view).
 */
export type BudgetState = { 
/**
 * "all runs", "routine nightly", "account work@acme.dev".
 */
scope: string, period: "day" | "month", 
/**
 * What runs reported spending in the period so far (USD).
 */
spent: number, cap: number, 
/**
 * When the period ends and the budget frees.
 */
frees_at: string, timezone: string, };

/**
 * What a run changed — part of the run record (`changes`, `null` for a run outside git).
 */
export type Changes = { workspace: WorkspaceKind, repo: string, branch: string | null, 
/**
 * The commit the run started from, and the one its branch (or checkout) ended on.
 */
base: string | null, head: string | null, 
/**
 * Oldest first; at most [`MAX_COMMITS_LISTED`].
 */
commits: Array<Commit>, 
/**
 * At most [`MAX_FILES_LISTED`]; `files_changed` counts them all.
 */
files: Array<FileChange>, files_changed: number, added: number, removed: number, 
/**
 * The worktree's directory while it exists (`null` once cleaned up, and for cwd runs).
 */
worktree: string | null, worktree_removed_at: string | null, 
/**
 * The branch's push, when the routine has `push:`.
 */
push: Push | null, 
/**
 * Committing or summarising failed: said here instead of a summary that looks complete.
 */
error: string | null, };

export type Commit = { sha: string, subject: string, by: CommitBy, };

/**
 * Who made a commit of a run's branch.
 */
export type CommitBy = "agent" | "nightshift";

/**
 * What creating a routine did: the file, and the run started when asked to try it at once.
 */
export type Created = { run_id: string | null, name: string, file: string, };

export type CredentialSource = "keychain" | "env" | "agent_login" | "none";

/**
 * An outbox entry's state — a run's finish notification, a webhook, a push: waiting, or how
 * it ended. A run record's `notified` is its notification's.
 */
export type Delivery = "pending" | "delivered" | "not_needed" | "summarized" | "not_delivered";

/**
 * One delivery as the faces show it (`nightshiftctl deliveries`, a run's detail).
 */
export type DeliveryRow = { run_id: string, routine: string, 
/**
 * `notify`, or `webhook:<name>`.
 */
channel: string, 
/**
 * The webhook's name, for a webhook's delivery (so no face parses the channel).
 */
webhook: string | null, 
/**
 * Which heartbeat ping, for a ping's delivery (`ping:`).
 */
ping: PingEvent | null, state: Delivery, attempts: number, last_error: string | null, delivered_at: string | null, 
/**
 * When the next try is due (pending only).
 */
next_at: string | null, };

/**
 * A tool call the agent was refused, or could not make (a tool its routine did not allow): the
 * tool and its input (secrets masked, cut to 200 characters).
 */
export type Denial = { tool: string, input: string, };

/**
 * One problem in one routine file, at a position.
 */
export type Diagnostic = { 
/**
 * The file as the user should see it (relative to the home when inside it).
 */
file: string, line: number, col: number, message: string, severity: Severity, };

/**
 * What one routine's run directories take on disk.
 */
export type DiskUse = { routine: string, 
/**
 * Allocated on disk (what `du` says), not the files' apparent length.
 */
bytes: number, runs: number, };

/**
 * A routine as a form fills it in: the routine file's own fields, as text. Empty means absent.
 */
export type Draft = { name: string, description: string, 
/**
 * `claude`, `codex` or `gemini`; empty for a shell command.
 */
agent: string, prompt: string, command: string, 
/**
 * Another machine it runs on over SSH (a host or alias from the ssh config, or user@host);
 * empty for this machine.
 */
host: string, 
/**
 * One account pinned (an email of the agent's accounts); empty for any.
 */
account: string, mode: string, model: string, cwd: string, 
/**
 * With `host`: the folder it works in there (`cwd` is this machine's).
 */
remote_cwd: string, 
/**
 * `hostStrategy:` — `local`, `host` or `fleet` (any machine nightshift.toml lists); empty
 * for none (a `host` places it there).
 */
placement: string, 
/**
 * `worktree` for a git worktree of its own per run; empty for `cwd` itself.
 */
workspace: string, 
/**
 * With `worktree`: the branch it starts from, the remote its branch is pushed to.
 */
base: string, push: string, 
/**
 * A cron expression; or use `at` for a one-shot.
 */
schedule: string, 
/**
 * A one-shot time (`2026-12-24 09:00` in the routine's zone, or RFC 3339).
 */
at: string, timezone: string, end_at: string, timeout: string, notify: string, 
/**
 * `None`: the default (on).
 */
catchup: boolean | null, 
/**
 * `None`: the default (enabled).
 */
enabled: boolean | null, devices: Array<string>, webhooks: Array<string>, env: { [key in string]: string }, 
/**
 * `effort:` (low, medium, high, xhigh, max, auto); empty for the agent's default.
 */
effort: string, 
/**
 * `allow.tools`: the only tools the agent has (names, or Claude's rules such as
 * `Bash(git status)`); empty: the agent's own set.
 */
allow_tools: Array<string>, 
/**
 * `allow.dirs`: folders it may work in besides its working directory.
 */
allow_dirs: Array<string>, 
/**
 * `deny.tools`: tools that never run.
 */
deny_tools: Array<string>, 
/**
 * `on_denial:` — `fail`, or empty (refusals recorded).
 */
on_denial: string, 
/**
 * `budget:` — US dollars as typed (`2.50`); empty for none.
 */
budget_run: string, budget_day: string, budget_month: string, 
/**
 * `secrets:` — names of stored secrets.
 */
secrets: Array<string>, 
/**
 * `trigger:` — its keys as the file spells them (`type`, `event`, `repo`, `branch`,
 * `action`, `label`, `teamKey`, `stateTo`, `stateFrom`); empty for none.
 */
trigger: { [key in string]: string }, 
/**
 * `created_by:` — `mcp` for a routine an agent creates; empty for a person's.
 */
created_by: string, 
/**
 * `parent_run:` — the run whose agent created it; empty for none.
 */
parent_run: string, };

/**
 * A draft checked: the file it would write, every problem on its field, when it would fire.
 */
export type DraftCheck = { yaml: string, 
/**
 * The file it would be written to (relative to the home).
 */
file: string, problems: Array<FieldProblem>, preview: Preview | null, };

/**
 * A run's record travels boxed: the channel keeps 1024 events in slots the size of the largest
 * variant, and a record by value (~800 bytes) made that 786 KB resident in every engine.
 * (`Deserialize`: a viewer on another machine reads them from that home's `serve`.)
 */
export type EngineEvent = { "type": "run_queued", run: RunRecord, } | { "type": "run_started", run: RunRecord, } | { "type": "run_progress", run_id: string, routine: string, message: string, } | { "type": "run_finished", run: RunRecord, } | { "type": "run_updated", run: RunRecord, } | { "type": "routines_changed" } | { "type": "accounts_changed" } | { "type": "routine_paused", routine: string, reason: string, } | { "type": "webhook_failed", webhook: string, run_id: string, routine: string, error: string, } | { "type": "account_notice", account: string, summary: string, body: string, } | { "type": "approval_asked", run_id: string, routine: string, what: string, until: string, } | { "type": "approval_answered", run_id: string, routine: string, what: string, answer: string, by: string, } | { "type": "review_loop_ended", routine: string, pull: string, why: string, } | { "type": "engine_state", running: number, queued: number, paused: boolean, };

/**
 * What the header shows.
 */
export type EngineStateView = { 
/**
 * Another process (a `nightshiftctl daemon`) schedules this home; this window views and controls.
 */
scheduled_elsewhere: string | null, 
/**
 * This host's scheduler is running (else: starting, refused — see `problems` — or elsewhere).
 */
scheduling: boolean, paused: boolean, running: number, queued: number, device: string, home: string, routines_dir: string, 
/**
 * What the user must hear about the home (disk full, damaged database, unrecorded runs).
 */
problems: Array<string>, };

/**
 * One event, as a run records it (`event` on the run record) and as prompts name its parts
 * (`{event.repo}`, `{event.number}`, …). The filter facts beside them are for matching only.
 */
export type Event = { source: Source, 
/**
 * GitHub's event (`pull_request`, `push`, `issue_comment`, `workflow_run`) or Linear's type
 * (`Issue`, `IssueLabel`, `Comment`, `Project`, `Cycle`).
 */
name: string, 
/**
 * GitHub's `action` (`opened`, `labeled`, …) or Linear's (`create`, `update`, `remove`);
 * none for a push.
 */
action: string | null, 
/**
 * `owner/name` (GitHub).
 */
repo: string | null, 
/**
 * The pull request's, issue's or workflow run's number; a Linear issue's.
 */
number: number | null, title: string | null, url: string | null, 
/**
 * The pull request's base branch, the pushed branch, the workflow run's branch.
 */
branch: string | null, 
/**
 * Who did it (GitHub login, Linear name).
 */
sender: string | null, 
/**
 * The service's delivery id (`X-GitHub-Delivery`, `Linear-Delivery`): one event, however
 * often it arrives.
 */
delivery: string, 
/**
 * The review a `pull_request_review` event submitted (`on_review: rerun`), with its line
 * comments once they were read from GitHub.
 */
review: Review | null, };

/**
 * One delivery a routine's trigger named, and what became of it for the routine.
 */
export type EventLine = { received_at: string, 
/**
 * The event in words ("github:pull_request opened acme/app#41 “Fix”").
 */
summary: string, 
/**
 * `fired`, `duplicate`, `filtered`, `skipped`, or the state that kept it from running.
 */
outcome: string, run_id: string | null, why: string | null, 
/**
 * How often the delivery arrived.
 */
times: number, };

export type Explanation = { 
/**
 * One sentence a user understands without knowing the reason codes.
 */
summary: string, 
/**
 * What to do about it, when something can be done.
 */
fix: string | null, 
/**
 * The account to log in again, when that is the fix (the window offers Re-login).
 */
relogin: string | null, };

/**
 * What became of a slot.
 */
export type Fate = "ran" | "caught_up" | "missed" | "skipped" | "blocked" | "paused" | "other_device" | "disabled" | "invalid" | "ended" | "pending" | "no_record";

/**
 * One problem with a draft, on the field it belongs to (`None`: the routine as a whole).
 */
export type FieldProblem = { field: string | null, message: string, };

export type FileChange = { path: string, 
/**
 * Lines added / removed; `null` for a binary file.
 */
added: number | null, removed: number | null, };

export type Fire = { 
/**
 * RFC 3339, UTC.
 */
at: string, 
/**
 * The wall-clock time in the routine's zone ("Mon 2026-12-07 09:00 CET").
 */
in_zone: string, 
/**
 * The same instant on this machine's clock.
 */
local: string, };

/**
 * A folder and the folders in it, for the form's folder picker (one that works the same in the
 * app and in a browser on `serve`, where the folders are the server's).
 */
export type Folders = { path: string, parent: string | null, 
/**
 * Sub-folders by name, hidden ones left out, at most [`MAX_FOLDERS`].
 */
folders: Array<string>, 
/**
 * How many more there were.
 */
more: number, };

/**
 * Everything a status icon shows at a glance — the engine's state, every routine, every
 * account's health — in one read (the tray asks after every engine event; another machine's
 * tray asks it of this home after each of its events).
 */
export type Glance = { state: EngineStateView, 
/**
 * As `list_routines` gives them; a routines folder that cannot be read gives none (and is
 * one of `state.problems`).
 */
routines: Array<RoutineOverview>, accounts: Array<AccountHealth>, 
/**
 * The tool calls runs hold while they ask (`on_denial: ask`), oldest first: attention.
 */
asks: Array<Ask>, };

/**
 * The latest run-derived verdict on an account (`live`, `revoked`, `rate_limited`, `ok`).
 */
export type HealthRecord = { account: string, verdict: Verdict, evidence: string, at: string, resets_at: string | null, run_id: string | null, };

/**
 * One home as `homes list` and the tray show it.
 */
export type HomeStatus = { name: string, url: string, reachable: boolean, 
/**
 * Why it could not be reached now.
 */
error: string | null, 
/**
 * When it last answered this machine.
 */
last_seen: string | null, 
/**
 * Its machine's name (`device_name`), when it answered.
 */
device: string | null, 
/**
 * Its scheduler runs there (its `serve`, daemon or app schedules it).
 */
scheduling: boolean, 
/**
 * The routines it schedules (enabled ones), when it answered.
 */
routines: Array<string>, };

/**
 * What a fresh check of a host found.
 */
export type HostCheck = { host: string, reachable: boolean, 
/**
 * The agents its routines need that it does not have (by the path runs use there).
 */
missing: Array<string>, 
/**
 * One sentence: reachable with everything, what is missing, or why it cannot be reached.
 */
message: string, };

/**
 * A host and what is known of it.
 */
export type HostView = { host: string, 
/**
 * `owner/name` when the host is that repository's GitHub Actions runners; `null` for a
 * machine over SSH.
 */
github: string | null, 
/**
 * The routines placed on it (valid files only), by name.
 */
routines: Array<string>, 
/**
 * When it was last tried; `null` if never.
 */
checked_at: string | null, 
/**
 * When it last answered; `null` if it never did.
 */
last_seen: string | null, 
/**
 * Why the last try failed, in ssh's words; `null` when it answered.
 */
last_error: string | null, };

export type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]: JsonValue } | null;

export type LastRun = { id: string, status: RunStatus, reason: Reason | null, started_at: string | null, };

/**
 * One of an account's usage windows as its agent reported it in a run's stream (Claude Code's
 * `rate_limit_event` `unifiedWindows`): how much of it is used and when it resets. Subscription
 * limits count in these windows; the scheduler keeps an account's reserve by them.
 */
export type LimitWindow = { 
/**
 * `five_hour`, `seven_day`, or a model's own weekly window (`seven_day_opus`).
 */
window: string, 
/**
 * 0–100.
 */
used_percent: number, resets_at: string | null, 
/**
 * The agent's word (`allowed`, `allowed_warning`, `rejected`), or `reset` once `resets_at` has
 * passed (the figure is then 0: what was used before no longer counts).
 */
status: string, 
/**
 * When it was seen, and by which run.
 */
seen_at: string, run_id: string | null, };

export type LogChunk = { 
/**
 * Readable entries (when asked for readable).
 */
entries: Array<LogEntry>, 
/**
 * The bytes as text (when asked for raw).
 */
raw: string | null, offset: number, 
/**
 * Ask from here for what comes next.
 */
next_offset: number, 
/**
 * The file's size when read; `next_offset < size` means there is more already.
 */
size: number, };

export type LogEntry = { kind: LogKind, text: string, 
/**
 * A streamed continuation of the previous entry (Gemini sends text in deltas).
 */
joins?: boolean, };

export type LogKind = "text" | "tool" | "tool_result" | "retry" | "error" | "info" | "result" | "output";

export type LogStream = "stdout" | "stderr";

/**
 * A mark of the Routines view's strip: one slot, or a stretch of time when there are too many.
 */
export type Mark = { from: string, to: string, fate: Fate, tone: Tone, sentence: string, run_id: string | null, };

/**
 * A routine moved: where its file is now, and where its old file went here.
 */
export type Moved = { routine: string, 
/**
 * The home it runs on now.
 */
to: string, 
/**
 * Its file there (as that home shows it).
 */
file_there: string, 
/**
 * Its old file in this home's trash (what `routines restore` takes).
 */
trash_id: string, };

export type Notice = { 
/**
 * "✓ pr-review · 4m 12s"
 */
summary: string, 
/**
 * The report's first line or the failure's message (≤ 140 characters).
 */
body: string, 
/**
 * The run to open when the notification is clicked.
 */
run_id: string | null, critical: boolean, 
/**
 * The run waits for an answer (`on_denial: ask`): the notification offers Approve and Deny.
 */
asks: boolean, 
/**
 * Notices with the same tag replace each other on the desktop (an ask's notification becomes
 * its answer: "✓ deps: approved (phone, 02:14)").
 */
tag: string | null, };

export type Page = { runs: Array<RunRecord>, 
/**
 * Pass back to get the next (older) page; `None` at the end.
 */
next_cursor: string | null, };

/**
 * Which heartbeat ping (`ping:`): the run started, or it ended (how is decided when it is sent).
 */
export type PingEvent = "start" | "end";

/**
 * When a routine would fire: its schedule in words and the next fire times.
 */
export type Preview = { words: string, timezone: string, fires: Array<Fire>, };

/**
 * The pull request a worktree run's branch went to (`push.pr`): opened by this run, or the
 * routine's open one it pushed onto and updated — or why there is none.
 */
export type PullRequest = { 
/**
 * `pending` (after the push), `opened`, `updated`, `none` (the run changed nothing), `failed`;
 * for a run that answered a review (`on_review: rerun`): `answered` (its commits pushed and
 * its answer posted), `unchanged` (it changed nothing: answered, and the loop ends there).
 */
state: string, number: number | null, url: string | null, 
/**
 * `owner/name`.
 */
repo: string | null, 
/**
 * Why it failed, or why there is none — in words, with what to do.
 */
error: string | null, tries: number, at: string | null, };

export type Push = { remote: string, state: PushState, 
/**
 * The remote branch it goes to when it is not the run's own: the routine's open pull
 * request's branch, which this run continued (`push.pr`, one open per routine).
 */
onto: string | null, tries: number, error: string | null, at: string | null, };

/**
 * Where a worktree run's branch is in being pushed.
 */
export type PushState = "pending" | "pushed" | "failed" | "nothing";

/**
 * The cause behind a status other than `completed`.
 */
export type Reason = "auth_failed" | "rate_limited" | "agent_error" | "exit_nonzero" | "spawn_failed" | "interrupted" | "auth_preflight" | "no_account" | "superseded" | "active_run" | "queue_full" | "host_unreachable" | "no_runner" | "api_unavailable" | "killed" | "stalled" | "missing_secret" | "no_cwd" | "no_hosts" | "no_sandbox" | "permission_denied" | "needs_approval" | "budget";

export type Relogin = { 
/**
 * A terminal was opened running the login.
 */
opened: string | null, 
/**
 * The exact command, to show and copy.
 */
command: string, 
/**
 * What can be pasted instead ("setup token", "OpenAI API key", …) and where to get one.
 */
secret: string, secret_how: string, };

/**
 * A routine file in the trash.
 */
export type Removed = { 
/**
 * Its name in `routines/.trash/` (what restore takes).
 */
id: string, name: string, 
/**
 * RFC 3339.
 */
removed_at: string, };

/**
 * One submitted review.
 */
export type Review = { 
/**
 * GitHub's id of the review: one round, whichever path brought it.
 */
id: number, 
/**
 * `changes_requested`, `commented` or `approved` (GitHub's `review.state`, lower case).
 */
state: string, 
/**
 * The reviewer's login.
 */
author: string | null, 
/**
 * The review's own words (its summary), if any.
 */
body: string | null, 
/**
 * The pull request's head branch: where the answering run works and pushes.
 */
head: string | null, 
/**
 * The comments on lines, as GitHub's `GET …/pulls/{n}/reviews/{id}/comments` lists them.
 */
comments: Array<ReviewComment>, };

/**
 * One comment on a line of the pull request's diff.
 */
export type ReviewComment = { path: string | null, line: number | null, body: string, };

/**
 * What the New routine form offers: each agent with the accounts that can run it, the zones, the
 * webhooks defined, where the file goes.
 */
export type RoutineForm = { agents: Array<AgentChoice>, 
/**
 * This machine's zone (the default).
 */
timezone: string, timezones: Array<string>, webhooks: Array<string>, 
/**
 * Machines a routine can be placed on: those in nightshift.toml (`[hosts.<name>]`), in
 * routines, or checked — suggestions; any SSH host or alias is accepted.
 */
hosts: Array<string>, routines_dir: string, 
/**
 * The routine secrets there are, by name (`nightshiftctl secrets set`), for `secrets:`.
 */
secrets: Array<string>, };

/**
 * (`Deserialize`: `routines list --home` reads another home's.)
 */
export type RoutineOverview = { name: string, 
/**
 * The file, relative to the home when inside it.
 */
file: string, valid: boolean, 
/**
 * What runs it (`claude`, `codex`, `gemini` or `command`); none for an invalid file.
 */
kind: Agent | null, 
/**
 * The machines its runs go to over SSH (`host:`/`hosts:`); empty: this one.
 */
hosts: Array<string>, 
/**
 * The cron expression (or `at …` for a one-shot).
 */
schedule: string | null, 
/**
 * The schedule in words: "At 09:00 on Monday through Friday, Europe/Berlin".
 */
schedule_words: string | null, 
/**
 * The events it runs on (`trigger:`): "github:pull_request (acme/app@main, action=labeled,
 * label=ux-approved)".
 */
trigger: string | null, timezone: string | null, enabled: boolean | null, 
/**
 * Paused on this machine (by the user, or automatically: see `paused_reason`).
 */
paused: boolean, paused_reason: string | null, on_this_device: boolean, state: RoutineState, 
/**
 * Only when the routine will actually fire (enabled, not paused, on this device).
 */
next_fire: string | null, last_run: LastRun | null, 
/**
 * The routine has gone quiet (`notify_missed`): its last slot did nothing — "missed Tue 1 Dec
 * 02:00", "skipped …" — until it runs again.
 */
quiet: string | null, 
/**
 * Its last run's branch could not be pushed after every try — "push to origin failed:
 * rejected (non-fast-forward)" — until `nightshiftctl push RUN` or a later run pushes.
 */
push_failed: string | null, 
/**
 * An agent routine whose runs are not put in the machine's sandbox because it says so
 * (`sandbox: off`, or `[defaults] sandbox = "off"`): shown, so an opt-out is never quiet.
 */
sandbox_off: boolean, 
/**
 * `created_by:` — `mcp` for a routine an agent created.
 */
created_by: string | null, 
/**
 * A follow-up an agent scheduled: whose ("scheduled by nightly at Mon 7 Dec 02:14 (run …)").
 */
scheduled_by: string | null, 
/**
 * file:line:col problems of an invalid file.
 */
errors: Array<string>, 
/**
 * file:line:col: warning: … — what the file says that the routine runs without, or takes
 * another way than written (valid and invalid files alike).
 */
warnings: Array<string>, };

/**
 * A routine file's text as the editor opens it.
 */
export type RoutineSource = { name: string, 
/**
 * As the user sees it (relative to the home when inside it).
 */
file: string, 
/**
 * The absolute path (for "open in editor").
 */
path: string, text: string, 
/**
 * What a save must name to overwrite this text ([`author::version`]).
 */
version: string, 
/**
 * In the home's routines folder (else imported from agents-cli's: editable, not renamed or
 * removed from here).
 */
in_home: boolean, };

/**
 * Why a routine will or will not fire here, one word the faces turn into a badge.
 */
export type RoutineState = "enabled" | "disabled" | "paused" | "auto_paused" | "paused_all" | "other_device" | "invalid";

/**
 * A run for the detail view: the record, what it means, and its report as sanitized HTML.
 */
export type RunDetail = { run: RunRecord, explanation: Explanation, report_html: string | null, 
/**
 * The routine still exists (Run again is possible).
 */
routine_exists: boolean, 
/**
 * Its webhook and heartbeat-ping deliveries (what each receiver got, tries, last error).
 */
deliveries: Array<DeliveryRow>, 
/**
 * What it changed in git, in one line ("3 files changed, +40 −12 on nightshift/…"), worded
 * as the notification and the CLI say it.
 */
changes_summary: string | null, 
/**
 * For a slot that did not run (missed, skipped, blocked): its fate with the evidence, as
 * `nightshiftctl why` says it ("missed — machine asleep 01:10–07:55; …").
 */
slot_why: string | null, 
/**
 * Where it ran when not here, in words (`ci · run 1234 · acme/app`, `workstation (over SSH)`).
 */
place: string | null, 
/**
 * Whether it went in the machine's sandbox: `on`, or `off: <why>` (as `show` says it).
 */
sandbox: string | null, 
/**
 * Its routine is a follow-up an agent scheduled: whose ("scheduled by nightly at …").
 */
scheduled_by: string | null, 
/**
 * What it asked before a call its routine does not allow (`on_denial: ask`), and what
 * became of each, oldest first.
 */
asks: Array<Ask>, 
/**
 * Each of `asks` in words, as `show` says it ("Bash(git push …) — approved (desktop, Mon 7
 * Dec 02:14)"): what the window lists.
 */
asked: Array<string>, };

/**
 * Read back (`Deserialize`) by a viewer of another home, from that home's `serve`.
 */
export type RunRecord = { id: string, routine: string, trigger: Trigger, scheduled_for: string | null, started_at: string | null, finished_at: string | null, status: RunStatus, reason: Reason | null, message: string | null, exit_code: number | null, account: string | null, resets_at: string | null, attempts: Array<Attempt>, duration_ms: number | null, cost_usd: number | null, session_id: string | null, report_path: string | null, 
/**
 * `claude`, `codex`, `gemini` or `command`.
 */
agent: Agent, 
/**
 * Where stdout.log, stderr.log and report.md live.
 */
run_dir: string, 
/**
 * For a run held by a sign-in failure: the run that made it up once the account worked again.
 */
made_up_by: string | null, 
/**
 * Its finish notification: `pending`, `delivered`, `not_delivered` or `summarized`; `null`
 * when none is due (the routine's `notify:` policy, or a missed/skipped slot).
 */
notified: Delivery | null, 
/**
 * What the run changed in its git workspace — files with +/−, commits, the branch of a
 * worktree run and its push; `null` for a run outside git.
 */
changes: Changes | null, 
/**
 * Tokens (input, output, cache read, cache write) and model from the agent's own final
 * event; `null` when it gave none (a command, a run that never started). A figure the agent
 * did not give is `null`, never 0.
 */
usage: Usage | null, 
/**
 * When retention removed the run's files (logs, report); the record itself stays.
 */
pruned_at: string | null, 
/**
 * The machine it ran on over SSH (a routine's `host:`); `null` for a run on this machine.
 */
host: string | null, 
/**
 * Where to see it on its host, when the host has a page for it: a host on GitHub Actions'
 * workflow run (`https://github.com/acme/app/actions/runs/1234`); `null` otherwise.
 */
remote_url: string | null, 
/**
 * A queued run that waits for a time — a retry after its backoff, or a rate limit's reset —
 * starts then, not before; `null` for one that starts as soon as a lane is free.
 */
due_at: string | null, 
/**
 * It was asked to wait out a rate limit although it is a manual run (`run
 * --wait-for-limit`); scheduled and catch-up runs always may.
 */
wait_for_limit: boolean, 
/**
 * Tool calls the agent was refused or could not make (`allow:`/`deny:`, its permission
 * mode), as it reported them.
 */
denials: Array<Denial>, 
/**
 * A person started it past a spent day's or month's budget (`run --ignore-budget`).
 */
ignore_budget: boolean, 
/**
 * A person started it on this machine although its routine's `devices:` does not list it
 * (`run --here`).
 */
here: boolean, 
/**
 * The GitHub or Linear event that fired it (trigger `event`): `{source, name, action, repo,
 * number, title, url, branch, sender, delivery}`.
 */
event: Event | null, 
/**
 * A worktree run's pull request (`push.pr`): `{state, number, url, repo, error, tries, at}`;
 * `null` when its routine opens none.
 */
pull_request: PullRequest | null, };

export type RunStatus = "queued" | "running" | "completed" | "failed" | "timed_out" | "cancelled" | "blocked" | "missed" | "skipped";

/**
 * A routine secret for the Accounts view: its name and where it is kept — never its value — and
 * the routines that name it.
 */
export type SecretView = { name: string, 
/**
 * `keychain` (`nightshiftctl secrets set`), `environment` (`NIGHTSHIFT_SECRET_<NAME>`), or
 * `missing` (a routine names it and nothing holds it: its runs are blocked).
 */
source: "keychain" | "environment" | "missing", 
/**
 * RFC 3339: when it was stored (keychain secrets).
 */
set_at: string | null, used_by: Array<string>, };

/**
 * One group's values, one per day of the report (oldest first).
 */
export type Series = { key: string, values: Array<number | null>, };

/**
 * How bad a problem in a routine file is.
 */
export type Severity = "error" | "warning";

/**
 * One slot — or several neighbouring slots with the same fate and no run — in words.
 */
export type SlotLine = { 
/**
 * The slot (the newest, for several).
 */
at: string, 
/**
 * The oldest slot of the line (the same as `at` for one).
 */
from: string, slots: number, fate: Fate, tone: Tone, 
/**
 * The fate and its evidence: "missed — machine asleep 01:10–07:55; superseded by a later slot".
 * (Most lines of a busy routine say the same few words: those are not allocated per line.)
 */
sentence: string, 
/**
 * The slot's run, when it has one.
 */
run_id: string | null, status: RunStatus | null, 
/**
 * How long its run took (the faces add "in 42s").
 */
duration_ms: number | null, };

/**
 * Who sent an event.
 */
export type Source = "github" | "linear";

/**
 * How a fate looks: the UI's colour and the order in which a bucket of several shows its worst.
 */
export type Tone = "muted" | "ok" | "pending" | "warn" | "bad";

/**
 * Why a run exists.
 */
export type Trigger = "schedule" | "manual" | "catchup" | "cli" | "event" | "mcp" | "approval";

/**
 * What a run used, as the agent's own final event says (Claude's `result`, Codex's last
 * `turn.completed`, Gemini's `result.stats`). A figure the agent did not give stays `None` —
 * never 0 — so a chart can tell "none" from "unknown".
 */
export type Usage = { input_tokens: number | null, output_tokens: number | null, cache_read_tokens: number | null, cache_write_tokens: number | null, 
/**
 * The model(s) that answered, most used first (`, `-separated when several).
 */
model: string | null, 
/**
 * GitHub Copilot's premium requests (its billing unit: each model call counts its model's
 * multiplier, so a fraction is possible), as its `result` event says; other agents have none.
 */
premium_requests: number | null, };

/**
 * How usage is grouped.
 */
export type UsageBy = "routine" | "account" | "day" | "status";

export type UsageReport = { 
/**
 * The local days, oldest first (every day, also those without runs).
 */
days: Array<string>, 
/**
 * What cost and tokens are stacked by: `routine` or `account`.
 */
by: "routine" | "account", cost: Array<Series>, 
/**
 * Input + output tokens (cache reads and writes are in the tables of `top`).
 */
tokens: Array<Series>, runs_by_status: Array<Series>, 
/**
 * Routines by cost over the report's days (then by output tokens).
 */
top: Array<UsageRow>, 
/**
 * The current local month so far.
 */
month: UsageRow, 
/**
 * "November 2026".
 */
month_name: string, 
/**
 * Every day's and month's budget and where it stands (spent of cap, until when).
 */
budgets: Array<BudgetState>, 
/**
 * Each account's usage windows as its runs reported them: the highest share used (0–100)
 * each day, one series per account and window ("work@acme.dev · 5h").
 */
windows: Array<Series>, };

/**
 * One group's sums. A sum is `None` when no run in the group reported that figure.
 */
export type UsageRow = { 
/**
 * The routine, the account (`-` for runs without one), the day (`YYYY-MM-DD`) or the status.
 */
key: string, runs: number, input_tokens: number | null, output_tokens: number | null, cache_read_tokens: number | null, cache_write_tokens: number | null, cost_usd: number | null, };

/**
 * An account's auth health.
 */
export type Verdict = "live" | "ok" | "expiring" | "expired" | "revoked" | "rate_limited" | "unconfigured" | "unknown";

/**
 * A routine's slots explained.
 */
export type Why = { routine: string, timezone: string, schedule_words: string | null, from: string, until: string, 
/**
 * Newest first.
 */
lines: Array<SlotLine>, 
/**
 * Said when the window holds no slot, or starts before the routine was known, or the file
 * cannot be read: when it last fired and why not since.
 */
notes: Array<string>, 
/**
 * A follow-up an agent scheduled: whose ("scheduled by nightly at Mon 7 Dec 02:14 (run …)").
 */
scheduled_by: string | null, next_fire: string | null, 
/**
 * The next fire and what it depends on, or why there is none.
 */
next: string, 
/**
 * The GitHub and Linear deliveries its `trigger:` named in the window, newest first, with
 * what became of each for it (`hooks list`'s verdicts).
 */
events: Array<EventLine>, };

export type WorkspaceKind = "cwd" | "worktree";

/**
 * A routine file written (created, duplicated, renamed, restored).
 */
export type Written = { name: string, file: string, };

/** Every window command: the arguments it takes and what it answers (`call` in lib/api.js). */
export interface Commands {
  engine_state: { args: Record<symbol, never>; answer: EngineStateView };
  glance: { args: Record<symbol, never>; answer: Glance };
  list_homes: { args: Record<symbol, never>; answer: Array<HomeStatus> };
  home_call: { args: { home: string, command: string, args?: JsonValue, }; answer: JsonValue };
  list_routines: { args: Record<symbol, never>; answer: Array<RoutineOverview> };
  run_now: { args: { name: string, here?: boolean, }; answer: string };
  set_routine_paused: { args: { name: string, paused: boolean, }; answer: null };
  set_paused: { args: { paused: boolean, }; answer: null };
  list_runs: { args: { routine?: string, status?: string, cursor?: string, limit?: number, }; answer: Page };
  get_run: { args: { id: string, }; answer: RunDetail };
  runs_finished_since: { args: { from: string, limit?: number, }; answer: Array<RunRecord> };
  run_notice: { args: { id: string, }; answer: Notice | null };
  run_report: { args: { id: string, }; answer: string };
  read_log: { args: { id: string, stream?: LogStream, offset?: number, readable?: boolean, }; answer: LogChunk };
  cancel_run: { args: { id: string, }; answer: boolean };
  list_asks: { args: Record<symbol, never>; answer: Array<Ask> };
  answer_ask: { args: { run: string, allow: boolean, forRun?: boolean, }; answer: Ask };
  list_accounts: { args: Record<symbol, never>; answer: Array<AccountView> };
  list_secrets: { args: Record<symbol, never>; answer: Array<SecretView> };
  check_account: { args: { email: string, }; answer: AccountView };
  set_token: { args: { email: string, token: string, }; answer: null };
  set_account_options: { args: { email: string, reserve?: number, usageProbe: boolean, }; answer: null };
  relogin: { args: { email: string, }; answer: Relogin };
  list_hosts: { args: Record<symbol, never>; answer: Array<HostView> };
  check_host: { args: { host: string, }; answer: HostCheck };
  open_link: { args: { url: string, }; answer: null };
  routine_form: { args: Record<symbol, never>; answer: RoutineForm };
  check_routine_draft: { args: { draft: Draft, }; answer: DraftCheck };
  create_routine: { args: { draft: Draft, runNow?: boolean, }; answer: Created };
  routine_source: { args: { name: string, }; answer: RoutineSource };
  check_routine_text: { args: { name: string, text: string, }; answer: Array<Diagnostic> };
  save_routine_text: { args: { name: string, text: string, version: string, overwrite?: boolean, }; answer: RoutineSource };
  duplicate_routine: { args: { name: string, newName: string, }; answer: Written };
  rename_routine: { args: { name: string, newName: string, }; answer: Written };
  remove_routine: { args: { name: string, }; answer: Removed };
  check_new_routine_text: { args: { name: string, text: string, }; answer: Array<Diagnostic> };
  create_routine_text: { args: { name: string, text: string, }; answer: Written };
  move_routine: { args: { name: string, to: string, }; answer: Moved };
  removed_routines: { args: Record<symbol, never>; answer: Array<Removed> };
  restore_routine: { args: { id: string, }; answer: Written };
  open_routine_file: { args: { name: string, }; answer: null };
  list_folders: { args: { path?: string, }; answer: Folders };
  push_branch: { args: { id: string, }; answer: RunRecord };
  open_workspace: { args: { id: string, }; answer: null };
  routine_why: { args: { name: string, days?: number, }; answer: Why };
  routine_strips: { args: Record<symbol, never>; answer: { [key in string]: Array<Mark> } };
  usage_report: { args: { days?: number, by?: UsageBy, }; answer: UsageReport };
  disk_usage: { args: Record<symbol, never>; answer: Array<DiskUse> };
  usage_rows: { args: { by: UsageBy, since: string, }; answer: Array<UsageRow> };
  budgets: { args: Record<symbol, never>; answer: Array<BudgetState> };
}

/** What the window hears on its one event channel: the engine's events, and the app's own two —
 * `engine_state` (read the engine's state again) and `resync` (events were lost: read everything again);
 * with `home`, another home's (`[[homes]]`), relayed — and `home_state` when one comes or goes. */
export type WindowEvent = (EngineEvent | { type: "engine_state" } | { type: "resync" } | { type: "home_state", reachable: boolean }) & { home?: string };
