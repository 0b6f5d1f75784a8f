//! Validation with stable rule ids.
//!
//! [`envelope`] mirrors `aep-event.schema.json` and the scoping rules of
//! AEP-0001 §5.2 / AEP-0004 §2.2. Payload rules live in [`payload`];
//! cross-event (stream) rules are the store's fold
//! (`store::validate::stream`). Each failure is a [`Violation`] whose
//! `rule` is a stable, dotted identifier a caller may match on.

use serde_json::{Map, Value};

use super::envelope::{as_u64, is_integer, kind as raw_kind, Core, Decoded, Envelope, Raw, Texts};
use super::kind::EventKind;
use super::vocabulary::{Capture, EventType, Severity};
use super::AEP_VERSION;
use crate::text::json_kind;
use crate::time::UnixMs;

pub mod payload;

pub use super::violation::Violation;

/// The thirteen registered categories (AEP-0002 §3).
pub const CATEGORIES: [&str; 13] = [
    "agent",
    "session",
    "run",
    "progress",
    "tool",
    "delegation",
    "attention",
    "resource",
    "error",
    "state",
    "assessment",
    "message",
    "control",
];

/// Envelope rules (AEP-0001 §5–§8, AEP-0004 §2.2) for an event already
/// held as a JSON value. Returns every violation.
pub fn envelope(obj: &Map<String, Value>) -> Vec<Violation> {
    let text = serde_json::to_string(obj).unwrap_or_default();
    match Envelope::parse(&text) {
        Ok(env) => check_envelope(&env),
        Err(e) => vec![Violation::new("envelope.object", e.to_string())],
    }
}

/// Envelope rules (AEP-0001 §5–§8, AEP-0004 §2.2) on the members as read
/// from the wire. Returns every violation.
pub fn check_envelope(env: &Envelope<'_>) -> Vec<Violation> {
    check_decoded(env, &Texts::of(env)).0
}

/// What [`check_decoded`] read on its way that the event keeps rather than
/// read again.
pub(crate) struct Read {
    /// `time`, when it parses.
    pub(crate) at: Option<UnixMs>,
    /// `type` looked up in the registry.
    pub(crate) core: Option<EventType>,
}

/// [`check_envelope`] on texts decoded already (see [`Texts`]). Also
/// returns what it read of `time` and `type`.
pub(crate) fn check_decoded(env: &Envelope<'_>, t: &Texts<'_>) -> (Vec<Violation>, Read) {
    let mut out = Vec::new();
    let mut bad = |rule: &'static str, detail: String| out.push(Violation::new(rule, detail));

    for core in [Core::Aep, Core::Id, Core::Type, Core::Time, Core::Source, Core::Agent] {
        if env.get(core).is_none() {
            bad("envelope.required", format!("`{}` is required", core.name()));
        }
    }
    if let (Some(v), Some(text)) = (env.get(Core::Aep), t.get(Core::Aep)) {
        if text.as_deref() != Some(AEP_VERSION) {
            bad("envelope.aep-version", format!("`aep` must be \"{AEP_VERSION}\", got {v}"));
        }
    }
    let strings = [
        Core::Id,
        Core::Subject,
        Core::Time,
        Core::Source,
        Core::Agent,
        Core::Session,
        Core::Run,
        Core::Step,
        Core::Cause,
    ];
    for core in strings {
        let key = core.name();
        match (env.get(core), t.get(core)) {
            (Some(_), Some(Some(s))) if !s.is_empty() => {}
            (Some(_), Some(Some(_))) => bad("envelope.string", format!("`{key}` must not be empty")),
            (Some(v), _) => bad("envelope.string", format!("`{key}` must be a string, got {}", raw_kind(v))),
            (None, _) => {}
        }
    }
    let ty = match (env.get(Core::Type), t.get(Core::Type)) {
        (Some(_), Some(Some(ty))) => {
            if let Err(why) = check_type_name(ty) {
                bad(why.0, format!("type `{ty}`: {}", why.1));
            }
            Some(ty.as_ref())
        }
        (Some(v), _) => {
            bad("envelope.type", format!("`type` must be a string, got {}", raw_kind(v)));
            None
        }
        (None, _) => None,
    };
    let mut at = None;
    if let Some(Some(time)) = t.get(Core::Time) {
        at = UnixMs::parse_rfc3339(time);
        if at.is_none() && !time.is_empty() {
            bad("envelope.time", format!("`time` is not an RFC 3339 date-time: {time}"));
        }
    }
    if let Some(Some(s)) = t.get(Core::Source) {
        if !s.is_empty() && !is_uri(s) {
            bad("envelope.source", format!("`source` is not a URI: {s}"));
        }
    }
    for (core, rule) in [(Core::Seq, "envelope.seq"), (Core::Epoch, "envelope.epoch")] {
        if let Some(v) = env.get(core).filter(|v| as_u64(*v).is_none()) {
            bad(rule, format!("`{}` must be an integer >= 0, got {v}", core.name()));
        }
    }
    if let Some(v) =
        env.get(Core::Severity).filter(|_| decoded(t.get(Core::Severity)).and_then(Severity::parse).is_none())
    {
        bad("envelope.severity", format!("unknown severity {v}"));
    }
    if let Some(v) = env.get(Core::Capture).filter(|_| decoded(t.get(Core::Capture)).and_then(Capture::parse).is_none())
    {
        bad("envelope.capture", format!("unknown capture level {v}"));
    }
    if let Some(v) =
        env.get(Core::Traceparent).filter(|_| !decoded(t.get(Core::Traceparent)).is_some_and(is_traceparent))
    {
        bad("envelope.traceparent", format!("malformed traceparent {v}"));
    }
    if let Some(v) = env.get(Core::Data).filter(|v| raw_kind(*v) != "object") {
        bad("envelope.data", format!("`data` must be an object, got {}", raw_kind(v)));
    }
    for (name, value) in &env.extensions {
        if !is_extension_name(name) {
            bad("envelope.extension-name", format!("attribute name `{name}` is not [a-z0-9]{{1,20}}"));
        }
        if !is_extension_raw(*value) {
            bad("envelope.extension-value", format!("extension `{name}` must be a string, integer or boolean"));
        }
    }

    let kind = ty.map(EventKind::of);
    if let Some(kind) = kind {
        let t = kind.as_str();
        if kind.is_agent_scoped() {
            for core in [Core::Session, Core::Run, Core::Step, Core::Seq].into_iter().filter(|c| env.get(*c).is_some())
            {
                bad("envelope.scope.agent", format!("agent-scoped `{t}` must omit `{}`", core.name()));
            }
        } else if kind.is_foreign_emitter() {
            if env.get(Core::Session).is_none() {
                bad("envelope.scope.foreign", format!("`{t}` must carry `session`"));
            }
            if env.get(Core::Seq).is_some() {
                bad("envelope.scope.foreign", format!("`{t}` is foreign-emitter and must omit `seq`"));
            }
        } else {
            for core in [Core::Session, Core::Seq] {
                if env.get(core).is_none() {
                    bad("envelope.scope.session", format!("session-scoped `{t}` must carry `{}`", core.name()));
                }
            }
        }
    }
    (out, Read { at, core: kind.and_then(EventKind::core) })
}

/// The text of a decoded member, when it is a string.
fn decoded<'s>(d: &'s Decoded<'_>) -> Option<&'s str> {
    d.as_ref().and_then(|x| x.as_deref())
}

/// Every rule that applies to one event on its own: the envelope, then
/// the payload ([`payload::check_payload`]). Cross-event rules are the
/// store's (`store::validate::stream`).
pub fn event(value: &Value) -> Vec<Violation> {
    let Value::Object(obj) = value else {
        return vec![Violation::new("envelope.object", format!("an event is a JSON object, got {}", json_kind(value)))];
    };
    let mut out = envelope(obj);
    if let Some(Value::String(ty)) = obj.get("type") {
        let data = obj.get("data").and_then(Value::as_object);
        // An unknown level is already an envelope violation; judge the
        // payload by the default then.
        let capture = obj.get("capture").and_then(Value::as_str).and_then(Capture::parse).unwrap_or_default();
        out.extend(payload::check_payload(ty, data, capture));
    }
    out
}

/// Type grammar (AEP-0001 §6): `{category}.{rest}` with a registered
/// category, or `x.{vendor}.{category}.{rest}`.
pub fn check_type_name(t: &str) -> Result<(), (&'static str, &'static str)> {
    // Byte by byte: every event's type is checked.
    let token =
        |s: &[u8]| !s.is_empty() && s.iter().all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    // How many parts follow, and whether all are tokens.
    let tail = |parts: &mut dyn Iterator<Item = &[u8]>| parts.fold((0, true), |(n, ok), p| (n + 1, ok && token(p)));
    let mut parts = t.as_bytes().split(|&b| b == b'.');
    let first = parts.next().unwrap_or_default();
    if first == b"x" {
        let vendor_ok = parts.next().is_some_and(|v| {
            !v.is_empty() && v.iter().all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        });
        let (rest, tokens) = tail(&mut parts);
        if rest < 2 || !vendor_ok || !tokens {
            return Err(("envelope.type", "vendor types are x.{vendor}.{category}.{rest}"));
        }
        return Ok(());
    }
    let (rest, tokens) = tail(&mut parts);
    if rest < 1 || !token(first) || !tokens {
        return Err(("envelope.type", "types are lowercase {category}.{rest}"));
    }
    if !CATEGORIES.iter().any(|c| c.as_bytes() == first) {
        return Err(("envelope.category", "category is not one of the thirteen registered categories"));
    }
    Ok(())
}

/// Extension attribute names: `[a-z0-9]{1,20}` (AEP-0001 §5.4).
pub fn is_extension_name(name: &str) -> bool {
    (1..=20).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Extension attribute values: string, integer or boolean.
pub fn is_extension_value(v: &Value) -> bool {
    match v {
        Value::String(_) | Value::Bool(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

/// [`is_extension_value`] for a value as read from the wire.
fn is_extension_raw(v: Raw<'_>) -> bool {
    matches!(raw_kind(v), "string" | "boolean") || is_integer(v)
}

/// W3C `traceparent`: `vv-{32 hex}-{16 hex}-ff`, lowercase.
pub fn is_traceparent(s: &str) -> bool {
    let hex = |p: Option<&str>, n: usize| {
        p.is_some_and(|p| p.len() == n && p.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    };
    let mut parts = s.split('-');
    hex(parts.next(), 2)
        && hex(parts.next(), 32)
        && hex(parts.next(), 16)
        && hex(parts.next(), 2)
        && parts.next().is_none()
}

/// An absolute URI: a scheme, a colon, and no whitespace or control bytes.
pub fn is_uri(s: &str) -> bool {
    let excluded = |c: char| {
        c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | '"' | '{' | '}' | '|' | '\\' | '^' | '`')
    };
    // Every event's source is checked: ASCII (nearly every source) by a
    // table of what the char tests say of each ASCII byte, the rest char
    // by char.
    const EXCLUDED_ASCII: [bool; 128] = {
        let mut t = [false; 128];
        let mut b = 0;
        while b < 128 {
            t[b] = b <= 0x20
                || b == 0x7f
                || matches!(b as u8, b'<' | b'>' | b'"' | b'{' | b'}' | b'|' | b'\\' | b'^' | b'`');
            b += 1;
        }
        t
    };
    let clean =
        match s
            .bytes()
            .try_fold((), |(), b| if b < 0x80 { (!EXCLUDED_ASCII[usize::from(b)]).then_some(()) } else { None })
        {
            Some(()) => true,
            None => !s.is_ascii() && !s.chars().any(excluded),
        };
    let Some(colon) = s.bytes().position(|b| b == b':') else { return false };
    let (scheme, rest) = (&s.as_bytes()[..colon], &s[colon + 1..]);
    scheme.first().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme[1..].iter().all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
        && !rest.is_empty()
        && clean
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_grammar() {
        assert!(check_type_name("tool.completed").is_ok());
        assert!(check_type_name("x.claude-code.session.config_change").is_ok());
        assert_eq!(check_type_name("x.acme.verb").unwrap_err().0, "envelope.type");
        assert_eq!(check_type_name("widget.made").unwrap_err().0, "envelope.category");
        assert_eq!(check_type_name("Tool.completed").unwrap_err().0, "envelope.type");
        assert_eq!(check_type_name("tool").unwrap_err().0, "envelope.type");
        assert_eq!(check_type_name("tool..x").unwrap_err().0, "envelope.type");
    }

    #[test]
    fn small_grammars() {
        assert!(is_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
        assert!(!is_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));
        assert!(is_uri("aep://h/agent/a"));
        for b in 0u8..128 {
            let c = char::from(b);
            let by_char = !(c.is_whitespace() || c.is_control() || "<>\"{}|\\^`".contains(c));
            assert_eq!(is_uri(&format!("aep://h/{c}x")), by_char, "byte {b:#x}");
        }
        assert!(!is_uri("aep://h/\u{a0}x") && is_uri("aep://h/é"));
        assert!(!is_uri("not a uri"));
        assert!(!is_uri("relative/path"));
        assert!(is_extension_name("acmeregion"));
        assert!(!is_extension_name("acme_region"));
        assert!(!is_extension_name("abcdefghijklmnopqrstu"));
    }
}
