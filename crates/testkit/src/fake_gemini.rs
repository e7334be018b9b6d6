//! A fake of the Gemini API (`generativelanguage`) on loopback, for driving the *real* Gemini CLI
//! in tests: `GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT` with `GEMINI_API_KEY`, and a settings
//! file that selects API-key auth ([`gemini_settings`]). The key arrives as `x-goog-api-key`.
//!
//! `…:streamGenerateContent?alt=sse` answers with `data:` chunks of `candidates` and
//! `usageMetadata` like the real API; failures use the real `google.rpc` error bodies.

use crate::fake_api::{json_response, slow_sse_response, sse_response, Call, FakeApi};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

/// How the fake answers one API key.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// 200, a streamed model answer with this text.
    Success { text: String },
    /// 400 `INVALID_ARGUMENT` / `API_KEY_INVALID` ("API key not valid").
    InvalidKey,
    /// 401 `UNAUTHENTICATED` (an expired or revoked credential).
    Unauthenticated,
    /// 429 `RESOURCE_EXHAUSTED` with a quota failure and a retry delay.
    QuotaExhausted,
    /// 500 `INTERNAL`.
    ServerError,
    /// The first `n` calls fail with 500, then [`Reply::Success`].
    Flaky { failures: usize, text: String },
    /// A success that starts streaming only after `secs`.
    Slow { secs: u64, text: String },
    /// The model asks for `run_shell_command` with `command`; once the CLI sends the call's
    /// result back (a `functionResponse`, whether it ran or was refused), it answers `text`.
    /// (Told after a refusal that the call is approved now, it asks for it again.)
    Shell { command: String, text: String },
    /// [`Reply::Shell`] whose connection drops once the command has run: a streamed turn whose
    /// contents end with the command's result gets 500; one with a user's words after the result —
    /// a resumed session, sent with its earlier turns — gets [`Reply::Success`].
    DropsAfterShell { command: String, text: String },
    /// Several function calls, one per streamed turn, in order (an MCP server's tools, named as
    /// Gemini CLI names them: `mcp_<server>_<tool>`): a turn carrying fewer function results
    /// than there are calls gets the next call; then [`Reply::Success`].
    Calls { calls: Vec<(String, serde_json::Value)>, text: String },
}

/// The fake Gemini API: a [`FakeApi`] answering with [`Reply`]s.
pub type FakeGemini = FakeApi<Reply>;

impl FakeApi<Reply> {
    /// Start on 127.0.0.1; keys without a reply of their own get `default` (400 when `None`).
    pub async fn start(default: Option<Reply>) -> FakeGemini {
        FakeApi::serve(default, api_key, answer, invalid_key).await
    }

    /// The keys of the generate calls, in order.
    pub fn generate_keys(&self) -> Vec<String> {
        self.requests().into_iter().filter(|r| r.path.contains("generateContent") || r.path.contains("GenerateContent")).filter_map(|r| r.credential).collect()
    }
}

/// `$GEMINI_CLI_HOME/.gemini/settings.json` for API-key auth with `attempts` tries per request.
pub fn gemini_settings(attempts: u32) -> String {
    serde_json::json!({"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"maxAttempts": attempts}}).to_string()
}

fn api_key(headers: &HeaderMap, path: &str) -> Option<String> {
    headers
        .get("x-goog-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| path.split_once("key=").map(|(_, k)| k.split('&').next().unwrap_or("").to_string()))
}

fn error(status: StatusCode, code: u16, state: &str, message: &str, details: serde_json::Value) -> Response {
    json_response(status, serde_json::json!({"error": {"code": code, "message": message, "status": state, "details": details}}), &[])
}

fn invalid_key() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
        serde_json::json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"}}]),
    )
}

/// A streamed turn in which the model calls `run_shell_command` with `command`.
fn asks_for_shell(model: &str, command: &str) -> Response {
    asks_for(model, "run_shell_command", serde_json::json!({"command": command, "description": "as the routine asks"}))
}

/// A streamed turn in which the model calls function `name` with `args`.
fn asks_for(model: &str, name: &str, args: serde_json::Value) -> Response {
    let mut asks = chunk(model, "", true);
    asks["candidates"][0]["content"]["parts"] = serde_json::json!([{"functionCall": {"name": name, "args": args}}]);
    sse_response(format!("data: {asks}\r\n\r\n"))
}

/// Whether the user's last words say the call refused before is approved now (Nightshift's words
/// to a session it resumes after an approval).
fn told_approved(body: &serde_json::Value) -> bool {
    let said = |c: &&serde_json::Value| c["role"] == "user" && c["parts"].as_array().into_iter().flatten().any(|p| p.get("text").is_some());
    let last = body["contents"].as_array().into_iter().flatten().rfind(said);
    last.is_some_and(|c| c["parts"].to_string().contains("has now approved it for this run"))
}

/// How many function results a turn carries back.
fn results_in(body: &serde_json::Value) -> usize {
    body["contents"].as_array().into_iter().flatten().flat_map(|c| c["parts"].as_array().into_iter().flatten()).filter(|p| p.get("functionResponse").is_some()).count()
}

/// Whether a turn carries a function's result back: `Some(true)` when the result is the last
/// thing said (the turn goes on from it), `Some(false)` when a user's words follow it.
fn shell_result_at(body: &serde_json::Value) -> Option<bool> {
    let contents = body["contents"].as_array()?;
    let answered = |c: &serde_json::Value| c["parts"].as_array().into_iter().flatten().any(|p| p.get("functionResponse").is_some());
    let at = contents.iter().rposition(answered)?;
    let said_after = contents[at + 1..].iter().any(|c| c["role"] == "user" && c["parts"].as_array().into_iter().flatten().any(|p| p.get("text").is_some()));
    Some(!said_after)
}

fn server_error() -> Response {
    error(StatusCode::INTERNAL_SERVER_ERROR, 500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", serde_json::json!([]))
}

fn answer(call: &Call<'_>, reply: &Reply) -> Response {
    if call.method != "POST" {
        return error(StatusCode::NOT_FOUND, 404, "NOT_FOUND", &format!("Not found: {} {}", call.method, call.path), serde_json::json!([]));
    }
    if call.path.contains(":countTokens") {
        return json_response(StatusCode::OK, serde_json::json!({"totalTokens": 10}), &[]);
    }
    let model = call.path.split("/models/").nth(1).and_then(|m| m.split(':').next()).unwrap_or("gemini-2.5-flash").to_string();
    let streamed = call.path.contains("streamGenerateContent");
    let ok = |text: &str| if streamed { sse_response(stream(&model, text)) } else { json_response(StatusCode::OK, chunk(&model, text, true), &[]) };
    match reply {
        Reply::Success { text } => ok(text),
        Reply::Shell { command, text } => match (streamed, shell_result_at(call.body)) {
            (true, None) => asks_for_shell(&model, command),
            // A model told the refused call is approved now makes it again.
            (true, Some(false)) if told_approved(call.body) => asks_for_shell(&model, command),
            _ => ok(text),
        },
        Reply::DropsAfterShell { command, text } => match (streamed, shell_result_at(call.body)) {
            (true, None) => asks_for_shell(&model, command),
            (true, Some(true)) => server_error(),
            _ => ok(text),
        },
        Reply::Calls { calls, text } => match calls.get(results_in(call.body)) {
            Some((name, args)) if streamed => asks_for(&model, name, args.clone()),
            _ => ok(text),
        },
        Reply::Slow { secs, text } => slow_sse_response(*secs, stream(&model, text)),
        Reply::Flaky { failures, text } if call.nth >= *failures => ok(text),
        Reply::Flaky { .. } | Reply::ServerError => server_error(),
        Reply::InvalidKey => invalid_key(),
        Reply::Unauthenticated => error(
            StatusCode::UNAUTHORIZED,
            401,
            "UNAUTHENTICATED",
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
            serde_json::json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "ACCESS_TOKEN_EXPIRED", "domain": "googleapis.com"}]),
        ),
        Reply::QuotaExhausted => error(
            StatusCode::TOO_MANY_REQUESTS,
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            serde_json::json!([
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "quotaValue": "250"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
            ]),
        ),
    }
}

fn chunk(model: &str, text: &str, last: bool) -> serde_json::Value {
    let mut candidate = serde_json::json!({"content": {"parts": [{"text": text}], "role": "model"}, "index": 0});
    if last {
        candidate["finishReason"] = "STOP".into();
    }
    serde_json::json!({
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 7, "totalTokenCount": 107, "cachedContentTokenCount": 0},
        "modelVersion": model
    })
}

fn stream(model: &str, text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let pieces: Vec<String> = chars.chunks(24).map(|c| c.iter().collect()).collect();
    let n = pieces.len().max(1);
    let mut out = String::new();
    for (i, p) in pieces.iter().enumerate() {
        out += &format!("data: {}\r\n\r\n", chunk(model, p, i + 1 == n));
    }
    if pieces.is_empty() {
        out += &format!("data: {}\r\n\r\n", chunk(model, "", true));
    }
    out
}
