//! The open attention request an answer is checked against, and how an
//! answer is applied to it.
//!
//! Safety rule (AEP-0008): typed text that names no option is never applied
//! as the permissive choice of a `permission` request. Which option refuses
//! is the agent's knowledge (only it knows what its option ids do), so the
//! agent declares it with [`OpenRequest::with_refusing_option`]; unmatched
//! text then applies that option with the text kept as the reason. Without
//! a declared refusing option the answer is a mismatch (nacked `invalid`),
//! never a guess.

use std::fmt;

use serde_json::{Map, Value};

use super::object::Answer;
use super::text::{match_text, TextMatch};
use crate::protocol::event::Event;
use crate::protocol::form::{self, Choice, FieldSpec, FieldSpecError, FormError};
use crate::time::UnixMs;

use crate::protocol::kind::EventKind;
use crate::protocol::vocabulary::EventType;

pub use crate::protocol::attention::AttentionKind;
use crate::protocol::attention::Channel;

/// `respond_via`: how this request's answer may travel (AEP-0008 §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RespondVia {
    /// Nothing declared: send-and-settle is how a consumer finds out.
    Undeclared,
    /// Declared; control delivery is offered only when `control` is listed.
    Declared { control: bool },
}

impl RespondVia {
    /// Reads `respond_via` from a request payload. Channel names this
    /// engine does not know are ignored; only `control` matters here.
    pub fn of(data: &Map<String, Value>) -> RespondVia {
        match data.get("respond_via") {
            Some(Value::Array(channels)) => RespondVia::Declared {
                control: channels.iter().filter_map(Value::as_str).any(|c| Channel::parse(c) == Channel::Control),
            },
            _ => RespondVia::Undeclared,
        }
    }

    /// Whether a consumer should offer to answer over control.
    pub fn allows_control(self) -> bool {
        !matches!(self, RespondVia::Declared { control: false })
    }
}

/// Why an event cannot be registered as an open request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("`{ty}` is not attention.requested")]
    NotARequest { ty: String },
    #[error("the request has no `kind`")]
    MissingKind,
    #[error("unknown request kind `{0}`")]
    UnknownKind(String),
    #[error("malformed options: {0}")]
    BadOptions(String),
    #[error(transparent)]
    BadFields(FieldSpecError),
    /// The declared refusing option is not among the offered options.
    #[error("refusing option `{0}` is not offered")]
    UnknownRefusingOption(String),
}

/// An `attention.requested` event, read for answering.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenRequest {
    pub id: String,
    pub session: Option<String>,
    pub run: Option<String>,
    pub kind: AttentionKind,
    pub options: Vec<Choice>,
    /// `Some` for a form (`kind: "form"` with `fields`).
    pub fields: Option<Vec<FieldSpec>>,
    pub respond_via: RespondVia,
    /// The option that refuses, declared by the agent that minted them.
    pub refusing_option: Option<String>,
    /// The request's `time`, for answer latency.
    pub requested_at: Option<UnixMs>,
}

impl OpenRequest {
    pub fn from_event(event: &Event) -> Result<OpenRequest, RequestError> {
        if event.kind() != EventKind::Core(EventType::AttentionRequested) {
            return Err(RequestError::NotARequest { ty: event.ty().to_owned() });
        }
        let empty = Map::new();
        let data = event.data().unwrap_or(&empty);
        let kind = match data.get("kind") {
            None => return Err(RequestError::MissingKind),
            Some(Value::String(k)) => match AttentionKind::parse(k) {
                AttentionKind::Unrecognized(_) => return Err(RequestError::UnknownKind(k.clone())),
                known => known,
            },
            Some(other) => return Err(RequestError::UnknownKind(other.to_string())),
        };
        let options = match data.get("options") {
            None => Vec::new(),
            Some(v) => serde::Deserialize::deserialize(v)
                .map_err(|e: serde_json::Error| RequestError::BadOptions(e.to_string()))?,
        };
        let fields = form::fields_of(data).map_err(RequestError::BadFields)?;
        let fields = if kind == AttentionKind::Form { Some(fields.unwrap_or_default()) } else { fields };
        Ok(OpenRequest {
            id: event.id().to_owned(),
            session: event.session().map(str::to_owned),
            run: event.run().map(str::to_owned),
            kind,
            options,
            fields,
            respond_via: RespondVia::of(data),
            refusing_option: None,
            requested_at: event.at(),
        })
    }

    /// Declares which option refuses (e.g. `deny`), so unmatched text on a
    /// permission request can be applied as a refusal with its reason.
    pub fn with_refusing_option(mut self, id: &str) -> Result<OpenRequest, RequestError> {
        if !self.options.iter().any(|o| o.id == id) {
            return Err(RequestError::UnknownRefusingOption(id.to_owned()));
        }
        self.refusing_option = Some(id.to_owned());
        Ok(self)
    }

    /// Checks `answer` against this request and says what would be applied.
    pub fn apply(&self, answer: &Answer) -> Result<Applied, Mismatch> {
        if !self.respond_via.allows_control() {
            return Err(Mismatch::NotOverControl);
        }
        check_shape(&self.options, self.fields.as_deref(), answer)?;
        match answer {
            Answer::Text { text } if self.fields.is_none() => self.apply_text(text, answer),
            _ => Ok(Applied::as_sent(answer)),
        }
    }

    fn apply_text(&self, text: &str, answer: &Answer) -> Result<Applied, Mismatch> {
        if self.options.is_empty() && self.kind != AttentionKind::Permission {
            return Ok(Applied::as_sent(answer));
        }
        if let TextMatch::Option(choice) = match_text(text, &self.options) {
            return Ok(Applied { answer: Answer::option(choice.id.clone()), rule: AppliedRule::TextNamedOption });
        }
        if self.kind != AttentionKind::Permission {
            return Ok(Applied::as_sent(answer));
        }
        match &self.refusing_option {
            Some(refuse) => Ok(Applied {
                answer: Answer::Option { id: refuse.clone(), text: Some(text.to_owned()) },
                rule: AppliedRule::UnmatchedTextRefused,
            }),
            None => Err(Mismatch::UnmatchedPermissionText),
        }
    }
}

/// Whether `answer` fits what a request offers: a form takes values that
/// pass its fields' checks, otherwise an option must be one offered, and
/// values are for forms only. Text is not judged here (how the agent reads
/// it is its own, AEP-0008). The agent applies this before acting, and a
/// sender before sending, so an answer that cannot fit never leaves.
pub fn check_shape(options: &[Choice], fields: Option<&[FieldSpec]>, answer: &Answer) -> Result<(), Mismatch> {
    if let Some(fields) = fields {
        return match answer {
            Answer::Values { map } => form::check_values(fields, map).map_err(Mismatch::Form),
            _ => Err(Mismatch::FormNeedsValues),
        };
    }
    match answer {
        Answer::Values { .. } => Err(Mismatch::ValuesNeedForm),
        Answer::Option { id, .. } if options.iter().any(|o| &o.id == id) => Ok(()),
        Answer::Option { id, .. } if options.is_empty() => Err(Mismatch::NoOptionsOffered { option: id.clone() }),
        Answer::Option { id, .. } => Err(Mismatch::NotAnOption { option: id.clone() }),
        Answer::Text { .. } => Ok(()),
    }
}

/// How an accepted answer came to be what is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppliedRule {
    /// Applied exactly as sent.
    AsSent,
    /// Typed text named an option; the option is applied, the word dropped.
    TextNamedOption,
    /// Text named no option of a permission request: the refusing option
    /// is applied, the text kept as the reason.
    UnmatchedTextRefused,
}

/// The answer to apply and to record on `attention.answered` (the recorded
/// answer states what was actually applied).
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    pub answer: Answer,
    pub rule: AppliedRule,
}

impl Applied {
    fn as_sent(answer: &Answer) -> Applied {
        Applied { answer: answer.clone(), rule: AppliedRule::AsSent }
    }
}

/// Why an answer does not fit its request (the target nacks `invalid`
/// with [`Mismatch::detail`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// `respond_via` is declared without `control`.
    NotOverControl,
    NotAnOption {
        option: String,
    },
    NoOptionsOffered {
        option: String,
    },
    FormNeedsValues,
    ValuesNeedForm,
    /// Text named no option of a permission request and no refusing
    /// option is declared.
    UnmatchedPermissionText,
    Form(Vec<FormError>),
}

impl Mismatch {
    /// One line for `control.rejected.detail`.
    pub fn detail(&self) -> String {
        match self {
            Mismatch::NotOverControl => "this request is not answered over control (respond_via)".into(),
            Mismatch::NotAnOption { option } => format!("\u{201c}{option}\u{201d} is not one of the offered options"),
            Mismatch::NoOptionsOffered { option } => {
                format!("the request offers no options, got \u{201c}{option}\u{201d}")
            }
            Mismatch::FormNeedsValues => "this request is a form; answer it with values".into(),
            Mismatch::ValuesNeedForm => "values answer form requests only".into(),
            Mismatch::UnmatchedPermissionText => "the text names none of the offered options".into(),
            Mismatch::Form(errors) => errors.iter().map(|e| e.message.as_str()).collect::<Vec<_>>().join("; "),
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(data: Value) -> OpenRequest {
        let ev = Event::parse(
            &json!({"aep": "0.1", "id": "R1", "type": "attention.requested", "time": "2026-07-03T10:00:00Z",
                    "source": "aep://h/agent/a", "agent": "a", "session": "s", "seq": 1, "data": data})
            .to_string(),
        )
        .unwrap();
        OpenRequest::from_event(&ev).unwrap()
    }

    #[test]
    fn respond_via_gates_control() {
        assert!(RespondVia::Undeclared.allows_control());
        let oob = request(
            json!({"kind": "permission", "prompt": "p", "options": [{"id": "ok", "label": "OK"}], "respond_via": ["oob"]}),
        );
        assert_eq!(oob.respond_via, RespondVia::Declared { control: false });
        assert_eq!(oob.apply(&Answer::option("ok")), Err(Mismatch::NotOverControl));
        let both = request(json!({"kind": "input", "prompt": "p", "respond_via": ["oob", "control", "pigeon"]}));
        assert!(both.respond_via.allows_control());
    }

    #[test]
    fn reads_requests_and_refuses_broken_ones() {
        let r = request(json!({"kind": "form", "prompt": "p"}));
        assert_eq!(r.fields, Some(vec![]));
        assert_eq!(r.requested_at, UnixMs::parse_rfc3339("2026-07-03T10:00:00Z"));
        let ev = |data: Value| {
            Event::parse(
                &json!({"aep": "0.1", "id": "R", "type": "attention.requested", "time": "2026-07-03T10:00:00Z",
                        "source": "aep://h/agent/a", "agent": "a", "session": "s", "seq": 1, "data": data})
                .to_string(),
            )
            .unwrap()
        };
        assert_eq!(OpenRequest::from_event(&ev(json!({"prompt": "p"}))), Err(RequestError::MissingKind));
        assert_eq!(
            OpenRequest::from_event(&ev(json!({"kind": "vote"}))),
            Err(RequestError::UnknownKind("vote".into()))
        );
        assert!(matches!(
            OpenRequest::from_event(&ev(json!({"kind": "input", "options": [{"id": 1}]}))),
            Err(RequestError::BadOptions(_))
        ));
        let r = request(json!({"kind": "permission", "prompt": "p", "options": [{"id": "allow", "label": "Allow"}]}));
        assert_eq!(r.with_refusing_option("deny"), Err(RequestError::UnknownRefusingOption("deny".into())));
    }

    #[test]
    fn input_requests_take_free_text_and_mapped_words() {
        let r = request(
            json!({"kind": "input", "prompt": "p", "options": [{"id": "a", "label": "Apple"}, {"id": "b", "label": "apple"}]}),
        );
        assert_eq!(r.apply(&Answer::text("pear")).unwrap().rule, AppliedRule::AsSent);
        assert_eq!(
            r.apply(&Answer::text("APPLE")).unwrap().answer,
            Answer::text("APPLE"),
            "ambiguous label stays text"
        );
        assert_eq!(r.apply(&Answer::text(" b ")).unwrap().answer, Answer::option("b"));
        assert_eq!(r.apply(&Answer::option("c")), Err(Mismatch::NotAnOption { option: "c".into() }));
        let bare = request(json!({"kind": "input", "prompt": "p"}));
        assert_eq!(bare.apply(&Answer::option("x")), Err(Mismatch::NoOptionsOffered { option: "x".into() }));
    }

    #[test]
    fn permission_without_options_never_takes_text() {
        let r = request(json!({"kind": "permission", "prompt": "p"}));
        assert_eq!(r.apply(&Answer::text("yes")), Err(Mismatch::UnmatchedPermissionText));
    }
}
