//! The pipe between the resident process (engine, scheduler, tray) and its window process.
//!
//! The window is a separate, short-lived process (`nightshift-window --open <Open as JSON>`), so
//! the process that lives all day never loads a webview. The two talk over the window process's
//! stdin and stdout, one JSON message per line:
//!
//! - window → resident ([`FromWindow`]): a window command to run (the page's `invoke`), "my
//!   window closed", or an [`Open`] that arrived after it closed (the resident starts a new one);
//! - resident → window ([`ToWindow`]): a command's answer, an event for the page (every engine
//!   event as it happens, `open-run`, `relogin`), or "show this".
//!
//! Every command runs in the resident, through [`nightshift_core::api::call`] — the same
//! definitions that answer `nightshiftctl serve` — so the window holds no engine, no database and
//! no run: killing it never touches a run. Errors reach the page as `{code, message}`.

use nightshift_core::api::Face;
use nightshift_core::{Engine, Error, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// The window binary's argument before the [`Open`] (as JSON) it starts with.
pub const OPEN_FLAG: &str = "--open";

/// The window's one event channel: every engine event as it happens (`{"type": "run_started", …}`),
/// so History turns rows from queued to running to final without a reload and nothing polls.
pub const WINDOW_EVENT: &str = "engine";

/// What the window should show when it opens or is brought to the front.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Open {
    /// Where it was (the routines list in a new window).
    #[default]
    Front,
    /// A run's detail (a notification's "Open").
    Run(String),
    /// The re-login panel for an account, with the command to run when no terminal could be
    /// opened (the tray's Re-login).
    Relogin { account: String, command: String },
}

impl Open {
    /// The page address a new window starts at, so it shows the right view from its first paint
    /// (an event sent before the page listens would be lost).
    pub fn start_url(&self) -> String {
        match self {
            Open::Front => "index.html".into(),
            Open::Run(id) => format!("index.html#/run/{}", encode(id)),
            Open::Relogin { account, .. } => format!("index.html#/relogin/{}", encode(account)),
        }
    }

    /// The page event that shows it in a window that is already open (`None`: just raise it).
    pub fn event(&self) -> Option<(&'static str, Value)> {
        match self {
            Open::Front => None,
            Open::Run(id) => Some(("open-run", Value::String(id.clone()))),
            Open::Relogin { account, command } => Some(("relogin", serde_json::json!({ "account": account, "command": command }))),
        }
    }
}

/// Percent-encode for a URL fragment (run ids are plain; account ids are e-mail addresses).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromWindow {
    /// Run window command `command` with the page's arguments; answered by [`ToWindow::Reply`].
    Call { id: u64, command: String, args: Value },
    /// The window was closed: this process exits once the resident closes its end.
    Closed,
    /// An [`Open`] that came after the window closed: the resident opens a new window with it.
    Missed(Open),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWindow {
    /// The answer to call `id`: a value, or `{code, message}`.
    Reply { id: u64, ok: Option<Value>, err: Option<Value> },
    /// An event for the page (`engine`, `open-run`, `relogin`).
    Emit { event: String, payload: Value },
    /// Bring the window to the front showing this.
    Show(Open),
}

/// Write one message as one line; `false` once the other side is gone.
pub fn send<T: Serialize>(out: &mut dyn Write, message: &T) -> bool {
    let Ok(mut line) = serde_json::to_vec(message) else { return false };
    line.push(b'\n');
    out.write_all(&line).and_then(|_| out.flush()).is_ok()
}

/// The longest message either side takes. The largest ones are a routine's text (at most
/// [`nightshift_core::fsutil::MAX_TEXT_FILE`]) and a log chunk (`CHUNK_BYTES`), both escaped as
/// JSON; 16 MiB leaves room. A longer line is skipped as it streams by, never held whole — so a
/// misbehaving window process cannot make the resident buffer without end.
pub const MAX_LINE: usize = 16 << 20;

/// Read messages line by line until the other side closes its end. A line that is not a message
/// (or is longer than [`MAX_LINE`]) is logged and skipped: nothing else writes to this pipe, but
/// a stray line must not end it.
pub fn receive<T: for<'de> Deserialize<'de>>(reader: impl BufRead, on: impl FnMut(T)) {
    receive_within(reader, MAX_LINE, on)
}

fn receive_within<T: for<'de> Deserialize<'de>>(mut reader: impl BufRead, max: usize, mut on: impl FnMut(T)) {
    let mut line = Vec::new();
    while let Ok(Some(whole)) = next_line(&mut reader, &mut line, max) {
        if !whole {
            tracing::warn!(max, "skipped a line on the window pipe longer than a message can be");
            continue;
        }
        match serde_json::from_slice(&line) {
            Ok(message) => on(message),
            Err(e) => tracing::warn!(error = %e, "ignored a line on the window pipe that is not a message"),
        }
    }
}

/// The next line into `line` (without its newline): `Some(true)`, or `Some(false)` when it was
/// longer than `max` (then skipped, `line` empty); `None` at the end of the stream.
fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut too_long = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((too_long || !line.is_empty()).then_some(!too_long));
        }
        let newline = buf.iter().position(|b| *b == b'\n');
        let piece = &buf[..newline.unwrap_or(buf.len())];
        if !too_long && line.len() + piece.len() <= max {
            line.extend_from_slice(piece);
        } else {
            too_long = true;
            line.clear();
        }
        let used = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(Some(!too_long));
        }
    }
}

/// The window process's end: calls the resident and waits for the answers.
pub struct Link {
    out: Mutex<Box<dyn Write + Send>>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, Value>>>>,
}

impl Link {
    pub fn new(out: Box<dyn Write + Send>) -> Arc<Link> {
        Arc::new(Link { out: Mutex::new(out), next_id: AtomicU64::new(1), pending: Mutex::default() })
    }

    /// Tell the resident something (not a call).
    pub fn tell(&self, message: &FromWindow) -> bool {
        send(&mut **self.out.lock().unwrap_or_else(|e| e.into_inner()), message)
    }

    /// Run a window command in the resident. `Err` is the `{code, message}` the page receives.
    pub async fn call(&self, command: &str, args: Value) -> Result<Value, Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).insert(id, tx);
        if !self.tell(&FromWindow::Call { id, command: command.to_string(), args }) {
            self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            return Err(gone());
        }
        rx.await.unwrap_or_else(|_| Err(gone()))
    }

    /// Hand a reply to its call; any other message goes back to the caller.
    pub fn settle(&self, message: ToWindow) -> Option<ToWindow> {
        match message {
            ToWindow::Reply { id, ok, err } => {
                if let Some(tx) = self.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id) {
                    let _ = tx.send(match err {
                        Some(err) => Err(err),
                        None => Ok(ok.unwrap_or(Value::Null)),
                    });
                }
                None
            }
            other => Some(other),
        }
    }

    /// The resident is gone: every call still waiting fails (and later ones fail at once).
    pub fn fail_pending(&self) {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// What a call gets once the resident process is gone (quit, or died).
fn gone() -> Value {
    error_value(&Error::new(ErrorCode::Io, "Nightshift's tray app is not running any more; start Nightshift again"))
}

fn error_value(e: &Error) -> Value {
    serde_json::to_value(e).unwrap_or_else(|_| serde_json::json!({ "code": "io", "message": e.message }))
}

/// The resident's end: answer the window process's calls with the engine until it closes its end
/// (each call on its own task, so a slow one does not hold up the rest). Its other messages go
/// to `on_other`. `reply` queues a message to the window process and never blocks.
pub fn serve(
    reader: impl BufRead,
    engine: Engine,
    face: Arc<dyn Face>,
    runtime: tokio::runtime::Handle,
    reply: impl Fn(ToWindow) + Clone + Send + 'static,
    mut on_other: impl FnMut(FromWindow),
) {
    receive(reader, |message: FromWindow| match message {
        FromWindow::Call { id, command, args } => {
            let (engine, face, reply) = (engine.clone(), Arc::clone(&face), reply.clone());
            runtime.spawn(async move {
                let answer = nightshift_core::api::call(&engine, &*face, &command, args).await;
                reply(match answer {
                    Ok(v) => ToWindow::Reply { id, ok: Some(v), err: None },
                    Err(e) => ToWindow::Reply { id, ok: None, err: Some(error_value(&e)) },
                });
            });
        }
        other => on_other(other),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_json_line_each_and_survive_the_trip() {
        let mut out = Vec::new();
        assert!(send(&mut out, &FromWindow::Call { id: 7, command: "get_run".into(), args: serde_json::json!({ "id": "01x\n" }) }));
        assert!(send(&mut out, &FromWindow::Missed(Open::Relogin { account: "a@b.c".into(), command: "claude /login".into() })));
        assert!(send(&mut out, &FromWindow::Closed));
        assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 3, "a newline inside a value stays escaped");
        out.extend_from_slice(b"GLib-WARNING: not a message\n");
        let mut got = Vec::new();
        receive(&out[..], |m: FromWindow| got.push(format!("{m:?}")));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].contains("get_run") && got[1].contains("Relogin") && got[2] == "Closed", "{got:?}");
    }

    #[test]
    fn a_line_too_long_is_skipped_without_being_kept_and_the_next_one_is_read() {
        let mut out = Vec::new();
        let long = FromWindow::Call { id: 1, command: "check_routine_text".into(), args: serde_json::json!({ "text": "x".repeat(300) }) };
        assert!(send(&mut out, &long));
        assert!(send(&mut out, &FromWindow::Closed));
        out.extend_from_slice(b"{\"closed\"");
        let mut got = Vec::new();
        // A reader with a small buffer, so the long line arrives in pieces as from a pipe.
        receive_within(std::io::BufReader::with_capacity(16, &out[..]), 100, |m: FromWindow| got.push(format!("{m:?}")));
        assert_eq!(got, vec!["Closed".to_string()], "the long call is dropped, the next message read; a cut-off last line is not a message");
        let mut line = Vec::new();
        let mut reader = std::io::BufReader::with_capacity(16, &b"0123456789abcdef0123456789\nok"[..]);
        assert_eq!(next_line(&mut reader, &mut line, 10).unwrap(), Some(false));
        assert!(line.is_empty());
        assert_eq!(next_line(&mut reader, &mut line, 10).unwrap(), Some(true));
        assert_eq!(line, b"ok");
        assert_eq!(next_line(&mut reader, &mut line, 10).unwrap(), None);
    }

    #[test]
    fn start_urls_and_events() {
        assert_eq!(Open::Front.start_url(), "index.html");
        assert_eq!(Open::Run("01ABC".into()).start_url(), "index.html#/run/01ABC");
        let relogin = Open::Relogin { account: "me+x@acme.dev".into(), command: "claude /login".into() };
        assert_eq!(relogin.start_url(), "index.html#/relogin/me%2Bx%40acme.dev");
        assert_eq!(relogin.event().unwrap().1["command"], "claude /login");
        assert!(Open::Front.event().is_none());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_call_gets_its_own_reply_and_fails_in_words_once_the_resident_is_gone() {
        let (reader, writer) = std::os::unix::net::UnixStream::pair().unwrap();
        let link = Link::new(Box::new(writer));
        let calling = {
            let link = Arc::clone(&link);
            tokio::spawn(async move { link.call("list_runs", serde_json::json!({})).await })
        };
        let mut lines = std::io::BufReader::new(reader).lines();
        // (The reading end stays open: a closed one would fail the next call before it waits.)
        let (line, _open) = tokio::task::spawn_blocking(move || (lines.next().unwrap().unwrap(), lines)).await.unwrap();
        let FromWindow::Call { id, command, .. } = serde_json::from_str(&line).unwrap() else { panic!("{line}") };
        assert_eq!(command, "list_runs");
        assert!(link.settle(ToWindow::Reply { id: id + 1, ok: Some(Value::Bool(false)), err: None }).is_none(), "another call's reply is not this one's");
        assert!(link.settle(ToWindow::Emit { event: "engine".into(), payload: Value::Null }).is_some());
        assert!(link.settle(ToWindow::Reply { id, ok: Some(serde_json::json!([1])), err: None }).is_none());
        assert_eq!(calling.await.unwrap(), Ok(serde_json::json!([1])));

        let waiting = {
            let link = Arc::clone(&link);
            tokio::spawn(async move { link.call("engine_state", Value::Null).await })
        };
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while link.pending.lock().unwrap().is_empty() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap();
        link.fail_pending();
        let err = waiting.await.unwrap().unwrap_err();
        assert_eq!(err["code"], "io");
        assert!(err["message"].as_str().unwrap().contains("start Nightshift again"), "{err}");
    }
}
