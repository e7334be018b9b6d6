//! A run's outcome in plain words, with the fix when there is one — what the run detail view and
//! `nightshiftctl show` say on top of the raw status, reason and message, and what the report of a
//! run that did not complete says ([`verdict_report`]).

use crate::run::{Reason, RunRecord, RunStatus};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Explanation {
    /// One sentence a user understands without knowing the reason codes.
    pub summary: String,
    /// What to do about it, when something can be done.
    pub fix: Option<String>,
    /// The account to log in again, when that is the fix (the window offers Re-login).
    pub relogin: Option<String>,
}

pub fn explain(run: &RunRecord) -> Explanation {
    let account = run.account.clone();
    // Without an account the run used the agent's own sign-in.
    let (who, sign_in) = match account.as_deref() {
        Some(a) => (format!("account {a}"), format!("Re-login {a}")),
        None => ("the agent's own sign-in".to_string(), "Sign the agent in".to_string()),
    };
    let said = run.message.as_deref().filter(|m| !m.is_empty());
    let plain = |summary: String, fix: Option<&str>| Explanation { summary, fix: fix.map(str::to_string), relogin: None };
    match (run.status, run.reason) {
        (RunStatus::Completed, _) => plain("Completed.".into(), None),
        (RunStatus::Queued, _) => plain(said.unwrap_or("Waiting for a free lane; it starts as soon as one is free.").to_string(), None),
        (RunStatus::Running, _) => plain("Running now. The log below follows it live.".into(), None),
        (_, Some(Reason::AuthFailed | Reason::AuthPreflight)) => Explanation {
            summary: if run.status == RunStatus::Blocked {
                format!("Not started: {who} cannot log in, so the run was held instead of failing against the API.")
            } else {
                capitalise_first(&format!("{who} is logged out or its login was refused."))
            },
            fix: Some(match crate::accounts::AgentAuth::of(run.agent) {
                Some(auth) => format!(
                    "{sign_in} ({}), or store a {} ({}) with Set token. Routines it held run once when it works again.",
                    auth.login_command, auth.secret_name, auth.secret_how
                ),
                None => format!("{sign_in}. Routines it held run once when it works again."),
            }),
            relogin: account,
        },
        (_, Some(Reason::RateLimited)) => plain(
            capitalise_first(&format!("{who} hit its usage limit{}.", if run.resets_at.is_some() { " (see when it resets below)" } else { "" })),
            Some("Nightshift moves to another healthy account when one is configured; add a second account for failover, or wait for the reset."),
        ),
        (_, Some(Reason::NoAccount)) => plain(
            "No account can run this routine: none is configured for its agent, or every one is blocked.".into(),
            Some("Add one with `nightshiftctl accounts add claude|codex|gemini you@example.com`, then store its token or key with `nightshiftctl accounts set-token`."),
        ),
        (_, Some(Reason::SpawnFailed)) => {
            let storage = said.is_some_and(|m| m.contains(" is full") || m.contains("read-only") || m.contains("quota"));
            let fix = match (&run.host, storage) {
                (_, true) => "Free some space on that disk (or make it writable), then run it again.".to_string(),
                (Some(host), false) => format!("Install the agent's CLI on {host}, or set its path there as `[hosts.{host}] agent_path` in nightshift.toml."),
                (None, false) => "Install the agent's CLI or set its path under [agents] in nightshift.toml.".to_string(),
            };
            Explanation { summary: format!("The agent could not be started: {}", said.unwrap_or("unknown error")), fix: Some(fix), relogin: None }
        }
        (_, Some(Reason::HostUnreachable)) => plain(
            format!("{}: {}", if run.status == RunStatus::Blocked { "Not started" } else { "Lost contact with the machine it ran on" }, said.unwrap_or("the host could not be reached over SSH")),
            Some("Check that the machine is on and that `ssh <host> true` works from here without a prompt (a key in your SSH agent or ssh config); `nightshiftctl hosts check` tries it."),
        ),
        (_, Some(Reason::ExitNonzero)) => plain(format!("The command failed: {}", said.unwrap_or("it exited with an error")), Some("The log below shows what it printed.")),
        (_, Some(Reason::AgentError)) => plain(format!("The agent reported an error: {}", said.unwrap_or("no details")), Some("The log below shows the agent's own account of it.")),
        // Not tried again because the try before had already changed things (the retry rule's words).
        (_, Some(Reason::Interrupted)) if said.is_some_and(|m| m.contains("that change things")) => plain(
            format!("Interrupted, and not tried again: {}", said.unwrap_or_default()),
            Some("Look at what it already did (its log), then run it again by hand — or set `retry_after_work: true` to let Nightshift start it again from the top."),
        ),
        (_, Some(Reason::Interrupted)) => plain(
            "Nightshift stopped while this run was going (quit, crash or reboot), and the run's process was gone when it came back.".into(),
            Some("Run it again."),
        ),
        (RunStatus::TimedOut, _) => plain(
            format!("Stopped: it ran longer than its timeout{}.", said.map(|m| format!(" ({m})")).unwrap_or_default()),
            Some("Raise `timeout:` in the routine file if it needs longer."),
        ),
        (RunStatus::Cancelled, _) => plain(said.unwrap_or("Cancelled by hand.").to_string(), None),
        (RunStatus::Missed, _) => plain(
            format!("Not run: {}", said.unwrap_or("the computer was asleep or Nightshift was not running when it was due.")),
            Some("With `catchup: true` (the default) one catch-up run is made after waking; the other missed slots are only recorded."),
        ),
        (_, Some(Reason::NeedsApproval)) => plain(
            format!("Blocked: it was refused a call its routine does not allow, and asks you for it — {}", said.map(|m| m.trim_start_matches("needs approval for ")).unwrap_or("see the calls it asked for")),
            Some("Approve reruns it with exactly that call allowed, for the rerun only (`nightshiftctl approve`, the notification's Approve, or Approve and rerun in the run's detail); Deny, or no answer by its `ask_timeout`, leaves it as it is. To allow it always, add it to the routine's `allow.tools`."),
        ),
        (RunStatus::Skipped, Some(Reason::ActiveRun)) => plain("Skipped: the routine's previous run was still going.".into(), None),
        (RunStatus::Skipped, Some(Reason::QueueFull)) => plain(
            format!("Skipped: {}.", said.map(|m| m.trim_start_matches("skipped: ")).unwrap_or("as many runs of its agent as may wait were already waiting for a lane")),
            Some("The next slot runs as usual. To let more wait, raise `max_queued` (or let more go at once with `max_running`) under `[agents.<agent>]` in nightshift.toml."),
        ),
        (RunStatus::Skipped, _) => plain(format!("Skipped{}", said.map(|m| format!(": {m}")).unwrap_or_else(|| ".".into())), None),
        (status, _) => plain(format!("{}{}", capitalise(status.as_str()), said.map(|m| format!(": {m}")).unwrap_or_else(|| ".".into())), None),
    }
}

/// The report of a run that ended other than completed — what happened, the evidence, what to do —
/// so "open the report" never finds nothing. Markdown; the evidence — (what it is, the last lines
/// of it): the command's or the agent's own words, untrusted — is an indented code block, inert
/// wherever the report is rendered.
pub fn verdict_report(run: &RunRecord, evidence: &[(&str, String)]) -> String {
    let e = explain(run);
    let verdict = match run.reason {
        Some(reason) => format!("{} · {}", run.status, reason.as_str()),
        None => run.status.to_string(),
    };
    let mut out = format!("# {} · {verdict}\n\n{}\n", run.routine, e.summary);
    // The message, unless the summary says it already ("skipped: …" told as "Skipped: …").
    let said = |m: &str| e.summary.contains(m.strip_prefix(&format!("{}: ", run.status)).unwrap_or(m));
    if let Some(message) = run.message.as_deref().filter(|m| !m.is_empty() && !said(m)) {
        out += &format!("\n{}\n", crate::words::first_line(message, 400));
    }
    if let Some(fix) = &e.fix {
        // (The window shows the log below its words; a report points to it.)
        let fix = fix.replace("The log below", &format!("Its log (`nightshiftctl logs {}`)", run.id));
        out += &format!("\n**What to do:** {fix}\n");
    }
    for (what, lines) in evidence.iter().filter(|(_, l)| !l.trim().is_empty()) {
        out += &format!("\n**{what} ended with:**\n\n");
        for line in lines.trim_end().lines() {
            out += &format!("    {line}\n");
        }
    }
    out
}

/// `s` with its first letter upper-case.
fn capitalise_first(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn capitalise(s: &str) -> String {
    capitalise_first(s).replace('_', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: RunStatus, reason: Option<Reason>, message: Option<&str>) -> RunRecord {
        RunRecord { message: message.map(str::to_string), ..RunRecord::sample(status, reason) }
    }

    /// A run that did not complete gets a report: the verdict, what happened, what to do, and its
    /// own last words as an indented code block — a heading or HTML in them stays text.
    #[test]
    fn a_verdict_report_explains_and_keeps_the_evidence_inert() {
        let failed = RunRecord { routine: "deploy".into(), exit_code: Some(3), ..run(RunStatus::Failed, Some(Reason::ExitNonzero), Some("exited with code 3: boom")) };
        let evidence = [("Its output", "## Looks like a heading\n<img src=x onerror=alert(1)>".to_string()), ("Its error output", "boom\n".to_string()), ("Nothing", "  \n".to_string())];
        assert_eq!(
            verdict_report(&failed, &evidence),
            format!("# deploy · failed · exit_nonzero\n\nThe command failed: exited with code 3: boom\n\n**What to do:** Its log (`nightshiftctl logs {}`) shows what it printed.\n\n**Its output ended with:**\n\n    ## Looks like a heading\n    <img src=x onerror=alert(1)>\n\n**Its error output ended with:**\n\n    boom\n", failed.id)
        );
        // The message is said once (here the summary does not carry it).
        let skipped = RunRecord { routine: "nightly".into(), ..run(RunStatus::Skipped, Some(Reason::QueueFull), Some("skipped: 1 claude run was already waiting for a lane (`[agents.claude] max_queued = 1`)")) };
        let report = verdict_report(&skipped, &[]);
        assert!(report.starts_with("# nightly · skipped · queue_full\n\nSkipped: 1 claude run was already waiting for a lane (`[agents.claude] max_queued = 1`).\n\n**What to do:** The next slot runs as usual."), "{report}");
        assert_eq!(report.matches("max_queued = 1").count(), 1, "{report}");
    }

    #[test]
    fn a_run_not_started_for_lack_of_space_says_to_free_space_not_to_install_the_agent() {
        let full = explain(&run(RunStatus::Failed, Some(Reason::SpawnFailed), Some("not started: the disk holding /h/runs/x is full (12 KiB free)")));
        assert!(full.fix.as_deref().unwrap().starts_with("Free some space"), "{:?}", full.fix);
        let missing = explain(&run(RunStatus::Failed, Some(Reason::SpawnFailed), Some("could not start claude: No such file or directory")));
        assert!(missing.fix.as_deref().unwrap().starts_with("Install the agent's CLI"), "{:?}", missing.fix);
    }

    #[test]
    fn a_logged_out_account_names_the_account_and_offers_relogin() {
        let e = explain(&run(RunStatus::Failed, Some(Reason::AuthFailed), Some("Invalid bearer token")));
        assert_eq!(e.summary, "Account work@acme.dev is logged out or its login was refused.");
        assert_eq!(e.relogin.as_deref(), Some("work@acme.dev"));
        assert!(e.fix.unwrap().starts_with("Re-login work@acme.dev"));
        let blocked = explain(&run(RunStatus::Blocked, Some(Reason::AuthPreflight), None));
        assert!(blocked.summary.starts_with("Not started: account work@acme.dev cannot log in"));
    }

    #[test]
    fn every_status_and_reason_gets_words() {
        for status in RunStatus::ALL {
            for reason in std::iter::once(None).chain(Reason::ALL.iter().copied().map(Some)) {
                let e = explain(&run(*status, reason, Some("detail")));
                assert!(e.summary.len() > 5 && !e.summary.contains('_'), "{status:?} {reason:?}: {}", e.summary);
            }
        }
        assert_eq!(explain(&run(RunStatus::Failed, Some(Reason::ExitNonzero), Some("exited with code 3: boom"))).summary, "The command failed: exited with code 3: boom");
    }
}
