//! The views of what the hub and the store hold, handed to JavaScript:
//! `Serialize` structs whose TypeScript declarations (derived with `tsify`)
//! are checked member by member against the package's `.d.ts`. Keys are
//! camelCase; absent facts are absent keys, never `null`. Agent-authored
//! text is carried as data, next to its provenance (agent, source, relay).

use aep_engine::client::hub::{Hub, RelayId};
use aep_engine::client::State;
use aep_engine::control::ack::Decision;
use aep_engine::control::answer::AppliedRule;
use aep_engine::control::sender::{self, CancelScope, TrackedCommand};
use aep_engine::control::target::Action;
use aep_engine::order;
use aep_engine::protocol::form;
use aep_engine::protocol::frame::{ControlCapability, RosterEntry as Claim};
use aep_engine::protocol::vocabulary::NackReason;
use aep_engine::store::{
    self, AttentionKind, CardStatus, Closure, CommandStatus, Resolution, RunEnding, RunStatus, SessionKey as Key,
    SessionState, Store, StreamViolation,
};
use aep_engine::time::UnixMs;
use serde::Serialize;
use serde_json::{Map, Value};
use serde_with::skip_serializing_none;
use tsify::Tsify;
use wasm_bindgen::JsValue;

use crate::error::NackKind;

/// A session's identity: the owning emitter's `source` and the session name.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct SessionKey {
    pub source: String,
    pub name: String,
}

/// A session position `(epoch, seq)`.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct Position {
    pub epoch: u64,
    pub seq: u64,
}

/// The name of a member of one of the closed sets below (or the store's
/// `CardStatus` and `SessionState`), as a view carries it: made only from
/// one of those enums, so no view holds a name outside its set, and
/// written as a string by one serializer for all of them (a serializer per
/// set would cost the size-budgeted package several kilobytes). Each
/// field says which set's union TypeScript sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Name(&'static str);

impl Name {
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

macro_rules! named {
    ($($set:ty),* $(,)?) => {
        $(impl From<$set> for Name {
            fn from(member: $set) -> Name {
                Name(member.into())
            }
        })*
    };
}

named!(
    Evicted,
    CloseHow,
    RunState,
    ChainStatus,
    AckDecision,
    OutcomeLink,
    ViolationOrigin,
    CommandState,
    ConnectionState,
    CommandChange,
    FieldType,
    AnswerRule,
    CardStatus,
    SessionState,
    CancelScope,
);

/// What an evicted card or session says in place of its status: the store
/// dropped it to stay within its bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Evicted {
    Evicted,
}

/// How a card closed: resolved by its emitter, or expired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum CloseHow {
    Resolved,
    TimedOut,
}

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum RunState {
    Open,
    Finished,
    Failed,
    Cancelled,
}

/// Where a command's audit chain stands, as the stream shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum ChainStatus {
    AwaitingAck,
    Accepted,
    Rejected,
    Completed,
}

/// What a target's ack decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum AckDecision {
    Accepted,
    Rejected,
}

/// Which link an outcome's `cause` followed: the command, or its ack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum OutcomeLink {
    Command,
    Ack,
}

/// Whose rule a violation broke: the stream's, the control profile's, or a
/// relay's complaint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum ViolationOrigin {
    Stream,
    Control,
    Relay,
}

/// Where a command stands on its way to a decision (the sender's
/// `CommandState`, without what each state holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum CommandState {
    Pending,
    Accepted,
    Rejected,
    RelayRefused,
    /// No ack within the window: decided here, never sent by anyone.
    #[serde(rename = "timeout")]
    #[strum(serialize = "timeout")]
    TimedOut,
}

impl From<&sender::CommandState> for CommandState {
    fn from(state: &sender::CommandState) -> Self {
        match state {
            sender::CommandState::Pending { .. } => CommandState::Pending,
            sender::CommandState::Accepted { .. } => CommandState::Accepted,
            sender::CommandState::Rejected { .. } => CommandState::Rejected,
            sender::CommandState::RelayRefused { .. } => CommandState::RelayRefused,
            sender::CommandState::TimedOut => CommandState::TimedOut,
        }
    }
}

/// A relay connection's lifecycle (the client's `State`, without what each
/// state holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum ConnectionState {
    Idle,
    Connecting,
    Handshaking,
    Live,
    Reconnecting,
    Refused,
    Closed,
}

impl From<&State> for ConnectionState {
    fn from(state: &State) -> Self {
        match state {
            State::Idle => ConnectionState::Idle,
            State::Connecting => ConnectionState::Connecting,
            State::Handshaking => ConnectionState::Handshaking,
            State::Live => ConnectionState::Live,
            State::Reconnecting { .. } => ConnectionState::Reconnecting,
            State::Refused { .. } => ConnectionState::Refused,
            State::Closed => ConnectionState::Closed,
        }
    }
}

/// What just happened to a command, as the `command` listener is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum CommandChange {
    Sent,
    Retried,
    Accepted,
    Rejected,
    RelayRefused,
    /// No ack within the window.
    #[serde(rename = "timeout")]
    #[strum(serialize = "timeout")]
    TimedOut,
    Outcome,
    Violation,
}

impl From<&sender::CommandChange> for CommandChange {
    fn from(change: &sender::CommandChange) -> Self {
        match change {
            sender::CommandChange::Sent => CommandChange::Sent,
            sender::CommandChange::Retried => CommandChange::Retried,
            sender::CommandChange::Accepted => CommandChange::Accepted,
            sender::CommandChange::Rejected => CommandChange::Rejected,
            sender::CommandChange::RelayRefused => CommandChange::RelayRefused,
            sender::CommandChange::TimedOut => CommandChange::TimedOut,
            sender::CommandChange::Outcome => CommandChange::Outcome,
            sender::CommandChange::Violation(_) => CommandChange::Violation,
        }
    }
}

/// One offered choice: `id` is what an answer carries, `label` what a
/// person reads.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct Choice {
    pub id: String,
    pub label: String,
}

impl From<&form::Choice> for Choice {
    fn from(c: &form::Choice) -> Self {
        Choice { id: c.id.clone(), label: c.label.clone() }
    }
}

/// The four field primitives of a form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum FieldType {
    String,
    Number,
    Boolean,
    Select,
}

/// One field of a form (AEP-0002 §5.2), as the engine read it.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct FieldSpec {
    pub id: String,
    #[serde(rename = "type")]
    #[tsify(type = "FieldType")]
    pub ty: Name,
    pub label: String,
    pub required: Option<bool>,
    /// `select` only: several choices may be picked (answer is an array).
    pub multi: Option<bool>,
    /// `select` only: free text is allowed instead of a choice id.
    pub other: Option<bool>,
    pub choices: Option<Vec<Choice>>,
    /// `number` only, inclusive.
    pub min: Option<f64>,
    /// `number` only, inclusive.
    pub max: Option<f64>,
}

impl From<&form::FieldSpec> for FieldSpec {
    fn from(f: &form::FieldSpec) -> Self {
        // Destructured whole: a member the engine adds is a compile error here.
        let form::FieldSpec { id, ty, label, required, multi, other, choices, min, max } = f;
        // As on the wire: flags only when set, choices only when there are some.
        FieldSpec {
            id: id.clone(),
            ty: match ty {
                form::FieldType::String => FieldType::String,
                form::FieldType::Number => FieldType::Number,
                form::FieldType::Boolean => FieldType::Boolean,
                form::FieldType::Select => FieldType::Select,
            }
            .into(),
            label: label.clone(),
            required: required.then_some(true),
            multi: multi.then_some(true),
            other: other.then_some(true),
            choices: (!choices.is_empty()).then(|| choices.iter().map(Choice::from).collect()),
            min: *min,
            max: *max,
        }
    }
}

/// What a command's promise resolves with once the target accepted it.
#[derive(Debug, Serialize, Tsify)]
pub struct Accepted {
    /// The target's `control.accepted`.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    #[tsify(type = "AepEvent")]
    pub ack: JsValue,
    /// Resolves with the first event the command caused.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    #[tsify(type = "Promise<AepEvent>")]
    pub outcome: JsValue,
}

/// An attention request and everything seen about it. Agent-authored text
/// (prompt, labels) is data: render it as text, next to its provenance
/// (agent, source, relay). The request's facts are absent until its
/// `attention.requested` event was seen.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct Card {
    pub id: String,
    pub session: SessionKey,
    #[tsify(type = "CardStatus")]
    pub status: Name,
    pub needs_answer: bool,
    #[tsify(type = "Severity")]
    pub severity: &'static str,
    pub first_seen: u64,
    /// Ids of the commands seen for this card.
    pub commands: Vec<String>,
    pub latency_ms: Option<u64>,
    #[tsify(type = "AttentionKind")]
    pub kind: Option<String>,
    pub prompt: Option<String>,
    pub options: Option<Vec<Choice>>,
    pub fields: Option<Vec<FieldSpec>>,
    pub fields_error: Option<String>,
    pub respond_via: Option<Vec<String>>,
    pub accepts_control: Option<bool>,
    pub expires_at: Option<u64>,
    #[tsify(type = "Capture")]
    pub capture: Option<&'static str>,
    pub agent: Option<String>,
    pub source: Option<String>,
    pub run: Option<String>,
    pub subject: Option<String>,
    /// Label of the relay the request arrived through.
    pub relay: Option<String>,
    pub time: Option<String>,
    pub requested_at: Option<u64>,
    pub received_at: Option<u64>,
    pub routed: Option<Vec<RoutedHop>>,
    pub answer: Option<CardAnswer>,
    pub close: Option<CardClose>,
}

/// A card dropped to stay within the store's bounds.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct EvictedCard {
    pub id: String,
    pub session: SessionKey,
    #[tsify(type = "Evicted")]
    pub status: Name,
}

/// A consumer that forwarded a request (`attention.routed`).
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct RoutedHop {
    pub event_id: String,
    pub agent: String,
    pub source: String,
    pub time: String,
    pub relay: Option<String>,
}

/// The answer a card received (`attention.answered`).
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CardAnswer {
    pub event_id: String,
    pub option: Option<String>,
    pub text: Option<String>,
    #[tsify(type = "{ [fieldId: string]: Json }")]
    pub values: Option<Map<String, Value>>,
    pub by: Option<String>,
    pub via: Option<String>,
    pub cause: Option<String>,
    pub time: String,
}

/// How a card closed.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CardClose {
    #[tsify(type = "CloseHow")]
    pub how: Name,
    pub resolution: Option<String>,
    pub latency_ms: Option<u64>,
    pub after_ms: Option<u64>,
    pub event_id: String,
    pub cause: Option<String>,
    pub time: String,
}

/// A session, short, for lists.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub key: SessionKey,
    pub source: String,
    pub name: String,
    pub agent: String,
    #[tsify(type = "SessionState")]
    pub state: Name,
    pub label: Option<String>,
    pub position: Option<Position>,
    /// Cards waiting on a person.
    pub pending: u64,
    pub events: u64,
    pub first_seen: u64,
    pub updated_at: u64,
}

/// A session dropped to stay within the store's bounds.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct EvictedSession {
    pub key: SessionKey,
    pub source: String,
    pub name: String,
    #[tsify(type = "Evicted")]
    pub state: Name,
}

/// One run of a session.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    pub name: String,
    #[tsify(type = "RunState")]
    pub status: Name,
    pub events: u64,
    pub started_event: Option<String>,
    pub started_time: Option<String>,
    pub end: Option<RunEnd>,
}

/// The event that ended a run.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct RunEnd {
    pub event_id: String,
    pub time: String,
    pub cause: Option<String>,
    pub reason: Option<String>,
    pub by: Option<String>,
}

/// A command's audit chain as the stream shows it (whoever sent it).
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CommandChain {
    pub id: String,
    #[tsify(type = "ChainStatus")]
    pub status: Name,
    #[serde(rename = "type")]
    pub ty: Option<String>,
    pub issued: Option<CommandIssued>,
    pub ack: Option<CommandAck>,
    pub outcome: Option<CommandOutcome>,
    pub ack_latency_ms: Option<u64>,
    pub outcome_latency_ms: Option<u64>,
}

/// The command event itself.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CommandIssued {
    #[serde(rename = "type")]
    pub ty: String,
    pub sender_agent: String,
    pub sender_source: String,
    pub run: Option<String>,
    pub subject: Option<String>,
    pub relay: Option<String>,
    pub time: String,
}

/// The target's ack of a command.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CommandAck {
    pub event_id: String,
    pub time: String,
    #[tsify(type = "AckDecision")]
    pub decision: Name,
    pub reason: Option<String>,
    pub detail: Option<String>,
}

/// The event that settled a command's outcome, and how it points back.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CommandOutcome {
    pub event_id: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[tsify(type = "OutcomeLink")]
    pub link: Name,
    pub time: String,
}

/// One session with its runs, cards and command chains: its summary and
/// what a session page shows beyond it.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct SessionDetail {
    #[serde(flatten)]
    pub summary: SessionSummary,
    pub started: Option<SessionStart>,
    pub end: Option<SessionEnd>,
    pub runs: Vec<RunView>,
    pub cards: Vec<Card>,
    pub commands: Vec<CommandChain>,
}

/// The `session.started` event of a session.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct SessionStart {
    pub event_id: String,
    pub time: String,
    pub label: Option<String>,
    pub parent: Option<String>,
}

/// The `session.ended` event of a session.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct SessionEnd {
    pub event_id: String,
    pub time: String,
    pub reason: Option<String>,
}

/// A command this client sent, as it is followed.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CommandView {
    pub id: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub session: Option<String>,
    pub run: Option<String>,
    pub subject: Option<String>,
    pub relay: Option<String>,
    #[tsify(type = "CommandState")]
    pub state: Name,
    pub sends: u32,
    pub window_ms: u64,
    pub first_sent: u64,
    pub last_sent: u64,
    pub settled_at: Option<u64>,
    pub deadline: Option<u64>,
    pub ack_id: Option<String>,
    pub reason: Option<String>,
    pub detail: Option<String>,
    pub relay_code: Option<String>,
    pub outcome_id: Option<String>,
    pub outcome_type: Option<String>,
    pub ack_latency_ms: Option<u64>,
    pub outcome_latency_ms: Option<u64>,
}

/// What the `command` listener receives: the view and what just changed.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct CommandUpdate {
    #[serde(flatten)]
    pub view: CommandView,
    #[tsify(type = "CommandChange")]
    pub change: Name,
}

/// One relay connection's status.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct RelayStatus {
    pub relay: String,
    #[tsify(type = "ConnectionState")]
    pub state: Name,
    /// Reconnect attempt.
    pub attempt: Option<u32>,
    /// When the reconnect happens (ms since the epoch).
    pub retry_at: Option<u64>,
    /// Why a refused connection was refused.
    pub reason: Option<String>,
    /// Why the previous socket was lost.
    pub lost: Option<String>,
    /// A relay error frame that refused none of this client's commands.
    pub error: Option<RelayError>,
    pub replay_exhausted: Option<ReplayExhausted>,
    pub closing: Option<String>,
}

/// An agent's connection status, with what it holds back.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct AgentStatus {
    #[serde(flatten)]
    pub status: RelayStatus,
    /// Events waiting for a live socket (kept across reconnects).
    pub queued: u64,
    /// `debug`/`info` events dropped to make room in a full queue.
    pub dropped: u64,
}

/// A relay `error` frame that refused none of this client's commands.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct RelayError {
    pub code: String,
    pub detail: Option<String>,
    pub id: Option<String>,
    pub cause: Option<String>,
}

/// Where the relay's history of a session being resumed now starts.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct ReplayExhausted {
    pub session: String,
    pub epoch: u64,
    pub seq: u64,
}

/// A broken rule: of the stream, of the control profile, or a relay's
/// complaint.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    #[tsify(type = "ViolationOrigin")]
    pub origin: Name,
    pub rule: String,
    pub detail: String,
    pub reference: Option<String>,
    pub event_id: Option<String>,
    pub session: Option<SessionKey>,
    pub command_id: Option<String>,
    pub relay: Option<String>,
}

/// A session a relay's roster lists, with its emitter's claim.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct RosterEntry {
    pub relay: String,
    pub session: String,
    pub agent: Option<String>,
    pub instance: Option<String>,
    pub control: Option<RosterControl>,
    pub emits: Option<Vec<String>>,
}

/// The commands a target takes and its ack window.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct RosterControl {
    pub accepts: Option<Vec<String>>,
    pub ack_window_ms: Option<u64>,
}

/// What a fold of a whole stream amounts to.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct Projection {
    pub sessions: Vec<SessionSummary>,
    pub inbox: Vec<Card>,
    pub violations: Vec<Violation>,
    pub counts: Counts,
    /// What `limits` made the fold drop; all zero when it holds everything.
    pub evicted: Evictions,
    /// What could not be folded (`projectState`'s input only).
    pub rejected: Rejected,
}

/// Inputs that were not events: how many, and the first few.
#[derive(Clone, Debug, Default, Serialize, Tsify)]
pub struct Rejected {
    pub count: u64,
    pub first: Vec<RejectedLine>,
}

/// One input that was not an event, by its index (line or element).
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct RejectedLine {
    pub index: u64,
    pub error: String,
}

/// How much a fold holds.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct Counts {
    pub sessions: u64,
    pub events: u64,
    pub runs: u64,
    pub cards: u64,
    pub pending: u64,
    pub commands: u64,
    pub agents: u64,
    pub unattached: u64,
    pub violations: u64,
}

/// How an accepted answer came to be what is applied (the engine's
/// `AppliedRule`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum AnswerRule {
    AsSent,
    TextNamedOption,
    UnmatchedTextRefused,
}

/// What an accepted command asks the agent to do.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum TargetAction {
    Respond {
        request: String,
        #[tsify(type = "AnswerInput")]
        answer: Value,
        #[tsify(type = "AnswerRule")]
        rule: Name,
    },
    Cancel {
        #[tsify(type = "CancelScope")]
        scope: Name,
        reason: Option<String>,
    },
    Pause,
    Resume,
    Vendor {
        #[serde(rename = "commandType")]
        command_type: String,
        #[tsify(type = "{ [key: string]: Json }")]
        data: Map<String, Value>,
    },
}

impl From<&Action> for TargetAction {
    fn from(action: &Action) -> Self {
        match action {
            Action::Respond { request, applied } => TargetAction::Respond {
                request: request.id.to_string(),
                answer: applied.answer.to_value(),
                rule: match applied.rule {
                    AppliedRule::AsSent => AnswerRule::AsSent,
                    AppliedRule::TextNamedOption => AnswerRule::TextNamedOption,
                    AppliedRule::UnmatchedTextRefused => AnswerRule::UnmatchedTextRefused,
                }
                .into(),
            },
            Action::Cancel { scope, reason } => TargetAction::Cancel { scope: (*scope).into(), reason: reason.clone() },
            Action::Pause => TargetAction::Pause,
            Action::Resume => TargetAction::Resume,
            Action::Vendor { ty, data } => TargetAction::Vendor { command_type: ty.clone(), data: data.clone() },
        }
    }
}

/// What receiving a command came to; `ack` is the event already queued
/// (the JavaScript object of its exact bytes).
#[derive(Debug, Serialize, Tsify)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Received {
    Fresh {
        #[serde(with = "serde_wasm_bindgen::preserve")]
        #[tsify(type = "AepEvent")]
        ack: JsValue,
        action: TargetAction,
    },
    Nacked {
        #[serde(with = "serde_wasm_bindgen::preserve")]
        #[tsify(type = "AepEvent")]
        ack: JsValue,
        reason: NackReason,
    },
    Duplicate {
        #[serde(with = "serde_wasm_bindgen::preserve")]
        #[tsify(type = "AepEvent")]
        ack: JsValue,
    },
}

/// A rule an event breaks on its own (`validateEvent`).
// These results keep their keys in alphabetical order, as the package
// has always listed them.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct EventViolation {
    pub detail: String,
    pub rule: String,
}

/// What `validateEvent` found.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct EventValidation {
    pub valid: bool,
    pub violations: Vec<EventViolation>,
}

/// Why a filter is invalid.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct FilterError {
    pub code: String,
    pub detail: String,
    pub key: Option<String>,
}

/// What `validateFilter` found.
#[skip_serializing_none]
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct FilterValidation {
    pub error: Option<FilterError>,
    pub valid: bool,
}

/// A resume position: what `positions()` returns per relay and
/// `restorePositions` takes back.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct SessionPosition {
    pub epoch: u64,
    pub seq: u64,
    pub session: String,
}

/// What a bounded fold dropped, by kind (the store's `Evictions`).
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct Evictions {
    pub sessions: u64,
    pub events: u64,
    pub runs: u64,
    pub cards: u64,
    pub commands: u64,
    pub agents: u64,
    pub agent_events: u64,
    pub unattached: u64,
    pub seen_ids: u64,
    pub changes: u64,
    pub violations: u64,
}

impl From<store::Evictions> for Evictions {
    fn from(e: store::Evictions) -> Self {
        // Destructured whole: a count the store adds is a compile error here.
        let store::Evictions {
            sessions,
            events,
            runs,
            cards,
            commands,
            agents,
            agent_events,
            unattached,
            seen_ids,
            changes,
            violations,
        } = e;
        Evictions {
            sessions,
            events,
            runs,
            cards,
            commands,
            agents,
            agent_events,
            unattached,
            seen_ids,
            changes,
            violations,
        }
    }
}

fn ms(t: UnixMs) -> u64 {
    t.0
}

fn count(n: usize) -> u64 {
    n as u64
}

pub fn session_key(key: &Key) -> SessionKey {
    SessionKey { source: key.source.to_string(), name: key.name.to_string() }
}

fn position((epoch, seq): (u64, u64)) -> Position {
    Position { epoch, seq }
}

/// One attention card.
pub fn card(c: &store::Card) -> Card {
    let mut v = Card {
        id: c.id().to_owned(),
        session: session_key(c.session()),
        status: c.status().into(),
        needs_answer: c.needs_answer(),
        severity: c.severity().as_str(),
        first_seen: ms(c.first_seen()),
        commands: c.commands().iter().map(|id| id.to_string()).collect(),
        latency_ms: c.latency_ms(),
        kind: None,
        prompt: None,
        options: None,
        fields: None,
        fields_error: None,
        respond_via: None,
        accepts_control: None,
        expires_at: None,
        capture: None,
        agent: None,
        source: None,
        run: None,
        subject: None,
        relay: None,
        time: None,
        requested_at: None,
        received_at: None,
        routed: None,
        answer: None,
        close: None,
    };
    if let Some(r) = c.request() {
        v.kind = r.kind.as_ref().map(|k| AttentionKind::as_str(k).to_owned());
        v.prompt = r.prompt.clone();
        v.options = Some(r.options.iter().map(Choice::from).collect());
        v.fields = (!r.fields.is_empty()).then(|| r.fields.iter().map(FieldSpec::from).collect());
        v.fields_error = r.fields_error.as_ref().map(|e| e.to_string());
        v.respond_via = r.respond_via.as_ref().map(|all| all.iter().map(|ch| ch.as_str().to_owned()).collect());
        v.accepts_control = Some(r.accepts_control());
        v.expires_at = r.expires_at.map(ms);
        v.capture = Some(r.capture.as_str());
        v.agent = Some(r.agent.to_string());
        v.source = Some(r.source.to_string());
        v.run = r.run.clone();
        v.subject = r.subject.clone();
        v.relay = r.relay.as_deref().map(str::to_owned);
        v.time = Some(r.time.to_string());
        v.requested_at = r.at.map(ms);
        v.received_at = Some(ms(r.received_at));
    }
    if !c.routed().is_empty() {
        v.routed = Some(
            c.routed()
                .iter()
                .map(|h| RoutedHop {
                    event_id: h.event_id.to_string(),
                    agent: h.agent.to_string(),
                    source: h.source.to_string(),
                    time: h.time.to_string(),
                    relay: h.relay.as_deref().map(str::to_owned),
                })
                .collect(),
        );
    }
    v.answer = c.answer().map(|a| CardAnswer {
        event_id: a.event_id.to_string(),
        option: a.option.clone(),
        text: a.text.clone(),
        values: a.values.clone(),
        by: a.by.clone(),
        via: a.via.as_ref().map(|via| via.as_str().to_owned()),
        cause: a.cause.clone(),
        time: a.time.to_string(),
    });
    v.close = c.close().map(|cl| {
        let (how, resolution, latency_ms, after_ms) = match &cl.how {
            Closure::Resolved { resolution, latency_ms } => {
                let resolution = resolution.as_ref().map(|r| match r {
                    Resolution::Answered => "answered".to_owned(),
                    Resolution::Auto => "auto".to_owned(),
                    Resolution::Dismissed => "dismissed".to_owned(),
                    Resolution::Unrecognized(s) => s.clone(),
                });
                (CloseHow::Resolved, resolution, *latency_ms, None)
            }
            Closure::TimedOut { after_ms } => (CloseHow::TimedOut, None, None, *after_ms),
        };
        CardClose {
            how: how.into(),
            resolution,
            latency_ms,
            after_ms,
            event_id: cl.event_id.to_string(),
            cause: cl.cause.clone(),
            time: cl.time.to_string(),
        }
    });
    v
}

/// A card the store dropped.
pub fn evicted_card(card: &store::CardRef) -> EvictedCard {
    EvictedCard { id: card.request.to_string(), session: session_key(&card.session), status: Evicted::Evicted.into() }
}

/// A session the store dropped.
pub fn evicted_session(key: &Key) -> EvictedSession {
    EvictedSession {
        key: session_key(key),
        source: key.source.to_string(),
        name: key.name.to_string(),
        state: Evicted::Evicted.into(),
    }
}

fn run(r: &store::Run) -> RunView {
    let status = match r.status() {
        RunStatus::Open => RunState::Open,
        RunStatus::Ended(RunEnding::Finished) => RunState::Finished,
        RunStatus::Ended(RunEnding::Failed) => RunState::Failed,
        RunStatus::Ended(RunEnding::Cancelled) => RunState::Cancelled,
    };
    RunView {
        name: r.name().to_owned(),
        status: status.into(),
        events: r.events(),
        started_event: r.started_event().map(str::to_owned),
        started_time: r.started_time().map(str::to_owned),
        end: r.end().map(|e| RunEnd {
            event_id: e.event_id.to_string(),
            time: e.time.to_string(),
            cause: e.cause.clone(),
            reason: e.reason.clone(),
            by: e.by.clone(),
        }),
    }
}

/// A command's audit chain as the stream shows it (whoever sent it).
pub fn chain(c: &store::CommandChain) -> CommandChain {
    let status = match c.status() {
        CommandStatus::AwaitingAck => ChainStatus::AwaitingAck,
        CommandStatus::Accepted => ChainStatus::Accepted,
        CommandStatus::Rejected => ChainStatus::Rejected,
        CommandStatus::Completed => ChainStatus::Completed,
    };
    CommandChain {
        id: c.id().to_owned(),
        status: status.into(),
        ty: c.ty().map(str::to_owned),
        issued: c.issued().map(|i| CommandIssued {
            ty: i.ty.to_string(),
            sender_agent: i.sender_agent.to_string(),
            sender_source: i.sender_source.to_string(),
            run: i.run.clone(),
            subject: i.subject.clone(),
            relay: i.relay.as_deref().map(str::to_owned),
            time: i.time.to_string(),
        }),
        ack: c.ack().map(|a| {
            let (decision, reason, detail) = match &a.decision {
                Decision::Accepted => (AckDecision::Accepted, None, None),
                Decision::Rejected { raw_reason, detail, .. } => {
                    (AckDecision::Rejected, raw_reason.clone(), detail.clone())
                }
            };
            CommandAck {
                event_id: a.event_id.to_string(),
                time: a.time.to_string(),
                decision: decision.into(),
                reason,
                detail,
            }
        }),
        outcome: c.outcome().map(|x| CommandOutcome {
            event_id: x.event_id.to_string(),
            ty: x.ty.to_string(),
            link: match x.link {
                store::OutcomeLink::Command => OutcomeLink::Command,
                store::OutcomeLink::Ack => OutcomeLink::Ack,
            }
            .into(),
            time: x.time.to_string(),
        }),
        ack_latency_ms: c.ack_latency_ms(),
        outcome_latency_ms: c.outcome_latency_ms(),
    }
}

/// One session with its runs, cards and command chains.
pub fn session(s: &store::Session) -> SessionDetail {
    let mut cards: Vec<&store::Card> = s.cards().collect();
    order::sort_by(&mut cards, |a, b| (a.first_seen(), a.arrival()).cmp(&(b.first_seen(), b.arrival())));
    SessionDetail {
        summary: session_summary(s),
        started: s.started().map(|st| SessionStart {
            event_id: st.event_id.to_string(),
            time: st.time.to_string(),
            label: st.label.clone(),
            parent: st.parent.clone(),
        }),
        end: s.end().map(|e| SessionEnd {
            event_id: e.event_id.to_string(),
            time: e.time.to_string(),
            reason: e.reason.clone(),
        }),
        runs: s.runs().map(run).collect(),
        cards: cards.into_iter().map(card).collect(),
        commands: s.commands().map(chain).collect(),
    }
}

/// A short summary of a session, for lists.
pub fn session_summary(s: &store::Session) -> SessionSummary {
    SessionSummary {
        key: session_key(s.key()),
        source: s.source().to_owned(),
        name: s.name().to_owned(),
        agent: s.agent().to_owned(),
        state: s.state().into(),
        label: s.started().and_then(|st| st.label.clone()),
        position: s.position().map(position),
        pending: count(s.pending_count()),
        events: count(s.timeline().len()),
        first_seen: ms(s.first_seen()),
        updated_at: ms(s.updated_at()),
    }
}

/// A violation with only its origin, rule and detail; the rest is added by
/// whoever knows it.
pub fn violation(origin: ViolationOrigin, rule: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        origin: origin.into(),
        rule: rule.into(),
        detail: detail.into(),
        reference: None,
        event_id: None,
        session: None,
        command_id: None,
        relay: None,
    }
}

/// A stream rule the fold found broken.
pub fn stream_violation(v: &StreamViolation) -> Violation {
    Violation {
        reference: Some(v.rule.reference().to_owned()),
        event_id: Some(v.event_id.to_string()),
        session: v.session.as_ref().map(session_key),
        ..violation(ViolationOrigin::Stream, v.rule.id(), v.detail.as_str())
    }
}

/// A command of ours, as the sender follows it.
pub fn tracked(c: &TrackedCommand, relay: Option<&str>) -> CommandView {
    let e = c.command();
    let times = c.times();
    let mut v = CommandView {
        id: c.id().to_owned(),
        ty: e.ty().to_owned(),
        session: e.session().map(str::to_owned),
        run: e.run().map(str::to_owned),
        subject: e.subject().map(str::to_owned),
        relay: relay.map(str::to_owned),
        state: CommandState::from(c.state()).into(),
        sends: c.sends(),
        window_ms: c.window_ms(),
        first_sent: ms(times.first_sent),
        last_sent: ms(times.last_sent),
        settled_at: times.settled.map(ms),
        deadline: None,
        ack_id: None,
        reason: None,
        detail: None,
        relay_code: None,
        outcome_id: c.outcome().map(|o| o.id().to_owned()),
        outcome_type: c.outcome().map(|o| o.ty().to_owned()),
        ack_latency_ms: c.ack_latency_ms(),
        outcome_latency_ms: c.outcome_latency_ms(),
    };
    match c.state() {
        sender::CommandState::Pending { deadline } => v.deadline = Some(ms(*deadline)),
        sender::CommandState::Accepted { ack } => v.ack_id = Some(ack.id().to_owned()),
        sender::CommandState::Rejected { ack, raw_reason, detail, .. } => {
            v.ack_id = Some(ack.id().to_owned());
            v.reason = raw_reason.clone();
            v.detail = detail.clone();
        }
        sender::CommandState::RelayRefused { code, detail } => {
            v.relay_code = Some(code.as_str().to_owned());
            v.detail = detail.clone();
        }
        sender::CommandState::TimedOut => v.reason = Some(NackKind::Timeout.as_str().to_owned()),
    }
    v
}

fn control(c: &ControlCapability) -> RosterControl {
    RosterControl { accepts: c.accepts.clone(), ack_window_ms: c.ack_window_ms }
}

pub fn roster_entry(e: &Claim, relay: &str) -> RosterEntry {
    RosterEntry {
        relay: relay.to_owned(),
        session: e.session.clone(),
        agent: e.agent.clone(),
        instance: e.instance.clone(),
        control: e.control.as_ref().map(control),
        emits: e.emits.clone(),
    }
}

/// One relay connection's status.
pub fn status(relay: &str, state: &State) -> RelayStatus {
    let mut v = RelayStatus {
        relay: relay.to_owned(),
        state: ConnectionState::from(state).into(),
        attempt: None,
        retry_at: None,
        reason: None,
        lost: None,
        error: None,
        replay_exhausted: None,
        closing: None,
    };
    match state {
        State::Reconnecting { attempt, at } => {
            v.attempt = Some(*attempt);
            v.retry_at = Some(ms(*at));
        }
        State::Refused { reason } => v.reason = Some(reason.to_string()),
        _ => {}
    }
    v
}

/// Cards waiting on a person, most severe, then soonest to expire, then oldest first.
pub fn inbox(store: &Store) -> Vec<Card> {
    store.inbox().into_iter().map(card).collect()
}

/// Every session, most recently updated first, summarised.
pub fn sessions(store: &Store) -> Vec<SessionSummary> {
    let mut all: Vec<&store::Session> = store.sessions().collect();
    order::sort_by(&mut all, |a, b| b.updated_at().cmp(&a.updated_at()).then_with(|| a.key().cmp(b.key())));
    all.into_iter().map(session_summary).collect()
}

/// What a fold of a whole stream amounts to.
pub fn projection(store: &Store) -> Projection {
    let c = store.counts();
    let mut all: Vec<&store::Session> = store.sessions().collect();
    order::sort_by(&mut all, |a, b| a.key().cmp(b.key()));
    Projection {
        sessions: all.into_iter().map(session_summary).collect(),
        inbox: inbox(store),
        violations: store.violations().map(stream_violation).collect(),
        counts: Counts {
            sessions: count(c.sessions),
            events: count(c.events),
            runs: count(c.runs),
            cards: count(c.cards),
            pending: count(c.pending),
            commands: count(c.commands),
            agents: count(c.agents),
            unattached: count(c.unattached),
            violations: c.violations,
        },
        evicted: store.evictions().into(),
        rejected: Rejected::default(),
    }
}

/// Every relay's latest roster.
pub fn rosters(hub: &Hub, relay: Option<RelayId>) -> Vec<RosterEntry> {
    let ids: Vec<RelayId> = match relay {
        Some(r) => vec![r],
        None => (0..hub.relay_count()).collect(),
    };
    let mut out = Vec::new();
    for id in ids {
        let label = hub.label(id).unwrap_or_default();
        let mut entries: Vec<&Claim> = hub.roster(id).collect();
        order::sort_by(&mut entries, |a, b| a.session.cmp(&b.session));
        out.extend(entries.into_iter().map(|e| roster_entry(e, label)));
    }
    out
}

#[cfg(test)]
mod tests {
    use strum::VariantArray;

    use super::*;

    /// TypeScript's unions are derived from serde's names, JavaScript gets
    /// strum's: every member of every set has one name.
    fn one_name<T: Serialize + Copy + VariantArray + Into<Name>>() {
        for &member in T::VARIANTS {
            assert_eq!(serde_json::to_value(member).unwrap(), member.into().as_str());
        }
    }

    #[test]
    fn every_member_of_a_set_has_one_name() {
        one_name::<Evicted>();
        one_name::<CloseHow>();
        one_name::<RunState>();
        one_name::<ChainStatus>();
        one_name::<AckDecision>();
        one_name::<OutcomeLink>();
        one_name::<ViolationOrigin>();
        one_name::<CommandState>();
        one_name::<ConnectionState>();
        one_name::<CommandChange>();
        one_name::<FieldType>();
        one_name::<AnswerRule>();
    }

    #[test]
    fn the_stores_states_keep_their_names() {
        for (status, name) in [(CardStatus::TimedOut, "timed-out"), (CardStatus::Pending, "pending")] {
            assert_eq!(serde_json::to_value(status).unwrap(), name);
            assert_eq!(Name::from(status).as_str(), name);
        }
        assert_eq!(Name::from(SessionState::Paused).as_str(), "paused");
        assert_eq!(Name::from(CancelScope::Session).as_str(), "session");
    }
}
