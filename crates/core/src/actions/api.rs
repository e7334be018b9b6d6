//! GitHub's REST API for what an Actions host needs — dispatch the workflow, find and follow the
//! workflow run and its job, read the job's log, cancel, and the repository's secrets and files —
//! blocking (call off the async workers), with GitHub's limits heeded: an answer that says the
//! rate limit is spent, a 5xx or no answer at all is [`Trouble::Passing`] (tried again), anything
//! else a refusal in GitHub's own words with what to do. The token is sent to GitHub's API only,
//! never to the address a log download is redirected to, and never appears in an error.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

/// Why a request did not get what it asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum Trouble {
    /// GitHub could not be reached, answered 5xx, or its rate limit is spent: ask again later
    /// (`retry_at`, when GitHub said when).
    Passing { words: String, retry_at: Option<DateTime<Utc>> },
    /// GitHub refused (401, 403, 404, 422): asking again will not help.
    Refused { status: u16, words: String },
}

impl Trouble {
    pub fn words(&self) -> &str {
        match self {
            Trouble::Passing { words, .. } | Trouble::Refused { words, .. } => words,
        }
    }
}

pub type Answer<T> = Result<T, Trouble>;

/// A workflow run, as far as Nightshift reads it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct WorkflowRun {
    pub id: u64,
    /// Its `run-name` (how Nightshift finds the run it dispatched).
    #[serde(default)]
    pub display_title: String,
    /// `queued`, `in_progress`, `completed`, … (`waiting`, `pending`, `requested`).
    pub status: String,
    pub conclusion: Option<String>,
    pub html_url: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Job {
    pub id: u64,
    pub status: String,
    pub conclusion: Option<String>,
    #[serde(default)]
    pub labels: Vec<String>,
    pub runner_name: Option<String>,
    pub started_at: Option<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Runner {
    pub name: String,
    /// `online` or `offline`.
    pub status: String,
    #[serde(default)]
    pub labels: Vec<RunnerLabel>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct RunnerLabel {
    pub name: String,
}

/// An answer that may be "unchanged since the ETag you gave" (a 304 costs no rate limit).
#[derive(Debug, Clone, PartialEq)]
pub enum Fresh<T> {
    New(T, Option<String>),
    Unchanged,
}

/// One repository's Actions, as one token sees them.
pub struct Api {
    http: ureq::Agent,
    pub(super) base: String,
    token: String,
    pub repo: String,
    /// What the token needs for what this client does, said when GitHub refuses it (403).
    needs: &'static str,
}

impl Api {
    /// `base`: the API's address (`[github] api_url`); `repo`: `owner/name`.
    pub fn new(base: &str, token: String, repo: &str) -> Api {
        // Redirects are followed by hand: a log's download address must not get the token.
        let http = ureq::AgentBuilder::new().timeout_connect(Duration::from_secs(10)).timeout(Duration::from_secs(60)).redirects(0).user_agent(concat!("nightshift/", env!("CARGO_PKG_VERSION"))).build();
        Api { http, base: base.trim_end_matches('/').to_string(), token, repo: repo.to_string(), needs: "the `actions` and `secrets` write permissions (a fine-grained token) or the `repo` and `workflow` scopes" }
    }

    /// The same client for pull requests (`push.pr`): a refusal says what the token needs for them.
    pub fn for_pull_requests(base: &str, token: String, repo: &str) -> Api {
        Api { needs: "the `pull_requests` and `contents` write permissions (a fine-grained token) or the `repo` scope", ..Api::new(base, token, repo) }
    }

    pub(super) fn url(&self, path: &str) -> String {
        format!("{}/repos/{}{path}", self.base, self.repo)
    }

    pub(super) fn request(&self, method: &str, url: &str) -> ureq::Request {
        self.http
            .request(method, url)
            .set("Authorization", &format!("Bearer {}", self.token))
            .set("Accept", "application/vnd.github+json")
            .set("X-GitHub-Api-Version", "2022-11-28")
    }

    pub(super) fn send(&self, request: ureq::Request, body: Option<&Value>, what: &str) -> Answer<ureq::Response> {
        let result = match body {
            Some(b) => request.send_json(b.clone()),
            None => request.call(),
        };
        match result {
            Ok(r) => Ok(r),
            Err(ureq::Error::Status(status, r)) => Err(trouble(status, r, what, &self.repo, self.needs)),
            Err(ureq::Error::Transport(t)) => Err(Trouble::Passing { words: format!("could not reach GitHub ({}) to {what}: {t}", self.base), retry_at: None }),
        }
    }

    /// A GET, asked again twice (after ½ s, then 1½ s) while GitHub's answer is a passing one
    /// without a time to wait for: a blip is not worth a failed try.
    pub(super) fn get(&self, url: &str, what: &str) -> Answer<ureq::Response> {
        let mut waits = [Duration::from_millis(500), Duration::from_millis(1500)].into_iter();
        loop {
            match self.send(self.request("GET", url), None, what) {
                Err(Trouble::Passing { retry_at: None, .. }) if let Some(wait) = waits.next() => std::thread::sleep(wait),
                answer => return answer,
            }
        }
    }

    pub(super) fn json(&self, r: ureq::Response, what: &str) -> Answer<Value> {
        r.into_json::<Value>().map_err(|e| Trouble::Passing { words: format!("GitHub's answer to {what} could not be read: {e}"), retry_at: None })
    }

    /// The repository's default branch (a dispatch needs a ref).
    pub fn default_branch(&self) -> Answer<String> {
        let what = format!("read the repository {}", self.repo);
        let r = self.get(&self.url(""), &what)?;
        let v = self.json(r, &what)?;
        v["default_branch"].as_str().map(str::to_string).ok_or_else(|| Trouble::Refused { status: 200, words: format!("GitHub did not say {}'s default branch", self.repo) })
    }

    /// Dispatch `workflow` on `git_ref` with `inputs` (GitHub answers 204 and no run id).
    pub fn dispatch(&self, workflow: &str, git_ref: &str, inputs: &Value) -> Answer<()> {
        let url = self.url(&format!("/actions/workflows/{workflow}/dispatches"));
        let body = serde_json::json!({ "ref": git_ref, "inputs": inputs });
        self.send(self.request("POST", &url), Some(&body), &format!("dispatch {workflow}")).map(|_| ())
    }

    /// The workflow runs of `workflow` dispatched since `since` (newest first).
    pub fn dispatched_runs(&self, workflow: &str, since: DateTime<Utc>) -> Answer<Vec<WorkflowRun>> {
        let created = (since - chrono::Duration::minutes(1)).format("%Y-%m-%dT%H:%M:%SZ");
        let url = self.url(&format!("/actions/workflows/{workflow}/runs?event=workflow_dispatch&per_page=100&created=%3E%3D{created}"));
        let what = format!("list the runs of {workflow}");
        let r = self.get(&url, &what)?;
        let v = self.json(r, &what)?;
        Ok(serde_json::from_value(v["workflow_runs"].clone()).unwrap_or_default())
    }

    /// A workflow run; `etag`: the last answer's, for a 304 when nothing changed.
    pub fn workflow_run(&self, id: u64, etag: Option<&str>) -> Answer<Fresh<WorkflowRun>> {
        let mut request = self.request("GET", &self.url(&format!("/actions/runs/{id}")));
        if let Some(tag) = etag {
            request = request.set("If-None-Match", tag);
        }
        let what = format!("follow workflow run {id}");
        // A 304 is an answer, not an error, to the HTTP client: nothing changed.
        let r = self.send(request, None, &what)?;
        if r.status() == 304 {
            return Ok(Fresh::Unchanged);
        }
        let tag = r.header("ETag").map(str::to_string);
        let run = serde_json::from_value(self.json(r, &what)?).map_err(|e| Trouble::Passing { words: format!("GitHub's answer to {what} could not be read: {e}"), retry_at: None })?;
        Ok(Fresh::New(run, tag))
    }

    /// The jobs of a workflow run.
    pub fn jobs(&self, run: u64) -> Answer<Vec<Job>> {
        let what = format!("list the jobs of workflow run {run}");
        let r = self.get(&self.url(&format!("/actions/runs/{run}/jobs")), &what)?;
        let v = self.json(r, &what)?;
        Ok(serde_json::from_value(v["jobs"].clone()).unwrap_or_default())
    }

    /// A job's whole log (GitHub redirects to a download address, asked without the token).
    pub fn job_log(&self, job: u64) -> Answer<String> {
        let what = format!("read the log of job {job}");
        let r = self.get(&self.url(&format!("/actions/jobs/{job}/logs")), &what)?;
        let r = match (r.status(), r.header("Location").map(str::to_string)) {
            (300..=399, Some(to)) => match self.http.get(&to).call() {
                Ok(r) => r,
                Err(ureq::Error::Status(status, r)) => return Err(trouble(status, r, &what, &self.repo, self.needs)),
                Err(ureq::Error::Transport(t)) => return Err(Trouble::Passing { words: format!("could not download the log of job {job}: {t}"), retry_at: None }),
            },
            _ => r,
        };
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(r.into_reader(), 256 * 1024 * 1024), &mut text).map_err(|e| Trouble::Passing { words: format!("the log of job {job} could not be read: {e}"), retry_at: None })?;
        Ok(text)
    }

    /// Cancel a workflow run (GitHub answers 202; a run already over answers 409).
    pub fn cancel(&self, run: u64) -> Answer<()> {
        match self.send(self.request("POST", &self.url(&format!("/actions/runs/{run}/cancel"))), None, &format!("cancel workflow run {run}")) {
            Err(Trouble::Refused { status: 409, .. }) | Ok(_) => Ok(()),
            Err(t) => Err(t),
        }
    }

    /// The repository's public key for secrets: (key id, key, base64).
    pub fn public_key(&self) -> Answer<(String, String)> {
        let what = "read the repository's public key for secrets";
        let r = self.get(&self.url("/actions/secrets/public-key"), what)?;
        let v = self.json(r, what)?;
        match (v["key_id"].as_str(), v["key"].as_str()) {
            (Some(id), Some(key)) => Ok((id.to_string(), key.to_string())),
            _ => Err(Trouble::Refused { status: 200, words: "GitHub's answer holds no public key".into() }),
        }
    }

    /// Create or replace a repository secret (`sealed`: base64, sealed with the public key).
    pub fn put_secret(&self, name: &str, sealed: &str, key_id: &str) -> Answer<()> {
        let body = serde_json::json!({ "encrypted_value": sealed, "key_id": key_id });
        self.send(self.request("PUT", &self.url(&format!("/actions/secrets/{name}"))), Some(&body), &format!("write the secret {name}")).map(|_| ())
    }

    /// The names of the repository's secrets (GitHub never shows their values).
    pub fn secret_names(&self) -> Answer<Vec<String>> {
        let what = "list the repository's secrets";
        let r = self.get(&self.url("/actions/secrets?per_page=100"), what)?;
        let v = self.json(r, what)?;
        Ok(v["secrets"].as_array().map(|a| a.iter().filter_map(|s| s["name"].as_str().map(str::to_string)).collect()).unwrap_or_default())
    }

    /// A file of the repository on `git_ref` (`None`: there is none).
    pub fn file(&self, path: &str, git_ref: &str) -> Answer<Option<String>> {
        use base64::Engine;
        let what = format!("read {path} on {git_ref}");
        match self.get(&self.url(&format!("/contents/{path}?ref={git_ref}")), &what) {
            Ok(r) => {
                let v = self.json(r, &what)?;
                let packed: String = v["content"].as_str().unwrap_or_default().chars().filter(|c| !c.is_whitespace()).collect();
                let bytes = base64::engine::general_purpose::STANDARD.decode(packed).map_err(|e| Trouble::Refused { status: 200, words: format!("GitHub's copy of {path} could not be read: {e}") })?;
                Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
            }
            Err(Trouble::Refused { status: 404, .. }) => Ok(None),
            Err(t) => Err(t),
        }
    }

    /// The repository's self-hosted runners (needs a token that may administer the repository).
    pub fn runners(&self) -> Answer<Vec<Runner>> {
        let what = "list the repository's self-hosted runners";
        let r = self.get(&self.url("/actions/runners?per_page=100"), what)?;
        let v = self.json(r, what)?;
        Ok(serde_json::from_value(v["runners"].clone()).unwrap_or_default())
    }
}

/// GitHub's error answer in words a user can act on.
fn trouble(status: u16, r: ureq::Response, what: &str, repo: &str, needs: &str) -> Trouble {
    let remaining = r.header("X-RateLimit-Remaining").and_then(|v| v.trim().parse::<u64>().ok());
    let reset = r.header("X-RateLimit-Reset").and_then(|v| v.trim().parse::<i64>().ok()).and_then(|s| DateTime::from_timestamp(s, 0));
    let retry_after = r.header("Retry-After").and_then(|v| v.trim().parse::<i64>().ok()).map(|s| Utc::now() + chrono::Duration::seconds(s));
    let said = r.into_json::<Value>().ok().and_then(|v| v["message"].as_str().map(str::to_string)).unwrap_or_default();
    let said = crate::words::first_line(&said, 300);
    if status >= 500 || ((status == 403 || status == 429) && (remaining == Some(0) || retry_after.is_some())) {
        let why = if status >= 500 { format!("GitHub answered HTTP {status}") } else { "GitHub's rate limit is spent".to_string() };
        return Trouble::Passing { words: format!("could not {what}: {why}{}", if said.is_empty() { String::new() } else { format!(" ({said})") }), retry_at: retry_after.or(reset) };
    }
    let hint = match status {
        401 => " — the GitHub token is not valid: store a new one with `nightshiftctl github set-token` (or set GH_TOKEN)".to_string(),
        403 => format!(" — the token may not do this on {repo}: it needs {needs}"),
        404 => format!(" — {repo} or what was asked for is not there, or the token cannot see it"),
        422 => " — GitHub refused the request as it was sent".to_string(),
        _ => String::new(),
    };
    Trouble::Refused { status, words: format!("could not {what}: GitHub answered HTTP {status}{}{hint}", if said.is_empty() { String::new() } else { format!(" ({said})") }) }
}
