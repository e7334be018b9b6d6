//! A loopback webhook receiver that misbehaves on purpose: for each run (its `Idempotency-Key`)
//! the nth request gets the nth answer of a script — fail with a status, 429 with `Retry-After`,
//! hang, or close the connection without a word — and the last answer repeats. It verifies each
//! signature with the secret it was given and counts what it accepted, so a test can assert
//! "exactly one accepted delivery per run". A plain HTTP/1.1 server on a TCP socket (not a
//! framework), so "close the connection" and "hang" are exactly that.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How to answer one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// 200.
    Accept,
    /// This status (500, 400, …).
    Status(u16),
    /// 429 with `Retry-After: secs`.
    RetryAfter(u64),
    /// Wait this long, then 200 (a sender with a shorter timeout gives up first).
    Hang(Duration),
    /// Read the request, then close the connection without an answer.
    Close,
}

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request line's method and path ("POST /hook/start").
    pub line: String,
    pub key: String,
    pub headers: HashMap<String, String>,
    pub body: String,
    /// `Some(true)` when the signature matched the secret, `Some(false)` when it did not or was
    /// missing, `None` when the receiver has no secret.
    pub signature_ok: Option<bool>,
    pub answer: Answer,
    /// Answered 2xx for a key already accepted before.
    pub duplicate: bool,
    /// When it arrived.
    pub at: std::time::Instant,
}

#[derive(Default)]
struct State {
    seen: Vec<Received>,
    per_key: HashMap<String, usize>,
    accepted: HashMap<String, usize>,
    /// While set, every request gets this answer instead of its script's (a receiver down).
    outage: Option<Answer>,
    /// Requests not accepted, per key.
    refused: HashMap<String, usize>,
    /// Only count requests, keep none (a long simulation posts tens of thousands).
    counting_only: bool,
}

pub struct WebhookReceiver {
    addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
}

impl WebhookReceiver {
    /// Serve on 127.0.0.1 (inside a tokio runtime). `script`: the answers to a run's 1st, 2nd, …
    /// request (the last repeats); `secret`: verify signatures with it.
    pub async fn start(script: Vec<Answer>, secret: Option<&str>) -> WebhookReceiver {
        assert!(!script.is_empty(), "a script of at least one answer");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(Mutex::new(State::default()));
        let (st, secret, script) = (Arc::clone(&state), secret.map(str::to_string), Arc::new(script));
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let (st, secret, script) = (Arc::clone(&st), secret.clone(), Arc::clone(&script));
                tokio::spawn(async move {
                    let _ = serve_one(conn, st, secret, script).await;
                });
            }
        });
        WebhookReceiver { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// Every request so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().seen.clone()
    }

    /// How many times each run (key) was accepted (answered 2xx).
    pub fn accepted(&self) -> HashMap<String, usize> {
        self.state.lock().unwrap().accepted.clone()
    }

    /// How many times `key` was accepted (answered 2xx).
    pub fn accepted_of(&self, key: &str) -> usize {
        self.state.lock().unwrap().accepted.get(key).copied().unwrap_or(0)
    }

    /// How many requests for `key` were not accepted (an error status, a dropped connection).
    pub fn refused_of(&self, key: &str) -> usize {
        self.state.lock().unwrap().refused.get(key).copied().unwrap_or(0)
    }

    /// Count requests per key from now on, and keep none (`received` stays as it is).
    pub fn count_only(&self) {
        self.state.lock().unwrap().counting_only = true;
    }

    /// Answer every request with `answer` from now on (a receiver that went down: `Status(503)`,
    /// `Close`), whatever the script says; `None`: back to the script.
    pub fn set_outage(&self, answer: Option<Answer>) {
        self.state.lock().unwrap().outage = answer;
    }
}

async fn serve_one(mut conn: tokio::net::TcpStream, st: Arc<Mutex<State>>, secret: Option<String>, script: Arc<Vec<Answer>>) -> std::io::Result<()> {
    // Headers up to the blank line, then Content-Length bytes of body.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let headers: HashMap<String, String> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string())))
        .collect();
    let len: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    while buf.len() < head_end + len {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..(head_end + len).min(buf.len())]).into_owned();
    let key = headers.get("idempotency-key").cloned().unwrap_or_default();
    let line = head.lines().next().unwrap_or("").rsplit_once(' ').map(|(l, _)| l.to_string()).unwrap_or_default();
    let signature_ok = secret.as_ref().map(|s| {
        let ts = headers.get("x-nightshift-timestamp").cloned().unwrap_or_default();
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(s.as_bytes()).unwrap();
        mac.update(format!("{ts}.{body}").as_bytes());
        let want: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        headers.get("x-nightshift-signature").map(|v| v == &format!("sha256={want}")).unwrap_or(false)
    });
    let answer = {
        let mut s = st.lock().unwrap();
        let n = s.per_key.entry(key.clone()).or_default();
        let answer = script[(*n).min(script.len() - 1)].clone();
        *n += 1;
        s.outage.clone().unwrap_or(answer)
    };
    let status = match &answer {
        Answer::Accept | Answer::Hang(_) => 200,
        Answer::Status(code) => *code,
        Answer::RetryAfter(_) => 429,
        Answer::Close => 0,
    };
    if let Answer::Hang(d) = &answer {
        tokio::time::sleep(*d).await;
    }
    let duplicate = {
        let mut s = st.lock().unwrap();
        let duplicate = (200..300).contains(&status) && s.accepted.contains_key(&key);
        if (200..300).contains(&status) {
            *s.accepted.entry(key.clone()).or_default() += 1;
        } else {
            *s.refused.entry(key.clone()).or_default() += 1;
        }
        if !s.counting_only {
            s.seen.push(Received { line, key, headers, body, signature_ok, answer: answer.clone(), duplicate, at: std::time::Instant::now() });
        }
        duplicate
    };
    let _ = duplicate;
    if status == 0 {
        return conn.shutdown().await;
    }
    let extra = match &answer {
        Answer::RetryAfter(secs) => format!("Retry-After: {secs}\r\n"),
        _ => String::new(),
    };
    let reason = if status == 200 { "OK" } else { "Nope" };
    let response = format!("HTTP/1.1 {status} {reason}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n");
    conn.write_all(response.as_bytes()).await?;
    conn.shutdown().await
}
