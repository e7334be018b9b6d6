//! Test support for Nightshift: a faithful fake Anthropic Messages API on loopback, helpers that
//! lay out throwaway homes, and where to find the real agent CLIs the tests run.

pub mod dbus;
pub mod fake_anthropic;
pub mod home;

pub use fake_anthropic::{FakeAnthropic, Reply};
pub use home::TestHome;
