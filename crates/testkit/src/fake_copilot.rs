//! A fake of GitHub's Copilot services on loopback, for driving the *real* Copilot CLI in tests.
//!
//! Signed in: `COPILOT_GITHUB_TOKEN` (a `github_pat_…`-shaped token — the CLI refuses classic `ghp_`
//! ones, and masks a token's value wherever it appears, so never a short one) with
//! `COPILOT_DEBUG_GITHUB_API_URL=` [`url`](FakeApi::url). The CLI asks
//! `GET /copilot_internal/user` (the answer's `endpoints.api` points back here), lists `GET
//! /models`, and sends each turn to `POST /responses` (the OpenAI Responses API, streamed).
//! Bring-your-own-key: `COPILOT_PROVIDER_BASE_URL={url}/v1` with `COPILOT_PROVIDER_WIRE_API=
//! responses` sends the turns to `POST /v1/responses` with the provider key as the bearer.
//!
//! Answers follow what the real services send: GitHub's `{"message": "Bad credentials"}` 401, the
//! Copilot API's 429 `rate_limited` with `retry-after` (which the CLI turns into "reset in 1
//! hour"), 500s it retries five times.

use crate::fake_api::{json_response, sse_response, Call, FakeApi};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::json;

/// How the fake answers one token.
#[derive(Debug, Clone, PartialEq)]
pub enum CopilotReply {
    /// A streamed answer with this text.
    Success { text: String },
    /// The model calls Copilot's tool `tool` with `arguments`; once the CLI sends the call's
    /// output back (whether it ran or was refused), it answers `text`.
    ToolCall { tool: String, arguments: serde_json::Value, text: String },
    /// [`CopilotReply::ToolCall`] whose connection drops once the tool has run: a turn whose input
    /// ends with the tool's output gets 500; one with a user message after it — a resumed
    /// session, sent with its earlier items — gets [`CopilotReply::Success`].
    DropsAfterTool { tool: String, arguments: serde_json::Value, text: String },
    /// 401 "Bad credentials" on every call (a revoked or mistyped token).
    BadToken,
    /// 429 `rate_limited` on every turn, with `retry-after` seconds.
    RateLimited { retry_after_secs: u64 },
    /// 500 on every turn.
    ServerError,
}

/// The fake Copilot services: a [`FakeApi`] answering with [`CopilotReply`]s.
pub type FakeCopilot = FakeApi<CopilotReply>;

impl FakeApi<CopilotReply> {
    /// Start on 127.0.0.1; tokens without a reply of their own get `default` (401 when `None`).
    pub async fn start(default: Option<CopilotReply>) -> FakeCopilot {
        FakeApi::serve(default, bearer, answer, bad_credentials).await
    }

    /// The turns the CLI sent (`/responses`, signed in or bring-your-own-key), in order.
    pub fn turns(&self) -> Vec<crate::fake_api::SeenRequest> {
        self.requests().into_iter().filter(|r| r.method == "POST" && r.path.ends_with("/responses")).collect()
    }
}

fn bearer(headers: &HeaderMap, _path: &str) -> Option<String> {
    let value = headers.get("authorization").and_then(|v| v.to_str().ok())?;
    Some(value.split_once(' ').map(|(_, t)| t).unwrap_or(value).to_string())
}

fn bad_credentials() -> Response {
    json_response(StatusCode::UNAUTHORIZED, json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"}), &[])
}

fn answer(call: &Call<'_>, reply: &CopilotReply) -> Response {
    if *reply == CopilotReply::BadToken {
        return bad_credentials();
    }
    let here = format!("http://{}", call.host);
    match (call.method, call.path.split('?').next().unwrap_or("")) {
        ("GET", "/copilot_internal/user") => json_response(
            StatusCode::OK,
            json!({
                "login": "octo-night", "copilot_plan": "individual", "chat_enabled": true,
                "endpoints": {"api": here, "proxy": here, "telemetry": here},
                "quota_reset_date_utc": "2027-01-01T00:00:00Z",
                "quota_snapshots": {"premium_interactions": {"entitlement": 300, "remaining": 120, "percent_remaining": 40.0, "quota_remaining": 120, "unlimited": false, "overage_permitted": false, "overage_count": 0}}
            }),
            &[],
        ),
        ("GET", "/models") | ("GET", "/v1/models") => json_response(StatusCode::OK, models(), &[]),
        ("POST", "/responses") | ("POST", "/v1/responses") => turn(call, reply),
        (method, path) => json_response(StatusCode::NOT_FOUND, json!({"message": format!("Not Found: {method} {path}")}), &[]),
    }
}

/// The one model the fake serves, as the Copilot API lists it (a premium request each).
fn models() -> serde_json::Value {
    json!({"data": [{
        "id": "gpt-5-mini", "name": "GPT-5 mini", "object": "model", "vendor": "OpenAI", "version": "gpt-5-mini",
        "model_picker_enabled": true, "billing": {"is_premium": true, "multiplier": 1},
        "capabilities": {"family": "gpt-5-mini", "type": "chat",
            "limits": {"max_context_window_tokens": 128000, "max_output_tokens": 16000, "max_prompt_tokens": 128000},
            "supports": {"streaming": true, "tool_calls": true, "parallel_tool_calls": true}},
        "supported_endpoints": ["/chat/completions", "/responses"]
    }]})
}

fn turn(call: &Call<'_>, reply: &CopilotReply) -> Response {
    match reply {
        CopilotReply::Success { text } => sse_response(crate::fake_openai::stream(text)),
        CopilotReply::ToolCall { text, .. } if has_tool_output(call.body) => sse_response(crate::fake_openai::stream(text)),
        CopilotReply::ToolCall { tool, arguments, .. } => sse_response(crate::fake_openai::function_call(tool, &arguments.to_string())),
        CopilotReply::DropsAfterTool { tool, arguments, text } => match crate::fake_openai::command_output_at(call.body) {
            None => sse_response(crate::fake_openai::function_call(tool, &arguments.to_string())),
            Some(crate::fake_openai::Last::Output) => server_error(),
            Some(crate::fake_openai::Last::Later) => sse_response(crate::fake_openai::stream(text)),
        },
        CopilotReply::RateLimited { retry_after_secs } => json_response(
            StatusCode::TOO_MANY_REQUESTS,
            json!({"error": {"message": "Sorry, you've exceeded your rate limit.", "code": "rate_limited"}}),
            &[("retry-after", retry_after_secs.to_string())],
        ),
        CopilotReply::ServerError => server_error(),
        CopilotReply::BadToken => bad_credentials(),
    }
}

fn server_error() -> Response {
    json_response(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": {"message": "The server had an error while processing your request.", "code": "server_error"}}), &[])
}

/// Whether the turn carries a tool call's output back (the model's second turn).
fn has_tool_output(body: &serde_json::Value) -> bool {
    body["input"].as_array().is_some_and(|items| items.iter().any(|i| i["type"] == "function_call_output"))
}

