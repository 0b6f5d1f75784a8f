//! The views of what the hub and the store hold, handed to JavaScript:
//! `Serialize` structs whose TypeScript declarations (derived with `tsify`)
//! are checked member by member against the package's `.d.ts`. Keys are
//! camelCase; absent facts are absent keys, never `null`. Agent-authored
//! text is carried as data, next to its provenance (agent, source, relay).

use aep_engine::client::hub::{Hub, RelayId};
use aep_engine::client::State;
use aep_engine::control::ack::Decision;
use aep_engine::control::sender::{CommandState, TrackedCommand};
use aep_engine::order;
use aep_engine::protocol::form::{Choice, FieldSpec};
use aep_engine::protocol::frame::{ControlCapability, RosterEntry as Claim};
use aep_engine::store::{
    self, AttentionKind, Closure, CommandStatus, OutcomeLink, Resolution, RunEnding, RunStatus, SessionKey as Key,
    Store, StreamViolation,
};
use aep_engine::time::UnixMs;
use serde::Serialize;
use serde_json::{Map, Value};
use tsify::Tsify;

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

/// An attention request and everything seen about it. Agent-authored text
/// (prompt, labels) is data: render it as text, next to its provenance
/// (agent, source, relay). The request's facts are absent until its
/// `attention.requested` event was seen.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct Card {
    pub id: String,
    pub session: SessionKey,
    #[tsify(type = "CardStatus")]
    pub status: &'static str,
    pub needs_answer: bool,
    #[tsify(type = "Severity")]
    pub severity: &'static str,
    pub first_seen: u64,
    /// Ids of the commands seen for this card.
    pub commands: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[tsify(type = "AttentionKind")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[tsify(type = "Choice[]")]
    pub options: Option<Vec<Choice>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[tsify(type = "FieldSpec[]")]
    pub fields: Option<Vec<FieldSpec>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub respond_via: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepts_control: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[tsify(type = "Capture")]
    pub capture: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Label of the relay the request arrived through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routed: Option<Vec<RoutedHop>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<CardAnswer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub close: Option<CardClose>,
}

/// A card dropped to stay within the store's bounds.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct EvictedCard {
    pub id: String,
    pub session: SessionKey,
    #[tsify(type = "'evicted'")]
    pub status: &'static str,
}

/// A consumer that forwarded a request (`attention.routed`).
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct RoutedHop {
    pub event_id: String,
    pub agent: String,
    pub source: String,
    pub time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay: Option<String>,
}

/// The answer a card received (`attention.answered`).
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CardAnswer {
    pub event_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[tsify(type = "{ [fieldId: string]: Json }")]
    pub values: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    pub time: String,
}

/// How a card closed.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CardClose {
    #[tsify(type = "'resolved' | 'timed-out'")]
    pub how: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u64>,
    pub event_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    pub time: String,
}

/// A session, short, for lists.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub key: SessionKey,
    pub source: String,
    pub name: String,
    pub agent: String,
    #[tsify(type = "SessionState")]
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
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
    #[tsify(type = "'evicted'")]
    pub state: &'static str,
}

/// One run of a session.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    pub name: String,
    #[tsify(type = "'open' | 'finished' | 'failed' | 'cancelled'")]
    pub status: &'static str,
    pub events: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_event: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<RunEnd>,
}

/// The event that ended a run.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct RunEnd {
    pub event_id: String,
    pub time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// A command's audit chain as the stream shows it (whoever sent it).
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CommandChain {
    pub id: String,
    #[tsify(type = "'awaiting-ack' | 'accepted' | 'rejected' | 'completed'")]
    pub status: &'static str,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub ty: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issued: Option<CommandIssued>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack: Option<CommandAck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<CommandOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_latency_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_latency_ms: Option<u64>,
}

/// The command event itself.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CommandIssued {
    #[serde(rename = "type")]
    pub ty: String,
    pub sender_agent: String,
    pub sender_source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay: Option<String>,
    pub time: String,
}

/// The target's ack of a command.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CommandAck {
    pub event_id: String,
    pub time: String,
    #[tsify(type = "'accepted' | 'rejected'")]
    pub decision: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The event that settled a command's outcome, and how it points back.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CommandOutcome {
    pub event_id: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[tsify(type = "'command' | 'ack'")]
    pub link: &'static str,
    pub time: String,
}

/// One session with its runs, cards and command chains: its summary and
/// what a session page shows beyond it.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct SessionDetail {
    #[serde(flatten)]
    pub summary: SessionSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<SessionStart>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<SessionEnd>,
    pub runs: Vec<RunView>,
    pub cards: Vec<Card>,
    pub commands: Vec<CommandChain>,
}

/// The `session.started` event of a session.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct SessionStart {
    pub event_id: String,
    pub time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// The `session.ended` event of a session.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct SessionEnd {
    pub event_id: String,
    pub time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A command this client sent, as it is followed.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CommandView {
    pub id: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay: Option<String>,
    #[tsify(type = "CommandState")]
    pub state: &'static str,
    pub sends: u32,
    pub window_ms: u64,
    pub first_sent: u64,
    pub last_sent: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_latency_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome_latency_ms: Option<u64>,
}

/// What the `command` listener receives: the view and what just changed.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct CommandUpdate {
    #[serde(flatten)]
    pub view: CommandView,
    #[tsify(type = "CommandChange")]
    pub change: &'static str,
}

/// One relay connection's status.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct RelayStatus {
    pub relay: String,
    #[tsify(type = "ConnectionState")]
    pub state: &'static str,
    /// Reconnect attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// When the reconnect happens (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<u64>,
    /// Why a refused connection was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why the previous socket was lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    /// A relay error frame that refused none of this client's commands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RelayError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_exhausted: Option<ReplayExhausted>,
    #[serde(skip_serializing_if = "Option::is_none")]
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
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct RelayError {
    pub code: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
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
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    #[tsify(type = "'stream' | 'control' | 'relay'")]
    pub origin: &'static str,
    pub rule: String,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionKey>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay: Option<String>,
}

/// A session a relay's roster lists, with its emitter's claim.
#[derive(Clone, Debug, Serialize, Tsify)]
pub struct RosterEntry {
    pub relay: String,
    pub session: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<RosterControl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emits: Option<Vec<String>>,
}

/// The commands a target takes and its ack window.
#[derive(Clone, Debug, Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct RosterControl {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepts: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
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
    #[tsify(type = "Evictions")]
    pub evicted: store::Evictions,
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
        status: c.status().as_str(),
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
        v.options = Some(r.options.clone());
        v.fields = (!r.fields.is_empty()).then(|| r.fields.clone());
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
                ("resolved", resolution, *latency_ms, None)
            }
            Closure::TimedOut { after_ms } => ("timed-out", None, None, *after_ms),
        };
        CardClose {
            how,
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
    EvictedCard { id: card.request.to_string(), session: session_key(&card.session), status: "evicted" }
}

/// A session the store dropped.
pub fn evicted_session(key: &Key) -> EvictedSession {
    EvictedSession {
        key: session_key(key),
        source: key.source.to_string(),
        name: key.name.to_string(),
        state: "evicted",
    }
}

fn run(r: &store::Run) -> RunView {
    let status = match r.status() {
        RunStatus::Open => "open",
        RunStatus::Ended(RunEnding::Finished) => "finished",
        RunStatus::Ended(RunEnding::Failed) => "failed",
        RunStatus::Ended(RunEnding::Cancelled) => "cancelled",
    };
    RunView {
        name: r.name().to_owned(),
        status,
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
        CommandStatus::AwaitingAck => "awaiting-ack",
        CommandStatus::Accepted => "accepted",
        CommandStatus::Rejected => "rejected",
        CommandStatus::Completed => "completed",
    };
    CommandChain {
        id: c.id().to_owned(),
        status,
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
                Decision::Accepted => ("accepted", None, None),
                Decision::Rejected { raw_reason, detail, .. } => ("rejected", raw_reason.clone(), detail.clone()),
            };
            CommandAck { event_id: a.event_id.to_string(), time: a.time.to_string(), decision, reason, detail }
        }),
        outcome: c.outcome().map(|x| CommandOutcome {
            event_id: x.event_id.to_string(),
            ty: x.ty.to_string(),
            link: if x.link == OutcomeLink::Command { "command" } else { "ack" },
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
        state: s.state().name(),
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
pub fn violation(origin: &'static str, rule: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        origin,
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
        ..violation("stream", v.rule.id(), v.detail.as_str())
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
        state: c.state().name(),
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
        CommandState::Pending { deadline } => v.deadline = Some(ms(*deadline)),
        CommandState::Accepted { ack } => v.ack_id = Some(ack.id().to_owned()),
        CommandState::Rejected { ack, raw_reason, detail, .. } => {
            v.ack_id = Some(ack.id().to_owned());
            v.reason = raw_reason.clone();
            v.detail = detail.clone();
        }
        CommandState::RelayRefused { code, detail } => {
            v.relay_code = Some(code.as_str().to_owned());
            v.detail = detail.clone();
        }
        CommandState::TimedOut => v.reason = Some("timeout".to_owned()),
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
        state: state.name(),
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
        evicted: store.evictions(),
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
