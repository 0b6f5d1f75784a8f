//! One session, keyed `(source, session)` (AEP-0001 §5.2): its ordered
//! lane, runs, attention cards and command chains, and the position and
//! terminal rules that are checked per session.

use std::borrow::Cow;
use std::sync::Arc;

use super::card::{Card, Cards, SessionEndMark};
use super::changes::{Change, CommandRef, Outbox};
use super::command::{self, CommandChain, Control};
use super::config::{Arrival, StoreConfig};
use super::evictions::Evictions;
use super::key::SessionKey;
use super::recency::Mark;
use super::rules::{Rule, StreamViolation};
use super::run::{Run, Runs};
use super::timeline::{Delivery, Entry, Position, Timeline};
use crate::control::ack;
use crate::protocol::envelope;
use crate::protocol::kind::EventKind;
use crate::protocol::vocabulary::EventType;
use crate::time::UnixMs;

/// Where a session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, strum::IntoStaticStr, strum::VariantNames)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum SessionState {
    Active,
    /// The outcome of an accepted `control.pause` was observed, and no
    /// later `control.resume` outcome.
    Paused,
    Ended,
}

impl SessionState {
    /// A one-word name for views and the JS API.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// `session.started` facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionStart {
    pub event_id: String,
    pub time: String,
    /// Human title (agent-authored text).
    pub label: Option<String>,
    /// Lineage: the parent session's name, for subagent sessions.
    pub parent: Option<String>,
    /// The working directory it runs in (agent-authored): the project a
    /// person knows it by.
    pub cwd: Option<String>,
}

/// The session's `session.ended`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionEnd {
    pub event_id: String,
    pub reason: Option<String>,
    pub time: String,
    pub position: Option<Position>,
}

/// The latest pause or resume outcome, by lane position.
#[derive(Clone, Copy, Debug)]
struct PauseMark {
    paused: bool,
    position: Option<Position>,
}

/// One session and everything folded into it.
#[derive(Debug)]
pub struct Session {
    key: SessionKey,
    agent: String,
    /// Boxed, as they are written once and rarely read: the session's
    /// fields that every event reads then share fewer cache lines.
    started: Option<Box<SessionStart>>,
    end: Option<Box<SessionEnd>>,
    pause: Option<PauseMark>,
    high_water: Option<Position>,
    timeline: Timeline,
    runs: Runs,
    cards: Cards,
    control: Control,
    first_seen: UnixMs,
    updated_at: UnixMs,
    pub(crate) touched: u64,
}

/// A session's tables, empty. An evicted session's are kept for the next
/// one opened: a store cycling through more sessions than it holds then
/// does not free and regrow them for each.
#[derive(Debug)]
pub(crate) struct Tables {
    agent: String,
    timeline: Timeline,
    runs: Runs,
    cards: Cards,
    control: Control,
}

impl Tables {
    pub(crate) fn new(config: &StoreConfig) -> Tables {
        Tables {
            agent: String::new(),
            timeline: Timeline::new(config.max_timeline_per_session),
            runs: Runs::new(config.max_runs_per_session),
            cards: Cards::new(config.max_cards_per_session),
            control: Control::new(config.max_commands_per_session),
        }
    }
}

impl Session {
    /// A new session in `tables`, new ones or an evicted session's.
    pub(crate) fn new(key: SessionKey, agent: &str, tables: Tables, now: UnixMs) -> Session {
        let Tables { agent: mut agent_text, timeline, runs, cards, control } = tables;
        agent_text.push_str(agent);
        Session {
            key,
            agent: agent_text,
            started: None,
            end: None,
            pause: None,
            high_water: None,
            timeline,
            runs,
            cards,
            control,
            first_seen: now,
            updated_at: now,
            touched: 0,
        }
    }

    /// This session's tables, emptied: what it held goes now, and their
    /// memory serves the next session opened.
    pub(crate) fn into_tables(self, config: &StoreConfig) -> Tables {
        let mut agent = self.agent;
        agent.clear();
        Tables {
            agent,
            timeline: self.timeline.emptied(config.max_timeline_per_session),
            runs: self.runs.emptied(config.max_runs_per_session),
            cards: self.cards.emptied(config.max_cards_per_session),
            control: self.control.emptied(config.max_commands_per_session),
        }
    }

    pub fn key(&self) -> &SessionKey {
        &self.key
    }
    pub fn name(&self) -> &str {
        &self.key.name
    }
    pub fn source(&self) -> &str {
        &self.key.source
    }
    /// The owning emitter's `agent`.
    pub fn agent(&self) -> &str {
        &self.agent
    }
    pub fn state(&self) -> SessionState {
        match (&self.end, self.pause) {
            (Some(_), _) => SessionState::Ended,
            (None, Some(PauseMark { paused: true, .. })) => SessionState::Paused,
            _ => SessionState::Active,
        }
    }
    pub fn started(&self) -> Option<&SessionStart> {
        self.started.as_deref()
    }
    pub fn end(&self) -> Option<&SessionEnd> {
        self.end.as_deref()
    }
    /// The highest `(epoch, seq)` seen: the resume position (AEP-0003 §7).
    pub fn position(&self) -> Option<Position> {
        self.high_water
    }
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }
    pub fn runs(&self) -> impl Iterator<Item = &Run> + '_ {
        self.runs.iter()
    }
    pub fn run(&self, name: &str) -> Option<&Run> {
        self.runs.get(name)
    }
    pub fn cards(&self) -> impl Iterator<Item = &Card> + '_ {
        self.cards.iter()
    }
    pub fn card(&self, request_id: &str) -> Option<&Card> {
        self.cards.get(request_id)
    }
    /// Cards waiting on a person.
    pub fn pending_count(&self) -> usize {
        self.cards.needing_answer()
    }
    pub fn commands(&self) -> impl Iterator<Item = &CommandChain> + '_ {
        self.control.iter()
    }
    pub fn command(&self, id: &str) -> Option<&CommandChain> {
        self.control.get(id)
    }
    pub fn first_seen(&self) -> UnixMs {
        self.first_seen
    }
    pub fn updated_at(&self) -> UnixMs {
        self.updated_at
    }

    pub(crate) fn card_count(&self) -> usize {
        self.cards.len()
    }
    pub(crate) fn command_count(&self) -> usize {
        self.control.len()
    }
    /// Where this session stands for the session bound.
    pub(crate) fn mark(&self) -> Mark {
        Mark { touched: self.touched, waiting: self.pending_count() > 0 }
    }
    pub(crate) fn run_count(&self) -> usize {
        self.runs.len()
    }

    /// What this session's bounds dropped; `whole` counts everything it
    /// still holds as well, for a session being dropped.
    /// What this session holds against the store's `max_held`.
    pub(crate) fn held(&self) -> usize {
        self.timeline.len() + self.runs.len() + self.cards.len() + self.control.len()
    }

    pub(crate) fn evictions(&self, whole: bool) -> Evictions {
        let held = |n: usize| if whole { n as u64 } else { 0 };
        Evictions {
            sessions: u64::from(whole),
            events: self.timeline.dropped() + held(self.timeline.len()),
            runs: self.runs.dropped + held(self.runs.len()),
            cards: self.cards.dropped + held(self.cards.len()),
            commands: self.control.dropped + held(self.control.len()),
            ..Evictions::default()
        }
    }
    pub(crate) fn has_card(&self, id: &str) -> bool {
        self.cards.contains(id)
    }
    pub(crate) fn has_chain(&self, id: &str) -> bool {
        self.control.contains(id)
    }

    /// Whether this session already holds `entry` at its position (a
    /// redelivery the dedupe memory has forgotten).
    pub(crate) fn holds(&self, event: &crate::protocol::event::Event) -> bool {
        match event.position() {
            Some(p) if Some(p) <= self.high_water => self.timeline.at(p).is_some_and(|held| held.id() == event.id()),
            _ => false,
        }
    }

    /// Folds an event this session's owner emitted.
    pub(crate) fn fold_owner(&mut self, entry: Delivery, arrival_mode: Arrival, out: &mut Outbox) {
        let e = &entry.event;
        let late = e.position().is_some_and(|p| Some(p) <= self.high_water);
        let broke = |rule: Rule, detail: String, key: &SessionKey, out: &mut Outbox| {
            out.violation(StreamViolation { rule, session: Some(key.clone()), event_id: e.id().to_owned(), detail })
        };
        if let Some(p) = e.position().filter(|_| late) {
            // At or below the high-water mark: a reused position, backfill,
            // or (read in emission order) a regression.
            if let Some(held) = self.timeline.at(p) {
                if held.id() != e.id() {
                    broke(
                        Rule::PositionReused,
                        format!("position ({}, {}) already holds event {}", p.0, p.1, held.id()),
                        &self.key,
                        out,
                    );
                }
            } else if let (Arrival::EmissionOrder, Some(hw)) = (arrival_mode, self.high_water) {
                if p.0 < hw.0 {
                    broke(
                        Rule::EpochRegression,
                        format!("epoch {} after epoch {} was used", p.0, hw.0),
                        &self.key,
                        out,
                    );
                } else if p.0 == hw.0 && p.1 <= hw.1 {
                    let detail = format!("seq {} at or below {} in epoch {} without an epoch bump", p.1, hw.1, p.0);
                    broke(Rule::PositionRegression, detail, &self.key, out);
                }
            }
        }
        self.high_water = self.high_water.max(e.position());
        match e.kind() {
            EventKind::Core(EventType::SessionStarted) if self.started.is_none() => {
                // The parent's member is read from its bytes, as `data_str` reads the label.
                let parent = e.data_raw().and_then(|d| envelope::member(d, "parent"));
                self.started = Some(Box::new(SessionStart {
                    event_id: e.id().to_owned(),
                    time: e.time().to_owned(),
                    label: e.data_str("label").map(Cow::into_owned),
                    cwd: e.data_str("cwd").map(Cow::into_owned),
                    parent: parent
                        .and_then(|p| envelope::as_str(envelope::member(p.get(), "session")?))
                        .map(Cow::into_owned),
                }));
            }
            EventKind::Core(EventType::SessionEnded) => match &self.end {
                Some(first) if first.event_id != e.id() => {
                    let detail = format!("session `{}` already ended with {}", self.key.name, first.event_id);
                    broke(Rule::SessionEndRepeated, detail, &self.key, out);
                }
                Some(_) => {}
                None => {
                    let end = SessionEnd {
                        event_id: e.id().to_owned(),
                        reason: e.data_str("reason").map(Cow::into_owned),
                        time: e.time().to_owned(),
                        position: e.position(),
                    };
                    let mark = SessionEndMark { position: end.position };
                    self.end = Some(Box::new(end));
                    self.cards.abandon_open(mark, e.id(), out);
                }
            },
            EventKind::Core(
                EventType::AttentionRequested
                | EventType::AttentionAnswered
                | EventType::AttentionResolved
                | EventType::AttentionTimeout,
            ) => {
                let ended = self.end.as_ref().map(|end| SessionEndMark { position: end.position });
                self.cards.fold_owner(&self.key, &entry, ended, out);
            }
            EventKind::Core(EventType::ToolCompleted | EventType::ToolFailed | EventType::ToolDenied) => {
                self.cards.fold_tool(e, out)
            }
            EventKind::Core(EventType::ControlAccepted | EventType::ControlRejected) => {
                if let Some((id, broken)) = self.control.fold_ack(&entry, &self.timeline, late) {
                    if let Some((rule, detail)) = broken {
                        broke(rule, detail, &self.key, out);
                    }
                    self.chain_changed(&id, out);
                }
            }
            _ => {}
        }
        if let Some(run) = e.run() {
            if let Some((rule, detail)) = self.runs.fold(run, e, entry.arrival, entry.received_at) {
                broke(rule, detail, &self.key, out);
            }
        }
        if command::is_domain(e) {
            if let Some(id) = self.control.offer_outcome(&entry) {
                self.chain_changed(&id, out);
            }
        }
        self.touch(&entry);
        let position = e.position();
        let kept = Entry::keep(entry);
        match position {
            Some(p) => self.timeline.insert_at(p, kept),
            None => self.timeline.insert_after(self.high_water, kept),
        }
        out.session_updated(&self.key);
    }

    /// Folds a seq-less event another party emitted about this session.
    /// `adopted` marks one that waited unattached: its anchor is then
    /// recomputed from what had arrived before it.
    pub(crate) fn fold_foreign(&mut self, entry: Delivery, adopted: bool, out: &mut Outbox) {
        let anchor = if adopted { self.timeline.anchor_at_arrival(entry.arrival) } else { self.high_water };
        if entry.event.is_command() {
            let (id, _) = self.control.fold_command(&entry, &self.timeline);
            self.chain_changed(&id, out);
        }
        self.cards.fold_foreign(&self.key, &entry, out);
        self.touch(&entry);
        self.timeline.insert_after(anchor, Entry::keep(entry));
        out.session_updated(&self.key);
    }

    fn touch(&mut self, entry: &Delivery) {
        self.touched = self.touched.max(entry.arrival);
        self.updated_at = self.updated_at.max(entry.received_at);
    }

    /// Reports a chain change and tracks pause state from pause/resume
    /// outcomes.
    fn chain_changed(&mut self, id: &Arc<str>, out: &mut Outbox) {
        out.note(|| Change::CommandUpdated(CommandRef { session: self.key.clone(), id: id.clone() }));
        let Some(chain) = self.control.get(id) else { return };
        let Some(outcome) = chain.outcome() else { return };
        let rejected = matches!(chain.ack().map(|a| &a.decision), Some(ack::Decision::Rejected { .. }));
        let paused = match chain.ty().map(EventKind::of) {
            Some(EventKind::Core(EventType::ControlPause)) => true,
            Some(EventKind::Core(EventType::ControlResume)) => false,
            _ => return,
        };
        if rejected {
            return;
        }
        let newer = match (self.pause, outcome.position) {
            (None, _) => true,
            (Some(mark), Some(p)) => mark.position.is_none_or(|m| m < p),
            (Some(_), None) => false,
        };
        if newer {
            self.pause = Some(PauseMark { paused, position: outcome.position });
        }
    }
}
