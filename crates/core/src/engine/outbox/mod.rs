//! What a final row owes the user, and its delivery: `owed` (the one rule for what a row owes),
//! `delivery` (finish notifications), `webhooks` (one deliverer per webhook, and the pings).

pub(crate) mod delivery;
pub(crate) mod owed;
pub(crate) mod webhooks;
