//! MCP's stdio transport, one JSON-RPC message per line, with the answers a client can act on
//! where the SDK's own reader drops a line silently: a line that is not JSON gets a parse error
//! (-32700), one that is JSON but no message of the protocol an invalid-request error (-32600,
//! with its id when it has one), one longer than [`MAX_FRAME`] an error saying so — and the
//! server reads on. stdout carries nothing but these messages (logs go to stderr).

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest message read (no tool's arguments come near it; a longer line is answered with
/// an error and skipped, never held in memory whole).
pub const MAX_FRAME: usize = 4 * 1024 * 1024;

pub struct Stdio<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    /// The line read so far, and how much of an overlong one was skipped: kept here, not in the
    /// reading future, because the SDK drops that future whenever it has something to send —
    /// a line arriving in pieces must not lose its first ones.
    partial: Vec<u8>,
    skipped: usize,
}

impl Stdio<tokio::io::Stdin, tokio::io::Stdout> {
    pub fn new() -> Self {
        Stdio::over(tokio::io::stdin(), tokio::io::stdout())
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Stdio<R, W> {
    pub fn over(reader: R, writer: W) -> Self {
        Stdio { reader: BufReader::new(reader), writer: Arc::new(Mutex::new(writer)), partial: Vec::new(), skipped: 0 }
    }
}

/// One line read: whole, or too long (what was past the limit skipped), or the end.
enum Line {
    Whole(Vec<u8>),
    TooLong(usize),
    End,
}

impl<R: AsyncRead + Unpin + Send, W: AsyncWrite + Unpin + Send + 'static> Stdio<R, W> {
    async fn line(&mut self) -> Line {
        loop {
            let chunk = match self.reader.fill_buf().await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "MCP: reading stdin failed; ending the session");
                    return Line::End;
                }
            };
            if chunk.is_empty() {
                // End of input: a last line without its newline still counts.
                let (buf, skipped) = (std::mem::take(&mut self.partial), std::mem::take(&mut self.skipped));
                return match (skipped, buf.is_empty()) {
                    (0, true) => Line::End,
                    (0, false) => Line::Whole(buf),
                    (n, _) => Line::TooLong(n),
                };
            }
            let (take, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            if self.skipped == 0 && self.partial.len() + take <= MAX_FRAME + 1 {
                self.partial.extend_from_slice(&chunk[..take]);
            } else {
                self.skipped += self.partial.len() + take;
                self.partial = Vec::new();
            }
            self.reader.consume(take);
            if done {
                let (buf, skipped) = (std::mem::take(&mut self.partial), std::mem::take(&mut self.skipped));
                return if skipped > 0 { Line::TooLong(skipped) } else { Line::Whole(buf) };
            }
        }
    }
}

/// An answer of the transport's own (an error), written between the server's messages — on a
/// task of its own, so that a read dropped by the SDK never leaves half a line on stdout.
fn say<W: AsyncWrite + Unpin + Send + 'static>(writer: &Arc<Mutex<W>>, value: serde_json::Value) {
    let writer = Arc::clone(writer);
    tokio::spawn(async move { write_line(&writer, value.to_string().into_bytes()).await.ok() });
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &Mutex<W>, mut bytes: Vec<u8>) -> std::io::Result<()> {
    bytes.push(b'\n');
    let mut w = writer.lock().await;
    w.write_all(&bytes).await?;
    w.flush().await
}

fn error(id: serde_json::Value, code: i64, message: String) -> serde_json::Value {
    serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

impl<R: AsyncRead + Unpin + Send, W: AsyncWrite + Unpin + Send + 'static> Transport<RoleServer> for Stdio<R, W> {
    type Error = std::io::Error;

    fn send(&mut self, item: TxJsonRpcMessage<RoleServer>) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        async move {
            let bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            write_line(&writer, bytes).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let bytes = match self.line().await {
                Line::End => return None,
                Line::TooLong(n) => {
                    say(&self.writer, error(serde_json::Value::Null, -32600, format!("message too large: {n} bytes in one line, at most {MAX_FRAME}")));
                    continue;
                }
                Line::Whole(b) => b,
            };
            let text = String::from_utf8_lossy(&bytes);
            if text.trim().is_empty() {
                continue;
            }
            let value: serde_json::Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    say(&self.writer, error(serde_json::Value::Null, -32700, format!("parse error: not JSON ({e})")));
                    continue;
                }
            };
            let id = value.get("id").cloned().unwrap_or(serde_json::Value::Null);
            let notification = id.is_null() && value.get("method").is_some();
            match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
                Ok(message) => return Some(message),
                Err(e) => {
                    // A notification (a method, no id) is never answered, even when it is wrong.
                    if !notification {
                        say(&self.writer, error(id, -32600, format!("invalid request: {e}")));
                    } else {
                        tracing::debug!(error = %e, "MCP: an invalid message without an id, dropped");
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.flush().await
    }
}
