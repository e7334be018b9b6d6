//! TLS to an `https://` home — a proxy (nginx, Caddy…) in front of its loopback `serve`. Its
//! certificate is verified against the roots this machine trusts (the system's, as OpenSSL reads
//! them: `SSL_CERT_FILE` and `SSL_CERT_DIR` too), or, for a certificate no authority vouches for
//! (a home box's own), pinned: only the certificate whose SHA-256 was kept when the home was added
//! is accepted, and its handshake signature is still checked, so a copy of it is worth nothing.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// What a handshake saw of the server's certificate.
#[derive(Debug, Clone)]
pub struct Seen {
    /// SHA-256 of the server's own certificate (DER).
    pub digest: [u8; 32],
    /// Why this machine's roots do not vouch for it (`None`: they do).
    pub untrusted: Option<String>,
}

/// How a certificate is judged.
#[derive(Debug)]
enum Judge {
    /// By this machine's roots.
    Roots(Arc<WebPkiServerVerifier>),
    /// Only the certificate of this digest.
    Pinned([u8; 32]),
    /// Anything, to see it (`homes add`; no token is sent on such a connection).
    Look(Option<Arc<WebPkiServerVerifier>>),
}

#[derive(Debug)]
struct Verifier {
    judge: Judge,
    algorithms: WebPkiSupportedAlgorithms,
    seen: Mutex<Option<Seen>>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(&self, end_entity: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>], name: &ServerName<'_>, ocsp: &[u8], now: UnixTime) -> Result<ServerCertVerified, rustls::Error> {
        let digest: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        let by_roots = |v: &WebPkiServerVerifier| v.verify_server_cert(end_entity, intermediates, name, ocsp, now).err().map(|e| in_words(&e));
        let (untrusted, verdict) = match &self.judge {
            Judge::Roots(v) => {
                let untrusted = by_roots(v);
                let verdict = match &untrusted {
                    None => Ok(ServerCertVerified::assertion()),
                    Some(e) => Err(rustls::Error::General(e.clone())),
                };
                (untrusted, verdict)
            }
            Judge::Pinned(pin) => (None, if &digest == pin { Ok(ServerCertVerified::assertion()) } else { Err(rustls::Error::General("not the pinned certificate".into())) }),
            Judge::Look(v) => (v.as_deref().map_or(Some("this machine trusts no authority".into()), by_roots), Ok(ServerCertVerified::assertion())),
        };
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(Seen { digest, untrusted });
        verdict
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Why the roots refused a certificate, as a person says it.
fn in_words(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => "no authority this machine trusts signed it".into(),
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => "it has expired".into(),
        rustls::Error::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => "it is not valid yet".into(),
        rustls::Error::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => "it is for another name".into(),
        rustls::Error::InvalidCertificate(C::Revoked) => "it was revoked".into(),
        // A certificate made with `openssl req -x509` is its own authority, used as the server's.
        rustls::Error::InvalidCertificate(C::Other(o)) if o.to_string().contains("CaUsedAsEndEntity") => "it is signed by itself".into(),
        other => other.to_string(),
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A verifier by this machine's roots, or why there is none (no roots found).
fn roots(provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut store = rustls::RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found.errors.first().map(|e| format!(" ({e})")).unwrap_or_default();
        return Err(format!("this machine has no trusted certificate authorities{why}; install ca-certificates, or pin the home's certificate"));
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(store), Arc::clone(provider)).build().map_err(|e| e.to_string())
}

/// Open TLS to `host:port`: verified by this machine's roots, or by `pin`. The error says what a
/// person can do about it.
pub async fn connect(host: &str, port: u16, pin: Option<[u8; 32]>) -> Result<TlsStream<TcpStream>, String> {
    let provider = provider();
    let judge = match pin {
        Some(pin) => Judge::Pinned(pin),
        None => Judge::Roots(roots(&provider)?),
    };
    let (stream, seen) = handshake(host, port, judge, provider).await;
    stream.map_err(|e| match (seen, pin) {
        (Some(seen), Some(pin)) if seen.digest != pin => format!(
            "the certificate of {host} is not the one pinned when the home was added (pinned {}, shown now {}): if its server was given a new certificate, `nightshiftctl homes add NAME URL --replace` pins the new one; if not, something stands between the two machines",
            crate::settings::show_pin(&pin),
            crate::settings::show_pin(&seen.digest)
        ),
        (Some(Seen { untrusted: Some(why), digest }), None) => format!(
            "the certificate of {host} is not one this machine trusts ({why}); if it is the home's own, `nightshiftctl homes add NAME URL --replace` pins it (its SHA-256 is {})",
            crate::settings::show_pin(&digest)
        ),
        _ => e,
    })
}

/// See the certificate `host:port` shows, and whether this machine's roots vouch for it.
pub async fn look(host: &str, port: u16) -> Result<Seen, String> {
    let provider = provider();
    let judge = Judge::Look(roots(&provider).ok());
    match handshake(host, port, judge, provider).await {
        (_, Some(seen)) => Ok(seen),
        (Err(e), None) => Err(e),
        (Ok(_), None) => Err(format!("{host} showed no certificate")),
    }
}

async fn handshake(host: &str, port: u16, judge: Judge, provider: Arc<CryptoProvider>) -> (Result<TlsStream<TcpStream>, String>, Option<Seen>) {
    let verifier = Arc::new(Verifier { judge, algorithms: provider.signature_verification_algorithms, seen: Mutex::new(None) });
    let config = match rustls::ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions() {
        Ok(b) => b.dangerous().with_custom_certificate_verifier(verifier.clone()).with_no_client_auth(),
        Err(e) => return (Err(e.to_string()), None),
    };
    let name = match ServerName::try_from(host.trim_matches(['[', ']']).to_string()) {
        Ok(n) => n,
        Err(e) => return (Err(format!("\"{host}\" is not a server name ({e})")), None),
    };
    let tcp = match TcpStream::connect((host.trim_matches(['[', ']']), port)).await {
        Ok(t) => t,
        Err(e) => return (Err(format!("nothing answers on {host}:{port} ({e})")), None),
    };
    let _ = tcp.set_nodelay(true);
    let stream = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.map_err(|e| format!("TLS with {host}:{port} failed: {e}"));
    let seen = verifier.seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (stream, seen)
}
