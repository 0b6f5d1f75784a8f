//! `/events`: the discovery document (GET) and ingest (POST, AEP-0003 §3.2).
//!
//! Ingest checks, in order: credentials (401), the `AEP-Version` header
//! (426 with `versions`; a missing header is an unsupported version too),
//! the content type (415), the size (413), every line (400, or 413 for too
//! many events), and only then admits the whole batch (202).

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::json;

use super::{json_response, ApiError, Caller};
use crate::discovery::versions;
use crate::ingest::{parse_body, BatchLimits, BodyKind};
use crate::state::AppState;
use crate::switchboard::Origin;

/// The request header naming the protocol version.
pub const VERSION_HEADER: &str = "aep-version";

pub async fn discovery(State(app): State<AppState>, _caller: Caller) -> Response {
    json_response(StatusCode::OK, (*app.discovery).clone())
}

pub async fn ingest(
    State(app): State<AppState>,
    Caller(access): Caller,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if !speaks_our_version(&headers) {
        return Err(ApiError::VersionUnsupported);
    }
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let kind = BodyKind::from_content_type(content_type).ok_or(ApiError::UnsupportedMediaType)?;
    let limit = app.config.max_body;
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(ApiError::PayloadTooLarge { limit });
    }
    let collected = tokio::time::timeout(app.config.body_timeout, Limited::new(body, limit).collect())
        .await
        .map_err(|_| ApiError::BodyTimeout { seconds: app.config.body_timeout.as_secs_f32() })?;
    let bytes = match collected {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => return Err(ApiError::PayloadTooLarge { limit }),
        Err(e) => return Err(ApiError::UnreadableBody(e.to_string())),
    };
    let limits = BatchLimits { max_events: app.config.max_batch, max_event_bytes: app.config.event_limit() };
    let events = parse_body(kind, &bytes, limits)?;
    let report = app.switchboard.ingest(Origin::Http, access.principal(), events).map_err(ApiError::Rejected)?.await;
    if report.unsaved {
        return Err(ApiError::Unsaved);
    }
    Ok(json_response(
        StatusCode::ACCEPTED,
        json!({ "accepted": report.accepted, "stored": report.stored, "duplicates": report.duplicates }),
    ))
}

fn speaks_our_version(headers: &HeaderMap) -> bool {
    headers
        .get_all(VERSION_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| versions().iter().any(|ours| ours == v.trim()))
}
