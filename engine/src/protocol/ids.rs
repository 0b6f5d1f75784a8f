//! Producing events: ids, `source` URIs and the draft builder.
//!
//! Randomness and time are arguments, so building is deterministic under
//! test and needs no OS entropy in the browser.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{Map, Value};

use super::envelope::Core;
use super::event::{Capture, Event, EventError, Severity};
use super::validate::{is_extension_name, is_extension_value};
use super::AEP_VERSION;
use crate::time::UnixMs;

/// Crockford's base 32, as ULIDs spell it.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A ULID from a timestamp and 80 bits of caller-supplied randomness: 48
/// bits of milliseconds then the randomness, as 26 Crockford base-32
/// digits. (Written here rather than taken from the `ulid` crate, which
/// on wasm32 brings a JavaScript clock the engine must not depend on.)
pub fn ulid(now: UnixMs, random: u128) -> String {
    let mut value = (u128::from(now.0 & ((1 << 48) - 1)) << 80) | (random & ((1 << 80) - 1));
    let mut digits = [0u8; 26];
    for d in digits.iter_mut().rev() {
        *d = CROCKFORD[(value & 0x1f) as usize];
        value >>= 5;
    }
    digits.iter().map(|&b| char::from(b)).collect()
}

/// The recommended `source` form `aep://{host}/agent/{agent}[/session/{session}]`
/// (AEP-0001 §5.1 #6), with path-unsafe bytes percent-encoded.
pub fn source_uri(host: &str, agent: &str, session: Option<&str>) -> String {
    let mut s = format!("aep://{}/agent/{}", encode(host), encode(agent));
    if let Some(session) = session {
        s.push_str("/session/");
        s.push_str(&encode(session));
    }
    s
}

/// RFC 3986's unreserved characters stay; everything else is escaped, so
/// a name is safe in a URI path segment or a query value alike.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// Percent-encodes all but the unreserved characters.
pub fn encode(part: &str) -> String {
    utf8_percent_encode(part, UNRESERVED).to_string()
}

/// Who is emitting: the `source` and `agent` every built event carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub source: String,
    pub agent: String,
}

impl Identity {
    pub fn new(source: impl Into<String>, agent: impl Into<String>) -> Identity {
        Identity { source: source.into(), agent: agent.into() }
    }
}

/// Why a draft was not turned into an event.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BuildError {
    /// An extension attribute that AEP-0001 §5.4 forbids, refused at the
    /// producing boundary rather than emitted.
    #[error("extension attribute `{name}` refused: {reason}")]
    ExtensionRefused { name: String, reason: &'static str },
    /// The envelope would be invalid (e.g. a session event without `seq`).
    #[error(transparent)]
    Invalid(EventError),
}

/// An event under construction. Attributes are set by name; `build` stamps
/// `aep`, `id`, `time`, `source` and `agent` and validates the result.
#[derive(Clone, Debug, Default)]
pub struct Draft {
    ty: String,
    subject: Option<String>,
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
    extensions: Vec<(String, Value)>,
}

impl Draft {
    pub fn new(ty: impl Into<String>) -> Draft {
        Draft { ty: ty.into(), ..Draft::default() }
    }
    pub fn subject(mut self, v: impl Into<String>) -> Draft {
        self.subject = Some(v.into());
        self
    }
    pub fn session(mut self, v: impl Into<String>) -> Draft {
        self.session = Some(v.into());
        self
    }
    pub fn run(mut self, v: impl Into<String>) -> Draft {
        self.run = Some(v.into());
        self
    }
    pub fn maybe_run(mut self, v: Option<impl Into<String>>) -> Draft {
        self.run = v.map(Into::into);
        self
    }
    pub fn step(mut self, v: impl Into<String>) -> Draft {
        self.step = Some(v.into());
        self
    }
    pub fn seq(mut self, v: u64) -> Draft {
        self.seq = Some(v);
        self
    }
    pub fn epoch(mut self, v: u64) -> Draft {
        self.epoch = Some(v);
        self
    }
    pub fn cause(mut self, v: impl Into<String>) -> Draft {
        self.cause = Some(v.into());
        self
    }
    pub fn traceparent(mut self, v: impl Into<String>) -> Draft {
        self.traceparent = Some(v.into());
        self
    }
    pub fn severity(mut self, v: Severity) -> Draft {
        self.severity = Some(v);
        self
    }
    pub fn capture(mut self, v: Capture) -> Draft {
        self.capture = Some(v);
        self
    }
    /// The payload. A non-object value is ignored (payloads are objects).
    pub fn data(mut self, v: Value) -> Draft {
        if let Value::Object(m) = v {
            self.data = Some(m);
        }
        self
    }
    /// An extension attribute; checked against AEP-0001 §5.4 at `build`.
    pub fn extension(mut self, name: impl Into<String>, value: impl Into<Value>) -> Draft {
        self.extensions.push((name.into(), value.into()));
        self
    }

    pub fn ty(&self) -> &str {
        &self.ty
    }

    /// Stamps identity, id and time, then validates the envelope.
    pub fn build(self, who: &Identity, id: impl Into<String>, now: UnixMs) -> Result<Event, BuildError> {
        for (name, value) in &self.extensions {
            let reason = if Core::of(name).is_some() {
                Some("collides with a core attribute")
            } else if !is_extension_name(name) {
                Some("name must match [a-z0-9]{1,20}")
            } else if !is_extension_value(value) {
                Some("value must be a string, integer or boolean")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(BuildError::ExtensionRefused { name: name.clone(), reason });
            }
        }
        // Members in spec order, extensions and then `data` last.
        let mut m: Vec<(String, Value)> = Vec::with_capacity(18 + self.extensions.len());
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.push((k.to_owned(), v));
            }
        };
        let s = |v: Option<String>| v.map(Value::String);
        put("aep", Some(Value::from(AEP_VERSION)));
        put("id", Some(Value::String(id.into())));
        put("type", Some(Value::String(self.ty)));
        put("subject", s(self.subject));
        put("time", Some(Value::String(now.to_rfc3339())));
        put("source", Some(Value::String(who.source.clone())));
        put("agent", Some(Value::String(who.agent.clone())));
        put("session", s(self.session));
        put("run", s(self.run));
        put("step", s(self.step));
        put("seq", self.seq.map(Value::from));
        put("epoch", self.epoch.map(Value::from));
        put("cause", s(self.cause));
        put("traceparent", s(self.traceparent));
        put("severity", self.severity.map(|x| Value::from(x.as_str())));
        put("capture", self.capture.map(|x| Value::from(x.as_str())));
        m.extend(self.extensions);
        if let Some(d) = self.data {
            m.push(("data".into(), Value::Object(d)));
        }
        let text = serde_json::to_string(&InOrder(&m))
            .map_err(|e| BuildError::Invalid(EventError::Malformed(e.to_string())))?;
        Event::parse(&text).map_err(BuildError::Invalid)
    }
}

/// Object members serialised in the order given.
struct InOrder<'a>(&'a [(String, Value)]);

impl serde::Serialize for InOrder<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn me() -> Identity {
        Identity::new(source_uri("host a", "demo", None), "demo")
    }

    #[test]
    fn ulid_spells_what_the_ulid_crate_spells() {
        for (ms, random) in [(0, 0), (1_469_922_850_259, 0x0123_4567_89ab_cdef_0123), (u64::MAX, u128::MAX), (1_000, 7)]
        {
            assert_eq!(ulid(UnixMs(ms), random), ::ulid::Ulid::from_parts(ms, random).to_string());
        }
    }

    #[test]
    fn ulid_is_deterministic_and_time_sortable() {
        let a = ulid(UnixMs(1_000), 7);
        assert_eq!(a, ulid(UnixMs(1_000), 7));
        assert_eq!(a.len(), 26);
        assert!(ulid(UnixMs(2_000), 0) > ulid(UnixMs(1_000), u128::MAX));
    }

    #[test]
    fn source_uri_encodes() {
        assert_eq!(source_uri("host a", "demo", Some("s/1")), "aep://host%20a/agent/demo/session/s%2F1");
    }

    #[test]
    fn builds_valid_events_in_spec_order() {
        let e = Draft::new("run.started")
            .session("s1")
            .run("r1")
            .seq(3)
            .extension("acmeregion", "eu")
            .data(json!({"trigger": "user"}))
            .build(&me(), "E1", UnixMs(0))
            .unwrap();
        assert!(e
            .raw()
            .starts_with(r#"{"aep":"0.1","id":"E1","type":"run.started","time":"1970-01-01T00:00:00.000Z""#));
        assert_eq!(e.seq(), Some(3));
        assert_eq!(e.extensions().len(), 1);
    }

    #[test]
    fn refuses_bad_extensions_at_the_boundary() {
        for (name, value) in
            [("severity", json!("x")), ("Bad_Name", json!(1)), ("ok", json!({"a": 1})), ("ok", json!(1.5))]
        {
            let r = Draft::new("agent.heartbeat").extension(name, value).build(&me(), "E", UnixMs(0));
            assert!(matches!(r, Err(BuildError::ExtensionRefused { .. })), "{name}");
        }
    }

    #[test]
    fn refuses_invalid_envelopes() {
        let r = Draft::new("run.started").session("s").build(&me(), "E", UnixMs(0));
        assert!(matches!(r, Err(BuildError::Invalid(_))));
    }
}
