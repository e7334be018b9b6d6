//! A secret of this home kept in a file of its own (0600), made once and kept across restarts:
//! `serve`'s access tokens, the key that signs approval links. 32 random bytes as hex.

use crate::error::{Error, ErrorCode};

/// The token kept in `path` from an earlier start, or a fresh one written there (also when `renew`).
pub(crate) fn kept(path: &std::path::Path, renew: bool) -> Result<String, Error> {
    if !renew {
        if let Ok(text) = std::fs::read_to_string(path) {
            let text = text.trim();
            if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Ok(text.to_string());
            }
        }
    }
    let token = new_token()?;
    write_private(path, &token)?;
    Ok(token)
}

/// Whether a secret given (a token, a signature) is the one kept, in constant time (the length
/// is not secret).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh token of 32 random bytes, hex.
fn new_token() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| Error::new(ErrorCode::Io, format!("no randomness for a secret of this home: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn write_private(path: &std::path::Path, text: &str) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(|e| Error::io("write", path, &e))?;
    f.write_all(text.as_bytes()).map_err(|e| Error::io("write", path, &e))
}

