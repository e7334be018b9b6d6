//! Who may call: the access tokens (kept in the home across restarts, 0600), the `Host` and
//! `Origin` checks against DNS rebinding and other sites, and the brake on guessing.

use super::plain;

use axum::body::Body;
use axum::http::{header, HeaderMap, Response, StatusCode};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bad tokens tolerated per minute before every request is refused for a while.
const BAD_TOKENS_PER_MINUTE: usize = 20;

/// What a request's token lets it do.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Access {
    Full,
    ReadOnly,
}

/// The gate every request passes.
pub(super) struct Gate {
    pub(super) token: String,
    /// The token whose calls may only read (`serve-token-read-only`).
    pub(super) read_only_token: String,
    /// `--read-only` / `[serve] read_only`: every token only reads.
    pub(super) read_only: bool,
    /// `Host` values accepted, each with the scheme its pages are served under (for `Origin`):
    /// the address served, `localhost:PORT` for loopback, and the public name of a TLS proxy in
    /// front (`public_url`).
    pub(super) hosts: Vec<(String, &'static str)>,
    bad_tokens: Mutex<Vec<Instant>>,
}

impl Gate {
    pub(super) fn new(token: String, read_only_token: String, read_only: bool, hosts: Vec<(String, &'static str)>) -> Gate {
        Gate { token, read_only_token, read_only, hosts, bad_tokens: Mutex::new(Vec::new()) }
    }

    /// Why a request is refused, if it is: a foreign `Host`, a foreign `Origin`, too many bad
    /// tokens, a missing or wrong token (`needs_token`: API calls; pages are public code). Else
    /// what its token lets it do.
    pub(super) fn check(&self, headers: &HeaderMap, needs_token: bool) -> Result<Access, Response<Body>> {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        let Some((_, scheme)) = self.hosts.iter().find(|(h, _)| h.eq_ignore_ascii_case(host)) else {
            return Err(plain(StatusCode::MISDIRECTED_REQUEST, "this server answers only to the address it serves (behind a proxy: `serve --public-url`, `[serve] public_url`)"));
        };
        if let Some(origin) = headers.get(header::ORIGIN).and_then(|h| h.to_str().ok()) {
            if !origin.eq_ignore_ascii_case(&format!("{scheme}://{host}")) {
                return Err(plain(StatusCode::FORBIDDEN, "cross-origin requests are refused"));
            }
        }
        if !needs_token {
            return Ok(Access::ReadOnly);
        }
        let mut bad = self.bad_tokens.lock().unwrap_or_else(|e| e.into_inner());
        bad.retain(|t| t.elapsed() < Duration::from_secs(60));
        if bad.len() >= BAD_TOKENS_PER_MINUTE {
            return Err(plain(StatusCode::TOO_MANY_REQUESTS, "too many wrong tokens; try again in a minute"));
        }
        let given = headers.get(header::AUTHORIZATION).and_then(|h| h.to_str().ok()).and_then(|h| h.strip_prefix("Bearer ")).unwrap_or("");
        if crate::secret_file::same(given.as_bytes(), self.token.as_bytes()) {
            return Ok(if self.read_only { Access::ReadOnly } else { Access::Full });
        }
        if crate::secret_file::same(given.as_bytes(), self.read_only_token.as_bytes()) {
            return Ok(Access::ReadOnly);
        }
        bad.push(Instant::now());
        Err(plain(StatusCode::UNAUTHORIZED, "missing or wrong access token (open the URL `nightshiftctl serve` printed)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate::new("a".repeat(64), "b".repeat(64), false, vec![("127.0.0.1:7878".into(), "http"), ("box.example.net".into(), "https")])
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_proxys_public_name_is_answered_with_its_own_scheme_for_origin() {
        let g = gate();
        let bearer = format!("Bearer {}", "a".repeat(64));
        let ok = headers(&[(header::HOST, "box.example.net"), (header::ORIGIN, "https://box.example.net"), (header::AUTHORIZATION, &bearer)]);
        assert_eq!(g.check(&ok, true).unwrap(), Access::Full);
        // The same name over plain http is another origin.
        let wrong = headers(&[(header::HOST, "box.example.net"), (header::ORIGIN, "http://box.example.net"), (header::AUTHORIZATION, &bearer)]);
        assert_eq!(g.check(&wrong, true).unwrap_err().status(), StatusCode::FORBIDDEN);
        let foreign = headers(&[(header::HOST, "evil.example"), (header::AUTHORIZATION, &bearer)]);
        assert_eq!(g.check(&foreign, true).unwrap_err().status(), StatusCode::MISDIRECTED_REQUEST);
    }

    #[test]
    fn the_read_only_token_only_reads_and_guessing_is_braked() {
        let g = gate();
        let ro = headers(&[(header::HOST, "127.0.0.1:7878"), (header::AUTHORIZATION, &format!("Bearer {}", "b".repeat(64)))]);
        assert_eq!(g.check(&ro, true).unwrap(), Access::ReadOnly);
        let bad = headers(&[(header::HOST, "127.0.0.1:7878"), (header::AUTHORIZATION, "Bearer nope")]);
        for _ in 0..BAD_TOKENS_PER_MINUTE {
            assert_eq!(g.check(&bad, true).unwrap_err().status(), StatusCode::UNAUTHORIZED);
        }
        assert_eq!(g.check(&ro, true).unwrap_err().status(), StatusCode::TOO_MANY_REQUESTS);
    }
}
