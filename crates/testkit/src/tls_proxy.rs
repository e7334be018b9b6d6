//! A real TLS proxy in front of a loopback server — nginx, as a user puts in front of an
//! always-on box's `nightshiftctl serve` — with certificates made by the real `openssl`: one
//! signed by itself (a box's own) or one signed by a test authority (what `SSL_CERT_FILE` can
//! make trusted).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A certificate and its key, for `localhost`.
pub struct Cert {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Cert {
    /// The certificate's SHA-256 fingerprint as OpenSSL prints it (`AB:CD:…`).
    pub fn fingerprint(&self) -> String {
        let out = Command::new("openssl").args(["x509", "-noout", "-fingerprint", "-sha256", "-in"]).arg(&self.cert).output().expect("openssl");
        String::from_utf8_lossy(&out.stdout).trim().rsplit('=').next().unwrap_or_default().to_string()
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl (install it)");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A certificate for `localhost` signed by itself, as `name.pem` / `name.key` in `dir`.
pub fn self_signed(dir: &Path, name: &str) -> Cert {
    let (cert, key) = (format!("{name}.pem"), format!("{name}.key"));
    openssl(dir, &["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "30", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost", "-keyout", &key, "-out", &cert]);
    Cert { cert: dir.join(cert), key: dir.join(key) }
}

/// A test authority (`ca.pem`) and a certificate for `localhost` it signed (`name.pem`).
pub fn authority_signed(dir: &Path, name: &str) -> (PathBuf, Cert) {
    openssl(dir, &["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "30", "-subj", "/CN=Nightshift test authority", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign", "-keyout", "ca.key", "-out", "ca.pem"]);
    let (cert, key, csr) = (format!("{name}.pem"), format!("{name}.key"), format!("{name}.csr"));
    openssl(dir, &["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost", "-keyout", &key, "-out", &csr]);
    std::fs::write(dir.join("leaf.ext"), "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n").unwrap();
    openssl(dir, &["x509", "-req", "-in", &csr, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "30", "-extfile", "leaf.ext", "-out", &cert]);
    (dir.join("ca.pem"), Cert { cert: dir.join(cert), key: dir.join(key) })
}

/// A loopback port free now.
pub fn free_port() -> u16 {
    crate::ssh::free_port()
}

/// nginx terminating TLS on a loopback port and passing everything to `upstream` (the `Host` the
/// client named included, as a proxy in front of `serve --public-url` does). Stopped on drop.
pub struct TlsProxy {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl TlsProxy {
    /// Listen on `port` (a [`free_port`]: the server behind is told its public address first).
    pub fn start(port: u16, cert: &Cert, upstream: u16) -> TlsProxy {
        let dir = tempfile::tempdir().unwrap();
        let conf = format!(
            "daemon off;\nmaster_process off;\nerror_log {dir}/error.log;\npid {dir}/nginx.pid;\nevents {{ worker_connections 64; }}\nhttp {{\n  access_log off;\n  client_body_temp_path {dir}/body;\n  proxy_temp_path {dir}/proxy;\n  fastcgi_temp_path {dir}/fastcgi;\n  uwsgi_temp_path {dir}/uwsgi;\n  scgi_temp_path {dir}/scgi;\n  server {{\n    listen 127.0.0.1:{port} ssl;\n    ssl_certificate {cert};\n    ssl_certificate_key {key};\n    location / {{\n      proxy_pass http://127.0.0.1:{upstream};\n      proxy_http_version 1.1;\n      proxy_set_header Host $http_host;\n      proxy_buffering off;\n      proxy_request_buffering off;\n      proxy_read_timeout 1h;\n    }}\n  }}\n}}\n",
            dir = dir.path().display(),
            cert = cert.cert.display(),
            key = cert.key.display(),
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let nginx = ["/usr/sbin/nginx", "nginx"].into_iter().find(|p| Path::new(p).exists()).unwrap_or("nginx");
        let child = Command::new(nginx).arg("-p").arg(dir.path()).arg("-c").arg(dir.path().join("nginx.conf")).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("nginx (install nginx-light)");
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            let log = std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default();
            assert!(start.elapsed() < Duration::from_secs(20), "nginx did not listen on {port}: {log}");
            std::thread::sleep(Duration::from_millis(20));
        }
        TlsProxy { child, port, dir }
    }

    /// What nginx logged (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
