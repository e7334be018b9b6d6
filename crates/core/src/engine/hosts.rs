//! The machines routines are placed on (`host:`), with their health as connecting to them showed:
//! the read model of `nightshiftctl hosts list`, the window's Hosts list, and a fresh check.

use super::state::Engine;
use crate::runner::remote::Failure;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// A host and what is known of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct HostView {
    pub host: String,
    /// `owner/name` when the host is that repository's GitHub Actions runners; `null` for a
    /// machine over SSH.
    pub github: Option<String>,
    /// The routines placed on it (valid files only), by name.
    pub routines: Vec<String>,
    /// When it was last tried; `null` if never.
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub checked_at: Option<DateTime<Utc>>,
    /// When it last answered; `null` if it never did.
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub last_seen: Option<DateTime<Utc>>,
    /// Why the last try failed, in ssh's words; `null` when it answered.
    pub last_error: Option<String>,
}

/// What a fresh check of a host found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct HostCheck {
    pub host: String,
    pub reachable: bool,
    /// The agents its routines need that it does not have (by the path runs use there).
    pub missing: Vec<String>,
    /// One sentence: reachable with everything, what is missing, or why it cannot be reached.
    pub message: String,
}

impl Engine {
    /// Every host a routine names or a run has gone to, by name, with its health.
    pub fn hosts(&self) -> crate::error::Result<Vec<HostView>> {
        let set = self.core.routines();
        let mut views: std::collections::BTreeMap<String, HostView> = std::collections::BTreeMap::new();
        let settings = self.core.settings();
        let blank = |host: &str| HostView { host: host.to_string(), github: settings.actions_host(host).map(|a| a.repo), routines: Vec::new(), checked_at: None, last_seen: None, last_error: None };
        for r in &set.routines {
            for host in r.placement.iter().flat_map(|p| &p.hosts) {
                views.entry(host.clone()).or_insert_with(|| blank(host)).routines.push(r.name.clone());
            }
        }
        for h in self.core.store.host_health()? {
            let v = views.entry(h.host.clone()).or_insert_with(|| blank(&h.host));
            (v.checked_at, v.last_seen, v.last_error) = (Some(h.checked_at), h.last_seen, h.last_error);
        }
        Ok(views.into_values().collect())
    }

    /// Try `host` now, non-interactively, and look for the agents its routines run there — or,
    /// for a host on GitHub Actions, everything a run there needs ([`Engine::check_actions_host`]),
    /// its failing lines as what is missing.
    pub async fn check_host(&self, host: &str) -> HostCheck {
        if self.is_actions_host(host) {
            return match self.check_actions_host(host).await {
                Ok(check) => {
                    let missing: Vec<String> = check.lines.iter().filter(|l| !l.ok).map(|l| l.words.clone()).collect();
                    let reachable = !check.lines.iter().any(|l| !l.ok && matches!(l.what.as_str(), "token" | "repository"));
                    let message = match missing.is_empty() {
                        true => format!("{host}: on GitHub Actions ({}), everything a run there needs is in place", check.repo),
                        false => format!("{host}: on GitHub Actions ({}), {}", check.repo, missing.join("; ")),
                    };
                    HostCheck { host: host.into(), reachable, missing, message }
                }
                Err(e) => HostCheck { host: host.into(), reachable: false, missing: Vec::new(), message: e.message },
            };
        }
        let set = self.core.routines();
        let settings = self.core.settings();
        let mut programs: Vec<String> = Vec::new();
        for r in set.routines.iter().filter(|r| r.placement.as_ref().is_some_and(|p| p.hosts.iter().any(|h| h == host))) {
            let program = super::run::remote_run::program_on(&settings, r, host);
            if !programs.contains(&program) {
                programs.push(program);
            }
        }
        let wanted: Vec<&str> = programs.iter().map(String::as_str).collect();
        let checked = self.core.ssh_target(host).check(&wanted).await;
        self.core.host_contact(host, checked.as_ref().err());
        match checked {
            Ok(missing) if missing.is_empty() => HostCheck { host: host.into(), reachable: true, missing, message: format!("{host}: reachable; its routines' programs are there") },
            Ok(missing) => HostCheck {
                host: host.into(),
                reachable: true,
                message: format!("{host}: reachable, but {} not found there — install it, or set `[hosts.{host}] agent_path` in nightshift.toml", missing.join(", ")),
                missing,
            },
            Err(Failure::Unreachable(why)) => HostCheck { host: host.into(), reachable: false, missing: Vec::new(), message: format!("{host}: unreachable — {why}") },
            Err(Failure::Refused(why) | Failure::Missing(why)) => HostCheck { host: host.into(), reachable: true, missing: Vec::new(), message: format!("{host}: reachable, but the check failed there — {why}") },
        }
    }
}
