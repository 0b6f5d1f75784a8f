//! `GET /healthz`: liveness for supervisors that carry no token. Counts
//! are topology information, so they are added only for requests that
//! pass the same credential check as everything else.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use serde_json::json;

use super::{json_response, ApiError, Caller};
use crate::push::Push;
use crate::state::AppState;

pub async fn health(
    State(app): State<AppState>,
    push: Option<Extension<Arc<Push>>>,
    caller: Result<Caller, ApiError>,
) -> Response {
    if caller.is_err() {
        return json_response(StatusCode::OK, json!({ "ok": true }));
    }
    let stats = app.switchboard.stats();
    let mut body = json!({
        "ok": true,
        "sessions": stats.sessions,
        "buffered_events": stats.buffered_events,
        "buffered_bytes": stats.buffered_bytes,
        "subscribers": stats.subscriptions,
        "connections": stats.sockets + stats.streams,
        "claims": stats.claims,
        "uptime_s": app.started.elapsed().as_secs(),
        "counters": stats.counters,
    });
    if let Some(Extension(push)) = push {
        body["push"] = push.counters.snapshot();
    }
    json_response(StatusCode::OK, body)
}
