//! Versioned schema migrations, applied in order inside one transaction each; the version lives in
//! `PRAGMA user_version`. Never edit a released migration — add a new one.

pub const MIGRATIONS: &[&str] = &[
    // 1: run history.
    r#"
    CREATE TABLE runs (
        id            TEXT PRIMARY KEY,
        routine       TEXT NOT NULL,
        trigger       TEXT NOT NULL,
        agent         TEXT NOT NULL,
        -- the instant history sorts by (ms): the slot for missed/skipped rows, else creation time
        sort_ms       INTEGER NOT NULL,
        scheduled_for TEXT,
        started_at    TEXT,
        finished_at   TEXT,
        status        TEXT NOT NULL,
        reason        TEXT,
        message       TEXT,
        exit_code     INTEGER,
        account       TEXT,
        resets_at     TEXT,
        attempts      TEXT NOT NULL DEFAULT '[]',
        duration_ms   INTEGER,
        cost_usd      REAL,
        session_id    TEXT,
        report_path   TEXT,
        run_dir       TEXT NOT NULL,
        -- the run's process (its group leader) and its start time, to re-adopt it after a crash
        pid           INTEGER,
        pid_start     TEXT,
        -- the engine process that supervises the run; recovery only touches runs whose owner is gone
        owner_pid     INTEGER,
        owner_start   TEXT
    );
    CREATE INDEX runs_by_time    ON runs(sort_ms DESC, id DESC);
    CREATE INDEX runs_by_routine ON runs(routine, sort_ms DESC, id DESC);
    CREATE INDEX runs_by_status  ON runs(status, sort_ms DESC, id DESC);
    -- one record per scheduled slot: the scheduler claims a slot by inserting it
    CREATE UNIQUE INDEX runs_slot ON runs(routine, scheduled_for) WHERE scheduled_for IS NOT NULL;
    "#,
    // 2: scheduler state per routine (per machine: never written into the user's YAML).
    r#"
    CREATE TABLE routine_state (
        routine        TEXT PRIMARY KEY,
        -- when this engine first saw the routine: catch-up never reaches before it
        first_seen     TEXT NOT NULL,
        -- the scheduler has evaluated every slot up to here; slots after it were missed if the
        -- engine was not running
        checked_until  TEXT NOT NULL,
        paused         INTEGER NOT NULL DEFAULT 0,
        -- why: NULL when the user paused it, else e.g. the auto-pause reason
        paused_reason  TEXT,
        paused_at      TEXT
    );
    CREATE TABLE engine_state (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    "#,
    // 3: account health as runs and credentials showed it, with its history.
    r#"
    CREATE TABLE account_health (
        account    TEXT PRIMARY KEY,
        verdict    TEXT NOT NULL,
        evidence   TEXT NOT NULL,
        at         TEXT NOT NULL,
        resets_at  TEXT,
        run_id     TEXT
    );
    CREATE TABLE account_health_history (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        account    TEXT NOT NULL,
        verdict    TEXT NOT NULL,
        evidence   TEXT NOT NULL,
        at         TEXT NOT NULL,
        resets_at  TEXT,
        run_id     TEXT
    );
    CREATE INDEX account_health_history_by_account ON account_health_history(account, id DESC);
    "#,
    // 4: a run's finish notification is sent exactly once, even across crashes.
    r#"
    ALTER TABLE runs ADD COLUMN notified_at TEXT;
    "#,
    // 5: the durable run lifecycle. The queue is the `runs` table (status 'queued', in insertion
    // order); a run held by a sign-in failure remembers the run that made it up; finish
    // notifications (and later webhooks) are delivered from an outbox written in the same
    // transaction as the final row, so a crash between the two cannot lose or repeat one.
    r#"
    ALTER TABLE runs ADD COLUMN made_up_by TEXT;
    ALTER TABLE runs ADD COLUMN notified TEXT;
    CREATE INDEX runs_open ON runs(status, routine) WHERE status IN ('queued', 'running');
    CREATE TABLE outbox (
        run_id         TEXT NOT NULL,
        channel        TEXT NOT NULL,
        -- pending | delivered | not_delivered | summarized | not_needed
        state          TEXT NOT NULL DEFAULT 'pending',
        attempts       INTEGER NOT NULL DEFAULT 0,
        next_at_ms     INTEGER NOT NULL,
        -- a deliverer holds an entry while it sends (two notifiers never send one entry twice)
        lease_until_ms INTEGER,
        last_error     TEXT,
        finished_ms    INTEGER NOT NULL,
        delivered_at   TEXT,
        PRIMARY KEY (run_id, channel)
    );
    CREATE INDEX outbox_due ON outbox(state, next_at_ms) WHERE state = 'pending';
    "#,
    // 6: history filtered by routine *and* status stays an index lookup (newest first).
    r#"
    CREATE INDEX runs_by_routine_status ON runs(routine, status, sort_ms DESC, id DESC);
    "#,
    // 7: which routine each file names, as last read (file identity: modified time and size), so a
    // one-shot command (`run NAME`) parses only the file it runs and files that changed.
    r#"
    CREATE TABLE routine_files (
        path     TEXT PRIMARY KEY,
        mtime_ns INTEGER NOT NULL,
        size     INTEGER NOT NULL,
        name     TEXT NOT NULL
    );
    CREATE INDEX routine_files_by_name ON routine_files(name);
    "#,
    // 8: what a run changed in git (`changes`, JSON), and the worktree directory a settled run
    // still has (cleared once removed) — cleanup finds those through the partial index.
    r#"
    ALTER TABLE runs ADD COLUMN changes TEXT;
    ALTER TABLE runs ADD COLUMN worktree TEXT;
    CREATE INDEX runs_with_worktree ON runs(sort_ms) WHERE worktree IS NOT NULL;
    "#,
    // 9: what a run used, from the agent's own final event; NULL where the agent gave no figure.
    r#"
    ALTER TABLE runs ADD COLUMN input_tokens INTEGER;
    ALTER TABLE runs ADD COLUMN output_tokens INTEGER;
    ALTER TABLE runs ADD COLUMN cache_read_tokens INTEGER;
    ALTER TABLE runs ADD COLUMN cache_write_tokens INTEGER;
    ALTER TABLE runs ADD COLUMN model TEXT;
    "#,
    // 10: when retention removed a run's files (logs, report); the row itself is kept.
    r#"
    ALTER TABLE runs ADD COLUMN pruned_at TEXT;
    "#,
    // 11: evidence for "why did (or didn't) this slot run": when a scheduler was alive on this
    // machine (one row per stretch; `ended` = 'asleep' when the machine slept and the same process
    // went on in the next row, 'stopped' on a clean exit, NULL while running or when killed), and
    // what happened to routines over time (paused/resumed, invalid/valid, disabled/enabled); and
    // covering indexes for usage sums and for a routine's slots; runs retention has not pruned.
    r#"
    CREATE TABLE presence (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        device      TEXT NOT NULL,
        who         TEXT NOT NULL,
        pid         INTEGER NOT NULL,
        started_at  TEXT NOT NULL,
        last_seen   TEXT NOT NULL,
        ended       TEXT
    );
    CREATE INDEX presence_by_time ON presence(device, last_seen);
    CREATE TABLE routine_events (
        id       INTEGER PRIMARY KEY AUTOINCREMENT,
        -- '*' for the whole engine (pausing everything)
        routine  TEXT NOT NULL,
        at       TEXT NOT NULL,
        event    TEXT NOT NULL,
        detail   TEXT
    );
    CREATE INDEX routine_events_by_routine ON routine_events(routine, at);
    -- usage sums read this index alone (a window of it, in order), never the table's rows
    CREATE INDEX runs_usage ON runs(sort_ms, id, status, routine, account, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd);
    -- `why` reads a routine's slots in a window from this index alone
    CREATE INDEX runs_slot_facts ON runs(routine, scheduled_for, status, trigger, reason, duration_ms, id) WHERE scheduled_for IS NOT NULL;
    -- retention reads only the runs it has not pruned yet
    CREATE INDEX runs_unpruned ON runs(routine, sort_ms, id) WHERE pruned_at IS NULL;
    "#,
    // 12: the queue in dispatch order — each class (manual first) a range of this index in rowid
    // order, so a dispatch pass reads the head of the queue, not all of it sorted (a burst of
    // hundreds of queued runs made every pass sort them all)
    r#"
    CREATE INDEX runs_queue ON runs((trigger IN ('manual', 'cli'))) WHERE status = 'queued';
    "#,
    // 13: runs on other machines over SSH — the host a run went to, and where its process is
    // there (JSON: its directory, wrapper pid and process group) so the next engine can re-attach;
    // and each host's health as connecting to it showed (last seen, last error).
    r#"
    ALTER TABLE runs ADD COLUMN host TEXT;
    ALTER TABLE runs ADD COLUMN remote TEXT;
    CREATE TABLE host_health (
        host        TEXT PRIMARY KEY,
        checked_at  TEXT NOT NULL,
        last_seen   TEXT,
        last_error  TEXT
    );
    "#,
    // 14: a queued run that waits for a time — a retry's backoff, a rate limit's reset — is not
    // started before `not_before_ms` (NULL: as soon as a lane is free); `wait_for_limit`: a
    // manual run that was asked to wait out a limit (`run --wait-for-limit`). `retried`: the run
    // took more than one try (its `attempts` are not empty) — kept as a column so `why` finds
    // such slots in its index alone (SQLite reads an indexed expression from the table).
    r#"
    ALTER TABLE runs ADD COLUMN not_before_ms INTEGER;
    ALTER TABLE runs ADD COLUMN wait_for_limit INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
    UPDATE runs SET retried = 1 WHERE attempts <> '[]';
    DROP INDEX runs_slot_facts;
    CREATE INDEX runs_slot_facts ON runs(routine, scheduled_for, status, trigger, reason, duration_ms, id, retried) WHERE scheduled_for IS NOT NULL;
    "#,
    // 15: the names of the routines' secrets stored in the OS keychain (`nightshiftctl secrets
    // set`) — names and when they were set, never a value: the keychain cannot list its items.
    r#"
    CREATE TABLE secrets (
        name    TEXT PRIMARY KEY,
        set_at  TEXT NOT NULL
    );
    "#,
    // 16: each run's `denials`, the tool calls its agent was refused or could not make (JSON
    // `[{tool, input}]`, inputs masked and cut); `ignore_budget`: a manual run a person started
    // past a spent budget (`run --ignore-budget`).
    r#"
    ALTER TABLE runs ADD COLUMN denials TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE runs ADD COLUMN ignore_budget INTEGER NOT NULL DEFAULT 0;
    "#,
    // 17: each account's usage windows as its runs' agents reported them (Claude Code's
    // `unifiedWindows`: five_hour, seven_day, a model's weekly one), with history: one row per
    // window per report; the newest per window is the account's figure.
    r#"
    CREATE TABLE account_windows (
        account       TEXT NOT NULL,
        window        TEXT NOT NULL,
        used_percent  REAL NOT NULL,
        resets_at     TEXT,
        status        TEXT NOT NULL,
        seen_at       TEXT NOT NULL,
        run_id        TEXT
    );
    CREATE INDEX account_windows_latest ON account_windows(account, window, seen_at);
    "#,
    // 18: GitHub Copilot's premium requests per run (its billing unit, not dollars).
    r#"
    ALTER TABLE runs ADD COLUMN premium_requests REAL;
    "#,
    // 19: events from GitHub and Linear (`trigger:`). Each run an event fired carries it
    // (`event`, JSON); `event_runs` claims (routine, delivery) like a slot — one run per
    // delivery and routine, whichever receiver or engine saw it first; `deliveries` is what came
    // in and what became of it for each routine (`hooks list`); `linear_states` names the states
    // Linear's updates give only by id.
    r#"
    ALTER TABLE runs ADD COLUMN event TEXT;
    CREATE TABLE event_runs (
        routine   TEXT NOT NULL,
        source    TEXT NOT NULL,
        delivery  TEXT NOT NULL,
        run_id    TEXT NOT NULL,
        PRIMARY KEY (routine, source, delivery)
    );
    CREATE TABLE deliveries (
        source       TEXT NOT NULL,
        delivery     TEXT NOT NULL,
        name         TEXT NOT NULL,
        received_at  TEXT NOT NULL,
        received_ms  INTEGER NOT NULL,
        summary      TEXT NOT NULL,
        verdicts     TEXT NOT NULL DEFAULT '[]',
        times        INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (source, delivery)
    );
    CREATE INDEX deliveries_recent ON deliveries(received_ms);
    CREATE TABLE linear_states (
        id    TEXT PRIMARY KEY,
        name  TEXT NOT NULL
    );
    "#,
    // 20: GitHub polling (`[github] poll`). A claim also says which event it is across paths
    // (`identity`, and when it happened, `at_ms`): a webhook delivery and the Events API's entry
    // for one event have unrelated ids. `github_cursors` is each polled repository's place: the
    // newest entry taken and the ETag of the answer that had it (an unchanged answer costs no
    // rate limit).
    r#"
    ALTER TABLE event_runs ADD COLUMN identity TEXT;
    ALTER TABLE event_runs ADD COLUMN at_ms INTEGER;
    CREATE INDEX event_runs_identity ON event_runs(routine, source, identity);
    CREATE TABLE github_cursors (
        repo       TEXT PRIMARY KEY,
        last_id    INTEGER NOT NULL,
        etag       TEXT,
        polled_at  TEXT NOT NULL
    );
    "#,
    // 21: where a run can be seen on its host (a host on GitHub Actions: the workflow run's page).
    r#"
    ALTER TABLE runs ADD COLUMN remote_url TEXT;
    "#,
    // 22: `why` says where a slot's run ran: the host is in the slot index (NULL for nearly every
    // row), so the rows placed on one are found without reading the others.
    r#"
    DROP INDEX runs_slot_facts;
    CREATE INDEX runs_slot_facts ON runs(routine, scheduled_for, status, trigger, reason, duration_ms, id, retried, host) WHERE scheduled_for IS NOT NULL;
    "#,
    // 23: other homes this one views (`[[homes]]`): when each last answered, and the finish
    // notifications told of its runs — each run once per viewer, across sleeps and reconnects.
    r#"
    CREATE TABLE home_views (
        home       TEXT PRIMARY KEY,
        last_seen  TEXT,
        told_from  TEXT
    );
    CREATE TABLE home_told (
        home     TEXT NOT NULL,
        run_id   TEXT NOT NULL,
        told_at  TEXT NOT NULL,
        PRIMARY KEY (home, run_id)
    );
    "#,
    // 24: a manual run a person started on a machine its routine's `devices:` does not list
    // (`run --here`), recorded.
    r#"
    ALTER TABLE runs ADD COLUMN here INTEGER NOT NULL DEFAULT 0;
    "#,
    // 25: routines agents created through the MCP server, for `[mcp] max_created_per_day` (a
    // routine file removed afterwards still counted that day).
    r#"
    CREATE TABLE mcp_created (
        routine     TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        parent_run  TEXT
    );
    CREATE INDEX mcp_created_by_time ON mcp_created(created_ms);
    "#,
    // 26: `on_denial: ask` — a tool call held while the user is asked, and how it was answered.
    r#"
    CREATE TABLE asks (
        id           TEXT PRIMARY KEY,
        run_id       TEXT NOT NULL,
        routine      TEXT NOT NULL,
        tool         TEXT NOT NULL,
        input        TEXT NOT NULL,
        asked_at     TEXT NOT NULL,
        expires_at   TEXT NOT NULL,
        answer       TEXT,
        for_run      INTEGER NOT NULL DEFAULT 0,
        answered_at  TEXT,
        answered_by  TEXT
    );
    CREATE INDEX asks_open ON asks(run_id) WHERE answer IS NULL;
    "#,
    // 27: asks after a run — an agent that cannot hold a call (or a run whose engine stopped
    // while it waited) ends `blocked · needs_approval`; Approve reruns it with the call allowed.
    r#"
    ALTER TABLE asks ADD COLUMN held INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE asks ADD COLUMN rerun TEXT;
    CREATE INDEX asks_by_rerun ON asks(rerun) WHERE rerun IS NOT NULL;
    "#,
    // 28: pull requests (`push.pr`) — a run's, and the one each routine keeps open.
    r#"
    ALTER TABLE runs ADD COLUMN pull_request TEXT;
    CREATE TABLE routine_prs (
        routine    TEXT PRIMARY KEY,
        repo       TEXT NOT NULL,
        number     INTEGER NOT NULL,
        url        TEXT NOT NULL,
        branch     TEXT NOT NULL,
        opened_by  TEXT NOT NULL
    );
    "#,
];
