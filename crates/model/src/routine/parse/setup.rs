//! What a run gets: its `timeout` and `stall_timeout`, `secrets`, `cwd`, `env`, `variables` and
//! the account it may use (`account` or an `accounts` pool), and what it may spend (`budget`), as
//! far as its agent reports its cost.

use super::cx::Cx;
use super::Fields;
use super::super::yaml::Node;
use super::super::{AccountChoice, Action, Agent};
use crate::agents::rules;
use crate::words::MAX_DURATION;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub(super) struct Setup {
    pub timeout: Option<Duration>,
    pub secrets: Vec<String>,
    pub budget: Option<crate::budget::Budget>,
    /// `stall_timeout:` as written: `Some(None)` is `0` (off).
    pub stall: Option<Option<Duration>>,
    pub cwd: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
    pub variables: BTreeMap<String, String>,
    pub account: AccountChoice,
}

pub(super) fn setup(cx: &mut Cx<'_>, f: &Fields<'_>, action: Option<&Action>) -> Setup {
    let timeout = f.get("timeout").and_then(|node| match node {
        // agents-cli writes `timeout: 45`; it means seconds (and falls back to 10 minutes when it
        // cannot read one, silently): taken as seconds, and said.
        Node::Scalar { value, .. } if !value.trim().is_empty() && value.trim().chars().all(|c| c.is_ascii_digit()) => {
            let secs: u64 = value.trim().parse().unwrap_or(u64::MAX);
            match std::time::Duration::from_secs(secs) {
                d if d.is_zero() => {
                    cx.err(node.pos(), "`timeout` must be longer than zero");
                    None
                }
                d if d > MAX_DURATION => {
                    cx.err(node.pos(), format!("`timeout: {value}` is longer than the longest allowed, 7 days"));
                    None
                }
                d => {
                    cx.warn(node.pos(), format!("`timeout: {value}` has no unit: taken as {value} seconds; write {value}s (or 10m, 1h) to say so"));
                    Some(d)
                }
            }
        }
        node => cx.duration(node, "timeout"),
    });
    // `secrets:` — names of keychain secrets, each the environment variable it becomes.
    let secrets: Vec<String> = f.get("secrets").map(|n| cx.string_list(n, "secrets")).unwrap_or_default();
    for name in &secrets {
        if !crate::words::is_env_name(name) {
            cx.err(f.pos("secrets"), format!("secret \"{name}\" must be an environment variable's name (letters, digits and _, not starting with a digit), e.g. DEPLOY_KEY"));
        }
    }
    let budget = f.get("budget").map(|n| budget(cx, n, action.map(Action::agent)));
    // `stall_timeout:` — `0` turns it off; agents get the default, commands none unless set.
    let stall = f.get("stall_timeout").map(|n| match n {
        Node::Scalar { value, .. } if value.trim() == "0" => None,
        n => cx.duration(n, "stall_timeout"),
    });
    let cwd = f.get("cwd").and_then(|n| cx.string(n, "cwd")).map(|c| crate::fsutil::folder_in_home(&c, None));
    let env = f.get("env").map(|n| cx.string_map(n, "env")).unwrap_or_default();
    for k in env.keys() {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            cx.err(f.pos("env"), format!("invalid environment variable name \"{k}\""));
        }
    }
    if let Some(Action::Agent { agent, .. }) = action {
        for k in env.keys() {
            if let Some(why) = rules::refused_env(crate::agents::driver(*agent), k) {
                cx.err(f.pos("env"), why);
            }
        }
    }
    let variables = f.get("variables").map(|n| cx.string_map(n, "variables")).unwrap_or_default();

    let account = match (f.get("account"), f.get("accounts")) {
        (Some(_), Some(_)) => {
            cx.err(f.pos("accounts"), "give either `account` (pin one) or `accounts` (a failover pool), not both");
            AccountChoice::Any
        }
        (Some(n), None) => cx.string(n, "account").map(AccountChoice::Pinned).unwrap_or(AccountChoice::Any),
        (None, Some(n)) => {
            let list = cx.string_list(n, "accounts");
            if list.is_empty() {
                cx.err(n.pos(), "`accounts` is an empty list");
            }
            AccountChoice::Pool(list)
        }
        (None, None) => AccountChoice::Any,
    };
    if matches!(action, Some(Action::Command { .. })) && !matches!(account, AccountChoice::Any) {
        cx.err(f.pos(if f.has("account") { "account" } else { "accounts" }), "accounts only apply to agent routines");
    }

    Setup { timeout, secrets, budget, stall, cwd, env, variables, account }
}

/// `budget: {run: 2.00, day: 10, month: 100}` (USD). Spend is what the agent reports: only Claude
/// Code reports its cost, so for the others a run cap is an error (nothing could enforce it) and
/// a day or month cap a warning (their runs count nothing toward it).
pub(super) fn budget(cx: &mut Cx<'_>, node: &Node, agent: Option<Agent>) -> crate::budget::Budget {
    let mut b = crate::budget::Budget::default();
    // (An agent the file gets wrong is reported already: no second word about it here.)
    // Claude Code caps a run itself (`--max-budget-usd`); OpenCode reports each step's cost, which
    // counts toward a day or month, but has no cap of its own.
    let reports_cost = agent.is_none_or(|a| crate::agents::driver(a).reports_cost());
    let caps_a_run = agent.is_none_or(|a| crate::agents::driver(a).caps_run_cost());
    let who = match agent {
        Some(Agent::Command) | None => "a command".to_string(),
        Some(a) => a.as_str().to_string(),
    };
    for (key, v, at) in cx.sub_keys(node, "budget", &["run", "day", "month"], "budget: {run: 2.00, day: 10, month: 100}, in US dollars") {
        let slot = match key {
            "run" => &mut b.run,
            "day" => &mut b.day,
            _ => &mut b.month,
        };
        let amount = match v {
            Node::Scalar { value, quoted: false, .. } => value.trim().trim_start_matches('$').parse::<f64>().ok().filter(|a| a.is_finite() && *a >= 0.0),
            _ => None,
        };
        match amount {
            None => cx.err(v.pos(), format!("`budget.{key}` must be an amount in US dollars, such as 2.50")),
            Some(_) if !caps_a_run && key == "run" => {
                cx.err(at, format!("`budget.run` cannot be enforced for {who}: nothing stops it at a cost while it runs (only Claude Code does)"))
            }
            Some(a) => {
                if !reports_cost {
                    cx.warn(at, format!("`budget.{key}` counts only reported costs, and {who} reports none: its runs add nothing to it"));
                }
                *slot = Some(a);
            }
        }
    }
    b
}

