//! `/events`: the discovery document (GET) and ingest (POST, AEP-0003 §3.2).
//!
//! Ingest checks, in order: credentials (401), the `AEP-Version` header
//! (426 with `versions`; a missing header is an unsupported version too),
//! the content type (415), the size (413), every line (400, or 413 for too
//! many events), and only then admits the whole batch (202).

use aep_client::protocol::frame::codes;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::json;

use super::{json_response, AppState};
use crate::discovery::versions;
use crate::hub::Origin;
use crate::ingest::{parse_body, BatchError, BatchLimits, BodyKind};

/// The request header naming the protocol version.
pub const VERSION_HEADER: &str = "aep-version";

pub async fn discovery(State(app): State<AppState>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(refused) = app.authorize(&headers, &uri) {
        return refused.into_response();
    }
    json_response(StatusCode::OK, (*app.discovery).clone())
}

pub async fn ingest(State(app): State<AppState>, headers: HeaderMap, uri: Uri, body: Body) -> Response {
    let access = match app.authorize(&headers, &uri) {
        Ok(access) => access,
        Err(refused) => return refused.into_response(),
    };
    if !speaks_our_version(&headers) {
        return json_response(
            StatusCode::UPGRADE_REQUIRED,
            json!({ "error": codes::VERSION_UNSUPPORTED, "versions": versions(), "detail": "send `AEP-Version: 0.1`" }),
        );
    }
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let Some(kind) = BodyKind::from_content_type(content_type) else {
        return json_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            json!({ "error": "unsupported-media-type", "accepted": ["application/json", "application/x-ndjson"] }),
        );
    };
    let limit = app.config.max_body;
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return too_large(limit);
    }
    let collected = tokio::time::timeout(app.config.body_timeout, Limited::new(body, limit).collect()).await;
    let Ok(collected) = collected else {
        let mut response = json_response(
            StatusCode::REQUEST_TIMEOUT,
            json!({
                "error": "request-timeout",
                "detail": format!("the body did not arrive within {} s; nothing was ingested", app.config.body_timeout.as_secs_f32()),
            }),
        );
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    };
    let bytes = match collected {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => return too_large(limit),
        Err(e) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                json!({ "error": "unreadable-body", "detail": e.to_string() }),
            )
        }
    };
    let limits = BatchLimits { max_events: app.config.max_batch, max_event_bytes: app.config.event_limit() };
    let events = match parse_body(kind, &bytes, limits) {
        Ok(events) => events,
        Err(BatchError::TooLarge { line, limit }) => {
            return json_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({
                    "error": "event-too-large",
                    "line": line,
                    "limit": limit,
                    "detail": "an event is larger than this relay takes (max-event); nothing was ingested",
                }),
            )
        }
        Err(BatchError::TooManyEvents { limit }) => {
            return json_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({ "error": "too-many-events", "limit": limit, "detail": "split the batch; nothing was ingested" }),
            )
        }
        Err(BatchError::Invalid { line, detail }) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                json!({ "error": codes::INVALID_EVENT, "line": line, "detail": detail }),
            )
        }
        Err(BatchError::CommandOverHttp { line, id }) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                json!({
                    "error": codes::INVALID_EVENT,
                    "line": line,
                    "detail": format!("`{id}` is a command; commands travel only on the WebSocket binding (/socket)"),
                }),
            )
        }
    };
    let report = match app.hub.ingest(Origin::Http, access.principal(), events) {
        Ok(receipt) => receipt.await,
        Err(refusal) => {
            let status = if refusal.code == codes::UNAUTHORIZED { StatusCode::FORBIDDEN } else { StatusCode::CONFLICT };
            return json_response(
                status,
                json!({ "error": refusal.code, "line": refusal.index, "id": refusal.id, "detail": format!("{}; nothing was ingested", refusal.detail) }),
            );
        }
    };
    if report.unsaved {
        return json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({ "error": "unsaved", "detail": "the relay could not write its durable history; the events would not survive a restart" }),
        );
    }
    json_response(
        StatusCode::ACCEPTED,
        json!({ "accepted": report.accepted, "stored": report.stored, "duplicates": report.duplicates }),
    )
}

fn speaks_our_version(headers: &HeaderMap) -> bool {
    headers
        .get_all(VERSION_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| versions().iter().any(|ours| ours == v.trim()))
}

fn too_large(limit: usize) -> Response {
    json_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        json!({ "error": "payload-too-large", "limit": limit, "detail": "nothing was ingested" }),
    )
}
