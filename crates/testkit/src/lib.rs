//! Test support for Nightshift: faithful fakes of the Anthropic Messages, OpenAI Responses and
//! Gemini APIs, of GitHub's Copilot services and its REST API's events feed on loopback (for the real Claude Code, Codex,
//! Gemini, OpenCode and Copilot CLIs), helpers that lay out
//! throwaway homes, where to find the real agent CLIs the tests run, and real servers started by
//! the tests (a webhook receiver, a D-Bus notification server, an OpenSSH server).

pub mod app_log;
pub mod bench;
pub mod dbus;
pub mod fake_anthropic;
pub mod fake_api;
pub mod fake_copilot;
pub mod fake_gemini;
pub mod fake_github;
pub mod fake_openai;
pub mod git;
pub mod home;
pub mod process;
pub mod ssh;
pub mod streams;
pub mod tls_proxy;
pub mod tmpfs;
pub mod wait;
pub mod webhook_receiver;

pub use app_log::window_first_paints;
pub use fake_anthropic::{FakeAnthropic, Reply};
pub use fake_copilot::{CopilotReply, FakeCopilot};
pub use fake_gemini::FakeGemini;
pub use fake_github::FakeGithub;
pub use fake_openai::FakeOpenAi;
pub use home::{this_machine, TestHome};
pub use process::{command_line, processes_holding};
pub use ssh::SshServer;
pub use tmpfs::Tmpfs;
pub use wait::{secs, wait_for_async, wait_until, wait_until_async, waited};
pub use webhook_receiver::{Answer, WebhookReceiver};
