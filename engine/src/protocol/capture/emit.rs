//! Emission at a configured ceiling (AEP-0003 §9.1–9.5): the adapter's side
//! of the capture promise. A hook delivers full content; what leaves the
//! adapter holds only what its ceiling allows, with `capture` saying so.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::downlevel::{downlevel, prune};
use super::exception;
use super::redact::Redactor;
use crate::protocol::event::{type_category, Capture, Event};
use crate::protocol::validate::payload::schema::{self, Schema};

/// An adapter's capture ceiling: one level for every type, and overrides
/// for some types or categories (AEP-0003 §9.1).
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureCeiling {
    /// The level for types no override names.
    pub default: Capture,
    /// `(pattern, level)`, the pattern a type (`tool.completed`) or a
    /// prefix (`attention.*`). The most specific match wins: a type over a
    /// prefix, a longer prefix over a shorter one. A one-token prefix also
    /// covers the category in vendor types (`x.acme.attention.asked`).
    pub overrides: Vec<(String, Capture)>,
}

impl Default for CaptureCeiling {
    /// The spec's default, `metadata`, with its RECOMMENDED override:
    /// `attention.*` at `redacted`, so a person asked to approve something
    /// can read what it is.
    fn default() -> Self {
        CaptureCeiling { default: Capture::Metadata, overrides: vec![("attention.*".into(), Capture::Redacted)] }
    }
}

impl CaptureCeiling {
    /// One level for every type.
    pub fn uniform(level: Capture) -> Self {
        CaptureCeiling { default: level, overrides: Vec::new() }
    }

    /// The ceiling for events of type `ty`.
    pub fn level_for(&self, ty: &str) -> Capture {
        self.overrides
            .iter()
            .filter_map(|(pattern, level)| Some((specificity(pattern, ty)?, *level)))
            .max_by_key(|(rank, _)| *rank)
            .map_or(self.default, |(_, level)| level)
    }
}

fn specificity(pattern: &str, ty: &str) -> Option<usize> {
    if pattern == ty {
        return Some(usize::MAX);
    }
    let prefix = pattern.strip_suffix(".*")?;
    let under = ty.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('.')) || type_category(ty) == prefix;
    under.then_some(prefix.len())
}

/// Emits an adapter's draft at its ceiling.
///
/// The draft holds what the hook delivered and counts as `full` whatever
/// its `capture` says: a draft that forgot to declare its level must not
/// pass as `metadata`. In order:
///
/// 1. `X_digest` members the schema names are computed from `X` when the
///    draft has `X` but no digest: before anything is redacted (§9.3).
/// 2. At `redacted`, `X_redacted` members are filled from `X` likewise,
///    every field above `redacted` is dropped, and every `redacted` field,
///    and every `[metadata*]` field that may hold real text at this level
///    (the attention prompt, labels, form answers), passes the pipeline.
/// 3. Below `redacted` the event is down-leveled (`prompt` synthesized,
///    labels replaced by ids); at `full` it is kept whole.
///
/// The result's `capture` is the level honoured (§9.5). A type without a
/// schema has no `redacted` fields to keep, so at `redacted` its payload
/// goes and it lands on `metadata`, as a hop's down-level does.
pub fn emit_at_ceiling(draft: &Event, ceiling: &CaptureCeiling, redactor: &Redactor) -> Event {
    let level = ceiling.level_for(draft.ty());
    let schema = schema::lookup(draft.ty());
    let mut data = draft.data().cloned();
    if let (Some(schema), Some(data)) = (schema, data.as_mut()) {
        fill_siblings(schema, data, "_digest", content_digest_value);
    }
    match (level, schema, data) {
        (Capture::Redacted, Some(schema), Some(mut data)) => {
            fill_siblings(schema, &mut data, "_redacted", Value::clone);
            let mut kept = Value::Object(prune(schema, &data, Capture::Redacted));
            redact_field(draft.ty(), schema, &mut kept, &mut Vec::new(), redactor);
            let Value::Object(kept) = kept else { unreachable!("an object stays an object") };
            draft.with_payload(Some(kept), Capture::Redacted)
        }
        (_, _, data) => downlevel(&draft.with_payload(data, Capture::Full), level),
    }
}

/// Fills each `{base}{suffix}` member the schema names, where the payload
/// has `base` and not the member, with `derive(base)`.
fn fill_siblings(schema: &Schema, data: &mut Map<String, Value>, suffix: &str, derive: fn(&Value) -> Value) {
    for property in schema.properties {
        let Some(base) = property.name.strip_suffix(suffix) else {
            continue;
        };
        if data.contains_key(property.name) || schema.property(base).is_none() {
            continue;
        }
        if let Some(value) = data.get(base).map(derive) {
            data.insert(property.name.to_owned(), value);
        }
    }
}

/// Passes every field that may hold free text at `redacted` through the
/// pipeline. `path` names the members from the payload root, arrays
/// looked through, as the `[metadata*]` list names them.
fn redact_field<'a>(ty: &str, field: &Schema, value: &'a mut Value, path: &mut Vec<&'a str>, redactor: &Redactor) {
    if field.capture == Some(Capture::Redacted) || exception::is_exception(ty, path) {
        *value = redactor.redact_value(value);
        return;
    }
    match value {
        Value::Object(members) => {
            for (name, member) in members.iter_mut() {
                if let Some(member_schema) = field.property(name) {
                    path.push(name);
                    redact_field(ty, member_schema, member, path, redactor);
                    path.pop();
                }
            }
        }
        Value::Array(list) => {
            if let Some(items) = field.items {
                for item in list {
                    redact_field(ty, items, item, path, redactor);
                }
            }
        }
        _ => {}
    }
}

/// The `*_digest` of content (AEP-0003 §9.3): SHA-256 over the content's
/// canonical JSON, the first 16 bytes in lowercase hex. Two events
/// carrying the same content share the digest, which says nothing of the
/// content itself.
pub fn content_digest(content: &Value) -> String {
    let mut json = String::new();
    canonical_json(content, &mut json);
    Sha256::digest(json.as_bytes())[..16].iter().map(|b| format!("{b:02x}")).collect()
}

fn content_digest_value(content: &Value) -> Value {
    Value::String(content_digest(content))
}

/// Canonical JSON as RFC 8785 writes it: no whitespace, members sorted by
/// their UTF-16 code units, numbers as ECMAScript prints them, strings as
/// serde_json escapes them (which is the same escaping).
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(members) => {
            let mut names: Vec<&String> = members.keys().collect();
            names.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, name) in names.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(name.as_str()).to_string());
                out.push(':');
                canonical_json(&members[name], out);
            }
            out.push('}');
        }
        Value::Array(list) => {
            out.push('[');
            for (i, item) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        Value::Number(n) if n.is_f64() => out.push_str(&es_number(n.as_f64().unwrap_or_default())),
        other => out.push_str(&other.to_string()),
    }
}

/// A float as ECMAScript's Number::toString prints it, from the shortest
/// round-trip digits serde_json finds.
fn es_number(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return "0".to_owned();
    }
    let shortest = Value::from(f.abs()).to_string();
    let (mantissa, exponent) = shortest.split_once(['e', 'E']).unwrap_or((&shortest, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{int}{frac}");
    let trimmed = all.trim_end_matches('0');
    let digits = trimmed.trim_start_matches('0');
    // value = digits × 10^(n - k), as ECMA-262 Number::toString names them.
    let k = digits.len() as i32;
    let n = exponent - frac.len() as i32 + (all.len() - trimmed.len()) as i32 + k;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat(-n as usize))
    } else {
        let sign = if n - 1 < 0 { '-' } else { '+' };
        let rest = if k > 1 { format!(".{}", &digits[1..]) } else { String::new() };
        format!("{}{rest}e{sign}{}", &digits[..1], (n - 1).abs())
    };
    if f < 0.0 {
        format!("-{body}")
    } else {
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::capture::RedactOptions;
    use serde_json::json;

    const COMMAND: &str = "curl -H 'Authorization: Bearer abc123.DEF-456' https://api.test && API_KEY=sk_live_abcdef123456 ./deploy.sh /home/op/app";

    fn draft(ty: &str, subject: &str, data: Value) -> Event {
        Event::from_value(
            json!({"aep": "0.1", "id": "E1", "type": ty, "subject": subject, "time": "2026-07-03T10:00:00Z",
            "source": "aep://h/agent/a", "agent": "bot", "session": "s1", "seq": 1, "data": data}),
        )
        .unwrap()
    }

    fn approval() -> Event {
        draft(
            "attention.requested",
            "Bash",
            json!({"kind": "permission", "prompt": format!("Allow Bash: {COMMAND}"), "context": {"cwd": "/home/op/app"},
                   "options": [{"id": "1", "label": "Yes, and don't ask about ops@example.com again"}]}),
        )
    }

    fn redactor() -> Redactor {
        Redactor::new(RedactOptions { home: Some("/home/op".into()), ..RedactOptions::default() })
    }

    fn emit(event: &Event, ceiling: &CaptureCeiling) -> Event {
        let out = emit_at_ceiling(event, ceiling, &redactor());
        let again = Event::parse(out.raw()).unwrap();
        assert_eq!(again.check_payload(), vec![], "{}", out.raw());
        out
    }

    #[test]
    fn attention_at_redacted_keeps_the_command_without_its_secrets() {
        let out = emit(&approval(), &CaptureCeiling::default());
        assert_eq!(out.capture(), Capture::Redacted);
        let prompt = out.data_field("prompt").and_then(Value::as_str).unwrap();
        assert_eq!(
            prompt,
            "Allow Bash: curl -H 'Authorization: Bearer [REDACTED:secret] https://api.test && API_KEY=[REDACTED:secret] ./deploy.sh ~/app"
        );
        assert_eq!(
            out.data_field("options"),
            Some(&json!([{"id": "1", "label": "Yes, and don't ask about [REDACTED:pii] again"}]))
        );
        assert!(out.data_field("context").is_none(), "`context` is full content");
    }

    #[test]
    fn attention_at_metadata_synthesizes_the_prompt() {
        let out = emit(&approval(), &CaptureCeiling::uniform(Capture::Metadata));
        assert_eq!(out.capture(), Capture::Metadata);
        assert_eq!(
            Value::Object(out.data().unwrap().clone()),
            json!({"kind": "permission", "prompt": "bot requests permission: Bash", "options": [{"id": "1", "label": "1"}]})
        );
    }

    #[test]
    fn full_keeps_everything() {
        let event = approval();
        let out = emit(&event, &CaptureCeiling::uniform(Capture::Full));
        assert_eq!(out.capture(), Capture::Full);
        assert_eq!(out.data(), event.data());
    }

    #[test]
    fn digests_come_from_the_original_content() {
        let result = json!({"stdout": format!("token={COMMAND}")});
        let event =
            draft("tool.completed", "Bash", json!({"tool": {"name": "Bash"}, "status": "success", "result": result}));
        let digest = Value::from(content_digest(&result));

        let out = emit(&event, &CaptureCeiling::default());
        assert_eq!(out.capture(), Capture::Metadata);
        assert_eq!(
            Value::Object(out.data().unwrap().clone()),
            json!({"tool": {"name": "Bash"}, "status": "success", "result_digest": digest})
        );

        let out = emit(&event, &CaptureCeiling::uniform(Capture::Redacted));
        assert_eq!(out.capture(), Capture::Redacted);
        assert_eq!(out.data_field("result_digest"), Some(&digest));
        assert_eq!(
            out.data_field("result_redacted"),
            Some(
                &json!({"stdout": "token=[REDACTED:secret] -H 'Authorization: Bearer [REDACTED:secret] https://api.test && API_KEY=[REDACTED:secret] ./deploy.sh ~/app"})
            )
        );
        assert!(out.data_field("result").is_none());
    }

    #[test]
    fn an_undeclared_draft_is_not_taken_for_metadata() {
        let event = draft(
            "tool.completed",
            "Bash",
            json!({"tool": {"name": "Bash"}, "status": "success", "result": "secret output"}),
        );
        assert_eq!(event.capture_declared(), None);
        let out = emit(&event, &CaptureCeiling::default());
        assert!(out.data_field("result").is_none());
        assert_eq!(out.capture_declared(), Some(Capture::Metadata));
    }

    #[test]
    fn vendor_types_at_redacted_land_on_metadata() {
        let out =
            emit(&draft("x.acme.tool.ran", "t", json!({"result": "x"})), &CaptureCeiling::uniform(Capture::Redacted));
        assert_eq!(out.capture(), Capture::Metadata);
        assert!(out.data().is_none());
    }

    #[test]
    fn the_most_specific_override_wins() {
        let ceiling = CaptureCeiling {
            default: Capture::Metadata,
            overrides: vec![
                ("tool.*".into(), Capture::None),
                ("attention.*".into(), Capture::Redacted),
                ("tool.completed".into(), Capture::Full),
            ],
        };
        assert_eq!(ceiling.level_for("tool.completed"), Capture::Full);
        assert_eq!(ceiling.level_for("tool.requested"), Capture::None);
        assert_eq!(ceiling.level_for("x.acme.attention.asked"), Capture::Redacted);
        assert_eq!(ceiling.level_for("toolbox.opened"), Capture::Metadata);
        assert_eq!(ceiling.level_for("session.started"), Capture::Metadata);
    }

    #[test]
    fn canonical_json_sorts_members_and_prints_numbers_as_ecmascript() {
        let mut out = String::new();
        canonical_json(&json!({"b": [1.0, 1e21, 1.5e-7, 0.000001, -2.5, 123456.789], "a": "é\n", "A": null}), &mut out);
        assert_eq!(out, r#"{"A":null,"a":"é\n","b":[1,1e+21,1.5e-7,0.000001,-2.5,123456.789]}"#);
        // sha256("\"abc\"") = 6cc43f858fbb763301637b5af970e2a4...
        assert_eq!(content_digest(&json!("abc")), "6cc43f858fbb763301637b5af970e2a4");
    }
}
