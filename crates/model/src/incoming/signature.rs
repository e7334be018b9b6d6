//! Who sent a delivery: GitHub signs the raw body with the webhook's secret
//! (`X-Hub-Signature-256: sha256=<hex HMAC-SHA256>`), Linear the same without the prefix
//! (`Linear-Signature: <hex>`) and puts the time it sent it in the body (`webhookTimestamp`, ms).
//! Checked over the raw bytes, compared in constant time; a delivery that fails is refused and
//! fires nothing.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How far Linear's `webhookTimestamp` may be from now: a replayed old delivery is refused.
pub const LINEAR_MAX_SKEW_MS: i64 = 60_000;

/// Why a delivery is not believed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Refused {
    /// No signature header.
    Missing,
    /// A signature that is not the body's under the secret.
    Wrong,
    /// Linear's `webhookTimestamp` missing or more than a minute off.
    Stale,
}

impl Refused {
    pub fn words(&self) -> &'static str {
        match self {
            Refused::Missing => "no signature",
            Refused::Wrong => "a signature that does not match the body under the secret",
            Refused::Stale => "a webhookTimestamp more than a minute from now (a replay, or a clock far off)",
        }
    }
}

/// Whether `header` (`X-Hub-Signature-256`) signs `body` under `secret`.
pub fn github(secret: &str, header: Option<&str>, body: &[u8]) -> Result<(), Refused> {
    let hex = header.ok_or(Refused::Missing)?.trim().strip_prefix("sha256=").ok_or(Refused::Wrong)?;
    verify(secret, hex, body)
}

/// Whether `header` (`Linear-Signature`) signs `body` under `secret`, sent within a minute of
/// `now_ms` (its `webhookTimestamp`).
pub fn linear(secret: &str, header: Option<&str>, body: &[u8], now_ms: i64) -> Result<(), Refused> {
    verify(secret, header.ok_or(Refused::Missing)?.trim(), body)?;
    let sent = serde_json::from_slice::<serde_json::Value>(body).ok().and_then(|v| v["webhookTimestamp"].as_i64()).ok_or(Refused::Stale)?;
    if (now_ms - sent).abs() > LINEAR_MAX_SKEW_MS {
        return Err(Refused::Stale);
    }
    Ok(())
}

fn verify(secret: &str, hex: &str, body: &[u8]) -> Result<(), Refused> {
    let given = decode_hex(hex).ok_or(Refused::Wrong)?;
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(body);
    // `verify_slice` compares in constant time.
    mac.verify_slice(&given).map_err(|_| Refused::Wrong)
}

/// The hex HMAC-SHA256 of `body` under `secret`: what a sender puts in its header (tests, and
/// the documentation's example).
pub fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(body);
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_signatures_are_checked_over_the_raw_body() {
        // GitHub's documented example: secret "It's a Secret to Everybody", payload "Hello, World!".
        let sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(github("It's a Secret to Everybody", Some(sig), b"Hello, World!"), Ok(()));
        assert_eq!(github("It's a Secret to Everybody", Some(sig), b"Hello, World?"), Err(Refused::Wrong));
        assert_eq!(github("another secret", Some(sig), b"Hello, World!"), Err(Refused::Wrong));
        assert_eq!(github("s", None, b"{}"), Err(Refused::Missing));
        assert_eq!(github("s", Some("757107ea0eb2"), b"{}"), Err(Refused::Wrong), "without the sha256= prefix");
        assert_eq!(github("s", Some("sha256=zz"), b"{}"), Err(Refused::Wrong));
        assert_eq!(format!("sha256={}", sign("It's a Secret to Everybody", b"Hello, World!")), sig);
    }

    #[test]
    fn linear_signatures_and_their_minute() {
        let now = 1_796_378_400_000i64;
        let body = format!("{{\"type\":\"Issue\",\"webhookTimestamp\":{}}}", now - 30_000);
        let sig = sign("lin_wh_secret", body.as_bytes());
        assert_eq!(linear("lin_wh_secret", Some(&sig), body.as_bytes(), now), Ok(()));
        assert_eq!(linear("lin_wh_secret", Some(&sig), body.as_bytes(), now + 61_000), Err(Refused::Stale));
        assert_eq!(linear("other", Some(&sig), body.as_bytes(), now), Err(Refused::Wrong));
        assert_eq!(linear("lin_wh_secret", None, body.as_bytes(), now), Err(Refused::Missing));
        let undated = b"{\"type\":\"Issue\"}";
        assert_eq!(linear("k", Some(&sign("k", undated)), undated, now), Err(Refused::Stale));
    }
}
