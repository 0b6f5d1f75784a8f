//! The `answer` object itself, and the combinations of its members that
//! are legal.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One answer. The wire object has optional `option`, `text` and `values`
/// members; the legal combinations are exactly these variants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "WireAnswer", into = "WireAnswer")]
pub enum Answer {
    /// A closed choice (`option` is the lossless channel); `text` is an
    /// optional stated reason or guidance accompanying it.
    Option { id: String, text: Option<String> },
    /// Free text only: guidance, or a typed word the receiver may map to
    /// an option (AEP-0008).
    Text { text: String },
    /// A form answer (AEP-0006): field id → value.
    Values { map: Map<String, Value> },
}

impl Answer {
    pub fn option(id: impl Into<String>) -> Answer {
        Answer::Option { id: id.into(), text: None }
    }

    pub fn text(text: impl Into<String>) -> Answer {
        Answer::Text { text: text.into() }
    }

    pub fn values(map: Map<String, Value>) -> Answer {
        Answer::Values { map }
    }

    /// Reads a wire `answer` object.
    pub fn from_value(value: &Value) -> Result<Answer, AnswerError> {
        let wire = WireAnswer::deserialize(value).map_err(|e| AnswerError::Malformed(e.to_string()))?;
        Answer::try_from(wire)
    }

    /// The wire `answer` object.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(WireAnswer::from(self.clone())).unwrap_or(Value::Null)
    }

    /// Whether the answer carries user-authored text, which is content at
    /// `redacted` level, not metadata. Form values are counted as text when
    /// any entry is a string, since without the form a string value cannot
    /// be told apart from free text.
    pub fn carries_text(&self) -> bool {
        match self {
            Answer::Option { text, .. } => text.is_some(),
            Answer::Text { .. } => true,
            Answer::Values { map } => map.values().any(|v| match v {
                Value::String(_) => true,
                Value::Array(items) => items.iter().any(Value::is_string),
                _ => false,
            }),
        }
    }
}

/// Why a wire `answer` object is not an [`Answer`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// Not an object, or a member of the wrong JSON type.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// None of `option`, `text`, `values`.
    #[error("the answer carries none of option, text or values")]
    Empty,
    /// `values` together with `option` or `text`: a form answer stands alone.
    #[error("a form answer (values) cannot be combined with option or text")]
    ValuesCombined,
}

/// The wire shape, kept private so only legal combinations escape.
#[derive(Serialize, Deserialize)]
struct WireAnswer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    option: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    values: Option<Map<String, Value>>,
}

impl TryFrom<WireAnswer> for Answer {
    type Error = AnswerError;
    fn try_from(w: WireAnswer) -> Result<Answer, AnswerError> {
        match (w.option, w.text, w.values) {
            (None, None, Some(map)) => Ok(Answer::Values { map }),
            (_, _, Some(_)) => Err(AnswerError::ValuesCombined),
            (Some(id), text, None) => Ok(Answer::Option { id, text }),
            (None, Some(text), None) => Ok(Answer::Text { text }),
            (None, None, None) => Err(AnswerError::Empty),
        }
    }
}

impl From<Answer> for WireAnswer {
    fn from(a: Answer) -> WireAnswer {
        match a {
            Answer::Option { id, text } => WireAnswer { option: Some(id), text, values: None },
            Answer::Text { text } => WireAnswer { option: None, text: Some(text), values: None },
            Answer::Values { map } => WireAnswer { option: None, text: None, values: Some(map) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_and_writes_each_wire_shape() {
        for wire in [
            json!({"option": "allow"}),
            json!({"option": "deny", "text": "use staging"}),
            json!({"text": "deny"}),
            json!({"values": {"name": "x", "n": 2}}),
        ] {
            let a = Answer::from_value(&wire).unwrap();
            assert_eq!(a.to_value(), wire);
            assert_eq!(serde_json::from_value::<Answer>(wire.clone()).unwrap(), a);
        }
        assert_eq!(Answer::from_value(&json!({"option": "allow"})).unwrap(), Answer::option("allow"));
    }

    #[test]
    fn refuses_illegal_combinations() {
        assert_eq!(Answer::from_value(&json!({})), Err(AnswerError::Empty));
        assert_eq!(Answer::from_value(&json!({"option": "a", "values": {}})), Err(AnswerError::ValuesCombined));
        assert!(matches!(Answer::from_value(&json!({"option": 1})), Err(AnswerError::Malformed(_))));
        assert!(matches!(Answer::from_value(&json!("allow")), Err(AnswerError::Malformed(_))));
    }

    #[test]
    fn knows_when_it_carries_text() {
        assert!(!Answer::option("allow").carries_text());
        assert!(Answer::text("x").carries_text());
        assert!(!Answer::values(json!({"n": 1, "b": true}).as_object().unwrap().clone()).carries_text());
        assert!(Answer::values(json!({"r": ["us"]}).as_object().unwrap().clone()).carries_text());
    }
}
