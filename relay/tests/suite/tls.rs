//! HTTPS: the console, `/stream` and `/socket` over TLS with a certificate
//! made here (a CA and leaves for localhost, 127.0.0.1 and relay.test);
//! clients that do not trust it fail the handshake; a certificate renewed
//! on disk is served to new connections while open sockets carry on; plain
//! HTTP to the port is told to use https://.

use crate::support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use aep_relay::tls::TlsFiles;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use support::*;

/// A certificate authority of the test's own.
struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A leaf certificate and its key, as PEM and as the DER a client sees.
struct Leaf {
    cert_pem: String,
    key_pem: String,
    der: CertificateDer<'static>,
}

impl Authority {
    fn new(name: &str) -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        Authority { issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap() }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A leaf for the names the tests connect with, `cn` telling leaves apart.
    fn leaf(&self, cn: &str) -> Leaf {
        let names = ["localhost", "127.0.0.1", "relay.test"].map(String::from).to_vec();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Leaf { cert_pem: cert.pem(), key_pem: key.serialize_pem(), der: cert.der().clone() }
    }
}

/// The two PEM files in a directory of their own.
fn files_for(leaf: &Leaf) -> TlsFiles {
    let dir = std::env::temp_dir().join(format!("aep-relay-tls-{}", fresh_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = TlsFiles { cert: dir.join("cert.pem"), key: dir.join("key.pem") };
    install(&files, leaf);
    files
}

/// Puts `leaf` in place as a renewal tool does: key and chain written
/// aside, then renamed over the old ones.
fn install(files: &TlsFiles, leaf: &Leaf) {
    replace(&files.key, &leaf.key_pem);
    replace(&files.cert, &leaf.cert_pem);
}

fn replace(path: &PathBuf, text: &str) {
    let aside = path.with_extension("new");
    std::fs::write(&aside, text).unwrap();
    std::fs::rename(&aside, path).unwrap();
}

/// A relay serving HTTPS with `leaf`, its HTTP client trusting `ca`.
async fn tls_relay(ca: &Authority, leaf: &Leaf, tweak: impl FnOnce(&mut aep_relay::Config)) -> (TestRelay, TlsFiles) {
    let files = files_for(leaf);
    let tls = files.clone();
    let mut t = TestRelay::start_with(Posture::Token, |c| {
        c.tls = Some(tls);
        c.allowed_hosts = vec!["relay.test".into()];
        tweak(c);
    })
    .await;
    t.http = https_client(Some(ca), t.relay.local_addr());
    (t, files)
}

/// An HTTPS client trusting `ca` only (nothing at all when `None`), with
/// relay.test resolving to the relay.
fn https_client(ca: Option<&Authority>, addr: SocketAddr) -> reqwest::Client {
    let mut builder = reqwest::Client::builder().no_proxy().tls_built_in_root_certs(false).resolve("relay.test", addr);
    if let Some(ca) = ca {
        builder = builder.add_root_certificate(reqwest::Certificate::from_pem(ca.pem().as_bytes()).unwrap());
    }
    builder.build().unwrap()
}

/// A TLS connection to the relay as `name`, trusting `ca` only.
async fn connect(ca: &Authority, addr: SocketAddr, name: &str) -> std::io::Result<TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.issuer.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await?;
    TlsConnector::from(Arc::new(config)).connect(ServerName::try_from(name.to_owned()).unwrap(), tcp).await
}

/// The leaf certificate a new connection is given.
async fn served_leaf(ca: &Authority, addr: SocketAddr) -> CertificateDer<'static> {
    let tls = connect(ca, addr, "localhost").await.unwrap();
    tls.get_ref().1.peer_certificates().unwrap()[0].clone().into_owned()
}

/// A consumer WebSocket over TLS (`wss://`), subscribed to `session`.
async fn secure_consumer(ca: &Authority, addr: SocketAddr, session: &str) -> Ws {
    let tls = connect(ca, addr, "localhost").await.unwrap();
    let url = format!("wss://localhost:{}/socket?access_token={TOKEN}", addr.port());
    let (ws, response) = tokio_tungstenite::client_async(url, tls).await.unwrap();
    assert_eq!(response.headers()["strict-transport-security"], "max-age=31536000");
    let mut ws = Ws::secure(ws);
    ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": "consumer",
        "identity": {"agent": AGENT, "instance": "tls"}, "capabilities": {}}))
        .await;
    assert_eq!(ws.recv_json().await["type"], "hello");
    let subscribed = ws.subscribe(json!({"type": "subscribe", "id": "s", "filter": {"session": session}})).await;
    assert_eq!(subscribed["type"], "subscribed", "{subscribed}");
    ws
}

/// Waits for `check` to hold, looking every 100 ms for up to `within`.
async fn eventually<F: std::future::Future<Output = bool>>(within: Duration, mut check: impl FnMut() -> F) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn console_stream_and_socket_are_served_over_tls() {
    let ca = Authority::new("AEP test CA");
    let console = std::env::temp_dir().join(format!("aep-relay-tls-console-{}", fresh_id()));
    std::fs::create_dir_all(&console).unwrap();
    std::fs::write(console.join("index.html"), "the console").unwrap();
    let dir = console.clone();
    let (t, _files) = tls_relay(&ca, &ca.leaf("relay"), |c| c.static_dir = Some(dir)).await;
    let addr = t.relay.local_addr();
    assert_eq!(t.relay.base_url(), format!("https://{addr}"));

    // The console page, by each name the certificate holds.
    for base in [format!("https://relay.test:{}", addr.port()), format!("https://localhost:{}", addr.port()), t.url("")]
    {
        let page = t.http.get(format!("{base}/")).send().await.unwrap();
        assert_eq!(page.status(), 200, "{base}");
        assert_eq!(page.headers()["strict-transport-security"], "max-age=31536000", "{base}");
        assert_eq!(page.text().await.unwrap(), "the console", "{base}");
    }
    let s = session_name("tls");
    let mut ws = secure_consumer(&ca, addr, &s).await;
    let mut sse = t.sse("").await;

    let posted = event("session.started", &s, 0, 0);
    let response = t.post_events(std::slice::from_ref(&posted)).await;
    assert!(response.status().is_success(), "{}", response.status());
    assert_eq!(response.headers()["strict-transport-security"], "max-age=31536000");
    assert_eq!(ws.recv_text(PROMPT).await.unwrap(), posted.raw(), "over wss://");
    assert_eq!(sse.next_data(PROMPT).await.unwrap().data[0], posted.raw(), "over https:// SSE");
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_certificate_fails_the_handshake() {
    let ca = Authority::new("AEP test CA");
    let (t, _files) = tls_relay(&ca, &ca.leaf("relay"), |_| {}).await;
    let addr = t.relay.local_addr();

    let stranger = Authority::new("Someone else's CA");
    let refused = connect(&stranger, addr, "localhost").await.unwrap_err();
    assert!(refused.to_string().contains("UnknownIssuer"), "{refused}");
    let no_roots = https_client(None, addr).get(t.url("/healthz")).send().await.unwrap_err();
    assert!(no_roots.is_connect(), "{no_roots:?}");
    // A name the certificate does not hold.
    let wrong_name = connect(&ca, addr, "elsewhere.test").await.unwrap_err();
    assert!(wrong_name.to_string().contains("not valid for name"), "{wrong_name}");
    // The trusting client still gets through.
    assert_eq!(t.get("/healthz").send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_renewed_certificate_reaches_new_connections_while_open_sockets_stay() {
    let ca = Authority::new("AEP test CA");
    let (first, renewed) = (ca.leaf("relay first"), ca.leaf("relay renewed"));
    let (t, files) = tls_relay(&ca, &first, |_| {}).await;
    let addr = t.relay.local_addr();
    assert!(served_leaf(&ca, addr).await == first.der);
    let s = session_name("renew");
    let mut ws = secure_consumer(&ca, addr, &s).await;

    install(&files, &renewed);
    assert!(
        eventually(Duration::from_secs(5), || async { served_leaf(&ca, addr).await == renewed.der }).await,
        "the renewed certificate is served within seconds"
    );
    let after = event("session.started", &s, 0, 0);
    t.post_events(std::slice::from_ref(&after)).await;
    assert_eq!(ws.recv_text(PROMPT).await.unwrap(), after.raw(), "the socket opened before the swap carries on");
}

#[tokio::test]
async fn a_bad_new_pair_is_refused_and_the_old_one_kept() {
    let ca = Authority::new("AEP test CA");
    let (good, other) = (ca.leaf("relay good"), ca.leaf("relay other"));
    let (t, files) = tls_relay(&ca, &good, |_| {}).await;
    let addr = t.relay.local_addr();

    // Not PEM at all; then a certificate with somebody else's key.
    replace(&files.cert, "not a certificate");
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert!(served_leaf(&ca, addr).await == good.der, "an unreadable certificate is not taken");
    replace(&files.cert, &other.cert_pem);
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert!(served_leaf(&ca, addr).await == good.der, "a certificate without its key is not taken");
    // Its key arriving completes the pair.
    replace(&files.key, &other.key_pem);
    assert!(eventually(Duration::from_secs(5), || async { served_leaf(&ca, addr).await == other.der }).await);
    assert_eq!(t.get("/healthz").send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn plain_http_to_the_tls_port_is_told_to_use_https() {
    let ca = Authority::new("AEP test CA");
    let (t, _files) = tls_relay(&ca, &ca.leaf("relay"), |_| {}).await;
    let addr = t.relay.local_addr();

    let plain = reqwest::Client::builder().no_proxy().resolve("relay.test", addr).build().unwrap();
    let refused = plain.get(format!("http://relay.test:{}/", addr.port())).send().await.unwrap();
    assert_eq!(refused.status(), 400);
    assert_eq!(
        refused.text().await.unwrap(),
        format!("this relay speaks HTTPS: use https://relay.test:{}/\n", addr.port())
    );
    // A raw request without a Host: the socket's own address, and closed.
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /events HTTP/1.0\r\n\r\n").await.unwrap();
    let mut said = String::new();
    tokio::time::timeout(PROMPT, tcp.read_to_string(&mut said)).await.expect("closed after the answer").unwrap();
    assert!(said.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{said}");
    assert!(said.ends_with(&format!("this relay speaks HTTPS: use https://{addr}/\n")), "{said}");
    // HTTPS on the same port is unaffected.
    assert_eq!(t.get("/healthz").send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_handshake_that_stalls_is_closed_by_the_first_request_deadline() {
    let ca = Authority::new("AEP test CA");
    let (t, _files) = tls_relay(&ca, &ca.leaf("relay"), |c| c.first_request_timeout = Duration::from_millis(400)).await;
    let mut tcp = TcpStream::connect(t.relay.local_addr()).await.unwrap();
    // The first byte of a handshake record, and nothing more.
    tcp.write_all(&[0x16]).await.unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(3), tcp.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "a stalled handshake must not hold its slot");
}

#[test]
fn the_binary_serves_https_and_says_so() {
    let ca = Authority::new("AEP test CA");
    let files = files_for(&ca.leaf("relay"));
    let (cert, key) = (files.cert.to_str().unwrap(), files.key.to_str().unwrap());
    let relay = RelayProcess::start(&["--tls-cert", cert, "--tls-key", key, "--token", TOKEN]);
    assert!(relay.boot.contains("listening on https://127.0.0.1:"), "{}", relay.boot);
    assert!(relay.boot.contains("TLS ON: traffic encrypted"), "{}", relay.boot);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let addr: SocketAddr = relay.addr.parse().unwrap();
    let status = runtime.block_on(async {
        https_client(Some(&ca), addr).get(format!("https://{addr}/healthz")).send().await.unwrap().status()
    });
    assert_eq!(status, 200);
}

#[test]
fn the_binary_needs_both_files() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aep-relay"))
        .args(["--listen", "127.0.0.1:0", "--tls-cert", "/nonexistent/cert.pem"])
        .env_remove("AEP_TLS_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tls-key"));
}
