//! Validation with stable rule ids.
//!
//! [`envelope`] mirrors `aep-event.schema.json` and the scoping rules of
//! AEP-0001 §5.2 / AEP-0004 §2.2. Payload and cross-event (stream) rules
//! live in [`payload`] and [`stream`]. Each failure is a [`Violation`] whose
//! `rule` is a stable, dotted identifier a caller may match on.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use super::event::{is_agent_scoped_type, is_foreign_emitter_type, Capture, Severity, CORE_ATTRIBUTES};
use super::AEP_VERSION;

pub mod payload;
pub mod stream;

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Stable rule id, e.g. `envelope.scope.agent`.
    pub rule: &'static str,
    /// What was wrong, for people.
    pub detail: String,
}

impl Violation {
    pub fn new(rule: &'static str, detail: impl Into<String>) -> Violation {
        Violation { rule, detail: detail.into() }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.rule, self.detail)
    }
}

/// The thirteen registered categories (AEP-0002 §3).
pub const CATEGORIES: [&str; 13] = [
    "agent", "session", "run", "progress", "tool", "delegation", "attention", "resource", "error", "state",
    "assessment", "message", "control",
];

/// Envelope rules (AEP-0001 §5–§8, AEP-0004 §2.2). Returns every violation.
pub fn envelope(obj: &Map<String, Value>) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut bad = |rule: &'static str, detail: String| out.push(Violation::new(rule, detail));

    for key in ["aep", "id", "type", "time", "source", "agent"] {
        if !obj.contains_key(key) {
            bad("envelope.required", format!("`{key}` is required"));
        }
    }
    match obj.get("aep") {
        Some(Value::String(v)) if v == AEP_VERSION => {}
        Some(v) => bad("envelope.aep-version", format!("`aep` must be \"{AEP_VERSION}\", got {v}")),
        None => {}
    }
    for key in ["id", "subject", "time", "source", "agent", "session", "run", "step", "cause"] {
        match obj.get(key) {
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(Value::String(_)) => bad("envelope.string", format!("`{key}` must not be empty")),
            Some(v) => bad("envelope.string", format!("`{key}` must be a string, got {}", kind(v))),
            None => {}
        }
    }
    let ty = match obj.get("type") {
        Some(Value::String(t)) => {
            if let Err(why) = check_type_name(t) {
                bad(why.0, format!("type `{t}`: {}", why.1));
            }
            Some(t.as_str())
        }
        Some(v) => {
            bad("envelope.type", format!("`type` must be a string, got {}", kind(v)));
            None
        }
        None => None,
    };
    if let Some(Value::String(t)) = obj.get("time") {
        if crate::time::UnixMs::parse_rfc3339(t).is_none() && !t.is_empty() {
            bad("envelope.time", format!("`time` is not an RFC 3339 date-time: {t}"));
        }
    }
    if let Some(Value::String(s)) = obj.get("source") {
        if !s.is_empty() && !is_uri(s) {
            bad("envelope.source", format!("`source` is not a URI: {s}"));
        }
    }
    for key in ["seq", "epoch"] {
        match obj.get(key) {
            None => {}
            Some(v) if v.as_u64().is_some() => {}
            Some(v) => bad(
                if key == "seq" { "envelope.seq" } else { "envelope.epoch" },
                format!("`{key}` must be an integer >= 0, got {v}"),
            ),
        }
    }
    match obj.get("severity") {
        None => {}
        Some(Value::String(s)) if Severity::parse(s).is_some() => {}
        Some(v) => bad("envelope.severity", format!("unknown severity {v}")),
    }
    match obj.get("capture") {
        None => {}
        Some(Value::String(s)) if Capture::parse(s).is_some() => {}
        Some(v) => bad("envelope.capture", format!("unknown capture level {v}")),
    }
    match obj.get("traceparent") {
        None => {}
        Some(Value::String(s)) if is_traceparent(s) => {}
        Some(v) => bad("envelope.traceparent", format!("malformed traceparent {v}")),
    }
    match obj.get("data") {
        None | Some(Value::Object(_)) => {}
        Some(v) => bad("envelope.data", format!("`data` must be an object, got {}", kind(v))),
    }
    for (name, value) in obj {
        if CORE_ATTRIBUTES.contains(&name.as_str()) {
            continue;
        }
        if !is_extension_name(name) {
            bad("envelope.extension-name", format!("attribute name `{name}` is not [a-z0-9]{{1,20}}"));
        }
        if !is_extension_value(value) {
            bad("envelope.extension-value", format!("extension `{name}` must be a string, integer or boolean"));
        }
    }

    if let Some(t) = ty {
        let has = |k: &str| obj.contains_key(k);
        if is_agent_scoped_type(t) {
            for k in ["session", "run", "step", "seq"] {
                if has(k) {
                    bad("envelope.scope.agent", format!("agent-scoped `{t}` must omit `{k}`"));
                }
            }
        } else if is_foreign_emitter_type(t) {
            if !has("session") {
                bad("envelope.scope.foreign", format!("`{t}` must carry `session`"));
            }
            if has("seq") {
                bad("envelope.scope.foreign", format!("`{t}` is foreign-emitter and must omit `seq`"));
            }
        } else {
            for k in ["session", "seq"] {
                if !has(k) {
                    bad("envelope.scope.session", format!("session-scoped `{t}` must carry `{k}`"));
                }
            }
        }
    }
    out
}

/// Every rule that applies to one event on its own: the envelope, then
/// the payload ([`payload::check_payload`]). Cross-event rules live in
/// [`stream`].
pub fn event(value: &Value) -> Vec<Violation> {
    let Value::Object(obj) = value else {
        return vec![Violation::new("envelope.object", format!("an event is a JSON object, got {}", kind(value)))];
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
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    let parts: Vec<&str> = t.split('.').collect();
    if parts[0] == "x" {
        let vendor_ok = parts
            .get(1)
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'));
        if parts.len() < 4 || !vendor_ok || !parts[2..].iter().all(|p| token(p)) {
            return Err(("envelope.type", "vendor types are x.{vendor}.{category}.{rest}"));
        }
        return Ok(());
    }
    if parts.len() < 2 || !parts.iter().all(|p| token(p)) {
        return Err(("envelope.type", "types are lowercase {category}.{rest}"));
    }
    if !CATEGORIES.contains(&parts[0]) {
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

/// W3C `traceparent`: `vv-{32 hex}-{16 hex}-ff`, lowercase.
pub fn is_traceparent(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    parts.len() == 4 && hex(parts[0], 2) && hex(parts[1], 32) && hex(parts[2], 16) && hex(parts[3], 2)
}

/// An absolute URI: a scheme, a colon, and no whitespace or control bytes.
pub fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else { return false };
    let mut sb = scheme.bytes();
    sb.next().is_some_and(|b| b.is_ascii_alphabetic())
        && sb.all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
        && !rest.is_empty()
        && !s.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | '"' | '{' | '}' | '|' | '\\' | '^' | '`'))
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
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
        assert!(!is_uri("not a uri"));
        assert!(!is_uri("relative/path"));
        assert!(is_extension_name("acmeregion"));
        assert!(!is_extension_name("acme_region"));
        assert!(!is_extension_name("abcdefghijklmnopqrstu"));
    }
}
