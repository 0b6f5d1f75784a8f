//! The AEP event envelope (AEP-0001 §5): sixteen context attributes, an
//! optional `data` object and any extension attributes.
//!
//! An [`Event`] keeps the exact bytes it was parsed from. Relays forward and
//! replay those bytes verbatim, targets re-emit a recorded ack byte for byte,
//! and a redelivery is recognised by comparing bytes; re-serialising would
//! silently break all three.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::validate::{self, Violation};

/// Severity, totally ordered (AEP-0001 §8.1). Absent means `info`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Debug,
    #[default]
    Info,
    Notice,
    Warning,
    Error,
    Critical,
}

impl Severity {
    pub const ALL: [Severity; 6] = [
        Severity::Debug,
        Severity::Info,
        Severity::Notice,
        Severity::Warning,
        Severity::Error,
        Severity::Critical,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Debug => "debug",
            Severity::Info => "info",
            Severity::Notice => "notice",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }

    pub fn parse(s: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// Content-capture level, ordered by how much content it admits
/// (AEP-0001 §8.2). Absent means `metadata`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Capture {
    None,
    #[default]
    Metadata,
    Redacted,
    Full,
}

impl Capture {
    pub const ALL: [Capture; 4] = [Capture::None, Capture::Metadata, Capture::Redacted, Capture::Full];

    pub fn as_str(self) -> &'static str {
        match self {
            Capture::None => "none",
            Capture::Metadata => "metadata",
            Capture::Redacted => "redacted",
            Capture::Full => "full",
        }
    }

    pub fn parse(s: &str) -> Option<Capture> {
        Capture::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// The sixteen core context attribute names plus `data` (AEP-0001 §5.1).
/// An extension attribute may never use one of these names.
pub const CORE_ATTRIBUTES: [&str; 17] = [
    "aep", "id", "type", "subject", "time", "source", "agent", "session", "run", "step", "seq", "epoch",
    "cause", "traceparent", "severity", "capture", "data",
];

/// Why bytes could not become an [`Event`].
#[derive(Clone, Debug, PartialEq)]
pub enum EventError {
    /// Not JSON, or JSON but not an object.
    Malformed(String),
    /// A JSON object that breaks envelope rules; every violation is listed.
    Invalid(Vec<Violation>),
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventError::Malformed(m) => write!(f, "malformed event: {m}"),
            EventError::Invalid(v) => {
                f.write_str("invalid event: ")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{x}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for EventError {}

/// A validated AEP event with its exact wire bytes.
///
/// Cloning is cheap for the bytes (shared); typed accessors apply the
/// spec defaults (`epoch` 0, `severity` info, `capture` metadata).
#[derive(Clone, Debug)]
pub struct Event {
    raw: Arc<str>,
    aep: String,
    id: String,
    ty: String,
    subject: Option<String>,
    time: String,
    source: String,
    agent: String,
    session: Option<String>,
    run: Option<String>,
    step: Option<String>,
    seq: Option<u64>,
    epoch: Option<u64>,
    cause: Option<String>,
    traceparent: Option<String>,
    severity: Option<Severity>,
    capture: Option<Capture>,
    data: Option<Map<String, Value>>,
    extensions: Map<String, Value>,
}

/// Two events are equal when their wire bytes are equal.
impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.raw == other.raw
    }
}
impl Eq for Event {}

impl Event {
    /// Parses and validates the envelope of one event, keeping `text` as its
    /// exact bytes. Payload (`data`) schemas are not checked here: unknown
    /// types must be carried, and payload checks live in
    /// [`validate::payload`].
    pub fn parse(text: &str) -> Result<Event, EventError> {
        let value: Value = serde_json::from_str(text).map_err(|e| EventError::Malformed(e.to_string()))?;
        Event::from_parts(Arc::from(text), value)
    }

    /// Like [`Event::parse`] for bytes that may not be UTF-8.
    pub fn parse_bytes(bytes: &[u8]) -> Result<Event, EventError> {
        let text = std::str::from_utf8(bytes).map_err(|e| EventError::Malformed(e.to_string()))?;
        Event::parse(text)
    }

    /// Validates a JSON value and serialises it as the event's bytes.
    pub fn from_value(value: Value) -> Result<Event, EventError> {
        let raw = serde_json::to_string(&value).map_err(|e| EventError::Malformed(e.to_string()))?;
        Event::from_parts(Arc::from(raw), value)
    }

    fn from_parts(raw: Arc<str>, value: Value) -> Result<Event, EventError> {
        let Value::Object(obj) = value else {
            return Err(EventError::Malformed("an event is a JSON object".into()));
        };
        let violations = validate::envelope(&obj);
        if !violations.is_empty() {
            return Err(EventError::Invalid(violations));
        }
        // Validation guarantees the shapes below; absent optionals stay None.
        // One pass moves each member where it belongs (no lookups, and
        // extensions keep their order).
        let mut e = Event {
            raw,
            aep: String::new(),
            id: String::new(),
            ty: String::new(),
            subject: None,
            time: String::new(),
            source: String::new(),
            agent: String::new(),
            session: None,
            run: None,
            step: None,
            seq: None,
            epoch: None,
            cause: None,
            traceparent: None,
            severity: None,
            capture: None,
            data: None,
            extensions: Map::new(),
        };
        for (key, value) in obj {
            let text = |v: Value| match v {
                Value::String(s) => Some(s),
                _ => None,
            };
            match key.as_str() {
                "aep" => e.aep = text(value).unwrap_or_default(),
                "id" => e.id = text(value).unwrap_or_default(),
                "type" => e.ty = text(value).unwrap_or_default(),
                "subject" => e.subject = text(value),
                "time" => e.time = text(value).unwrap_or_default(),
                "source" => e.source = text(value).unwrap_or_default(),
                "agent" => e.agent = text(value).unwrap_or_default(),
                "session" => e.session = text(value),
                "run" => e.run = text(value),
                "step" => e.step = text(value),
                "cause" => e.cause = text(value),
                "traceparent" => e.traceparent = text(value),
                "severity" => e.severity = text(value).and_then(|s| Severity::parse(&s)),
                "capture" => e.capture = text(value).and_then(|s| Capture::parse(&s)),
                "seq" => e.seq = value.as_u64(),
                "epoch" => e.epoch = value.as_u64(),
                "data" => {
                    e.data = match value {
                        Value::Object(m) => Some(m),
                        _ => None,
                    }
                }
                _ => {
                    e.extensions.insert(key, value);
                }
            }
        }
        Ok(e)
    }

    /// The exact bytes this event was parsed from (or serialised to).
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The shared bytes, for forwarding without copying.
    pub fn raw_arc(&self) -> &Arc<str> {
        &self.raw
    }

    /// The event as a JSON value (re-parsed from the exact bytes).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.raw).unwrap_or(Value::Null)
    }

    pub fn aep(&self) -> &str {
        &self.aep
    }
    pub fn id(&self) -> &str {
        &self.id
    }
    /// The event type, e.g. `attention.requested` (the `type` attribute).
    pub fn ty(&self) -> &str {
        &self.ty
    }
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }
    /// RFC 3339 display time; never an ordering authority (AEP-0001 §7.3).
    pub fn time(&self) -> &str {
        &self.time
    }
    pub fn source(&self) -> &str {
        &self.source
    }
    pub fn agent(&self) -> &str {
        &self.agent
    }
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }
    pub fn run(&self) -> Option<&str> {
        self.run.as_deref()
    }
    pub fn step(&self) -> Option<&str> {
        self.step.as_deref()
    }
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }
    /// Restart generation; `0` when absent.
    pub fn epoch(&self) -> u64 {
        self.epoch.unwrap_or(0)
    }
    /// Whether the event carried `epoch` explicitly.
    pub fn epoch_declared(&self) -> Option<u64> {
        self.epoch
    }
    /// The session position `(epoch, seq)` when the event carries `seq`.
    pub fn position(&self) -> Option<(u64, u64)> {
        self.seq.map(|s| (self.epoch(), s))
    }
    pub fn cause(&self) -> Option<&str> {
        self.cause.as_deref()
    }
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }
    /// Severity; `info` when absent.
    pub fn severity(&self) -> Severity {
        self.severity.unwrap_or_default()
    }
    pub fn severity_declared(&self) -> Option<Severity> {
        self.severity
    }
    /// Capture level; `metadata` when absent.
    pub fn capture(&self) -> Capture {
        self.capture.unwrap_or_default()
    }
    pub fn capture_declared(&self) -> Option<Capture> {
        self.capture
    }
    /// The payload object, when present.
    pub fn data(&self) -> Option<&Map<String, Value>> {
        self.data.as_ref()
    }
    /// A payload member by name.
    pub fn data_field(&self, name: &str) -> Option<&Value> {
        self.data.as_ref()?.get(name)
    }
    /// Extension attributes (AEP-0001 §5.4), carried untouched.
    pub fn extensions(&self) -> &Map<String, Value> {
        &self.extensions
    }

    /// A context attribute or extension attribute as a JSON value, with the
    /// defaults applied for `epoch`, `severity` and `capture` (what filters
    /// match against, AEP-0003 §6.2 rule 5).
    pub fn attribute(&self, name: &str) -> Option<Value> {
        let s = |v: &str| Some(Value::String(v.to_owned()));
        let o = |v: &Option<String>| v.as_deref().map(|x| Value::String(x.to_owned()));
        match name {
            "aep" => s(&self.aep),
            "id" => s(&self.id),
            "type" => s(&self.ty),
            "subject" => o(&self.subject),
            "time" => s(&self.time),
            "source" => s(&self.source),
            "agent" => s(&self.agent),
            "session" => o(&self.session),
            "run" => o(&self.run),
            "step" => o(&self.step),
            "seq" => self.seq.map(Value::from),
            "epoch" => Some(Value::from(self.epoch())),
            "cause" => o(&self.cause),
            "traceparent" => o(&self.traceparent),
            "severity" => s(self.severity().as_str()),
            "capture" => s(self.capture().as_str()),
            "data" => self.data.clone().map(Value::Object),
            other => self.extensions.get(other).cloned(),
        }
    }

    /// The type's category (`attention` for `attention.requested`; the
    /// category token after the vendor for `x.{vendor}.{category}.…`).
    pub fn category(&self) -> &str {
        type_category(&self.ty)
    }

    /// Agent-scoped events describe the emitter, not a session (AEP-0001 §5.2).
    pub fn is_agent_scoped(&self) -> bool {
        is_agent_scoped_type(&self.ty)
    }

    /// Commands (AEP-0004 §2): the four core verbs and vendor
    /// `x.{vendor}.control.{verb}` commands. Acks are not commands.
    pub fn is_command(&self) -> bool {
        is_command_type(&self.ty)
    }

    /// Foreign-emitter session events carry `session` but no `seq`
    /// (AEP-0001 §5.2 exception): commands and `attention.routed`.
    pub fn is_foreign_emitter(&self) -> bool {
        is_foreign_emitter_type(&self.ty)
    }

    /// Rebuilds this event with a different payload and capture level (the
    /// down-level rewrite, AEP-0001 §8.2(b)). Every other attribute,
    /// including extensions and attribute order, is kept.
    pub fn with_payload(&self, data: Option<Map<String, Value>>, capture: Capture) -> Event {
        let mut value: Map<String, Value> = match serde_json::from_str(&self.raw) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        value.insert("capture".into(), Value::String(capture.as_str().into()));
        match &data {
            Some(d) => {
                value.insert("data".into(), Value::Object(d.clone()));
            }
            None => {
                value.remove("data");
            }
        }
        let raw: Arc<str> = Arc::from(serde_json::to_string(&value).unwrap_or_default());
        let mut ev = self.clone();
        ev.raw = raw;
        ev.data = data;
        ev.capture = Some(capture);
        ev
    }

    /// Total order of two events of one session by `(epoch, seq)`; events
    /// without `seq` compare as unordered (`None`).
    pub fn cmp_position(&self, other: &Event) -> Option<Ordering> {
        Some(self.position()?.cmp(&other.position()?))
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

impl Serialize for Event {
    /// Serialises as the exact original bytes.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw = serde_json::value::RawValue::from_string(self.raw.to_string()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// The category of a type string (see [`Event::category`]).
pub fn type_category(ty: &str) -> &str {
    let mut parts = ty.split('.');
    match parts.next() {
        Some("x") => {
            parts.next();
            parts.next().unwrap_or("")
        }
        Some(c) => c,
        None => "",
    }
}

pub fn is_agent_scoped_type(ty: &str) -> bool {
    ty.starts_with("agent.")
}

/// The four core command types (AEP-0004 §2).
pub const CORE_COMMANDS: [&str; 4] = ["control.attention.respond", "control.cancel", "control.pause", "control.resume"];

pub fn is_command_type(ty: &str) -> bool {
    CORE_COMMANDS.contains(&ty) || is_vendor_command_type(ty)
}

/// `x.{vendor}.control.{verb…}`.
pub fn is_vendor_command_type(ty: &str) -> bool {
    let mut parts = ty.splitn(4, '.');
    matches!((parts.next(), parts.next(), parts.next(), parts.next()), (Some("x"), Some(v), Some("control"), Some(rest)) if !v.is_empty() && !rest.is_empty())
}

pub fn is_foreign_emitter_type(ty: &str) -> bool {
    is_command_type(ty) || ty == "attention.routed"
}

#[cfg(test)]
mod tests {
    use super::*;

    const EX: &str = r#"{"aep":"0.1","id":"01JX9YB3P4T9","type":"tool.completed","subject":"Bash","time":"2026-07-03T10:15:04.221Z","source":"aep://host-a/agent/claude-code/session/s_8f2c","agent":"claude-code","session":"s_8f2c","run":"r_0042","step":"turn-3","seq":187,"cause":"01JX9YB2Z1QK","acmeregion":"eu-1","data":{"status":"success"}}"#;

    #[test]
    fn keeps_bytes_and_applies_defaults() {
        let spaced = EX.replace(",\"", ", \"");
        let e = Event::parse(&spaced).unwrap();
        assert_eq!(e.raw(), spaced);
        assert_eq!(e.epoch(), 0);
        assert_eq!(e.epoch_declared(), None);
        assert_eq!(e.severity(), Severity::Info);
        assert_eq!(e.capture(), Capture::Metadata);
        assert_eq!(e.position(), Some((0, 187)));
        assert_eq!(e.extensions().get("acmeregion"), Some(&Value::from("eu-1")));
        assert_eq!(e.attribute("acmeregion"), Some(Value::from("eu-1")));
        assert_eq!(e.attribute("severity"), Some(Value::from("info")));
        assert_eq!(e.data_field("status"), Some(&Value::from("success")));
        assert_eq!(serde_json::to_string(&e).unwrap(), spaced);
    }

    #[test]
    fn rejects_non_objects_and_lists_violations() {
        assert!(matches!(Event::parse("[1]"), Err(EventError::Malformed(_))));
        assert!(matches!(Event::parse("{"), Err(EventError::Malformed(_))));
        match Event::parse(r#"{"aep":"0.2","id":"","type":"Tool","time":"x","source":"s","agent":"a"}"#) {
            Err(EventError::Invalid(v)) => assert!(v.len() >= 4, "{v:?}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn with_payload_keeps_other_attributes() {
        let e = Event::parse(EX).unwrap();
        let d = e.with_payload(None, Capture::None);
        assert_eq!(d.capture(), Capture::None);
        assert!(d.data().is_none());
        assert_eq!(d.id(), e.id());
        assert!(d.raw().contains("\"acmeregion\":\"eu-1\""));
        assert!(!d.raw().contains("\"data\""));
        Event::parse(d.raw()).unwrap();
    }

    #[test]
    fn type_helpers() {
        assert_eq!(type_category("x.acme.tool.ran"), "tool");
        assert_eq!(type_category("run.step.started"), "run");
        assert!(is_command_type("control.cancel"));
        assert!(is_command_type("x.demo.control.instruct"));
        assert!(!is_command_type("control.accepted"));
        assert!(is_foreign_emitter_type("attention.routed"));
    }
}
