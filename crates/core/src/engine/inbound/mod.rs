//! What comes in: `incoming` (GitHub's and Linear's deliveries, claimed once per routine),
//! `reviews` (a review of a pull request a routine opened, which brings it back) and
//! `github_poll` (GitHub's Events API, asked when `[github] poll` is set).

mod claim;
pub mod github_poll;
pub mod incoming;
pub(crate) mod reviews;
