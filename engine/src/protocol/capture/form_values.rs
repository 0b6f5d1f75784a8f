//! Capture gating of form answers (AEP-0006, AEP-0002 §5.3
//! `attention.answered`): whether a value in `answer.values` is content
//! depends on the type of the field it answers, which only the request's
//! field specs know.

use serde_json::{Map, Value};

use crate::protocol::event::Capture;

/// What an answer value is, given the field it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValueClass {
    /// Numbers, booleans, closed-select choice ids: structure, `metadata`.
    Structural,
    /// A string field's text, or `other` free text on a select: user-authored,
    /// `redacted` minimum like `answer.text`.
    FreeText,
}

/// The `values` an emitter may carry at `ceiling`, given the request's
/// `fields` (its `field_spec` objects).
///
/// Below `redacted` only structural values survive. Keys that answer no
/// field are dropped at every level: nothing says what they are. Dropping
/// the whole payload at `none` is the down-level's job, not this one's.
pub fn gate_form_values(fields: &[Value], values: &Map<String, Value>, ceiling: Capture) -> Map<String, Value> {
    let mut kept = Map::new();
    for (id, value) in values {
        let Some(field) = fields.iter().find(|f| f.get("id").and_then(Value::as_str) == Some(id.as_str())) else {
            continue;
        };
        if ceiling >= Capture::Redacted || classify(field, value) == ValueClass::Structural {
            kept.insert(id.clone(), value.clone());
        }
    }
    kept
}

/// Whether any of `values` is free text given the request's `fields`: the
/// answer then carries a person's words, not only structure.
pub fn has_free_text(fields: &[Value], values: &Map<String, Value>) -> bool {
    values.iter().any(|(id, value)| {
        fields
            .iter()
            .find(|f| f.get("id").and_then(Value::as_str) == Some(id.as_str()))
            .is_some_and(|field| classify(field, value) == ValueClass::FreeText)
    })
}

fn classify(field: &Value, value: &Value) -> ValueClass {
    let structural = match field.get("type").and_then(Value::as_str) {
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("select") => {
            let is_choice = |v: &Value| v.as_str().is_some_and(|s| choice_ids(field).any(|id| id == s));
            match value {
                Value::String(_) => is_choice(value),
                Value::Array(list) => list.iter().all(is_choice),
                _ => false,
            }
        }
        // `string` fields, and any type this engine does not know.
        _ => false,
    };
    if structural {
        ValueClass::Structural
    } else {
        ValueClass::FreeText
    }
}

fn choice_ids(field: &Value) -> impl Iterator<Item = &str> {
    field
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("id").and_then(Value::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields() -> Vec<Value> {
        vec![
            json!({"id": "n", "type": "number", "label": "N"}),
            json!({"id": "b", "type": "boolean", "label": "B"}),
            json!({"id": "m", "type": "select", "label": "M", "multi": true, "other": true,
                   "choices": [{"id": "1", "label": "one"}, {"id": "2", "label": "two"}]}),
            json!({"id": "s", "type": "string", "label": "S"}),
        ]
    }

    fn gate(values: Value, ceiling: Capture) -> Value {
        let Value::Object(values) = values else { panic!("values must be an object") };
        Value::Object(gate_form_values(&fields(), &values, ceiling))
    }

    #[test]
    fn mismatched_kinds_are_not_structural() {
        assert_eq!(gate(json!({"n": "3", "b": "yes"}), Capture::Metadata), json!({}));
        assert_eq!(gate(json!({"n": 3, "b": false}), Capture::Metadata), json!({"n": 3, "b": false}));
    }

    #[test]
    fn multi_select_with_free_text_is_free_text() {
        assert_eq!(gate(json!({"m": ["1", "2"]}), Capture::Metadata), json!({"m": ["1", "2"]}));
        assert_eq!(gate(json!({"m": ["1", "my own"]}), Capture::Metadata), json!({}));
        assert_eq!(gate(json!({"m": ["1", "my own"]}), Capture::Full), json!({"m": ["1", "my own"]}));
    }

    #[test]
    fn free_text_is_told_from_structure_by_the_field() {
        let free = |values: Value| has_free_text(&fields(), values.as_object().unwrap());
        assert!(!free(json!({"n": 3, "b": true, "m": ["1", "2"]})));
        assert!(free(json!({"m": ["1", "my own"]})));
        assert!(free(json!({"s": "1"})));
        assert!(!free(json!({"x": "answers no field"})));
    }

    #[test]
    fn string_fields_need_redacted() {
        assert_eq!(gate(json!({"s": "1"}), Capture::Metadata), json!({}));
        assert_eq!(gate(json!({"s": "1"}), Capture::Redacted), json!({"s": "1"}));
        assert_eq!(gate(json!({"s": "1", "x": 1}), Capture::Full), json!({"s": "1"}));
    }
}
