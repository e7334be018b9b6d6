//! Lanes as a pure decision: which queued runs start now, and what the others are waiting for.
//!
//! No I/O here — the queue reads the waiting and running runs of *every* process on the home in
//! one transaction, asks [`decide`], and claims the starts in that same transaction, so the rules
//! below hold across processes:
//!
//! * never more than `max_parallel` runs at once;
//! * scheduled and catch-up runs never take the last free lane (a "Run now" starts at once);
//! * never two runs of one routine, never two runs on one account (concurrent runs on one Claude
//!   login can get its credential revoked); a pool takes the first of its accounts that is free;
//! * manual runs never wait behind scheduled ones; within a class, first come first served;
//! * no starvation: with nothing running, the first waiting run always starts;
//! * no lane starts while the machine's available memory is below `min_free_memory_mb`, no more
//!   runs of one agent go at once than its `[agents.<agent>] max_running`, and no more worktree
//!   runs than `max_worktrees` (the starvation rule yields to low memory, which holds every run;
//!   each waiting run's note says which rule holds it);
//! * no more of one agent's runs wait than its `[agents.<agent>] max_queued`: a scheduled or event
//!   run that arrives past it is skipped (`skipped · queue_full`); a person's run always waits
//!   (and is not counted).

use crate::words::Agent;
use std::collections::{BTreeMap, HashSet};

/// What bounds the lanes besides the queue itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    pub max_parallel: usize,
    /// (available now, the least to start a run), in MiB — `None` when not known or not asked.
    pub memory: Option<(u64, u64)>,
    /// `[agents.<agent>] max_running`.
    pub max_running: BTreeMap<Agent, usize>,
    /// `max_worktrees`: worktree runs going at once.
    pub max_worktrees: Option<usize>,
    /// `[agents.<agent>] max_queued`: that agent's runs waiting at once.
    pub max_queued: BTreeMap<Agent, usize>,
}

impl Limits {
    /// Only `max_parallel`.
    pub fn lanes(max_parallel: usize) -> Limits {
        Limits { max_parallel, ..Limits::default() }
    }
}

/// A run waiting for a lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub id: String,
    pub routine: String,
    pub agent: Agent,
    /// It works in a worktree of its own (`workspace: worktree`).
    pub worktree: bool,
    /// `manual` or `cli` trigger: a person asked for it.
    pub manual: bool,
    /// The accounts it may run on, in order of preference; empty when it needs none.
    pub accounts: Vec<String>,
}

/// A run holding a lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    pub routine: String,
    pub account: Option<String>,
    pub agent: Agent,
    /// It holds a worktree.
    pub worktree: bool,
}

/// A run to start, with the account reserved for it (the first free one of its accounts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    pub id: String,
    pub account: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    pub starts: Vec<Start>,
    /// (id, why it waits), for every waiting run that does not start, in queue order. The note says
    /// why, not where: its place in the queue is read with it (the store adds it), so a start does
    /// not change the note of every run behind it.
    pub notes: Vec<(String, String)>,
    /// (id, why) of each run that would wait past its agent's `max_queued`: skipped, not queued.
    pub overflow: Vec<(String, String)>,
}

/// The lanes a run of this class may use.
fn cap(max_parallel: usize, manual: bool) -> usize {
    let max = max_parallel.max(1);
    if manual { max } else { max.saturating_sub(1).max(1) }
}

/// Decide which of `waiting` (in arrival order) start, given what is `running`.
pub fn decide(waiting: &[Waiting], running: &[Busy], limits: &Limits) -> Decision {
    let max = limits.max_parallel.max(1);
    let mut lanes_used = running.len();
    let mut busy_routines: HashSet<&str> = running.iter().map(|b| b.routine.as_str()).collect();
    let mut waiting_routines: HashSet<&str> = HashSet::new();
    let mut busy_accounts: HashSet<&str> = running.iter().filter_map(|b| b.account.as_deref()).collect();
    let mut per_agent: BTreeMap<Agent, usize> = BTreeMap::new();
    for b in running {
        *per_agent.entry(b.agent).or_default() += 1;
    }
    let low_memory = limits.memory.filter(|(available, least)| available < least);
    let mut worktrees = running.iter().filter(|b| b.worktree).count();
    let order = waiting.iter().filter(|w| w.manual).chain(waiting.iter().filter(|w| !w.manual));
    let mut decision = Decision::default();
    for w in order {
        let routine_running = busy_routines.contains(w.routine.as_str());
        let routine_busy = routine_running || waiting_routines.contains(w.routine.as_str());
        let free_account = w.accounts.iter().find(|a| !busy_accounts.contains(a.as_str()));
        let account_busy = !w.accounts.is_empty() && free_account.is_none();
        let lane_free = lanes_used < cap(max, w.manual);
        let agent_cap = limits.max_running.get(&w.agent).copied().filter(|cap| per_agent.get(&w.agent).copied().unwrap_or(0) >= *cap);
        let worktree_cap = limits.max_worktrees.filter(|cap| w.worktree && worktrees >= *cap);
        if !routine_busy && !account_busy && lane_free && low_memory.is_none() && agent_cap.is_none() && worktree_cap.is_none() {
            lanes_used += 1;
            worktrees += usize::from(w.worktree);
            busy_routines.insert(&w.routine);
            *per_agent.entry(w.agent).or_default() += 1;
            if let Some(a) = free_account {
                busy_accounts.insert(a);
            }
            decision.starts.push(Start { id: w.id.clone(), account: free_account.cloned() });
            continue;
        }
        // Waiting behind it: a later run of the same routine waits for this one, in order.
        waiting_routines.insert(&w.routine);
        let why = if routine_running {
            format!("waiting for the running {} run to finish", w.routine)
        } else if routine_busy {
            format!("waiting behind an earlier {} run", w.routine)
        } else if let Some((available, least)) = low_memory {
            format!("waiting for memory: {available} MiB available, `min_free_memory_mb` is {least}")
        } else if let Some(cap) = agent_cap {
            format!("waiting: {cap} {} run{} already going (`[agents.{}] max_running = {cap}`)", w.agent, if cap == 1 { " is" } else { "s are" }, w.agent)
        } else if let Some(cap) = worktree_cap {
            format!("waiting: {cap} worktree run{} going (`max_worktrees = {cap}`)", if cap == 1 { " is" } else { "s are" })
        } else if account_busy {
            match w.accounts.as_slice() {
                [one] => format!("waiting: account {one} is busy with another run (one run per account at a time)"),
                all => format!("waiting: all its accounts ({}) are busy with other runs (one run per account at a time)", all.join(", ")),
            }
        } else if w.manual {
            format!("waiting for a free lane ({lanes_used} of {max} running)")
        } else {
            format!("waiting for a free lane ({lanes_used} running; scheduled runs leave one of {max} free for Run now)")
        };
        decision.notes.push((w.id.clone(), format!("queued: {why}")));
    }
    if !limits.max_queued.is_empty() {
        overflow(&mut decision, waiting, &limits.max_queued);
    }
    decision
}

/// Move the waiting runs past their agent's `max_queued` from the notes to the overflow. Scheduled
/// and event runs are counted in arrival order, so one that waits is never skipped for one that
/// came after it; a person's run is neither counted nor skipped (it is asked for, not due).
fn overflow(decision: &mut Decision, waiting: &[Waiting], max_queued: &BTreeMap<Agent, usize>) {
    let noted: HashSet<&str> = decision.notes.iter().map(|(id, _)| id.as_str()).collect();
    let mut waits: BTreeMap<Agent, usize> = BTreeMap::new();
    let mut skipped = Vec::new();
    for w in waiting.iter().filter(|w| noted.contains(w.id.as_str())) {
        let Some(&max) = max_queued.get(&w.agent).filter(|_| !w.manual) else { continue };
        let n = waits.entry(w.agent).or_default();
        if *n < max {
            *n += 1;
            continue;
        }
        let runs = if max == 1 { "run was" } else { "runs were" };
        skipped.push((w.id.clone(), format!("skipped: {max} {} {runs} already waiting for a lane (`[agents.{}] max_queued = {max}`)", w.agent, w.agent)));
    }
    let gone: HashSet<&str> = skipped.iter().map(|(id, _): &(String, String)| id.as_str()).collect();
    decision.notes.retain(|(id, _)| !gone.contains(id.as_str()));
    decision.overflow = skipped;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn w(id: &str, routine: &str, manual: bool, accounts: &[&str]) -> Waiting {
        Waiting { id: id.into(), routine: routine.into(), agent: Agent::Command, worktree: false, manual, accounts: accounts.iter().map(|a| a.to_string()).collect() }
    }
    fn busy(routine: &str, account: Option<&str>) -> Busy {
        Busy { routine: routine.into(), account: account.map(str::to_string), agent: Agent::Command, worktree: false }
    }
    fn started(d: &Decision) -> Vec<&str> {
        d.starts.iter().map(|s| s.id.as_str()).collect()
    }

    #[test]
    fn scheduled_runs_leave_the_last_lane_to_run_now() {
        let q = [w("s1", "a", false, &[]), w("s2", "b", false, &[]), w("m1", "c", true, &[])];
        let d = decide(&q, &[], &Limits::lanes(3));
        assert_eq!(started(&d), vec!["m1", "s1"], "the manual run goes first; scheduled runs use at most 2 of 3 lanes");
        assert_eq!(d.notes, vec![("s2".into(), "queued: waiting for a free lane (2 running; scheduled runs leave one of 3 free for Run now)".into())]);
        let d = decide(&[w("s1", "a", false, &[]), w("m1", "c", true, &[])], &[busy("x", None)], &Limits::lanes(2));
        assert_eq!(started(&d), vec!["m1"], "Run now takes the lane scheduled runs leave free");
    }

    #[test]
    fn one_run_per_routine_and_per_account_pools_take_a_free_account() {
        let running = [busy("r", Some("a@x"))];
        let q = [w("1", "r", true, &[]), w("2", "p", true, &["a@x", "b@x"]), w("3", "q", true, &["b@x"]), w("4", "r", true, &[])];
        let d = decide(&q, &running, &Limits::lanes(10));
        assert_eq!(d.starts, vec![Start { id: "2".into(), account: Some("b@x".into()) }]);
        assert_eq!(d.notes[0], ("1".into(), "queued: waiting for the running r run to finish".into()));
        assert_eq!(d.notes[1], ("3".into(), "queued: waiting: account b@x is busy with another run (one run per account at a time)".into()));
        assert_eq!(d.notes[2].0, "4");
        let d = decide(&[w("1", "r", true, &["a@x"]), w("2", "r", true, &[])], &[busy("x", Some("a@x"))], &Limits::lanes(10));
        assert_eq!(d.notes[1], ("2".into(), "queued: waiting behind an earlier r run".into()));
    }

    #[test]
    fn past_an_agents_max_queued_the_newest_scheduled_runs_are_skipped_and_a_persons_always_wait() {
        let claude = |id: &str, routine: &str, manual: bool| Waiting { agent: Agent::Claude, ..w(id, routine, manual, &[]) };
        let limits = Limits { max_running: [(Agent::Claude, 1)].into_iter().collect(), max_queued: [(Agent::Claude, 2)].into_iter().collect(), ..Limits::lanes(8) };
        let q = [claude("1", "a", false), claude("2", "b", false), claude("3", "c", false), claude("4", "d", false), w("5", "e", false, &[]), claude("6", "f", true)];
        let d = decide(&q, &[], &limits);
        // The person's run starts (it goes first); 1 and 2 wait; 3 and 4 are past the two that may wait.
        assert_eq!(started(&d), vec!["6", "5"]);
        assert_eq!(d.notes.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["1", "2"]);
        let why = "skipped: 2 claude runs were already waiting for a lane (`[agents.claude] max_queued = 2`)".to_string();
        assert_eq!(d.overflow, vec![("3".to_string(), why.clone()), ("4".to_string(), why)]);
        // A person's runs wait whatever the bound, and are not counted: the scheduled runs already
        // waiting are not skipped for them.
        let running = [Busy { agent: Agent::Claude, ..busy("x", None) }];
        let d = decide(&[claude("1", "a", false), claude("2", "b", true), claude("3", "c", true), claude("4", "d", false), claude("5", "e", false)], &running, &limits);
        assert_eq!(d.notes.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["2", "3", "1", "4"]);
        assert_eq!(d.overflow.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["5"]);
        // Without the setting nothing is skipped.
        let d = decide(&q, &[], &Limits { max_queued: BTreeMap::new(), ..limits });
        assert!(d.overflow.is_empty() && d.notes.len() == 4);
    }

    #[test]
    fn low_memory_and_an_agents_cap_hold_runs_and_say_why() {
        let claude = |id: &str, routine: &str| Waiting { agent: Agent::Claude, ..w(id, routine, true, &[]) };
        let low = Limits { memory: Some((300, 512)), ..Limits::lanes(4) };
        let d = decide(&[w("1", "a", true, &[])], &[], &low);
        assert!(d.starts.is_empty());
        assert_eq!(d.notes[0].1, "queued: waiting for memory: 300 MiB available, `min_free_memory_mb` is 512");
        let capped = Limits { max_running: [(Agent::Claude, 1)].into_iter().collect(), ..Limits::lanes(4) };
        let d = decide(&[claude("1", "a"), claude("2", "b"), w("3", "c", true, &[])], &[], &capped);
        assert_eq!(started(&d), vec!["1", "3"], "one claude run at a time; commands are not capped");
        assert_eq!(d.notes, [("2".to_string(), "queued: waiting: 1 claude run is already going (`[agents.claude] max_running = 1`)".to_string())]);
        let running = [Busy { agent: Agent::Claude, ..busy("x", None) }];
        assert!(decide(&[claude("1", "a")], &running, &capped).starts.is_empty());
        let two = Limits { max_worktrees: Some(2), ..Limits::lanes(8) };
        let tree = |id: &str, routine: &str| Waiting { worktree: true, ..w(id, routine, true, &[]) };
        let running = [Busy { worktree: true, ..busy("x", None) }];
        let d = decide(&[tree("1", "a"), tree("2", "b"), w("3", "c", true, &[])], &running, &two);
        assert_eq!(started(&d), vec!["1", "3"], "one more worktree run; a run in its cwd is not held");
        assert_eq!(d.notes[0].1, "queued: waiting: 2 worktree runs are going (`max_worktrees = 2`)");
    }

    #[test]
    fn with_one_lane_a_scheduled_run_still_runs() {
        assert_eq!(started(&decide(&[w("s", "a", false, &[])], &[], &Limits::lanes(1))), vec!["s"]);
        assert!(decide(&[w("s", "a", false, &[])], &[busy("b", None)], &Limits::lanes(1)).starts.is_empty());
    }

    const AGENTS: [Agent; 3] = [Agent::Claude, Agent::Codex, Agent::Command];

    /// A routine's agent is the routine's (r0 and r3 claude, …).
    fn agent_of(r: usize) -> Agent {
        AGENTS[r % 3]
    }

    fn arb_waiting() -> impl Strategy<Value = Vec<Waiting>> {
        prop::collection::vec((0..6usize, any::<bool>(), prop::collection::vec(0..4usize, 0..3)), 0..14).prop_map(|rows| {
            rows.into_iter()
                .enumerate()
                .map(|(i, (r, manual, accs))| {
                    let mut accounts: Vec<String> = accs.into_iter().map(|a| format!("acc{a}")).collect();
                    accounts.dedup();
                    Waiting { id: format!("w{i}"), routine: format!("r{r}"), agent: agent_of(r), worktree: r % 2 == 0, manual, accounts }
                })
                .collect()
        })
    }

    fn arb_limits() -> impl Strategy<Value = Limits> {
        let queued = prop::collection::btree_map(0..3usize, 0..3usize, 0..3);
        (1..5usize, prop::option::of((0..1000u64, 0..1000u64)), prop::collection::btree_map(0..3usize, 1..3usize, 0..3), prop::option::of(1..3usize), queued).prop_map(|(max_parallel, memory, caps, max_worktrees, queued)| Limits {
            max_parallel,
            memory,
            max_running: caps.into_iter().map(|(a, n)| (AGENTS[a], n)).collect(),
            max_worktrees,
            max_queued: queued.into_iter().map(|(a, n)| (AGENTS[a], n)).collect(),
        })
    }

    fn arb_running() -> impl Strategy<Value = Vec<Busy>> {
        prop::collection::vec((0..6usize, prop::option::of(0..4usize)), 0..5).prop_map(|rows| {
            let mut seen_r = Vec::new();
            let mut seen_a = Vec::new();
            rows.into_iter()
                .filter_map(|(r, a)| {
                    // What runs already obeys the rules (one per routine, one per account).
                    let routine = format!("r{r}");
                    let account = a.map(|a| format!("acc{a}"));
                    if seen_r.contains(&routine) || account.as_ref().is_some_and(|a| seen_a.contains(a)) {
                        return None;
                    }
                    seen_r.push(routine.clone());
                    seen_a.extend(account.clone());
                    Some(Busy { agent: agent_of(r), worktree: r % 2 == 0, routine, account })
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, failure_persistence: None, ..ProptestConfig::default() })]
        #[test]
        fn lane_rules_hold(waiting in arb_waiting(), running in arb_running(), limits in arb_limits()) {
            let max = limits.max_parallel;
            let d = decide(&waiting, &running, &limits);
            let by_id = |id: &str| waiting.iter().find(|w| w.id == id).unwrap();
            // Every waiting run is either started, noted or skipped, exactly once.
            prop_assert_eq!(d.starts.len() + d.notes.len() + d.overflow.len(), waiting.len());
            // Only scheduled runs are skipped, and no more of an agent's scheduled runs wait than
            // its `max_queued`.
            prop_assert!(d.overflow.iter().all(|(id, _)| !by_id(id).manual));
            for (agent, max) in &limits.max_queued {
                let waits = d.notes.iter().filter(|(id, _)| by_id(id).agent == *agent && !by_id(id).manual).count();
                prop_assert!(waits <= *max, "{} {:?} runs wait, max_queued {}", waits, agent, max);
            }
            // Never more than max_parallel.
            prop_assert!(running.len() + d.starts.len() <= max.max(running.len()));
            if running.len() < max { prop_assert!(running.len() + d.starts.len() <= max); }
            // Scheduled runs never take the last lane (unless there is only one).
            let mut used = running.len();
            for s in &d.starts {
                let wt = by_id(&s.id);
                used += 1;
                if !wt.manual { prop_assert!(used <= max.saturating_sub(1).max(1)); }
            }
            // Never two of one routine, never two on one account.
            let mut routines: Vec<&str> = running.iter().map(|b| b.routine.as_str()).collect();
            let mut accounts: Vec<&str> = running.iter().filter_map(|b| b.account.as_deref()).collect();
            for s in &d.starts {
                let wt = by_id(&s.id);
                prop_assert!(!routines.contains(&wt.routine.as_str()));
                routines.push(&wt.routine);
                match &s.account {
                    Some(a) => {
                        prop_assert!(wt.accounts.contains(a));
                        prop_assert!(!accounts.contains(&a.as_str()));
                        accounts.push(a);
                    }
                    None => prop_assert!(wt.accounts.is_empty()),
                }
            }
            // Manual runs never wait behind scheduled ones: if a scheduled run started, every
            // manual run that waits is blocked by its routine or account, not by a lane.
            if d.starts.iter().any(|s| !by_id(&s.id).manual) {
                for (id, note) in &d.notes {
                    if by_id(id).manual { prop_assert!(!note.contains("free lane"), "{}", note); }
                }
            }
            // Low memory starts nothing; an agent's cap is never passed by a start.
            let low = limits.memory.is_some_and(|(available, least)| available < least);
            if low { prop_assert!(d.starts.is_empty()); }
            for (agent, cap) in &limits.max_running {
                let before = running.iter().filter(|b| b.agent == *agent).count();
                let started = d.starts.iter().filter(|s| by_id(&s.id).agent == *agent).count();
                if started > 0 { prop_assert!(before + started <= *cap, "{agent}: {before} + {started} > {cap}"); }
            }
            if let Some(cap) = limits.max_worktrees {
                let before = running.iter().filter(|b| b.worktree).count();
                let started = d.starts.iter().filter(|s| by_id(&s.id).worktree).count();
                if started > 0 { prop_assert!(before + started <= cap, "worktrees: {before} + {started} > {cap}"); }
            }
            // No starvation: with nothing running, the first run in order starts unless memory
            // holds every run (a cap is at least 1, so none holds the first).
            if running.is_empty() && !low {
                if let Some(first) = waiting.iter().find(|w| w.manual).or(waiting.first()) {
                    prop_assert_eq!(d.starts.first().map(|s| s.id.as_str()), Some(first.id.as_str()));
                }
            }
        }
    }
}
