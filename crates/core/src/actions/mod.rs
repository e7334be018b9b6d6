//! GitHub Actions as a host (`[hosts.<name>] github = "owner/name"`): the workflow Nightshift
//! dispatches ([`workflow`]), what a dispatch asks for ([`dispatch`]), GitHub's REST API for it
//! ([`api`]), sealing a secret for a repository ([`seal`]) and reading a run's output back from its
//! job's log ([`job_log`]). The engine's side of a run there is `engine/run/actions_run.rs`.

pub mod api;
pub mod dispatch;
pub mod job_log;
pub mod pulls;
pub mod seal;
pub mod workflow;
