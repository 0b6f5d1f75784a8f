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

    /// Takes the state `history` (held events, each session's in order)
    /// leaves: a request asked and not settled there is open again, and
    /// answers from notifications sent before a restart reach it. Nothing
    /// is pushed again; a request that expired meanwhile stays closed.
    pub fn restore(&self, history: &[Event], now: UnixMs) {
        for event in history {
            let _ = self.apply(event);
        }
        let _ = self.take_expired(now);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(json: serde_json::Value) -> Event {
        Event::parse(&json.to_string()).unwrap()
    }

    fn asked(id: &str, seq: u64, expires_at: &str) -> Event {
        event(serde_json::json!({"aep": "0.1", "id": id, "type": "attention.requested", "time": "2026-07-03T10:00:00Z",
            "source": "aep://h/agent/a/session/s", "agent": "a", "session": "s", "seq": seq,
            "data": {"kind": "approval", "prompt": "Go?", "options": [{"id": "allow", "label": "Allow"}],
                "respond_via": ["control"], "expires_at": expires_at}}))
    }

    fn resolved(subject: &str, seq: u64) -> Event {
        event(serde_json::json!({"aep": "0.1", "id": format!("done-{subject}"), "type": "attention.resolved",
            "time": "2026-07-03T10:00:00Z", "source": "aep://h/agent/a/session/s", "agent": "a", "session": "s",
            "seq": seq, "subject": subject, "data": {"outcome": "answered"}}))
    }

    #[test]
    fn history_restores_what_is_open_and_nothing_else() {
        let now = UnixMs::parse_rfc3339("2026-07-03T10:05:00Z").unwrap();
        let history = [
            asked("open", 0, "2026-07-03T11:00:00Z"),
            asked("settled", 1, "2026-07-03T11:00:00Z"),
            asked("lapsed", 2, "2026-07-03T10:01:00Z"),
            resolved("settled", 3),
        ];
        let requests = Requests::default();
        requests.restore(&history, now);
        assert_eq!(requests.open("open", now).map(|r| r.prompt), Some("Go?".into()));
        assert!(requests.open("settled", now).is_none());
        assert!(requests.open("lapsed", now).is_none());
        assert!(requests.take_expired(now).is_empty(), "a lapsed request is not closed again later");
        assert_eq!(requests.count_open(now), 1);
    }
}
