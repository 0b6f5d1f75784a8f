//! WebSocket frames (AEP-0003 §2, §3.5, §4, §4.1, §5, §6.5).
//!
//! On a socket every text frame is one JSON object: an [`Event`] when its
//! `type` has a dot, otherwise a connection-scoped frame. Decoding is
//! lenient where the spec asks for forward compatibility (unknown frame
//! types, unknown members, unknown capability keys) and strict where a
//! wrong guess would change behaviour (a subscribe is refused rather than
//! widened). Frames never carry an `aep` member, so nothing downstream can
//! mistake one for an event.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::event::{Capture, Event, EventError};
use super::filter::{Filter, FilterError};

/// Error codes used in `error` frames (AEP-0003 §3.5, §4, §6.5; AEP-0004 §4).
pub mod codes {
    pub const HELLO_REQUIRED: &str = "hello-required";
    pub const VERSION_UNSUPPORTED: &str = "version-unsupported";
    pub const INVALID_FILTER: &str = "invalid-filter";
    pub const UNKNOWN_DIALECT: &str = "unknown-dialect";
    pub const UNAUTHORIZED: &str = "unauthorized";
    pub const LIMIT_EXCEEDED: &str = "limit-exceeded";
    pub const UNSUPPORTED: &str = "unsupported";
    pub const AMBIGUOUS: &str = "ambiguous";
    pub const NO_ROUTE: &str = "no-route";
    /// An event that fails envelope validation (AEP-0003 §3.2; on the
    /// socket, the connection-scoped refusal of such an event).
    pub const INVALID_EVENT: &str = "invalid-event";
    /// A socket frame that is not a readable JSON object.
    pub const INVALID_FRAME: &str = "invalid-frame";
    /// A binary socket frame: reserved in 0.1 (AEP-0003 §3.5).
    pub const BINARY_UNSUPPORTED: &str = "binary-unsupported";
}

/// A command's ack window when the target declared none (AEP-0004 §3).
pub const DEFAULT_ACK_WINDOW_MS: u64 = 10_000;

/// The `hello` role (AEP-0003 §4 rule 2). A role this engine does not know
/// is kept as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Consumer,
    Emitter,
    Both,
    Other(String),
}

impl Role {
    pub fn parse(s: &str) -> Role {
        match s {
            "consumer" => Role::Consumer,
            "emitter" => Role::Emitter,
            "both" => Role::Both,
            other => Role::Other(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Role::Consumer => "consumer",
            Role::Emitter => "emitter",
            Role::Both => "both",
            Role::Other(s) => s,
        }
    }

    /// Whether this role emits events (and so may claim sessions).
    pub fn is_emitter(&self) -> bool {
        matches!(self, Role::Emitter | Role::Both)
    }

    /// Whether this role watches (subscribe, roster).
    pub fn is_consumer(&self) -> bool {
        matches!(self, Role::Consumer | Role::Both)
    }
}

/// `hello.identity` (AEP-0003 §4 rule 3).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HelloIdentity {
    /// Required for emitters: the envelope `agent` of what they send.
    pub agent: Option<String>,
    /// Disambiguates processes of one agent.
    pub instance: Option<String>,
    /// The optional signed identity document, carried uninterpreted.
    pub card: Option<Value>,
}

/// `capabilities.control` (AEP-0004 §4): which commands a target takes.
/// Kept close to verbatim because relays repeat it in rosters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControlCapability {
    /// Authoritative: commands outside it are nacked `unsupported`.
    pub accepts: Option<Vec<String>>,
    pub ack_window_ms: Option<u64>,
    /// Members not interpreted here, including known ones of the wrong shape.
    pub other: Map<String, Value>,
}

impl ControlCapability {
    pub fn new(accepts: impl IntoIterator<Item = impl Into<String>>, ack_window_ms: Option<u64>) -> ControlCapability {
        ControlCapability {
            accepts: Some(accepts.into_iter().map(Into::into).collect()),
            ack_window_ms,
            other: Map::new(),
        }
    }

    /// Whether a command type is declared.
    pub fn accepts(&self, ty: &str) -> bool {
        self.accepts.as_ref().is_some_and(|a| a.iter().any(|t| t == ty))
    }

    /// The declared window, or the protocol default.
    pub fn ack_window(&self) -> u64 {
        self.ack_window_ms.unwrap_or(DEFAULT_ACK_WINDOW_MS)
    }

    fn from_map(mut map: Map<String, Value>) -> ControlCapability {
        ControlCapability {
            accepts: take(&mut map, "accepts", string_list),
            ack_window_ms: take(&mut map, "ack_window_ms", Value::as_u64),
            other: map,
        }
    }

    fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(a) = &self.accepts {
            m.insert("accepts".into(), strings(a));
        }
        if let Some(w) = self.ack_window_ms {
            m.insert("ack_window_ms".into(), w.into());
        }
        extend_missing(&mut m, &self.other);
        m
    }
}

/// `capabilities.replay` (AEP-0003 §5).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayCapability {
    /// Buffer depth (per session or global; the endpoint documents which).
    pub buffer: Option<u64>,
    /// Whether `from: "all"` is implemented.
    pub all: Option<bool>,
    pub other: Map<String, Value>,
}

impl ReplayCapability {
    fn from_map(mut map: Map<String, Value>) -> ReplayCapability {
        ReplayCapability {
            buffer: take(&mut map, "buffer", Value::as_u64),
            all: take(&mut map, "all", Value::as_bool),
            other: map,
        }
    }

    fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(b) = self.buffer {
            m.insert("buffer".into(), b.into());
        }
        if let Some(a) = self.all {
            m.insert("all".into(), a.into());
        }
        extend_missing(&mut m, &self.other);
        m
    }
}

/// `hello.capabilities` (AEP-0003 §4). Declarations, never a validation
/// gate: a known key of the wrong shape is treated as undeclared and kept
/// in `other` with the unknown keys.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Capabilities {
    /// Categories the emitter expects to emit (a routing hint).
    pub emits: Option<Vec<String>>,
    /// Capture levels offered.
    pub capture: Option<Vec<String>>,
    pub control: Option<ControlCapability>,
    pub replay: Option<ReplayCapability>,
    /// Filter dialects, e.g. `attr-match`.
    pub filters: Option<Vec<String>>,
    /// Present (an object) when the `roster` frame is answered (§4.1).
    pub roster: Option<Map<String, Value>>,
    pub other: Map<String, Value>,
}

impl Capabilities {
    /// Whether the peer answers `roster` requests.
    pub fn declares_roster(&self) -> bool {
        self.roster.is_some()
    }

    /// Whether the peer implements `from: "all"`.
    pub fn replay_all(&self) -> bool {
        self.replay.as_ref().and_then(|r| r.all).unwrap_or(false)
    }

    pub fn from_map(mut map: Map<String, Value>) -> Capabilities {
        Capabilities {
            emits: take(&mut map, "emits", string_list),
            capture: take(&mut map, "capture", string_list),
            control: take(&mut map, "control", |v| v.as_object().cloned().map(ControlCapability::from_map)),
            replay: take(&mut map, "replay", |v| v.as_object().cloned().map(ReplayCapability::from_map)),
            filters: take(&mut map, "filters", string_list),
            roster: take(&mut map, "roster", |v| v.as_object().cloned()),
            other: map,
        }
    }

    pub fn to_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(v) = &self.emits {
            m.insert("emits".into(), strings(v));
        }
        if let Some(v) = &self.capture {
            m.insert("capture".into(), strings(v));
        }
        if let Some(c) = &self.control {
            m.insert("control".into(), Value::Object(c.to_map()));
        }
        if let Some(r) = &self.replay {
            m.insert("replay".into(), Value::Object(r.to_map()));
        }
        if let Some(v) = &self.filters {
            m.insert("filters".into(), strings(v));
        }
        if let Some(r) = &self.roster {
            m.insert("roster".into(), Value::Object(r.clone()));
        }
        extend_missing(&mut m, &self.other);
        m
    }
}

/// The `hello` frame (AEP-0003 §4).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hello {
    /// Ordered preference, newest first; a responder lists exactly one.
    pub versions: Vec<String>,
    pub role: Option<Role>,
    pub identity: Option<HelloIdentity>,
    pub capabilities: Capabilities,
}

impl Hello {
    /// The first of the peer's versions (its preference order) that we
    /// also speak; `None` means `version-unsupported`.
    pub fn negotiate<'a>(&'a self, supported: &[&str]) -> Option<&'a str> {
        self.versions.iter().map(String::as_str).find(|v| supported.contains(v))
    }

    fn decode(obj: &Map<String, Value>) -> Hello {
        let identity = obj.get("identity").and_then(Value::as_object).map(|id| HelloIdentity {
            agent: opt_string(id, "agent"),
            instance: opt_string(id, "instance"),
            card: id.get("card").filter(|c| !c.is_null()).cloned(),
        });
        Hello {
            versions: obj.get("versions").and_then(string_list).unwrap_or_default(),
            role: obj.get("role").and_then(Value::as_str).map(Role::parse),
            identity,
            capabilities: obj
                .get("capabilities")
                .and_then(Value::as_object)
                .map(|c| Capabilities::from_map(c.clone()))
                .unwrap_or_default(),
        }
    }

    fn encode(&self, m: &mut Map<String, Value>) {
        m.insert("versions".into(), strings(&self.versions));
        if let Some(r) = &self.role {
            m.insert("role".into(), r.as_str().into());
        }
        if let Some(id) = &self.identity {
            let mut i = Map::new();
            if let Some(a) = &id.agent {
                i.insert("agent".into(), a.as_str().into());
            }
            if let Some(n) = &id.instance {
                i.insert("instance".into(), n.as_str().into());
            }
            if let Some(c) = &id.card {
                i.insert("card".into(), c.clone());
            }
            m.insert("identity".into(), Value::Object(i));
        }
        m.insert("capabilities".into(), Value::Object(self.capabilities.to_map()));
    }
}

/// A session position `(session, epoch, seq)`: a resume token (AEP-0003 §7).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    pub session: String,
    pub epoch: u64,
    pub seq: u64,
}

impl Position {
    pub fn new(session: impl Into<String>, epoch: u64, seq: u64) -> Position {
        Position { session: session.into(), epoch, seq }
    }

    /// `(epoch, seq)`, the order within one session.
    pub fn at(&self) -> (u64, u64) {
        (self.epoch, self.seq)
    }

    /// Reads `{session, epoch, seq}`; an absent `epoch` is 0.
    fn decode(v: &Value) -> Option<Position> {
        let o = v.as_object()?;
        let session = o.get("session")?.as_str().filter(|s| !s.is_empty())?;
        let epoch = match o.get("epoch") {
            None => 0,
            Some(e) => e.as_u64()?,
        };
        Some(Position::new(session, epoch, o.get("seq")?.as_u64()?))
    }

    fn encode_into(&self, m: &mut Map<String, Value>) {
        m.insert("session".into(), self.session.as_str().into());
        m.insert("epoch".into(), self.epoch.into());
        m.insert("seq".into(), self.seq.into());
    }

    fn to_value(&self) -> Value {
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
    Positions(Vec<Position>),
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
    fn decode(obj: &Map<String, Value>) -> Result<Subscribe, FrameError> {
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
                        Position::decode(p).ok_or_else(|| refuse(format!("`from`: {p} is not {{session, epoch, seq}}")))
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

    fn encode(&self, m: &mut Map<String, Value>) {
        m.insert("id".into(), self.id.as_str().into());
        m.insert("filter".into(), self.filter.to_value());
        match &self.from {
            None => {}
            Some(ResumeFrom::All) => {
                m.insert("from".into(), "all".into());
            }
            Some(ResumeFrom::Positions(ps)) => {
                m.insert("from".into(), Value::Array(ps.iter().map(Position::to_value).collect()));
            }
        }
        if let Some(c) = self.capture {
            m.insert("capture".into(), c.as_str().into());
        }
    }
}

/// One live (connection, claimed session) pair in a roster (§4.1 rule 4).
#[derive(Clone, Debug, PartialEq)]
pub struct RosterEntry {
    pub session: String,
    pub agent: Option<String>,
    pub instance: Option<String>,
    /// The claimant's declared `capabilities.control`, as declared.
    pub control: Option<ControlCapability>,
    pub emits: Option<Vec<String>>,
}

impl RosterEntry {
    fn decode(v: &Value) -> Option<RosterEntry> {
        let o = v.as_object()?;
        Some(RosterEntry {
            session: o.get("session")?.as_str()?.to_owned(),
            agent: opt_string(o, "agent"),
            instance: opt_string(o, "instance"),
            control: o.get("control").and_then(Value::as_object).cloned().map(ControlCapability::from_map),
            emits: o.get("emits").and_then(string_list),
        })
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("session".into(), self.session.as_str().into());
        if let Some(a) = &self.agent {
            m.insert("agent".into(), a.as_str().into());
        }
        if let Some(i) = &self.instance {
            m.insert("instance".into(), i.as_str().into());
        }
        if let Some(c) = &self.control {
            m.insert("control".into(), Value::Object(c.to_map()));
        }
        if let Some(e) = &self.emits {
            m.insert("emits".into(), strings(e));
        }
        Value::Object(m)
    }
}

/// The `error` frame: a refusal scoped to the connection, a request (`id`)
/// or a command (`cause`). Never an event, never stored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorFrame {
    pub code: String,
    pub detail: Option<String>,
    /// The subscribe or roster request refused.
    pub id: Option<String>,
    /// The command refused (AEP-0004 §4).
    pub cause: Option<String>,
    /// With `version-unsupported`: the versions the sender speaks.
    pub versions: Option<Vec<String>>,
}

impl ErrorFrame {
    pub fn new(code: impl Into<String>, detail: Option<String>) -> ErrorFrame {
        ErrorFrame { code: code.into(), detail, ..ErrorFrame::default() }
    }

    /// Answers a request by its `id`.
    pub fn for_request(id: impl Into<String>, code: impl Into<String>, detail: Option<String>) -> ErrorFrame {
        ErrorFrame { id: Some(id.into()), ..ErrorFrame::new(code, detail) }
    }

    /// Refuses a command by its id.
    pub fn for_command(cause: impl Into<String>, code: impl Into<String>, detail: Option<String>) -> ErrorFrame {
        ErrorFrame { cause: Some(cause.into()), ..ErrorFrame::new(code, detail) }
    }

    fn decode(obj: &Map<String, Value>) -> Result<ErrorFrame, FrameError> {
        let code = obj
            .get("code")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("error", None, "an error frame needs a string `code`"))?;
        let detail = match obj.get("detail") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => Some(other.to_string()),
        };
        Ok(ErrorFrame {
            code: code.to_owned(),
            detail,
            id: opt_string(obj, "id"),
            cause: opt_string(obj, "cause"),
            versions: obj.get("versions").and_then(string_list),
        })
    }

    fn encode(&self, m: &mut Map<String, Value>) {
        if let Some(id) = &self.id {
            m.insert("id".into(), id.as_str().into());
        }
        if let Some(c) = &self.cause {
            m.insert("cause".into(), c.as_str().into());
        }
        m.insert("code".into(), self.code.as_str().into());
        if let Some(d) = &self.detail {
            m.insert("detail".into(), d.as_str().into());
        }
        if let Some(v) = &self.versions {
            m.insert("versions".into(), strings(v));
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
    pub earliest: Position,
}

/// A last-delivered position of one subscription, in a `closing` frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub sub: String,
    pub position: Position,
}

/// `closing` (AEP-0003 §3.5 rule 4): an orderly close is coming.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Closing {
    pub reason: String,
    pub delivered: Vec<Delivered>,
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

/// Why text could not be read as a frame.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameError {
    NotJson(String),
    NotAnObject,
    /// An object whose `type` is absent or not a string.
    NoType,
    /// A dotted `type` whose envelope is invalid.
    Event(EventError),
    /// A known frame type with members it cannot be read without.
    Malformed {
        frame_type: String,
        /// The request id, when the frame carried a usable one.
        id: Option<String>,
        /// The `error` code that answers it in-band.
        code: &'static str,
        detail: String,
    },
}

impl FrameError {
    /// The in-band answer to a request that could not be read: a refused
    /// `subscribe` is answered `invalid-filter` with its id, and the
    /// connection survives (AEP-0003 §6.5). `None` when there is no id to
    /// answer.
    pub fn refusal(&self) -> Option<ErrorFrame> {
        match self {
            FrameError::Malformed { id: Some(id), code, detail, .. } => {
                Some(ErrorFrame::for_request(id.clone(), *code, Some(detail.clone())))
            }
            _ => None,
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::NotJson(e) => write!(f, "frame is not JSON: {e}"),
            FrameError::NotAnObject => f.write_str("frame is not a JSON object"),
            FrameError::NoType => f.write_str("frame has no string `type`"),
            FrameError::Event(e) => write!(f, "{e}"),
            FrameError::Malformed { frame_type, detail, .. } => write!(f, "malformed `{frame_type}` frame: {detail}"),
        }
    }
}

impl std::error::Error for FrameError {}

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
        if ty.contains('.') {
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
        let ty = match self {
            Frame::Event(e) => return e.raw().to_owned(),
            Frame::Unknown { value, .. } => return Value::Object(value.clone()).to_string(),
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
        };
        m.insert("type".into(), ty.into());
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
            Ok(ReplayExhausted { sub, earliest: Position::new(session, epoch, seq) })
        }
        _ => Err(malformed("replay-exhausted", None, "needs `sub`, `session` and `earliest: {epoch, seq}`")),
    }
}

fn decode_delivered(v: &Value) -> Option<Delivered> {
    Some(Delivered { sub: v.get("sub")?.as_str()?.to_owned(), position: Position::decode(v)? })
}

fn required_id(frame_type: &str, obj: &Map<String, Value>) -> Result<String, FrameError> {
    match obj.get("id") {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(malformed(frame_type, None, "needs a non-empty string `id`")),
    }
}

fn malformed(frame_type: &str, id: Option<String>, detail: &str) -> FrameError {
    let code = if frame_type == "subscribe" { codes::INVALID_FILTER } else { "invalid-frame" };
    FrameError::Malformed { frame_type: frame_type.into(), id, code, detail: detail.into() }
}

/// Removes `key` from `map` when `parse` accepts it; otherwise leaves it
/// there, so a wrong-shaped declaration is carried rather than trusted.
fn take<T>(map: &mut Map<String, Value>, key: &str, parse: impl Fn(&Value) -> Option<T>) -> Option<T> {
    let parsed = parse(map.get(key)?)?;
    map.remove(key);
    Some(parsed)
}

fn string_list(v: &Value) -> Option<Vec<String>> {
    v.as_array()?.iter().map(|s| s.as_str().map(str::to_owned)).collect()
}

fn strings(v: &[String]) -> Value {
    Value::Array(v.iter().map(|s| Value::String(s.clone())).collect())
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn extend_missing(m: &mut Map<String, Value>, other: &Map<String, Value>) {
    for (k, v) in other {
        if !m.contains_key(k) {
            m.insert(k.clone(), v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            from: Some(ResumeFrom::Positions(vec![Position::new("s_8f2c", 3, 187)])),
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
        round_trip(Frame::ReplayExhausted(ReplayExhausted { sub: "s".into(), earliest: Position::new("x", 1, 8) }));
        round_trip(Frame::Closing(Closing {
            reason: "shutdown".into(),
            delivered: vec![Delivered { sub: "sub-1".into(), position: Position::new("s", 0, 9) }],
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
        assert_eq!(s.from, Some(ResumeFrom::Positions(vec![Position::new("s", 0, 2)])));
        assert!(s.filter.is_match_all());
    }

    #[test]
    fn subscribe_members_read_exactly_as_the_frame_reads_them() {
        let filter = json!({"type": ["attention.*"]});
        let from = json!([{"session": "s", "epoch": 1, "seq": 2}]);
        let capture = json!("metadata");
        let built = Subscribe::from_members("a".into(), Some(&filter), Some(&from), Some(&capture)).unwrap();
        let text = json!({"type": "subscribe", "id": "a", "filter": filter, "from": from, "capture": capture}).to_string();
        assert_eq!(Frame::decode(&text).unwrap(), Frame::Subscribe(built));
        let refused = Subscribe::from_members("b".into(), None, Some(&json!({})), None).unwrap_err();
        assert_eq!(refused.refusal().unwrap().code, codes::INVALID_FILTER);
    }
}
