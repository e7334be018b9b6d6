//! A year of nights in a couple of minutes: a seeded simulation that drives the real engine — its
//! scheduler, queue, lanes, retries, holds, settle, outbox and recovery, its SQLite store, real run
//! processes — through clock jumps and steps back, suspends, DST in six zones, engines killed
//! mid-run and restarted, two engines on one home, routine files and `nightshift.toml` edited and
//! broken, Claude accounts at their limits and revoked, receivers down and the database locked,
//! checking every promise in `invariants` and `deliveries` after each step.
//!
//! A failure prints its seed, its step and the promise, with the steps that led there; the same
//! seed replays the same steps (`scripts/simulate.sh --seed N --days D`). CI runs the seeds below;
//! `scripts/simulate.sh` runs new ones for as long as asked and prints simulated days per second.

mod deliveries;
mod invariants;
mod receivers;
mod rng;
mod world;

use chrono::Duration;
use deliveries::Deliveries;
use invariants::{Broken, Checker};
use world::{FileState, Incarnation, World, SCHEDULES, ZONES};

/// The seeds CI runs, and the simulated days each: together more than a year of a 50-routine home.
const CI_SEEDS: &[(u64, i64)] = &[(1, 130), (2, 130), (3, 130)];
const ROUTINES: usize = 50;

#[test]
fn a_year_of_nights_under_faults_keeps_every_promise() {
    let mut total = 0;
    for &(seed, days) in CI_SEEDS {
        let report = simulate(seed, days, ROUTINES).unwrap_or_else(|failure| panic!("{failure}"));
        println!("{report}");
        total += days;
    }
    assert!(total >= 365, "the seeds cover a year");
}

/// `scripts/simulate.sh`: `SIM_SEED` (default: drawn from the time), `SIM_DAYS` (default 365),
/// `SIM_ROUTINES` (default 50).
#[test]
#[ignore = "run by scripts/simulate.sh"]
fn explore() {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let seed = env("SIM_SEED").unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 % 1_000_000);
    let days = env("SIM_DAYS").unwrap_or(365) as i64;
    let routines = env("SIM_ROUTINES").unwrap_or(ROUTINES as u64) as usize;
    match simulate(seed, days, routines) {
        Ok(report) => println!("{report}"),
        Err(failure) => panic!("{failure}"),
    }
}

/// What a seed's simulation did.
struct Report {
    seed: u64,
    days: i64,
    steps: u64,
    runs: usize,
    /// Of those, how many hung until their timeout, and how many killed themselves; tries of the
    /// stand-in Claude that met a limit, or an overloaded API.
    hung: usize,
    crashed: usize,
    limited: usize,
    overloaded: usize,
    rows: usize,
    /// Notices the stand-in notification server showed, posts the webhook receiver accepted.
    shown: usize,
    posted: usize,
    locked_out: usize,
    seconds: f64,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "seed {}: {} simulated days in {} steps, {} runs of the stand-in agent ({} hung until their timeout, {} killed themselves; {} Claude tries met a limit, {} an overloaded API), {} slot records, {} notices shown, {} webhook posts accepted, {} passes failed on a locked database; {:.1} s, {:.1} simulated days per second",
            self.seed,
            self.days,
            self.steps,
            self.runs,
            self.hung,
            self.crashed,
            self.limited,
            self.overloaded,
            self.rows,
            self.shown,
            self.posted,
            self.locked_out,
            self.seconds,
            self.days as f64 / self.seconds
        )
    }
}

fn simulate(seed: u64, days: i64, routines: usize) -> Result<Report, String> {
    let began = std::time::Instant::now();
    let mut sim = Sim::new(seed, routines);
    let end = sim.world.now() + Duration::days(days);
    let result = (|| {
        sim.pass()?;
        while sim.world.now() < end {
            sim.step()?;
        }
        Ok::<(), Broken>(())
    })();
    let (sim_steps, trail) = (sim.steps, sim.trail.clone());
    if let Err(b) = result {
        // The home stays for a look (its database, run folders, the agent's ledger in sim/).
        let home = sim.world.th.path().display().to_string();
        if let Some(engine) = sim.world.engine.take() {
            World::kill(engine);
        }
        std::mem::forget(sim);
        return Err(format!(
            "the simulation broke `{}` at step {} (seed {seed}): {}\nthe last steps:\n  {}\nthe home is kept at {home}\nreplay: scripts/simulate.sh --seed {seed} --days {days} --routines {routines}",
            b.invariant,
            sim_steps,
            b.detail,
            trail.join("\n  ")
        ));
    }
    let rows = sim.checker.rows_seen as usize;
    let runs = sim.checker.agent_did.len();
    let did = |what: &str| sim.checker.agent_did.values().filter(|d| *d == what).count();
    let (hung, crashed, limited, overloaded) = (did("hang"), did("crash"), did("limit"), did("overloaded"));
    if let Some(engine) = sim.world.engine.take() {
        World::stop(engine);
    }
    let (shown, posted) = (sim.world.receivers.desktop.shown(), sim.world.receivers.hook.accepted().len());
    Ok(Report { seed, days, steps: sim.steps, runs, hung, crashed, limited, overloaded, rows, shown, posted, locked_out: sim.locked_out, seconds: began.elapsed().as_secs_f64() })
}

struct Sim {
    world: World,
    checker: Checker,
    deliveries: Deliveries,
    steps: u64,
    /// Passes that met the database locked past the busy timeout (and failed, saying so).
    locked_out: usize,
    /// The last steps, said in words, for a failure's report.
    trail: Vec<String>,
}

impl Sim {
    fn new(seed: u64, routines: usize) -> Sim {
        let mut world = World::new(seed, routines);
        let engine = world.start_engine().unwrap_or_else(|b| panic!("{}: {}", b.invariant, b.detail));
        world.engine = Some(engine);
        let checker = Checker::new(&world);
        let deliveries = Deliveries::new(&world);
        Sim { world, checker, deliveries, steps: 0, locked_out: 0, trail: Vec::new() }
    }

    fn say(&mut self, what: String) {
        self.trail.push(format!("{} {}: {what}", self.steps, self.world.now().format("%Y-%m-%d %H:%M")));
        if self.trail.len() > 12 {
            self.trail.remove(0);
        }
    }

    fn engine(&self) -> &Incarnation {
        self.world.engine.as_ref().expect("an engine is up between steps")
    }

    /// One step of the world, drawn from the seed, then every check.
    fn step(&mut self) -> Result<(), Broken> {
        self.steps += 1;
        if self.world.receivers.count_down() {
            self.say("the notification server and the webhook receiver are back".into());
        }
        for account in self.world.lift_limits() {
            self.say(format!("{account}'s limit has reset"));
        }
        let w = &mut self.world;
        for _ in 0..3 {
            let i = w.any_routine();
            w.draw_plan(i);
        }
        let roll = w.rng.between(0, 99);
        match roll {
            0..=59 => {
                let minutes = w.rng.between(1, 180);
                self.advance(Duration::minutes(minutes), format!("{minutes} min pass"));
                self.pass()?;
            }
            60..=67 => {
                let hours = w.rng.between(2, 36);
                self.advance(Duration::hours(hours), format!("asleep {hours} h, then a pass"));
                self.pass()?;
            }
            68..=71 => {
                let back = *w.rng.pick(&[30, 60, 60, 120]);
                self.advance(Duration::minutes(-back), format!("the clock set back {back} min"));
                self.pass()?;
            }
            72..=78 => self.downtime()?,
            79..=83 => self.killed_mid_run()?,
            84..=88 => self.two_engines()?,
            89..=90 => self.pause_or_resume(),
            91 => self.locked_pass()?,
            92..=93 => self.receivers_down(),
            94..=95 => self.limit_reached(),
            96 => self.revoked_or_logged_in(),
            97 => self.settings_edited()?,
            _ => self.edit(),
        }
        self.checker.after_step(&self.world)
    }

    fn advance(&mut self, by: Duration, what: String) {
        self.world.clock.set(self.world.now() + by);
        self.say(what);
    }

    /// A pass of the running engine, as its loop makes one: the scheduler's tick, then adopting
    /// what dead engines left; then the runs settle and the slots are checked.
    fn pass(&mut self) -> Result<(), Broken> {
        let e = self.engine();
        let report = e.rt.block_on(e.sched.tick()).expect("a pass");
        e.rt.block_on(e.engine.recover(nightshift_core::RecoveryMode::Adopt)).expect("adopting");
        let t = self.world.now();
        self.checker.fired(&report.fired, t)?;
        self.world.settle(self.engine())?;
        self.deliver(None)?;
        self.checker.after_pass(&mut self.world.routines, t)?;
        self.why_some()
    }

    /// What the outbox owes, delivered by the running engine and `also` at once (two deliverers
    /// on one home share it by leases), then checked against what the receivers took.
    fn deliver(&mut self, also: Option<&Incarnation>) -> Result<(), Broken> {
        let engines: Vec<&Incarnation> = self.world.engine.iter().chain(also).collect();
        let desktop = std::sync::Arc::clone(&self.world.receivers.desktop);
        let tasks: Vec<_> = engines
            .iter()
            .map(|e| {
                let (engine, desktop) = (e.engine.clone(), std::sync::Arc::clone(&desktop));
                e.rt.spawn(async move {
                    engine.deliver_notifications_now(desktop).await;
                    engine.deliver_webhooks_now(std::time::Duration::from_secs(60)).await;
                })
            })
            .collect();
        for (task, e) in tasks.into_iter().zip(&engines) {
            e.rt.block_on(task).expect("a delivery pass");
        }
        self.deliveries.after_delivery(&self.world, self.world.now())
    }

    /// `why` for two routines drawn from the seed (every routine, over a simulated year).
    fn why_some(&mut self) -> Result<(), Broken> {
        for _ in 0..2 {
            let i = self.world.any_routine();
            let r = self.world.routines[i].clone();
            // (A removed file has no `why`; a broken one's schedule cannot be read — why says so.)
            if matches!(r.file, FileState::Live | FileState::Paused) {
                let e = self.world.engine.as_ref().expect("an engine is up");
                self.checker.why_explains(&e.engine, &r)?;
            }
        }
        Ok(())
    }

    /// The engine stops (killed or quit), time passes — sometimes past the look-back — and a new
    /// one starts and makes its first pass.
    fn downtime(&mut self) -> Result<(), Broken> {
        let w = &mut self.world;
        let killed = w.rng.chance(50);
        let hours = if w.rng.chance(25) { w.rng.between(7 * 24, 12 * 24) } else { w.rng.between(1, 72) };
        let engine = w.engine.take().unwrap();
        if killed {
            World::kill(engine);
        } else {
            World::stop(engine);
        }
        self.advance(Duration::hours(hours), format!("the engine {} for {hours} h, then started again", if killed { "killed" } else { "quit" }));
        let engine = self.world.start_engine()?;
        self.world.engine = Some(engine);
        self.pass()
    }

    /// A pass claims and starts runs, and the engine is killed before they end; the next engine
    /// adopts them (and what it had queued).
    fn killed_mid_run(&mut self) -> Result<(), Broken> {
        let minutes = self.world.rng.between(1, 600);
        self.advance(Duration::minutes(minutes), format!("{minutes} min, a pass, the engine killed with its runs going"));
        let engine = self.world.engine.take().unwrap();
        let report = engine.rt.block_on(engine.sched.tick()).expect("a pass");
        self.checker.fired(&report.fired, self.world.now())?;
        World::kill(engine);
        let engine = self.world.start_engine()?;
        self.world.engine = Some(engine);
        self.world.settle(self.engine())?;
        self.deliver(None)?;
        let t = self.world.now();
        self.checker.after_pass(&mut self.world.routines, t)?;
        self.pass()
    }

    /// Another program holds the database locked (`BEGIN EXCLUSIVE`) while the engine passes:
    /// for up to 1.5 s, or past the store's 10-second busy timeout (each of the pass's writes
    /// waits its own 10 s, so an 11-second lock is waited out too). A pass that does fail on a
    /// lock must say so (`locked_said`), and the next pass makes up what it could not do — seen
    /// with 35-second locks, which cost too much real time for CI's seeds.
    fn locked_pass(&mut self) -> Result<(), Broken> {
        let w = &mut self.world;
        let minutes = w.rng.between(1, 180);
        let hold = std::time::Duration::from_millis(if w.rng.chance(15) { 11_000 } else { w.rng.between(20, 1500) as u64 });
        self.advance(Duration::minutes(minutes), format!("{minutes} min, a pass while another program holds the database locked for {hold:?}"));
        let (db, (locked, unlock)) = (self.world.db_path(), std::sync::mpsc::channel());
        let holder = std::thread::spawn(move || {
            let conn = rusqlite::Connection::open(db).unwrap();
            conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
            locked.send(()).unwrap();
            std::thread::sleep(hold);
            conn.execute_batch("COMMIT").unwrap();
        });
        unlock.recv().unwrap();
        let e = self.engine();
        let passed = e.rt.block_on(e.sched.tick());
        holder.join().unwrap();
        match passed {
            Ok(report) => {
                self.checker.fired(&report.fired, self.world.now())?;
                e.rt.block_on(e.engine.recover(nightshift_core::RecoveryMode::Adopt)).expect("adopting");
                self.world.settle(self.engine())?;
                self.deliver(None)?;
                let t = self.world.now();
                self.checker.after_pass(&mut self.world.routines, t)
            }
            Err(err) if err.message.contains("locked") || err.message.contains("busy") => {
                self.locked_out += 1;
                self.say(format!("the pass failed: {}", err.message));
                self.world.settle(self.engine())
            }
            Err(err) => invariants::broken("locked_said", format!("a pass that met a locked database failed with {:?}: {}", err.code, err.message)),
        }
    }

    /// A second engine on the same home (a daemon beside the app): both pass at the same instant.
    fn two_engines(&mut self) -> Result<(), Broken> {
        let minutes = self.world.rng.between(1, 240);
        self.advance(Duration::minutes(minutes), format!("{minutes} min, two engines pass at once"));
        let second = self.world.start_engine()?;
        let first = self.engine();
        let (a, b) = (first.sched.clone(), second.sched.clone());
        let ha = first.rt.spawn(async move { a.tick().await });
        let hb = second.rt.spawn(async move { b.tick().await });
        let ra = first.rt.block_on(ha).unwrap().expect("a pass");
        let rb = second.rt.block_on(hb).unwrap().expect("a pass");
        let both: Vec<_> = ra.fired.into_iter().chain(rb.fired).collect();
        self.checker.fired(&both, self.world.now())?;
        self.world.settle(&second)?;
        self.world.settle(self.engine())?;
        self.deliver(Some(&second))?;
        if self.world.rng.chance(50) {
            World::kill(second);
        } else {
            World::stop(second);
        }
        let t = self.world.now();
        self.checker.after_pass(&mut self.world.routines, t)
    }

    /// The user resumes every paused routine (the engine pauses one after failures in a row), or
    /// pauses one.
    fn pause_or_resume(&mut self) {
        let w = &mut self.world;
        let i = w.any_routine();
        let name = w.routines[i].name.clone();
        if w.rng.chance(70) {
            let e = self.engine();
            let resumed = self.world.routines.iter().filter(|r| r.file == FileState::Live && e.engine.set_routine_paused(&r.name, false).is_ok()).count();
            self.say(format!("the user resumes every routine ({resumed} live)"));
        } else {
            let done = self.engine().engine.set_routine_paused(&name, true);
            self.say(format!("the user pauses {name}: {}", if done.is_ok() { "paused" } else { "refused" }));
        }
    }

    /// The notification server or the webhook receiver goes down (refusing, or answering 503s,
    /// or dropping connections) for one to eight steps — minutes to days.
    fn receivers_down(&mut self) {
        let w = &mut self.world;
        if w.receivers.down_for > 0 {
            return;
        }
        w.receivers.down_for = w.rng.between(1, 8) as u32;
        let steps = w.receivers.down_for;
        if w.rng.chance(50) {
            w.receivers.set_desktop_down(true);
            self.say(format!("the notification server goes down for {steps} steps"));
        } else {
            let answer = if w.rng.chance(50) { nightshift_testkit::Answer::Status(503) } else { nightshift_testkit::Answer::Close };
            self.say(format!("the webhook receiver goes down for {steps} steps ({answer:?})"));
            self.world.receivers.set_hook_down(Some(answer));
        }
    }

    /// A Claude account meets its five-hour limit, resetting in 20 minutes to 16 hours: its runs
    /// fail over to the other account of their pool, or wait for the reset within `max_wait` and
    /// before their next slot, or end `rate_limited`.
    fn limit_reached(&mut self) {
        let w = &mut self.world;
        let account = *w.rng.pick(world::ACCOUNTS);
        let reset = w.now() + Duration::minutes(w.rng.between(20, 16 * 60));
        w.limit_account(account, reset);
        self.say(format!("{account} meets its limit, which resets at {reset}"));
    }

    /// A Claude account's login is revoked — or, when one is, a new login brings it back.
    fn revoked_or_logged_in(&mut self) {
        let w = &mut self.world;
        let account = *w.rng.pick(world::ACCOUNTS);
        if w.is_revoked(account) {
            w.log_in(account);
            self.say(format!("{account} logs in again"));
        } else {
            w.revoke(account);
            self.say(format!("{account}'s login is revoked"));
        }
    }

    /// `nightshift.toml` edited: `max_parallel` changed (1, 2 or 8 lanes), or broken by a bad
    /// edit, or fixed. The engine reads it at once, as its file watch makes it: a broken file keeps
    /// the last good settings and is one of the home's problems, saying where
    /// (`bad_settings_located`); an engine started meanwhile refuses to, saying where.
    fn settings_edited(&mut self) -> Result<(), Broken> {
        let w = &mut self.world;
        let f = &mut w.settings_file;
        let what = if f.broken || w.rng.chance(30) {
            f.broken = !f.broken;
            if f.broken { "broken by a bad edit".to_string() } else { "fixed".to_string() }
        } else {
            f.max_parallel = *w.rng.pick(&[1, 2, 8]);
            format!("max_parallel = {}", f.max_parallel)
        };
        let broken = f.broken;
        w.write_settings();
        self.say(format!("nightshift.toml edited: {what}"));
        let e = self.engine();
        e.sched.settings_changed();
        let problems = e.engine.problems();
        let said = problems.iter().find(|p| p.contains("nightshift.toml:") && p.contains("the previous settings stay in effect"));
        match (broken, said) {
            (true, None) => invariants::broken("bad_settings_located", format!("nightshift.toml is broken and the problems say {problems:?}")),
            (false, Some(p)) => invariants::broken("bad_settings_located", format!("nightshift.toml is fixed and the problems still say {p}")),
            _ => Ok(()),
        }
    }

    /// A routine's file edited: a new schedule or zone, paused, broken, removed, or back to live.
    fn edit(&mut self) {
        let now = self.world.now();
        let w = &mut self.world;
        let i = w.any_routine();
        let to = match w.rng.between(0, 9) {
            0..=2 => FileState::Live,
            3..=4 => FileState::Paused,
            5..=6 => FileState::Invalid,
            _ => FileState::Removed,
        };
        let reschedule = (to == FileState::Live && w.rng.chance(50)).then(|| (w.rng.pick(SCHEDULES).to_string(), w.rng.pick(ZONES).parse::<chrono_tz::Tz>().unwrap()));
        let r = &mut w.routines[i];
        let mut what = format!("{}: {:?} → {to:?}", r.name, r.file);
        if let Some((expr, tz)) = reschedule {
            what += &format!(" as \"{expr}\" {tz}");
            (r.expr, r.tz) = (expr, tz);
        }
        r.file = to;
        // Whatever it was, the oracle owes nothing of it until the pass after the edit.
        r.live_since = None;
        r.edited_at = Some(now);
        w.write_routine(i);
        self.engine().sched.reload();
        self.say(format!("routine file edited, {what}"));
    }
}
