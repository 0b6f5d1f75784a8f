//! What the relay does with each frame a peer sends after `hello`.
//!
//! Everything is answered in-band and nothing closes the connection: a
//! refused subscription, a malformed frame or an invalid event gets an
//! `error` frame and the connection carries on. Unknown frame types are
//! ignored (AEP-0003 §2).

use aep_engine::protocol::event::is_command_type;
use aep_engine::protocol::frame::{codes, is_event_type, ErrorFrame, Frame, FrameError};
use aep_engine::{Event, EventError};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::auth::Access;
use crate::ingest::single_line;
use crate::outbox::{Outbox, Outgoing};
use crate::switchboard::{ConnId, Origin, Switchboard};

/// The largest inbound frame accepted, by frame type. Each reply is small
/// or bounded by the request, so these bound what a peer can make the
/// relay hold or echo per frame.
#[derive(Clone, Copy, Debug)]
pub struct FrameLimits {
    /// `ping` and `pong` (a pong echoes the ping's `t`).
    pub ping: usize,
    /// Events and commands.
    pub event: usize,
    /// Every other frame (`subscribe`, `unsubscribe`, `roster_request`, …).
    pub request: usize,
}

impl FrameLimits {
    fn for_type(&self, ty: Option<&str>) -> (usize, &'static str) {
        match ty {
            Some("ping" | "pong") => (self.ping, "max-ping"),
            // An event has a dotted type; frame types have none.
            Some(t) if is_event_type(t) => (self.event, "max-event"),
            _ => (self.request, "max-request-frame"),
        }
    }
}

pub struct Inbound<'a> {
    pub switchboard: &'a Switchboard,
    pub conn: ConnId,
    pub outbox: &'a Outbox,
    pub access: Access,
    /// Whether this connection's role may request a roster.
    pub may_watch: bool,
    /// Whether this connection said hello as an emitter (or both): a
    /// consumer emits commands only.
    pub may_emit: bool,
    pub limits: FrameLimits,
}

impl Inbound<'_> {
    pub fn text(&self, text: &str) {
        let head = peek_head(text);
        let (limit, name) = self.limits.for_type(head.ty.as_deref());
        if text.len() > limit {
            let kind = head.ty.as_deref().unwrap_or("frame");
            let (id, cause) = if is_event_type(kind) { (None, head.id) } else { (head.id, None) };
            let refusal = ErrorFrame {
                id,
                cause,
                ..ErrorFrame::new(
                    codes::LIMIT_EXCEEDED,
                    Some(format!(
                        "a `{kind}` frame of {} bytes; this relay takes at most {limit} ({name})",
                        text.len()
                    )),
                )
            };
            self.send(Frame::Error(refusal));
            return;
        }
        match Frame::decode(text) {
            Ok(Frame::Event(event)) => self.event(event),
            Ok(Frame::Subscribe(request)) if !self.access.may_read() => {
                self.send(Frame::Error(ErrorFrame::for_request(
                    request.id,
                    codes::UNAUTHORIZED,
                    Some(format!("`{}` may not read", self.access.principal().name)),
                )))
            }
            Ok(Frame::Subscribe(request)) => {
                if let Err(refusal) = self.switchboard.subscribe(self.conn, request) {
                    self.send(Frame::Error(refusal));
                }
            }
            Ok(Frame::Unsubscribe { id }) => {
                self.switchboard.unsubscribe(self.conn, &id);
                self.send(Frame::Unsubscribed { id });
            }
            Ok(Frame::RosterRequest { id }) if self.may_watch && self.access.may_read() => {
                self.send(Frame::Roster { id, entries: self.switchboard.roster() });
            }
            Ok(Frame::RosterRequest { id }) => self.send(Frame::Error(ErrorFrame::for_request(
                id,
                codes::UNAUTHORIZED,
                Some("a roster is for consumers; this connection said hello as an emitter".into()),
            ))),
            Ok(Frame::Ping { t }) => self.send(Frame::Pong { t }),
            // A repeated hello, pongs, closing notices, reply-type frames a
            // peer has no business sending, and unknown types: ignored.
            Ok(_) => {}
            Err(FrameError::Event(error)) => self.invalid_event(text, error),
            Err(error) => {
                let refusal =
                    error.refusal().unwrap_or_else(|| ErrorFrame::new(codes::INVALID_FRAME, Some(error.to_string())));
                self.send(Frame::Error(refusal));
            }
        }
    }

    pub fn binary(&self) {
        self.send(Frame::Error(ErrorFrame::new(
            codes::BINARY_UNSUPPORTED,
            Some("binary frames are reserved in AEP 0.1; send one JSON object per text frame".into()),
        )));
    }

    fn event(&self, event: Event) {
        let event = single_line(event);
        if event.is_command() {
            if let Err(refusal) = self.switchboard.route(self.conn, event) {
                self.send(Frame::Error(refusal));
            }
        } else if !self.may_emit {
            self.refuse_event(
                &event,
                "a consumer connection sends commands only; say hello as an emitter to emit".into(),
            );
        } else if let Err(refusal) =
            self.switchboard.ingest(Origin::Socket(self.conn), self.access.principal(), vec![event])
        {
            self.send(Frame::Error(ErrorFrame {
                cause: Some(refusal.id),
                ..ErrorFrame::new(refusal.code.as_str(), Some(refusal.detail))
            }));
        }
    }

    /// Refuses an event this connection may not emit: nothing is stored.
    fn refuse_event(&self, event: &Event, detail: String) {
        self.switchboard.count_refused_event();
        let refusal =
            ErrorFrame { cause: Some(event.id().to_owned()), ..ErrorFrame::new(codes::UNAUTHORIZED, Some(detail)) };
        self.send(Frame::Error(refusal));
    }

    /// An event that failed validation. A would-be command from a binding
    /// that may not command is refused as `unauthorized` first: that gate
    /// comes before validity (AEP-0004 §4).
    fn invalid_event(&self, text: &str, error: EventError) {
        let (id, ty) = peek_id_and_type(text);
        let is_command = ty.as_deref().is_some_and(is_command_type);
        let (code, detail) = if is_command && !self.access.may_command() {
            (codes::UNAUTHORIZED, "control needs an authenticated connection".to_owned())
        } else {
            (codes::INVALID_EVENT, error.to_string())
        };
        if is_command {
            self.switchboard.count_refused_command();
        }
        self.send(Frame::Error(ErrorFrame { cause: id, ..ErrorFrame::new(code, Some(detail)) }));
    }

    fn send(&self, frame: Frame) {
        self.outbox.push(Outgoing::Frame(frame.encode()));
    }
}

/// The `type` and `id` of a frame, read without building its tree, so a
/// size limit can depend on the type before the frame is decoded.
#[derive(Default)]
struct Head {
    ty: Option<String>,
    id: Option<String>,
}

fn peek_head(text: &str) -> Head {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(rename = "type", borrow, default)]
        ty: Option<&'a RawValue>,
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
    }
    let as_string = |raw: Option<&RawValue>| raw.and_then(|r| serde_json::from_str::<String>(r.get()).ok());
    match serde_json::from_str::<Raw>(text) {
        Ok(raw) => Head { ty: as_string(raw.ty), id: as_string(raw.id) },
        Err(_) => Head::default(),
    }
}

/// The `id` and `type` of an object that is not a valid event, so the
/// refusal can name what it refuses.
fn peek_id_and_type(text: &str) -> (Option<String>, Option<String>) {
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text) else { return (None, None) };
    let s = |k: &str| obj.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    (s("id"), s("type"))
}
