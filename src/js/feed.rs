//! The JavaScript side of the change feed: listeners (`on(kind, cb)`),
//! command promises, roster and connect waits. A [`Handler`] for the
//! [`Driver`](super::driver::Driver): it reads each change with the hub at
//! hand, and hands back the calls into JavaScript to make once the driver
//! is released (a listener may call back into the client).

use std::collections::{BTreeSet, HashMap};

use aep_browser::driver::{Deferred, Handler};
use aep_engine::client::hub::{Hub, HubChange, RelayId};
use aep_engine::client::State;
use aep_engine::control::sender::{CommandChange, CommandState};
use aep_engine::store::{self, CardRef, SessionKey};
use wasm_bindgen::prelude::*;

use super::convert::{self, Nack};
use crate::error::{AepErrorCode, NackKind};
use crate::view::{self, ViolationOrigin};

/// Command promises kept while waiting for an ack or an outcome; beyond
/// this, those the sender no longer follows are dropped.
const MAX_PENDING: usize = 1024;

/// Which listener list a callback is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Attention,
    Event,
    Command,
    Session,
    Status,
    Violation,
}

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "attention" => Kind::Attention,
            "event" => Kind::Event,
            "command" => Kind::Command,
            "session" => Kind::Session,
            "status" => Kind::Status,
            "violation" => Kind::Violation,
            _ => return None,
        })
    }
}

/// A command's promise: the ack (the promise returned to the caller)
/// and then the outcome (a promise handed over with the ack).
struct Pending {
    resolve: js_sys::Function,
    reject: js_sys::Function,
    acked: bool,
    outcome: js_sys::Function,
    outcome_promise: js_sys::Promise,
}

/// Waiters for roster answers from a set of relays.
struct RosterWait {
    relays: BTreeSet<RelayId>,
    resolve: js_sys::Function,
    reject: js_sys::Function,
}

/// `connect()` waiting for every relay to be live (or refused).
struct ConnectWait {
    waiting: BTreeSet<RelayId>,
    resolve: js_sys::Function,
}

/// One call into JavaScript, made after the driver is released.
fn call(f: js_sys::Function, args: Vec<JsValue>) -> Box<dyn FnOnce()> {
    Box::new(move || {
        let args = js_sys::Array::from_iter(args);
        if let Err(e) = f.apply(&JsValue::UNDEFINED, &args) {
            convert::report(&e);
        }
    })
}

#[derive(Default)]
pub struct JsFeed {
    listeners: Vec<(u64, Kind, js_sys::Function)>,
    next_listener: u64,
    pending: HashMap<String, Pending>,
    rosters: Vec<RosterWait>,
    connects: Vec<ConnectWait>,
    notes: Deferred,
    /// Cards and sessions touched during this turn, reported once each.
    dirty_cards: BTreeSet<CardRef>,
    dirty_sessions: BTreeSet<SessionKey>,
    /// Why each relay's last socket was lost, for its next status.
    lost: Vec<Option<String>>,
}

impl Handler for JsFeed {
    type Core = Hub;
    fn change(&mut self, hub: &Hub, change: HubChange) {
        self.on_change(hub, change);
    }

    fn deferred(&mut self, hub: &Hub) -> Deferred {
        self.flush_dirty(hub);
        std::mem::take(&mut self.notes)
    }
}

impl JsFeed {
    pub fn listen(&mut self, kind: Kind, f: js_sys::Function) -> u64 {
        self.next_listener += 1;
        self.listeners.push((self.next_listener, kind, f));
        self.next_listener
    }

    pub fn unlisten(&mut self, id: u64) {
        self.listeners.retain(|(i, _, _)| *i != id);
    }

    fn has(&self, kind: Kind) -> bool {
        self.listeners.iter().any(|(_, k, _)| *k == kind)
    }

    fn emit(&mut self, kind: Kind, args: Vec<JsValue>) {
        for (_, k, f) in &self.listeners {
            if *k == kind {
                self.notes.push(call(f.clone(), args.clone()));
            }
        }
    }

    fn settle(&mut self, f: &js_sys::Function, value: JsValue) {
        self.notes.push(call(f.clone(), vec![value]));
    }

    fn lost_reason(&mut self, relay: RelayId, reason: String) {
        if self.lost.len() <= relay {
            self.lost.resize(relay + 1, None);
        }
        self.lost[relay] = Some(reason);
    }

    // ----- promises -------------------------------------------------------------

    /// Follows command `id`; the returned promise settles on its decision.
    pub fn track(&mut self, hub: &Hub, id: &str) -> js_sys::Promise {
        if self.pending.len() >= MAX_PENDING {
            let sender = hub.sender();
            self.pending.retain(|id, _| sender.get(id).is_some());
        }
        let mut outcome = None;
        let outcome_promise = js_sys::Promise::new(&mut |resolve, _reject| outcome = Some(resolve));
        let mut handles = None;
        let promise = js_sys::Promise::new(&mut |resolve, reject| handles = Some((resolve, reject)));
        if let (Some((resolve, reject)), Some(outcome)) = (handles, outcome) {
            self.pending.insert(id.to_owned(), Pending { resolve, reject, acked: false, outcome, outcome_promise });
        }
        promise
    }

    /// A promise for the next roster of each relay in `relays`.
    pub fn wait_roster(&mut self, relays: BTreeSet<RelayId>) -> js_sys::Promise {
        let mut handles = None;
        let promise = js_sys::Promise::new(&mut |resolve, reject| handles = Some((resolve, reject)));
        if let Some((resolve, reject)) = handles {
            self.rosters.push(RosterWait { relays, resolve, reject });
        }
        promise
    }

    /// A promise settled once every relay has been live or refused.
    pub fn wait_connected(&mut self, hub: &Hub) -> js_sys::Promise {
        let mut handles = None;
        let promise = js_sys::Promise::new(&mut |resolve, _| handles = Some(resolve));
        let waiting: BTreeSet<RelayId> = (0..hub.relay_count())
            .filter(|r| !matches!(hub.state(*r), Some(State::Live | State::Refused { .. })))
            .collect();
        if let Some(resolve) = handles {
            if waiting.is_empty() {
                let value = convert::to_js(&Self::statuses(hub));
                self.settle(&resolve, value);
            } else {
                self.connects.push(ConnectWait { waiting, resolve });
            }
        }
        promise
    }

    // ----- changes ------------------------------------------------------------------

    fn label(hub: &Hub, relay: RelayId) -> String {
        hub.label(relay).unwrap_or_default().to_owned()
    }

    fn status_view(hub: &Hub, relay: RelayId, state: &State) -> view::RelayStatus {
        view::status(&Self::label(hub, relay), state)
    }

    fn statuses(hub: &Hub) -> Vec<view::RelayStatus> {
        (0..hub.relay_count()).map(|r| Self::status_view(hub, r, hub.state(r).unwrap_or(&State::Idle))).collect()
    }

    fn on_change(&mut self, hub: &Hub, change: HubChange) {
        match change {
            HubChange::Status { relay, state } => self.on_status(hub, relay, state),
            HubChange::Disconnected { relay, reason } => self.lost_reason(relay, reason),
            HubChange::RelayError { relay, error } => {
                let state = hub.state(relay).cloned().unwrap_or(State::Idle);
                let mut v = Self::status_view(hub, relay, &state);
                v.error =
                    Some(view::RelayError { code: error.code, detail: error.detail, id: error.id, cause: error.cause });
                self.emit(Kind::Status, vec![convert::to_js(&v)]);
            }
            HubChange::ReplayExhausted { relay, info } => {
                let state = hub.state(relay).cloned().unwrap_or(State::Idle);
                let mut v = Self::status_view(hub, relay, &state);
                let p = &info.earliest;
                v.replay_exhausted =
                    Some(view::ReplayExhausted { session: p.session.clone(), epoch: p.epoch, seq: p.seq });
                self.emit(Kind::Status, vec![convert::to_js(&v)]);
            }
            HubChange::Closing { relay, reason } => {
                let state = hub.state(relay).cloned().unwrap_or(State::Idle);
                let mut v = Self::status_view(hub, relay, &state);
                v.closing = Some(reason);
                self.emit(Kind::Status, vec![convert::to_js(&v)]);
            }
            HubChange::Roster { relay, .. } => self.on_roster(hub, relay, None),
            HubChange::Event { relay, event } => {
                if self.has(Kind::Event) {
                    let label = Self::label(hub, relay);
                    self.emit(Kind::Event, vec![convert::event_to_js(event.raw()), JsValue::from_str(&label)]);
                }
            }
            HubChange::Store(change) => self.on_store(change),
            HubChange::Command(update) => self.on_command(hub, &update.id, update.change),
            HubChange::Violation { relay, detail } => {
                let v = view::Violation {
                    relay: Some(Self::label(hub, relay)),
                    ..view::violation(ViolationOrigin::Relay, "relay.frame", detail)
                };
                self.emit(Kind::Violation, vec![convert::to_js(&v)]);
            }
        }
    }

    fn on_status(&mut self, hub: &Hub, relay: RelayId, state: State) {
        let mut v = Self::status_view(hub, relay, &state);
        if let Some(reason) = self.lost.get_mut(relay).and_then(Option::take) {
            v.lost = Some(reason);
        }
        self.emit(Kind::Status, vec![convert::to_js(&v)]);
        if state != State::Live {
            let why = format!("relay `{}` is {}", Self::label(hub, relay), state.name());
            self.on_roster(hub, relay, Some(why));
        }
        if matches!(state, State::Live | State::Refused { .. }) {
            let mut done = Vec::new();
            for (i, w) in self.connects.iter_mut().enumerate() {
                w.waiting.remove(&relay);
                if w.waiting.is_empty() {
                    done.push(i);
                }
            }
            for i in done.into_iter().rev() {
                let w = self.connects.remove(i);
                let value = convert::to_js(&Self::statuses(hub));
                self.settle(&w.resolve, value);
            }
        }
    }

    /// A roster arrived from `relay` (`failed` = None) or can no longer.
    fn on_roster(&mut self, hub: &Hub, relay: RelayId, failed: Option<String>) {
        let mut i = 0;
        while i < self.rosters.len() {
            if !self.rosters[i].relays.contains(&relay) {
                i += 1;
                continue;
            }
            if let Some(why) = &failed {
                let w = self.rosters.remove(i);
                self.settle(&w.reject, convert::aep_error(AepErrorCode::NotLive, why));
                continue;
            }
            self.rosters[i].relays.remove(&relay);
            if self.rosters[i].relays.is_empty() {
                let w = self.rosters.remove(i);
                let value = convert::to_js(&view::rosters(hub, None));
                self.settle(&w.resolve, value);
                continue;
            }
            i += 1;
        }
    }

    fn on_store(&mut self, change: store::Change) {
        match change {
            store::Change::CardOpened(r) | store::Change::CardUpdated(r) | store::Change::CardClosed(r) => {
                if self.has(Kind::Attention) {
                    self.dirty_cards.insert(r);
                }
            }
            store::Change::CardEvicted(r) => {
                if self.has(Kind::Attention) {
                    let v = view::evicted_card(&r);
                    self.emit(Kind::Attention, vec![convert::to_js(&v)]);
                }
            }
            store::Change::SessionUpdated(k) => {
                if self.has(Kind::Session) {
                    self.dirty_sessions.insert(k);
                }
            }
            store::Change::SessionEvicted(k) => {
                if self.has(Kind::Session) {
                    let v = view::evicted_session(&k);
                    self.emit(Kind::Session, vec![convert::to_js(&v)]);
                }
            }
            store::Change::Violation(v) => {
                if self.has(Kind::Violation) {
                    self.emit(Kind::Violation, vec![convert::to_js(&view::stream_violation(&v))]);
                }
            }
            store::Change::CommandUpdated(_) | store::Change::AgentUpdated(_) => {}
        }
    }

    /// Cards and sessions changed in this turn, each reported once with its
    /// final state.
    fn flush_dirty(&mut self, hub: &Hub) {
        let cards = std::mem::take(&mut self.dirty_cards);
        let sessions = std::mem::take(&mut self.dirty_sessions);
        for r in cards {
            if let Some(card) = hub.store().card(&r) {
                let v = convert::to_js(&view::card(card));
                self.emit(Kind::Attention, vec![v]);
            }
        }
        for k in sessions {
            if let Some(s) = hub.store().session_by_key(&k) {
                let v = convert::to_js(&view::session_summary(s));
                self.emit(Kind::Session, vec![v]);
            }
        }
    }

    fn on_command(&mut self, hub: &Hub, id: &str, change: CommandChange) {
        let Some(tracked) = hub.sender().get(id) else { return };
        let relay = hub.command_relay(id).and_then(|r| hub.label(r)).map(str::to_owned);
        let listened = self.has(Kind::Command).then(|| view::tracked(tracked, relay.as_deref()));
        let state = tracked.state().clone();
        let window_ms = tracked.window_ms();
        let outcome = tracked.outcome().map(|e| convert::event_to_js(e.raw()));
        if let Some(view) = listened {
            let v = view::CommandUpdate { view, change: view::CommandChange::from(&change).into() };
            self.emit(Kind::Command, vec![convert::to_js(&v)]);
        }
        if let CommandChange::Violation(violation) = &change {
            let v = view::Violation {
                command_id: Some(id.to_owned()),
                ..view::violation(ViolationOrigin::Control, violation.rule, violation.detail.clone())
            };
            self.emit(Kind::Violation, vec![convert::to_js(&v)]);
            return;
        }
        let Some(p) = self.pending.get_mut(id) else { return };
        let mut finished = false;
        let mut calls: Vec<(js_sys::Function, JsValue)> = Vec::new();
        if !p.acked {
            match &state {
                CommandState::Pending { .. } => {}
                CommandState::Accepted { ack } => {
                    p.acked = true;
                    let accepted = view::Accepted {
                        ack: convert::event_to_js(ack.raw()),
                        outcome: p.outcome_promise.clone().into(),
                    };
                    calls.push((p.resolve.clone(), convert::to_js(&accepted)));
                }
                CommandState::Rejected { ack, raw_reason, detail, .. } => {
                    let reason = raw_reason.as_deref().unwrap_or("unspecified");
                    let message = match detail {
                        Some(d) => format!("the target rejected the command ({reason}): {d}"),
                        None => format!("the target rejected the command ({reason})"),
                    };
                    let err = convert::nack_error(Nack {
                        kind: NackKind::Rejected,
                        reason,
                        detail: detail.as_deref(),
                        relay_code: None,
                        command_id: id,
                        ack: Some(convert::event_to_js(ack.raw())),
                        message,
                    });
                    calls.push((p.reject.clone(), err));
                    finished = true;
                }
                CommandState::RelayRefused { code, detail } => {
                    let message = match detail {
                        Some(d) => format!("the relay refused the command ({code}): {d}"),
                        None => format!("the relay refused the command ({code})"),
                    };
                    let err = convert::nack_error(Nack {
                        kind: NackKind::RelayRefused,
                        reason: code.as_str(),
                        detail: detail.as_deref(),
                        relay_code: Some(code.as_str()),
                        command_id: id,
                        ack: None,
                        message,
                    });
                    calls.push((p.reject.clone(), err));
                    finished = true;
                }
                CommandState::TimedOut => {
                    let message = format!("no acknowledgement within {window_ms} ms");
                    let err = convert::nack_error(Nack {
                        kind: NackKind::Timeout,
                        reason: NackKind::Timeout.as_str(),
                        detail: None,
                        relay_code: None,
                        command_id: id,
                        ack: None,
                        message,
                    });
                    calls.push((p.reject.clone(), err));
                    finished = true;
                }
            }
        }
        if p.acked {
            if let Some(o) = outcome {
                calls.push((p.outcome.clone(), o));
                finished = true;
            }
        }
        if finished {
            self.pending.remove(id);
        }
        for (f, v) in calls {
            self.settle(&f, v);
        }
    }
}
