//! Keeping secrets out of everything Nightshift writes or shows: logs it writes, reports, run
//! rows, errors, `--json` output, UI payloads, tracing.
//!
//! Two nets: every token Nightshift itself handles is registered and replaced wherever it appears,
//! and anything shaped like a provider key or token is masked even if we never saw it: Anthropic
//! (`sk-ant-…`), OpenAI (`sk-…`, `sk-proj-…`, 20+ characters), Google (`AIza…`, 30+ characters).

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
        secrets.iter().any(|s| contains(bytes, s.as_bytes())) || SHAPES.iter().any(|(prefix, _)| contains(bytes, prefix.as_bytes()))
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

/// Key shapes: a prefix at a word start, then at least this many key characters.
const SHAPES: &[(&str, usize)] = &[("sk-ant-", 1), ("sk-", 20), ("AIza", 30)];

fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Mask every key-shaped string (API keys, OAuth and setup tokens).
fn mask_key_shapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    'scan: while i < text.len() {
        let rest = &text[i..];
        let at_word_start = text[..i].chars().next_back().is_none_or(|c| !key_char(c));
        if at_word_start {
            for (prefix, min) in SHAPES {
                if let Some(body) = rest.strip_prefix(prefix) {
                    let len = body.find(|c: char| !key_char(c)).unwrap_or(body.len());
                    if len >= *min {
                        out.push_str(MASK);
                        i += prefix.len() + len;
                        continue 'scan;
                    }
                }
            }
        }
        let c = rest.chars().next().expect("not at the end");
        out.push(c);
        i += c.len_utf8();
    }
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
        assert_eq!(r.redact("OPENAI_API_KEY=sk-proj-AbCdEf0123456789_xyzXYZ ok"), "OPENAI_API_KEY=[redacted] ok");
        assert_eq!(r.redact("key=AIzaSyA-1234567890abcdefghijklmnopqrstu!"), "key=[redacted]!");
        // Not keys: too short, or inside a word.
        assert_eq!(r.redact("task-list and sk-short and AIzaShort"), "task-list and sk-short and AIzaShort");
        assert_eq!(r.redact("disk-0123456789abcdefghijkl"), "disk-0123456789abcdefghijkl");
        assert!(r.finds_in(b"x AIzaSyA y"));
    }
}
