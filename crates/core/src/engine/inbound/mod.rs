//! What comes in: `incoming` (GitHub's and Linear's deliveries, claimed once per routine) and
//! `github_poll` (GitHub's Events API, asked when `[github] poll` is set).

pub mod github_poll;
pub mod incoming;
