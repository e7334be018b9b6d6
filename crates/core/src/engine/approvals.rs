//! `on_denial: ask`: a tool call a run's agent wants and its routine does not allow, held while
//! the user is asked. The ask is a row (it outlives the process that asked), the waiting run says
//! what it waits for (`waiting for approval: Bash(git push …)`), the first answer wins — from
//! whichever face gives it — and one nobody gives by the routine's `ask_timeout` is a refusal.

use super::Engine;
use crate::error::{Error, ErrorCode, Result};
use crate::events::EngineEvent;
use crate::run::RunRecord;
use crate::store::Ask;
pub use super::run::approval::ask_words;
use chrono::{DateTime, Utc};
use std::time::Duration;

/// How often a waiting ask looks for its answer (an answer may come from another process).
const LOOK: Duration = Duration::from_millis(250);

/// What the waiting agent is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused, with the words the agent reads.
    Deny(String),
}

impl Engine {
    /// Ask the user whether `run`'s agent may call `tool` with `input` (JSON), and wait for the
    /// answer until the routine's `ask_timeout` — or answer at once when the user already allowed
    /// that tool for the rest of this run.
    pub async fn ask_for_approval(&self, run: &RunRecord, tool: &str, input: &serde_json::Value) -> Result<Decision> {
        let routine = self.routine(&run.routine)?;
        let timeout = routine.guard().and_then(|g| g.ask).ok_or_else(|| Error::new(ErrorCode::Usage, format!("{} does not ask (`on_denial: ask` is not in its file)", run.routine)))?;
        let now = self.core.clock.now();
        let shown = self.redact(&input.to_string());
        let earlier = self.core.store.asks_of(&run.id)?;
        if earlier.iter().any(|a| a.tool == tool && a.for_run && a.answer.as_deref() == Some("allow")) {
            let ask = self.new_ask(run, tool, &shown, now, now);
            self.core.store.add_ask(&ask)?;
            self.core.store.answer_ask(&ask.id, "allow", true, "earlier", now)?;
            return Ok(Decision::Allow);
        }
        // The wait counts toward the run's `timeout`: an ask ends (a refusal) 30 s before the run
        // would be stopped, so the agent hears the answer and can finish.
        let mut expires = now + chrono::Duration::from_std(timeout).unwrap_or(chrono::Duration::minutes(30));
        if let Some(stop) = run.started_at.and_then(|t| chrono::Duration::from_std(routine.timeout).ok().map(|d| t + d - chrono::Duration::seconds(30))) {
            expires = expires.min(stop.max(now));
        }
        let ask = self.new_ask(run, tool, &shown, now, expires);
        self.core.store.add_ask(&ask)?;
        let what = ask_words(tool, &shown);
        let _asking = Asking::mark(&run.run_dir);
        tracing::info!(run = %run.id, ask = %ask.id, %what, "waiting for approval");
        self.core.emit(EngineEvent::RunProgress { run_id: run.id.clone(), routine: run.routine.clone(), message: format!("waiting for approval: {what}") });
        self.core.emit(EngineEvent::ApprovalAsked { run_id: run.id.clone(), routine: run.routine.clone(), what: what.clone(), until: crate::words::fmt_time(&expires) });
        self.post_ask_to_ntfy(&ask, &what);
        loop {
            let answered = self.core.store.ask(&ask.id)?.and_then(|a| a.answer.clone().map(|answer| (answer, a)));
            if let Some((answer, a)) = answered {
                return Ok(self.decided(run, &what, &answer, &a));
            }
            let now = self.core.clock.now();
            if now >= expires {
                if self.core.store.answer_ask(&ask.id, "timeout", false, "timeout", now)? {
                    self.core.emit(EngineEvent::RunProgress { run_id: run.id.clone(), routine: run.routine.clone(), message: format!("not approved in time: {what}") });
                    self.core.emit(EngineEvent::ApprovalAnswered { run_id: run.id.clone(), routine: run.routine.clone(), what: what.clone(), answer: "timeout".into(), by: "timeout".into() });
                    let waited = humantime::format_duration(std::time::Duration::from_secs((expires - ask.asked_at).num_seconds().max(0) as u64));
                    return Ok(Decision::Deny(format!("Nobody approved this within {waited}; it was not run. Go on without it.")));
                }
                continue; // answered just now
            }
            tokio::time::sleep(LOOK).await;
        }
    }

    fn new_ask(&self, run: &RunRecord, tool: &str, input: &str, asked_at: DateTime<Utc>, expires_at: DateTime<Utc>) -> Ask {
        Ask {
            id: ulid::Ulid::new().to_string().to_lowercase(),
            run_id: run.id.clone(),
            routine: run.routine.clone(),
            tool: tool.to_string(),
            input: input.to_string(),
            asked_at,
            expires_at,
            answer: None,
            for_run: false,
            answered_at: None,
            answered_by: None,
            held: true,
            rerun: None,
        }
    }

    fn decided(&self, run: &RunRecord, what: &str, answer: &str, ask: &Ask) -> Decision {
        let by = ask.answered_by.as_deref().unwrap_or("?");
        let at = ask.answered_at.map(|t| crate::words::local_day_time(t, crate::schedule::local_tz())).unwrap_or_default();
        let said = if answer == "allow" { "approved" } else { "denied" };
        self.core.emit(EngineEvent::RunProgress { run_id: run.id.clone(), routine: run.routine.clone(), message: format!("{said} ({by}, {at}): {what}") });
        self.core.emit(EngineEvent::ApprovalAnswered { run_id: run.id.clone(), routine: run.routine.clone(), what: what.to_string(), answer: answer.to_string(), by: by.to_string() });
        match answer {
            "allow" => Decision::Allow,
            _ => Decision::Deny(format!("The user denied this ({by}, {at}); it was not run. Go on without it, or stop if the task needs it.")),
        }
    }

    /// Every ask still waiting, oldest first. An ask after a run past its `ask_timeout` is
    /// closed here as not answered in time (nobody waits on it to say so).
    pub fn open_asks(&self) -> Result<Vec<Ask>> {
        let now = self.core.clock.now();
        let mut open = self.core.store.open_asks()?;
        for a in open.iter().filter(|a| !a.held && a.expires_at <= now) {
            self.core.store.answer_ask(&a.id, "timeout", false, "timeout", a.expires_at)?;
        }
        open.retain(|a| a.held || a.expires_at > now);
        Ok(open)
    }

    /// Start the rerun each approved ask after a run asked for — once, whichever process gave
    /// the answer or gets here first (the rerun is claimed with its row). Answering faces call it
    /// right after the answer; the scheduler's loop calls it too, for an answer whose process
    /// stopped before it could.
    pub async fn start_approved_reruns(&self) -> Result<Vec<crate::engine::RunHandle>> {
        let core = std::sync::Arc::clone(&self.core);
        let blocked = tokio::task::spawn_blocking(move || core.store.approved_without_rerun())
            .await
            .map_err(|e| Error::new(ErrorCode::StoreUnavailable, e.to_string()))??;
        let mut started = Vec::new();
        for run_id in blocked {
            let rec = self.run(&run_id)?;
            let routine = match self.routine(&rec.routine) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(run = %run_id, error = %e.message, "an approved rerun cannot start: its routine is gone or invalid");
                    continue;
                }
            };
            if let Some(handle) = super::run::queue::submit_rerun(&self.core, &routine, &run_id).await? {
                tracing::info!(run = %run_id, rerun = %handle.id, "rerun after approval");
                started.push(handle);
            }
        }
        Ok(started)
    }

    /// [`answer_ask`](Engine::answer_ask), then — an approval after the run — its rerun started
    /// ([`start_approved_reruns`](Engine::start_approved_reruns)): the answer as recorded, with
    /// the rerun it started (`rerun`).
    pub async fn answer_and_rerun(&self, run: &str, allow: bool, for_run: bool, by: &str) -> Result<Ask> {
        let ask = self.answer_ask(run, allow, for_run, by)?;
        self.rerun_if_approved(ask).await
    }

    /// After `ask` was answered (anywhere): an approval after the run starts its rerun; the ask
    /// as recorded then.
    pub async fn rerun_if_approved(&self, ask: Ask) -> Result<Ask> {
        if ask.held || ask.answer.as_deref() != Some("allow") {
            return Ok(ask);
        }
        self.start_approved_reruns().await?;
        Ok(self.core.store.ask(&ask.id)?.unwrap_or(ask))
    }

    /// Answer the oldest open ask of run `run` (an id or an unambiguous prefix): allow it (for
    /// this once, or `for_run`: that tool for the rest of the run) or deny it. `by`: where the
    /// answer came from. Refused when the run waits for no answer — or it was answered already.
    pub fn answer_ask(&self, run: &str, allow: bool, for_run: bool, by: &str) -> Result<Ask> {
        let run = self.run(run)?;
        let open = self.core.store.asks_of(&run.id)?.into_iter().find(|a| a.answer.is_none()).ok_or_else(|| {
            Error::new(ErrorCode::Conflict, format!("run {} waits for no approval (it was answered already, or asked nothing)", run.id))
        })?;
        let now = self.core.clock.now();
        if !open.held && open.expires_at <= now {
            self.core.store.answer_ask(&open.id, "timeout", false, "timeout", open.expires_at)?;
            let at = crate::words::local_day_time(open.expires_at, crate::schedule::local_tz());
            return Err(Error::new(ErrorCode::Conflict, format!("run {} asked until {at} and nobody answered: run {} again by hand", run.id, run.routine)));
        }
        let answer = if allow { "allow" } else { "deny" };
        if !self.core.store.answer_ask(&open.id, answer, for_run && allow, by, now)? {
            return Err(Error::new(ErrorCode::Conflict, format!("the approval run {} waited for was answered a moment ago", run.id)));
        }
        // Whoever else looks (a waiting agent in another process, a scheduler) looks now.
        super::signal::wake(&self.core);
        self.core.store.ask(&open.id)?.ok_or_else(|| Error::new(ErrorCode::StoreUnavailable, "the answer was not recorded"))
    }

    /// The asks of one run, oldest first.
    pub fn asks_of(&self, run: &str) -> Result<Vec<Ask>> {
        self.core.store.asks_of(run)
    }

    /// For a rerun an approval started (trigger `approval`), in the one wording of the run
    /// detail, `show` and the report: "rerun of run 01J… after approval (cli, Mon 7 Dec 02:14) of
    /// run_shell_command(touch …)".
    pub fn rerun_words(&self, run: &RunRecord) -> Option<String> {
        if run.trigger != crate::run::Trigger::Approval {
            return None;
        }
        let asks = self.core.store.asks_rerun_by(&run.id).ok().filter(|a| !a.is_empty())?;
        let tz = self.routine(&run.routine).map(|r| r.timezone).unwrap_or_else(|_| crate::schedule::local_tz());
        let calls: Vec<String> = asks.iter().map(|a| ask_words(&a.tool, &a.input)).collect();
        let by = asks[0].answered_by.as_deref().unwrap_or("?");
        let at = asks[0].answered_at.map(|t| crate::words::local_day_time(t, tz)).unwrap_or_default();
        Some(format!("rerun of run {} after approval ({by}, {at}) of {}", asks[0].run_id, calls.join(", ")))
    }
}

/// The run's "asking" mark ([`crate::run_dir::RunDir::asking`]) while it waits, gone with it
/// however the wait ends.
struct Asking(std::path::PathBuf);

impl Asking {
    fn mark(run_dir: &str) -> Asking {
        let path = crate::run_dir::RunDir::at(std::path::Path::new(run_dir)).asking();
        let _ = std::fs::write(&path, "");
        Asking(path)
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One ask and what became of it, in words: `Bash(git push …) — approved (desktop, Mon 7 Dec
/// 02:14)`, `… — denied (cli, …)`, `… — not answered by …: refused`, `… — waiting until …`.
pub fn ask_outcome(a: &Ask, tz: chrono_tz::Tz) -> String {
    let what = ask_words(&a.tool, &a.input);
    let when = |t: DateTime<Utc>| crate::words::local_day_time(t, tz);
    let answered = format!("{}, {}", a.answered_by.as_deref().unwrap_or("?"), a.answered_at.map(when).unwrap_or_default());
    match (a.answer.as_deref(), a.for_run, a.held) {
        (Some("allow"), _, false) => match &a.rerun {
            Some(rerun) => format!("{what} — approved ({answered}): rerun as run {rerun}"),
            None => format!("{what} — approved ({answered}): its rerun starts"),
        },
        (Some("allow"), true, true) => format!("{what} — approved for the rest of the run ({answered})"),
        (Some("allow"), false, true) => format!("{what} — approved ({answered})"),
        (Some("deny"), _, _) => format!("{what} — denied ({answered})"),
        (Some("ended"), _, _) => format!("{what} — the run ended before an answer"),
        (Some(_), _, _) => format!("{what} — not answered by {}: refused", when(a.expires_at)),
        (None, _, true) => format!("{what} — waiting for approval until {}", when(a.expires_at)),
        (None, _, false) => format!("{what} — refused; approve by {} to rerun with it allowed", when(a.expires_at)),
    }
}

/// The approvals of a run in one sentence (`why`, the report): each ask and its answer, joined.
pub fn asks_sentence(asks: &[Ask], tz: chrono_tz::Tz) -> Option<String> {
    (!asks.is_empty()).then(|| asks.iter().map(|a| ask_outcome(a, tz)).collect::<Vec<_>>().join("; "))
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_ask_is_worded_short_and_inert() {
        assert_eq!(super::ask_words("Bash", "{\"command\":\"git push origin fix/deps\",\"description\":\"push\"}"), "Bash(git push origin fix/deps)");
        assert_eq!(super::ask_words("Write", "{\"file_path\":\"/etc/x\",\"content\":\"…\"}"), "Write(/etc/x)");
        let long = super::ask_words("Bash", &serde_json::json!({"command": format!("echo {}\n\u{1b}[31m", "x".repeat(300))}).to_string());
        assert!(long.chars().count() <= 126 && !long.contains('\u{1b}') && !long.contains('\n'), "{long}");
    }
}
