//! The mechanics of one run: its process (group, files, wrapper), environment, live-progress
//! follower and settle hooks. The engine decides *when* and *what*; this module does *how*.

pub mod env;
pub mod follow;
pub mod hooks;
pub mod process;
pub mod remote;
pub mod remote_sandbox;
pub mod sandbox;
pub mod scrub;

pub use hooks::SettleHook;
