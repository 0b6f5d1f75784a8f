//! The `error` frame and its closed set of codes.

use serde_json::{Map, Value};

use super::{malformed, opt_string, string_list, strings, FrameError};

/// Error codes used in `error` frames, from the hand-kept list beside the
/// generated vocabulary.
pub use crate::protocol::vocabulary::codes;

/// The `error` frame: a refusal scoped to the connection, a request (`id`)
/// or a command (`cause`). Never an event, never stored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorFrame {
    pub code: String,
    pub detail: Option<String>,
    /// The subscribe or roster request refused.
    pub id: Option<String>,
    /// The command refused (AEP-0004 §4).
    pub cause: Option<String>,
    /// With `version-unsupported`: the versions the sender speaks.
    pub versions: Option<Vec<String>>,
}

impl ErrorFrame {
    pub fn new(code: impl Into<String>, detail: Option<String>) -> ErrorFrame {
        ErrorFrame { code: code.into(), detail, ..ErrorFrame::default() }
    }

    /// Answers a request by its `id`.
    pub fn for_request(id: impl Into<String>, code: impl Into<String>, detail: Option<String>) -> ErrorFrame {
        ErrorFrame { id: Some(id.into()), ..ErrorFrame::new(code, detail) }
    }

    /// Refuses a command by its id.
    pub fn for_command(cause: impl Into<String>, code: impl Into<String>, detail: Option<String>) -> ErrorFrame {
        ErrorFrame { cause: Some(cause.into()), ..ErrorFrame::new(code, detail) }
    }

    pub(super) fn decode(obj: &Map<String, Value>) -> Result<ErrorFrame, FrameError> {
        let code = obj
            .get("code")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("error", None, "an error frame needs a string `code`"))?;
        let detail = match obj.get("detail") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => Some(other.to_string()),
        };
        Ok(ErrorFrame {
            code: code.to_owned(),
            detail,
            id: opt_string(obj, "id"),
            cause: opt_string(obj, "cause"),
            versions: obj.get("versions").and_then(string_list),
        })
    }

    pub(super) fn encode(&self, m: &mut Map<String, Value>) {
        if let Some(id) = &self.id {
            m.insert("id".into(), id.as_str().into());
        }
        if let Some(c) = &self.cause {
            m.insert("cause".into(), c.as_str().into());
        }
        m.insert("code".into(), self.code.as_str().into());
        if let Some(d) = &self.detail {
            m.insert("detail".into(), d.as_str().into());
        }
        if let Some(v) = &self.versions {
            m.insert("versions".into(), strings(v));
        }
    }
}
