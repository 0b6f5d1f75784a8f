//! The `error` frame and its closed set of codes, and [`FrameError`]: why
//! text could not be read as a frame (a request that cannot be read is
//! answered with an `error` frame).

use serde_json::{Map, Value};

use super::members::{opt_string, string_list, strings};
use crate::protocol::event::EventError;

/// Error codes used in `error` frames, from the hand-kept list beside the
/// generated vocabulary.
pub use crate::protocol::vocabulary::codes;
use crate::protocol::vocabulary::ErrorCode;

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

    /// The code as the registry names it; `None` for a code this engine
    /// does not know (kept as sent in [`Self::code`]). Decisions by code
    /// match this, so a misspelt code does not compile.
    pub fn registered_code(&self) -> Option<ErrorCode> {
        ErrorCode::parse(&self.code)
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

/// Why text could not be read as a frame.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FrameError {
    #[error("frame is not JSON: {0}")]
    NotJson(String),
    #[error("frame is not a JSON object")]
    NotAnObject,
    /// An object whose `type` is absent or not a string.
    #[error("frame has no string `type`")]
    NoType,
    /// A dotted `type` whose envelope is invalid.
    #[error(transparent)]
    Event(EventError),
    /// A known frame type with members it cannot be read without.
    #[error("malformed `{frame_type}` frame: {detail}")]
    Malformed {
        frame_type: String,
        /// The request id, when the frame carried a usable one.
        id: Option<String>,
        /// The `error` code that answers it in-band.
        code: &'static str,
        detail: String,
    },
}

impl FrameError {
    /// The in-band answer to a request that could not be read: a refused
    /// `subscribe` is answered `invalid-filter` (with its id when it has
    /// a usable one), and the connection survives (AEP-0003 §6.5). `None`
    /// for text that is no request at all (not an object, no `type`).
    pub fn refusal(&self) -> Option<ErrorFrame> {
        match self {
            FrameError::Malformed { id, code, detail, .. } => {
                Some(ErrorFrame { id: id.clone(), ..ErrorFrame::new(*code, Some(detail.clone())) })
            }
            _ => None,
        }
    }
}

pub(super) fn required_id(frame_type: &str, obj: &Map<String, Value>) -> Result<String, FrameError> {
    match obj.get("id") {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(malformed(frame_type, None, "needs a non-empty string `id`")),
    }
}

pub(super) fn malformed(frame_type: &str, id: Option<String>, detail: &str) -> FrameError {
    let code = if frame_type == "subscribe" { codes::INVALID_FILTER } else { codes::INVALID_FRAME };
    FrameError::Malformed { frame_type: frame_type.into(), id, code, detail: detail.into() }
}
