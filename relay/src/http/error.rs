//! Every refusal the HTTP surface answers, each with its status and JSON
//! body (`error` names it; `detail` says why in words), in one place.

use aep_engine::protocol::frame::{codes, ErrorFrame};
use aep_engine::protocol::vocabulary::ErrorCode;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::auth::Denied;
use crate::discovery::versions;
use crate::ingest::BatchError;
use crate::switchboard::Refusal;

#[derive(Debug)]
pub enum ApiError {
    /// No valid credential (401): says `Bearer` and closes the connection,
    /// which does not keep its slot.
    Unauthorized(Denied),
    /// The principal lacks the role for the request (403).
    Forbidden {
        principal: String,
        what: &'static str,
    },
    /// A host the relay does not serve, or a foreign page (403).
    ForbiddenOrigin(String),
    /// No `AEP-Version` this relay speaks (426).
    VersionUnsupported,
    /// A body that is neither JSON nor NDJSON (415).
    UnsupportedMediaType,
    /// The body is over the size limit (413).
    PayloadTooLarge {
        limit: usize,
    },
    /// One event is over the per-event limit (413).
    EventTooLarge {
        line: usize,
        limit: usize,
    },
    /// The batch has more events than the relay takes (413).
    TooManyEvents {
        limit: usize,
    },
    /// The body did not arrive in time (408); the connection closes.
    BodyTimeout {
        seconds: f32,
    },
    /// The body could not be read (400).
    UnreadableBody(String),
    /// A line that is no valid event (400).
    InvalidEvent {
        line: usize,
        detail: String,
    },
    /// The switchboard refused the batch: another principal's events (403) or a
    /// conflict with what it holds (409).
    Rejected(Refusal),
    /// The durable history could not be written (503).
    Unsaved,
    /// A stream subscription that cannot be served (400).
    BadSubscription(ErrorFrame),
    /// Only `GET` and `HEAD` reach the console's files (405).
    MethodNotAllowed,
    NotFound,
    /// An audit query that cannot be answered as asked (400).
    BadQuery(String),
    /// The relay keeps no audit trail: it has no `--data-dir` (404).
    NoAudit,
    /// The audit trail could not be read (503).
    AuditUnreadable(String),
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden { .. } | ApiError::ForbiddenOrigin(_) => StatusCode::FORBIDDEN,
            ApiError::VersionUnsupported => StatusCode::UPGRADE_REQUIRED,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::PayloadTooLarge { .. } | ApiError::EventTooLarge { .. } | ApiError::TooManyEvents { .. } => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ApiError::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            ApiError::UnreadableBody(_) | ApiError::InvalidEvent { .. } | ApiError::BadSubscription(_) => {
                StatusCode::BAD_REQUEST
            }
            ApiError::Rejected(r) if r.code == ErrorCode::Unauthorized => StatusCode::FORBIDDEN,
            ApiError::Rejected(_) => StatusCode::CONFLICT,
            ApiError::Unsaved => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::NotFound | ApiError::NoAudit => StatusCode::NOT_FOUND,
            ApiError::BadQuery(_) => StatusCode::BAD_REQUEST,
            ApiError::AuditUnreadable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn body(&self) -> Value {
        match self {
            ApiError::Unauthorized(denied) => {
                let detail = match denied {
                    Denied::Missing => "this relay requires a bearer token (Authorization: Bearer, or ?access_token=)",
                    Denied::Wrong => "the bearer token is not valid for this relay",
                };
                json!({ "error": codes::UNAUTHORIZED, "detail": detail })
            }
            ApiError::Forbidden { principal, what } => {
                json!({ "error": codes::UNAUTHORIZED, "detail": format!("`{principal}` may not {what}") })
            }
            ApiError::ForbiddenOrigin(detail) => json!({ "error": codes::FORBIDDEN_ORIGIN, "detail": detail }),
            ApiError::VersionUnsupported => {
                json!({ "error": codes::VERSION_UNSUPPORTED, "versions": versions(), "detail": "send `AEP-Version: 0.1`" })
            }
            ApiError::UnsupportedMediaType => json!({
                "error": codes::UNSUPPORTED_MEDIA_TYPE, "accepted": ["application/json", "application/x-ndjson"],
            }),
            ApiError::PayloadTooLarge { limit } => {
                json!({ "error": codes::PAYLOAD_TOO_LARGE, "limit": limit, "detail": "nothing was ingested" })
            }
            ApiError::EventTooLarge { line, limit } => json!({
                "error": codes::EVENT_TOO_LARGE,
                "line": line,
                "limit": limit,
                "detail": "an event is larger than this relay takes (max-event); nothing was ingested",
            }),
            ApiError::TooManyEvents { limit } => {
                json!({ "error": codes::TOO_MANY_EVENTS, "limit": limit, "detail": "split the batch; nothing was ingested" })
            }
            ApiError::BodyTimeout { seconds } => json!({
                "error": codes::REQUEST_TIMEOUT,
                "detail": format!("the body did not arrive within {seconds} s; nothing was ingested"),
            }),
            ApiError::UnreadableBody(detail) => json!({ "error": codes::UNREADABLE_BODY, "detail": detail }),
            ApiError::InvalidEvent { line, detail } => {
                json!({ "error": codes::INVALID_EVENT, "line": line, "detail": detail })
            }
            ApiError::Rejected(r) => json!({
                "error": r.code, "line": r.index, "id": r.id, "detail": format!("{}; nothing was ingested", r.detail),
            }),
            ApiError::Unsaved => json!({
                "error": codes::UNSAVED,
                "detail": "the relay could not write its durable history; the events would not survive a restart",
            }),
            ApiError::BadSubscription(refusal) => json!({ "error": refusal.code, "detail": refusal.detail }),
            ApiError::MethodNotAllowed => json!({ "error": codes::METHOD_NOT_ALLOWED }),
            ApiError::NotFound => json!({ "error": codes::NOT_FOUND }),
            ApiError::BadQuery(detail) => json!({ "error": "invalid-query", "detail": detail }),
            ApiError::NoAudit => json!({
                "error": "no-audit",
                "detail": "this relay keeps no audit trail: start it with --data-dir (and --audit-retention)",
            }),
            ApiError::AuditUnreadable(detail) => json!({ "error": "audit-unreadable", "detail": detail }),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = json_response(self.status(), self.body());
        let closes = matches!(self, ApiError::Unauthorized(_) | ApiError::BodyTimeout { .. });
        let h = response.headers_mut();
        if let ApiError::Unauthorized(_) = self {
            h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if closes {
            h.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// A JSON response.
pub fn json_response(status: StatusCode, body: Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

impl From<BatchError> for ApiError {
    fn from(error: BatchError) -> ApiError {
        match error {
            BatchError::TooLarge { line, limit } => ApiError::EventTooLarge { line, limit },
            BatchError::TooManyEvents { limit } => ApiError::TooManyEvents { limit },
            BatchError::Invalid { line, detail } => ApiError::InvalidEvent { line, detail },
            BatchError::CommandOverHttp { line, id } => ApiError::InvalidEvent {
                line,
                detail: format!("`{id}` is a command; commands travel only on the WebSocket binding (/socket)"),
            },
        }
    }
}
