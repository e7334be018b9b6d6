//! Hosts on GitHub Actions, as the CLI and the window manage them: the workflow they need
//! (`hosts workflow`), the accounts' credentials written as repository secrets (`hosts setup`),
//! and a check of everything a run there needs (`hosts check`) — each answer in words a user can
//! act on. Running there is `run/actions_run.rs`.

use super::state::{Core, Engine};
use crate::actions::api::{Api, Trouble};
use crate::actions::{dispatch, seal, workflow};
use crate::accounts::Account;
use crate::error::{Error, ErrorCode, Result};
use crate::settings::ActionsHost;
use crate::words::Agent;
use serde::Serialize;

/// One line of `hosts check` or `hosts setup`: what was looked at, whether it is fine, in words.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct CheckLine {
    pub what: String,
    pub ok: bool,
    pub words: String,
}

/// What `hosts check` or `hosts setup` found for a host on GitHub Actions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct ActionsCheck {
    pub host: String,
    pub repo: String,
    pub ok: bool,
    pub lines: Vec<CheckLine>,
}

impl ActionsCheck {
    fn new(host: &ActionsHost) -> ActionsCheck {
        ActionsCheck { host: host.name.clone(), repo: host.repo.clone(), ok: true, lines: Vec::new() }
    }
    fn say(&mut self, what: &str, ok: bool, words: String) {
        self.ok &= ok;
        self.lines.push(CheckLine { what: what.into(), ok, words });
    }
}

/// A credential a host's routines need on GitHub: the repository secret's name, for which
/// account (`None`: the agent's credential from the engine's environment), and its value here.
pub(crate) struct NeededSecret {
    pub name: String,
    pub agent: Agent,
    pub account: Option<String>,
    pub value: Option<String>,
    /// Why there is no value, in words.
    pub missing: Option<String>,
}

impl Core {
    /// `host` as a repository's Actions runners, or an error that says what it is instead.
    pub(crate) fn actions_host(&self, host: &str) -> Result<ActionsHost> {
        self.settings().actions_host(host).ok_or_else(|| {
            Error::new(ErrorCode::Usage, format!("{host} is not a host on GitHub Actions: give it `github = \"owner/name\"` under `[hosts.{host}]` in nightshift.toml"))
        })
    }

    /// GitHub's API for `host`'s repository, with the token (or why there is none).
    pub(crate) fn actions_api(&self, host: &ActionsHost) -> std::result::Result<Api, String> {
        let token = super::accounts::github_token::token(self)?;
        Ok(Api::new(&self.settings().github.api_url, token, &host.repo))
    }

    /// Every credential the routines placed on `host` need there.
    pub(crate) fn needed_secrets(&self, host: &str) -> Vec<NeededSecret> {
        let set = self.routines();
        let accounts = self.accounts();
        let mut needed: Vec<NeededSecret> = Vec::new();
        for r in set.routines.iter().filter(|r| r.placement.as_ref().is_some_and(|p| p.hosts.iter().any(|h| h == host))) {
            let Some(agent) = r.agent().cli() else { continue };
            let configured: Vec<String> = accounts.iter().filter(|a| a.agent == agent).map(|a| a.email.clone()).collect();
            let emails = r.candidate_accounts(&configured, None);
            let wanted: Vec<Option<&Account>> = match &emails {
                Some(list) => list.iter().filter_map(|e| accounts.iter().find(|a| a.agent == agent && a.email == *e)).map(Some).collect(),
                None => vec![None],
            };
            for account in wanted {
                let name = dispatch::secret_name(agent, account.map(|a| a.email.as_str()));
                if needed.iter().any(|n| n.name == name) {
                    continue;
                }
                let (value, missing) = match account {
                    Some(a) => match self.credential(a).token {
                        Some(t) => (Some(t), None),
                        None => (None, Some(format!("{} has no stored {} — its login lives in its config dir, which cannot go to a runner: store one with `nightshiftctl accounts set-token {}`", a.email, a.auth().secret_name, a.email))),
                    },
                    None => match super::accounts::inherited_env(self, agent).into_iter().next() {
                        Some((_, v)) => (Some(v), None),
                        None => (None, Some(format!("{agent} has no account and no credential in the engine's environment: add one with `nightshiftctl accounts add {agent} EMAIL`"))),
                    },
                };
                needed.push(NeededSecret { name, agent, account: account.map(|a| a.email.clone()), value, missing });
            }
        }
        needed
    }
}

impl Engine {
    /// The workflow `host` needs (`nightshiftctl hosts workflow`).
    pub fn host_workflow(&self, host: &str) -> Result<String> {
        Ok(workflow::workflow(&self.core.actions_host(host)?))
    }

    /// Whether `host` is a host on GitHub Actions.
    pub fn is_actions_host(&self, host: &str) -> bool {
        self.core.settings().actions_host(host).is_some()
    }

    /// Write the credentials `host`'s routines need as repository secrets (sealed with the
    /// repository's key; only their names are ever shown), then say whether the workflow on its
    /// ref is the one this Nightshift expects.
    pub async fn setup_actions_host(&self, host: &str) -> Result<ActionsCheck> {
        self.with_actions_api(host, |core, api, host, check| {
            let needed = core.needed_secrets(&host.name);
            if needed.is_empty() {
                check.say("secrets", true, format!("no routine on {} needs an account's credential", host.name));
            } else {
                match api.public_key() {
                    Err(t) => check.say("secrets", false, t.words().to_string()),
                    Ok((key_id, key)) => {
                        for n in &needed {
                            let whose = n.account.clone().unwrap_or_else(|| format!("{} (from the engine's environment)", n.agent));
                            let Some(value) = &n.value else {
                                check.say("secrets", false, format!("{}: not written — {}", n.name, n.missing.clone().unwrap_or_default()));
                                continue;
                            };
                            let written = seal::seal(&key, value).and_then(|sealed| api.put_secret(&n.name, &sealed, &key_id).map_err(|t| t.words().to_string()));
                            match written {
                                Ok(()) => check.say("secrets", true, format!("{}: written ({whose})", n.name)),
                                Err(words) => check.say("secrets", false, format!("{}: not written — {}", n.name, core.redactor.redact(&words))),
                            }
                        }
                    }
                }
            }
            workflow_line(api, host, check);
        })
        .await
    }

    /// Everything a run on `host` needs, looked at now: the token, the repository, the workflow
    /// on its ref (present and current), the secrets, a runner online for `runs_on`.
    pub async fn check_actions_host(&self, host: &str) -> Result<ActionsCheck> {
        self.with_actions_api(host, |core, api, host, check| {
            check.say("token", true, "a GitHub token is there".into());
            match api.default_branch() {
                Ok(branch) => check.say("repository", true, format!("{} can be read (default branch {branch})", host.repo)),
                Err(t) => return check.say("repository", false, t.words().to_string()),
            }
            workflow_line(api, host, check);
            let needed = core.needed_secrets(&host.name);
            match api.secret_names() {
                Ok(names) => {
                    let absent: Vec<&str> = needed.iter().map(|n| n.name.as_str()).filter(|n| !names.iter().any(|m| m == n)).collect();
                    if absent.is_empty() {
                        check.say("secrets", true, format!("the {} secret(s) its routines need are there", needed.len()));
                    } else {
                        check.say("secrets", false, format!("missing on {}: {} — write them with `nightshiftctl hosts setup {}`", host.repo, absent.join(", "), host.name));
                    }
                }
                Err(t) => check.say("secrets", false, t.words().to_string()),
            }
            runner_line(api, host, check);
        })
        .await
    }

    /// Look at `host` through GitHub's API off the async workers: `look` gets the lines to say,
    /// after a line about a missing token has ended it early.
    async fn with_actions_api(&self, host: &str, look: impl FnOnce(&Core, &Api, &ActionsHost, &mut ActionsCheck) + Send + 'static) -> Result<ActionsCheck> {
        let host = self.core.actions_host(host)?;
        let core = std::sync::Arc::clone(&self.core);
        tokio::task::spawn_blocking(move || {
            let mut check = ActionsCheck::new(&host);
            match core.actions_api(&host) {
                Ok(api) => look(&core, &api, &host, &mut check),
                Err(words) => check.say("token", false, words),
            }
            check
        })
        .await
        .map_err(|e| Error::new(ErrorCode::Io, format!("looking at the host failed: {e}")))
    }
}

/// Whether the workflow on the host's ref is the one this Nightshift makes.
fn workflow_line(api: &Api, host: &ActionsHost, check: &mut ActionsCheck) {
    let git_ref = match &host.git_ref {
        Some(r) => r.clone(),
        None => match api.default_branch() {
            Ok(b) => b,
            Err(t) => return check.say("workflow", false, t.words().to_string()),
        },
    };
    let path = format!(".github/workflows/{}", host.workflow);
    let make = format!("`nightshiftctl hosts workflow {} > {path}`, then commit and push it to {git_ref}", host.name);
    match api.file(&path, &git_ref) {
        Ok(Some(text)) if text == workflow::workflow(host) => check.say("workflow", true, format!("{path} on {git_ref} is current")),
        Ok(Some(text)) => {
            let said = match workflow::version_of(&text) {
                Some(v) if v != workflow::WORKFLOW_VERSION => format!("is version {v}, this Nightshift needs version {}", workflow::WORKFLOW_VERSION),
                Some(_) => "differs from the one this Nightshift makes (edited by hand, or made for other settings)".to_string(),
                None => "is not Nightshift's workflow".to_string(),
            };
            check.say("workflow", false, format!("{path} on {git_ref} {said}: replace it with {make}"))
        }
        Ok(None) => check.say("workflow", false, format!("{path} is not on {git_ref}: add it with {make}")),
        Err(t) => check.say("workflow", false, t.words().to_string()),
    }
}

/// Labels of GitHub's own runners: a job that asks for one is always picked up.
fn hosted(label: &str) -> bool {
    ["ubuntu-", "windows-", "macos-"].iter().any(|p| label.starts_with(p))
}

/// Whether a runner that has every label of `runs_on` is online.
fn runner_line(api: &Api, host: &ActionsHost, check: &mut ActionsCheck) {
    let labels = host.runs_on.join(", ");
    if host.runs_on.iter().any(|l| hosted(l)) {
        return check.say("runner", true, format!("runs on GitHub's hosted runners ({labels})"));
    }
    match api.runners() {
        Ok(runners) => {
            let fits = |r: &&crate::actions::api::Runner| host.runs_on.iter().all(|l| r.labels.iter().any(|rl| rl.name.eq_ignore_ascii_case(l)));
            let fitting: Vec<_> = runners.iter().filter(fits).collect();
            match fitting.iter().find(|r| r.status == "online") {
                Some(r) => check.say("runner", true, format!("runner {} is online with [{labels}]", r.name)),
                None if fitting.is_empty() => check.say("runner", false, format!("no self-hosted runner of {} has every label of [{labels}]: a run there waits {} and ends blocked · no_runner", host.repo, humantime::format_duration(host.start_timeout))),
                None => check.say("runner", false, format!("the runners with [{labels}] ({}) are offline", fitting.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", "))),
            }
        }
        Err(Trouble::Refused { status: 403, .. }) => check.say("runner", true, format!("the token may not list {}'s runners (that needs administration: read); a job for [{labels}] that no runner picks up ends blocked · no_runner after {}", host.repo, humantime::format_duration(host.start_timeout))),
        Err(t) => check.say("runner", false, t.words().to_string()),
    }
}
