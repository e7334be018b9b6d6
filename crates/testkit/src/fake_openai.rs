//! A fake of the OpenAI Responses API on loopback, streaming as the real one does, for driving the
//! *real* Codex CLI in tests. Codex reaches it through a custom provider in the account's
//! `$CODEX_HOME/config.toml` ([`codex_config`]); the API key arrives as `Authorization: Bearer`.
//!
//! Bodies follow the real API: `response.created`, `response.output_item.added`,
//! `response.output_text.delta`, `response.output_item.done`, `response.completed` (with usage)
//! for a success; `{"error": {…}}` with the real `code`s for failures.

use crate::fake_api::{json_response, slow_sse_response, sse_response, Call, FakeApi};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

/// How the fake answers one API key.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// 200, a streamed assistant message with this text.
    Success { text: String },
    /// 401 `invalid_api_key`.
    Unauthorized,
    /// 429 `usage_limit_reached` with the reset time (epoch seconds), as ChatGPT plans get it.
    UsageLimit { resets_at: i64 },
    /// 429 `rate_limit_exceeded` (per-minute API limit) with `retry-after`.
    RateLimited,
    /// 500 `server_error`.
    ServerError,
    /// The first `failures` calls fail with 500, then [`Reply::Success`] (Codex retries the request).
    Flaky { failures: usize, text: String },
    /// The first `times` streams stop before `response.completed`, then [`Reply::Success`] (Codex
    /// reports "Reconnecting... n/m" and tries again).
    Disconnects { times: usize, text: String },
    /// A success that starts streaming only after `secs`.
    Slow { secs: u64, text: String },
    /// 200 with this text and the ChatGPT plan's usage windows in Codex's headers, as the real
    /// backend sends them on every answer: `x-codex-primary-*` the five-hour window (300 minutes),
    /// `x-codex-secondary-*` the weekly one (10080), used share in percent, reset in epoch seconds.
    Windows { five_hour: f64, five_hour_reset: i64, weekly: f64, weekly_reset: i64, text: String },
    /// The model runs `cmd` with Codex's `exec_command` tool; once the CLI sends the command's
    /// output back, it answers `text`.
    Command { cmd: String, text: String },
    /// [`Reply::Command`] whose connection drops once the command has run: a request whose input
    /// ends with the command's output gets 500 (Codex, with its own retries off, fails the turn);
    /// one that carries the output *and a user message after it* — a resumed thread, sent with
    /// its earlier items — gets [`Reply::Success`]. Stateless: the request says which it is.
    DropsAfterCommand { cmd: String, text: String },
}

/// The fake Responses API: a [`FakeApi`] answering with [`Reply`]s.
pub type FakeOpenAi = FakeApi<Reply>;

impl FakeApi<Reply> {
    /// Start on 127.0.0.1; keys without a reply of their own get `default` (401 when `None`).
    pub async fn start(default: Option<Reply>) -> FakeOpenAi {
        FakeApi::serve(default, bearer, answer, unauthorized).await
    }

    /// The keys of the `/v1/responses` calls, in order.
    pub fn response_keys(&self) -> Vec<String> {
        self.requests().into_iter().filter(|r| r.path.starts_with("/v1/responses")).filter_map(|r| r.credential).collect()
    }

    /// A `config.toml` for `$CODEX_HOME` that sends Codex here (no retries unless `retries`).
    pub fn codex_config(&self, retries: u32) -> String {
        codex_config(&self.url(), retries)
    }
}

/// Codex's custom-provider config for a Responses API at `url` (the built-in provider would try a
/// WebSocket first and retry many times).
pub fn codex_config(url: &str, retries: u32) -> String {
    format!(
        "model = \"gpt-5\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"{url}/v1\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\nrequest_max_retries = {retries}\nstream_max_retries = {retries}\n"
    )
}

fn bearer(headers: &HeaderMap, _path: &str) -> Option<String> {
    headers.get("authorization").and_then(|v| v.to_str().ok()).map(|v| v.trim_start_matches("Bearer ").to_string())
}

fn error(status: StatusCode, kind: &str, code: &str, message: &str, extra: serde_json::Value, headers: &[(&str, String)]) -> Response {
    let mut e = serde_json::json!({"message": message, "type": kind, "param": null, "code": code});
    if let (Some(e), Some(x)) = (e.as_object_mut(), extra.as_object()) {
        e.extend(x.clone());
    }
    json_response(status, serde_json::json!({"error": e}), headers)
}

fn unauthorized() -> Response {
    error(
        StatusCode::UNAUTHORIZED,
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
        serde_json::json!({}),
        &[],
    )
}

fn server_error() -> Response {
    error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", "server_error", "The server had an error while processing your request. Sorry about that!", serde_json::json!({}), &[])
}

fn answer(call: &Call<'_>, reply: &Reply) -> Response {
    if call.method != "POST" || !call.path.starts_with("/v1/responses") {
        return json_response(StatusCode::NOT_FOUND, serde_json::json!({"error": {"message": format!("Not found: {} {}", call.method, call.path)}}), &[]);
    }
    match reply {
        Reply::Success { text } => sse_response(stream(text)),
        Reply::Command { cmd, text } => match command_output_at(call.body) {
            None => sse_response(exec_command(cmd)),
            Some(_) => sse_response(stream(text)),
        },
        Reply::DropsAfterCommand { cmd, text } => match command_output_at(call.body) {
            None => sse_response(exec_command(cmd)),
            Some(Last::Output) => server_error(),
            Some(Last::Later) => sse_response(stream(text)),
        },
        Reply::Slow { secs, text } => slow_sse_response(*secs, stream(text)),
        Reply::Flaky { failures, text } if call.nth >= *failures => sse_response(stream(text)),
        Reply::Flaky { .. } | Reply::ServerError => server_error(),
        Reply::Disconnects { times, text } if call.nth >= *times => sse_response(stream(text)),
        Reply::Disconnects { .. } => sse_response(stream("").lines().take(3).map(|l| format!("{l}\n")).collect()),
        Reply::Windows { five_hour, five_hour_reset, weekly, weekly_reset, text } => {
            let mut response = sse_response(stream(text));
            let headers = [
                ("x-codex-primary-used-percent", five_hour.to_string()),
                ("x-codex-primary-window-minutes", "300".to_string()),
                ("x-codex-primary-reset-at", five_hour_reset.to_string()),
                ("x-codex-secondary-used-percent", weekly.to_string()),
                ("x-codex-secondary-window-minutes", "10080".to_string()),
                ("x-codex-secondary-reset-at", weekly_reset.to_string()),
            ];
            for (k, v) in headers {
                response.headers_mut().insert(k, v.parse().expect("header value"));
            }
            response
        }
        Reply::Unauthorized => unauthorized(),
        Reply::UsageLimit { resets_at } => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
            error(
                StatusCode::TOO_MANY_REQUESTS,
                "usage_limit_reached",
                "usage_limit_reached",
                "The usage limit has been reached",
                serde_json::json!({"plan_type": "plus", "resets_at": resets_at, "resets_in_seconds": (resets_at - now).max(0)}),
                &[],
            )
        }
        Reply::RateLimited => error(
            StatusCode::TOO_MANY_REQUESTS,
            "requests",
            "rate_limit_exceeded",
            "Rate limit reached for gpt-5 in organization org-fake on tokens per min (TPM): Limit 30000, Used 30000, Requested 1200. Please try again in 2.4s.",
            serde_json::json!({}),
            &[("retry-after", "3".to_string())],
        ),
    }
}

/// Codex's shell tool, called with `cmd`.
fn exec_command(cmd: &str) -> String {
    function_call("exec_command", &serde_json::json!({"cmd": cmd}).to_string())
}

/// Where a request's input has a tool's output: as its last item (the turn goes on from it), or
/// before a later user message (a session resumed with a new prompt).
pub(crate) enum Last {
    Output,
    Later,
}

pub(crate) fn command_output_at(body: &serde_json::Value) -> Option<Last> {
    let input = body["input"].as_array()?;
    let at = input.iter().rposition(|i| i["type"] == "function_call_output")?;
    Some(if input[at + 1..].iter().any(|i| i["role"] == "user") { Last::Later } else { Last::Output })
}

/// A streamed response in which the model calls `tool` with `arguments` (JSON text), as the real
/// API streams a function call: the item added, its arguments, the item done, the response completed.
pub(crate) fn function_call(tool: &str, arguments: &str) -> String {
    let ev = |name: &str, data: serde_json::Value| format!("event: {name}\ndata: {data}\n\n");
    let item = serde_json::json!({"type": "function_call", "id": "fc_fake_1", "call_id": "call_fake_1", "name": tool, "arguments": arguments, "status": "completed"});
    let mut out = ev("response.created", serde_json::json!({"type": "response.created", "response": {"id": "resp_fake_0", "object": "response", "status": "in_progress"}}));
    out += &ev("response.output_item.added", serde_json::json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_fake_1", "call_id": "call_fake_1", "name": tool, "arguments": "", "status": "in_progress"}}));
    out += &ev("response.function_call_arguments.done", serde_json::json!({"type": "response.function_call_arguments.done", "item_id": "fc_fake_1", "output_index": 0, "arguments": arguments}));
    out += &ev("response.output_item.done", serde_json::json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
    out += &ev(
        "response.completed",
        serde_json::json!({"type": "response.completed", "response": {"id": "resp_fake_0", "object": "response", "status": "completed", "output": [item],
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 105}}}),
    );
    out
}

/// A complete streamed response whose message is `text` (`response.completed` carries the whole
/// output too, as the real API's does — Copilot CLI reads it from there).
pub(crate) fn stream(text: &str) -> String {
    let ev = |name: &str, data: serde_json::Value| format!("event: {name}\ndata: {data}\n\n");
    let mut out = ev("response.created", serde_json::json!({"type": "response.created", "response": {"id": "resp_fake_1", "object": "response", "status": "in_progress"}}));
    out += &ev(
        "response.output_item.added",
        serde_json::json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_fake_1", "role": "assistant", "status": "in_progress", "content": []}}),
    );
    let chars: Vec<char> = text.chars().collect();
    for chunk in chars.chunks(24) {
        let piece: String = chunk.iter().collect();
        out += &ev(
            "response.output_text.delta",
            serde_json::json!({"type": "response.output_text.delta", "item_id": "msg_fake_1", "output_index": 0, "content_index": 0, "delta": piece}),
        );
    }
    out += &ev(
        "response.output_item.done",
        serde_json::json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": "msg_fake_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}}),
    );
    out += &ev(
        "response.completed",
        serde_json::json!({"type": "response.completed", "response": {"id": "resp_fake_1", "object": "response", "status": "completed",
            "output": [{"type": "message", "id": "msg_fake_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 20}, "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 129}}}),
    );
    out
}
