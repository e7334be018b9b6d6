//! A review of a pull request a routine opened brings the routine back (`on_review: rerun`): the
//! review — delivered signed or seen by polling, one run either way (its identity is the review's
//! id) — starts a run on the pull request's branch with the review's comments
//! (`{review.comments}`, and in `NIGHTSHIFT_EVENT_PATH` under `review.comments`). Bounded, as a
//! loop with a person must be: `review_rounds` rounds per pull request, none after a round that
//! changed nothing, never a review by Nightshift's own token (it would answer itself), and only
//! collaborators' reviews unless `review_from: anyone`. A review that is not answered says why in
//! `hooks list`; one that ends the loop is also said on the desktop.

use super::claim::{held_back, start};
use crate::actions::api::{Api, Trouble};
use crate::engine::state::Core;
use crate::events::EngineEvent;
use crate::incoming::review::Review;
use crate::incoming::Event;
use crate::routine::{ReviewFrom, ReviewLoop, Routine};
use crate::store::Verdict;
use std::sync::Arc;

/// What became of review `event` for the routine whose run opened its pull request (nothing when
/// no routine here opened it).
pub(super) async fn answer(core: &Arc<Core>, event: &Event, raw: Arc<Vec<u8>>) -> Vec<Verdict> {
    let (Some(review), Some(repo), Some(number)) = (event.review.clone(), event.repo.clone(), event.number) else { return Vec::new() };
    let (store, r) = (Arc::clone(&core.store), repo.clone());
    let Some(Ok(Some(name))) = tokio::task::spawn_blocking(move || store.opener_of_pull(&r, number)).await.ok() else { return Vec::new() };
    let set = core.routines();
    let Some(routine) = set.get(&name).cloned() else { return Vec::new() };
    let verdict = |outcome: &str, why: String| vec![Verdict { routine: name.clone(), outcome: outcome.into(), run_id: None, why: Some(why) }];
    let Some(rule) = routine.workspace.push().and_then(|p| p.review) else {
        return verdict("filtered", "the routine does not say `on_review: rerun`".into());
    };
    if event.action.as_deref() != Some("submitted") {
        return verdict("filtered", format!("only a submitted review is answered (this one was {})", event.action.as_deref().unwrap_or("no action")));
    }
    // (A comment-only review's words are its line comments, read below.)
    if !matches!(review.state.as_str(), "changes_requested" | "commented") {
        return verdict("filtered", format!("a review that is {} asks for no work", review.state.replace('_', " ")));
    }
    if let Some((outcome, why)) = held_back(core, &routine).await {
        return verdict(&outcome, why);
    }
    let (store, (n, r)) = (Arc::clone(&core.store), (name.clone(), repo.clone()));
    let rounds = match tokio::task::spawn_blocking(move || store.review_rounds(&n, &r, number)).await {
        Ok(Ok(rounds)) => rounds,
        Ok(Err(e)) => return verdict("error", e.message),
        Err(e) => return verdict("error", e.to_string()),
    };
    // This review answered already (a redelivery, or the other path): the claim says which run.
    let again = rounds.iter().any(|round| round.review == Some(review.id));
    let (c, rv, rp) = (Arc::clone(core), review.clone(), repo.clone());
    let checked = tokio::task::spawn_blocking(move || check(&c, &rp, number, &rv, rule, again)).await;
    let comments = match checked {
        Ok(Ok(comments)) => comments,
        Ok(Err(Refusal::Filtered(why))) => return verdict("filtered", why),
        Ok(Err(Refusal::Unknown(why))) => return verdict("error", format!("{why} — nothing was fired; redeliver it from the webhook's settings on GitHub once it can be checked")),
        Err(e) => return verdict("error", e.to_string()),
    };
    if !again {
        if let Some(why) = ended(&rounds, rule) {
            let url = event.url.clone().unwrap_or_else(|| format!("{repo}#{number}"));
            core.emit(EngineEvent::ReviewLoopEnded { routine: name.clone(), pull: format!("{repo}#{number}"), why: format!("{why} — the review ({url}) is left to you") });
            return verdict("ended", why);
        }
    }
    let mut event = event.clone();
    let mut raw = raw;
    if let (Some(comments), Some(r)) = (comments, event.review.as_mut()) {
        r.comments = crate::incoming::review::comments(&comments);
        let mut payload: serde_json::Value = serde_json::from_slice(&raw).unwrap_or_default();
        if payload["review"].is_object() {
            payload["review"]["comments"] = comments;
            raw = Arc::new(serde_json::to_vec(&payload).unwrap_or_else(|_| raw.to_vec()));
        }
    }
    if !again && !event.review.as_ref().is_some_and(Review::asks_for_work) {
        return verdict("filtered", "a review that only comments, with no words and no line comments, asks for no work".into());
    }
    match start(core, &routine, &event, raw).await {
        Ok(v) => vec![v],
        Err(e) => verdict("error", e.message),
    }
}

/// Why a review is not answered.
enum Refusal {
    /// Never: Nightshift's own, or not a collaborator's.
    Filtered(String),
    /// It could not be told (GitHub out of reach): nothing fired, and nothing claimed.
    Unknown(String),
}

/// Who reviewed (not Nightshift's own token; a collaborator unless `review_from: anyone`), then the
/// review's line comments when the payload lacks them (`None`: it had them, or it was answered
/// already).
fn check(core: &Core, repo: &str, number: u64, review: &Review, rule: ReviewLoop, again: bool) -> Result<Option<serde_json::Value>, Refusal> {
    let token = crate::engine::accounts::github_token::token(core).map_err(|e| Refusal::Unknown(format!("the reviewer could not be checked: {e}")))?;
    let api = Api::for_pull_requests(&core.settings().github.api_url, token, repo);
    let unknown = |t: Trouble| Refusal::Unknown(core.redactor.redact(t.words()));
    let author = review.author.as_deref().unwrap_or_default();
    let own = api.login().map_err(unknown)?;
    if author.eq_ignore_ascii_case(&own) {
        return Err(Refusal::Filtered(format!("a review by Nightshift's own GitHub token (@{own}) is never answered: it would answer itself")));
    }
    if rule.from == ReviewFrom::Collaborators && !api.is_collaborator(author).map_err(unknown)? {
        return Err(Refusal::Filtered(format!("@{author} is not a collaborator of {repo} (`review_from: anyone` answers anyone's reviews)")));
    }
    if again || !review.comments.is_empty() {
        return Ok(None);
    }
    api.review_comments(number, review.id).map(Some).map_err(unknown)
}

/// Why the loop is over for this pull request: a round changed nothing, or every round is spent.
fn ended(rounds: &[crate::store::ReviewRound], rule: ReviewLoop) -> Option<String> {
    if let Some(last) = rounds.iter().rev().find(|r| r.state.as_deref() == Some(crate::run::PullRequest::UNCHANGED)) {
        return Some(format!("Nightshift stopped answering reviews of this pull request after a round that changed nothing (run {})", last.run_id));
    }
    (rounds.len() as u32 >= rule.rounds).then(|| format!("its {} review rounds are spent (`review_rounds: {}`)", rule.rounds, rule.rounds))
}

/// Whether `routine` answers reviews (for polling: the repositories of its pull requests are asked
/// too).
pub(crate) fn answers_reviews(routine: &Routine) -> bool {
    routine.workspace.push().is_some_and(|p| p.review.is_some())
}
