//! Commands as values (AEP-0004 §2, §5): the four core verbs and vendor
//! `x.{vendor}.control.{verb}` commands, built into events by senders and
//! read back from events by targets, so both sides share one reading.

use serde_json::{json, Map, Value};

use crate::control::answer::{Answer, AnswerError};
use crate::protocol::event::{Capture, Event};
use crate::protocol::ids::{BuildError, Draft, Identity};
use crate::protocol::kind::{is_vendor_command_type, EventKind};
use crate::protocol::validate::check_type_name;
use crate::protocol::vocabulary::{types, CommandVerb, EventType};
use crate::time::UnixMs;

/// The core commands' names, for lists of them (a target's `accepts`);
/// deciding by type matches [`EventKind`] instead.
pub const RESPOND: &str = types::CONTROL_ATTENTION_RESPOND;
pub const CANCEL: &str = types::CONTROL_CANCEL;
pub const PAUSE: &str = types::CONTROL_PAUSE;
pub const RESUME: &str = types::CONTROL_RESUME;

/// What a `control.cancel` stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumString, strum::VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum CancelScope {
    Run,
    Session,
}

impl CancelScope {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<CancelScope> {
        s.parse().ok()
    }
}

/// Who a command is for: the target's session and, optionally, run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Address {
    pub session: String,
    pub run: Option<String>,
}

impl Address {
    pub fn session(session: impl Into<String>) -> Address {
        Address { session: session.into(), run: None }
    }

    pub fn with_run(mut self, run: impl Into<String>) -> Address {
        self.run = Some(run.into());
        self
    }
}

/// One command, independent of envelope and identity.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Answers the `attention.requested` event whose id is `request`.
    Respond {
        request: String,
        answer: Answer,
    },
    Cancel {
        scope: CancelScope,
        reason: Option<String>,
    },
    Pause,
    Resume,
    /// `x.{vendor}.control.{verb}`; `verb` may itself be dotted. The
    /// payload is the vendor's, so the caller states its capture level.
    Vendor {
        vendor: String,
        verb: String,
        data: Map<String, Value>,
        capture: Capture,
    },
}

/// Why a command could not be built or read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CommandError {
    #[error("`{ty}` is not a command type")]
    NotACommand { ty: String },
    /// A respond names its request in `subject`.
    #[error("a respond command names the request it answers in `subject`")]
    MissingRequest,
    #[error(transparent)]
    BadAnswer(AnswerError),
    #[error("a cancel command needs `scope`")]
    MissingScope,
    #[error("cancel scope must be \"run\" or \"session\", got {0}")]
    BadScope(String),
    /// `scope: "run"` needs the `run` attribute to say which run.
    #[error("cancelling a run needs the `run` it cancels")]
    RunScopeWithoutRun,
    #[error("`reason` must be a string")]
    BadReason,
    #[error("`{0}` is not a vendor command type x.{{vendor}}.control.{{verb}}")]
    BadVendorType(String),
    #[error(transparent)]
    Build(BuildError),
}

impl Command {
    /// The event type this command travels as.
    pub fn ty(&self) -> String {
        match self {
            Command::Respond { .. } => CommandVerb::AttentionRespond.as_str().into(),
            Command::Cancel { .. } => CommandVerb::Cancel.as_str().into(),
            Command::Pause => CommandVerb::Pause.as_str().into(),
            Command::Resume => CommandVerb::Resume.as_str().into(),
            Command::Vendor { vendor, verb, .. } => format!("x.{vendor}.control.{verb}"),
        }
    }

    /// The payload, shaped per `schemas/types/control.*`.
    pub fn data(&self) -> Value {
        match self {
            Command::Respond { answer, .. } => json!({ "answer": answer.to_value() }),
            Command::Cancel { scope, reason } => {
                let mut m = Map::new();
                m.insert("scope".into(), scope.as_str().into());
                if let Some(r) = reason {
                    m.insert("reason".into(), r.clone().into());
                }
                Value::Object(m)
            }
            Command::Pause | Command::Resume => json!({}),
            Command::Vendor { data, .. } => Value::Object(data.clone()),
        }
    }

    /// The capture level the payload needs: `full` as soon as it carries a
    /// person's text (answer text, a reason), sent as typed. `redacted`
    /// would claim a redaction pass (AEP-0003 §9.4) that never ran.
    pub fn capture(&self) -> Capture {
        match self {
            Command::Respond { answer, .. } if answer.carries_text() => Capture::Full,
            Command::Cancel { reason: Some(_), .. } => Capture::Full,
            Command::Vendor { capture, .. } => *capture,
            _ => Capture::Metadata,
        }
    }

    /// Builds the command event. No `seq` (the sender does not own the
    /// target's order); `agent`/`source` are the sender's; a respond sets
    /// `subject` and `cause` to the request id.
    pub fn build(
        &self,
        from: &Identity,
        to: &Address,
        id: impl Into<String>,
        now: UnixMs,
    ) -> Result<Event, CommandError> {
        let ty = self.ty();
        match self {
            Command::Cancel { scope: CancelScope::Run, .. } if to.run.is_none() => {
                return Err(CommandError::RunScopeWithoutRun)
            }
            Command::Respond { request, .. } if request.is_empty() => return Err(CommandError::MissingRequest),
            Command::Vendor { .. } if check_type_name(&ty).is_err() || !is_vendor_command_type(&ty) => {
                return Err(CommandError::BadVendorType(ty))
            }
            _ => {}
        }
        let mut draft = Draft::new(ty.clone()).session(to.session.clone()).maybe_run(to.run.clone());
        if let Command::Respond { request, .. } = self {
            draft = draft.subject(request.clone()).cause(request.clone());
        }
        draft.capture(self.capture()).data(self.data()).build(from, id, now).map_err(CommandError::Build)
    }

    /// Reads a command event (the target's view). Unknown payload members
    /// are ignored; missing or mistyped required ones are errors.
    pub fn from_event(event: &Event) -> Result<Command, CommandError> {
        let empty = Map::new();
        let data = event.data().unwrap_or(&empty);
        match event.kind() {
            EventKind::Core(EventType::ControlAttentionRespond) => {
                let request = event.subject().ok_or(CommandError::MissingRequest)?.to_owned();
                let wire = data.get("answer").ok_or(CommandError::BadAnswer(AnswerError::Empty))?;
                let answer = Answer::from_value(wire).map_err(CommandError::BadAnswer)?;
                Ok(Command::Respond { request, answer })
            }
            EventKind::Core(EventType::ControlCancel) => {
                let scope = match data.get("scope") {
                    None => return Err(CommandError::MissingScope),
                    Some(v) => {
                        v.as_str().and_then(CancelScope::parse).ok_or_else(|| CommandError::BadScope(v.to_string()))?
                    }
                };
                if scope == CancelScope::Run && event.run().is_none() {
                    return Err(CommandError::RunScopeWithoutRun);
                }
                let reason = match data.get("reason") {
                    None => None,
                    Some(Value::String(s)) => Some(s.clone()),
                    Some(_) => return Err(CommandError::BadReason),
                };
                Ok(Command::Cancel { scope, reason })
            }
            EventKind::Core(EventType::ControlPause) => Ok(Command::Pause),
            EventKind::Core(EventType::ControlResume) => Ok(Command::Resume),
            EventKind::Vendor(ty) if is_vendor_command_type(ty) => {
                let rest = &ty[2..];
                let (vendor, verb) =
                    rest.split_once(".control.").ok_or_else(|| CommandError::BadVendorType(ty.to_owned()))?;
                Ok(Command::Vendor {
                    vendor: vendor.into(),
                    verb: verb.into(),
                    data: data.clone(),
                    capture: event.capture(),
                })
            }
            other => Err(CommandError::NotACommand { ty: other.as_str().to_owned() }),
        }
    }
}
