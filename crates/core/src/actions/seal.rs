//! Sealing a secret for GitHub: libsodium's sealed box (`crypto_box_seal`) with the repository's
//! public key, base64 both ways — what `gh secret set` does. Only the repository can open it.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// `value` sealed with `key` (the repository's public key, base64), as base64.
pub fn seal(key: &str, value: &str) -> Result<String, String> {
    let bytes = STANDARD.decode(key.trim()).map_err(|e| format!("the repository's public key is not base64: {e}"))?;
    let key: [u8; 32] = bytes.try_into().map_err(|_| "the repository's public key is not 32 bytes long".to_string())?;
    let key = crypto_box::PublicKey::from(key);
    let sealed = key.seal(&mut crypto_box::aead::OsRng, value.as_bytes()).map_err(|e| format!("sealing the secret failed: {e}"))?;
    Ok(STANDARD.encode(sealed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_repositorys_key_opens_what_is_sealed() {
        let secret = crypto_box::SecretKey::generate(&mut crypto_box::aead::OsRng);
        let public = STANDARD.encode(secret.public_key().as_bytes());
        let sealed = seal(&public, "sk-ant-oat01-secret").unwrap();
        assert!(!sealed.contains("sk-ant"));
        let opened = secret.unseal(&STANDARD.decode(&sealed).unwrap()).unwrap();
        assert_eq!(opened, b"sk-ant-oat01-secret");
        let other = crypto_box::SecretKey::generate(&mut crypto_box::aead::OsRng);
        assert!(other.unseal(&STANDARD.decode(&sealed).unwrap()).is_err());
        assert!(seal("not base64!", "x").unwrap_err().contains("not base64"));
    }
}
