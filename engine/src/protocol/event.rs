//! The AEP event envelope (AEP-0001 §5): sixteen context attributes, an
//! optional `data` object and any extension attributes.
//!
//! An [`Event`] keeps the exact bytes it was parsed from. Relays forward and
//! replay those bytes verbatim, targets re-emit a recorded ack byte for byte,
//! and a redelivery is recognised by comparing bytes; re-serialising would
//! silently break all three.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::sync::{Arc, LazyLock, OnceLock};

use serde::Serialize;
use serde_json::{Map, Value};

use super::envelope::{self, as_u64, Core, Decoded, Envelope, Texts};
use super::kind::EventKind;
use super::validate::{self, Violation};
use super::vocabulary::{CommandVerb, EventType};
use crate::time::UnixMs;

pub use super::kind::is_vendor_command_type;
pub use super::vocabulary::{Capture, Severity};

/// A session position `(epoch, seq)`, ordered as AEP-0001 §7.3 orders
/// them: by epoch, then by seq.
pub type Position = (u64, u64);

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
/// The bytes are a span of a shared text: the event's own copy when it
/// was parsed alone, or the whole of a stream folded at once
/// ([`Event::parse_in`]), so that a replay does not copy and free every
/// event's bytes one by one.
/// Attribute texts are spans of the bytes, so reading an event allocates
/// only for what carried escapes; `data` is parsed on first use, since
/// most events are filed by their context attributes alone.
#[derive(Clone, Debug)]
pub struct Event {
    /// The text the event's bytes are a span of (`own`).
    raw: Arc<str>,
    own: Text,
    /// Attribute texts that carried escapes, unescaped (usually empty).
    unescaped: Box<str>,
    aep: Text,
    id: Text,
    ty: Text,
    /// `ty` looked up in the registry once, at parse (see [`Event::kind`]).
    core: Option<EventType>,
    subject: Option<Text>,
    time: Text,
    source: Text,
    agent: Text,
    session: Option<Text>,
    run: Option<Text>,
    step: Option<Text>,
    seq: Option<u64>,
    epoch: Option<u64>,
    cause: Option<Text>,
    traceparent: Option<Text>,
    severity: Option<Severity>,
    capture: Option<Capture>,
    /// `time` read as a point in time, when it parses.
    at: Option<UnixMs>,
    /// Where the `data` member's value sits in `raw`.
    data_span: Option<Text>,
    data: OnceLock<Option<Box<Map<String, Value>>>>,
    /// Extension attributes, when there are any (rare).
    extensions: Option<Box<Map<String, Value>>>,
}

/// What [`Event::extensions`] lends when an event has none.
static NO_EXTENSIONS: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

/// Where an attribute's text lives: a byte span of the event's `raw`, or
/// of its `unescaped` texts when the top bit of `at` is set. The store's
/// entries keep these spans with the bytes instead of copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Text {
    at: u32,
    len: u32,
}

impl Text {
    const UNESCAPED: u32 = 1 << 31;

    /// Inlined: every attribute accessor goes through here, and the
    /// size-optimised npm build would otherwise call it each time.
    #[inline]
    pub(crate) fn slice<'a>(self, raw: &'a str, unescaped: &'a str) -> &'a str {
        let (from, at) =
            if self.at & Text::UNESCAPED == 0 { (raw, self.at) } else { (unescaped, self.at & !Text::UNESCAPED) };
        &from[at as usize..(at + self.len) as usize]
    }
}

/// What a stored entry keeps of an event: its bytes, the texts that had
/// escapes, and where `id`, `type` and `cause` sit in them.
pub(crate) struct Kept {
    pub(crate) raw: Arc<str>,
    pub(crate) own: Text,
    pub(crate) unescaped: Box<str>,
    pub(crate) id: Text,
    pub(crate) ty: Text,
    pub(crate) core: Option<EventType>,
    pub(crate) cause: Option<Text>,
}

/// Two events are equal when their wire bytes are equal.
impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.raw() == other.raw()
    }
}
impl Eq for Event {}

impl Event {
    /// Parses and validates the envelope of one event, keeping `text` as its
    /// exact bytes. Payload (`data`) schemas are not checked here: unknown
    /// types must be carried, and payload checks live in
    /// [`validate::payload`].
    pub fn parse(text: &str) -> Result<Event, EventError> {
        Event::read(text, None)
    }

    /// [`Event::parse`] of `shared[range]`, the event keeping its bytes as
    /// that span of `shared` rather than a copy: for folding a whole
    /// stream's text, read once.
    pub fn parse_in(shared: &Arc<str>, range: std::ops::Range<usize>) -> Result<Event, EventError> {
        let text = shared.get(range).ok_or_else(|| EventError::Malformed("not a span of the text".into()))?;
        Event::read(text, Some(shared))
    }

    /// Parses and validates `text`, a span of `shared` (when given) or
    /// copied (when not).
    fn read(text: &str, shared: Option<&Arc<str>>) -> Result<Event, EventError> {
        let base = shared.map_or(text.as_ptr(), |s| s.as_ptr()) as usize;
        let end = text.as_ptr() as usize - base + text.len();
        // Spans are 31-bit offsets (see `Text`).
        if end >= Text::UNESCAPED as usize {
            return Err(EventError::Malformed(match text.len() >= Text::UNESCAPED as usize {
                true => format!("an event of {} bytes is too large", text.len()),
                false => "an event 2 GiB or more into its text cannot be kept as a span of it".into(),
            }));
        }
        let (env, texts) = Envelope::parse_decoded(text).map_err(|e| EventError::Malformed(e.to_string()))?;
        let (violations, read) = validate::check_decoded(&env, &texts);
        if !violations.is_empty() {
            return Err(EventError::Invalid(violations));
        }
        let raw = shared.map_or_else(|| Arc::from(text), Arc::clone);
        Ok(Event::from_envelope(text, base, &env, texts, read, raw))
    }

    /// Like [`Event::parse`] for bytes that may not be UTF-8.
    pub fn parse_bytes(bytes: &[u8]) -> Result<Event, EventError> {
        let text = std::str::from_utf8(bytes).map_err(|e| EventError::Malformed(e.to_string()))?;
        Event::parse(text)
    }

    /// Validates a JSON value and serialises it as the event's bytes.
    pub fn from_value(value: Value) -> Result<Event, EventError> {
        if !value.is_object() {
            return Err(EventError::Malformed("an event is a JSON object".into()));
        }
        let raw = serde_json::to_string(&value).map_err(|e| EventError::Malformed(e.to_string()))?;
        Event::parse(&raw)
    }

    /// Files the members of `env`, validated and read from `text`, as
    /// spans of `raw`, which holds `text` at `base` onwards.
    fn from_envelope(
        text: &str,
        base: usize,
        env: &Envelope<'_>,
        mut texts: Texts<'_>,
        read: validate::Read,
        raw: Arc<str>,
    ) -> Event {
        let own = Text { at: (text.as_ptr() as usize - base) as u32, len: text.len() as u32 };
        let mut unescaped = String::new();
        // Validation guarantees the shapes read below.
        let mut span = |core: Core| -> Option<Text> {
            let v: Decoded<'_> = texts.take(core);
            match v?? {
                Cow::Borrowed(s) => Some(Text { at: (s.as_ptr() as usize - base) as u32, len: s.len() as u32 }),
                Cow::Owned(s) => {
                    let at = unescaped.len() as u32 | Text::UNESCAPED;
                    unescaped.push_str(&s);
                    Some(Text { at, len: s.len() as u32 })
                }
            }
        };
        let empty = Text { at: 0, len: 0 };
        let (aep, id, ty, time) = (span(Core::Aep), span(Core::Id), span(Core::Type), span(Core::Time));
        let (source, agent) = (span(Core::Source), span(Core::Agent));
        let (subject, session, run, step) =
            (span(Core::Subject), span(Core::Session), span(Core::Run), span(Core::Step));
        let (cause, traceparent) = (span(Core::Cause), span(Core::Traceparent));
        let ty = ty.unwrap_or(empty);
        Event {
            aep: aep.unwrap_or(empty),
            id: id.unwrap_or(empty),
            core: read.core,
            ty,
            subject,
            time: time.unwrap_or(empty),
            source: source.unwrap_or(empty),
            agent: agent.unwrap_or(empty),
            session,
            run,
            step,
            seq: env.get(Core::Seq).and_then(as_u64),
            epoch: env.get(Core::Epoch).and_then(as_u64),
            cause,
            traceparent,
            severity: texts.take(Core::Severity).flatten().and_then(|s| Severity::parse(&s)),
            capture: texts.take(Core::Capture).flatten().and_then(|s| Capture::parse(&s)),
            at: read.at,
            data_span: env
                .get(Core::Data)
                .map(|d| Text { at: (d.get().as_ptr() as usize - base) as u32, len: d.get().len() as u32 }),
            data: OnceLock::new(),
            // Inserted one by one: collecting into a Map (a BTreeMap) would
            // link a stable sort of its own into the WebAssembly builds.
            extensions: (!env.extensions.is_empty()).then(|| {
                let mut map = Map::new();
                for (name, v) in &env.extensions {
                    map.insert(name.to_string(), serde_json::from_str(v.get()).unwrap_or(Value::Null));
                }
                Box::new(map)
            }),
            unescaped: unescaped.into_boxed_str(),
            raw,
            own,
        }
    }

    #[inline]
    fn text(&self, t: Text) -> &str {
        t.slice(&self.raw, &self.unescaped)
    }

    /// Hands the bytes to a stored entry, moved rather than shared: the
    /// store keeps every event it folds, and a second reference would cost
    /// two atomic counts for nothing.
    pub(crate) fn into_kept(self) -> Kept {
        let Event { raw, own, unescaped, id, ty, core, cause, .. } = self;
        Kept { raw, own, unescaped, id, ty, core, cause }
    }

    #[inline]
    fn text_opt(&self, t: Option<Text>) -> Option<&str> {
        t.map(|t| self.text(t))
    }

    /// The exact bytes this event was parsed from (or serialised to).
    #[inline]
    pub fn raw(&self) -> &str {
        self.own.slice(&self.raw, "")
    }

    /// The bytes as a shared text, for forwarding: shared without copying
    /// when the event was parsed alone, copied when it is a span of a
    /// larger text. Not inlined: several forwarding paths ask for it, and
    /// none is hot.
    #[inline(never)]
    pub fn raw_arc(&self) -> Arc<str> {
        let own = self.raw();
        if own.len() == self.raw.len() {
            Arc::clone(&self.raw)
        } else {
            Arc::from(own)
        }
    }

    /// The event as a JSON value (re-parsed from the exact bytes).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.raw()).unwrap_or(Value::Null)
    }

    #[inline]
    pub fn aep(&self) -> &str {
        self.text(self.aep)
    }
    #[inline]
    pub fn id(&self) -> &str {
        self.text(self.id)
    }
    /// The event type, e.g. `attention.requested` (the `type` attribute).
    #[inline]
    pub fn ty(&self) -> &str {
        self.text(self.ty)
    }
    /// The event type as a closed set, for deciding by type: read once,
    /// when the event was parsed.
    #[inline]
    pub fn kind(&self) -> EventKind<'_> {
        EventKind::from_parsed(self.core, self.ty())
    }
    #[inline]
    pub fn subject(&self) -> Option<&str> {
        self.text_opt(self.subject)
    }
    /// RFC 3339 display time; never an ordering authority (AEP-0001 §7.3).
    #[inline]
    pub fn time(&self) -> &str {
        self.text(self.time)
    }
    /// [`time`](Event::time) as a point in time, when it parses (read
    /// once, with the envelope).
    pub fn at(&self) -> Option<UnixMs> {
        self.at
    }
    #[inline]
    pub fn source(&self) -> &str {
        self.text(self.source)
    }
    #[inline]
    pub fn agent(&self) -> &str {
        self.text(self.agent)
    }
    #[inline]
    pub fn session(&self) -> Option<&str> {
        self.text_opt(self.session)
    }
    #[inline]
    pub fn run(&self) -> Option<&str> {
        self.text_opt(self.run)
    }
    #[inline]
    pub fn step(&self) -> Option<&str> {
        self.text_opt(self.step)
    }
    #[inline]
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }
    /// Restart generation; `0` when absent.
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch.unwrap_or(0)
    }
    /// Whether the event carried `epoch` explicitly.
    pub fn epoch_declared(&self) -> Option<u64> {
        self.epoch
    }
    /// The session position `(epoch, seq)` when the event carries `seq`.
    #[inline]
    pub fn position(&self) -> Option<Position> {
        self.seq.map(|s| (self.epoch(), s))
    }
    #[inline]
    pub fn cause(&self) -> Option<&str> {
        self.text_opt(self.cause)
    }
    pub fn traceparent(&self) -> Option<&str> {
        self.text_opt(self.traceparent)
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
    /// The payload object, when present (parsed on first use).
    pub fn data(&self) -> Option<&Map<String, Value>> {
        self.data
            .get_or_init(|| self.data_span.and_then(|span| serde_json::from_str(span.slice(&self.raw, "")).ok()))
            .as_deref()
    }
    /// The payload's exact bytes, when present.
    pub fn data_raw(&self) -> Option<&str> {
        self.data_span.map(|span| span.slice(&self.raw, ""))
    }
    /// A payload member by name.
    pub fn data_field(&self, name: &str) -> Option<&Value> {
        self.data()?.get(name)
    }
    /// A payload member's text, when it is a string: what
    /// `data_field(name)?.as_str()` reads. Unless the payload was parsed
    /// already, only this member is decoded: the fold reads one or two
    /// members of many events and would otherwise build every payload.
    pub fn data_str(&self, name: &str) -> Option<Cow<'_, str>> {
        match self.data.get() {
            Some(parsed) => parsed.as_deref()?.get(name)?.as_str().map(Cow::Borrowed),
            None => envelope::as_str(envelope::member(self.data_raw()?, name)?),
        }
    }
    /// Every payload rule this event breaks ([`validate::payload`]): its
    /// type's schema, capture honesty, a missing payload the type needs.
    /// Parsing checks the envelope only, so that unknown types are carried.
    pub fn check_payload(&self) -> Vec<Violation> {
        validate::payload::check_payload(self.ty(), self.data(), self.capture())
    }

    /// Extension attributes (AEP-0001 §5.4), carried untouched.
    pub fn extensions(&self) -> &Map<String, Value> {
        self.extensions.as_deref().unwrap_or(&NO_EXTENSIONS)
    }

    /// A context attribute or extension attribute as a JSON value, with the
    /// defaults applied for `epoch`, `severity` and `capture` (what filters
    /// match against, AEP-0003 §6.2 rule 5).
    pub fn attribute(&self, name: &str) -> Option<Value> {
        let s = |v: &str| Some(Value::String(v.to_owned()));
        let o = |v: Option<&str>| v.map(|x| Value::String(x.to_owned()));
        match name {
            "aep" => s(self.aep()),
            "id" => s(self.id()),
            "type" => s(self.ty()),
            "subject" => o(self.subject()),
            "time" => s(self.time()),
            "source" => s(self.source()),
            "agent" => s(self.agent()),
            "session" => o(self.session()),
            "run" => o(self.run()),
            "step" => o(self.step()),
            "seq" => self.seq.map(Value::from),
            "epoch" => Some(Value::from(self.epoch())),
            "cause" => o(self.cause()),
            "traceparent" => o(self.traceparent()),
            "severity" => s(self.severity().as_str()),
            "capture" => s(self.capture().as_str()),
            "data" => self.data().cloned().map(Value::Object),
            other => self.extensions().get(other).cloned(),
        }
    }

    /// The type's category (`attention` for `attention.requested`; the
    /// category token after the vendor for `x.{vendor}.{category}.…`).
    pub fn category(&self) -> &str {
        type_category(self.ty())
    }

    /// Agent-scoped events describe the emitter, not a session (AEP-0001 §5.2).
    pub fn is_agent_scoped(&self) -> bool {
        self.kind().is_agent_scoped()
    }

    /// Commands (AEP-0004 §2): the four core verbs and vendor
    /// `x.{vendor}.control.{verb}` commands. Acks are not commands.
    pub fn is_command(&self) -> bool {
        self.kind().is_command()
    }

    /// Foreign-emitter session events carry `session` but no `seq`
    /// (AEP-0001 §5.2 exception): commands and `attention.routed`.
    pub fn is_foreign_emitter(&self) -> bool {
        self.kind().is_foreign_emitter()
    }

    /// Rebuilds this event with a different payload and capture level (the
    /// down-level rewrite, AEP-0001 §8.2(b)). Every other member keeps its
    /// bytes and its place; `capture` and `data` are appended when absent.
    pub fn with_payload(&self, data: Option<Map<String, Value>>, capture: Capture) -> Event {
        let members = envelope::members(self.raw()).unwrap_or_default();
        let name = |n: &str| serde_json::to_string(n).unwrap_or_default();
        let level = name(capture.as_str());
        let payload = data.as_ref().map(|d| serde_json::to_string(d).unwrap_or_default());
        let mut out: Vec<(String, &str)> = Vec::with_capacity(members.len() + 2);
        let (mut wrote_capture, mut wrote_data) = (false, false);
        for (n, v) in &members {
            match n.as_ref() {
                "capture" => {
                    wrote_capture = true;
                    out.push((name(n), &level));
                }
                "data" => {
                    wrote_data = true;
                    if let Some(p) = &payload {
                        out.push((name(n), p));
                    }
                }
                _ => out.push((name(n), v.get())),
            }
        }
        if !wrote_capture {
            out.push((name("capture"), &level));
        }
        if let (false, Some(p)) = (wrote_data, &payload) {
            out.push((name("data"), p));
        }
        let mut text = String::with_capacity(self.raw().len());
        text.push('{');
        for (i, (n, v)) in out.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(n);
            text.push(':');
            text.push_str(v);
        }
        text.push('}');
        let mut ev = Event::parse(&text).expect("a valid event with a valid level and an object payload stays valid");
        ev.data = OnceLock::from(data.map(Box::new));
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
        f.write_str(self.raw())
    }
}

impl Serialize for Event {
    /// Serialises as the exact original bytes.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw = serde_json::value::RawValue::from_string(self.raw().to_owned()).map_err(serde::ser::Error::custom)?;
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

/// Whether `ty` names an agent-scoped type (see [`EventKind::is_agent_scoped`]).
pub fn is_agent_scoped_type(ty: &str) -> bool {
    EventKind::of(ty).is_agent_scoped()
}

/// The core command types (AEP-0004 §2), from the registry.
pub const CORE_COMMANDS: [&str; CommandVerb::ALL.len()] = {
    let mut names = [""; CommandVerb::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = CommandVerb::ALL[i].as_str();
        i += 1;
    }
    names
};

/// Whether `ty` names a command (see [`EventKind::is_command`]).
pub fn is_command_type(ty: &str) -> bool {
    // Asked of every frame a relay reads: most types rule themselves out
    // by their first byte, before any registry lookup.
    matches!(ty.as_bytes().first(), Some(b'c' | b'x')) && EventKind::of(ty).is_command()
}

/// Whether `ty` names a foreign-emitter type (see [`EventKind::is_foreign_emitter`]).
pub fn is_foreign_emitter_type(ty: &str) -> bool {
    EventKind::of(ty).is_foreign_emitter()
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
    fn an_event_read_in_a_larger_text_is_its_span_of_it() {
        let escaped = EX.replace(r#""subject":"Bash""#, r#""subject":"B\u0061sh""#);
        let text: Arc<str> = Arc::from(format!("{EX}\n{escaped}\n{{\"aep\":1}}").as_str());
        let second = EX.len() + 1..EX.len() + 1 + escaped.len();
        let (a, b) = (Event::parse_in(&text, 0..EX.len()).unwrap(), Event::parse_in(&text, second).unwrap());
        assert_eq!((a.raw(), b.raw()), (EX, escaped.as_str()));
        assert_eq!(b, Event::parse(&escaped).unwrap(), "the same bytes, the same event");
        assert_eq!((b.id(), b.subject(), b.seq()), ("01JX9YB3P4T9", Some("Bash"), Some(187)));
        assert_eq!(b.data_field("status"), Some(&Value::from("success")));
        assert_eq!(serde_json::to_string(&b).unwrap(), escaped);
        // Forwarding hands out the event's own bytes, not the whole text.
        assert_eq!(&*b.raw_arc(), escaped);
        let alone = Event::parse(EX).unwrap();
        assert!(Arc::ptr_eq(&alone.raw_arc(), &alone.raw_arc()), "an event parsed alone shares its bytes");
        assert!(matches!(Event::parse_in(&text, text.len() - 9..text.len()), Err(EventError::Invalid(_))));
        assert!(matches!(Event::parse_in(&text, 5..text.len() + 1), Err(EventError::Malformed(_))));
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
    fn check_payload_uses_the_declared_capture() {
        let line = r#"{"aep":"0.1","id":"E1","type":"run.cancelled","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":1,"data":{"reason":"free text"}}"#;
        let e = Event::parse(line).unwrap();
        assert_eq!(e.check_payload()[0].rule, "payload.capture");
        let redacted = Event::parse(&line.replace(r#""seq":1,"#, r#""seq":1,"capture":"redacted","#)).unwrap();
        assert!(redacted.check_payload().is_empty());
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
