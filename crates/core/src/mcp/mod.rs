//! Nightshift as an MCP server: the tools any agent speaking the Model Context Protocol calls to
//! look up, run and schedule routines — `nightshiftctl mcp` over stdio ([`serve_stdio`]), and
//! `serve`'s `/mcp` over streamable HTTP ([`http`]). Built on the official SDK (`rmcp`) for the
//! protocol; the tools themselves ([`tools`]) answer with the same engine calls (`crate::api`)
//! as the window and the HTTP API, so the three cannot drift apart.
//!
//! What an agent may do is the user's (`[mcp]` in nightshift.toml, read at each call): reading
//! always; running and creating only when `allow` says so; what it creates is marked, disabled
//! unless `enable_created`, no looser than `max_mode`, and counted ([`authoring`]). No tool
//! reaches an account's secret or the settings. A refusal is a tool error carrying the engine's
//! stable code and words; only protocol ever goes to stdout.

mod approvals;
pub(crate) mod authoring;
pub mod http;
pub mod per_run;
mod stdio;
pub mod tools;

use crate::error::{Error, ErrorCode, Result};
use crate::run::RunRecord;
use crate::Engine;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

/// Who calls: the run whose agent asks (inside a Nightshift run), and whether acting tools may be
/// called at all (not with `serve`'s read-only token).
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// The run, as its record says it now: a follow-up it creates carries `parent_run`, and the
    /// run's own account is the only one it may name.
    pub run: Option<RunRecord>,
    /// `false`: every acting tool is refused (`read_only`), whatever `[mcp] allow` says.
    pub may_act: bool,
}

impl Caller {
    /// An agent on this machine (`nightshiftctl mcp`): inside a Nightshift run when its
    /// environment names one (`NIGHTSHIFT_RUN_ID`, which every run gets) that exists and still
    /// goes — an id that names no such run makes it an ordinary caller, never a failure.
    pub fn from_env(engine: &Engine) -> Caller {
        let run = std::env::var("NIGHTSHIFT_RUN_ID").ok().filter(|id| !id.is_empty()).and_then(|id| match engine.run(&id) {
            Ok(run) if !run.status.is_final() => Some(run),
            Ok(run) => {
                tracing::warn!(run = %run.id, status = %run.status, "NIGHTSHIFT_RUN_ID names a run that has ended; tools answer as outside a run");
                None
            }
            Err(e) => {
                tracing::warn!(run = %id, error = %e.message, "NIGHTSHIFT_RUN_ID names no run of this home; tools answer as outside a run");
                None
            }
        });
        Caller { run, may_act: true }
    }
}

/// Which tools a server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Nightshift's tools ([`tools`]).
    Tools,
    /// A run's approvals: the one prompt tool `on_denial: ask` gives Claude Code ([`approvals`]).
    Approvals,
}

/// The server: one engine, one caller (each HTTP request brings its own access, see [`http`]).
#[derive(Clone)]
pub struct McpServer {
    engine: Engine,
    caller: Caller,
    offer: Offer,
}

impl McpServer {
    pub fn new(engine: Engine, caller: Caller) -> McpServer {
        McpServer { engine, caller, offer: Offer::Tools }
    }

    /// A run's approvals server.
    pub fn approvals(engine: Engine, caller: Caller) -> McpServer {
        McpServer { engine, caller, offer: Offer::Approvals }
    }

    /// A tool call answered: its JSON object as text (what every client reads) and as structured
    /// content; a refusal as a tool error with `{code, message}` — the agent reads it
    /// and goes on, the server never stops for it.
    pub async fn answer(&self, caller: &Caller, name: &str, args: serde_json::Value) -> CallToolResult {
        let answered = match self.offer {
            Offer::Tools => tools::call(&self.engine, caller, name, args).await,
            Offer::Approvals => approvals::call(&self.engine, caller, name, args).await,
        };
        match answered {
            Ok(value) => {
                let text = serde_json::to_string_pretty(&value).unwrap_or_default();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                // Claude Code reads a permission prompt's answer from one text block alone.
                if self.offer == Offer::Tools {
                    result.structured_content = Some(value);
                }
                result
            }
            Err(e) => refusal(&self.engine, e),
        }
    }
}

/// A tool error: the stable code first, the words after (secrets masked), and both as
/// structured content.
fn refusal(engine: &Engine, e: Error) -> CallToolResult {
    let message = engine.redact(&e.message);
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!("{}: {message}", e.code.as_str()))]);
    result.structured_content = Some(serde_json::json!({ "code": e.code.as_str(), "message": message }));
    result
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("nightshift", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Nightshift runs coding agents and commands on a schedule on this user's machines. Read routines, runs, reports and why a slot did what it did; \
                 with the user's leave (`[mcp] allow` in nightshift.toml) run routines now and schedule follow-ups (`routine_schedule_once`).",
            )
    }

    async fn list_tools(&self, _request: Option<PaginatedRequestParams>, _context: RequestContext<RoleServer>) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(match self.offer {
            Offer::Tools => tools::declared(),
            Offer::Approvals => approvals::declared(),
        }))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> std::result::Result<CallToolResponse, ErrorData> {
        let mut caller = self.caller.clone();
        // Over HTTP, what this request's token may do ([`http`] marks it).
        if let Some(access) = context.extensions.get::<::http::request::Parts>().and_then(|p| p.extensions.get::<http::Access>()) {
            caller.may_act &= access.may_act;
        }
        let known = match self.offer {
            Offer::Tools => tools::power_of(&request.name).is_some(),
            Offer::Approvals => request.name == approvals::TOOL,
        };
        if !known {
            return Err(ErrorData::invalid_params(format!("no tool named \"{}\" (tools/list names them)", request.name), None));
        }
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        Ok(self.answer(&caller, &request.name, args).await.into())
    }
}

/// `nightshiftctl mcp`: serve `engine`'s tools on stdin/stdout until the client closes stdin.
pub async fn serve_stdio(engine: Engine, caller: Caller) -> Result<()> {
    use rmcp::ServiceExt;
    let server = McpServer::new(engine, caller);
    let running = server.serve(stdio::Stdio::new()).await.map_err(|e| Error::new(ErrorCode::Io, format!("the MCP client did not start a session: {e}")))?;
    running.waiting().await.map_err(|e| Error::new(ErrorCode::Io, format!("the MCP session ended badly: {e}")))?;
    Ok(())
}
