//! The scheduler's loop of a home (`scheduler`: slots, catch-up, reload, the long-lived parts it
//! keeps) and the work it makes up (`held`).

pub(crate) mod held;
pub mod scheduler;
pub(crate) mod sleep_watch;
pub(crate) mod wall_timer;

use crate::engine::signal::AbortOnDrop;
use crate::engine::state::Engine;

/// The long-lived parts of a home's scheduling process besides the scheduler's loop, each named:
/// the housekeeper (worktree runs' pushes, worktree cleanup, retention), the usage probe (accounts
/// with `usage_probe = true`) and the GitHub poller (`[github] poll`, as the settings say now).
/// Each runs for as long as this value lives; the face that schedules the home starts them
/// (`crate::daemon`).
pub struct Parts {
    _housekeeper: AbortOnDrop,
    _usage_probe: AbortOnDrop,
    _github_poller: AbortOnDrop,
}

impl Parts {
    /// Start them (in a tokio runtime).
    pub(crate) fn start(engine: &Engine) -> Parts {
        Parts {
            _housekeeper: crate::engine::upkeep::housekeeping::start(&engine.core),
            _usage_probe: crate::engine::accounts::usage_probe::start(&engine.core),
            _github_poller: crate::engine::inbound::github_poll::start(engine),
        }
    }
}
