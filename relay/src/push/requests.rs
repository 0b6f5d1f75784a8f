//! The attention requests still open that a notification may answer: a
//! request opens with `attention.requested` (answerable through control)
//! and closes with `attention.answered`, `attention.resolved`,
//! `attention.timeout` (each naming it as `subject`) or at its expiry.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use aep_engine::protocol::attention::Channel;
use aep_engine::protocol::kind::EventKind;
use aep_engine::protocol::vocabulary::EventType;
use aep_engine::{Event, Severity, UnixMs};
use serde_json::Value;

use crate::sync::lock;

/// Open requests kept at most; past it the oldest is forgotten (it can no
/// longer be answered from a notification, only from the console).
const MAX_OPEN: usize = 10_000;

/// Whether the push task wants events of this kind.
pub fn concerns(kind: EventKind<'_>) -> bool {
    matches!(
        kind.core(),
        Some(
            EventType::AttentionRequested
                | EventType::AttentionAnswered
                | EventType::AttentionResolved
                | EventType::AttentionTimeout
        )
    )
}

/// An open request, as a notification shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub id: String,
    pub session: String,
    pub agent: String,
    pub prompt: String,
    pub severity: Severity,
    /// (id, label) of each option offered.
    pub options: Vec<(String, String)>,
    pub expires_at: Option<UnixMs>,
    /// The agent marked it destructive: a notification then offers no
    /// one-tap approval.
    pub destructive: bool,
}

impl Request {
    /// A request that can be answered with `control.attention.respond`:
    /// `respond_via` names `control`.
    pub fn from_event(event: &Event) -> Option<Request> {
        let data = event.data()?;
        let via = data.get("respond_via")?.as_array()?;
        if !via.iter().any(|v| v.as_str().map(Channel::parse) == Some(Channel::Control)) {
            return None;
        }
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let options = data
            .get("options")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter().map(|o| (text(o, "id"), text(o, "label"))).filter(|(id, _)| !id.is_empty()).collect()
            })
            .unwrap_or_default();
        Some(Request {
            id: event.id().to_owned(),
            session: event.session()?.to_owned(),
            agent: event.agent().to_owned(),
            prompt: data.get("prompt").and_then(Value::as_str).unwrap_or_default().to_owned(),
            severity: event.severity(),
            options,
            expires_at: data.get("expires_at").and_then(Value::as_str).and_then(UnixMs::parse_rfc3339),
            destructive: data.get("destructive").and_then(Value::as_bool) == Some(true),
        })
    }

    pub fn is_expired(&self, now: UnixMs) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// What one event changed.
#[derive(Debug)]
pub enum Change {
    Opened(Request),
    Closed(Request),
    Nothing,
}

#[derive(Default)]
pub struct Requests {
    open: Mutex<(HashMap<String, Request>, VecDeque<String>)>,
}

impl Requests {
    /// Applies one event: a request opened (opening one already open
    /// changes nothing) or closed.
    pub fn apply(&self, event: &Event) -> Change {
        let mut guard = lock(&self.open);
        let (open, order) = &mut *guard;
        if event.kind() == EventKind::Core(EventType::AttentionRequested) {
            let Some(request) = Request::from_event(event) else { return Change::Nothing };
            if open.contains_key(&request.id) {
                return Change::Nothing;
            }
            if open.len() >= MAX_OPEN {
                if let Some(oldest) = order.pop_front() {
                    open.remove(&oldest);
                }
            }
            order.push_back(request.id.clone());
            open.insert(request.id.clone(), request.clone());
            return Change::Opened(request);
        }
        let Some(subject) = event.subject() else { return Change::Nothing };
        match open.remove(subject) {
            Some(request) if request.session == event.session().unwrap_or_default() => {
                order.retain(|id| id != subject);
                Change::Closed(request)
            }
            Some(request) => {
                open.insert(subject.to_owned(), request);
                Change::Nothing
            }
            None => Change::Nothing,
        }
    }

    /// The open request `id`, unless it expired.
    pub fn open(&self, id: &str, now: UnixMs) -> Option<Request> {
        lock(&self.open).0.get(id).filter(|r| !r.is_expired(now)).cloned()
    }

    /// Open requests an operator may answer, unexpired.
    pub fn count_open(&self, now: UnixMs) -> usize {
        lock(&self.open).0.values().filter(|r| !r.is_expired(now)).count()
    }

    /// Removes and returns the requests whose expiry has passed.
    pub fn take_expired(&self, now: UnixMs) -> Vec<Request> {
        let mut guard = lock(&self.open);
        let (open, order) = &mut *guard;
        let expired: Vec<String> = open.values().filter(|r| r.is_expired(now)).map(|r| r.id.clone()).collect();
        order.retain(|id| !expired.contains(id));
        expired.iter().filter_map(|id| open.remove(id)).collect()
    }
}
