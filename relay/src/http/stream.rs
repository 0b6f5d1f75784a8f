//! `GET /stream`: the SSE binding (AEP-0003 §3.3).
//!
//! The query spells one subscription: `filter` (attr-match JSON), `capture`
//! (ceiling), `from` (positions JSON or `all`; otherwise `Last-Event-ID`),
//! and `live=0` to end after the replay. They are read by the engine's
//! `subscribe` frame decoder, so both bindings accept exactly the same
//! subscriptions. No `Accept` header is required.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use aep_engine::protocol::frame::{codes, ErrorFrame, SessionPosition, Subscribe};
use aep_engine::Capture;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Uri};
use axum::response::Response;
use futures_util::stream;
use serde_json::Value;
use tokio::time::{interval_at, Instant, Interval, MissedTickBehavior};

use super::{ApiError, Caller};
use crate::outbox::{CloseReason, Next, Outbox, Outgoing, ReplayPiece};
use crate::sse;
use crate::state::AppState;
use crate::switchboard::{ConnId, StreamRequest, Switchboard, TaskGuard};
use crate::wire::event_bytes;

/// Body chunks are cut at about this size, so a long replay streams out
/// instead of being rendered whole.
const CHUNK: usize = 64 * 1024;

pub async fn open(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Response, ApiError> {
    caller.reader("read the stream")?;
    let request = read_request(uri.query().unwrap_or(""), &headers).map_err(ApiError::BadSubscription)?;
    // Registered here, before the response is returned, so an event posted
    // right after the headers arrive is already fanned out to this stream.
    let (conn, outbox) = app.switchboard.open_stream(request).map_err(ApiError::BadSubscription)?;
    let body = SseBody {
        outbox,
        heartbeat: heartbeat(app.config.heartbeat),
        replay: None,
        replay_ceiling: None,
        ended: false,
        _registration: Registration { switchboard: app.switchboard.clone(), conn, _task: app.switchboard.task_guard() },
    };
    let mut response = Response::new(Body::from_stream(stream::unfold(body, SseBody::step)));
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// Reads the query into a subscription, or the refusal a 400 carries.
/// The members are read by the engine exactly as in a `subscribe` frame.
fn read_request(query: &str, headers: &HeaderMap) -> Result<StreamRequest, ErrorFrame> {
    let invalid = |detail: String| ErrorFrame::new(codes::INVALID_FILTER, Some(detail));
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(query).map_err(|e| invalid(format!("unreadable query: {e}")))?;
    let param = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let filter = param("filter")
        .map(|f| serde_json::from_str::<Value>(f).map_err(|e| invalid(format!("`filter` is not JSON: {e}"))))
        .transpose()?;
    let capture = param("capture").map(Value::from);
    let from = match param("from") {
        Some("all") => Some(Value::from("all")),
        Some(from) => Some(
            serde_json::from_str::<Value>(from)
                .map_err(|e| invalid(format!("`from` is neither `all` nor JSON: {e}")))?,
        ),
        None => None,
    };
    let live = !matches!(param("live"), Some("0" | "false"));
    let subscribe = Subscribe::from_members(STREAM_SUB.to_owned(), filter.as_ref(), from.as_ref(), capture.as_ref())
        .map_err(|e| e.refusal().unwrap_or_else(|| invalid(e.to_string())))?;
    // `from` takes precedence over `Last-Event-ID`.
    let last_event_id = match subscribe.from {
        Some(_) => None,
        None => last_event_id(headers).map(|(session, (epoch, seq))| SessionPosition::new(session, epoch, seq)),
    };
    Ok(StreamRequest {
        filter: subscribe.filter,
        ceiling: subscribe.capture,
        from: subscribe.from,
        last_event_id,
        live,
    })
}

/// The subscription id an SSE stream's refusals are reported under.
const STREAM_SUB: &str = "stream";

/// The header as sent: an `id:` is UTF-8, which travels as raw bytes.
fn last_event_id(headers: &HeaderMap) -> Option<(String, (u64, u64))> {
    sse::parse_last_event_id(std::str::from_utf8(headers.get("last-event-id")?.as_bytes()).ok()?)
}

fn heartbeat(period: Duration) -> Interval {
    let mut i = interval_at(Instant::now() + period, period);
    i.set_missed_tick_behavior(MissedTickBehavior::Delay);
    i
}

/// Removes the stream from the switchboard when the body is dropped (the client
/// went away, or the stream ended).
struct Registration {
    switchboard: Arc<Switchboard>,
    conn: Option<ConnId>,
    _task: TaskGuard,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(conn) = self.conn {
            self.switchboard.detach(conn);
        }
    }
}

struct SseBody {
    outbox: Arc<Outbox>,
    heartbeat: Interval,
    replay: Option<Box<dyn Iterator<Item = ReplayPiece> + Send>>,
    replay_ceiling: Option<Capture>,
    ended: bool,
    _registration: Registration,
}

impl SseBody {
    /// Produces the next body chunk: replay pieces, queued events (as many
    /// as are ready, up to [`CHUNK`]), a heartbeat, or the end.
    async fn step(mut self) -> Option<(Result<Bytes, Infallible>, SseBody)> {
        let mut out = String::new();
        while !self.ended && out.len() < CHUNK {
            if let Some(pieces) = self.replay.as_mut() {
                match pieces.next() {
                    Some(ReplayPiece::Exhausted { session, earliest }) => {
                        sse::push_exhausted(&mut out, &session, earliest)
                    }
                    Some(ReplayPiece::Event(e)) => {
                        if let Some(bytes) = event_bytes(&e, self.replay_ceiling) {
                            sse::push_event(&mut out, &e, &bytes);
                        }
                    }
                    None => self.replay = None,
                }
                continue;
            }
            let next = if out.is_empty() {
                tokio::select! {
                    next = self.outbox.next() => next,
                    _ = self.heartbeat.tick() => {
                        out.push_str(sse::PING);
                        break;
                    }
                }
            } else {
                match self.outbox.try_next() {
                    Some(next) => next,
                    None => break,
                }
            };
            match next {
                Next::Send(Outgoing::Live(d)) => {
                    if let Some(bytes) = event_bytes(&d.event, d.ceiling) {
                        sse::push_event(&mut out, &d.event, &bytes);
                    }
                }
                Next::Send(Outgoing::Replay(batch)) => {
                    self.replay_ceiling = batch.ceiling;
                    self.replay = Some((*batch).into_pieces());
                }
                // Frames and routed commands exist only on the socket binding.
                Next::Send(Outgoing::Frame(_) | Outgoing::Verbatim(_)) => {}
                Next::Close(reason) => {
                    out.push_str(match reason {
                        CloseReason::Shutdown => sse::SHUTTING_DOWN,
                        CloseReason::Overflow => sse::TOO_SLOW,
                        CloseReason::Finished
                        | CloseReason::IdleTimeout
                        | CloseReason::PeerGone
                        | CloseReason::Revoked
                        | CloseReason::TooBig { .. } => "",
                    });
                    self.ended = true;
                }
            }
        }
        if out.is_empty() {
            return None;
        }
        Some((Ok(Bytes::from(out)), self))
    }
}
