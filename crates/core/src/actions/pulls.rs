//! Pull requests through the same GitHub REST client ([`Api::for_pull_requests`]): read one,
//! open one, update its title and body, add labels and ask for reviewers — GitHub's answers and
//! refusals as the client reads them (a passing trouble is tried again by the caller).

use super::api::{Answer, Api, Trouble};
use serde_json::{json, Value};

/// A pull request, as far as Nightshift reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pull {
    pub number: u64,
    pub url: String,
    /// `open` or `closed` (a merged one is closed and `merged`).
    pub state: String,
    pub merged: bool,
    /// Its head branch.
    pub head: String,
}

impl Pull {
    fn read(v: &Value) -> Option<Pull> {
        Some(Pull {
            number: v["number"].as_u64()?,
            url: v["html_url"].as_str()?.to_string(),
            state: v["state"].as_str().unwrap_or("open").to_string(),
            merged: v["merged"].as_bool().unwrap_or(false) || v["merged_at"].is_string(),
            head: v["head"]["ref"].as_str().unwrap_or_default().to_string(),
        })
    }

    pub fn is_open(&self) -> bool {
        self.state == "open" && !self.merged
    }
}

/// What a new pull request says.
pub struct NewPull<'a> {
    pub title: &'a str,
    pub head: &'a str,
    pub base: &'a str,
    pub body: &'a str,
    pub draft: bool,
}

impl Api {
    fn pull_of(&self, v: Value, what: &str) -> Answer<Pull> {
        Pull::read(&v).ok_or_else(|| Trouble::Passing { words: format!("GitHub's answer to {what} has no pull request in it"), retry_at: None })
    }

    /// Pull request `number`.
    pub fn pull(&self, number: u64) -> Answer<Pull> {
        let what = format!("read pull request #{number} of {}", self.repo);
        let r = self.get(&self.url(&format!("/pulls/{number}")), &what)?;
        let v = self.json(r, &what)?;
        self.pull_of(v, &what)
    }

    /// Open a pull request.
    pub fn open_pull(&self, new: &NewPull<'_>) -> Answer<Pull> {
        let what = format!("open a pull request from {} into {} of {}", new.head, new.base, self.repo);
        let body = json!({ "title": new.title, "head": new.head, "base": new.base, "body": new.body, "draft": new.draft });
        let r = self.send(self.request("POST", &self.url("/pulls")), Some(&body), &what)?;
        let v = self.json(r, &what)?;
        self.pull_of(v, &what)
    }

    /// Give pull request `number` a new title and body.
    pub fn update_pull(&self, number: u64, title: &str, body: &str) -> Answer<Pull> {
        let what = format!("update pull request #{number} of {}", self.repo);
        let r = self.send(self.request("PATCH", &self.url(&format!("/pulls/{number}"))), Some(&json!({ "title": title, "body": body })), &what)?;
        let v = self.json(r, &what)?;
        self.pull_of(v, &what)
    }

    /// Add `labels` to pull request `number` (an issue, to GitHub's labels).
    pub fn add_labels(&self, number: u64, labels: &[String]) -> Answer<()> {
        let what = format!("label pull request #{number} of {}", self.repo);
        self.send(self.request("POST", &self.url(&format!("/issues/{number}/labels"))), Some(&json!({ "labels": labels })), &what).map(|_| ())
    }

    /// Ask `reviewers` to review pull request `number`.
    pub fn request_reviewers(&self, number: u64, reviewers: &[String]) -> Answer<()> {
        let what = format!("ask {} to review pull request #{number} of {}", reviewers.join(", "), self.repo);
        self.send(self.request("POST", &self.url(&format!("/pulls/{number}/requested_reviewers"))), Some(&json!({ "reviewers": reviewers })), &what).map(|_| ())
    }
}

/// Reviews (`on_review: rerun`): who the token is, whether a reviewer is a collaborator, a
/// review's line comments, and the comment that answers a round.
impl Api {
    /// The login the token acts as (`GET /user`): its own reviews never bring a routine back.
    pub fn login(&self) -> Answer<String> {
        let what = "read whom the GitHub token belongs to".to_string();
        let r = self.get(&format!("{}/user", self.base), &what)?;
        let v = self.json(r, &what)?;
        v["login"].as_str().map(str::to_string).ok_or_else(|| Trouble::Passing { words: format!("GitHub's answer to {what} has no login in it"), retry_at: None })
    }

    /// Whether `login` is a collaborator of the repository (GitHub: 204 yes, 404 no).
    pub fn is_collaborator(&self, login: &str) -> Answer<bool> {
        let what = format!("ask whether {login} is a collaborator of {}", self.repo);
        match self.get(&self.url(&format!("/collaborators/{login}")), &what) {
            Ok(_) => Ok(true),
            Err(Trouble::Refused { status: 404, .. }) => Ok(false),
            Err(other) => Err(other),
        }
    }

    /// The line comments of review `review` of pull request `number` (the first 100).
    pub fn review_comments(&self, number: u64, review: u64) -> Answer<Value> {
        let what = format!("read the comments of review {review} of pull request #{number} of {}", self.repo);
        let r = self.get(&self.url(&format!("/pulls/{number}/reviews/{review}/comments?per_page=100")), &what)?;
        self.json(r, &what)
    }

    /// Comment on pull request `number` (in its conversation); the comment's address.
    pub fn comment(&self, number: u64, body: &str) -> Answer<String> {
        let what = format!("comment on pull request #{number} of {}", self.repo);
        let r = self.send(self.request("POST", &self.url(&format!("/issues/{number}/comments"))), Some(&json!({ "body": body })), &what)?;
        let v = self.json(r, &what)?;
        Ok(v["html_url"].as_str().unwrap_or_default().to_string())
    }
}
