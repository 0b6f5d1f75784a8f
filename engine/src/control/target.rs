//! Target side of control (AEP-0004), for agents: every command is decided
//! exactly once, and its ack is recorded as bytes and re-emitted unchanged
//! when the command is delivered again.
//!
//! The gates, in order: a remembered `(source, id)` gets its recorded ack
//! back ([`Received::Duplicate`]); a type outside `accepts` is nacked
//! `unsupported`; a declared type that is malformed or has nothing to act
//! on (unknown, closed or already answered request; an answer that does
//! not fit it) is nacked `invalid`; then the agent's own verdict decides.
//!
//! Acks and outcome events are sequenced session events of the agent: the
//! caller passes a [`Sequencer`] that hands out its next `seq` per session.
//!
//! * [`seq`]: the sequencer trait and a plain counter.
//! * [`outcome`]: building the outcome events a command promises.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::control::ack::NackReason;
use crate::control::answer::{Applied, OpenRequest, RequestError};
use crate::control::sender::command::{CancelScope, Command};
use crate::protocol::capture::downlevel;
use crate::protocol::event::{is_command_type, Capture, Event};
use crate::protocol::ids::{BuildError, Draft, Identity};
use crate::protocol::vocabulary::types;
use crate::rng::Seeded;
use crate::time::UnixMs;

mod dedupe;
pub mod outcome;
mod requests;
pub mod seq;

pub use requests::RequestState;
pub use seq::{SeqCounter, SeqRegression, Sequencer};

/// Commands remembered for dedupe (with their recorded acks).
pub const DEDUPE_CAPACITY: usize = 4096;
/// Attention requests remembered for checking answers.
pub const REQUEST_CAPACITY: usize = 1024;

/// What an accepted command asks the agent to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Apply `applied.answer` to `request`, then emit
    /// [`ControlTarget::answer_outcomes`].
    Respond {
        request: OpenRequest,
        applied: Applied,
    },
    Cancel {
        scope: CancelScope,
        reason: Option<String>,
    },
    Pause,
    Resume,
    Vendor {
        ty: String,
        data: Map<String, Value>,
    },
}

/// The agent's own decision on a command that passed the protocol gates
/// (commands are requests, not orders: the agent may refuse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    Reject { reason: NackReason, detail: Option<String> },
}

/// The result of receiving a command. Short-lived and matched on by
/// shape, so the variants stay unboxed despite their size difference.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Received {
    /// First delivery, accepted: emit `ack`, act, then emit outcome events
    /// whose `cause` is the command id.
    Fresh { command: Event, action: Action, ack: Event },
    /// Already decided: emit these exact bytes again, nothing else.
    Duplicate { ack: Arc<str> },
    /// First delivery, rejected: emit `ack`.
    Nacked { ack: Event, reason: NackReason },
}

impl Received {
    /// The bytes to emit for this delivery.
    pub fn ack_bytes(&self) -> Arc<str> {
        match self {
            Received::Fresh { ack, .. } | Received::Nacked { ack, .. } => ack.raw_arc(),
            Received::Duplicate { ack } => Arc::clone(ack),
        }
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TargetError {
    /// Only commands are received here.
    #[error("`{ty}` is not a command")]
    NotACommand { ty: String },
    /// `accepts` named something that is not a command type.
    #[error("cannot accept `{0}`: not a command type")]
    NotACommandType(String),
    /// The ack could not be built (e.g. the agent's identity is invalid).
    #[error(transparent)]
    Build(BuildError),
}

/// Receives commands for one agent.
#[derive(Debug)]
pub struct ControlTarget {
    identity: Identity,
    accepts: Vec<String>,
    /// The highest capture level of anything the target emits (AEP-0003
    /// §9.1); events above it are down-levelled before they leave.
    ceiling: Capture,
    dedupe: dedupe::Dedupe,
    requests: requests::Requests,
    /// Makes the ids of acks and outcome events.
    ids: Seeded,
}

impl ControlTarget {
    /// `accepts` is what the agent declares at hello (`control.accepts`);
    /// `ids` makes the ids of its acks and outcomes (seed it with real
    /// randomness: two targets seeded alike make the same ids).
    pub fn new<S: Into<String>>(
        identity: Identity,
        accepts: impl IntoIterator<Item = S>,
        ids: Seeded,
    ) -> Result<ControlTarget, TargetError> {
        ControlTarget::with_capacities(identity, accepts, DEDUPE_CAPACITY, REQUEST_CAPACITY, ids)
    }

    pub fn with_capacities<S: Into<String>>(
        identity: Identity,
        accepts: impl IntoIterator<Item = S>,
        dedupe_capacity: usize,
        request_capacity: usize,
        ids: Seeded,
    ) -> Result<ControlTarget, TargetError> {
        let accepts: Vec<String> = accepts.into_iter().map(Into::into).collect();
        if let Some(bad) = accepts.iter().find(|t| !is_command_type(t)) {
            return Err(TargetError::NotACommandType(bad.clone()));
        }
        Ok(ControlTarget {
            identity,
            accepts,
            ceiling: DEFAULT_CEILING,
            dedupe: dedupe::Dedupe::new(dedupe_capacity),
            requests: requests::Requests::new(request_capacity),
            ids,
        })
    }

    /// Sets the capture ceiling (default [`DEFAULT_CEILING`]): `full`
    /// keeps a person's text in outcomes and reasons; nothing is redacted,
    /// so no level between is claimed.
    pub fn with_ceiling(mut self, ceiling: Capture) -> ControlTarget {
        self.ceiling = ceiling;
        self
    }

    pub fn ceiling(&self) -> Capture {
        self.ceiling
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// An id for an event the agent emits of its own accord, from the
    /// same generator as its acks and outcomes.
    pub fn event_id(&mut self, now: UnixMs) -> String {
        self.ids.event_id(now)
    }

    /// The declared command types, for `hello.capabilities.control.accepts`.
    pub fn accepts(&self) -> &[String] {
        &self.accepts
    }

    /// Registers a request the agent raised, so answers can be checked.
    pub fn open_request(&mut self, request: OpenRequest) {
        self.requests.open(request);
    }

    /// Registers the `attention.requested` event the agent emitted;
    /// `refusing_option` names the option unmatched permission text applies.
    pub fn register_request(&mut self, requested: &Event, refusing_option: Option<&str>) -> Result<(), RequestError> {
        let mut request = OpenRequest::from_event(requested)?;
        if let Some(id) = refusing_option {
            request = request.with_refusing_option(id)?;
        }
        self.open_request(request);
        Ok(())
    }

    /// Marks a request closed by other means (timeout, dismissal, an answer
    /// out of band); later responds are nacked `invalid`.
    pub fn close_request(&mut self, id: &str) -> bool {
        self.requests.set_state(id, RequestState::Closed)
    }

    pub fn request(&self, id: &str) -> Option<(&OpenRequest, &RequestState)> {
        self.requests.get(id).map(|(r, s)| (r, s))
    }

    /// How many commands are remembered for dedupe.
    pub fn remembered(&self) -> usize {
        self.dedupe.len()
    }

    /// How many requests are remembered.
    pub fn requests_remembered(&self) -> usize {
        self.requests.len()
    }

    /// Receives a command and accepts it when the protocol gates pass.
    pub fn handle_command(
        &mut self,
        command: &Event,
        now: UnixMs,
        seqs: &mut dyn Sequencer,
    ) -> Result<Received, TargetError> {
        self.handle_command_with(command, now, seqs, |_| Verdict::Accept)
    }

    /// Receives a command; `decide` is asked only for a first delivery that
    /// passed the protocol gates.
    pub fn handle_command_with(
        &mut self,
        command: &Event,
        now: UnixMs,
        seqs: &mut dyn Sequencer,
        decide: impl FnOnce(&Action) -> Verdict,
    ) -> Result<Received, TargetError> {
        if !command.is_command() {
            return Err(TargetError::NotACommand { ty: command.ty().to_owned() });
        }
        if let Some(ack) = self.dedupe.recorded(command.source(), command.id()) {
            return Ok(Received::Duplicate { ack: ack.clone() });
        }
        let gated = if self.accepts.iter().any(|t| t == command.ty()) {
            self.action_for(command)
        } else {
            Err((NackReason::Unsupported, Some(format!("this agent does not accept {}", command.ty()))))
        };
        let verdict = gated.and_then(|action| match decide(&action) {
            Verdict::Accept => Ok(action),
            Verdict::Reject { reason, detail } => Err((reason, detail)),
        });
        let ack_id = self.ids.event_id(now);
        let received = match verdict {
            Ok(action) => {
                let ack = self.build_ack(command, Draft::new(types::CONTROL_ACCEPTED), ack_id, now, seqs)?;
                if let Action::Respond { request, .. } = &action {
                    self.requests.set_state(&request.id, RequestState::Answered { command: command.id().to_owned() });
                }
                Received::Fresh { command: command.clone(), action, ack }
            }
            Err((reason, detail)) => {
                let mut data = json!({ "reason": reason.as_str() });
                let mut draft = Draft::new(types::CONTROL_REJECTED);
                if let Some(d) = detail {
                    data["detail"] = Value::String(d);
                    draft = draft.capture(Capture::Full);
                }
                let ack = self.build_ack(command, draft.data(data), ack_id, now, seqs)?;
                Received::Nacked { ack, reason }
            }
        };
        self.dedupe.record(command.source(), command.id(), received.ack_bytes());
        Ok(received)
    }

    /// Reads a declared command into an action, or says why it is `invalid`.
    fn action_for(&self, command: &Event) -> Result<Action, (NackReason, Option<String>)> {
        let invalid = |detail: String| (NackReason::Invalid, Some(detail));
        let parsed = Command::from_event(command).map_err(|e| invalid(e.to_string()))?;
        Ok(match parsed {
            Command::Respond { request, answer } => {
                let Some((open, state)) = self.requests.get(&request) else {
                    return Err(invalid(format!("no open attention request {request}")));
                };
                match state {
                    RequestState::Open => {}
                    RequestState::Answered { .. } => {
                        return Err(invalid(format!("attention request {request} was already answered")))
                    }
                    RequestState::Closed => {
                        return Err(invalid(format!("attention request {request} is no longer open")))
                    }
                }
                if open.session.as_deref() != command.session() {
                    return Err(invalid(format!("attention request {request} belongs to another session")));
                }
                let applied = open.apply(&answer).map_err(|m| invalid(m.detail()))?;
                Action::Respond { request: open.clone(), applied }
            }
            Command::Cancel { scope, reason } => Action::Cancel { scope, reason },
            Command::Pause => Action::Pause,
            Command::Resume => Action::Resume,
            Command::Vendor { data, .. } => Action::Vendor { ty: command.ty().to_owned(), data },
        })
    }

    fn build_ack(
        &self,
        command: &Event,
        draft: Draft,
        id: String,
        now: UnixMs,
        seqs: &mut dyn Sequencer,
    ) -> Result<Event, TargetError> {
        self.seal(command, draft, id, now, seqs).map_err(TargetError::Build)
    }

    /// Every event the target emits in answer to `command`: caused by it,
    /// placed in its session at the agent's next position, and held to the
    /// capture ceiling.
    fn seal(
        &self,
        command: &Event,
        draft: Draft,
        id: String,
        now: UnixMs,
        seqs: &mut dyn Sequencer,
    ) -> Result<Event, BuildError> {
        let session = command.session().unwrap_or_default();
        let event = sequenced(draft.cause(command.id()), session, seqs).build(&self.identity, id, now)?;
        Ok(downlevel(&event, self.ceiling))
    }
}

/// What a target emits unless configured otherwise (AEP-0003 §9.1).
pub const DEFAULT_CEILING: Capture = Capture::Metadata;

/// Places `draft` in `session` at the agent's next position.
fn sequenced(draft: Draft, session: &str, seqs: &mut dyn Sequencer) -> Draft {
    let draft = draft.session(session).seq(seqs.next_seq(session));
    match seqs.epoch(session) {
        Some(epoch) => draft.epoch(epoch),
        None => draft,
    }
}
