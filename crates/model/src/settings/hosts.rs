//! `[hosts.<name>]`: where routines placed with `host:` run — another machine over SSH (the name
//! is an SSH host or alias; `agent_path` says what differs there), or a repository's GitHub
//! Actions runners (`github = "owner/name"`: Nightshift dispatches its workflow there, follows it
//! and reads the agent's own output back; see [`ActionsHost`]).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// One `[hosts.<name>]` entry (the name as routines write it in `host:`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HostSettings {
    /// The agent's executable on that machine when it is not on the PATH an SSH command gets
    /// there: one path for every agent, or one per agent (`{ claude = "…", codex = "…" }`).
    pub agent_path: Option<AgentPath>,
    /// `owner/name`: this host is that repository's GitHub Actions runners.
    pub github: Option<String>,
    /// The job's `runs-on`: one label (`ubuntu-latest`) or several (`["self-hosted", "linux"]`).
    pub runs_on: Option<RunsOn>,
    /// The workflow file's name under `.github/workflows/` (default `nightshift.yml`).
    pub workflow: Option<String>,
    /// The branch or tag the workflow runs on (default: the repository's default branch).
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// How long a dispatched job may wait for a runner before the run is `blocked · no_runner`.
    pub start_timeout: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum AgentPath {
    Every(String),
    PerAgent(BTreeMap<String, String>),
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum RunsOn {
    One(String),
    Labels(Vec<String>),
}

/// A host that is a repository's GitHub Actions runners, with its defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionsHost {
    /// The name routines give in `host:`.
    pub name: String,
    /// `owner/name`.
    pub repo: String,
    pub runs_on: Vec<String>,
    pub workflow: String,
    /// `None`: the repository's default branch.
    pub git_ref: Option<String>,
    pub start_timeout: Duration,
}

pub const DEFAULT_WORKFLOW: &str = "nightshift.yml";
pub const DEFAULT_RUNS_ON: &str = "ubuntu-latest";
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(10 * 60);

impl HostSettings {
    /// This host as a repository's Actions runners, when it is one (`github` set).
    pub fn actions(&self, name: &str) -> Option<ActionsHost> {
        let repo = self.github.clone()?;
        let runs_on = match &self.runs_on {
            Some(RunsOn::One(label)) => vec![label.clone()],
            Some(RunsOn::Labels(labels)) => labels.clone(),
            None => vec![DEFAULT_RUNS_ON.to_string()],
        };
        Some(ActionsHost {
            name: name.to_string(),
            repo,
            runs_on,
            workflow: self.workflow.clone().unwrap_or_else(|| DEFAULT_WORKFLOW.into()),
            git_ref: self.git_ref.clone(),
            start_timeout: self.start_timeout.as_deref().and_then(|t| humantime::parse_duration(t.trim()).ok()).unwrap_or(DEFAULT_START_TIMEOUT),
        })
    }

    /// What is wrong with `[hosts.<name>]`, and the text to point at.
    pub(super) fn problem(&self, name: &str) -> Option<(String, String)> {
        let table = format!("[hosts.{name}]");
        let Some(repo) = &self.github else {
            let actions_only = [("runs_on", self.runs_on.is_some()), ("workflow", self.workflow.is_some()), ("ref", self.git_ref.is_some()), ("start_timeout", self.start_timeout.is_some())];
            return actions_only.into_iter().find(|(_, set)| *set).map(|(key, _)| {
                (table.clone(), format!("`{table}` sets `{key}`, which is for a host on GitHub Actions: add `github = \"owner/name\"` (whose Actions run it), or remove `{key}`"))
            });
        };
        let part_ok = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !matches!(repo.split_once('/'), Some((owner, name)) if part_ok(owner) && part_ok(name)) {
            return Some((format!("\"{repo}\""), format!("`{table}` github = \"{repo}\" is not a repository: give it as owner/name (e.g. \"acme/app\")")));
        }
        if self.agent_path.is_some() {
            return Some((table.clone(), format!("`{table}` runs on GitHub Actions, where the workflow installs the agent CLIs itself: `agent_path` is for SSH hosts; remove it")));
        }
        match &self.runs_on {
            Some(RunsOn::One(l)) if l.trim().is_empty() => return Some((table.clone(), format!("`{table}` runs_on is empty: give a runner label (e.g. \"ubuntu-latest\") or a list of them"))),
            Some(RunsOn::Labels(ls)) if ls.is_empty() || ls.iter().any(|l| l.trim().is_empty()) => {
                return Some((table.clone(), format!("`{table}` runs_on has no label or an empty one: give the labels a runner must have (e.g. [\"self-hosted\", \"linux\"])")))
            }
            _ => {}
        }
        if let Some(w) = &self.workflow {
            if w.contains('/') || !(w.ends_with(".yml") || w.ends_with(".yaml")) || w.len() < 5 {
                return Some((format!("\"{w}\""), format!("`{table}` workflow = \"{w}\" is not a workflow file name: give the name of a file in .github/workflows/ ending in .yml (e.g. \"nightshift.yml\")")));
            }
        }
        if let Some(r) = &self.git_ref {
            if r.trim().is_empty() || r.chars().any(|c| c.is_whitespace() || c.is_control()) || r.starts_with('-') {
                return Some((format!("\"{r}\""), format!("`{table}` ref = \"{r}\" is not a branch or tag name")));
            }
        }
        if let Some(t) = &self.start_timeout {
            let bad = super::duration_problem(t, (Duration::from_secs(1), "is shorter than a second"), (Duration::from_secs(86_400), "is longer than a day"), "90s, 10m, 1h")?;
            return Some((format!("\"{t}\""), format!("`{table}` start_timeout = \"{t}\" {bad}")));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(toml_text: &str) -> HostSettings {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn an_actions_host_has_its_defaults() {
        let h = host("github = \"acme/app\"\n").actions("ci").unwrap();
        assert_eq!(h, ActionsHost { name: "ci".into(), repo: "acme/app".into(), runs_on: vec!["ubuntu-latest".into()], workflow: "nightshift.yml".into(), git_ref: None, start_timeout: Duration::from_secs(600) });
        let h = host("github = \"acme/app\"\nruns_on = [\"self-hosted\", \"linux\"]\nworkflow = \"ns.yaml\"\nref = \"night\"\nstart_timeout = \"2m\"\n").actions("ci").unwrap();
        assert_eq!((h.runs_on, h.workflow.as_str(), h.git_ref.as_deref(), h.start_timeout), (vec!["self-hosted".to_string(), "linux".to_string()], "ns.yaml", Some("night"), Duration::from_secs(120)));
        assert!(host("agent_path = \"/opt/claude\"\n").actions("box").is_none(), "an SSH host");
    }

    #[test]
    fn what_an_actions_host_may_not_say_is_said_with_the_fix() {
        let problem = |t: &str| host(t).problem("ci").map(|(_, p)| p).unwrap_or_default();
        assert!(problem("runs_on = \"ubuntu-latest\"\n").contains("add `github = \"owner/name\"`"));
        assert!(problem("github = \"acme\"\n").contains("give it as owner/name"));
        assert!(problem("github = \"acme/app\"\nagent_path = \"/x\"\n").contains("`agent_path` is for SSH hosts"));
        assert!(problem("github = \"acme/app\"\nruns_on = []\n").contains("runs_on has no label"));
        assert!(problem("github = \"acme/app\"\nworkflow = \".github/workflows/x.yml\"\n").contains("is not a workflow file name"));
        assert!(problem("github = \"acme/app\"\nstart_timeout = \"soon\"\n").contains("is not a duration"));
        assert!(problem("github = \"acme/app\"\nstart_timeout = \"2d\"\n").contains("longer than a day"));
        assert_eq!(problem("github = \"acme/app\"\nruns_on = [\"self-hosted\"]\nstart_timeout = \"90s\"\n"), "");
    }
}

#[cfg(test)]
mod located {
    #[test]
    fn a_wrong_actions_host_is_a_located_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nightshift.toml");
        std::fs::write(&path, "max_parallel = 2\n\n[hosts.ci]\ngithub = \"acme\"\n").unwrap();
        let err = crate::settings::Settings::load(&path).unwrap_err();
        assert_eq!(err.message, format!("{}:4:10: `[hosts.ci]` github = \"acme\" is not a repository: give it as owner/name (e.g. \"acme/app\")", path.display()));
    }
}
