//! A byte stream to another home's `serve`: a TCP connection on this machine's loopback, the
//! stdin/stdout of `ssh -W 127.0.0.1:PORT host` — one TCP connection to that machine's loopback
//! carried over the user's OpenSSH, sharing one connection per machine (`ControlMaster`) — or TLS
//! to a proxy in front of it ([`super::tls`]).

use crate::runner::remote::Target;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How a home is reached, with what `ssh` needs.
#[derive(Debug, Clone)]
pub enum Route {
    Loopback { port: u16 },
    Ssh { target: Target, serve_port: u16 },
    Tls { host: String, port: u16, pin: Option<[u8; 32]> },
}

impl Route {
    /// The `Host` header `serve` accepts: the address it serves (always its loopback here).
    pub fn host_header(&self) -> String {
        match self {
            Route::Loopback { port } => format!("127.0.0.1:{port}"),
            Route::Ssh { serve_port, .. } => format!("127.0.0.1:{serve_port}"),
            Route::Tls { host, port, .. } => crate::settings::HomeUrl::Https { host: host.clone(), port: *port }.authority(),
        }
    }

    /// Open one stream. Its `said` holds what ssh printed on stderr (why it could not connect).
    pub async fn open(&self) -> Result<Link, String> {
        match self {
            Route::Loopback { port } => {
                let tcp = tokio::net::TcpStream::connect(("127.0.0.1", *port)).await.map_err(|e| format!("nothing answers on 127.0.0.1:{port} ({e}) — is `nightshiftctl serve` running there?"))?;
                let _ = tcp.set_nodelay(true);
                Ok(Link { io: Io::Tcp(tcp), said: Arc::default() })
            }
            Route::Tls { host, port, pin } => {
                let tls = super::tls::connect(host, *port, *pin).await?;
                Ok(Link { io: Io::Tls(Box::new(tls)), said: Arc::default() })
            }
            Route::Ssh { target, serve_port } => {
                let mut child = target
                    .stream_to_loopback(*serve_port)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot run ssh ({e}) — install OpenSSH's client"))?;
                let said: Arc<Mutex<String>> = Arc::default();
                if let Some(mut stderr) = child.stderr.take() {
                    let said = Arc::clone(&said);
                    tokio::spawn(async move {
                        use tokio::io::AsyncReadExt;
                        let mut buf = Vec::new();
                        let _ = stderr.read_to_end(&mut buf).await;
                        *said.lock().unwrap_or_else(|e| e.into_inner()) = String::from_utf8_lossy(&buf).trim().to_string();
                    });
                }
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err("ssh started without its pipes".into());
                };
                Ok(Link { io: Io::Ssh { io: tokio::io::join(stdout, stdin), _child: child }, said })
            }
        }
    }
}

/// One open stream; dropping it ends it (and its ssh client).
pub struct Link {
    io: Io,
    said: Arc<Mutex<String>>,
}

enum Io {
    Tcp(tokio::net::TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>),
    Ssh { io: tokio::io::Join<tokio::process::ChildStdout, tokio::process::ChildStdin>, _child: tokio::process::Child },
}

impl Link {
    /// What ssh said on stderr (empty for a TCP link), for an error a person can act on.
    pub fn said(&self) -> Arc<Mutex<String>> {
        Arc::clone(&self.said)
    }
}

impl AsyncRead for Link {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Tcp(t) => Pin::new(t).poll_read(cx, buf),
            Io::Tls(t) => Pin::new(t.as_mut()).poll_read(cx, buf),
            Io::Ssh { io, .. } => Pin::new(io).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Link {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Tcp(t) => Pin::new(t).poll_write(cx, buf),
            Io::Tls(t) => Pin::new(t.as_mut()).poll_write(cx, buf),
            Io::Ssh { io, .. } => Pin::new(io).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Tcp(t) => Pin::new(t).poll_flush(cx),
            Io::Tls(t) => Pin::new(t.as_mut()).poll_flush(cx),
            Io::Ssh { io, .. } => Pin::new(io).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Tcp(t) => Pin::new(t).poll_shutdown(cx),
            Io::Tls(t) => Pin::new(t.as_mut()).poll_shutdown(cx),
            Io::Ssh { io, .. } => Pin::new(io).poll_shutdown(cx),
        }
    }
}
