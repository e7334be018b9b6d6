//! The sandbox's way out: an HTTP proxy on a Unix socket, outside the sandbox, that lets through
//! only the hosts the run may reach and records every refusal. It speaks the two forms clients use
//! with `HTTPS_PROXY`/`HTTP_PROXY`: `CONNECT host:port` (a tunnel, for https) and a request with an
//! absolute address (`GET http://host:port/path`, for plain http). Names are resolved here, outside:
//! the sandbox has no network, so it has no DNS either.
//!
//! Blocking threads, one pair per connection: a run opens a handful of connections, and the proxy
//! lives in the run's own process (`__sandbox-run`), not in the engine.

use super::handover::{self, Purpose, Received};
use super::HalfClose;
use crate::sandbox::{host_allowed, Refusal};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The longest request head the proxy reads (a request line and headers).
const MAX_HEAD: usize = 64 * 1024;

/// What the proxy lets through, and where it records what it refused.
pub struct Rules {
    pub hosts: Vec<String>,
    /// Hosts refused without being the run's denials (its CLI's update checks, feature flags).
    pub background: Vec<String>,
    pub refused_log: PathBuf,
}

impl Rules {
    fn allows(&self, host: &str, port: u16) -> bool {
        self.hosts.iter().any(|a| host_allowed(a, host, port))
    }

    /// Append the refusal to the run's record of them (one JSON line; appends of one line are
    /// whole even from several connections at once).
    fn record(&self, host: &str, port: u16) {
        let background = self.background.iter().any(|a| host_allowed(a, host, port));
        let line = serde_json::to_string(&Refusal { host: format!("{}:{port}", bracketed(host)), background }).unwrap_or_default();
        let appended = std::fs::OpenOptions::new().create(true).append(true).open(&self.refused_log).and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = appended {
            eprintln!("nightshift sandbox: could not record a refused connection to {host}:{port}: {e}");
        }
    }
}

fn bracketed(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_string() }
}

/// Serve connections on `listener` until the process ends: each one a connection handed over from
/// inside the sandbox ([`handover`]), or a client speaking on the socket itself.
pub fn serve(listener: UnixListener, rules: Rules) {
    let rules = Arc::new(rules);
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let rules = Arc::clone(&rules);
        std::thread::spawn(move || {
            let _ = take(conn, &rules);
        });
    }
}

/// Serve clients that speak to a proxy on a loopback port until the process ends (macOS, where
/// the sandbox has no network namespace of its own: [`super::seatbelt`]).
pub fn serve_tcp(listener: std::net::TcpListener, rules: Rules) {
    let rules = Arc::new(rules);
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let rules = Arc::clone(&rules);
        std::thread::spawn(move || {
            let _ = serve_client(conn, Vec::new(), &rules);
        });
    }
}

fn take(conn: UnixStream, rules: &Rules) -> std::io::Result<()> {
    match handover::receive(&conn)? {
        Received::Handed(fd, Purpose::Proxy) => serve_client(TcpStream::from(fd), Vec::new(), rules),
        Received::Handed(fd, Purpose::Forward(port)) => forward(TcpStream::from(fd), port, rules),
        Received::Bytes(first) => serve_client(conn, first, rules),
    }
}

/// A connection the proxy serves: the client's own socket, or the Unix socket it spoke on.
trait Client: Read + Write + AsRawFd + HalfClose + Send + 'static + Sized {
    fn duplicate(&self) -> std::io::Result<Self>;
}

impl Client for TcpStream {
    fn duplicate(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
}

impl Client for UnixStream {
    fn duplicate(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
}

/// One client that speaks to a proxy (`first`: what it already said): its request head, the
/// decision, then bytes both ways.
fn serve_client<C: Client>(mut conn: C, first: Vec<u8>, rules: &Rules) -> std::io::Result<()> {
    let (head, rest) = read_head(&mut conn, first)?;
    let mut lines = head.split("\r\n");
    let request = lines.next().unwrap_or_default();
    let mut parts = request.split(' ');
    let (method, target, version) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default(), parts.next().unwrap_or("HTTP/1.1"));
    let Some((host, port, path)) = destination(method, target) else {
        return answer(&mut conn, "400 Bad Request", "Nightshift's sandbox proxy takes CONNECT host:port or an absolute http:// address\n");
    };
    if !rules.allows(&host, port) {
        rules.record(&host, port);
        let body = format!("Nightshift's sandbox refused a connection to {}:{port}: it is not the agent's API or among the routine's `allow.hosts`\n", bracketed(&host));
        return answer(&mut conn, "403 Forbidden", &body);
    }
    let upstream = match connect(&host, port) {
        Ok(s) => s,
        Err(e) => return answer(&mut conn, "502 Bad Gateway", &format!("Nightshift's sandbox proxy could not reach {host}:{port}: {e}\n")),
    };
    let mut upstream_w = upstream.try_clone()?;
    if method.eq_ignore_ascii_case("CONNECT") {
        conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    } else {
        // The request as the origin takes it: its path, its headers but the proxy's own, and
        // one request per connection (a next one may be for another host).
        let mut out = format!("{method} {path} {version}\r\n");
        for h in lines.filter(|l| !l.is_empty()) {
            let name = h.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
            if !matches!(name.as_str(), "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive") {
                out.push_str(h);
                out.push_str("\r\n");
            }
        }
        out.push_str("Connection: close\r\n\r\n");
        upstream_w.write_all(out.as_bytes())?;
    }
    // What the client sent beyond the head (already read) goes first.
    upstream_w.write_all(&rest)?;
    let upstream_r = upstream.try_clone()?;
    super::splice(conn.duplicate()?, upstream_w, upstream_r, conn);
    Ok(())
}

/// A client that speaks to a forwarded loopback port: a tunnel to that port, if it is allowed
/// (refused: recorded, and the connection closed, as a port nothing listens on would be).
fn forward(conn: TcpStream, port: u16, rules: &Rules) -> std::io::Result<()> {
    const LOOPBACK: &str = "127.0.0.1";
    if !rules.allows(LOOPBACK, port) {
        rules.record(LOOPBACK, port);
        return Ok(());
    }
    let upstream = connect(LOOPBACK, port)?;
    super::splice(conn.try_clone()?, upstream.try_clone()?, upstream, conn);
    Ok(())
}

/// The request head, up to its blank line, and what came after it; `buf`: what was read already.
fn read_head(conn: &mut impl Read, mut buf: Vec<u8>) -> std::io::Result<(String, Vec<u8>)> {
    let text = |head: &[u8]| String::from_utf8_lossy(head).trim_end_matches("\r\n").to_string();
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((text(&buf), rest));
        }
        if buf.len() >= MAX_HEAD {
            return Ok((text(&buf), Vec::new()));
        }
        let mut chunk = [0u8; 8192];
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Ok((text(&buf), Vec::new()));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// `CONNECT host:port` or `GET http://host[:port]/path` → (host, port, path).
fn destination(method: &str, target: &str) -> Option<(String, u16, String)> {
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = target.rsplit_once(':')?;
        return Some((host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase(), port.parse().ok()?, String::new()));
    }
    let rest = target.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    let (host, port) = match authority.rsplit_once(':').filter(|(h, _)| !h.ends_with(']') || authority.starts_with('[')) {
        Some((h, p)) if !h.contains(':') || h.starts_with('[') => (h, p.parse().ok()?),
        _ => (authority, 80),
    };
    Some((host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase(), port, path))
}

fn connect(host: &str, port: u16) -> std::io::Result<TcpStream> {
    use std::net::ToSocketAddrs;
    let mut last = std::io::Error::other("the name resolved to no address");
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(30)) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn answer(conn: &mut impl Client, status: &str, body: &str) -> std::io::Result<()> {
    let text = format!("HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    conn.write_all(text.as_bytes())?;
    conn.close_write();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Shutdown;

    #[test]
    fn destinations_are_read_from_both_request_forms() {
        assert_eq!(destination("CONNECT", "api.anthropic.com:443"), Some(("api.anthropic.com".into(), 443, String::new())));
        assert_eq!(destination("GET", "http://127.0.0.1:8080/v1/x?y=1"), Some(("127.0.0.1".into(), 8080, "/v1/x?y=1".into())));
        assert_eq!(destination("GET", "http://Example.com"), Some(("example.com".into(), 80, "/".into())));
        assert_eq!(destination("CONNECT", "[::1]:9"), Some(("::1".into(), 9, String::new())));
        assert_eq!(destination("GET", "/relative"), None);
        assert_eq!(destination("CONNECT", "nohost"), None);
    }

    /// The real proxy on a real socket, with real servers behind it: an allowed host is reached
    /// both ways, a refused one gets 403 and is recorded once per try.
    #[test]
    fn allowed_hosts_are_reached_and_refusals_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let origin = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = origin.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for c in origin.incoming().flatten() {
                let mut c = c;
                let mut buf = [0u8; 4096];
                let n = c.read(&mut buf).unwrap_or(0);
                let seen = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_string();
                let body = format!("origin saw: {seen}");
                let _ = c.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
            }
        });
        let socket = dir.path().join("p.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let refused_log = crate::run_dir::RunDir::at(dir.path()).sandbox_refused();
        std::fs::create_dir_all(refused_log.parent().unwrap()).unwrap();
        let rules = Rules { hosts: vec![format!("127.0.0.1:{port}")], background: vec!["example.com".into()], refused_log: refused_log.clone() };
        std::thread::spawn(move || serve(listener, rules));
        let ask = |request: String| {
            let mut s = UnixStream::connect(&socket).unwrap();
            s.write_all(request.as_bytes()).unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        };
        let plain = ask(format!("GET http://127.0.0.1:{port}/v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nProxy-Connection: keep-alive\r\n\r\n"));
        assert!(plain.starts_with("HTTP/1.1 200 OK") && plain.ends_with("origin saw: GET /v1/messages HTTP/1.1"), "{plain}");
        let mut tunnel = UnixStream::connect(&socket).unwrap();
        tunnel.write_all(format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\nGET /through HTTP/1.1\r\n\r\n").as_bytes()).unwrap();
        tunnel.shutdown(Shutdown::Write).unwrap();
        let mut out = String::new();
        tunnel.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK") && out.ends_with("origin saw: GET /through HTTP/1.1"), "{out}");
        assert!(!refused_log.exists(), "nothing refused yet");
        let other = port.wrapping_add(1);
        let refused = ask(format!("CONNECT 127.0.0.1:{other} HTTP/1.1\r\n\r\n"));
        assert!(refused.starts_with("HTTP/1.1 403 Forbidden") && refused.contains(&format!("127.0.0.1:{other}")), "{refused}");
        let refused = ask("GET http://example.com/ HTTP/1.1\r\n\r\n".to_string());
        assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
        let log = std::fs::read_to_string(&refused_log).unwrap();
        assert_eq!(log, format!("{{\"host\":\"127.0.0.1:{other}\"}}\n{{\"host\":\"example.com:80\",\"background\":true}}\n"));
        // The CLI's own background call is kept, not counted among what the run tried.
        let denials: Vec<String> = crate::sandbox::refusals(dir.path()).iter().map(|d| d.words()).collect();
        assert_eq!(denials, vec![format!("Network(127.0.0.1:{other})")]);
    }
}
