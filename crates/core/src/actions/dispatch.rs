//! What one dispatch of the workflow asks for (its `inputs`), and the names by which a run and an
//! account are found again on GitHub. Nothing secret is ever in the inputs: the account's
//! credential is a repository secret, named here and read by the workflow.

use crate::words::Agent;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// GitHub takes at most this many characters of inputs in one dispatch.
pub const MAX_INPUTS: usize = 65_535;

/// What the job runs, as the wrapper reads it (`call`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Call {
    /// The program (its name on the runner's PATH) and its arguments.
    pub argv: Vec<String>,
    /// The run's environment on top of the runner's — never a secret.
    pub env: BTreeMap<String, String>,
    /// Where it runs, relative to the repository's checkout (`remote_cwd:`); `None`: its root.
    pub cwd: Option<String>,
    /// The variables that get the account's credential (from the secret the dispatch names).
    pub secret_vars: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Dispatch {
    pub run_id: String,
    /// This try's key: in the workflow run's name beside the run's id, so each try's dispatch is
    /// found again, and only it.
    pub dispatch: String,
    pub agent: Agent,
    pub call: Call,
    /// The repository secret that holds the account's credential.
    pub secret: Option<String>,
    /// The routine's limit: the job's own is this and a margin (Nightshift ends the run at the
    /// routine's limit; the job's is only a backstop should Nightshift be gone).
    pub timeout: Duration,
}

impl Dispatch {
    /// The dispatch's `inputs`, or why they cannot be sent.
    pub fn inputs(&self) -> Result<serde_json::Value, String> {
        let call = serde_json::to_string(&self.call).map_err(|e| e.to_string())?;
        let minutes = self.timeout.as_secs().div_ceil(60).max(1) + 5;
        let inputs = serde_json::json!({
            "run_id": self.run_id,
            "dispatch": self.dispatch,
            "agent": self.agent.as_str(),
            "call": call,
            "secret": self.secret.clone().unwrap_or_default(),
            "timeout_minutes": minutes.to_string(),
        });
        let size: usize = inputs.as_object().map(|o| o.values().filter_map(|v| v.as_str()).map(str::len).sum()).unwrap_or(0);
        if size > MAX_INPUTS {
            return Err(format!("the run is too large for a workflow dispatch: its prompt and arguments are {size} characters, GitHub takes {MAX_INPUTS} in all — shorten the prompt, or run it on this machine or an SSH host"));
        }
        Ok(inputs)
    }
}

/// The name the workflow gives its run (`run-name`): how a dispatch is found again, also when
/// GitHub's answer to it was lost.
pub fn run_name(run_id: &str, dispatch: &str) -> String {
    format!("Nightshift run {run_id} ({dispatch})")
}

/// The repository secret a try reads its credential from on GitHub: for an account,
/// `NIGHTSHIFT_<AGENT>_<EMAIL>` in GitHub's alphabet, with a short digest of the email so two
/// emails that differ only in punctuation never share one; without one (the agent's credential
/// from the engine's environment), `NIGHTSHIFT_<AGENT>`.
pub fn secret_name(agent: Agent, email: Option<&str>) -> String {
    use sha2::Digest;
    let agent = agent.as_str().to_uppercase();
    let Some(email) = email else { return format!("NIGHTSHIFT_{agent}") };
    let shown: String = email.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).take(60).collect();
    let digest = sha2::Sha256::digest(email.to_lowercase().as_bytes());
    let short: String = digest.iter().take(3).map(|b| format!("{b:02X}")).collect();
    format!("NIGHTSHIFT_{agent}_{shown}_{short}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_githubs_alphabet_and_tell_emails_apart() {
        let a = secret_name(Agent::Claude, Some("me.a@acme.dev"));
        assert!(a.starts_with("NIGHTSHIFT_CLAUDE_ME_A_ACME_DEV_"), "{a}");
        assert!(a.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'));
        assert_ne!(a, secret_name(Agent::Claude, Some("me_a@acme.dev")));
        assert_eq!(a, secret_name(Agent::Claude, Some("ME.A@acme.dev")), "an email's case is not its identity");
        assert_eq!(secret_name(Agent::Codex, None), "NIGHTSHIFT_CODEX", "the engine's own credential");
    }

    #[test]
    fn inputs_carry_no_secret_and_a_too_large_run_is_refused_in_words() {
        let d = Dispatch {
            run_id: "01R".into(),
            dispatch: "k1".into(),
            agent: Agent::Claude,
            call: Call { argv: vec!["claude".into(), "-p".into(), "go".into()], env: BTreeMap::new(), cwd: None, secret_vars: vec!["CLAUDE_CODE_OAUTH_TOKEN".into()] },
            secret: Some("NIGHTSHIFT_CLAUDE_X".into()),
            timeout: Duration::from_secs(30 * 60),
        };
        let inputs = d.inputs().unwrap();
        assert_eq!(inputs["timeout_minutes"], "35");
        assert_eq!(inputs["secret"], "NIGHTSHIFT_CLAUDE_X");
        let mut big = d.clone();
        big.call.argv.push("x".repeat(MAX_INPUTS));
        assert!(big.inputs().unwrap_err().contains("too large for a workflow dispatch"));
    }
}
