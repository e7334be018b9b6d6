//! The pull request after a worktree run's push (`push.pr`): owed like the push (an outbox entry
//! written when the push succeeded, leased by one engine at a time, retried with backoff while
//! GitHub cannot be reached), opened as a draft or ready for review with the run's report as its
//! body — masked, inert and bounded — and a footer naming the run. **One open per routine** (unless
//! `pr_per_run`): while the pull request a routine opened is open, its next run starts from that
//! pull request's head and pushes onto its branch ([`continued_branch`]), and its body is updated
//! instead of a second one opened; merged or closed, it is forgotten and the next run opens a fresh
//! one. What happened is the run's `pull_request` — never only a log line.

use crate::actions::api::{Api, Trouble};
use crate::actions::pulls::NewPull;
use crate::engine::state::Core;
use crate::routine::{PrKind, PushSpec, Routine};
use crate::run::{Channel, PullRequest, RunRecord};
use crate::store::{Delivery, RoutinePr};
use chrono::{DateTime, Duration as Span, Utc};

/// GitHub keeps at most 65,536 characters of a body; the report is cut well before.
const MAX_BODY: usize = 60_000;
/// Longer than one round of GitHub calls.
const LEASE: std::time::Duration = std::time::Duration::from_secs(180);

/// The branch run `run_id` of `routine` starts from and pushes onto: the pull request's whose
/// review it answers (`on_review: rerun`; an error when that pull request was closed meanwhile),
/// else the routine's open pull request's — `None` when it opens one per run, has none open, or
/// GitHub says it was merged or closed (then it is forgotten). GitHub out of reach: the one on
/// record is taken as open (the push onto it is a fast-forward either way).
pub(crate) fn continued_branch(core: &Core, routine: &Routine, run_id: &str) -> Result<Option<String>, String> {
    let Some(spec) = routine.workspace.push().filter(|s| s.pr.is_some()) else { return Ok(None) };
    let event = core.store.get_run(run_id).ok().and_then(|r| r.event);
    if let Some((review, repo, number)) = event.as_ref().and_then(|e| Some((e.review.as_ref()?, e.repo.as_deref()?, e.number?))) {
        return reviewed_branch(core, review, repo, number).map(Some);
    }
    if spec.pr_per_run {
        return Ok(None);
    }
    let Some(kept) = core.store.routine_pr(&routine.name).ok().flatten() else { return Ok(None) };
    let Ok(token) = crate::engine::accounts::github_token::token(core) else { return Ok(None) };
    Ok(match Api::for_pull_requests(&core.settings().github.api_url, token, &kept.repo).pull(kept.number) {
        Ok(pull) if pull.is_open() => Some(kept.branch),
        Ok(_) => {
            tracing::info!(routine = %routine.name, number = kept.number, "the routine's pull request was merged or closed; its next one is opened afresh");
            let _ = core.store.forget_routine_pr(&routine.name, kept.number);
            None
        }
        Err(Trouble::Refused { words, .. }) => {
            tracing::warn!(routine = %routine.name, %words, "the routine's pull request could not be read; starting afresh");
            None
        }
        Err(Trouble::Passing { .. }) => Some(kept.branch),
    })
}

/// The head branch of reviewed pull request `number` of `repo`, as GitHub says it now (else as
/// the review said it); an error when it is no longer open — a review of a closed pull request
/// is not answered.
fn reviewed_branch(core: &Core, review: &crate::incoming::review::Review, repo: &str, number: u64) -> Result<String, String> {
    let said = || review.head.clone().ok_or_else(|| format!("the review of {repo}#{number} does not say the pull request's branch"));
    let Ok(token) = crate::engine::accounts::github_token::token(core) else { return said() };
    match Api::for_pull_requests(&core.settings().github.api_url, token, repo).pull(number) {
        Ok(pull) if pull.is_open() => Ok(pull.head),
        Ok(pull) => Err(format!("not started: pull request {repo}#{number} was {} before its review was answered", if pull.merged { "merged" } else { "closed" })),
        Err(_) => said(),
    }
}

/// A run settled. One that answers a review owes its answer in the pull request now, unless its
/// push is still to come (then after the push, or after the push gave up). Any other with nothing
/// to push (it made no commit) whose routine says `push.pr` opens no pull request, and says so on
/// the run.
pub(crate) fn settled(core: &Core, run: &RunRecord) {
    let push = run.changes.as_ref().and_then(|c| c.push.as_ref()).map(|p| p.state);
    let wants = core.routines().get(&run.routine).and_then(|r| r.workspace.push()).is_some_and(|s| s.pr.is_some());
    if !wants || run.pull_request.is_some() {
        return;
    }
    let owed = if answered_review(run).is_some() {
        if push == Some(crate::run::PushState::Pending) {
            return;
        }
        owe(core, &run.id, Utc::now())
    } else if push == Some(crate::run::PushState::Nothing) {
        let pr = PullRequest { state: "none".into(), number: None, url: None, repo: None, error: Some("the run changed nothing: no pull request opened".into()), tries: 0, at: Some(Utc::now()) };
        core.store.set_pull_request(&run.id, &pr)
    } else {
        return;
    };
    if let Err(e) = owed {
        tracing::warn!(run = %run.id, error = %e, "could not record what the run owes its pull request");
    }
}

/// The review run `run` answers, with its pull request (`owner/name`, number).
fn answered_review(run: &RunRecord) -> Option<(&crate::incoming::review::Review, &str, u64)> {
    let e = run.event.as_ref()?;
    Some((e.review.as_ref()?, e.repo.as_deref()?, e.number?))
}

/// After the push of run `run_id` gave up: a run that answers a review still answers it (saying
/// the push failed).
pub(crate) fn owe_after_failed_push(core: &Core, run_id: &str, now: DateTime<Utc>) -> crate::error::Result<()> {
    match core.store.get_run(run_id) {
        Ok(run) if answered_review(&run).is_some() && run.pull_request.is_none() => owe(core, run_id, now),
        _ => Ok(()),
    }
}

/// The pull request step of run `run_id` is owed from `now`.
fn owe(core: &Core, run_id: &str, now: DateTime<Utc>) -> crate::error::Result<()> {
    core.store.set_pull_request(run_id, &PullRequest { state: "pending".into(), number: None, url: None, repo: None, error: None, tries: 0, at: Some(now) })?;
    core.store.owe(run_id, &Channel::PullRequest, now)
}

/// After the push of run `run_id` succeeded: its pull request is owed (routine `routine` says
/// `push.pr`).
pub(crate) fn owe_after_push(core: &Core, run_id: &str, routine: &str, now: DateTime<Utc>) -> crate::error::Result<()> {
    let set = core.routines();
    if set.get(routine).and_then(|r| r.workspace.push()).is_none_or(|s| s.pr.is_none()) {
        return Ok(());
    }
    owe(core, run_id, now)
}

/// Open or update every pull request that is due; returns when the next try is due.
pub(crate) fn open_due(core: &Core) -> crate::error::Result<Option<DateTime<Utc>>> {
    loop {
        let now = Utc::now();
        let due = core.store.lease_due(&Channel::PullRequest, now, now + Span::from_std(LEASE).unwrap_or_default(), 8)?;
        if due.is_empty() {
            return core.store.next_delivery_due(&Channel::PullRequest);
        }
        for entry in due {
            let Ok(run) = core.store.get_run(&entry.run_id) else {
                core.store.settle_delivery(&entry.run_id, &Channel::PullRequest, Delivery::NotNeeded, Some("the run no longer exists"), now)?;
                continue;
            };
            let set = core.routines();
            let spec = set.get(&run.routine).and_then(|r| r.workspace.push().cloned()).filter(|s| s.pr.is_some());
            let mut pr = run.pull_request.clone().unwrap_or(PullRequest { state: "pending".into(), number: None, url: None, repo: None, error: None, tries: 0, at: None });
            pr.tries = entry.attempts + 1;
            pr.at = Some(Utc::now());
            let outcome = match spec {
                None => Err(Trouble::Refused { status: 0, words: format!("the routine {} no longer says `push.pr`: no pull request opened", run.routine) }),
                Some(spec) => open_or_update(core, &run, &spec, &mut pr),
            };
            match outcome {
                Ok(()) => {
                    tracing::info!(run = %run.id, state = %pr.state, number = ?pr.number, "the run's pull request");
                    core.store.set_pull_request(&run.id, &pr)?;
                    core.store.settle_delivery(&run.id, &Channel::PullRequest, Delivery::Delivered, None, Utc::now())?;
                    owe_news(core, &run, &pr)?;
                }
                Err(trouble) => {
                    let words = core.redactor.redact(trouble.words());
                    pr.error = Some(words.clone());
                    match (&trouble, core.push_backoff.get(entry.attempts as usize)) {
                        (Trouble::Passing { retry_at, .. }, Some(wait)) => {
                            pr.state = "pending".into();
                            core.store.set_pull_request(&run.id, &pr)?;
                            let next = retry_at.unwrap_or_else(|| Utc::now() + Span::from_std(*wait).unwrap_or_default());
                            core.store.retry_delivery(&run.id, &Channel::PullRequest, &words, next)?;
                        }
                        _ => {
                            tracing::warn!(run = %run.id, error = %words, "no pull request for the run");
                            pr.state = "failed".into();
                            core.store.set_pull_request(&run.id, &pr)?;
                            core.store.settle_delivery(&run.id, &Channel::PullRequest, Delivery::NotDelivered, Some(&words), Utc::now())?;
                        }
                    }
                }
            }
            if let Ok(run) = core.store.get_run(&entry.run_id) {
                core.emit(crate::events::EngineEvent::RunUpdated { run: Box::new(run) });
            }
            crate::engine::signal::wake(core);
        }
    }
}

/// The routine's webhooks that hear of its completed runs hear of its pull request too: the run's
/// finish post went out before there was one.
fn owe_news(core: &Core, run: &RunRecord, pr: &PullRequest) -> crate::error::Result<()> {
    if pr.url.is_none() {
        return Ok(());
    }
    let listed = core.routines().get(&run.routine).map(|r| r.webhooks.clone()).unwrap_or_default();
    let owed = crate::webhook::owed(false, &listed, &core.settings());
    for channel in &owed {
        core.store.owe(&run.id, &channel.clone().pull_request_news(), Utc::now())?;
    }
    if !owed.is_empty() {
        core.wakes.kick(crate::engine::signal::Wake::Webhooks);
    }
    Ok(())
}

/// Open the run's pull request, or update the routine's open one it pushed onto; `pr` says how
/// it went.
fn open_or_update(core: &Core, run: &RunRecord, spec: &PushSpec, pr: &mut PullRequest) -> Result<(), Trouble> {
    let refused = |words: String| Trouble::Refused { status: 0, words };
    if let Some((review, repo, number)) = answered_review(run) {
        return answer_review(core, run, spec, pr, (review, repo, number));
    }
    let changes = run.changes.as_ref().ok_or_else(|| refused("the run has no branch".into()))?;
    let push = changes.push.as_ref().ok_or_else(|| refused("the run's branch was not pushed".into()))?;
    let branch = push.onto.clone().or_else(|| changes.branch.clone()).ok_or_else(|| refused("the run has no branch".into()))?;
    if changes.commits.is_empty() && changes.files_changed == 0 {
        pr.state = "none".into();
        pr.error = Some("the run changed nothing: no pull request opened".into());
        return Ok(());
    }
    let repo = match &spec.repo {
        Some(r) => r.clone(),
        None => repo_of_remote(std::path::Path::new(&changes.repo), &spec.remote).map_err(refused)?,
    };
    pr.repo = Some(repo.clone());
    let token = crate::engine::accounts::github_token::token(core).map_err(|e| refused(format!("no pull request opened: {e}")))?;
    let api = Api::for_pull_requests(&core.settings().github.api_url, token, &repo);
    let report = run.report_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    let title = title(core, spec, run, &report);
    let body = body(core, run, &report);
    // The routine's open one, which this run continued: its body (and title) updated.
    if let Some(kept) = core.store.routine_pr(&run.routine).ok().flatten().filter(|k| push.onto.as_deref() == Some(k.branch.as_str()) && k.repo == repo) {
        let pull = api.pull(kept.number)?;
        if pull.is_open() {
            let pull = api.update_pull(kept.number, &title, &body)?;
            (pr.state, pr.number, pr.url, pr.error) = ("updated".into(), Some(pull.number), Some(pull.url), None);
            return Ok(());
        }
        let _ = core.store.forget_routine_pr(&run.routine, kept.number);
    }
    let base = match spec.base.clone().or_else(|| core.routines().get(&run.routine).and_then(|r| match &r.workspace {
        crate::routine::Workspace::Worktree { base, .. } => base.clone(),
        _ => None,
    })) {
        Some(b) => b,
        None => api.default_branch()?,
    };
    let pull = api.open_pull(&NewPull { title: &title, head: &branch, base: &base, body: &body, draft: spec.pr == Some(PrKind::Draft) })?;
    (pr.state, pr.number, pr.url, pr.error) = ("opened".into(), Some(pull.number), Some(pull.url.clone()), None);
    if !spec.pr_per_run {
        let _ = core.store.keep_routine_pr(&run.routine, &RoutinePr { repo: repo.clone(), number: pull.number, url: pull.url.clone(), branch: branch.clone(), opened_by: run.id.clone() });
    }
    // Labels and reviewers: the pull request is open either way; what failed is said on it.
    let mut missed = Vec::new();
    if !spec.labels.is_empty() {
        if let Err(e) = api.add_labels(pull.number, &spec.labels) {
            missed.push(e.words().to_string());
        }
    }
    if !spec.reviewers.is_empty() {
        if let Err(e) = api.request_reviewers(pull.number, &spec.reviewers) {
            missed.push(e.words().to_string());
        }
    }
    pr.error = (!missed.is_empty()).then(|| core.redactor.redact(&missed.join("; ")));
    Ok(())
}

/// `owner/name` from `remote`'s URL in `repo_dir` when it is GitHub's (`https://github.com/o/n`,
/// `git@github.com:o/n.git`, `ssh://git@github.com/o/n`).
fn repo_of_remote(repo_dir: &std::path::Path, remote: &str) -> Result<String, String> {
    let url = crate::git::Git::new(repo_dir, &["remote", "get-url", remote]).run().map_err(|e| format!("the remote {remote} could not be read: {e}"))?;
    let url = url.trim();
    let path = url
        .strip_prefix("https://github.com/")
        .or_else(|| url.strip_prefix("git@github.com:"))
        .or_else(|| url.strip_prefix("ssh://git@github.com/"))
        .map(|p| p.trim_end_matches('/').trim_end_matches(".git"));
    match path.filter(|p| p.split('/').count() == 2) {
        Some(p) => Ok(p.to_string()),
        None => Err(format!("no pull request opened: the remote {remote} ({url}) is not a GitHub repository Nightshift can name; say which with `push: {{remote: {remote}, repo: owner/name, …}}`")),
    }
}

/// The title: `push.title` with the prompt's placeholders, else the report's first line, else
/// "<routine>: <date>" — one line, at most 200 characters, masked.
fn title(core: &Core, spec: &PushSpec, run: &RunRecord, report: &str) -> String {
    let now = Utc::now();
    let routine = core.routines().get(&run.routine).cloned();
    let tz = routine.as_ref().map(|r| r.timezone).unwrap_or_else(crate::schedule::local_tz);
    let empty = std::collections::BTreeMap::new();
    let title = match &spec.title {
        Some(template) => {
            let cx = crate::routine::prompt::PromptContext { routine: &run.routine, now, tz, last_report: None, variables: routine.as_ref().map(|r| &r.variables).unwrap_or(&empty), branch: None, event: run.event.as_ref() };
            crate::routine::prompt::render(template, &cx)
        }
        None => report.lines().map(|l| l.trim().trim_start_matches('#').trim()).find(|l| !l.is_empty()).map(str::to_string).unwrap_or_else(|| format!("{}: {}", run.routine, now.with_timezone(&tz).format("%Y-%m-%d"))),
    };
    crate::words::first_line(&core.redactor.redact(&title), 200)
}

/// The body: the run's report ([`inert`]) and a footer naming the run.
fn body(core: &Core, run: &RunRecord, report: &str) -> String {
    format!("{}\n\n---\n<sub>Opened by Nightshift · {}</sub>\n", inert(core, run, report, MAX_BODY), footer(core, run).join(" · "))
}

/// The run's report as text GitHub shows and never renders as markup: secrets masked, HTML made
/// inert (`<` written as `&lt;`, so a report's tags are shown), cut to `max` characters.
fn inert(core: &Core, run: &RunRecord, report: &str, max: usize) -> String {
    let masked = core.redactor.redact(report).replace('<', "&lt;");
    let mut text: String = masked.chars().take(max).collect();
    if masked.chars().nth(max).is_some() {
        text.push_str("\n\n… (cut here: the whole report is in the run's folder, `nightshiftctl report ");
        text.push_str(&run.id);
        text.push_str("`)");
    }
    text
}

/// What names the run under what Nightshift writes on GitHub: routine, run, agent, account, cost.
fn footer(core: &Core, run: &RunRecord) -> Vec<String> {
    let mut footer = vec![format!("routine `{}`", run.routine), format!("run `{}`", run.id), run.agent.as_str().to_string()];
    footer.extend(run.account.as_ref().map(|a| core.redactor.redact(a)));
    footer.extend(run.cost_usd.map(|c| format!("${c:.2}")));
    footer
}

/// A review answer's report is a comment, not a pull request's body: shorter.
const MAX_ANSWER: usize = 20_000;

/// Answer the review run `run` was started for, in its pull request's conversation: what it
/// changed (its commits are on the pull request's branch), or why it changed nothing — and when
/// that ends the loop (a round without change, or the last of `review_rounds`), say so there and
/// on the desktop.
fn answer_review(core: &Core, run: &RunRecord, spec: &PushSpec, pr: &mut PullRequest, (review, repo, number): (&crate::incoming::review::Review, &str, u64)) -> Result<(), Trouble> {
    pr.repo = Some(repo.to_string());
    pr.number = Some(number);
    let token = crate::engine::accounts::github_token::token(core).map_err(|e| Trouble::Refused { status: 0, words: format!("the review was not answered in the pull request: {e}") })?;
    let api = Api::for_pull_requests(&core.settings().github.api_url, token, repo);
    let rounds = core.store.review_rounds(&run.routine, repo, number).unwrap_or_default();
    let round = rounds.iter().position(|r| r.run_id == run.id).map_or(rounds.len().max(1), |i| i + 1);
    let of = spec.review.map_or(round, |r| r.rounds as usize);
    let changes = run.changes.as_ref();
    let push = changes.and_then(|c| c.push.as_ref());
    let commits = changes.map_or(0, |c| c.commits.len());
    let pushed = push.is_some_and(|p| p.state == crate::run::PushState::Pushed) && commits > 0;
    let who = review.author.as_deref().map(|a| format!("@{a}'s")).unwrap_or_else(|| "the".into());
    let report = run.report_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
    let (head, state, end) = match (run.status, pushed, push.map(|p| p.state)) {
        (_, true, _) => {
            let branch = push.and_then(|p| p.onto.clone()).or_else(|| changes.and_then(|c| c.branch.clone())).unwrap_or_default();
            let end = (round >= of).then(|| format!("This was the last review round (`review_rounds: {of}`): further reviews of this pull request are left to people."));
            (format!("**Nightshift** answered {who} review (round {round} of {of}) with {commits} commit{} pushed to `{branch}`:", if commits == 1 { "" } else { "s" }), "answered", end)
        }
        (crate::run::RunStatus::Completed, false, Some(crate::run::PushState::Failed)) => {
            let why = push.and_then(|p| p.error.clone()).unwrap_or_default();
            (format!("**Nightshift** worked on {who} review (round {round} of {of}), but its commits could not be pushed ({}); they are on its branch on the machine that ran it:", core.redactor.redact(&why).replace('<', "&lt;")), "failed", None)
        }
        (crate::run::RunStatus::Completed, false, _) => (
            format!("**Nightshift** made no change for {who} review (round {round} of {of}):"),
            PullRequest::UNCHANGED,
            Some("A round that changes nothing ends the loop: Nightshift no longer answers reviews of this pull request.".to_string()),
        ),
        (status, _, _) => {
            let why = run.message.as_deref().map(|m| format!(": {}", core.redactor.redact(m).replace('<', "&lt;"))).unwrap_or_default();
            (format!("**Nightshift**'s run for {who} review (round {round} of {of}) did not complete ({}{why}); the next review is answered again.", status.as_str()), "failed", None)
        }
    };
    let mut comment = format!("{head}\n\n{}", inert(core, run, &report, MAX_ANSWER));
    if let Some(end) = &end {
        comment += &format!("\n\n{end}");
    }
    comment += &format!("\n\n---\n<sub>Nightshift · {}</sub>\n", footer(core, run).join(" · "));
    let url = api.comment(number, &comment)?;
    (pr.state, pr.url, pr.error) = (state.to_string(), Some(url), None);
    if let Some(end) = end {
        core.emit(crate::events::EngineEvent::ReviewLoopEnded { routine: run.routine.clone(), pull: format!("{repo}#{number}"), why: end });
    }
    Ok(())
}
