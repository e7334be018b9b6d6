//! A review of a pull request (GitHub's `pull_request_review` event, delivered or polled), as a
//! run that answers it keeps it: who reviewed, what they decided, what they said and the comments
//! they left on lines. What the reviewer wrote is untrusted text; it reaches the agent as quoted
//! words (`{review.comments}`), bounded, and is never rendered anywhere as markup.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// At most this many line comments are kept per review (GitHub pages them by 30; a review with
/// more is a rewrite, not a round).
pub const MAX_COMMENTS: usize = 100;
/// At most this many characters of one comment's or the review's body.
pub const MAX_TEXT: usize = 4000;

/// One submitted review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct Review {
    /// GitHub's id of the review: one round, whichever path brought it.
    pub id: u64,
    /// `changes_requested`, `commented` or `approved` (GitHub's `review.state`, lower case).
    pub state: String,
    /// The reviewer's login.
    pub author: Option<String>,
    /// The review's own words (its summary), if any.
    pub body: Option<String>,
    /// The pull request's head branch: where the answering run works and pushes.
    pub head: Option<String>,
    /// The comments on lines, as GitHub's `GET …/pulls/{n}/reviews/{id}/comments` lists them.
    pub comments: Vec<ReviewComment>,
}

/// One comment on a line of the pull request's diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(ts_rs::TS))]
pub struct ReviewComment {
    pub path: Option<String>,
    pub line: Option<u64>,
    pub body: String,
}

impl Review {
    /// The review in a `pull_request_review` payload (`review`, `pull_request.head.ref`).
    pub fn read(body: &Value) -> Option<Review> {
        let review = &body["review"];
        Some(Review {
            id: review["id"].as_u64()?,
            state: review["state"].as_str().unwrap_or_default().to_ascii_lowercase(),
            author: super::text(&review["user"]["login"]),
            body: super::text(&review["body"]).map(|b| bounded(&b)),
            head: super::text(&body["pull_request"]["head"]["ref"]),
            comments: comments(&review["comments"]),
        })
    }

    /// Whether it asks for work: changes requested, or comments (an approval does not, nor a
    /// "commented" review that says nothing).
    pub fn asks_for_work(&self) -> bool {
        match self.state.as_str() {
            "changes_requested" => true,
            "commented" => self.body.is_some() || !self.comments.is_empty(),
            _ => false,
        }
    }

    /// `{review.comments}`: the review's words, then each line comment as
    /// "`path:line` — words", every part quoted so the agent reads it as the reviewer's.
    pub fn words(&self) -> String {
        let who = self.author.as_deref().map(|a| format!("@{a}")).unwrap_or_else(|| "the reviewer".into());
        let mut out = format!("Review by {who} ({}):", self.state.replace('_', " "));
        if let Some(body) = &self.body {
            out += &format!("\n{}", quoted(body));
        }
        for c in &self.comments {
            let place = match (&c.path, c.line) {
                (Some(p), Some(l)) => format!("`{p}:{l}`"),
                (Some(p), None) => format!("`{p}`"),
                _ => "(the pull request)".into(),
            };
            out += &format!("\n\n{place}:\n{}", quoted(&c.body));
        }
        if self.body.is_none() && self.comments.is_empty() {
            out += "\n(no comments)";
        }
        out
    }
}

/// What a run that answers a review is told after its task (unless its prompt places
/// `{review.comments}` itself): where it is, what to do, and the review.
pub fn suffix(event: &super::Event) -> Option<String> {
    let review = event.review.as_ref()?;
    let pull = format!("{}#{}", event.repo.as_deref().unwrap_or("?"), event.number.map(|n| n.to_string()).unwrap_or_default());
    let branch = review.head.as_deref().map(|b| format!(" (`{b}`)")).unwrap_or_default();
    Some(format!(
        "This run answers a review of pull request {pull}, which an earlier run of this routine opened. You are on its branch{branch}, with the work so far. \
         Address the review below: change what it rightly asks for and commit nothing else; in your report, say what you changed and, for each comment you did not act on, why. \
         Your commits are pushed to the same pull request and your report is posted there as the answer.\n\n{}",
        review.words()
    ))
}

/// Line comments from GitHub's list (or a payload's `review.comments`), bounded.
pub fn comments(list: &Value) -> Vec<ReviewComment> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some(ReviewComment { path: super::text(&c["path"]), line: c["line"].as_u64().or_else(|| c["original_line"].as_u64()), body: bounded(&super::text(&c["body"])?) })
        })
        .take(MAX_COMMENTS)
        .collect()
}

fn bounded(text: &str) -> String {
    let mut cut: String = text.chars().take(MAX_TEXT).collect();
    if text.chars().nth(MAX_TEXT).is_some() {
        cut.push_str(" …");
    }
    cut
}

fn quoted(text: &str) -> String {
    text.lines().map(|l| format!("> {l}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_review_reads_its_state_author_head_and_comments_and_says_them_quoted() {
        let payload = json!({"action": "submitted", "review": {"id": 80, "state": "CHANGES_REQUESTED", "user": {"login": "octocat"}, "body": "Two things.",
            "comments": [{"path": "src/lib.rs", "line": 12, "body": "Use `?` here.\nNot unwrap."}, {"path": "README.md", "body": "Typo"}]},
            "pull_request": {"number": 3, "head": {"ref": "nightshift/deps/01j"}}});
        let r = Review::read(&payload).unwrap();
        assert_eq!((r.id, r.state.as_str(), r.author.as_deref(), r.head.as_deref(), r.comments.len()), (80, "changes_requested", Some("octocat"), Some("nightshift/deps/01j"), 2));
        assert!(r.asks_for_work());
        assert_eq!(r.words(), "Review by @octocat (changes requested):\n> Two things.\n\n`src/lib.rs:12`:\n> Use `?` here.\n> Not unwrap.\n\n`README.md`:\n> Typo");
        let approved = Review { state: "approved".into(), ..r.clone() };
        assert!(!approved.asks_for_work());
        let silent = Review { state: "commented".into(), body: None, comments: vec![], ..r };
        assert!(!silent.asks_for_work(), "a comment review that says nothing asks for nothing");
    }

    #[test]
    fn a_review_is_bounded() {
        let many: Vec<Value> = (0..500).map(|i| json!({"path": "a", "line": i, "body": "x".repeat(10_000)})).collect();
        let r = Review::read(&json!({"review": {"id": 1, "state": "commented", "comments": many}})).unwrap();
        assert_eq!(r.comments.len(), MAX_COMMENTS);
        assert_eq!(r.comments[0].body.chars().count(), MAX_TEXT + 2);
        assert_eq!(Review::read(&json!({"review": {}})), None, "no id, no review");
    }
}
