//! WebSocket frames (AEP-0003 §2, §3.5, §4, §4.1, §5, §6.5).
//!
//! On a socket every text frame is one JSON object: an [`Event`] when its
//! `type` has a dot, otherwise a connection-scoped frame. Decoding is
//! lenient where the spec asks for forward compatibility (unknown frame
//! types, unknown members, unknown capability keys) and strict where a
//! wrong guess would change behaviour (a subscribe is refused rather than
//! widened). Frames never carry an `aep` member, so nothing downstream can
//! mistake one for an event.

mod error;
mod hello;
mod members;
mod roster;
mod subscribe;

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

pub use error::{codes, ErrorFrame, FrameError};
use error::{malformed, required_id};
pub use hello::{
    check_declarations, Capabilities, ControlCapability, DeclarationError, Hello, HelloIdentity, ReplayCapability,
    Role, DEFAULT_ACK_WINDOW_MS,
};
use members::opt_string;
pub use roster::RosterEntry;
pub use subscribe::{Closing, Delivered, ReplayExhausted, ResumeFrom, SessionPosition, Subscribe};

use super::event::Event;

/// Whether a text frame's `type` makes it an event rather than a frame:
/// event types are dotted, frame types never are (AEP-0003 §2). The one
/// place that decides, for every reader of a socket.
pub fn is_event_type(ty: &str) -> bool {
    ty.contains('.')
}

/// One text frame on the WebSocket binding.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    Hello(Hello),
    Subscribe(Subscribe),
    Subscribed {
        id: String,
    },
    Unsubscribe {
        id: String,
    },
    Unsubscribed {
        id: String,
    },
    /// `{type: roster, id}` without `entries`.
    RosterRequest {
        id: String,
    },
    /// `{type: roster, id, entries}`: the complete snapshot.
    Roster {
        id: String,
        entries: Vec<RosterEntry>,
    },
    Error(ErrorFrame),
    ReplayExhausted(ReplayExhausted),
    Closing(Closing),
    /// `t` is echoed by the `pong`.
    Ping {
        t: Option<Value>,
    },
    Pong {
        t: Option<Value>,
    },
    /// An event travels as its bare envelope, byte for byte.
    Event(Event),
    /// A dotless type this engine does not know: ignored, never an error.
    Unknown {
        ty: String,
        value: Map<String, Value>,
    },
}

impl Frame {
    /// Reads one text frame. Unknown dotless types become
    /// [`Frame::Unknown`]; unknown members are ignored.
    pub fn decode(text: &str) -> Result<Frame, FrameError> {
        #[derive(Deserialize)]
        struct TypeOnly<'a> {
            #[serde(rename = "type", borrow)]
            ty: Cow<'a, str>,
        }
        // Events are the hot path: read only the `type` first so an event
        // is parsed once, by `Event::parse`, which keeps its exact bytes.
        let ty = match serde_json::from_str::<TypeOnly>(text) {
            Ok(t) if text.trim_start().starts_with('{') => t.ty,
            _ => return Err(classify_failure(text)),
        };
        if is_event_type(&ty) {
            return Event::parse(text).map(Frame::Event).map_err(FrameError::Event);
        }
        let value: Value = serde_json::from_str(text).map_err(|e| FrameError::NotJson(e.to_string()))?;
        let Value::Object(obj) = value else { return Err(FrameError::NotAnObject) };
        let id = |ft: &str| required_id(ft, &obj);
        Ok(match ty.as_ref() {
            "hello" => Frame::Hello(Hello::decode(&obj)),
            "subscribe" => Frame::Subscribe(Subscribe::decode(&obj)?),
            "subscribed" => Frame::Subscribed { id: id("subscribed")? },
            "unsubscribe" => Frame::Unsubscribe { id: id("unsubscribe")? },
            "unsubscribed" => Frame::Unsubscribed { id: id("unsubscribed")? },
            "roster" => {
                let id = id("roster")?;
                match obj.get("entries") {
                    None => Frame::RosterRequest { id },
                    Some(Value::Array(items)) => {
                        Frame::Roster { id, entries: items.iter().filter_map(RosterEntry::decode).collect() }
                    }
                    Some(_) => return Err(malformed("roster", Some(id), "`entries` must be an array")),
                }
            }
            "error" => Frame::Error(ErrorFrame::decode(&obj)?),
            "replay-exhausted" => Frame::ReplayExhausted(decode_replay_exhausted(&obj)?),
            "closing" => Frame::Closing(Closing {
                reason: opt_string(&obj, "reason").unwrap_or_default(),
                delivered: obj
                    .get("delivered")
                    .and_then(Value::as_array)
                    .map(|items| items.iter().filter_map(decode_delivered).collect())
                    .unwrap_or_default(),
            }),
            "ping" => Frame::Ping { t: obj.get("t").cloned() },
            "pong" => Frame::Pong { t: obj.get("t").cloned() },
            other => Frame::Unknown { ty: other.to_owned(), value: obj },
        })
    }

    /// The text of this frame. An event is its exact original bytes.
    pub fn encode(&self) -> String {
        let mut m = Map::new();
        match self {
            Frame::Event(e) => return e.raw().to_owned(),
            Frame::Unknown { value, .. } => return Value::Object(value.clone()).to_string(),
            other => m.insert("type".into(), other.frame_type().into()),
        };
        match self {
            Frame::Hello(h) => h.encode(&mut m),
            Frame::Subscribe(s) => s.encode(&mut m),
            Frame::Subscribed { id }
            | Frame::Unsubscribe { id }
            | Frame::Unsubscribed { id }
            | Frame::RosterRequest { id } => {
                m.insert("id".into(), id.as_str().into());
            }
            Frame::Roster { id, entries } => {
                m.insert("id".into(), id.as_str().into());
                m.insert("entries".into(), Value::Array(entries.iter().map(RosterEntry::to_value).collect()));
            }
            Frame::Error(e) => e.encode(&mut m),
            Frame::ReplayExhausted(r) => {
                m.insert("sub".into(), r.sub.as_str().into());
                m.insert("session".into(), r.earliest.session.as_str().into());
                let mut at = Map::new();
                at.insert("epoch".into(), r.earliest.epoch.into());
                at.insert("seq".into(), r.earliest.seq.into());
                m.insert("earliest".into(), Value::Object(at));
            }
            Frame::Closing(c) => {
                m.insert("reason".into(), c.reason.as_str().into());
                let delivered = c
                    .delivered
                    .iter()
                    .map(|d| {
                        let mut e = Map::new();
                        e.insert("sub".into(), d.sub.as_str().into());
                        d.position.encode_into(&mut e);
                        Value::Object(e)
                    })
                    .collect();
                m.insert("delivered".into(), Value::Array(delivered));
            }
            Frame::Ping { t } | Frame::Pong { t } => {
                if let Some(t) = t {
                    m.insert("t".into(), t.clone());
                }
            }
            Frame::Event(_) | Frame::Unknown { .. } => {}
        }
        Value::Object(m).to_string()
    }

    /// The frame's `type` as it travels.
    pub fn frame_type(&self) -> &str {
        match self {
            Frame::Hello(_) => "hello",
            Frame::Subscribe(_) => "subscribe",
            Frame::Subscribed { .. } => "subscribed",
            Frame::Unsubscribe { .. } => "unsubscribe",
            Frame::Unsubscribed { .. } => "unsubscribed",
            Frame::RosterRequest { .. } | Frame::Roster { .. } => "roster",
            Frame::Error(_) => "error",
            Frame::ReplayExhausted(_) => "replay-exhausted",
            Frame::Closing(_) => "closing",
            Frame::Ping { .. } => "ping",
            Frame::Pong { .. } => "pong",
            Frame::Event(e) => e.ty(),
            Frame::Unknown { ty, .. } => ty,
        }
    }
}

/// Why the cheap `type` read failed: not JSON, not an object, or no
/// string `type`.
fn classify_failure(text: &str) -> FrameError {
    match serde_json::from_str::<Value>(text) {
        Err(e) => FrameError::NotJson(e.to_string()),
        Ok(Value::Object(_)) => FrameError::NoType,
        Ok(_) => FrameError::NotAnObject,
    }
}

fn decode_replay_exhausted(obj: &Map<String, Value>) -> Result<ReplayExhausted, FrameError> {
    let sub = opt_string(obj, "sub");
    let session = opt_string(obj, "session");
    let earliest = obj.get("earliest").and_then(Value::as_object);
    let at = earliest.and_then(|e| Some((e.get("epoch").map_or(Some(0), Value::as_u64)?, e.get("seq")?.as_u64()?)));
    match (sub, session, at) {
        (Some(sub), Some(session), Some((epoch, seq))) => {
            Ok(ReplayExhausted { sub, earliest: SessionPosition::new(session, epoch, seq) })
        }
        _ => Err(malformed("replay-exhausted", None, "needs `sub`, `session` and `earliest: {epoch, seq}`")),
    }
}

fn decode_delivered(v: &Value) -> Option<Delivered> {
    Some(Delivered { sub: v.get("sub")?.as_str()?.to_owned(), position: SessionPosition::decode(v)? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::event::Capture;
    use crate::protocol::filter::Filter;
    use serde_json::json;

    fn round_trip(frame: Frame) {
        let text = frame.encode();
        assert!(!text.contains("\"aep\""), "frames never carry `aep`: {text}");
        assert_eq!(Frame::decode(&text).unwrap(), frame, "{text}");
    }

    #[test]
    fn every_frame_round_trips() {
        let mut caps = Capabilities {
            emits: Some(vec!["session".into(), "attention".into()]),
            control: Some(ControlCapability::new(["control.attention.respond"], Some(10_000))),
            replay: Some(ReplayCapability { buffer: Some(512), all: Some(true), other: Map::new() }),
            filters: Some(vec!["attr-match".into()]),
            roster: Some(Map::new()),
            ..Capabilities::default()
        };
        caps.other.insert("experimental".into(), json!({"x": 1}));
        round_trip(Frame::Hello(Hello {
            versions: vec!["0.1".into()],
            role: Some(Role::Both),
            identity: Some(HelloIdentity { agent: Some("a".into()), instance: Some("h/1".into()), card: None }),
            capabilities: caps,
        }));
        round_trip(Frame::Subscribe(Subscribe {
            id: "sub-1".into(),
            filter: Filter::parse(&json!({"type": ["attention.*"], "severity": {"gte": "notice"}})).unwrap(),
            from: Some(ResumeFrom::Positions(vec![SessionPosition::new("s_8f2c", 3, 187)])),
            capture: Some(Capture::Metadata),
        }));
        round_trip(Frame::Subscribe(Subscribe {
            id: "sub-2".into(),
            filter: Filter::match_all(),
            from: Some(ResumeFrom::All),
            capture: None,
        }));
        round_trip(Frame::Subscribed { id: "sub-1".into() });
        round_trip(Frame::Unsubscribe { id: "sub-1".into() });
        round_trip(Frame::Unsubscribed { id: "sub-1".into() });
        round_trip(Frame::RosterRequest { id: "r-1".into() });
        round_trip(Frame::Roster {
            id: "r-1".into(),
            entries: vec![RosterEntry {
                session: "s_8f2c".into(),
                agent: Some("claude-code".into()),
                instance: Some("host-a/7c1f".into()),
                control: Some(ControlCapability::new(["control.attention.respond"], Some(10_000))),
                emits: Some(vec!["session".into()]),
            }],
        });
        round_trip(Frame::Error(ErrorFrame::for_command("01J", codes::NO_ROUTE, Some("nobody".into()))));
        round_trip(Frame::Error(ErrorFrame {
            versions: Some(vec!["0.1".into()]),
            ..ErrorFrame::new(codes::VERSION_UNSUPPORTED, None)
        }));
        round_trip(Frame::ReplayExhausted(ReplayExhausted {
            sub: "s".into(),
            earliest: SessionPosition::new("x", 1, 8),
        }));
        round_trip(Frame::Closing(Closing {
            reason: "shutdown".into(),
            delivered: vec![Delivered { sub: "sub-1".into(), position: SessionPosition::new("s", 0, 9) }],
        }));
        round_trip(Frame::Ping { t: Some(json!(123)) });
        round_trip(Frame::Pong { t: None });
    }

    #[test]
    fn events_keep_their_bytes() {
        let text = r#"{"aep":"0.1", "id":"01J","type":"control.pause","time":"2026-07-03T10:15:04Z","source":"aep://x/agent/a","agent":"a","session":"s"}"#;
        let frame = Frame::decode(text).unwrap();
        assert!(matches!(&frame, Frame::Event(e) if e.ty() == "control.pause"));
        assert_eq!(frame.encode(), text);
        assert!(matches!(Frame::decode(r#"{"type":"tool.completed"}"#), Err(FrameError::Event(_))));
    }

    #[test]
    fn unknown_types_and_members_are_tolerated() {
        let f = Frame::decode(r#"{"type":"zigzag","note":1}"#).unwrap();
        assert!(matches!(&f, Frame::Unknown { ty, value } if ty == "zigzag" && value["note"] == 1));
        assert_eq!(Frame::decode(&f.encode()).unwrap(), f);
        let h = Frame::decode(
            r#"{"type":"hello","versions":["0.1"],"role":"collector","capabilities":{"futurecap":{"enabled":true},"roster":true,"control":{"accepts":"x","ack_window_ms":5}},"extra":1}"#,
        )
        .unwrap();
        let Frame::Hello(h) = h else { panic!() };
        assert_eq!(h.role, Some(Role::Other("collector".into())));
        assert!(!h.capabilities.declares_roster(), "roster must be an object");
        let control = h.capabilities.control.as_ref().unwrap();
        assert_eq!((control.accepts.as_ref(), control.ack_window_ms), (None, Some(5)));
        assert_eq!(control.other["accepts"], "x");
        assert!(h.capabilities.other.contains_key("futurecap"));
        assert_eq!(h.negotiate(&["0.1"]), Some("0.1"));
        assert_eq!(h.negotiate(&["9.9"]), None);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for text in ["", "nul", "[1,2]", "\"hello\"", "{}", r#"{"type":5}"#, "{\"type\":\"hello\"", "\u{0}"] {
            assert!(Frame::decode(text).is_err(), "{text:?}");
        }
        assert!(matches!(Frame::decode("[1]"), Err(FrameError::NotAnObject)));
        assert!(matches!(Frame::decode("{]"), Err(FrameError::NotJson(_))));
        assert!(matches!(Frame::decode(r#"{"id":"x"}"#), Err(FrameError::NoType)));
        assert!(matches!(Frame::decode(r#"{"type":"subscribed"}"#), Err(FrameError::Malformed { .. })));
    }

    #[test]
    fn bad_subscriptions_are_refused_in_band_with_their_id() {
        for (text, needle) in [
            (r#"{"type":"subscribe","id":"sub-malformed","filter":{},"from":{}}"#, "from"),
            (r#"{"type":"subscribe","id":"sub-malformed","filter":{"seq":1}}"#, "seq"),
            (r#"{"type":"subscribe","id":"sub-malformed","from":[{"session":"s"}]}"#, "from"),
            (r#"{"type":"subscribe","id":"sub-malformed","capture":"most"}"#, "capture"),
        ] {
            let err = Frame::decode(text).unwrap_err();
            let refusal = err.refusal().expect("answerable");
            assert_eq!(refusal.id.as_deref(), Some("sub-malformed"));
            assert_eq!(refusal.code, codes::INVALID_FILTER);
            assert!(refusal.detail.unwrap().contains(needle), "{text}");
        }
        let Frame::Subscribe(s) =
            Frame::decode(r#"{"type":"subscribe","id":"a","from":[{"session":"s","seq":2}]}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(s.from, Some(ResumeFrom::Positions(vec![SessionPosition::new("s", 0, 2)])));
        assert!(s.filter.is_match_all());
        for text in [r#"{"type":"subscribe"}"#, r#"{"type":"subscribe","id":""}"#, r#"{"type":"subscribe","id":3}"#] {
            let refusal = Frame::decode(text).unwrap_err().refusal().expect("answerable without an id");
            assert_eq!((refusal.id, refusal.code.as_str()), (None, codes::INVALID_FILTER), "{text}");
        }
    }

    #[test]
    fn subscribe_members_read_exactly_as_the_frame_reads_them() {
        let filter = json!({"type": ["attention.*"]});
        let from = json!([{"session": "s", "epoch": 1, "seq": 2}]);
        let capture = json!("metadata");
        let built = Subscribe::from_members("a".into(), Some(&filter), Some(&from), Some(&capture)).unwrap();
        let text =
            json!({"type": "subscribe", "id": "a", "filter": filter, "from": from, "capture": capture}).to_string();
        assert_eq!(Frame::decode(&text).unwrap(), Frame::Subscribe(built));
        let refused = Subscribe::from_members("b".into(), None, Some(&json!({})), None).unwrap_err();
        assert_eq!(refused.refusal().unwrap().code, codes::INVALID_FILTER);
    }
}
