//! A push service on loopback for the push tests and benchmark: HTTPS
//! under its own CA (the relay trusts it through `--push-ca`), recording
//! every request and answering from a script per path, and browser-like
//! subscriptions to it (a P-256 key pair and an auth secret each).

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use serde_json::{json, Value};
use web_push_native::p256;

/// One request the push service received.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    pub at: Instant,
}

/// A push service on loopback over HTTPS: records every request and
/// answers each path from its script (then 201).
/// Per endpoint path, the answers still to give: a status and an optional
/// `Retry-After` in seconds.
pub type Script = Arc<Mutex<HashMap<String, VecDeque<(u16, Option<u64>)>>>>;

pub struct PushService {
    pub addr: SocketAddr,
    pub ca_file: PathBuf,
    pub received: Arc<Mutex<Vec<Received>>>,
    pub script: Script,
}

#[derive(Clone)]
struct ServiceState {
    pub received: Arc<Mutex<Vec<Received>>>,
    pub script: Script,
}

async fn record(State(s): State<ServiceState>, uri: Uri, headers: HeaderMap, body: Bytes) -> axum::response::Response {
    let headers = headers.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())).collect();
    let path = uri.path().to_owned();
    s.received.lock().unwrap().push(Received { path: path.clone(), headers, body: body.to_vec(), at: Instant::now() });
    let next = s.script.lock().unwrap().get_mut(&path).and_then(VecDeque::pop_front);
    match next {
        Some((status, retry_after)) => {
            let mut response = StatusCode::from_u16(status).unwrap().into_response();
            if let Some(after) = retry_after {
                response.headers_mut().insert("retry-after", after.to_string().parse().unwrap());
            }
            response
        }
        None => StatusCode::CREATED.into_response(),
    }
}

impl PushService {
    pub async fn start() -> PushService {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "push test CA");
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["localhost".to_owned()]).unwrap().signed_by(&leaf_key, &ca).unwrap();
        let dir = std::env::temp_dir().join(format!("aep-push-service-{}", rand::random::<u64>()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();

        let certs = vec![leaf.der().clone()];
        let key = rustls_pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let state = ServiceState { received: Arc::default(), script: Arc::default() };
        let app = axum::Router::new().fallback(record).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        PushService { addr, ca_file, received: state.received, script: state.script }
    }

    /// The origin a VAPID `aud` must name.
    pub fn origin(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }

    /// A browser's subscription at this service.
    pub fn device(&self, name: &str) -> Device {
        let secret = p256::SecretKey::from_slice(&rand::random::<[u8; 32]>()).unwrap();
        let path = format!("/push/v2/{name}-{:016x}", rand::random::<u64>());
        Device { endpoint: format!("{}{path}", self.origin()), path, secret, auth: rand::random() }
    }

    pub fn answer(&self, device: &Device, answers: &[(u16, Option<u64>)]) {
        self.script.lock().unwrap().insert(device.path.clone(), answers.iter().copied().collect());
    }

    /// Requests received so far, from every device.
    pub fn count(&self) -> usize {
        self.received.lock().unwrap().len()
    }

    pub fn to(&self, device: &Device) -> Vec<Received> {
        self.received.lock().unwrap().iter().filter(|r| r.path == device.path).cloned().collect()
    }

    /// Waits until `device` has received `n` requests (or `within` passed).
    pub async fn wait_for(&self, device: &Device, n: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let got = self.to(device);
            if got.len() >= n || Instant::now() >= deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A browser's push subscription: its key pair and auth secret.
pub struct Device {
    pub endpoint: String,
    pub path: String,
    pub secret: p256::SecretKey,
    pub auth: [u8; 16],
}

impl Device {
    /// The public key, as `keys.p256dh` carries it.
    pub fn public_key(&self) -> String {
        let public = self.secret.public_key();
        let point = p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(&public, false);
        URL_SAFE_NO_PAD.encode(point.as_bytes())
    }

    pub fn subscription(&self) -> Value {
        json!({
            "endpoint": self.endpoint,
            "expirationTime": null,
            "keys": {"p256dh": self.public_key(), "auth": URL_SAFE_NO_PAD.encode(self.auth)},
        })
    }
}
