//! Polling GitHub for the events `trigger:`s name (`[github] poll = "2m"`), for a machine no
//! webhook can reach. Each repository a `github_event` trigger names is asked
//! `GET {api_url}/repos/{owner}/{repo}/events` with the last answer's ETag: an unchanged answer is
//! a 304 and costs no rate limit. Entries newer than the repository's cursor (kept in the
//! database) are read in a delivery's shape ([`crate::incoming::polled`]) and taken like one —
//! oldest first, the cursor moved after each — so a restart neither misses nor repeats one, and
//! an event the receiver took too is one run ([`crate::incoming::Sameness`]). The first answer
//! for a repository only sets its cursor: history is not fired.
//!
//! GitHub's limits are kept: its `X-Poll-Interval` is the least wait between asks, and a spent
//! rate limit (`X-RateLimit-Remaining: 0`, or a 403/429 with `Retry-After`) holds polling until
//! `X-RateLimit-Reset`.

use crate::engine::signal::AbortOnDrop;
use crate::engine::state::Core;
use crate::engine::state::Engine;
use crate::incoming::polled::{self, Entry};
use crate::incoming::Source;
use chrono::{DateTime, Utc};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

pub use crate::engine::accounts::github_token::TOKEN_USER;
use crate::engine::accounts::github_token::token;
/// The Events API gives at most this many pages of 100 (300 entries).
const MAX_PAGES: usize = 3;

/// Poll for as long as the returned handle lives (polling follows the settings as they change:
/// `[github] poll` set later starts it, unset stops it; with it off, only a change of the settings
/// — or the fallback look — wakes the loop).
pub(crate) fn start(engine: &Engine) -> AbortOnDrop {
    let engine = engine.clone();
    AbortOnDrop::spawn(async move {
        let mut poller = Poller::default();
        let mut changes = engine.core.events.subscribe();
        loop {
            let Some(every) = engine.core.settings().github.poll() else {
                crate::engine::signal::sleep_or_settings_change(&mut changes, crate::engine::signal::FALLBACK).await;
                continue;
            };
            let pass = poller.pass(&engine).await;
            let wait = pass.wait.max(every);
            tokio::time::sleep(wait).await;
        }
    })
}

/// What the poller keeps between passes.
pub struct Poller {
    /// One HTTP client for every pass: its connections to GitHub are kept alive between them.
    http: ureq::Agent,
    /// GitHub's `X-Poll-Interval`: the least wait it asks for.
    interval: Option<Duration>,
    /// No asks before this (a spent rate limit).
    held_until: Option<DateTime<Utc>>,
    /// What the last pass said of each repository that failed (said once until it changes).
    said: std::collections::HashMap<String, String>,
    /// The token and when it was read: a keychain read per pass would be a Secret Service call
    /// every `poll`. Read again after [`TOKEN_KEPT`] (a `github set-token` takes effect) or once
    /// GitHub refused it.
    token: Option<(String, DateTime<Utc>)>,
}

/// How long a token read is used before it is read again.
const TOKEN_KEPT: chrono::Duration = chrono::Duration::minutes(10);

impl Default for Poller {
    fn default() -> Self {
        Poller { http: crate::webhook::agent(), interval: None, held_until: None, said: Default::default(), token: None }
    }
}

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Pass {
    /// Repositories asked.
    pub asked: usize,
    /// Answers that were 304 Not Modified.
    pub unchanged: usize,
    /// Entries taken (each fired what it matched, or nothing).
    pub taken: usize,
    /// Repositories whose cursor was set by their first answer (nothing fired).
    pub started: usize,
    /// What failed, in words, per repository (or `*` for all: no token, a spent rate limit).
    pub problems: Vec<(String, String)>,
    /// The least wait before the next pass GitHub asked for.
    pub wait: Duration,
}

/// One answer of the Events API, read.
enum Answer {
    NotModified,
    /// Entries newer than the cursor, oldest first, and the first page's ETag.
    Entries { entries: Vec<Entry>, newest: u64, etag: Option<String>, first: bool },
    /// Why not, in words; `refused`: GitHub refused the token (401).
    Failed { words: String, refused: bool },
}

impl Answer {
    fn failed(words: String) -> Answer {
        Answer::Failed { words, refused: false }
    }
}

impl Poller {
    /// Ask for every repository the triggers name, once, and take what is new.
    pub async fn pass(&mut self, engine: &Engine) -> Pass {
        let core = &engine.core;
        let mut pass = Pass::default();
        let c = Arc::clone(core);
        let repos = tokio::task::spawn_blocking(move || polled_repos(&c)).await.unwrap_or_default();
        if repos.is_empty() {
            return pass;
        }
        let now = core.clock.now();
        if let Some(until) = self.held_until.filter(|t| *t > now) {
            pass.wait = (until - now).to_std().unwrap_or_default();
            pass.problems.push(("*".into(), format!("GitHub's rate limit is spent until {}", crate::words::fmt_time(&until))));
            return pass;
        }
        let token = match self.token.clone().filter(|(_, read)| now - *read < TOKEN_KEPT) {
            Some((token, _)) => token,
            None => {
                let c = Arc::clone(core);
                match tokio::task::spawn_blocking(move || token(&c)).await {
                    Ok(Ok(token)) => {
                        self.token = Some((token.clone(), now));
                        token
                    }
                    Ok(Err(words)) => return self.stopped(core, pass, words),
                    Err(e) => return self.stopped(core, pass, format!("the token could not be read: {e}")),
                }
            }
        };
        clear_problem(core);
        let settings = core.settings();
        let api = settings.github.api_url.trim_end_matches('/').to_string();
        let http = self.http.clone();
        for repo in repos {
            pass.asked += 1;
            let (c, h, a, t, r) = (Arc::clone(core), http.clone(), api.clone(), token.clone(), repo.clone());
            let asked = tokio::task::spawn_blocking(move || ask(&c, &h, &a, &t, &r)).await;
            let (answer, limits) = match asked {
                Ok(asked) => asked,
                Err(e) => (Answer::failed(format!("the ask did not finish: {e}")), Limits::default()),
            };
            self.heed(&limits, core.clock.now());
            match answer {
                Answer::NotModified => pass.unchanged += 1,
                Answer::Failed { words, refused } => {
                    if refused {
                        self.token = None; // read again next pass: it may have been replaced
                    }
                    let words = core.redactor.redact(&words);
                    if self.said.get(&repo) != Some(&words) {
                        tracing::warn!(repo = %repo, problem = %words, "could not poll GitHub for the repository's events");
                        self.said.insert(repo.clone(), words.clone());
                    }
                    pass.problems.push((repo.clone(), words));
                }
                Answer::Entries { entries, newest, etag, first } => {
                    self.said.remove(&repo);
                    if first {
                        tracing::info!(repo = %repo, "polling GitHub for the repository's events from now on (earlier ones are not fired)");
                        pass.started += 1;
                    }
                    for mut entry in entries {
                        if let Some((kind, number)) = entry.wants_whole() {
                            let (h, a, t, r) = (http.clone(), api.clone(), token.clone(), repo.clone());
                            if let Ok(Ok(whole)) = tokio::task::spawn_blocking(move || whole(&h, &a, &t, &r, kind, number)).await {
                                entry.fill(kind, whole);
                            }
                        }
                        if let Some(event) = entry.event() {
                            let raw = serde_json::to_vec(&entry.body).unwrap_or_default();
                            engine.take(&event, Arc::new(raw)).await;
                        }
                        pass.taken += 1;
                        move_cursor(core, &repo, entry.id, None).await;
                    }
                    move_cursor(core, &repo, newest, etag.as_deref()).await;
                }
            }
            if self.held_until.is_some_and(|t| t > core.clock.now()) {
                break; // the limit is spent: the rest waits with it
            }
        }
        let now = core.clock.now();
        pass.wait = self.interval.unwrap_or_default().max(self.held_until.and_then(|t| (t - now).to_std().ok()).unwrap_or_default());
        pass
    }

    /// Nothing can be asked (no token): said once until it changes, kept in the engine's problems.
    fn stopped(&mut self, core: &Core, mut pass: Pass, words: String) -> Pass {
        if self.said.get("*") != Some(&words) {
            tracing::warn!(problem = %words, "not polling GitHub");
            self.said.insert("*".into(), words.clone());
        }
        let said = format!("not polling GitHub (`[github] poll`): {words}");
        let before = core.problems.tell(crate::engine::problems::About::Polling, said.clone());
        if before.as_ref() != Some(&said) {
            core.emit_state(); // atop the window
        }
        pass.problems.push(("*".into(), words));
        pass
    }

    /// Keep GitHub's asks: its poll interval, and no asks while its rate limit is spent.
    fn heed(&mut self, limits: &Limits, now: DateTime<Utc>) {
        if let Some(secs) = limits.poll_interval {
            self.interval = Some(Duration::from_secs(secs));
        }
        let spent = match (limits.remaining, limits.retry_after) {
            (_, Some(secs)) => Some(now + chrono::Duration::seconds(secs as i64)),
            (Some(0), _) => Some(limits.reset.unwrap_or(now + chrono::Duration::minutes(1))),
            _ => None,
        };
        if let Some(until) = spent {
            tracing::warn!(until = %crate::words::fmt_time(&until), "GitHub's rate limit is spent: polling waits until it resets");
            self.held_until = Some(until);
        }
    }
}

/// Every repository a `github_event` trigger names that the Events API carries events for, and
/// those the pull requests of routines that answer reviews (`on_review: rerun`) are on.
fn polled_repos(core: &Core) -> BTreeSet<String> {
    let set = core.routines();
    let triggers = set.routines.iter().filter_map(|r| r.trigger.as_ref()).filter(|t| t.source == Source::GitHub && t.event != "workflow_run").filter_map(|t| t.repo.clone());
    let reviewed = set.routines.iter().filter(|r| crate::engine::inbound::reviews::answers_reviews(r)).flat_map(|r| core.store.pull_repos_of(&r.name).unwrap_or_default());
    triggers.chain(reviewed).collect()
}

fn clear_problem(core: &Core) {
    if core.problems.clear(&crate::engine::problems::About::Polling) {
        core.emit_state();
    }
}

async fn move_cursor(core: &Arc<Core>, repo: &str, last_id: u64, etag: Option<&str>) {
    let (c, repo, etag) = (Arc::clone(core), repo.to_string(), etag.map(str::to_string));
    let now = core.clock.now();
    let moved = tokio::task::spawn_blocking(move || c.store.set_github_cursor(&repo, last_id, etag.as_deref(), now)).await;
    if let Ok(Err(e)) = moved {
        tracing::error!(error = %e, "could not keep the GitHub poll's place");
    }
}

/// GitHub's rate-limit and polling headers of one answer.
#[derive(Debug, Default)]
struct Limits {
    remaining: Option<u64>,
    reset: Option<DateTime<Utc>>,
    retry_after: Option<u64>,
    poll_interval: Option<u64>,
}

impl Limits {
    fn read(r: &ureq::Response) -> Limits {
        let num = |h: &str| r.header(h).and_then(|v| v.trim().parse::<u64>().ok());
        Limits {
            remaining: num("x-ratelimit-remaining"),
            reset: num("x-ratelimit-reset").and_then(|s| DateTime::from_timestamp(s as i64, 0)),
            retry_after: num("retry-after"),
            poll_interval: num("x-poll-interval"),
        }
    }
}

fn get(http: &ureq::Agent, url: &str, token: &str) -> ureq::Request {
    http.get(url).set("Authorization", &format!("Bearer {token}")).set("Accept", "application/vnd.github+json").set("X-GitHub-Api-Version", "2022-11-28")
}

/// One repository's new entries: the first page with the cursor's ETag (a 304 when nothing
/// changed), then further pages while every entry on one is new.
fn ask(core: &Core, http: &ureq::Agent, api: &str, token: &str, repo: &str) -> (Answer, Limits) {
    let cursor = match core.store.github_cursor(repo) {
        Ok(c) => c,
        Err(e) => return (Answer::failed(format!("could not read where polling stands: {e}")), Limits::default()),
    };
    let html = polled::html_url(api);
    let mut url = format!("{api}/repos/{repo}/events?per_page=100");
    let (mut entries, mut etag, mut newest, mut limits) = (Vec::new(), None, None, Limits::default());
    for page in 0..MAX_PAGES {
        let mut request = get(http, &url, token);
        if let (0, Some(tag)) = (page, cursor.as_ref().and_then(|c| c.etag.as_deref())) {
            request = request.set("If-None-Match", tag);
        }
        let response = match request.call() {
            Ok(r) => r,
            Err(ureq::Error::Status(code, r)) => {
                let limits = Limits::read(&r);
                let said: String = r.into_string().unwrap_or_default().chars().take(200).collect();
                let hint = match code {
                    401 => " — the token was refused; store a new one with `nightshiftctl github set-token`",
                    403 | 429 if limits.remaining == Some(0) || limits.retry_after.is_some() => " — GitHub's rate limit is spent; polling waits until it resets",
                    403 | 404 => " — no such repository, or the token cannot read it (a fine-grained token needs read access to its metadata)",
                    _ => "",
                };
                return (Answer::Failed { words: format!("GitHub answered HTTP {code} for {repo}: {}{hint}", said.trim()), refused: code == 401 }, limits);
            }
            Err(ureq::Error::Transport(t)) => return (Answer::failed(format!("could not reach {api}: {t}")), limits),
        };
        limits = Limits::read(&response);
        if response.status() == 304 {
            return (Answer::NotModified, limits);
        }
        if page == 0 {
            etag = response.header("etag").map(str::to_string);
        }
        let next = response.header("link").and_then(next_link);
        let body = match json_body(response) {
            Ok(v) => v,
            Err(e) => return (Answer::failed(format!("GitHub's answer for {repo} is not JSON: {e}")), limits),
        };
        let page_entries: Vec<Entry> = body.as_array().map(|a| a.iter().filter_map(|v| Entry::read(v, &html)).collect()).unwrap_or_default();
        newest = newest.max(page_entries.iter().map(|e| e.id).max());
        let Some(cursor) = &cursor else {
            // The first answer sets the place; what happened before it is history.
            return (Answer::Entries { entries: Vec::new(), newest: newest.unwrap_or(0), etag, first: true }, limits);
        };
        let all_new = page_entries.iter().all(|e| e.id > cursor.last_id);
        entries.extend(page_entries.into_iter().filter(|e| e.id > cursor.last_id));
        match next {
            Some(next) if all_new => url = next,
            _ => break,
        }
    }
    entries.sort_by_key(|e| e.id);
    entries.dedup_by_key(|e| e.id);
    let newest = newest.unwrap_or(0).max(cursor.map(|c| c.last_id).unwrap_or(0));
    (Answer::Entries { entries, newest, etag, first: false }, limits)
}

/// A pull request or issue whole, for an entry GitHub trimmed.
fn whole(http: &ureq::Agent, api: &str, token: &str, repo: &str, kind: &str, number: u64) -> Result<serde_json::Value, String> {
    json_body(get(http, &format!("{api}/repos/{repo}/{kind}/{number}"), token).call().map_err(|e| e.to_string())?)
}

/// An answer's body as JSON (ureq reads at most 10 MB of it).
fn json_body(response: ureq::Response) -> Result<serde_json::Value, String> {
    serde_json::from_str(&response.into_string().map_err(|e| e.to_string())?).map_err(|e| e.to_string())
}

/// The `rel="next"` address of a `Link` header.
fn next_link(link: &str) -> Option<String> {
    link.split(',').find(|part| part.contains("rel=\"next\"")).and_then(|part| Some(part.split_once('<')?.1.split_once('>')?.0.to_string()))
}

impl Engine {
    /// One pass now, outside the scheduler's (`nightshiftctl github poll`): what each repository
    /// answered.
    pub async fn poll_github(&self) -> Pass {
        Poller::default().pass(self).await
    }

    /// Store (or replace) the GitHub token polling asks with, in the OS keychain.
    pub fn set_github_token(&self, token: &str) -> crate::error::Result<()> {
        let token = token.trim();
        if token.is_empty() {
            return Err(crate::error::Error::new(crate::error::ErrorCode::Usage, "the GitHub token is empty (give it on stdin)"));
        }
        self.core.redactor.register(token);
        crate::accounts::keychain::set_secret(&self.core.settings().keychain_service, TOKEN_USER, token, "or set GH_TOKEN for the app or daemon")
            .map_err(|e| crate::error::Error::new(crate::error::ErrorCode::Io, e.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_page_is_read_from_the_link_header() {
        let link = r#"<https://api.github.com/repositories/1/events?per_page=100&page=2>; rel="next", <https://api.github.com/repositories/1/events?per_page=100&page=3>; rel="last""#;
        assert_eq!(next_link(link).as_deref(), Some("https://api.github.com/repositories/1/events?per_page=100&page=2"));
        assert_eq!(next_link(r#"<https://x/events?page=1>; rel="prev""#), None);
    }

    #[test]
    fn a_spent_limit_holds_polling_until_it_resets() {
        let now = Utc::now();
        let mut p = Poller::default();
        p.heed(&Limits { remaining: Some(4000), poll_interval: Some(60), ..Default::default() }, now);
        assert_eq!((p.interval, p.held_until), (Some(Duration::from_secs(60)), None));
        let reset = now + chrono::Duration::minutes(20);
        p.heed(&Limits { remaining: Some(0), reset: Some(reset), ..Default::default() }, now);
        assert_eq!(p.held_until, Some(reset));
        p.heed(&Limits { retry_after: Some(90), ..Default::default() }, now);
        assert_eq!(p.held_until, Some(now + chrono::Duration::seconds(90)), "a secondary limit's Retry-After");
    }
}
