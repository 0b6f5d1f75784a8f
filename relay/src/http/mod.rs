//! The HTTP surface: routes, the caller extractor and the error bodies.
//! Only the console's files are compressed (negotiated by
//! `Accept-Encoding`); API responses are not, and SSE is never buffered.

mod caller;
mod error;
mod events;
mod health;
pub mod origin;
mod static_files;
mod stream;
mod upgrade;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

pub use caller::Caller;
pub use error::{json_response, ApiError};

use crate::discovery::{EVENTS_PATH, HEALTH_PATH, SOCKET_PATH, STREAM_PATH, WELL_KNOWN_PATH};
use crate::scrub;
use crate::state::AppState;

pub fn router(state: AppState) -> Router {
    let console = static_files::console(&state);
    Router::new()
        .route(EVENTS_PATH, get(events::discovery).post(events::ingest))
        .route(WELL_KNOWN_PATH, get(events::discovery))
        .route(STREAM_PATH, get(stream::open))
        .route(SOCKET_PATH, get(upgrade::socket))
        .route(HEALTH_PATH, get(health::health))
        .route(crate::audit::http::AUDIT_PATH, get(crate::audit::http::query))
        .route(crate::audit::http::HEAD_PATH, get(crate::audit::http::head))
        .route(crate::audit::http::KEY_PATH, get(crate::audit::http::key))
        .merge(crate::push::http::routes())
        .merge(crate::rules::http::routes())
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
async fn same_site_only(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok());
    if let Some(host) = host {
        if !origin::host_allowed(host, app.addr, &app.config.allowed_hosts) {
            let detail = format!("this relay does not serve the host `{host}` (--allow-host adds one)");
            return ApiError::ForbiddenOrigin(detail).into_response();
        }
    }
    if let Some(value) = request.headers().get(header::ORIGIN) {
        let origin = value.to_str().unwrap_or("");
        if !origin::origin_allowed(origin, host, &app.config.allowed_origins) {
            let detail =
                format!("pages from `{origin}` may not use this relay; only its own origin (and --allow-origin) may");
            return ApiError::ForbiddenOrigin(detail).into_response();
        }
    }
    // A connection that passed the credential check keeps its slot when
    // the relay is full (see the accept loop).
    if let Some(proof) = request.extensions().get::<Arc<crate::server::Proof>>() {
        if app.access(request.headers(), request.uri().query()).is_ok() {
            proof.proven();
        }
    }
    next.run(request).await
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
