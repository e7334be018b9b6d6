//! The routines' secrets (`secrets: [DEPLOY_KEY]`): kept in the OS keychain (the accounts'
//! service, user `secret:<NAME>`) — or, on a machine without one, `NIGHTSHIFT_SECRET_<NAME>` in
//! the engine's own environment — and given to that routine's runs only, as the variable NAME,
//! masked everywhere like a token. A run whose secret is missing is not started.

use crate::engine::state::Core;
use crate::engine::state::Engine;
use crate::accounts::keychain;
use crate::error::{Error, ErrorCode, Result};
use crate::routine::Routine;
use chrono::{DateTime, Utc};
use serde::Serialize;

crate::words::string_enum!(
    /// Where a secret's value comes from: the OS keychain, or `NIGHTSHIFT_SECRET_<NAME>` in the
    /// engine's environment.
    SecretSource as "secret source" { Keychain = "keychain", Environment = "environment" }
);

/// A secret's name and where it is — never its value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SecretInfo {
    pub name: String,
    pub source: SecretSource,
    /// When it was stored (keychain secrets).
    #[serde(serialize_with = "crate::words::ser_opt_time")]
    pub set_at: Option<DateTime<Utc>>,
}

fn keychain_user(name: &str) -> String {
    format!("secret:{name}")
}

/// The prefix of the engine's environment variables that hold secrets (`NIGHTSHIFT_SECRET_<NAME>`).
const ENV_PREFIX: &str = "NIGHTSHIFT_SECRET_";

/// The engine's environment variable that may hold `name`'s value.
pub fn env_var(name: &str) -> String {
    format!("{ENV_PREFIX}{name}")
}

fn check_name(name: &str) -> Result<()> {
    match crate::words::is_env_name(name) {
        true => Ok(()),
        false => Err(Error::new(ErrorCode::Usage, format!("\"{name}\" cannot be a secret's name: it becomes an environment variable (letters, digits and _, not starting with a digit), e.g. DEPLOY_KEY"))),
    }
}

/// A secret kept in the OS keychain under `user`, else the engine's environment variable `var`
/// (a machine without a keychain). `Ok(None)`: in neither. Err: the keychain could not be read
/// and `var` is not set — its words say both ways to mend it. A value found is registered for
/// masking.
pub(crate) fn kept_or_env(core: &Core, user: &str, var: &str) -> std::result::Result<Option<String>, keychain::Unavailable> {
    let value = match keychain::get_secret(&core.settings().keychain_service, user, &format!("or set {var}")) {
        Ok(Some(value)) => {
            core.redactor.register(&value);
            Some(value)
        }
        Ok(None) => from_env(core, var),
        Err(unavailable) => Some(from_env(core, var).ok_or(unavailable)?),
    };
    Ok(value)
}

/// A secret in the engine's environment variable `var` (set and not empty), registered for
/// masking.
pub(crate) fn from_env(core: &Core, var: &str) -> Option<String> {
    let value = core.env.iter().find(|(k, v)| k == var && !v.is_empty()).map(|(_, v)| v.clone())?;
    core.redactor.register(&value);
    Some(value)
}

/// The values of `routine`'s secrets for a run (each registered for masking), or why the run
/// cannot start — in words that say how to set it.
pub(crate) fn for_run(core: &Core, routine: &Routine) -> std::result::Result<Vec<(String, String)>, String> {
    let mut values = Vec::with_capacity(routine.secrets.len());
    for name in &routine.secrets {
        let how = format!("`nightshiftctl secrets set {name}` stores it in the OS keychain (or set {} for the app or daemon)", env_var(name));
        let value = match kept_or_env(core, &keychain_user(name), &env_var(name)) {
            Ok(Some(value)) => value,
            Ok(None) => return Err(format!("not started: the secret {name} is not set — {how}")),
            Err(unavailable) => return Err(format!("not started: the secret {name} could not be read: {unavailable}")),
        };
        values.push((name.clone(), value));
    }
    Ok(values)
}

impl Engine {
    /// Store (or replace) secret `name` in the OS keychain.
    pub fn set_secret(&self, name: &str, value: &str) -> Result<()> {
        check_name(name)?;
        let value = value.trim_end_matches(['\n', '\r']);
        if value.is_empty() {
            return Err(Error::new(ErrorCode::Usage, format!("the value of {name} is empty (give it on stdin)")));
        }
        self.core.redactor.register(value);
        keychain::set_secret(&self.core.settings().keychain_service, &keychain_user(name), value, &format!("or set {} for the app or daemon", env_var(name)))
            .map_err(|e| Error::new(ErrorCode::Io, e.0))?;
        self.core.store.record_secret(name, self.core.clock.now())
    }

    /// Remove secret `name` from the OS keychain; `false` when it was not there.
    pub fn remove_secret(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        let removed = keychain::delete_secret(&self.core.settings().keychain_service, &keychain_user(name), "").map_err(|e| Error::new(ErrorCode::Io, e.0))?;
        self.core.store.forget_secret(name)?;
        Ok(removed)
    }

    /// The secrets there are, by name: those stored in the keychain here, and those in the
    /// engine's environment (`NIGHTSHIFT_SECRET_<NAME>`). Never a value.
    pub fn secrets(&self) -> Result<Vec<SecretInfo>> {
        let mut all: Vec<SecretInfo> =
            self.core.store.secret_names()?.into_iter().map(|(name, at)| SecretInfo { name, source: SecretSource::Keychain, set_at: Some(at) }).collect();
        for (k, _) in &self.core.env {
            if let Some(name) = k.strip_prefix(ENV_PREFIX).filter(|n| crate::words::is_env_name(n)) {
                if !all.iter().any(|s| s.name == name) {
                    all.push(SecretInfo { name: name.to_string(), source: SecretSource::Environment, set_at: None });
                }
            }
        }
        all.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(all)
    }
}
