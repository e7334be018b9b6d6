//! A delivery from GitHub or Linear becomes runs: believed (its signature under the secret the
//! user set), read into an [`Event`], checked against every routine's `trigger:`, and for each
//! that matches claimed like a slot — one run per delivery and routine, whoever received it and
//! however often it came (`Store::claim_event_run`) — then queued under the routine's `overlap`
//! rule like a scheduled run. What became of it is kept for `hooks list`.

use crate::engine::state::Core;
use crate::engine::state::Engine;
use crate::accounts::keychain;
use crate::error::{Error, ErrorCode, Result};
use crate::incoming::{github, linear, signature, Event, Source};
use crate::store::Verdict;
use super::claim::{held_back, off_thread, start};
use std::sync::Arc;

/// The largest delivery taken. GitHub caps its payloads at 25 MB; so does Nightshift, so no
/// delivery GitHub sends is refused for its size.
pub const MAX_BODY: usize = 25 * 1024 * 1024;

/// One delivery as it arrived, before anything believes it.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    pub source: Source,
    /// `X-GitHub-Event` (GitHub; Linear's type is in the body).
    pub event: Option<&'a str>,
    /// `X-GitHub-Delivery` / `Linear-Delivery`.
    pub id: Option<&'a str>,
    /// `X-Hub-Signature-256` / `Linear-Signature`.
    pub signature: Option<&'a str>,
    pub body: &'a [u8],
}

/// The answer to a delivery: the HTTP status, words for the sender's delivery log, and what
/// became of it for each routine.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    pub status: u16,
    pub message: String,
    pub verdicts: Vec<Verdict>,
}

impl Receipt {
    fn refused(status: u16, message: impl Into<String>) -> Receipt {
        Receipt { status, message: message.into(), verdicts: Vec::new() }
    }
}

/// The keychain user of a source's signing secret.
fn secret_user(source: Source) -> String {
    format!("hook:{}", source.as_str())
}

/// The engine's environment variable that may hold a source's signing secret.
pub fn secret_var(source: Source) -> String {
    format!("NIGHTSHIFT_HOOK_SECRET_{}", source.as_str().to_uppercase())
}

/// The signing secret for `source`: the OS keychain's (`hooks set-secret`), else the engine's
/// `NIGHTSHIFT_HOOK_SECRET_<SOURCE>`. Kept in memory once read (a keychain read per delivery
/// would be slow); `fresh` reads it again (after a signature did not match the kept one: it may
/// have been changed by another process). The keychain is read on the blocking pool, with no
/// lock held (it may take seconds to answer).
async fn hook_secret(core: &Arc<Core>, source: Source, fresh: bool) -> std::result::Result<Option<String>, String> {
    if !fresh {
        if let Some(s) = core.hook_secrets.lock().unwrap_or_else(|e| e.into_inner()).get(&source) {
            return Ok(Some(s.clone()));
        }
    }
    let c = Arc::clone(core);
    let secret = off_thread(move || crate::engine::accounts::secrets::kept_or_env(&c, &secret_user(source), &secret_var(source)))
        .await
        .ok_or_else(|| "the keychain read did not finish".to_string())?
        .map_err(|unavailable| unavailable.0)?;
    let mut kept = core.hook_secrets.lock().unwrap_or_else(|e| e.into_inner());
    match &secret {
        Some(s) => kept.insert(source, s.clone()),
        None => kept.remove(&source),
    };
    Ok(secret)
}

/// Whether `d` is signed by `source`'s sender under `secret`.
fn believed(core: &Core, d: &Delivery<'_>, secret: &str) -> std::result::Result<(), signature::Refused> {
    match d.source {
        Source::GitHub => signature::github(secret, d.signature, d.body),
        Source::Linear => signature::linear(secret, d.signature, d.body, core.clock.now().timestamp_millis()),
    }
}

impl Engine {
    /// Store (or replace) the secret `source` signs its deliveries with, in the OS keychain.
    pub fn set_hook_secret(&self, source: Source, secret: &str) -> Result<()> {
        let secret = secret.trim_end_matches(['\n', '\r']);
        if secret.is_empty() {
            return Err(Error::new(ErrorCode::Usage, format!("the {} secret is empty (give it on stdin)", source.as_str())));
        }
        self.core.redactor.register(secret);
        keychain::set_secret(&self.core.settings().keychain_service, &secret_user(source), secret, &format!("or set {} for the app or daemon", secret_var(source)))
            .map_err(|e| Error::new(ErrorCode::Io, e.0))?;
        self.core.hook_secrets.lock().unwrap_or_else(|e| e.into_inner()).insert(source, secret.to_string());
        Ok(())
    }

    /// The latest deliveries, newest first, with what became of each.
    pub fn deliveries(&self, limit: usize) -> Result<Vec<crate::store::Received>> {
        self.core.store.deliveries(limit)
    }

    /// Take one delivery: refuse it unless it is signed and whole, else fire every routine whose
    /// `trigger:` it matches (once per routine, ever) and say what became of it.
    pub async fn receive(&self, d: Delivery<'_>) -> Receipt {
        let core = &self.core;
        let name = d.source.as_str();
        let secret = match hook_secret(core, d.source, false).await {
            Ok(Some(s)) => s,
            Ok(None) => return Receipt::refused(401, format!("no {name} secret is set here: `nightshiftctl hooks set-secret {name}` (or {}) — nothing was fired", secret_var(d.source))),
            Err(why) => return Receipt::refused(503, format!("the {name} secret could not be read: {why}")),
        };
        if let Err(refused) = believed(core, &d, &secret) {
            // Changed in another process since it was kept? One fresh read, then the verdict.
            let again = match (refused, hook_secret(core, d.source, true).await) {
                (signature::Refused::Wrong, Ok(Some(fresh))) if fresh != secret => believed(core, &d, &fresh),
                _ => Err(refused),
            };
            if let Err(refused) = again {
                tracing::warn!(source = name, why = refused.words(), "a delivery was refused");
                return Receipt::refused(401, format!("refused: {} — nothing was fired", refused.words()));
            }
        }
        let Some(delivery) = d.id.map(str::trim).filter(|id| !id.is_empty() && id.len() <= 200) else {
            let header = if d.source == Source::GitHub { "X-GitHub-Delivery" } else { "Linear-Delivery" };
            return Receipt::refused(400, format!("no {header} header: a delivery without its id could run twice — nothing was fired"));
        };
        let body: serde_json::Value = match serde_json::from_slice(d.body) {
            Ok(v) => v,
            Err(e) => return Receipt::refused(400, format!("the body is not JSON ({e}); set the webhook's content type to application/json")),
        };
        let event = match d.source {
            Source::GitHub => match github::read(d.event.unwrap_or(""), delivery, &body) {
                github::Read::Event(e) => Some(*e),
                github::Read::Ping => return Receipt::refused(200, "pong: the signature matches; routines run on pull_request, push, issue_comment and workflow_run (and pull_request_review, for a routine whose pull request it reviews)"),
                github::Read::Other => None,
            },
            Source::Linear => {
                let (seen, read) = (linear::state_seen(&body), linear::read(delivery, &body));
                let core = Arc::clone(core);
                off_thread(move || {
                    if let Some((id, state)) = seen {
                        let _ = core.store.remember_linear_state(&id, &state);
                    }
                    read.map(|mut e| {
                        if let Some(left) = e.facts.left_state.as_mut() {
                            left.name = core.store.linear_state(&left.id).ok().flatten();
                        }
                        e
                    })
                })
                .await
                .flatten()
            }
        };
        let Some(event) = event else {
            let what = d.event.or(body["type"].as_str()).unwrap_or("unknown");
            return Receipt::refused(202, format!("received {name}:{what}; no trigger runs on it — nothing was fired"));
        };
        self.take(&event, Arc::new(d.body.to_vec())).await
    }

    /// Fire every routine `event` matches (its payload `raw`, kept beside each run) and record
    /// the arrival: where a delivery and a polled entry meet.
    pub(crate) async fn take(&self, event: &Event, raw: Arc<Vec<u8>>) -> Receipt {
        let core = &self.core;
        let delivery = event.delivery.as_str();
        let verdicts = fire(core, event, raw).await;
        let summary = self.redact(&event.words());
        let (store, now, kept) = (Arc::clone(&core.store), core.clock.now(), (event.clone(), summary.clone(), verdicts.clone()));
        match off_thread(move || store.record_delivery(&kept.0, &kept.1, &kept.2, now)).await {
            Some(Ok(_)) => {}
            Some(Err(e)) => tracing::error!(delivery, error = %e, "could not record a delivery"),
            None => tracing::error!(delivery, "could not record a delivery: the task ended"),
        }
        let fired: Vec<String> = verdicts.iter().filter(|v| v.outcome == "fired").map(|v| format!("{} (run {})", v.routine, v.run_id.as_deref().unwrap_or("?"))).collect();
        let message = match (fired.is_empty(), verdicts.is_empty()) {
            (false, _) => format!("fired {}", fired.join(", ")),
            (true, true) => format!("received {summary}; no routine's trigger names it"),
            (true, false) => format!("received {summary}; nothing fired: {}", verdicts.iter().map(|v| format!("{} {}", v.routine, v.outcome)).collect::<Vec<_>>().join(", ")),
        };
        Receipt { status: 202, message, verdicts }
    }
}

/// Every routine whose trigger names `event`'s source and name, with what became of the event
/// for it: fired (a run, claimed once per delivery), or why not — and for a review, the routine
/// whose pull request it reviews ([`super::reviews`]).
async fn fire(core: &Arc<Core>, event: &Event, raw: Arc<Vec<u8>>) -> Vec<Verdict> {
    let set = core.routines();
    let mut verdicts = Vec::new();
    for r in set.routines.iter().filter(|r| r.trigger.as_ref().is_some_and(|t| t.source == event.source && t.event == event.name)) {
        let verdict = |outcome: &str, run_id: Option<String>, why: Option<String>| Verdict { routine: r.name.clone(), outcome: outcome.into(), run_id, why };
        let trigger = r.trigger.as_ref().expect("filtered on it");
        if let Err(why) = trigger.check(event) {
            verdicts.push(verdict("filtered", None, Some(why)));
            continue;
        }
        if let Some((outcome, why)) = held_back(core, r).await {
            verdicts.push(verdict(&outcome, None, Some(why)));
            continue;
        }
        verdicts.push(match start(core, r, event, Arc::clone(&raw)).await {
            Ok(v) => v,
            Err(e) => verdict("error", None, Some(e.message)),
        });
    }
    if event.source == Source::GitHub && event.name == github::REVIEW {
        verdicts.extend(super::reviews::answer(core, event, raw).await);
    }
    verdicts
}

