//! `on_denial: ask` for a call the agent could not hold while the user was asked — its CLI has
//! no hook for it (every agent but Claude Code), or the engine that held it stopped: the run ends
//! `blocked · needs_approval` naming the calls, each an ask after the run; Approve reruns it with
//! exactly those calls allowed for the rerun only (the routine's file is never changed), resuming
//! the agent's session where it can.

use super::live::LiveRun;
use crate::agents::{Guard, Outcome};
use crate::run::{Denial, Reason, RunRecord, RunStatus};
use crate::store::Ask;
use chrono::{DateTime, Utc};

/// The refused calls of `run` the user may approve after it: with `on_denial: ask`, for an agent
/// that could not hold them — its CLI has no hook, or it was not given Nightshift's prompt tool
/// (no engine offered the run's sockets: the run's `asks-live` mark is missing) —, each call once,
/// never one `deny.tools` refuses (that is the routine's own "never").
pub(crate) fn askable(run: &LiveRun, denials: &[Denial]) -> Vec<Denial> {
    let held_live = run.driver().asks_live() && crate::run_dir::RunDir::at(&run.run_dir).asks_live().exists();
    let Some(guard) = run.asks.as_ref().filter(|_| !held_live) else { return Vec::new() };
    let mut out: Vec<Denial> = Vec::new();
    for d in denials {
        if !guard.denies(&d.tool, &d.input) && !out.contains(d) {
            out.push(d.clone());
        }
    }
    out
}

/// The verdict of a run that must ask after it ended: `blocked · needs_approval` with what it
/// was refused — when it had such calls (`askable`) or still held asks its stopped engine could
/// not answer (`held`), and its agent finished its turn (completed, or failed by itself; a run
/// timed out or cancelled is that first).
pub(crate) fn needs_approval(run: &LiveRun, outcome: &mut Outcome, held: &[Ask]) {
    let askable = askable(run, &outcome.denials);
    if askable.is_empty() && held.is_empty() || !matches!(outcome.status(), RunStatus::Completed | RunStatus::Failed) {
        return;
    }
    let mut calls: Vec<String> = held.iter().map(|a| ask_words(&a.tool, &a.input)).collect();
    calls.extend(askable.iter().map(Denial::words));
    let listed = calls.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
    let more = if calls.len() > 3 { format!(" and {} more", calls.len() - 3) } else { String::new() };
    let why = match held.is_empty() {
        true => format!("{} could not ask while it ran", run.agent.as_str()),
        false => "the engine stopped while it waited for the answer".to_string(),
    };
    outcome.status = Some(RunStatus::Blocked);
    outcome.reason = Some(Reason::NeedsApproval);
    outcome.message = Some(format!("needs approval for {listed}{more} ({why}); approve to rerun it with that allowed: nightshiftctl approve {}", run.id));
}

/// The asks after the run to open with its final row: one per call it may approve, open until
/// its `ask_timeout` from `at`.
pub(crate) fn asks_after(run: &LiveRun, outcome: &Outcome, at: DateTime<Utc>) -> Vec<Ask> {
    if outcome.reason != Some(Reason::NeedsApproval) {
        return Vec::new();
    }
    let timeout = run.asks.as_ref().and_then(|g| g.ask).unwrap_or(Guard::DEFAULT_ASK);
    let expires_at = at + chrono::Duration::from_std(timeout).unwrap_or(chrono::Duration::minutes(30));
    askable(run, &outcome.denials)
        .into_iter()
        .map(|d| Ask {
            id: ulid::Ulid::new().to_string().to_lowercase(),
            run_id: run.id.clone(),
            routine: run.routine.clone(),
            tool: d.tool,
            input: d.input,
            asked_at: at,
            expires_at,
            answer: None,
            for_run: false,
            answered_at: None,
            answered_by: None,
            held: false,
            rerun: None,
        })
        .collect()
}

/// The rule that allows an approved call for one run, in the form every agent's rules take:
/// `Tool(gist)` — Claude Code's exact call, a command prefix for the others — or, for a host the
/// sandbox refused (`Network`), the host for `allow.hosts`.
pub(crate) fn widen(guard: &mut Guard, ask: &Ask) {
    if ask.tool == "Network" {
        if let Ok(host) = crate::sandbox::check_host(&ask.input) {
            guard.allow_hosts.push(host);
        }
        return;
    }
    // The whole call (not its shortened words): a long command is allowed as itself, not as
    // whatever starts like it.
    let rule = format!("{}({})", ask.tool, ask_gist(&ask.input).trim());
    if !guard.approved.contains(&rule) {
        guard.approved.push(rule);
    }
}

/// What a rerun after an approval continues: the blocked run's session (when its agent resumes
/// and the rerun runs on its account), and the words that tell the agent what changed.
#[derive(Debug, Clone)]
pub(crate) struct Approved {
    pub session: Option<String>,
    pub account: Option<String>,
    /// The calls approved, in words (`run_shell_command(touch /tmp/x)`).
    pub calls: Vec<String>,
}

impl Approved {
    /// For run `rerun` (trigger `approval`): the asks that started it, the blocked run's session.
    pub(crate) fn of(store: &crate::store::Store, rerun: &RunRecord) -> Option<(Approved, Vec<Ask>)> {
        let asks = store.asks_rerun_by(&rerun.id).ok().filter(|a| !a.is_empty())?;
        let blocked = store.get_run(&asks[0].run_id).ok();
        let calls = asks.iter().map(|a| ask_words(&a.tool, &a.input)).collect();
        let approved = Approved { session: blocked.as_ref().and_then(|b| b.session_id.clone()), account: blocked.and_then(|b| b.account), calls };
        Some((approved, asks))
    }

    /// What the agent is told: continuing its session, only what changed; starting afresh, the
    /// task and then what changed.
    pub(crate) fn words(&self, resumed: bool) -> String {
        let calls = self.calls.join(", ");
        match resumed {
            true => format!("You were refused {calls} earlier in this session. The user has now approved it for this run: make that call again if the task still needs it, and finish the task without repeating what was already done."),
            false => format!("Note: an earlier run of this task was refused {calls}; the user has approved it for this run. Before doing anything again, check what was already done, and do not repeat it."),
        }
    }
}

/// `Bash(git push origin fix/deps)`: the tool and the gist of its input, shortened — shown to the
/// user as text, never run or rendered.
pub fn ask_words(tool: &str, input: &str) -> String {
    let gist: String = ask_gist(input).chars().filter(|c| !c.is_control()).take(120).collect();
    format!("{tool}({gist})")
}

/// What an ask is about, whole: the command, file, URL or pattern of its input (JSON), else the
/// input itself (a refusal an agent reported as text).
pub(crate) fn ask_gist(input: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(input).unwrap_or(serde_json::Value::Null);
    ["command", "file_path", "path", "url", "pattern"].iter().find_map(|k| value.get(*k).and_then(|v| v.as_str())).map(str::to_string).unwrap_or_else(|| input.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(agent: crate::words::Agent, guard: Option<Guard>) -> LiveRun {
        LiveRun {
            id: "r1".into(),
            routine: "deps".into(),
            agent,
            run_dir: "/nonexistent".into(),
            started_at: Utc::now(),
            timeout: std::time::Duration::from_secs(60),
            webhooks: Vec::new(),
            pings: false,
            stall: None,
            fail_on_denial: false,
            asks: guard,
        }
    }

    fn denial(tool: &str, input: &str) -> Denial {
        Denial { tool: tool.into(), input: input.into() }
    }

    #[test]
    fn only_an_agent_that_could_not_hold_the_call_asks_after_the_run_and_never_for_what_deny_refuses() {
        let guard = Guard { ask: Some(Guard::DEFAULT_ASK), deny_tools: vec!["run_shell_command(rm)".into()], ..Guard::default() };
        let denials = vec![denial("run_shell_command", "touch /tmp/x"), denial("run_shell_command", "rm -rf /"), denial("run_shell_command", "touch /tmp/x")];
        let gemini = live(crate::words::Agent::Gemini, Some(guard.clone()));
        assert_eq!(askable(&gemini, &denials), vec![denial("run_shell_command", "touch /tmp/x")], "once each, never what deny.tools refuses");
        let claude = live(crate::words::Agent::Claude, Some(guard));
        assert_eq!(askable(&claude, &denials).len(), 1, "Claude Code not given the prompt tool asks after the run");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(crate::run_dir::RunDir::at(dir.path()).asks_live(), "").unwrap();
        let claude = LiveRun { run_dir: dir.path().to_path_buf(), ..claude };
        assert!(askable(&claude, &denials).is_empty(), "Claude Code given it asked while it ran");
        assert!(askable(&live(crate::words::Agent::Gemini, None), &denials).is_empty(), "no on_denial: ask");

        let mut outcome = Outcome { status: Some(RunStatus::Completed), denials: denials.clone(), ..Outcome::default() };
        needs_approval(&gemini, &mut outcome, &[]);
        assert_eq!((outcome.status, outcome.reason), (Some(RunStatus::Blocked), Some(Reason::NeedsApproval)));
        let said = outcome.message.clone().unwrap();
        assert!(said.starts_with("needs approval for run_shell_command(touch /tmp/x) (gemini could not ask while it ran)") && said.ends_with("nightshiftctl approve r1"), "{said}");
        let asks = asks_after(&gemini, &outcome, Utc::now());
        assert_eq!(asks.iter().map(|a| (a.tool.as_str(), a.input.as_str(), a.held)).collect::<Vec<_>>(), vec![("run_shell_command", "touch /tmp/x", false)]);

        let mut timed_out = Outcome { status: Some(RunStatus::TimedOut), denials, ..Outcome::default() };
        needs_approval(&gemini, &mut timed_out, &[]);
        assert_eq!(timed_out.status, Some(RunStatus::TimedOut), "a timeout is told as one");
    }

    #[test]
    fn an_approval_widens_one_run_by_exactly_the_call_or_host() {
        let mut guard = Guard { allow_tools: Some(vec!["read_file".into()]), ..Guard::default() };
        let ask = |tool: &str, input: &str| Ask {
            id: "a".into(),
            run_id: "r".into(),
            routine: "deps".into(),
            tool: tool.into(),
            input: input.into(),
            asked_at: Utc::now(),
            expires_at: Utc::now(),
            answer: Some("allow".into()),
            for_run: false,
            answered_at: None,
            answered_by: None,
            held: false,
            rerun: Some("r2".into()),
        };
        widen(&mut guard, &ask("run_shell_command", "touch /tmp/x"));
        widen(&mut guard, &ask("Bash", "{\"command\":\"git push origin fix/deps\"}"));
        widen(&mut guard, &ask("Network", "registry.npmjs.org:443"));
        let long = format!("echo {}", "x".repeat(300));
        widen(&mut guard, &ask("run_shell_command", &long));
        assert_eq!(guard.approved.last(), Some(&format!("run_shell_command({long})")), "the whole command, never a prefix of its words");
        assert_eq!(guard.approved[..2], ["run_shell_command(touch /tmp/x)", "Bash(git push origin fix/deps)"]);
        assert_eq!(guard.allow_hosts, vec!["registry.npmjs.org:443"]);
        assert_eq!(guard.allow_tools, Some(vec!["read_file".to_string()]), "the routine's own rules are untouched");
    }
}
