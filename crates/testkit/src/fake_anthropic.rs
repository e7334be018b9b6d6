//! A faithful fake of the Anthropic Messages API on loopback, for driving the *real* Claude Code
//! CLI in tests (`ANTHROPIC_BASE_URL=http://127.0.0.1:PORT`).
//!
//! It answers by credential: each bearer token / API key can be given its own [`Reply`], so a
//! test sees which account a run used. Replies mirror the real API: SSE events for a streamed
//! success, JSON error bodies with the real `type`s, and the unified rate-limit headers.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::Response;
use axum::Router;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// How the fake answers a credential.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// 200 with this assistant text.
    Success { text: String },
    /// 401 `authentication_error`.
    Unauthorized,
    /// 429 `rate_limit_error` without unified headers.
    RateLimited,
    /// 429 with `anthropic-ratelimit-unified-status: rejected` and a reset time (epoch seconds).
    UnifiedLimit { reset_epoch: i64 },
    /// 500 `api_error` (overloaded-style server failure).
    ServerError,
    /// Accept the connection and send a first event, then never finish (for kill-mid-run tests).
    Hang,
    /// 529 `overloaded_error`, as the API answers when it is overloaded.
    Overloaded,
    /// The first `times` message requests get 529 `overloaded_error`, then [`Reply::Success`].
    OverloadedTimes { times: usize, text: String },
    /// [`Reply::UnifiedLimit`] until `reset_epoch` (seconds), then [`Reply::Success`] — a 5-hour
    /// window that resets.
    LimitedUntil { reset_epoch: i64, text: String },
    /// A conversation that asks for a tool: a request that offers tools and carries no tool
    /// result yet is answered with a `tool_use` block calling `tool` with `input`; once the
    /// CLI sends the tool's result (or offers no tools), [`Reply::Success`] with `text`. (Told in a
    /// resumed session that the call refused before is approved now, it calls it again.)
    ToolCall { tool: String, input: serde_json::Value, text: String },
    /// Several tool calls, one per turn, in order: a request that offers tools and carries
    /// fewer tool results than there are calls gets the next call; then [`Reply::Success`].
    ToolCalls { calls: Vec<(String, serde_json::Value)>, text: String },
    /// [`Reply::ToolCall`] whose connection drops once the tool has run: a request whose
    /// conversation ends with the tool's result gets 529 `overloaded_error` with `retry-after: 1`
    /// (the CLI's own retries get the same, so the try ends); one in which the user says something
    /// after the result — a resumed session sending its earlier turns and its new prompt — gets
    /// [`Reply::Success`]. Stateless: the request says which it is.
    DropsAfterTool { tool: String, input: serde_json::Value, text: String },
    /// The first `times` requests that offer tools (an agent's own turns, not the side requests
    /// some CLIs make for a title) get 429 `rate_limit_error` with `retry-after:
    /// retry_after_secs`, then [`Reply::Success`] — a short per-minute limit.
    LimitedFor { times: usize, retry_after_secs: u64, text: String },
    /// [`Reply::Success`] with Anthropic's unified rate-limit headers, as a subscription gets them
    /// on every answer: the five-hour and seven-day windows' used share (0–1) and reset (epoch
    /// seconds); a window at 80 % or more says `allowed_warning`.
    Windows { five_hour: f64, five_hour_reset: i64, seven_day: f64, seven_day_reset: i64, text: String },
}

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    /// `Authorization: Bearer <token>` or `x-api-key`, whichever was sent.
    pub credential: Option<String>,
    pub streamed: bool,
    /// The request's JSON body (what the CLI asked the model: system prompt, effort, tools…).
    pub body: serde_json::Value,
}

#[derive(Default)]
struct Inner {
    default: Option<Reply>,
    by_credential: HashMap<String, Reply>,
    seen: Vec<SeenRequest>,
    /// Message requests answered so far (for [`Reply::OverloadedTimes`]).
    answered: usize,
    /// Of them, those that offered tools (for [`Reply::LimitedFor`]).
    with_tools: usize,
}

#[derive(Clone)]
pub struct FakeAnthropic {
    addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
}

impl FakeAnthropic {
    /// Start on 127.0.0.1 with an ephemeral port. Requests with an unknown credential get
    /// `default` (or 401 when `None`: an unknown token is not a valid one).
    pub async fn start(default: Option<Reply>) -> FakeAnthropic {
        let inner = Arc::new(Mutex::new(Inner { default, ..Inner::default() }));
        let app = Router::new().fallback(handle).with_state(Arc::clone(&inner));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeAnthropic { addr, inner }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answer `credential` (a bearer token or API key) with `reply`.
    pub fn set(&self, credential: &str, reply: Reply) {
        self.inner.lock().unwrap().by_credential.insert(credential.to_string(), reply);
    }

    /// Every request seen so far.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.inner.lock().unwrap().seen.clone()
    }

    /// The credentials of the `/v1/messages` requests, in order, without repeats in a row.
    pub fn message_credentials(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.requests().into_iter().filter(|r| r.path.starts_with("/v1/messages") && !r.path.contains("count_tokens")) {
            let c = r.credential.unwrap_or_default();
            if out.last() != Some(&c) {
                out.push(c);
            }
        }
        out
    }
}

/// `GET /api/oauth/usage` as the real endpoint answers it.
fn oauth_usage(reply: &Reply, beta: bool) -> Response {
    let when = |epoch: i64| chrono::DateTime::from_timestamp(epoch, 0).map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, false));
    match reply {
        _ if !beta => json_response(StatusCode::BAD_REQUEST, error_body("invalid_request_error", "OAuth authentication is currently not supported."), &[]),
        Reply::Windows { five_hour, five_hour_reset, seven_day, seven_day_reset, .. } => json_response(
            StatusCode::OK,
            serde_json::json!({
                "five_hour": {"utilization": (five_hour * 100.0).round(), "resets_at": when(*five_hour_reset)},
                "seven_day": {"utilization": (seven_day * 100.0).round(), "resets_at": when(*seven_day_reset)},
                "seven_day_oauth_apps": null,
                "seven_day_opus": null,
                "extra_usage": {"is_enabled": false, "monthly_limit": null, "used_credits": null, "utilization": null}
            }),
            &[],
        ),
        Reply::Unauthorized => json_response(StatusCode::UNAUTHORIZED, error_body("authentication_error", "Invalid bearer token"), &[]),
        _ => json_response(StatusCode::FORBIDDEN, error_body("permission_error", "OAuth token does not meet scope requirement user:profile"), &[]),
    }
}

fn credential(headers: &HeaderMap) -> Option<String> {
    if let Some(v) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        return Some(v.trim_start_matches("Bearer ").to_string());
    }
    headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::to_string)
}

async fn handle(State(inner): State<Arc<Mutex<Inner>>>, req: Request<Body>) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let cred = credential(req.headers());
    let beta = req.headers().get("anthropic-beta").and_then(|v| v.to_str().ok()).is_some_and(|v| v.split(',').any(|f| f.trim() == "oauth-2025-04-20"));
    let body = axum::body::to_bytes(req.into_body(), 64 << 20).await.unwrap_or_default();
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let streamed = json["stream"].as_bool().unwrap_or(false);
    let reply = {
        let mut g = inner.lock().unwrap();
        g.seen.push(SeenRequest { method: method.clone(), path: path.clone(), credential: cred.clone(), streamed, body: json.clone() });
        cred.as_ref().and_then(|c| g.by_credential.get(c).cloned()).or_else(|| g.default.clone()).unwrap_or(Reply::Unauthorized)
    };
    // Claude's OAuth usage endpoint (what `usage_probe` reads): a token whose reply is
    // `Windows` gets those windows (utilization in percent), as the real endpoint answers; the
    // beta flag is required, as there.
    if method == "GET" && path == "/api/oauth/usage" {
        return oauth_usage(&reply, beta);
    }
    if method != "POST" || !path.starts_with("/v1/messages") {
        return json_response(StatusCode::NOT_FOUND, error_body("not_found_error", &format!("Not found: {method} {path}")), &[]);
    }
    if path.ends_with("/count_tokens") {
        return json_response(StatusCode::OK, serde_json::json!({"input_tokens": 12}), &[]);
    }
    let model = json["model"].as_str().unwrap_or("claude-fake-1").to_string();
    let offers_tools = json["tools"].as_array().is_some_and(|t| !t.is_empty());
    let (answered, with_tools) = {
        let mut g = inner.lock().unwrap();
        g.answered += 1;
        g.with_tools += usize::from(offers_tools);
        (g.answered, g.with_tools)
    };
    let reply = match reply {
        Reply::OverloadedTimes { times, text } => if answered <= times { Reply::Overloaded } else { Reply::Success { text } },
        Reply::LimitedFor { times, retry_after_secs, .. } if offers_tools && with_tools <= times => {
            return json_response(
                StatusCode::TOO_MANY_REQUESTS,
                error_body("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
                &[("retry-after", retry_after_secs.to_string())],
            );
        }
        Reply::LimitedFor { text, .. } => Reply::Success { text },
        Reply::LimitedUntil { reset_epoch, text } => {
            if (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64) < reset_epoch { Reply::UnifiedLimit { reset_epoch } } else { Reply::Success { text } }
        }
        Reply::ToolCall { tool, input, text } => match asks_for_a_tool(&json) || told_approved(&json) {
            true => return tool_use(&model, &tool, &input, streamed),
            false => Reply::Success { text },
        },
        Reply::ToolCalls { calls, text } => {
            let done = tool_results(&json);
            match calls.get(done).filter(|_| offers_tools) {
                Some((tool, input)) => return tool_use_n(&model, tool, input, streamed, done + 1),
                None => Reply::Success { text },
            }
        }
        Reply::DropsAfterTool { tool, input, text } => {
            if asks_for_a_tool(&json) {
                return tool_use(&model, &tool, &input, streamed);
            }
            // (A side request — a title, a summary — carries no tool result: answered as usual.)
            match carries_a_tool_result(&json) && !told_after_the_result(&json) {
                true => return json_response(StatusCode::from_u16(529).expect("529"), error_body("overloaded_error", "Overloaded"), &[("retry-after", "1".to_string())]),
                false => Reply::Success { text },
            }
        }
        other => other,
    };
    if let Reply::Windows { five_hour, five_hour_reset, seven_day, seven_day_reset, text } = &reply {
        let status = |used: f64| if used >= 0.8 { "allowed_warning" } else { "allowed" };
        let (tighter, claim) = if five_hour >= seven_day { (*five_hour, "five_hour") } else { (*seven_day, "seven_day") };
        let headers = [
            ("anthropic-ratelimit-unified-status", status(tighter).to_string()),
            ("anthropic-ratelimit-unified-representative-claim", claim.to_string()),
            ("anthropic-ratelimit-unified-reset", if claim == "five_hour" { five_hour_reset } else { seven_day_reset }.to_string()),
            ("anthropic-ratelimit-unified-5h-status", status(*five_hour).to_string()),
            ("anthropic-ratelimit-unified-5h-utilization", five_hour.to_string()),
            ("anthropic-ratelimit-unified-5h-reset", five_hour_reset.to_string()),
            ("anthropic-ratelimit-unified-7d-status", status(*seven_day).to_string()),
            ("anthropic-ratelimit-unified-7d-utilization", seven_day.to_string()),
            ("anthropic-ratelimit-unified-7d-reset", seven_day_reset.to_string()),
        ];
        let mut response = if streamed { sse_success(&model, text) } else { json_response(StatusCode::OK, message_json(&model, text), &[]) };
        for (k, v) in headers {
            response.headers_mut().insert(k, v.parse().expect("header value"));
        }
        return response;
    }
    match reply {
        Reply::Success { text } if streamed => sse_success(&model, &text),
        Reply::Success { text } => json_response(StatusCode::OK, message_json(&model, &text), &[]),
        Reply::Unauthorized => json_response(
            StatusCode::UNAUTHORIZED,
            error_body("authentication_error", "Invalid bearer token"),
            &[],
        ),
        Reply::RateLimited => json_response(
            StatusCode::TOO_MANY_REQUESTS,
            error_body("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
            &[("retry-after", "60".to_string())],
        ),
        Reply::UnifiedLimit { reset_epoch } => json_response(
            StatusCode::TOO_MANY_REQUESTS,
            error_body("rate_limit_error", "This request would exceed your account's rate limit. Please try again later."),
            &[
                ("anthropic-ratelimit-unified-status", "rejected".to_string()),
                ("anthropic-ratelimit-unified-reset", reset_epoch.to_string()),
                ("anthropic-ratelimit-unified-representative-claim", "five_hour".to_string()),
                ("anthropic-ratelimit-unified-5h-status", "rejected".to_string()),
                ("anthropic-ratelimit-unified-5h-reset", reset_epoch.to_string()),
                ("anthropic-ratelimit-unified-5h-utilization", "1.0".to_string()),
                ("retry-after", "3600".to_string()),
            ],
        ),
        Reply::ServerError => json_response(StatusCode::INTERNAL_SERVER_ERROR, error_body("api_error", "Internal server error"), &[]),
        Reply::Hang => hang(&model),
        Reply::Overloaded => json_response(StatusCode::from_u16(529).expect("529"), error_body("overloaded_error", "Overloaded"), &[]),
        Reply::OverloadedTimes { .. } | Reply::LimitedUntil { .. } | Reply::LimitedFor { .. } | Reply::ToolCall { .. } | Reply::ToolCalls { .. } | Reply::DropsAfterTool { .. } | Reply::Windows { .. } => unreachable!("resolved above"),
    }
}

fn error_body(kind: &str, message: &str) -> serde_json::Value {
    serde_json::json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake_0001"})
}

fn json_response(status: StatusCode, body: serde_json::Value, headers: &[(&str, String)]) -> Response {
    let mut b = Response::builder().status(status).header("content-type", "application/json").header("request-id", "req_fake_0001");
    for (k, v) in headers {
        b = b.header(*k, v);
    }
    b.body(Body::from(body.to_string())).expect("response")
}

fn usage() -> serde_json::Value {
    serde_json::json!({"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 12})
}

fn message_json(model: &str, text: &str) -> serde_json::Value {
    serde_json::json!({
        "id": "msg_fake_0001", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null, "usage": usage()
    })
}

fn sse_event(name: &str, data: serde_json::Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn sse_start(model: &str) -> String {
    let mut start = message_json(model, "");
    start["content"] = serde_json::json!([]);
    start["stop_reason"] = serde_json::Value::Null;
    start["usage"]["output_tokens"] = 1.into();
    sse_event("message_start", serde_json::json!({"type": "message_start", "message": start}))
}

fn sse_success(model: &str, text: &str) -> Response {
    let mut out = sse_start(model);
    out += &sse_event("content_block_start", serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
    // Split the text into a few deltas, like the real API streams it.
    let chars: Vec<char> = text.chars().collect();
    for chunk in chars.chunks(24) {
        let piece: String = chunk.iter().collect();
        out += &sse_event("content_block_delta", serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}));
    }
    out += &sse_event("content_block_stop", serde_json::json!({"type": "content_block_stop", "index": 0}));
    sse_end(out, "end_turn", 12)
}

/// The end of a streamed message (its stop reason and output tokens) and the response carrying it.
fn sse_end(mut out: String, stop_reason: &str, output_tokens: u64) -> Response {
    out += &sse_event("message_delta", serde_json::json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}));
    out += &sse_event("message_stop", serde_json::json!({"type": "message_stop"}));
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .header("request-id", "req_fake_0001")
        .body(Body::from(out))
        .expect("response")
}

/// A request of the conversation that should call a tool: it offers tools, and no tool result
/// has come back yet.
fn asks_for_a_tool(request: &serde_json::Value) -> bool {
    let offers = request["tools"].as_array().is_some_and(|t| !t.is_empty());
    offers && !carries_a_tool_result(request)
}

/// A resumed session told that the call refused before is approved now (Nightshift's words after
/// an approval), the user's words last: a model makes the call again.
fn told_approved(request: &serde_json::Value) -> bool {
    let offers = request["tools"].as_array().is_some_and(|t| !t.is_empty());
    let last = request["messages"].as_array().and_then(|m| m.iter().rfind(|m| m["role"] == "user"));
    offers && told_after_the_result(request) && last.is_some_and(|m| m["content"].to_string().contains("has now approved it for this run"))
}

/// The request's conversation has a tool's result in it.
fn carries_a_tool_result(request: &serde_json::Value) -> bool {
    request["messages"].as_array().into_iter().flatten().any(|m| m["content"].as_array().into_iter().flatten().any(|block| block["type"] == "tool_result"))
}

/// Whether the conversation goes on past its last tool result with words of the user's own (a
/// resumed session's new prompt), not just the result — reminders the CLI adds
/// (`<system-reminder>`) are not the user's words.
fn told_after_the_result(request: &serde_json::Value) -> bool {
    let blocks: Vec<&serde_json::Value> = request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| match &m["content"] {
            serde_json::Value::Array(blocks) => blocks.iter().collect::<Vec<_>>(),
            text => vec![text],
        })
        .collect();
    let Some(at) = blocks.iter().rposition(|b| b["type"] == "tool_result") else { return false };
    let words = |b: &&&serde_json::Value| b.as_str().or(b["text"].as_str()).is_some_and(|t| !t.trim_start().starts_with("<system-reminder>") && !t.trim().is_empty());
    blocks[at + 1..].iter().any(|b| words(&b))
}

/// How many tool results the request's conversation carries (the calls answered so far).
fn tool_results(request: &serde_json::Value) -> usize {
    request["messages"].as_array().into_iter().flatten().flat_map(|m| m["content"].as_array().into_iter().flatten()).filter(|b| b["type"] == "tool_result").count()
}

/// The model calls `tool` with `input` (streamed as the real API does: the input as JSON deltas).
fn tool_use(model: &str, tool: &str, input: &serde_json::Value, streamed: bool) -> Response {
    tool_use_n(model, tool, input, streamed, 1)
}

/// [`tool_use`] as the conversation's `n`th call (each call has its own id).
fn tool_use_n(model: &str, tool: &str, input: &serde_json::Value, streamed: bool, n: usize) -> Response {
    let id = format!("toolu_fake_{n:04}");
    let block = serde_json::json!({"type": "tool_use", "id": id, "name": tool, "input": input});
    if !streamed {
        let mut message = message_json(model, "");
        message["content"] = serde_json::json!([block]);
        message["stop_reason"] = "tool_use".into();
        return json_response(StatusCode::OK, message, &[]);
    }
    let mut out = sse_start(model);
    out += &sse_event("content_block_start", serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": tool, "input": {}}}));
    out += &sse_event("content_block_delta", serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}));
    out += &sse_event("content_block_stop", serde_json::json!({"type": "content_block_stop", "index": 0}));
    sse_end(out, "tool_use", 20)
}

fn hang(model: &str) -> Response {
    let first = sse_start(model);
    let stream = async_stream(first);
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .expect("response")
}

/// A body that sends `first` and then stays open, quietly, for up to ten minutes.
fn async_stream(first: String) -> impl futures_core::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    tokio::spawn(async move {
        let _ = tx.send(Ok(first.into_bytes())).await;
        tokio::time::sleep(std::time::Duration::from_secs(600)).await;
        drop(tx);
    });
    crate::fake_api::ReceiverStream(rx)
}
