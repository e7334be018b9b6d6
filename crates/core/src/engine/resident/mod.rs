//! The scheduler's loop of a home (`scheduler`: slots, catch-up, reload, the long-lived parts it
//! keeps) and the work it makes up (`held`).

pub(crate) mod held;
pub mod scheduler;
