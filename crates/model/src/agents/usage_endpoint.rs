//! A vendor's usage endpoint, which an account may opt in to probe (`[[accounts]] usage_probe`):
//! what to ask it with and how to read its answer. The agent's own file says these; the request
//! itself (HTTP, timing, what is stored and told) is the engine's usage probe.

use crate::run::LimitWindow;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// The token a sign-in holds, as the login file says it.
pub struct LoginToken {
    pub token: String,
    /// The login says it has expired: the agent's CLI refreshes it on its next run, Nightshift
    /// refreshes nothing.
    pub expired: bool,
    /// The login's scopes let it read the endpoint (so a refusal says something about the
    /// sign-in itself, not about what the token may read).
    pub reads_usage: bool,
}

pub trait UsageEndpoint: Send + Sync {
    /// Request headers besides `Authorization: Bearer <token>` and `Accept`.
    fn headers(&self) -> &'static [(&'static str, &'static str)];
    /// The access token in the account's login file (parsed JSON), if it holds one.
    fn login_token(&self, login: &Value, now: DateTime<Utc>) -> Option<LoginToken>;
    /// The windows in the endpoint's answer (none: the answer is not what was expected).
    fn windows(&self, answer: &Value, now: DateTime<Utc>) -> Vec<LimitWindow>;
    /// What the user can do after the endpoint refused with `status` ("" when nothing to add).
    fn refusal_hint(&self, status: u16) -> &'static str;
    /// Why there is nothing to ask with: the login expired (`expired`) or there is no sign-in.
    /// (`email`, `config_dir`: the account's.)
    fn no_token(&self, email: &str, config_dir: &std::path::Path, expired: bool) -> String;
}
