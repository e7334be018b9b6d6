//! Finish notifications from every other home (`[[homes]]`), told on this machine once per run —
//! also when the run ended while this machine slept, was offline or not running.
//!
//! One follower per home: it catches up on what ended since its place (`runs_finished_since`),
//! then follows the home's event stream; a stream that breaks or lags is caught up again. Each
//! run is claimed in this home's database before it is told (`home_told`), so hearing of a run
//! both ways, or from two engines on this machine, tells it once. A burst of more than
//! [`STORM`] at once (a night of runs told on waking) is one summary. A home that cannot be
//! reached is one calm state — logged when it changes, retried with a growing pause — never an
//! error per try.

use super::HomeClient;
use crate::events::EngineEvent;
use crate::notify::{notice_for, summary_for, BoundedSender, Notice, Notifier};
use crate::routine::NotifyPolicy;
use crate::run::RunRecord;
use crate::Engine;
use chrono::{Duration as Span, Utc};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// More runs than this told at once become one summary notification.
pub const STORM: usize = 3;
/// Pauses between tries to reach a home that did not answer.
const RETRY: [Duration; 5] = [Duration::from_secs(1), Duration::from_secs(2), Duration::from_secs(5), Duration::from_secs(15), Duration::from_secs(30)];
/// Catching up reaches back this far before the place (clocks of two machines differ a little;
/// what was told already is not told again).
const SKEW: i64 = 5;
/// Told runs are remembered this long.
const REMEMBER_DAYS: i64 = 14;

/// What a viewer hears of another home, for the faces on this machine (the app's tray and
/// window): the home's own events, and whether it can be reached.
#[derive(Debug, Clone)]
pub enum HomeNews {
    /// Its event stream is open (first, or again after it was down).
    Up { home: String },
    /// It cannot be reached since `since` (said once per outage; retried quietly).
    Down { home: String, since: chrono::DateTime<Utc>, why: String },
    Event { home: String, event: EngineEvent },
}

/// The followers of every listed home, for as long as this lives (the app, `daemon --notify`).
pub struct Viewers {
    task: tokio::task::JoinHandle<()>,
    news: tokio::sync::broadcast::Sender<HomeNews>,
}

impl Viewers {
    /// Hear what the followers hear (each home's events, and its comings and goings).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<HomeNews> {
        self.news.subscribe()
    }
}

impl Drop for Viewers {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Start telling other homes' finishes through `notifier`. Homes added or removed later are
/// followed or dropped as the settings change. Call inside a runtime.
pub fn start(engine: &Engine, notifier: Arc<dyn Notifier>) -> Viewers {
    let engine = engine.clone();
    let sender = Arc::new(BoundedSender::new(notifier));
    let (news, _) = tokio::sync::broadcast::channel(256);
    let told = news.clone();
    let task = tokio::spawn(async move {
        let news = told;
        let mut events = engine.subscribe();
        let mut followers: BTreeMap<String, (String, tokio::task::JoinHandle<()>)> = BTreeMap::new();
        // The homes whose places were last pruned, and when (again when the list changes, or daily).
        let mut pruned: Option<(Vec<String>, std::time::Instant)> = None;
        loop {
            let listed = super::listed(&engine);
            let names: Vec<String> = listed.iter().map(|h| h.name.clone()).collect();
            if pruned.as_ref().is_none_or(|(was, at)| *was != names || at.elapsed() > Duration::from_secs(86_400)) {
                let (store, kept, before) = (Arc::clone(&engine.core.store), names.clone(), engine.core.clock.now() - Span::days(REMEMBER_DAYS));
                let _ = tokio::task::spawn_blocking(move || store.prune_home_views(before, &kept.iter().map(String::as_str).collect::<Vec<_>>())).await;
                pruned = Some((names, std::time::Instant::now()));
            }
            followers.retain(|name, (url, task)| {
                let keep = listed.iter().any(|h| &h.name == name && &h.url == url);
                if !keep {
                    task.abort();
                }
                keep
            });
            for home in listed {
                followers.entry(home.name.clone()).or_insert_with(|| {
                    let (engine, sender, name, news) = (engine.clone(), Arc::clone(&sender), home.name.clone(), news.clone());
                    (home.url.clone(), tokio::spawn(async move { follow(engine, sender, name, news).await }))
                });
            }
            // A settings change is announced (`AccountsChanged`); look again then — not on every
            // run event of this home, and with nothing changing only at the engine's fallback beat
            // (an app at rest is not woken each minute to find the same list).
            crate::engine::signal::sleep_or_settings_change(&mut events, crate::engine::signal::FALLBACK).await;
        }
    });
    Viewers { task, news }
}

/// Follow one home for as long as it is listed.
async fn follow(engine: Engine, sender: Arc<BoundedSender>, name: String, news: tokio::sync::broadcast::Sender<HomeNews>) {
    let mut misses = 0usize;
    let mut down_since: Option<chrono::DateTime<Utc>> = None;
    loop {
        let client = match super::client(&engine, &name) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                unreachable(&name, &mut down_since, &e.message, &engine, &news);
                tokio::time::sleep(RETRY[RETRY.len() - 1]).await;
                continue;
            }
        };
        // The stream runs in its own task and hands its events over; `None` asks for a catch-up.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Option<EngineEvent>>();
        let stream = {
            let client = Arc::clone(&client);
            tokio::spawn(async move { client.follow(|ev| drop(tx.send(ev))).await })
        };
        let mut opened = false;
        while let Some(ev) = rx.recv().await {
            match ev {
                None => {
                    if !opened {
                        opened = true;
                        misses = 0;
                        if let Some(since) = down_since.take() {
                            tracing::info!(home = %name, "home reachable again (unreachable since {since})");
                        }
                        let _ = news.send(HomeNews::Up { home: name.clone() });
                    }
                    if let Err(e) = catch_up(&engine, &client, &sender).await {
                        tracing::debug!(home = %name, error = %e, "could not catch up; the stream goes on");
                    }
                }
                Some(EngineEvent::RunFinished { run }) => {
                    let _ = news.send(HomeNews::Event { home: name.clone(), event: EngineEvent::RunFinished { run: run.clone() } });
                    let _ = tell(&engine, &client, &sender, vec![*run]).await;
                }
                Some(event) => {
                    // Its counts changed: a run there may have ended in a process whose events
                    // its stream does not carry (its daemon, a CLI) — read what ended.
                    let state = matches!(event, EngineEvent::EngineState { .. });
                    let _ = news.send(HomeNews::Event { home: name.clone(), event });
                    if state {
                        if let Err(e) = catch_up(&engine, &client, &sender).await {
                            tracing::debug!(home = %name, error = %e, "could not catch up; the stream goes on");
                        }
                    }
                }
            }
        }
        let why = match stream.await {
            Ok(Err(e)) => e.message,
            _ => format!("home \"{name}\" closed its event stream"),
        };
        unreachable(&name, &mut down_since, &why, &engine, &news);
        tokio::time::sleep(RETRY[misses.min(RETRY.len() - 1)]).await;
        misses += 1;
    }
}

/// Say once that a home went away (and when); the next tries are quiet.
fn unreachable(name: &str, down_since: &mut Option<chrono::DateTime<Utc>>, why: &str, engine: &Engine, news: &tokio::sync::broadcast::Sender<HomeNews>) {
    if down_since.is_none() {
        let since = engine.core.clock.now();
        *down_since = Some(since);
        tracing::warn!(home = %name, "{why} — retrying");
        let _ = news.send(HomeNews::Down { home: name.to_string(), since, why: why.to_string() });
    }
}

/// Tell what ended there since this viewer's place, and move the place on.
async fn catch_up(engine: &Engine, client: &HomeClient, sender: &Arc<BoundedSender>) -> crate::error::Result<()> {
    let store = Arc::clone(&engine.core.store);
    let (name, now) = (client.name.clone(), engine.core.clock.now());
    let view = {
        let (store, name) = (Arc::clone(&store), name.clone());
        tokio::task::spawn_blocking(move || -> crate::error::Result<_> {
            store.home_seen(&name, now)?;
            store.home_view(&name)
        })
        .await
        .map_err(|e| crate::error::Error::new(crate::error::ErrorCode::Io, e.to_string()))??
    };
    let Some(mut from) = view.told_from else {
        // First seen: its past is history, not news — also what ended within the clock skew
        // before now, which a later catch-up reaches back over: marked told, not told.
        let past: Vec<RunRecord> = client.call("runs_finished_since", serde_json::json!({ "from": crate::words::fmt_time(&(now - Span::minutes(SKEW))), "limit": 200 })).await?;
        let (store, name) = (Arc::clone(&store), name.clone());
        return tokio::task::spawn_blocking(move || -> crate::error::Result<()> {
            for run in past {
                store.claim_home_told(&name, &run.id, now)?;
            }
            store.set_home_told_from(&name, now)
        })
        .await
        .map_err(|e| crate::error::Error::new(crate::error::ErrorCode::Io, e.to_string()))?;
    };
    from -= Span::minutes(SKEW);
    loop {
        let runs: Vec<RunRecord> = client.call("runs_finished_since", serde_json::json!({ "from": crate::words::fmt_time(&from), "limit": 200 })).await?;
        let full = runs.len() == 200;
        let last = runs.last().and_then(|r| r.finished_at);
        tell(engine, client, sender, runs).await?;
        match (full, last) {
            (true, Some(t)) if t > from => from = t,
            _ => break,
        }
    }
    Ok(())
}

/// Tell `runs` of the client's home that are owed a notice and not told here yet: each on its own, or
/// one summary for a storm.
async fn tell(engine: &Engine, client: &HomeClient, sender: &Arc<BoundedSender>, runs: Vec<RunRecord>) -> crate::error::Result<()> {
    let name = client.name.as_str();
    let store = Arc::clone(&engine.core.store);
    let (home, now) = (name.to_string(), engine.core.clock.now());
    let fresh = tokio::task::spawn_blocking(move || -> crate::error::Result<Vec<RunRecord>> {
        let mut fresh = Vec::new();
        let mut newest = None;
        for run in runs {
            // `notified` is set where the run's own home found a notice owed (its `notify:`).
            if run.notified.is_none() || !run.status.is_final() {
                continue;
            }
            newest = newest.max(run.finished_at);
            if store.claim_home_told(&home, &run.id, now)? {
                fresh.push(run);
            }
        }
        if let Some(t) = newest {
            store.set_home_told_from(&home, t)?;
        }
        Ok(fresh)
    })
    .await
    .map_err(|e| crate::error::Error::new(crate::error::ErrorCode::Io, e.to_string()))??;
    let notices: Vec<Notice> = if fresh.len() > STORM {
        let mut n = summary_for(&fresh);
        n.summary = format!("{name} · {}", n.summary);
        vec![n]
    } else {
        let mut notices = Vec::new();
        for run in &fresh {
            // The notice the home itself composes (its routine's policy, its report's first
            // line); a home that cannot say gets the plain one from the record.
            let notice = match client.call::<Option<Notice>>("run_notice", serde_json::json!({ "id": run.id })).await {
                Ok(n) => n,
                Err(_) => notice_for(run, NotifyPolicy::Always, None, None),
            };
            notices.extend(notice.map(|n| from_home(name, n)));
        }
        notices
    };
    for notice in notices {
        // Off the async workers: a send waits its turn behind another (at most a few seconds).
        let sender = Arc::clone(sender);
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || sender.send(notice)).await {
            tracing::warn!(home = %name, error = %e, "could not show a finish notification of another home");
        }
    }
    Ok(())
}

/// A notice of another home's run: it names the home, and opens nothing here (the run is there).
fn from_home(home: &str, notice: Notice) -> Notice {
    Notice { summary: format!("{home} · {}", notice.summary), run_id: None, ..notice }
}
