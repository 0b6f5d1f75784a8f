//! Payload (`data`) rules: the per-type schemas of AEP-0002 §5 (including
//! the AEP-0006 `field_spec` rule that a `select` field carries `choices`,
//! an `if`/`then` in the schema), and capture honesty (AEP-0001 §8.2(a)).
//!
//! Only types with a registered schema are checked: vendor and unknown types
//! are carried untouched (AEP-0001 §6), never rejected for their payload.

use serde_json::{Map, Value};

use crate::protocol::violation::Violation;
use crate::protocol::vocabulary::Capture;
use crate::text::{json_kind as kind, number, quote};

pub mod schema;

use schema::{Format, Schema};

/// Checks `data` against the payload schema of `ty`. Unknown and vendor
/// types pass, and so does an absent payload (the envelope-only form; see
/// [`check_payload`] for when that is itself a violation).
pub fn check(ty: &str, data: Option<&Map<String, Value>>) -> Vec<Violation> {
    let mut out = Vec::new();
    if let (Some(schema), Some(data)) = (schema::lookup(ty), data) {
        // The root goes through the same path as nested objects, so a
        // root-level `if`/`then` applies too.
        check_value(schema, &Value::Object(data.clone()), "data", &mut out);
    }
    out
}

/// All payload rules for one event's parts (an event's own are
/// `Event::check_payload`): schema, capture honesty, and a missing payload
/// where the type requires members.
pub fn check_payload(ty: &str, data: Option<&Map<String, Value>>, capture: Capture) -> Vec<Violation> {
    let mut out = check(ty, data);
    match data {
        Some(data) => check_capture(ty, data, capture, &mut out),
        // At `none` the payload is gone by definition; above it, a type's
        // required members cannot be present without one.
        None if capture > Capture::None => {
            if let Some(required) = schema::lookup(ty).map(|s| s.required).filter(|r| !r.is_empty()) {
                out.push(Violation::new(
                    "payload.required",
                    format!("`{ty}` at capture {} needs `data` with {}", capture.as_str(), quoted(required)),
                ));
            }
        }
        None => {}
    }
    out
}

/// AEP-0001 §8.2(a) / AEP-0002 §5.1 rule 1: no field above the declared
/// capture level, and no payload content at all at `none`.
fn check_capture(ty: &str, data: &Map<String, Value>, capture: Capture, out: &mut Vec<Violation>) {
    if capture == Capture::None {
        if !data.is_empty() {
            out.push(Violation::new("payload.capture", "capture `none` is envelope only, but `data` has members"));
        }
        return;
    }
    if let Some(schema) = schema::lookup(ty) {
        honest_members(schema, data, "data", capture, out);
    }
}

fn honest_members(schema: &Schema, data: &Map<String, Value>, path: &str, capture: Capture, out: &mut Vec<Violation>) {
    for (name, value) in data {
        let Some(field) = schema.property(name) else { continue };
        let at = member_path(path, name);
        let level = field.capture.unwrap_or_default();
        if level > capture {
            out.push(Violation::new(
                "payload.capture",
                format!("{at} is gated `{}` but the event declares capture `{}`", level.as_str(), capture.as_str()),
            ));
            continue;
        }
        honest_value(field, value, &at, capture, out);
    }
}

fn honest_value(schema: &Schema, value: &Value, path: &str, capture: Capture, out: &mut Vec<Violation>) {
    match value {
        Value::Object(m) => honest_members(schema, m, path, capture, out),
        Value::Array(list) => {
            let Some(items) = schema.items else { return };
            for (i, item) in list.iter().enumerate() {
                honest_value(items, item, &format!("{path}[{i}]"), capture, out);
            }
        }
        _ => {}
    }
}

fn check_value(schema: &Schema, value: &Value, path: &str, out: &mut Vec<Violation>) {
    if !schema.kinds.admits(value) {
        out.push(Violation::new(
            "payload.type",
            format!("{path} must be {}, got {}", schema.kinds.describe(), kind(value)),
        ));
        return;
    }
    if let Some(allowed) = schema.allowed {
        if !allowed.iter().any(|l| l.matches(value)) {
            let list: Vec<String> = allowed.iter().map(ToString::to_string).collect();
            out.push(Violation::new("payload.enum", format!("{path} must be one of {}, got {value}", list.join(", "))));
        }
    }
    if let Some(constant) = schema.constant {
        if !constant.matches(value) {
            out.push(Violation::new("payload.const", format!("{path} must be {constant}, got {value}")));
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = schema.minimum.filter(|min| n < *min) {
            out.push(Violation::new("payload.minimum", format!("{path} must be >= {}, got {value}", number(min))));
        }
        if let Some(max) = schema.maximum.filter(|max| n > *max) {
            out.push(Violation::new("payload.maximum", format!("{path} must be <= {}, got {value}", number(max))));
        }
    }
    if let (Some(format), Value::String(s)) = (schema.format, value) {
        if !conforms_to_format(format, s) {
            out.push(Violation::new("payload.format", format!("{path} is not an RFC 3339 date-time: {}", quote(s))));
        }
    }
    match value {
        Value::Object(members) => check_members(schema, members, path, out),
        Value::Array(list) => {
            if let Some(items) = schema.items {
                for (i, item) in list.iter().enumerate() {
                    check_value(items, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
    if let Some((condition, then)) = schema.conditional {
        if conforms(condition, value) {
            check_value(then, value, path, out);
        }
    }
}

fn check_members(schema: &Schema, members: &Map<String, Value>, path: &str, out: &mut Vec<Violation>) {
    for name in schema.required {
        if !members.contains_key(*name) {
            out.push(Violation::new("payload.required", format!("{} is required", member_path(path, name))));
        }
    }
    for (name, value) in members {
        // Members the schema does not name are vendor fields: carried.
        if let Some(field) = schema.property(name) {
            check_value(field, value, &member_path(path, name), out);
        }
    }
}

/// Whether a value passes a schema (used for `if`, whose failures are not
/// violations).
fn conforms(schema: &Schema, value: &Value) -> bool {
    let mut scratch = Vec::new();
    check_value(schema, value, "", &mut scratch);
    scratch.is_empty()
}

fn conforms_to_format(format: Format, s: &str) -> bool {
    match format {
        Format::DateTime => ::time::OffsetDateTime::parse(s, &::time::format_description::well_known::Rfc3339).is_ok(),
    }
}

/// `data.tool.name`, or `data["gen_ai.usage.input_tokens"]` when the name
/// would read as a path itself.
fn member_path(parent: &str, name: &str) -> String {
    let plain = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        format!("{parent}.{name}")
    } else {
        format!("{parent}[{}]", quote(name))
    }
}

fn quoted(names: &[&str]) -> String {
    let list: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    list.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("test payload must be an object, got {other}"),
        }
    }

    fn rules(ty: &str, v: Value) -> Vec<(&'static str, String)> {
        check(ty, Some(&data(v))).into_iter().map(|x| (x.rule, x.detail)).collect()
    }

    #[test]
    fn valid_payload_passes() {
        assert!(rules("tool.completed", json!({"tool": {"name": "Bash"}, "duration_ms": 12, "result": "x"})).is_empty());
    }

    #[test]
    fn wrong_kind_is_reported_with_its_path() {
        let v = rules("session.compacted", json!({"estimated_token_count": "lots"}));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].0, "payload.type");
        assert!(v[0].1.starts_with("data.estimated_token_count must be integer"), "{}", v[0].1);
    }

    #[test]
    fn integer_accepts_whole_floats_and_rejects_fractions() {
        assert!(rules("session.ended", json!({"runs": 3.0})).is_empty());
        assert_eq!(rules("session.ended", json!({"runs": 3.5}))[0].0, "payload.type");
    }

    #[test]
    fn union_types_admit_each_member() {
        assert!(rules("tool.completed", json!({"tool": {"name": "a"}, "result": {"k": 1}})).is_empty());
        let v = rules("tool.completed", json!({"tool": {"name": "a"}, "result": 7}));
        assert_eq!(v[0].0, "payload.type");
        assert!(v[0].1.contains("object or string"), "{}", v[0].1);
    }

    #[test]
    fn enum_required_minimum_maximum() {
        assert_eq!(rules("agent.presence", json!({"state": "sleeping"}))[0].0, "payload.enum");
        let v = rules("agent.presence", json!({"detail": "up"}));
        assert_eq!(v, vec![("payload.required", "data.state is required".to_owned())]);
        assert_eq!(rules("progress.status", json!({"percent": -1}))[0].0, "payload.minimum");
        assert_eq!(rules("progress.status", json!({"percent": 100.5}))[0].0, "payload.maximum");
        assert!(rules("progress.status", json!({"percent": 100})).is_empty());
    }

    #[test]
    fn nested_required_and_dotted_names() {
        let v = rules("run.finished", json!({"cost": {"total": 1.5}, "gen_ai.usage.input_tokens": -2}));
        let got: Vec<&str> = v.iter().map(|x| x.0).collect();
        assert_eq!(got, ["payload.required", "payload.minimum"], "{v:?}");
        assert_eq!(v[0].1, "data.cost.currency is required");
        assert!(v[1].1.starts_with("data[\"gen_ai.usage.input_tokens\"]"), "{}", v[1].1);
    }

    #[test]
    fn array_items_are_checked() {
        let v =
            rules("attention.requested", json!({"kind": "input", "prompt": "p", "respond_via": ["control", "pigeon"]}));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].0, "payload.enum");
        assert!(v[0].1.starts_with("data.respond_via[1]"), "{}", v[0].1);
    }

    #[test]
    fn date_time_format() {
        let ok = json!({"kind": "input", "prompt": "p", "expires_at": "2026-07-03T10:00:00Z"});
        assert!(rules("attention.requested", ok).is_empty());
        let bad = json!({"kind": "input", "prompt": "p", "expires_at": "tomorrow"});
        assert_eq!(rules("attention.requested", bad)[0].0, "payload.format");
    }

    #[test]
    fn select_field_requires_choices() {
        let form = |field: Value| json!({"kind": "form", "prompt": "p", "fields": [field]});
        let v = rules("attention.requested", form(json!({"id": "db", "type": "select", "label": "DB"})));
        assert_eq!(v, vec![("payload.required", "data.fields[0].choices is required".to_owned())]);
        let with_choices = json!({"id": "db", "type": "select", "label": "DB", "choices": [{"id": "1", "label": "A"}]});
        assert!(rules("attention.requested", form(with_choices)).is_empty());
        // The condition is on `type`: other field types need no choices.
        assert!(rules("attention.requested", form(json!({"id": "n", "type": "string", "label": "N"}))).is_empty());
    }

    #[test]
    fn unknown_and_vendor_types_are_carried() {
        assert!(rules("x.acme.tool.ran", json!({"anything": [1, 2]})).is_empty());
        assert!(rules("message.agent.replied", json!({"text": 5})).is_empty());
    }

    #[test]
    fn unknown_members_of_known_types_are_carried() {
        assert!(rules("tool.completed", json!({"tool": {"name": "a", "acme": {"deep": true}}, "acme": 1})).is_empty());
    }

    #[test]
    fn absent_payload_depends_on_capture() {
        assert!(check("tool.completed", None).is_empty());
        assert!(check_payload("tool.completed", None, Capture::None).is_empty());
        let v = check_payload("tool.completed", None, Capture::Metadata);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].rule, "payload.required");
        assert!(check_payload("control.accepted", None, Capture::Metadata).is_empty());
    }

    #[test]
    fn capture_honesty() {
        let d = data(json!({"tool": {"name": "Bash"}, "result": "verbatim", "result_redacted": "r"}));
        let v = check_payload("tool.completed", Some(&d), Capture::Redacted);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].rule, "payload.capture");
        assert!(v[0].detail.starts_with("data.result "), "{}", v[0].detail);
        assert!(check_payload("tool.completed", Some(&d), Capture::Full).is_empty());

        let nested = data(json!({"tool": {"name": "a"}, "error": {"type": "E", "message": "secret"}}));
        let v = check_payload("tool.failed", Some(&nested), Capture::Metadata);
        assert_eq!(
            v.iter().map(|x| x.detail.split(' ').next().unwrap_or("")).collect::<Vec<_>>(),
            ["data.error.message"]
        );

        let docs = data(json!({"documents": [{"id": "d"}, {"id": "e", "content": "text"}]}));
        let v = check_payload("resource.retrieval.returned", Some(&docs), Capture::Redacted);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.starts_with("data.documents[1].content "), "{}", v[0].detail);

        let any = data(json!({"x": 1}));
        assert_eq!(check_payload("x.acme.tool.ran", Some(&any), Capture::None)[0].rule, "payload.capture");
        assert!(check_payload("x.acme.tool.ran", Some(&Map::new()), Capture::None).is_empty());
    }

    #[test]
    fn one_event_value_gets_envelope_and_payload_rules() {
        let v = super::super::event(&json!([1]));
        assert_eq!(v[0].rule, "envelope.object");
        let bad_both = json!({"aep": "0.1", "id": "E", "type": "agent.presence", "time": "2026-07-03T10:00:00Z",
            "source": "aep://h/agent/a", "agent": "a", "seq": 1, "data": {"state": "sleeping"}});
        let rules: Vec<&str> = super::super::event(&bad_both).iter().map(|x| x.rule).collect();
        assert_eq!(rules, ["envelope.scope.agent", "payload.enum"]);
    }

    #[test]
    fn table_has_the_registered_types() {
        assert!(schema::lookup("attention.requested").is_some());
        assert!(schema::lookup("x.acme.tool.ran").is_none());
        let names: Vec<&str> = schema::types().collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]), "lookup needs the table sorted");
    }
}
