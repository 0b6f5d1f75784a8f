//! `subscribe` and the resume vocabulary around it (AEP-0003 §5, §6.5, §7):
//! positions, `from`, `replay-exhausted` and the positions of `closing`.

use serde_json::{Map, Value};

use super::error::{codes, required_id, FrameError};
use crate::protocol::event::Capture;
use crate::protocol::filter::{Filter, FilterError};

/// A session position `(session, epoch, seq)`: a resume token (AEP-0003 §7).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SessionPosition {
    pub session: String,
    pub epoch: u64,
    pub seq: u64,
}

impl SessionPosition {
    pub fn new(session: impl Into<String>, epoch: u64, seq: u64) -> SessionPosition {
        SessionPosition { session: session.into(), epoch, seq }
    }

    /// `(epoch, seq)`, the order within one session.
    pub fn at(&self) -> (u64, u64) {
        (self.epoch, self.seq)
    }

    /// Reads `{session, epoch, seq}`; an absent `epoch` is 0.
    pub(super) fn decode(v: &Value) -> Option<SessionPosition> {
        let o = v.as_object()?;
        let session = o.get("session")?.as_str().filter(|s| !s.is_empty())?;
        let epoch = match o.get("epoch") {
            None => 0,
            Some(e) => e.as_u64()?,
        };
        Some(SessionPosition::new(session, epoch, o.get("seq")?.as_u64()?))
    }

    pub(super) fn encode_into(&self, m: &mut Map<String, Value>) {
        m.insert("session".into(), self.session.as_str().into());
        m.insert("epoch".into(), self.epoch.into());
        m.insert("seq".into(), self.seq.into());
    }

    pub(super) fn to_value(&self) -> Value {
        let mut m = Map::new();
        self.encode_into(&mut m);
        Value::Object(m)
    }
}

/// `subscribe.from` (AEP-0003 §5, §6.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResumeFrom {
    /// Replay every session buffer held, each from its earliest event.
    All,
    /// Replay strictly after each position.
    Positions(Vec<SessionPosition>),
}

/// The `subscribe` frame (AEP-0003 §6.5).
#[derive(Clone, Debug, PartialEq)]
pub struct Subscribe {
    /// Scoped to the connection; echoed by `subscribed` or `error`.
    pub id: String,
    pub filter: Filter,
    pub from: Option<ResumeFrom>,
    /// Capture ceiling (§6.4); absent means as stored.
    pub capture: Option<Capture>,
}

impl Subscribe {
    pub(super) fn decode(obj: &Map<String, Value>) -> Result<Subscribe, FrameError> {
        let id = required_id("subscribe", obj)?;
        Subscribe::from_members(id, obj.get("filter"), obj.get("from"), obj.get("capture"))
    }

    /// A subscription from its members as JSON values, read exactly as the
    /// `subscribe` frame reads them, so another carriage of the same
    /// subscription (the SSE query string) accepts and refuses the same
    /// things.
    pub fn from_members(
        id: String,
        filter: Option<&Value>,
        from: Option<&Value>,
        capture: Option<&Value>,
    ) -> Result<Subscribe, FrameError> {
        let refuse = |detail: String| FrameError::Malformed {
            frame_type: "subscribe".into(),
            id: Some(id.clone()),
            code: codes::INVALID_FILTER,
            detail,
        };
        let filter = match filter {
            None => Filter::match_all(),
            Some(v) => Filter::parse(v).map_err(|e: FilterError| refuse(e.to_string()))?,
        };
        let from = match from {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s == "all" => Some(ResumeFrom::All),
            Some(Value::Array(items)) => Some(ResumeFrom::Positions(
                items
                    .iter()
                    .map(|p| {
                        SessionPosition::decode(p)
                            .ok_or_else(|| refuse(format!("`from`: {p} is not {{session, epoch, seq}}")))
                    })
                    .collect::<Result<_, _>>()?,
            )),
            Some(other) => return Err(refuse(format!("`from` must be an array of positions or \"all\", got {other}"))),
        };
        let capture = match capture {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(Capture::parse)
                    .ok_or_else(|| refuse(format!("`capture`: {v} is not a capture level")))?,
            ),
        };
        Ok(Subscribe { id, filter, from, capture })
    }

    pub(super) fn encode(&self, m: &mut Map<String, Value>) {
        m.insert("id".into(), self.id.as_str().into());
        m.insert("filter".into(), self.filter.to_value());
        match &self.from {
            None => {}
            Some(ResumeFrom::All) => {
                m.insert("from".into(), "all".into());
            }
            Some(ResumeFrom::Positions(ps)) => {
                m.insert("from".into(), Value::Array(ps.iter().map(SessionPosition::to_value).collect()));
            }
        }
        if let Some(c) = self.capture {
            m.insert("capture".into(), c.as_str().into());
        }
    }
}

/// `replay-exhausted` (AEP-0003 §5): the requested position predates the
/// buffer; delivery resumes at `earliest`, and older history lives in a
/// history store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayExhausted {
    pub sub: String,
    /// The session and its earliest held position.
    pub earliest: SessionPosition,
}

/// A last-delivered position of one subscription, in a `closing` frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub sub: String,
    pub position: SessionPosition,
}

/// `closing` (AEP-0003 §3.5 rule 4): an orderly close is coming.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Closing {
    pub reason: String,
    pub delivered: Vec<Delivered>,
}
