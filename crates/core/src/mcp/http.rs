//! The MCP tools over streamable HTTP, for `serve`'s `/mcp`: the SDK's service, stateless with
//! JSON answers (every tool answers in one response; no session to keep or lose). `serve` checks
//! the token, `Host` and `Origin` before a request gets here and marks what the token may do
//! ([`Access`]), which the tools read from the request.

use super::{Caller, McpServer};
use crate::Engine;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

/// What the request's token may do (`serve` puts it in the request's extensions).
#[derive(Debug, Clone, Copy)]
pub struct Access {
    pub may_act: bool,
}

/// The `/mcp` endpoint's service.
pub type Service = StreamableHttpService<McpServer, NeverSessionManager>;

/// The service answering `/mcp` for `engine`'s home.
pub fn service(engine: &Engine) -> Service {
    let engine = engine.clone();
    // `serve` has checked the `Host` (and `Origin`) against the addresses it serves, a TLS
    // proxy's public name among them; the SDK's own loopback-only list would refuse that name.
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(false).with_json_response(true).disable_allowed_hosts();
    StreamableHttpService::new(move || Ok(McpServer::new(engine.clone(), Caller { run: None, may_act: true })), Arc::new(NeverSessionManager::default()), config)
}
