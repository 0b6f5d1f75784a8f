//! Structured input (AEP-0006): field specs and form answers.
//!
//! A `kind: "form"` attention request carries `data.fields`, a flat list of
//! typed fields; its answer is `values`, a flat map from field id to value.
//! [`check_values`] is the single reading of the values rules: the control
//! target nacks with it, the store flags recorded answers with it and the
//! console validates before sending with it, so all three always agree.

use std::collections::HashSet;
use std::fmt;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::text::json_kind as kind;
use crate::text::number;

/// The four field primitives (deliberately flat; no nesting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum FieldType {
    String,
    Number,
    Boolean,
    Select,
}

impl FieldType {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One offered choice: `id` is what an answer carries, `label` what a
/// person reads. Attention `options` have the same shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    pub id: String,
    pub label: String,
}

/// One field of a form (`field_spec`, AEP-0002 §5.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldSpec {
    pub id: String,
    #[serde(rename = "type")]
    pub ty: FieldType,
    pub label: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    /// `select` only: several choices may be picked (answer is an array).
    #[serde(default, skip_serializing_if = "is_false")]
    pub multi: bool,
    /// `select` only: free text is allowed instead of a choice id.
    #[serde(default, skip_serializing_if = "is_false")]
    pub other: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<Choice>,
    /// `number` only, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// `number` only, inclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl FieldSpec {
    fn has_choice(&self, id: &str) -> bool {
        self.choices.iter().any(|c| c.id == id)
    }
}

/// Why a request's `fields` cannot be used as a form.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FieldSpecError {
    /// Not an array of field objects with the required members.
    #[error("malformed form fields: {0}")]
    Malformed(String),
    /// A `select` field without `choices` (the schema requires them).
    #[error("select field `{field}` offers no choices")]
    SelectWithoutChoices { field: String },
    /// Two fields share an id, so a `values` key could not say which it answers.
    #[error("field id `{field}` is used twice")]
    DuplicateField { field: String },
}

/// Parses the `fields` member of an `attention.requested` payload.
pub fn parse_fields(fields: &Value) -> Result<Vec<FieldSpec>, FieldSpecError> {
    let specs: Vec<FieldSpec> = Vec::deserialize(fields).map_err(|e| FieldSpecError::Malformed(e.to_string()))?;
    let mut seen = HashSet::new();
    for spec in &specs {
        if !seen.insert(spec.id.as_str()) {
            return Err(FieldSpecError::DuplicateField { field: spec.id.clone() });
        }
        if spec.ty == FieldType::Select && spec.choices.is_empty() {
            return Err(FieldSpecError::SelectWithoutChoices { field: spec.id.clone() });
        }
    }
    Ok(specs)
}

/// The form of an `attention.requested` payload: `Ok(None)` when it has no
/// `fields` member.
pub fn fields_of(data: &Map<String, Value>) -> Result<Option<Vec<FieldSpec>>, FieldSpecError> {
    data.get("fields").map(parse_fields).transpose()
}

/// What is wrong with one entry of `values`.
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    /// A `required` field has no entry.
    Missing,
    /// The key names no field of the form.
    UnknownField,
    /// The JSON type does not fit the field (`expected` is e.g. "a number").
    WrongType {
        expected: &'static str,
        found: &'static str,
    },
    BelowMin {
        min: f64,
        value: f64,
    },
    AboveMax {
        max: f64,
        value: f64,
    },
    /// A `select` value that is not a `choices[].id` (and `other` is off).
    NotAChoice {
        value: String,
    },
}

impl Problem {
    /// A stable token for callers that branch on the kind of problem.
    pub fn code(&self) -> &'static str {
        match self {
            Problem::Missing => "missing",
            Problem::UnknownField => "unknown-field",
            Problem::WrongType { .. } => "wrong-type",
            Problem::BelowMin { .. } => "below-min",
            Problem::AboveMax { .. } => "above-max",
            Problem::NotAChoice { .. } => "not-a-choice",
        }
    }
}

/// One broken values rule: which field, what is wrong, and a sentence a
/// person can act on (naming the field by its label when the form has it).
#[derive(Clone, Debug, PartialEq)]
pub struct FormError {
    pub field: String,
    pub problem: Problem,
    pub message: String,
}

impl FormError {
    fn new(spec: Option<&FieldSpec>, field: &str, problem: Problem) -> FormError {
        let name = spec.map_or(field, |s| s.label.as_str());
        let message = match &problem {
            Problem::Missing => format!("\u{201c}{name}\u{201d} is required"),
            Problem::UnknownField => format!("the form has no field \u{201c}{name}\u{201d}"),
            Problem::WrongType { expected, found } => format!("\u{201c}{name}\u{201d} expects {expected}, got {found}"),
            Problem::BelowMin { min, value } => {
                format!("\u{201c}{name}\u{201d} must be at least {} (got {})", number(*min), number(*value))
            }
            Problem::AboveMax { max, value } => {
                format!("\u{201c}{name}\u{201d} must be at most {} (got {})", number(*max), number(*value))
            }
            Problem::NotAChoice { value } => {
                format!("\u{201c}{value}\u{201d} is not one of the choices offered for \u{201c}{name}\u{201d}")
            }
        };
        FormError { field: field.to_owned(), problem, message }
    }
}

impl fmt::Display for FormError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Serialised as `{field, problem, message}` for the JS surface.
impl Serialize for FormError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("FormError", 3)?;
        s.serialize_field("field", &self.field)?;
        s.serialize_field("problem", self.problem.code())?;
        s.serialize_field("message", &self.message)?;
        s.end()
    }
}

/// Checks a form answer against its fields (AEP-0006 values rules).
///
/// A required field is covered when its key is present (the spec's
/// wording; an empty string covers it). `number` honours inclusive
/// `min`/`max`; single `select` takes one choice id, `multi` an array of
/// them; `other: true` also admits free text. Keys naming no field are
/// errors. Every problem is reported, in field order, then unknown keys.
pub fn check_values(fields: &[FieldSpec], values: &Map<String, Value>) -> Result<(), Vec<FormError>> {
    let mut errors = Vec::new();
    for spec in fields {
        match values.get(&spec.id) {
            None if spec.required => errors.push(FormError::new(Some(spec), &spec.id, Problem::Missing)),
            None => {}
            Some(value) => check_one(spec, value, &mut errors),
        }
    }
    for key in values.keys() {
        if !fields.iter().any(|f| &f.id == key) {
            errors.push(FormError::new(None, key, Problem::UnknownField));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn check_one(spec: &FieldSpec, value: &Value, errors: &mut Vec<FormError>) {
    let mut fail = |problem| errors.push(FormError::new(Some(spec), &spec.id, problem));
    let wrong = |expected| Problem::WrongType { expected, found: kind(value) };
    match (spec.ty, value) {
        (FieldType::String, Value::String(_)) | (FieldType::Boolean, Value::Bool(_)) => {}
        (FieldType::String, _) => fail(wrong("text")),
        (FieldType::Boolean, _) => fail(wrong("true or false")),
        (FieldType::Number, Value::Number(n)) => {
            let v = n.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = spec.min.filter(|m| v < *m) {
                fail(Problem::BelowMin { min, value: v });
            }
            if let Some(max) = spec.max.filter(|m| v > *m) {
                fail(Problem::AboveMax { max, value: v });
            }
        }
        (FieldType::Number, _) => fail(wrong("a number")),
        (FieldType::Select, Value::Array(items)) if spec.multi => {
            for item in items {
                match item {
                    Value::String(s) if spec.other || spec.has_choice(s) => {}
                    Value::String(s) => fail(Problem::NotAChoice { value: s.clone() }),
                    other => fail(Problem::WrongType { expected: "a list of choice ids", found: kind(other) }),
                }
            }
        }
        (FieldType::Select, _) if spec.multi => fail(wrong("a list of choice ids")),
        (FieldType::Select, Value::String(s)) if spec.other || spec.has_choice(s) => {}
        (FieldType::Select, Value::String(s)) => fail(Problem::NotAChoice { value: s.clone() }),
        (FieldType::Select, _) => fail(wrong("a choice id")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Vec<FieldSpec> {
        parse_fields(&json!([
            {"id": "name", "type": "string", "label": "Service name", "required": true},
            {"id": "replicas", "type": "number", "label": "Replicas", "min": 1, "max": 5},
            {"id": "staged", "type": "boolean", "label": "Stage first?"},
            {"id": "regions", "type": "select", "label": "Regions", "multi": true,
             "choices": [{"id": "us", "label": "US"}, {"id": "eu", "label": "EU"}]},
            {"id": "db", "type": "select", "label": "Database", "other": true,
             "choices": [{"id": "pg", "label": "PostgreSQL"}]},
            {"id": "tier", "type": "select", "label": "Tier",
             "choices": [{"id": "free", "label": "Free"}, {"id": "pro", "label": "Pro"}]}
        ]))
        .unwrap()
    }

    fn values(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn problems(v: Value) -> Vec<(String, &'static str)> {
        match check_values(&form(), &values(v)) {
            Ok(()) => vec![],
            Err(e) => e.into_iter().map(|e| (e.field, e.problem.code())).collect(),
        }
    }

    #[test]
    fn a_complete_answer_passes() {
        let ok = json!({"name": "billing", "replicas": 3, "staged": true, "regions": ["us", "eu"], "db": "MariaDB", "tier": "pro"});
        assert_eq!(problems(ok), vec![]);
        assert_eq!(problems(json!({"name": ""})), vec![], "presence covers a required field");
    }

    #[test]
    fn each_rule_reports_its_field() {
        assert_eq!(problems(json!({})), vec![("name".into(), "missing")]);
        assert_eq!(problems(json!({"name": 7})), vec![("name".into(), "wrong-type")]);
        assert_eq!(problems(json!({"name": "a", "replicas": 0})), vec![("replicas".into(), "below-min")]);
        assert_eq!(problems(json!({"name": "a", "replicas": 5.5})), vec![("replicas".into(), "above-max")]);
        assert_eq!(problems(json!({"name": "a", "replicas": 1})), vec![]);
        assert_eq!(problems(json!({"name": "a", "replicas": "3"})), vec![("replicas".into(), "wrong-type")]);
        assert_eq!(problems(json!({"name": "a", "staged": "yes"})), vec![("staged".into(), "wrong-type")]);
        assert_eq!(problems(json!({"name": "a", "tier": "gold"})), vec![("tier".into(), "not-a-choice")]);
        assert_eq!(problems(json!({"name": "a", "tier": ["pro"]})), vec![("tier".into(), "wrong-type")]);
        assert_eq!(problems(json!({"name": "a", "regions": "us"})), vec![("regions".into(), "wrong-type")]);
        assert_eq!(problems(json!({"name": "a", "regions": ["us", "mars"]})), vec![("regions".into(), "not-a-choice")]);
        assert_eq!(problems(json!({"name": "a", "regions": [1]})), vec![("regions".into(), "wrong-type")]);
        assert_eq!(problems(json!({"name": "a", "colour": "red"})), vec![("colour".into(), "unknown-field")]);
    }

    #[test]
    fn reports_every_problem_with_a_readable_message() {
        let errs = check_values(&form(), &values(json!({"replicas": 9, "zzz": 1}))).unwrap_err();
        assert_eq!(errs.len(), 3);
        assert_eq!(errs[0].message, "\u{201c}Service name\u{201d} is required");
        assert!(errs[1].message.contains("at most 5"), "{}", errs[1].message);
        let json = serde_json::to_value(&errs[2]).unwrap();
        assert_eq!(
            json,
            json!({"field": "zzz", "problem": "unknown-field", "message": "the form has no field \u{201c}zzz\u{201d}"})
        );
    }

    #[test]
    fn bad_field_lists_are_refused_clearly() {
        assert!(matches!(parse_fields(&json!({"id": "x"})), Err(FieldSpecError::Malformed(_))));
        assert!(matches!(
            parse_fields(&json!([{"id": "x", "type": "date", "label": "X"}])),
            Err(FieldSpecError::Malformed(_))
        ));
        assert_eq!(
            parse_fields(&json!([{"id": "x", "type": "select", "label": "X"}])),
            Err(FieldSpecError::SelectWithoutChoices { field: "x".into() })
        );
        assert_eq!(
            parse_fields(
                &json!([{"id": "x", "type": "string", "label": "A"}, {"id": "x", "type": "boolean", "label": "B"}])
            ),
            Err(FieldSpecError::DuplicateField { field: "x".into() })
        );
        assert_eq!(fields_of(&values(json!({"kind": "input"}))), Ok(None));
    }

    #[test]
    fn round_trips_the_wire_shape() {
        let wire = json!({"id": "db", "type": "select", "label": "Database", "other": true, "choices": [{"id": "pg", "label": "PostgreSQL"}]});
        let spec: FieldSpec = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(serde_json::to_value(&spec).unwrap(), wire);
    }
}
