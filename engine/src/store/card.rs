//! Attention cards (AEP-0002 §7), reconstructed from `subject` alone.
//!
//! A card is keyed by the id of its `attention.requested`; every later hop
//! names that id in `subject`. Any hop may arrive first or not at all, so
//! a card opens on whichever hop is seen first and fills in as the others
//! arrive: a `resolved` with no `answered`, or an `answered` before its
//! request, still lands on the one card.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::changes::{CardRef, Change, Outbox};
use super::hash::FastMap;
use super::key::SessionKey;
use super::rules::{Rule, StreamViolation};
use super::timeline::{Delivery, Position};
use crate::protocol::event::{Capture, Event, Severity};
use crate::protocol::form::{self, Choice, FieldSpec, FieldSpecError, FieldType, Problem};
use crate::protocol::kind::EventKind;
#[cfg(feature = "request-details")]
use crate::protocol::request_context::{RequestContext, DESTRUCTIVE_BECAUSE};
use crate::protocol::vocabulary::EventType;
use crate::time::UnixMs;

pub use crate::protocol::attention::{AttentionKind, Channel};

/// Most `attention.routed` hops kept per card.
pub const MAX_ROUTED_PER_CARD: usize = 16;
/// Most command ids kept per card.
pub const MAX_COMMANDS_PER_CARD: usize = 16;

/// The `attention.requested` facts a card renders.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub kind: Option<AttentionKind>,
    /// Agent-authored text: render as text, next to its provenance.
    pub prompt: Option<String>,
    pub options: Vec<Choice>,
    /// The form fields (`kind: "form"`), when present and well formed.
    pub fields: Vec<FieldSpec>,
    /// Why `fields` could not be read, when it could not.
    pub fields_error: Option<FieldSpecError>,
    /// `None` when not declared (answerable by control, send and settle).
    pub respond_via: Option<Vec<Channel>>,
    pub expires_at: Option<UnixMs>,
    /// The agent marked the request as destructive (`destructive: true` in
    /// its data, an extension attribute): approving it takes a second step.
    pub destructive: bool,
    /// Why, in the adapter's words (`destructive_because`).
    #[cfg(feature = "request-details")]
    pub destructive_because: Option<String>,
    /// What it is about beyond the prompt (`context`), when the agent
    /// says and the capture level keeps it.
    #[cfg(feature = "request-details")]
    pub context: Option<RequestContext>,
    /// Why `context` could not be read, when it could not.
    #[cfg(feature = "request-details")]
    pub context_error: Option<String>,
    pub capture: Capture,
    pub severity: Severity,
    pub agent: String,
    pub source: String,
    pub run: Option<String>,
    /// The request event's own `subject` (typically the tool name).
    pub subject: Option<String>,
    pub relay: Option<Arc<str>>,
    pub time: String,
    pub at: Option<UnixMs>,
    pub position: Option<Position>,
    pub received_at: UnixMs,
}

impl Request {
    fn read(entry: &Delivery) -> Request {
        let e = &entry.event;
        let text = |k: &str| e.data_field(k).and_then(Value::as_str).map(str::to_owned);
        let options = e
            .data_field("options")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|o| serde_json::from_value::<Choice>(o.clone()).ok()).collect())
            .unwrap_or_default();
        let (fields, fields_error) = match e.data().map(form::fields_of) {
            Some(Ok(Some(f))) => (f, None),
            Some(Err(err)) => (Vec::new(), Some(err)),
            _ => (Vec::new(), None),
        };
        #[cfg(feature = "request-details")]
        let (context, context_error) = match e.data().map(RequestContext::of) {
            Some(Ok(c)) => (c, None),
            Some(Err(err)) => (None, Some(err)),
            None => (None, None),
        };
        let respond_via = e
            .data_field("respond_via")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(Channel::parse).collect());
        Request {
            kind: text("kind").map(|k| AttentionKind::parse(&k)),
            prompt: text("prompt"),
            options,
            fields,
            fields_error,
            respond_via,
            expires_at: text("expires_at").and_then(|t| UnixMs::parse_rfc3339(&t)),
            destructive: e.data_field("destructive").and_then(Value::as_bool) == Some(true),
            #[cfg(feature = "request-details")]
            destructive_because: text(DESTRUCTIVE_BECAUSE),
            #[cfg(feature = "request-details")]
            context,
            #[cfg(feature = "request-details")]
            context_error,
            capture: e.capture(),
            severity: e.severity(),
            agent: e.agent().to_owned(),
            source: e.source().to_owned(),
            run: e.run().map(str::to_owned),
            subject: e.subject().map(str::to_owned),
            relay: entry.relay.clone(),
            time: e.time().to_owned(),
            at: e.at(),
            position: e.position(),
            received_at: entry.received_at,
        }
    }

    /// Whether an answer may be offered over control (AEP-0008): yes when
    /// `respond_via` is absent or lists `control`.
    pub fn accepts_control(&self) -> bool {
        match &self.respond_via {
            None => true,
            Some(channels) => channels.contains(&Channel::Control),
        }
    }
}

/// A router's hop (`attention.routed`, emitted by a consumer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routed {
    pub event_id: String,
    pub agent: String,
    pub source: String,
    pub time: String,
    pub relay: Option<Arc<str>>,
}

/// The `attention.answered` facts: what was applied, by whom, how.
#[derive(Clone, Debug, PartialEq)]
pub struct CardAnswer {
    pub event_id: String,
    pub option: Option<String>,
    /// Free text kept as sent (a reason, or the form's other-text).
    pub text: Option<String>,
    pub values: Option<Map<String, Value>>,
    pub by: Option<String>,
    pub via: Option<Channel>,
    /// Usually the command that produced the answer.
    pub cause: Option<String>,
    pub capture: Capture,
    pub time: String,
    pub at: Option<UnixMs>,
}

impl CardAnswer {
    fn read(e: &Event) -> CardAnswer {
        let answer = e.data_field("answer").and_then(Value::as_object);
        let member = |k: &str| answer.and_then(|a| a.get(k)).and_then(Value::as_str).map(str::to_owned);
        let text = |k: &str| e.data_field(k).and_then(Value::as_str);
        CardAnswer {
            event_id: e.id().to_owned(),
            option: member("option"),
            text: member("text"),
            values: answer.and_then(|a| a.get("values")).and_then(Value::as_object).cloned(),
            by: text("by").map(str::to_owned),
            via: text("via").map(Channel::parse),
            cause: e.cause().map(str::to_owned),
            capture: e.capture(),
            time: e.time().to_owned(),
            at: e.at(),
        }
    }
}

/// How the tool a request asked about ended, once it ran (or was blocked).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolEnd {
    Completed,
    Failed,
    Denied,
}

/// The tool call a request asked about, as it ended: the `tool.completed`,
/// `tool.failed` or `tool.denied` whose `data.tool.call_id` is the
/// request's `subject` (AEP-0002 §2: paired events share a correlation id).
/// What a person allowed is not done until this says so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutcome {
    pub event_id: String,
    pub end: ToolEnd,
    /// `data.tool.name`.
    pub tool: Option<String>,
    /// A failure's `data.error.message` (agent-authored).
    pub error: Option<String>,
    pub at: Option<UnixMs>,
}

impl ToolOutcome {
    /// The outcome `e` states, and the call id it is for; `None` for
    /// anything but a tool terminal naming its call.
    fn read(e: &Event) -> Option<(&str, ToolOutcome)> {
        let end = match e.kind().core()? {
            EventType::ToolCompleted => ToolEnd::Completed,
            EventType::ToolFailed => ToolEnd::Failed,
            EventType::ToolDenied => ToolEnd::Denied,
            _ => return None,
        };
        let tool = e.data_field("tool")?;
        let call = tool.get("call_id")?.as_str()?;
        let outcome = ToolOutcome {
            event_id: e.id().to_owned(),
            end,
            tool: tool.get("name").and_then(Value::as_str).map(str::to_owned),
            error: e.data_field("error").and_then(|x| x.get("message")).and_then(Value::as_str).map(str::to_owned),
            at: e.at(),
        };
        Some((call, outcome))
    }
}

/// `attention.resolved` `resolution`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Resolution {
    Answered,
    Auto,
    Dismissed,
    Unrecognized(String),
}

/// How a card closed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Closure {
    Resolved { resolution: Option<Resolution>, latency_ms: Option<u64> },
    TimedOut { after_ms: Option<u64> },
}

/// The terminal hop of a card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Close {
    pub how: Closure,
    pub event_id: String,
    pub cause: Option<String>,
    pub time: String,
    pub at: Option<UnixMs>,
    pub position: Option<Position>,
}

impl Close {
    fn read(e: &Event) -> Close {
        let num = |k: &str| e.data_field(k).and_then(Value::as_u64);
        let how = if e.kind() == EventKind::Core(EventType::AttentionTimeout) {
            Closure::TimedOut { after_ms: num("after_ms") }
        } else {
            let resolution = e.data_field("resolution").and_then(Value::as_str).map(|r| match r {
                "answered" => Resolution::Answered,
                "auto" => Resolution::Auto,
                "dismissed" => Resolution::Dismissed,
                other => Resolution::Unrecognized(other.to_owned()),
            });
            Closure::Resolved { resolution, latency_ms: num("latency_ms") }
        };
        Close {
            how,
            event_id: e.id().to_owned(),
            cause: e.cause().map(str::to_owned),
            time: e.time().to_owned(),
            at: e.at(),
            position: e.position(),
        }
    }
}

/// Where a card stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, strum::IntoStaticStr, strum::VariantNames)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum CardStatus {
    /// Waiting for an answer.
    Pending,
    /// An answer was applied; the emitter has not closed the request yet.
    Answered,
    Resolved,
    TimedOut,
    /// Its session ended while it was still open (an emitter fault,
    /// reported as [`Rule::PendingAtSessionEnd`]).
    Abandoned,
}

impl CardStatus {
    /// The status as the JavaScript views and the console's markup name it.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn is_closed(self) -> bool {
        matches!(self, CardStatus::Resolved | CardStatus::TimedOut | CardStatus::Abandoned)
    }
}

/// One attention request and everything seen about it.
///
/// The hops are boxed: a card sits in its session's table, which moves
/// every card when it grows, and most lookups only ask whether it exists.
#[derive(Clone, Debug)]
pub struct Card {
    key: CardRef,
    request: Option<Box<Request>>,
    routed: Vec<Routed>,
    answer: Option<Box<CardAnswer>>,
    close: Option<Box<Close>>,
    abandoned: bool,
    tool: Option<Box<ToolOutcome>>,
    commands: Vec<Arc<str>>,
    first_seen: UnixMs,
    pub(crate) arrival: u64,
    values_checked: bool,
}

impl Card {
    fn new(key: CardRef, now: UnixMs, arrival: u64) -> Card {
        Card {
            key,
            request: None,
            routed: Vec::new(),
            answer: None,
            close: None,
            abandoned: false,
            tool: None,
            commands: Vec::new(),
            first_seen: now,
            arrival,
            values_checked: false,
        }
    }

    pub fn key(&self) -> &CardRef {
        &self.key
    }
    /// The `attention.requested` id.
    pub fn id(&self) -> &str {
        &self.key.request
    }
    pub fn session(&self) -> &SessionKey {
        &self.key.session
    }
    /// The request, once its `attention.requested` was seen.
    pub fn request(&self) -> Option<&Request> {
        self.request.as_deref()
    }
    pub fn kind(&self) -> Option<&AttentionKind> {
        self.request.as_ref()?.kind.as_ref()
    }
    pub fn prompt(&self) -> Option<&str> {
        self.request.as_ref()?.prompt.as_deref()
    }
    /// Severity of the request; `info` until the request is seen.
    pub fn severity(&self) -> Severity {
        self.request.as_ref().map_or(Severity::Info, |r| r.severity)
    }
    pub fn routed(&self) -> &[Routed] {
        &self.routed
    }
    pub fn answer(&self) -> Option<&CardAnswer> {
        self.answer.as_deref()
    }
    /// How the tool the request asked about ended, once it did.
    pub fn tool(&self) -> Option<&ToolOutcome> {
        self.tool.as_deref()
    }

    pub fn close(&self) -> Option<&Close> {
        self.close.as_deref()
    }
    /// Ids of the commands seen for this card (at most
    /// [`MAX_COMMANDS_PER_CARD`]); look them up on the card's session.
    pub fn commands(&self) -> &[Arc<str>] {
        &self.commands
    }
    pub fn first_seen(&self) -> UnixMs {
        self.first_seen
    }
    /// The store's arrival counter when the card opened: breaks ties
    /// between cards first seen in the same millisecond.
    pub fn arrival(&self) -> u64 {
        self.arrival
    }

    pub fn status(&self) -> CardStatus {
        match (self.close.as_deref(), self.abandoned, &self.answer) {
            (Some(Close { how: Closure::Resolved { .. }, .. }), _, _) => CardStatus::Resolved,
            (Some(Close { how: Closure::TimedOut { .. }, .. }), _, _) => CardStatus::TimedOut,
            (None, true, _) => CardStatus::Abandoned,
            (None, false, Some(_)) => CardStatus::Answered,
            (None, false, None) => CardStatus::Pending,
        }
    }

    /// Waiting on a person: pending, with a request to show.
    pub fn needs_answer(&self) -> bool {
        self.request.is_some() && self.status() == CardStatus::Pending
    }

    /// When the request was raised (its `time`).
    pub fn requested_at(&self) -> Option<UnixMs> {
        self.request.as_ref()?.at
    }
    pub fn answered_at(&self) -> Option<UnixMs> {
        self.answer.as_ref()?.at
    }
    pub fn closed_at(&self) -> Option<UnixMs> {
        self.close.as_ref()?.at
    }

    /// Request to close: the emitter's `latency_ms` when it stated one,
    /// else measured between the two events' times.
    pub fn latency_ms(&self) -> Option<u64> {
        let close = self.close.as_ref()?;
        let declared = match close.how {
            Closure::Resolved { latency_ms, .. } => latency_ms,
            Closure::TimedOut { after_ms } => after_ms,
        };
        declared.or_else(|| Some(close.at?.since(self.requested_at()?)))
    }

    /// Request to answer, measured between the two events' times.
    pub fn answer_latency_ms(&self) -> Option<u64> {
        Some(self.answered_at()?.since(self.requested_at()?))
    }

    /// Sort key of the inbox: most severe first; among equals, the one
    /// that expires soonest (it is lost if nobody answers in time), then
    /// the oldest. A request that never expires comes after any that do.
    pub(crate) fn inbox_key(&self) -> (std::cmp::Reverse<Severity>, UnixMs, UnixMs, u64) {
        let when = self.request.as_ref().map_or(self.first_seen, |r| r.at.unwrap_or(r.received_at));
        let expires = self.request.as_ref().and_then(|r| r.expires_at).unwrap_or(UnixMs(u64::MAX));
        (std::cmp::Reverse(self.severity()), expires, when, self.arrival)
    }

    fn link_command(&mut self, id: &str) -> bool {
        if self.commands.iter().any(|c| &**c == id) || self.commands.len() >= MAX_COMMANDS_PER_CARD {
            return false;
        }
        self.commands.push(Arc::from(id));
        true
    }

    /// The AEP-0006 values rule, once both the form and its answer are known.
    fn check_values(&mut self) -> Option<String> {
        if self.values_checked {
            return None;
        }
        let (Some(request), Some(answer)) = (self.request.as_deref(), self.answer.as_deref()) else { return None };
        self.values_checked = true;
        let values = answer.values.as_ref()?;
        if request.kind != Some(AttentionKind::Form) || request.fields.is_empty() {
            return None;
        }
        let errors = form::check_values(&request.fields, values).err()?;
        // Below `redacted` a free-text value is dropped at the source, so a
        // missing text field is honest capture gating, not a broken answer.
        let gated = |field: &str| {
            answer.capture < Capture::Redacted
                && request
                    .fields
                    .iter()
                    .any(|f| f.id == field && (f.ty == FieldType::String || (f.ty == FieldType::Select && f.other)))
        };
        let broken: Vec<String> = errors
            .into_iter()
            .filter(|e| !(e.problem == Problem::Missing && gated(&e.field)))
            .map(|e| e.message)
            .collect();
        (!broken.is_empty()).then(|| broken.join("; "))
    }
}

/// The cards of one session, at most `capacity`.
#[derive(Debug)]
pub(crate) struct Cards {
    map: FastMap<Arc<str>, Card>,
    capacity: usize,
    /// Cards dropped to stay within the capacity.
    pub(crate) dropped: u64,
    /// How many cards need an answer, kept current on every change: the
    /// session bound consults it for every session on each eviction.
    waiting: usize,
}

/// What a fold did to a card, for the change queue.
enum Touch {
    Opened,
    Updated,
    Closed,
}

impl Cards {
    pub(crate) fn new(capacity: usize) -> Cards {
        Cards { map: FastMap::default(), capacity, dropped: 0, waiting: 0 }
    }

    /// New, empty cards in this table's memory.
    pub(crate) fn emptied(mut self, capacity: usize) -> Cards {
        self.map.clear();
        Cards { map: self.map, ..Cards::new(capacity) }
    }

    pub(crate) fn get(&self, id: &str) -> Option<&Card> {
        self.map.get(id)
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.map.contains_key(id)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Card> + '_ {
        self.map.values()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn needing_answer(&self) -> usize {
        self.waiting
    }

    /// Accounts for one card going from `before` to `after` needing an answer.
    fn track(&mut self, before: bool, after: bool) {
        match (before, after) {
            (false, true) => self.waiting += 1,
            (true, false) => self.waiting = self.waiting.saturating_sub(1),
            _ => {}
        }
    }

    /// Folds an owner lifecycle event. `ended` is the session's
    /// `session.ended` position when the session has ended.
    pub(crate) fn fold_owner(
        &mut self,
        session: &SessionKey,
        entry: &Delivery,
        ended: Option<SessionEndMark>,
        out: &mut Outbox,
    ) {
        let e = &entry.event;
        let id = match e.kind() {
            EventKind::Core(EventType::AttentionRequested) => e.id(),
            _ => match e.subject() {
                Some(s) => s,
                None => return, // uncorrelatable hop: kept in the timeline only
            },
        };
        let (card, opened) = self.open(session, id, entry, out);
        let was_closed = card.status().is_closed();
        let was_waiting = card.needs_answer();
        match e.kind().core() {
            Some(EventType::AttentionRequested) => {
                if card.request.is_none() {
                    card.request = Some(Box::new(Request::read(entry)));
                }
            }
            Some(EventType::AttentionAnswered) => {
                if card.answer.is_none() {
                    card.answer = Some(Box::new(CardAnswer::read(e)));
                }
            }
            Some(EventType::AttentionResolved | EventType::AttentionTimeout) => {
                if card.close.is_none() {
                    card.close = Some(Box::new(Close::read(e)));
                }
            }
            _ => return,
        }
        if let Some(detail) = card.check_values() {
            out.violation(StreamViolation {
                rule: Rule::FormValues,
                session: Some(session.clone()),
                event_id: e.id().to_owned(),
                detail,
            });
        }
        if let Some(end) = ended {
            abandon_if_open(card, end, e.id(), out);
        }
        let touch = if opened {
            Touch::Opened
        } else if !was_closed && card.status().is_closed() {
            Touch::Closed
        } else {
            Touch::Updated
        };
        let waiting = card.needs_answer();
        emit(out, &card.key, touch);
        self.track(was_waiting, waiting);
    }

    /// Folds a tool's terminal event onto the card whose request named
    /// its call in `subject` ([`ToolOutcome`]); the first one counts.
    pub(crate) fn fold_tool(&mut self, e: &Event, out: &mut Outbox) {
        let Some((call, outcome)) = ToolOutcome::read(e) else { return };
        let asked = self
            .map
            .values_mut()
            .find(|c| c.tool.is_none() && c.request.as_ref().is_some_and(|r| r.subject.as_deref() == Some(call)));
        if let Some(card) = asked {
            card.tool = Some(Box::new(outcome));
            emit(out, &card.key, Touch::Updated);
        }
    }

    /// Folds a router's hop or a command naming the card (by `subject`,
    /// else by `cause`).
    pub(crate) fn fold_foreign(&mut self, session: &SessionKey, entry: &Delivery, out: &mut Outbox) {
        let e = &entry.event;
        let kind = e.kind().core();
        let names_a_card = matches!(kind, Some(EventType::AttentionRouted | EventType::ControlAttentionRespond));
        let by_subject = e.subject().filter(|s| names_a_card || self.contains(s));
        let Some(id) = by_subject.or_else(|| e.cause().filter(|c| self.contains(c))) else { return };
        let (card, opened) = self.open(session, id, entry, out);
        let changed = if kind == Some(EventType::AttentionRouted) {
            if card.routed.len() < MAX_ROUTED_PER_CARD {
                card.routed.push(Routed {
                    event_id: e.id().to_owned(),
                    agent: e.agent().to_owned(),
                    source: e.source().to_owned(),
                    time: e.time().to_owned(),
                    relay: entry.relay.clone(),
                });
                true
            } else {
                false
            }
        } else {
            card.link_command(e.id())
        };
        if opened || changed {
            emit(out, &card.key, if opened { Touch::Opened } else { Touch::Updated });
        }
    }

    /// Marks open requests raised before the session's end as abandoned.
    pub(crate) fn abandon_open(&mut self, end: SessionEndMark, end_event: &str, out: &mut Outbox) {
        let mut cards: Vec<&mut Card> = self.map.values_mut().collect();
        crate::order::sort_by(&mut cards, |a, b| a.arrival.cmp(&b.arrival));
        for card in cards {
            if abandon_if_open(card, end, end_event, out) {
                emit(out, &card.key, Touch::Closed);
            }
        }
        self.waiting = self.map.values().filter(|c| c.needs_answer()).count();
    }

    fn open(&mut self, session: &SessionKey, id: &str, entry: &Delivery, out: &mut Outbox) -> (&mut Card, bool) {
        let opened = !self.map.contains_key(id);
        if opened {
            self.make_room(out);
            let key: Arc<str> = Arc::from(id);
            let card =
                Card::new(CardRef { session: session.clone(), request: key.clone() }, entry.received_at, entry.arrival);
            self.map.insert(key, card);
        }
        let card = self.map.get_mut(id).expect("card present: inserted above when missing");
        (card, opened)
    }

    /// Drops the oldest closed card, else the oldest card without a
    /// request, else the oldest answered one, else the oldest pending one.
    fn make_room(&mut self, out: &mut Outbox) {
        if self.map.len() < self.capacity.max(1) {
            return;
        }
        let rank = |c: &Card| match c.status() {
            s if s.is_closed() => 0,
            _ if c.request.is_none() => 1,
            CardStatus::Answered => 2,
            _ => 3,
        };
        let victim = self.map.values().min_by_key(|c| (rank(c), c.arrival)).map(|c| c.key.request.clone());
        if let Some(id) = victim {
            if let Some(card) = self.map.remove(&id) {
                self.track(card.needs_answer(), false);
                self.dropped += 1;
                out.push(Change::CardEvicted(card.key));
            }
        }
    }
}

/// Where the session ended: the rule compares request positions with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SessionEndMark {
    pub position: Option<Position>,
}

/// Abandons `card` when its request was raised before the session ended
/// and no terminal hop is known. Returns whether it did.
fn abandon_if_open(card: &mut Card, end: SessionEndMark, end_event: &str, out: &mut Outbox) -> bool {
    let Some(request) = &card.request else { return false };
    if card.close.is_some() || card.abandoned {
        return false;
    }
    let before_end = match (request.position, end.position) {
        (Some(r), Some(e)) => r < e,
        _ => true,
    };
    if !before_end {
        return false;
    }
    card.abandoned = true;
    out.violation(StreamViolation {
        rule: Rule::PendingAtSessionEnd,
        session: Some(card.key.session.clone()),
        event_id: end_event.to_owned(),
        detail: format!(
            "session `{}` ended with attention request {} still open",
            card.key.session.name, card.key.request
        ),
    });
    true
}

fn emit(out: &mut Outbox, key: &CardRef, touch: Touch) {
    out.note(|| match touch {
        Touch::Opened => Change::CardOpened(key.clone()),
        Touch::Updated => Change::CardUpdated(key.clone()),
        Touch::Closed => Change::CardClosed(key.clone()),
    });
}
