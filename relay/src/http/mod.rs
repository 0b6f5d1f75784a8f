//! The HTTP surface: routes, shared request state, and the few response
//! helpers every handler uses. Only the console's files are compressed
//! (negotiated by `Accept-Encoding`); API responses are not, and SSE is
//! never buffered.

mod events;
mod health;
pub mod origin;
mod static_files;
mod stream;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use aep_client::protocol::frame::codes;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use crate::auth::{self, Access, Denied, Keyring};
use crate::config::Config;
use crate::discovery::{self, EVENTS_PATH, HEALTH_PATH, SOCKET_PATH, STREAM_PATH, WELL_KNOWN_PATH};
use crate::hub::Hub;
use crate::scrub;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub hub: Arc<Hub>,
    pub config: Arc<Config>,
    pub addr: SocketAddr,
    pub discovery: Arc<Value>,
    pub started: Instant,
    /// The accepted credentials; `None`: none configured (everyone is
    /// anonymous and no command is routed).
    pub keyring: Option<Arc<Keyring>>,
}

impl AppState {
    pub fn new(hub: Arc<Hub>, config: Arc<Config>, addr: SocketAddr, keyring: Option<Arc<Keyring>>) -> AppState {
        let discovery = Arc::new(discovery::document(&config));
        AppState { hub, config, addr, discovery, started: Instant::now(), keyring }
    }

    /// Checks the request's credentials; the refusal answers 401.
    pub fn authorize(&self, headers: &HeaderMap, uri: &Uri) -> Result<Access, Unauthorized> {
        auth::check(self.keyring.as_deref(), headers, uri.query()).map_err(Unauthorized)
    }
}

pub fn router(state: AppState) -> Router {
    let console = Router::new()
        .fallback(static_files::serve)
        .layer(tower_http::compression::CompressionLayer::new())
        .with_state(state.clone());
    Router::new()
        .route(EVENTS_PATH, get(events::discovery).post(events::ingest))
        .route(WELL_KNOWN_PATH, get(events::discovery))
        .route(STREAM_PATH, get(stream::open))
        .route(SOCKET_PATH, get(crate::socket::upgrade))
        .route(HEALTH_PATH, get(health::health))
        .fallback_service(console)
        .layer(middleware::from_fn_with_state(state.clone(), same_site_only))
        .layer(middleware::from_fn(log_request))
        .with_state(state)
}

/// No web page but the relay's own reaches it, in every posture: a request
/// naming a host the relay does not serve (DNS rebinding) or carrying a
/// foreign `Origin` (a page elsewhere, the WebSocket constructor included)
/// is refused before anything else. Programs that send no `Origin` (every
/// non-browser client) are unaffected.
async fn same_site_only(axum::extract::State(app): axum::extract::State<AppState>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok());
    if let Some(host) = host {
        if !origin::host_allowed(host, app.addr, &app.config.allowed_hosts) {
            return refused_site(format!("this relay does not serve the host `{host}` (--allow-host adds one)"));
        }
    }
    if let Some(value) = request.headers().get(header::ORIGIN) {
        let origin = value.to_str().unwrap_or("");
        if !origin::origin_allowed(origin, host, &app.config.allowed_origins) {
            return refused_site(format!(
                "pages from `{origin}` may not use this relay; only its own origin (and --allow-origin) may"
            ));
        }
    }
    // A connection that passed the credential check keeps its slot when
    // the relay is full (see the accept loop).
    if let Some(proof) = request.extensions().get::<Arc<crate::server::Proof>>() {
        if app.authorize(request.headers(), request.uri()).is_ok() {
            proof.proven();
        }
    }
    next.run(request).await
}

fn refused_site(detail: String) -> Response {
    json_response(StatusCode::FORBIDDEN, json!({ "error": "forbidden-origin", "detail": detail }))
}

/// A JSON response.
pub fn json_response(status: StatusCode, body: Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A request whose principal lacks the role for it (403).
pub fn forbidden(access: &Access, what: &str) -> Response {
    let detail = format!("`{}` may not {what}", access.principal().name);
    json_response(StatusCode::FORBIDDEN, json!({ "error": codes::UNAUTHORIZED, "detail": detail }))
}

/// A request refused for its credentials (401).
pub struct Unauthorized(Denied);

impl IntoResponse for Unauthorized {
    fn into_response(self) -> Response {
        let detail = match self.0 {
            Denied::Missing => "this relay requires a bearer token (Authorization: Bearer, or ?access_token=)",
            Denied::Wrong => "the bearer token is not valid for this relay",
        };
        let mut response =
            json_response(StatusCode::UNAUTHORIZED, json!({ "error": codes::UNAUTHORIZED, "detail": detail }));
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        // An unauthenticated connection does not keep its slot.
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }
}

/// Logs each request at debug level, by path only (see [`scrub`]).
async fn log_request(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let uri = scrub::uri_for_log(request.uri()).to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    tracing::debug!(%method, %uri, status = response.status().as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, "request");
    response
}
