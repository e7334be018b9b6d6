//! Keeping secrets out of everything Nightshift writes or shows: logs it writes, reports, run
//! rows, errors, `--json` output, UI payloads, tracing.
//!
//! Two nets: every token Nightshift itself handles is registered and replaced wherever it appears,
//! and anything shaped like an Anthropic key or token (`sk-ant-…`) is masked even if we never saw it.

use std::sync::{Arc, RwLock};

pub const MASK: &str = "[redacted]";

#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Arc<RwLock<Vec<String>>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.read().map(|s| s.len()).unwrap_or(0))
    }
}

impl Redactor {
    /// Remember a secret to mask (short strings are ignored: masking them would mangle text).
    pub fn register(&self, secret: &str) {
        if secret.len() >= 8 {
            let mut s = self.secrets.write().unwrap_or_else(|e| e.into_inner());
            if !s.iter().any(|x| x == secret) {
                s.push(secret.to_string());
            }
        }
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in self.secrets.read().unwrap_or_else(|e| e.into_inner()).iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), MASK);
            }
        }
        mask_key_shapes(&out)
    }

    /// Does `bytes` contain a registered secret or a key-shaped string?
    pub fn finds_in(&self, bytes: &[u8]) -> bool {
        let secrets = self.secrets.read().unwrap_or_else(|e| e.into_inner());
        secrets.iter().any(|s| contains(bytes, s.as_bytes())) || contains(bytes, b"sk-ant-")
    }

    /// Rewrite a file with its secrets masked, if it holds any. Used on a run's logs after the run:
    /// the agent writes them directly, so a command that echoes its token would keep it there.
    pub fn scrub_file(&self, path: &std::path::Path) -> std::io::Result<bool> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        if !self.finds_in(&bytes) {
            return Ok(false);
        }
        let text = String::from_utf8_lossy(&bytes);
        crate::fsutil::write_atomic(path, self.redact(&text).as_bytes()).map_err(|e| std::io::Error::other(e.message))?;
        Ok(true)
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Mask `sk-ant-<letters, digits, - and _>` (API keys, OAuth and setup tokens).
fn mask_key_shapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("sk-ant-") {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).unwrap_or(tail.len());
        out.push_str(MASK);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_registered_secrets_and_key_shapes() {
        let r = Redactor::default();
        r.register("tok-very-secret-123");
        assert_eq!(r.redact("Bearer tok-very-secret-123 failed"), "Bearer [redacted] failed");
        assert_eq!(r.redact("key sk-ant-api03-AbC_d-9 end"), "key [redacted] end");
        assert!(r.finds_in(b"x tok-very-secret-123 y"));
        assert!(!r.finds_in(b"nothing here"));
    }
}
