//! HTTPS: the certificate chain and private key (PEM files) the relay
//! serves TLS with, read again whenever either file changes (certificates
//! renew: Let's Encrypt, mkcert, `tailscale cert`). New handshakes get the
//! new pair within seconds; connections already open keep theirs. A new
//! pair that cannot be used is reported and the one in service kept.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::file_watch;

/// Where the certificate chain (leaf first) and its private key are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// What HTTPS responses carry: browsers then refuse plain HTTP to this
/// host for a year (this host only: other names under it are not ours).
pub const STRICT_TRANSPORT_SECURITY: &str = "max-age=31536000";

/// The pair new handshakes are given, swapped whole on reload.
#[derive(Debug)]
struct Certificates {
    current: RwLock<Arc<CertifiedKey>>,
}

impl Certificates {
    fn serving(&self) -> Arc<CertifiedKey> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn replace(&self, pair: CertifiedKey) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(pair);
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.serving())
    }
}

/// The one provider: ring, which needs no C toolchain beyond `cc`.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads and checks the pair: the chain must hold a certificate, the key
/// file a private key, and the key must be the one the leaf names.
pub fn load(files: &TlsFiles, provider: &CryptoProvider) -> Result<CertifiedKey, String> {
    let read = |what: &str, path: &Path| std::fs::read(path).map_err(|e| format!("{what} {}: {e}", path.display()));
    let cert = &files.cert;
    let chain = CertificateDer::pem_slice_iter(&read("TLS certificate", cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("TLS certificate {}: not a PEM certificate chain: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "TLS certificate {}: no certificate in it (expected PEM `BEGIN CERTIFICATE` blocks)",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&read("TLS key", &files.key)?)
        .map_err(|e| format!("TLS key {}: no usable PEM private key: {e}", files.key.display()))?;
    CertifiedKey::from_der(chain, key, provider).map_err(|e| {
        format!("TLS certificate {} and key {} do not make a usable pair: {e}", cert.display(), files.key.display())
    })
}

/// Loads the pair (an error when it cannot be used) and starts watching
/// the files until `stop`; the acceptor always hands out the newest good
/// pair.
pub fn start(files: &TlsFiles, stop: watch::Receiver<bool>) -> Result<TlsAcceptor, String> {
    let provider = provider();
    let certificates = Arc::new(Certificates { current: RwLock::new(Arc::new(load(files, &provider)?)) });
    let mut config = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_cert_resolver(certificates.clone());
    // The relay speaks HTTP/1.1 only (its WebSocket upgrade needs it).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let files = files.clone();
    let watched = vec![files.cert.clone(), files.key.clone()];
    tokio::spawn(file_watch::on_change(watched, stop, move || match load(&files, &provider) {
        Ok(pair) => {
            certificates.replace(pair);
            tracing::info!("TLS certificate reloaded from {}", files.cert.display());
        }
        Err(e) => tracing::warn!("{e}; still serving the certificate loaded before"),
    }));
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The first byte of every TLS connection: a handshake record.
pub const HANDSHAKE_RECORD: u8 = 0x16;

/// What a plain-HTTP request to the HTTPS port is told, naming the address
/// to use instead: the `Host` it asked for when that is a plain host name
/// or address, else `fallback` (the socket's own address).
pub fn plain_http_refusal(head: &[u8], fallback: &str) -> Vec<u8> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    let _ = request.parse(head);
    let host = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .and_then(|h| std::str::from_utf8(h.value).ok())
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b)))
        .unwrap_or(fallback);
    let body = format!("this relay speaks HTTPS: use https://{host}/\n");
    format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_https_address() {
        let text = |head: &str| String::from_utf8(plain_http_refusal(head.as_bytes(), "10.1.2.3:8787")).unwrap();
        let said = text("GET / HTTP/1.1\r\nHost: relay.example:8443\r\n\r\n");
        assert!(said.starts_with("HTTP/1.1 400 "), "{said}");
        assert!(said.ends_with("\r\n\r\nthis relay speaks HTTPS: use https://relay.example:8443/\n"), "{said}");
        // No Host, or one that is not a plain name: the socket's address.
        assert!(text("GET / HTTP/1.1\r\n\r\n").contains("use https://10.1.2.3:8787/"));
        assert!(text("GET / HTTP/1.1\r\nHost: <b>x</b>\r\n\r\n").contains("use https://10.1.2.3:8787/"));
        // A head cut short still gets an answer.
        assert!(text("GET / HTTP/1.1\r\nHost: a.b:1\r\n").contains("use https://a.b:1/"));
    }
}
