//! Other homes (`[[homes]]`) in the app: what the homes' viewer hears of each — its events, its
//! comings and goings — kept as the tray's line for that home (its `glance` read again after its
//! events — once for a burst of them — never by polling) and relayed to the window tagged with the home's name (the window
//! shows the events of the home it shows).

use crate::shell::Shell;
use crate::tray::{HomeLine, RoutineLine};
use nightshift_core::homes::viewer::HomeNews;
use nightshift_core::run::RunStatus;
use nightshift_core::EngineEvent;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// Follow `news` for as long as the app runs.
pub fn follow(shell: &Arc<Shell>, mut news: tokio::sync::broadcast::Receiver<HomeNews>) {
    let shell = Arc::clone(shell);
    shell.runtime().clone().spawn(async move {
        // Every listed home shows from the start ("connecting…" until it answers).
        for h in nightshift_core::homes::listed(&shell.engine) {
            shell.set_home_line(&h.name, Some(HomeLine { name: h.name.clone(), reachable: false, down_since: None, routines: Vec::new(), logins: Vec::new(), running: 0 }));
        }
        shell.refresh_tray().await;
        // Homes whose events since the last reading call for another, and when the first came.
        let mut stale: std::collections::BTreeSet<String> = Default::default();
        let mut gathering_until: Option<tokio::time::Instant> = None;
        loop {
            let heard = match gathering_until {
                None => news.recv().await,
                Some(until) => match tokio::time::timeout_at(until, news.recv()).await {
                    Ok(heard) => heard,
                    Err(_) => {
                        gathering_until = None;
                        for home in std::mem::take(&mut stale) {
                            reread(&shell, &home).await;
                        }
                        continue;
                    }
                },
            };
            forget_unlisted(&shell);
            match heard {
                Ok(HomeNews::Up { home }) => {
                    reread(&shell, &home).await;
                    emit_state(&shell, &home, true);
                }
                Ok(HomeNews::Down { home, since, .. }) => {
                    let mut line = shell.home_line(&home).unwrap_or_else(|| HomeLine { name: home.clone(), reachable: false, down_since: None, routines: Vec::new(), logins: Vec::new(), running: 0 });
                    line.reachable = false;
                    line.down_since = Some(since);
                    shell.set_home_line(&home, Some(line));
                    shell.refresh_tray().await;
                    emit_state(&shell, &home, false);
                }
                Ok(HomeNews::Event { home, event }) => {
                    let progress = matches!(event, EngineEvent::RunProgress { .. });
                    shell.desk().emit(&|| {
                        let mut v = serde_json::to_value(&event).ok()?;
                        v["home"] = serde_json::Value::String(home.clone());
                        Some(v)
                    });
                    if !progress {
                        stale.insert(home);
                        gathering_until.get_or_insert_with(|| tokio::time::Instant::now() + GATHER);
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    for h in nightshift_core::homes::listed(&shell.engine) {
                        reread(&shell, &h.name).await;
                    }
                }
                Err(RecvError::Closed) => return,
            }
        }
    });
}

/// How long the events of a burst (a night's runs settling there at once) are gathered before
/// their home is read again: one reading for them all.
const GATHER: std::time::Duration = std::time::Duration::from_millis(150);

/// Read what the tray shows of `home` again, from that home (`glance`: one call).
async fn reread(shell: &Arc<Shell>, home: &str) {
    let glance = async {
        let client = nightshift_core::homes::client(&shell.engine, home)?;
        client.call::<nightshift_core::api::Glance>("glance", serde_json::json!({})).await
    };
    match glance.await {
        Ok(g) => {
            let routines = g
                .routines
                .into_iter()
                .filter(|r| r.on_this_device)
                .map(|r| RoutineLine { last: r.last_run.map(|l| l.status).filter(|s| *s != RunStatus::Missed), next: r.next_fire, valid: r.valid, quiet: r.quiet, push_failed: r.push_failed, name: r.name })
                .collect();
            let logins = g.accounts.iter().filter(|h| h.verdict.needs_login()).map(|h| (h.account.clone(), h.verdict.as_str().to_string())).collect();
            shell.set_home_line(home, Some(HomeLine { name: home.to_string(), reachable: true, down_since: None, routines, logins, running: g.state.running }));
        }
        Err(e) => tracing::debug!(home, error = %e.message, "could not read another home's state; its stream says when it is back"),
    }
    shell.refresh_tray().await;
}

/// Homes no longer in `[[homes]]` leave the tray.
fn forget_unlisted(shell: &Shell) {
    let listed: Vec<String> = nightshift_core::homes::listed(&shell.engine).into_iter().map(|h| h.name).collect();
    for name in shell.home_names() {
        if !listed.contains(&name) {
            shell.set_home_line(&name, None);
        }
    }
}

fn emit_state(shell: &Shell, home: &str, reachable: bool) {
    shell.desk().emit(&|| Some(serde_json::json!({ "type": "home_state", "home": home, "reachable": reachable })));
}
