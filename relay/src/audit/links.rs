//! What ties events to the commands they belong to, in memory and bounded:
//! the commands still open (an ack or outcome may come), the acks they got,
//! recent `attention.requested` events (a command's `subject`) and each
//! session's agent and label. Decides which records to write; assigns
//! their chain positions in the order the switchboard saw them.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

use aep_engine::protocol::vocabulary::EventType;
use aep_engine::Event;
use serde_json::Value;

use super::chain::Kind;
use super::new_record;
use super::store::Write;
use super::summary::{Acked, ByRule, Summary};
use crate::recency::Recency;

/// Commands kept open for their ack and outcomes.
pub const OPEN: usize = 65_536;
/// Requests and sessions remembered for the commands that refer to them.
const REMEMBERED: usize = 16_384;

/// A map that forgets its least recently used entries beyond a bound.
struct Bounded<K, V> {
    values: HashMap<K, V>,
    order: Recency<K>,
    most: usize,
}

impl<K: Clone + Eq + Hash, V> Bounded<K, V> {
    fn new(most: usize) -> Self {
        Bounded { values: HashMap::new(), order: Recency::default(), most }
    }

    fn insert(&mut self, key: K, value: V) {
        self.order.touch(&key);
        self.values.insert(key, value);
        while self.order.len() > self.most {
            let Some(oldest) = self.order.oldest().cloned() else { break };
            self.order.remove(&oldest);
            self.values.remove(&oldest);
        }
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.values.get(key)
    }

    fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.values.get_mut(key)
    }
}

struct Request {
    raw: Arc<str>,
    agent: Arc<str>,
    prompt: String,
}

struct Session {
    agent: Arc<str>,
    label: String,
}

pub struct Links {
    next_seq: u64,
    last_at: u64,
    open: Bounded<Arc<str>, Summary>,
    /// Ack id → its command's id (outcomes may name the ack as `cause`).
    acks: Bounded<Arc<str>, Arc<str>>,
    requests: Bounded<Arc<str>, Request>,
    sessions: Bounded<Arc<str>, Session>,
}

impl Links {
    pub fn new(next_seq: u64, last_at: u64) -> Links {
        Links {
            next_seq,
            last_at,
            open: Bounded::new(OPEN),
            acks: Bounded::new(OPEN),
            requests: Bounded::new(REMEMBERED),
            sessions: Bounded::new(REMEMBERED),
        }
    }

    /// A command recorded before a restart, still waiting for its outcome.
    pub fn reopen(&mut self, summary: Summary) {
        self.open.insert(Arc::from(summary.id.as_str()), summary);
    }

    /// The next chain position and its time (never earlier than the last).
    fn place(&mut self, now: u64) -> (u64, u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.last_at = self.last_at.max(now);
        (seq, self.last_at)
    }

    pub fn saw(&mut self, event: &Event, now: u64) -> Vec<Write> {
        self.remember(event);
        self.link(event, now)
    }

    /// Keeps what a later command may refer to: a request (its bytes and
    /// prompt), a session (its agent and label).
    pub fn remember(&mut self, event: &Event) {
        match event.kind().core() {
            Some(EventType::AttentionRequested) => {
                let prompt = event.data_str("prompt").map(|p| p.into_owned()).unwrap_or_default();
                let request = Request { raw: event.raw_arc(), agent: Arc::from(event.agent()), prompt };
                self.requests.insert(Arc::from(event.id()), request);
            }
            Some(EventType::SessionStarted) => {
                if let Some(session) = event.session() {
                    let label = event.data_str("label").map(|l| l.into_owned()).unwrap_or_default();
                    self.sessions.insert(Arc::from(session), Session { agent: Arc::from(event.agent()), label });
                }
            }
            _ => {}
        }
    }

    /// The records an ack or outcome adds to the command it is `cause`-linked to.
    fn link(&mut self, event: &Event, now: u64) -> Vec<Write> {
        let Some(cause) = event.cause() else { return Vec::new() };
        let cause: Arc<str> = Arc::from(cause);
        let command = match self.acks.get(&cause) {
            Some(command) => command.clone(),
            None => cause,
        };
        let ack = Acked::of(event.kind());
        let (seq, at) = match self.open.get(&command) {
            Some(_) => self.place(now),
            None => return Vec::new(),
        };
        let Some(summary) = self.open.get_mut(&command) else { return Vec::new() };
        if let Some(ack) = &ack {
            summary.ack = ack.clone();
            summary.ack_at = Some(at);
        } else {
            summary.outcome = event.ty().to_owned();
            summary.outcome_at = Some(at);
        }
        if summary.agent.is_empty() {
            summary.agent = event.agent().to_owned();
        }
        summary.records.push(seq);
        let principal: Arc<str> = Arc::from(summary.principal.as_str());
        let summary = summary.clone();
        if ack.is_some() {
            self.acks.insert(Arc::from(event.id()), command.clone());
        }
        let kind = if ack.is_some() { Kind::Ack } else { Kind::Outcome };
        vec![new_record(seq, at, kind, &command, &principal, event.raw_arc()), Write::Summary(summary)]
    }

    /// A command forwarded, or refused with `refusal` (its `error` frame).
    pub fn command(&mut self, command: &Event, principal: &str, refusal: Option<&str>, now: u64) -> Vec<Write> {
        let id: Arc<str> = Arc::from(command.id());
        let principal: Arc<str> = Arc::from(principal);
        let (seq, at) = self.place(now);
        let mut writes = vec![new_record(seq, at, Kind::Command, &id, &principal, command.raw_arc())];
        let session = command.session().unwrap_or_default();
        let facts = self.sessions.get(&Arc::from(session)).map(|f| (f.agent.to_string(), f.label.clone()));
        let mut summary = match self.open.get(&id).filter(|_| refusal.is_none()) {
            // A retry of an open command joins it.
            Some(open) => open.clone(),
            None => Summary {
                at,
                seq,
                id: id.to_string(),
                principal: principal.to_string(),
                agent: facts.as_ref().map(|f| f.0.clone()).unwrap_or_default(),
                session: session.to_owned(),
                label: facts.map(|f| f.1).unwrap_or_default(),
                verb: command.ty().to_owned(),
                answer: super::words::answer(command),
                rule: by_rule(command),
                ..Summary::default()
            },
        };
        summary.records.push(seq);
        let request = command.subject().and_then(|subject| self.requests.get(&Arc::from(subject)));
        if let Some((raw, agent, prompt)) = request.map(|r| (r.raw.clone(), r.agent.clone(), r.prompt.clone())) {
            summary.prompt = prompt;
            if summary.agent.is_empty() {
                summary.agent = agent.to_string();
            }
            let (request_seq, request_at) = self.place(now);
            writes.push(new_record(request_seq, request_at, Kind::Request, &id, &principal, raw));
            summary.records.push(request_seq);
        }
        match refusal {
            Some(frame) => {
                let (refused_seq, refused_at) = self.place(now);
                let code = serde_json::from_str::<Value>(frame)
                    .ok()
                    .and_then(|v| v.get("code").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_default();
                summary.ack = format!("{}:{code}", Acked::REFUSED).into();
                summary.ack_at = Some(refused_at);
                summary.records.push(refused_seq);
                writes.push(new_record(refused_seq, refused_at, Kind::Refused, &id, &principal, Arc::from(frame)));
            }
            None => self.open.insert(id, summary.clone()),
        }
        writes.push(Write::Summary(summary));
        writes
    }
}

/// The standing rule a command names as its sender, if one does.
fn by_rule(command: &Event) -> Option<ByRule> {
    let named = command.extensions();
    let id = named.get(crate::rules::RULE_ATTRIBUTE)?.as_str()?;
    let made_at = named.get(crate::rules::RULE_MADE_ATTRIBUTE).and_then(Value::as_u64).unwrap_or_default();
    Some(ByRule { id: id.to_owned(), made_at })
}
