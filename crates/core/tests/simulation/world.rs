//! The simulated world around the real engine: one home, a clock only the simulation moves,
//! routines and a `nightshift.toml` whose files it edits, breaks and removes, stand-in agents (a
//! command, and a Claude CLI replaying the real one's recorded streams) whose outcomes it draws,
//! accounts it limits and revokes, receivers it takes down, and engines it starts, kills and
//! doubles.
//!
//! What is real: the engine (scheduler, queue, lanes, retries, settle, outbox, recovery), its
//! SQLite store, the run processes (each run is a real `/bin/sh` process tree under the engine's
//! wrapper), the webhook posts (HTTP over loopback). What is stood in for, and why that keeps it
//! honest:
//! - **a process's death** is the end of the tokio runtime its engine runs on: every task of it
//!   stops at its next await, and its run processes live on — as when the app is killed. Each
//!   engine's identity (pid, start time) is a real process of its own (a `sleep`) that lives
//!   exactly as long as the engine, so a live engine is seen alive by the others and a killed
//!   one's runs are orphans to the next, exactly as a killed process's are;
//! - **time** is a [`ManualClock`] only the simulation moves, so the decisions checked never read
//!   the wall clock; the run processes take real milliseconds, and every check waits until no run
//!   is open, so their pace decides nothing the invariants look at;
//! - **a suspend** is time passing without a pass (logind's signal is drilled with the real
//!   D-Bus in tests/awake.rs); **a clock step** is the clock set back or forward between passes.

use super::invariants::Broken;
use super::receivers::Receivers;
use super::rng::Rng;
use chrono::{DateTime, Duration, Utc};
use nightshift_core::events::EngineEvent;
use nightshift_core::{Engine, EngineOptions, ManualClock, RecoveryMode, Scheduler};
use nightshift_testkit::TestHome;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How long (real time) runs may take to settle after a pass before `settled` is broken.
const SETTLE_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

/// Schedules the routines are drawn from: daily, every two hours, several a day, weekdays, weekly, monthly, once a
/// year, a leap day, and the hours DST skips or repeats in Europe and America.
pub const SCHEDULES: &[&str] = &["0 9 * * *", "30 2 * * *", "0 */6 * * *", "15 1 * * 1-5", "0 3 * * 0", "0 12 1 * *", "0 0 1 1 *", "0 2 29 2 *", "45 23 * * *", "30 1 * * *", "20 */2 * * *"];
/// Zones with DST both ways, a half-hour DST (Lord Howe), none, and a half-hour offset.
pub const ZONES: &[&str] = &["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "America/Sao_Paulo"];
/// How often in a thousand draws the stand-in agent hangs (each hang costs its routine's
/// `timeout:`, 2 s, of real time).
const HANG_PER_MILLE: i64 = 8;
/// Retry policies drawn for a routine: short and long backoffs (at most 1h, doubling), whose tries
/// can reach past a two-hourly routine's next slot (that try is never made: the slot does the work).
pub const RETRIES: &[(u32, &str)] = &[(1, "5m"), (2, "20m"), (3, "1h")];
/// What the stand-in agent does, drawn per routine: exit codes, a crash mid-write (50 KB of output,
/// then SIGKILL), a lot of output.
pub const OUTCOMES: &[&str] = &["0", "0", "0", "0", "1", "3", "crash", "big"];
/// The Claude accounts of the home (their tokens come from the engine's environment).
pub const ACCOUNTS: &[&str] = &["a@sim.dev", "b@sim.dev"];
/// What an agent routine may take: one account pinned, or both as a failover pool.
pub const POOLS: &[&[&str]] = &[&["a@sim.dev"], &["b@sim.dev"], &["a@sim.dev", "b@sim.dev"]];
/// What the API answers an agent routine's try when its account is not at a limit: success, or
/// overloaded (529, tried again after a backoff) — replayed from the real CLI's recorded streams.
pub const AGENT_OUTCOMES: &[&str] = &["ok", "ok", "ok", "overloaded"];

/// A routine file as the simulation last wrote it.
#[derive(Clone, Debug, PartialEq)]
pub enum FileState {
    Live,
    Paused,
    Invalid,
    Removed,
}

#[derive(Clone, Debug)]
pub struct SimRoutine {
    pub name: String,
    pub expr: String,
    pub tz: chrono_tz::Tz,
    pub file: FileState,
    /// The clock at the first pass after its file last became live: slots after it are owed.
    pub live_since: Option<DateTime<Utc>>,
    /// Up to when its slots were checked by the oracle (the latest pass's time).
    pub covered_until: Option<DateTime<Utc>>,
    /// `retries:` and `retry_backoff:`, when its file sets them: a failed or timed-out try waits
    /// in the queue for its next (a command is tried again only when its routine asks).
    pub retry: Option<(u32, &'static str)>,
    /// When the simulation last edited its file.
    pub edited_at: Option<DateTime<Utc>>,
    /// An agent routine's accounts (`account:` one, or `accounts:` a failover pool), and its
    /// `max_wait:` for a limit's reset; `None`: a command.
    pub agent: Option<(&'static [&'static str], &'static str)>,
    /// `catchup:` when its file sets it (`false`, or a lateness bound): the slots it does not make
    /// up are `missed`, told once per stretch.
    pub catchup: Option<&'static str>,
}

impl SimRoutine {
    /// Whether its file was edited after `t` (what was decided under the file before is not held
    /// to the file now).
    pub fn edited_after(&self, t: DateTime<Utc>) -> bool {
        self.edited_at.is_some_and(|e| e >= t)
    }
}

/// `nightshift.toml` as the simulation last wrote it.
pub struct SettingsFile {
    pub max_parallel: u32,
    /// A bad edit left it unparsable.
    pub broken: bool,
}

/// One engine: its runtime (its "process"), the engine and its scheduler, and the real process
/// that stands for it to the others (its identity: see [`World::start_engine`]).
pub struct Incarnation {
    pub rt: tokio::runtime::Runtime,
    pub engine: Engine,
    pub sched: Arc<Scheduler>,
    alive: Identity,
}

/// The process that stands for an engine: ended when the engine is, or dropped.
struct Identity(std::process::Child);

impl Drop for Identity {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub struct World {
    pub rng: Rng,
    pub th: TestHome,
    pub sim_dir: PathBuf,
    pub clock: Arc<ManualClock>,
    pub engine: Option<Incarnation>,
    pub routines: Vec<SimRoutine>,
    /// How many engines were started (each its own identity).
    started: u32,
    /// Every `RunFinished` heard, by run id, from every engine.
    pub finished: Arc<Mutex<HashMap<String, u32>>>,
    /// A unique modification time for each file write (two writes within one kernel tick would
    /// otherwise look alike to a reader keyed on mtime and length).
    writes: u64,
    /// Where the notices and webhook posts go.
    pub receivers: Receivers,
    /// Accounts at a limit, and when it resets.
    pub limits: HashMap<String, DateTime<Utc>>,
    /// `nightshift.toml` as last written.
    pub settings_file: SettingsFile,
    /// How many times each account's login was revoked, and how many new logins there were.
    pub revocations: HashMap<String, u32>,
    logins: u32,
}

/// The stand-in agent: it says what it was told to do (the plan the simulation drew for its
/// routine) in the ledger before doing it, one line per try.
/// (The simulation's folder is written into it: runs get only an allow-listed environment.)
const AGENT: &str = r#"SIM_DIR="@SIM_DIR@"
plan=$(cat "$SIM_DIR/plan/$NIGHTSHIFT_ROUTINE" 2>/dev/null || echo 0)
echo "$NIGHTSHIFT_RUN_ID $plan" >> "$SIM_DIR/ledger"
case "$plan" in
  crash) head -c 50000 /dev/zero | tr "\0" y; kill -9 $$ ;;
  big) head -c 300000 /dev/zero | tr '\0' x; echo; exit 0 ;;
  hang) echo 0 > "$SIM_DIR/plan/$NIGHTSHIFT_ROUTINE"; exec sleep 60 ;;
  *) exit "$plan" ;;
esac"#;

/// The stand-in Claude Code: the real CLI's recorded stdout for what the simulation drew — an
/// account whose login was revoked answers as a logged-out CLI does (`sim/revoked/<a|b>`), one at
/// its limit the unified 429 with that limit's reset (`sim/limit/<token>`, the epoch written in),
/// else the routine's plan (success, or 529 overloaded). One ledger line per try.
const CLAUDE: &str = r#"SIM_DIR="@SIM_DIR@"; F="@FIXTURES@"
# Which account: its token, or (after a new login) its config folder.
case "$CLAUDE_CODE_OAUTH_TOKEN $CLAUDE_CONFIG_DIR" in *tok-a*|*a-at-sim.dev*) who=a ;; *tok-b*|*b-at-sim.dev*) who=b ;; *) who=none ;; esac
limit="$SIM_DIR/limit/tok-$who"
if [ -e "$SIM_DIR/revoked/$who" ]; then plan=logged-out-$who
elif [ -e "$limit" ]; then plan=limit
else plan=$(cat "$SIM_DIR/plan/$NIGHTSHIFT_ROUTINE" 2>/dev/null || echo ok); fi
echo "$NIGHTSHIFT_RUN_ID $plan" >> "$SIM_DIR/ledger"
case "$plan" in
  logged-out-*) cat "$F/logged-out.jsonl"; exit 1 ;;
  limit) sed "s/1796004000/$(cat "$limit")/g" "$F/unified.jsonl"; exit 1 ;;
  overloaded) cat "$F/529.jsonl"; exit 1 ;;
  *) cat "$F/success.jsonl" ;;
esac"#;
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-2.1.332");

/// The token of account `email` (as the engine's environment gives it): `tok-a` for `a@sim.dev`.
pub fn token_of(email: &str) -> String {
    format!("tok-{}", &email[..1])
}

impl World {
    pub fn new(seed: u64, routines: usize) -> World {
        let mut rng = Rng::new(seed);
        let th = TestHome::new();
        let sim_dir = th.path().join("sim");
        std::fs::create_dir_all(sim_dir.join("plan")).unwrap();
        std::fs::write(sim_dir.join("ledger"), "").unwrap();
        th.script("sim-agent", &AGENT.replace("@SIM_DIR@", &sim_dir.display().to_string()));
        th.script("claude", &CLAUDE.replace("@SIM_DIR@", &sim_dir.display().to_string()).replace("@FIXTURES@", FIXTURES));
        std::fs::create_dir_all(sim_dir.join("limit")).unwrap();
        std::fs::create_dir_all(sim_dir.join("revoked")).unwrap();
        // A start somewhere in 2027–2030 (a leap year among them), at a drawn minute.
        let start = DateTime::parse_from_rfc3339("2027-01-01T00:00:00Z").unwrap().with_timezone(&Utc) + Duration::minutes(rng.between(0, 4 * 365 * 24 * 60));
        let clock = Arc::new(ManualClock::new(start));
        let routines = (0..routines)
            .map(|i| SimRoutine {
                name: format!("r{i:02}"),
                expr: rng.pick(SCHEDULES).to_string(),
                tz: rng.pick(ZONES).parse().unwrap(),
                file: FileState::Live,
                live_since: None,
                covered_until: None,
                retry: rng.chance(40).then(|| *rng.pick(RETRIES)),
                edited_at: None,
                catchup: rng.chance(25).then(|| *rng.pick(&["false", "3h"])),
                agent: rng.chance(40).then(|| (*rng.pick(POOLS), *rng.pick(&["1h", "6h"]))),
            })
            .collect();
        let receivers = Receivers::start();
        let mut world = World { rng, th, sim_dir, clock, engine: None, routines, started: 0, finished: Default::default(), writes: 0, receivers, limits: HashMap::new(), settings_file: SettingsFile { max_parallel: 8, broken: false }, revocations: HashMap::new(), logins: 0 };
        world.write_settings();
        for i in 0..world.routines.len() {
            world.write_routine(i);
            world.draw_plan(i);
        }
        world
    }

    pub fn now(&self) -> DateTime<Utc> {
        nightshift_core::Clock::now(&*self.clock)
    }

    /// A routine drawn from the seed.
    pub fn any_routine(&mut self) -> usize {
        self.rng.between(0, self.routines.len() as i64 - 1) as usize
    }

    /// Start an engine on the home, as the app or the daemon does: open, adopt what a dead one
    /// left, then its scheduler.
    pub fn start_engine(&mut self) -> Result<Incarnation, Broken> {
        self.started += 1;
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        // A bad edit of nightshift.toml stops a start, saying where (`bad_settings_located`);
        // the user fixes it and starts again.
        if self.settings_file.broken {
            match rt.block_on(async { Engine::open(self.options()) }) {
                Err(e) if e.message.contains("nightshift.toml:") => {}
                Err(e) => return Err(Broken { invariant: "bad_settings_located", detail: format!("a start on a broken nightshift.toml said {:?}: {}", e.code, e.message) }),
                Ok(_) => return Err(Broken { invariant: "bad_settings_located", detail: "an engine started on a broken nightshift.toml".into() }),
            }
            self.settings_file.broken = false;
            self.write_settings();
        }
        // Its identity is a real process of its own (a `sleep`), alive exactly as long as this
        // engine: the others see it alive while it is — sharing this test's pid, two live engines
        // took each other for dead and adopted each other's runs — and dead once it is killed.
        let alive = std::process::Command::new("sleep").arg("1000000").spawn().expect("a process to stand for the engine");
        let start = nightshift_core::runner::process::process_start_time(alive.id()).expect("its start time");
        let mut opts = self.options();
        opts.identity = (alive.id(), start);
        let alive = Identity(alive);
        let engine = rt.block_on(async { opts.open() });
        let finished = Arc::clone(&self.finished);
        let mut events = engine.subscribe();
        rt.spawn(async move {
            while let Ok(event) = events.recv().await {
                if let EngineEvent::RunFinished { run } = event {
                    *finished.lock().unwrap().entry(run.id.clone()).or_default() += 1;
                }
            }
        });
        rt.block_on(engine.recover(RecoveryMode::Adopt)).unwrap();
        let sched = rt.block_on(async { Scheduler::new(engine.clone()) });
        Ok(Incarnation { rt, engine, sched, alive })
    }

    /// The next engine's options: the simulation's clock, the stand-ins first on its PATH, the
    /// accounts' tokens in its environment, an identity of its own.
    fn options(&self) -> EngineOptions {
        let mut opts = EngineOptions::for_test(self.th.path()).clock(self.clock.clone()).path_first(&self.th.bin_dir());
        for a in ACCOUNTS {
            opts = opts.env(&format!("CLAUDE_CODE_OAUTH_TOKEN_{}", a.to_uppercase().replace('@', "_AT_").replace('.', "_DOT_")), &token_of(a));
        }
        opts
    }

    /// Write `nightshift.toml` as `settings_file` says: its webhook and accounts, `max_parallel`,
    /// and — after a bad edit — an array never closed (a located parse error).
    pub fn write_settings(&mut self) {
        let f = &self.settings_file;
        let text = format!(
            "kill_grace_secs = 1\nmax_parallel = {}\n[[webhooks]]\nname = \"sim\"\nurl = \"{}\"\n{}{}",
            f.max_parallel,
            self.receivers.hook.url(),
            ACCOUNTS.iter().map(|a| format!("[[accounts]]\nemail = \"{a}\"\n")).collect::<String>(),
            if f.broken { "[[accounts]]\nemail = [\"never closed\"\n" } else { "" }
        );
        let path = self.th.path().join("nightshift.toml");
        std::fs::write(&path, text).unwrap();
        self.stamp(&path);
    }

    /// Give the file just written a modification time of its own (two writes within one kernel
    /// tick would otherwise look alike to a reader keyed on mtime and length).
    fn stamp(&mut self, path: &std::path::Path) {
        self.writes += 1;
        let mtime = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000 + self.writes);
        std::fs::File::options().write(true).open(path).unwrap().set_modified(mtime).unwrap();
    }

    /// An orderly stop (the app quitting), with no run open.
    pub fn stop(incarnation: Incarnation) {
        let Incarnation { rt, engine, sched, alive } = incarnation;
        drop(sched);
        drop(engine);
        rt.shutdown_timeout(std::time::Duration::from_secs(5));
        drop(alive);
    }

    /// The engine dies: every task stops at its next await; its run processes go on. A blocking
    /// call already in flight (a store write on tokio's blocking pool) is let finish first — a
    /// thread the runtime cannot stop would otherwise go on writing for a "dead" engine, which no
    /// killed process does; dying right after such a call is a moment a real kill can land on too.
    pub fn kill(incarnation: Incarnation) {
        let Incarnation { rt, engine, sched, alive } = incarnation;
        // Not dropped in an orderly way: forgotten, as a killed process's memory is.
        std::mem::forget(sched);
        std::mem::forget(engine);
        rt.shutdown_timeout(std::time::Duration::from_secs(10));
        drop(alive);
    }

    /// Wait until no run of the home is running or due to start (`settled`) — a run waiting for
    /// a retry's time stays queued until a pass at or after it — adopting the runs of engines
    /// that are gone meanwhile, as the scheduler's loop does while others' runs are open (it looks
    /// every second; here every 100 ms). The bound is real time and generous — a run here is a
    /// shell printing a line, or one timed out after 2 s — so only a run nobody will ever start or
    /// settle reaches it.
    pub fn settle(&self, incarnation: &Incarnation) -> Result<(), Broken> {
        let deadline = std::time::Instant::now() + SETTLE_WITHIN;
        let mut adopted_at = std::time::Instant::now();
        let db = rusqlite::Connection::open_with_flags(self.db_path(), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        db.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        let now_ms = self.now().timestamp_millis();
        loop {
            let open: (i64, i64) = db
                .query_row(
                    "SELECT COUNT(*) FILTER (WHERE status = 'running'), COUNT(*) FILTER (WHERE status = 'queued' AND COALESCE(not_before_ms, 0) <= ?1) FROM runs WHERE status IN ('queued', 'running')",
                    [now_ms],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            if open == (0, 0) {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                return Err(Broken { invariant: "settled", detail: format!("{} running and {} queued runs due {SETTLE_WITHIN:?} after the pass", open.0, open.1) });
            }
            if adopted_at.elapsed() > std::time::Duration::from_millis(100) {
                incarnation.rt.block_on(incarnation.engine.recover(RecoveryMode::Adopt)).expect("adopting");
                adopted_at = std::time::Instant::now();
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    fn path(&self, i: usize) -> PathBuf {
        self.th.path().join("routines").join(format!("{}.yaml", self.routines[i].name))
    }

    /// Write routine `i`'s file as its state says (or remove it), with a modification time of
    /// its own.
    pub fn write_routine(&mut self, i: usize) {
        let r = &self.routines[i];
        let path = self.path(i);
        // Every run and every quiet slot owes a notice and a post.
        let retry = r.retry.map(|(n, backoff)| format!("retries: {n}\nretry_backoff: {backoff}\n")).unwrap_or_default() + "webhooks: [sim]\nnotify_missed: true\n" + &r.catchup.map(|c| format!("catchup: {c}\n")).unwrap_or_default();
        let what = match r.agent {
            None => "command: sim-agent\n".to_string(),
            Some(([one], max_wait)) => format!("agent: claude\nprompt: go\naccount: {one}\nmax_wait: {max_wait}\n"),
            Some((pool, max_wait)) => format!("agent: claude\nprompt: go\naccounts: [{}]\nmax_wait: {max_wait}\n", pool.join(", ")),
        };
        let body = match r.file {
            FileState::Removed => {
                let _ = std::fs::remove_file(&path);
                return;
            }
            FileState::Invalid => format!("schedule: \"99 {}\"\ntimezone: {}\n{what}notify: always\ntimeout: 2s\n", r.expr, r.tz),
            FileState::Paused => format!("enabled: false\nschedule: \"{}\"\ntimezone: {}\n{what}notify: always\ntimeout: 2s\n", r.expr, r.tz),
            FileState::Live => format!("schedule: \"{}\"\ntimezone: {}\n{what}notify: always\ntimeout: 2s\n", r.expr, r.tz),
        };
        std::fs::write(&path, body + &retry).unwrap();
        self.stamp(&path);
    }

    /// Draw what routine `i`'s stand-in agent does on its next run. Rarely it hangs (once: it
    /// puts its plan back to 0), and its routine's `timeout:` ends it — in real time, so seldom.
    pub fn draw_plan(&mut self, i: usize) {
        let plan = if self.routines[i].agent.is_some() {
            *self.rng.pick(AGENT_OUTCOMES)
        } else if self.rng.between(0, 999) < HANG_PER_MILLE {
            "hang"
        } else {
            *self.rng.pick(OUTCOMES)
        };
        std::fs::write(self.sim_dir.join("plan").join(&self.routines[i].name), plan).unwrap();
    }

    /// Account `email` meets its five-hour limit, which resets at `reset`: every try on it is
    /// answered the unified 429 with that reset until the simulation's clock passes it.
    pub fn limit_account(&mut self, email: &str, reset: DateTime<Utc>) {
        std::fs::write(self.sim_dir.join("limit").join(token_of(email)), reset.timestamp().to_string()).unwrap();
        self.limits.insert(email.to_string(), reset);
    }

    /// Account `email`'s login is revoked (a password change, a session ended elsewhere): every
    /// try on it is answered as a logged-out CLI's.
    pub fn revoke(&mut self, email: &str) {
        std::fs::write(self.sim_dir.join("revoked").join(&email[..1]), "").unwrap();
        *self.revocations.entry(email.to_string()).or_default() += 1;
    }

    /// A new login of account `email` (`claude /login` writes its credentials file): it works
    /// again, and the engine makes up the runs its sign-in held.
    pub fn log_in(&mut self, email: &str) {
        let _ = std::fs::remove_file(self.sim_dir.join("revoked").join(&email[..1]));
        self.logins += 1;
        let dir = self.th.path().join("accounts/claude").join(email.replace('@', "-at-"));
        std::fs::create_dir_all(&dir).unwrap();
        let login = format!(r#"{{"claudeAiOauth":{{"accessToken":"fresh-login-{:04}","refreshToken":"r","expiresAt":99999999999999,"scopes":["user:inference"]}}}}"#, self.logins);
        std::fs::write(dir.join(".credentials.json"), login).unwrap();
    }

    pub fn is_revoked(&self, email: &str) -> bool {
        self.sim_dir.join("revoked").join(&email[..1]).exists()
    }

    /// Limits whose reset the clock has passed are gone.
    pub fn lift_limits(&mut self) -> Vec<String> {
        let now = self.now();
        let over: Vec<String> = self.limits.iter().filter(|(_, reset)| **reset <= now).map(|(a, _)| a.clone()).collect();
        for a in &over {
            let _ = std::fs::remove_file(self.sim_dir.join("limit").join(token_of(a)));
            self.limits.remove(a);
        }
        over
    }

    /// The ledger's whole lines after byte `offset`: (run id, what the agent did), in the order
    /// the tries wrote them, and the offset after the last whole line.
    pub fn ledger_after(&self, offset: u64) -> (Vec<(String, String)>, u64) {
        use std::io::{Read, Seek};
        let mut file = std::fs::File::open(self.sim_dir.join("ledger")).unwrap();
        file.seek(std::io::SeekFrom::Start(offset)).unwrap();
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        let whole = text.rfind('\n').map_or(0, |i| i + 1);
        let lines = text[..whole].lines().filter_map(|l| l.split_once(' ').map(|(id, plan)| (id.to_string(), plan.to_string()))).collect();
        (lines, offset + whole as u64)
    }

    pub fn db_path(&self) -> PathBuf {
        nightshift_core::Home::at(self.th.path()).db_path()
    }
}
