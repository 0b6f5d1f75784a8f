//! Agent-scoped events (`agent.*`, AEP-0001 §5.2): they describe an
//! emitter, not a session, so they are kept per emitter `source`.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use super::evictions::Evictions;
use super::hash::FastMap;
use super::timeline::{Delivery, Entry};
use crate::protocol::vocabulary::EventType;
use crate::time::UnixMs;

/// One emitter as its agent-scoped events describe it.
#[derive(Clone, Debug)]
pub struct Agent {
    source: Arc<str>,
    agent: String,
    presence: Option<String>,
    health: Option<String>,
    health_detail: Option<String>,
    last_heartbeat: Option<String>,
    idle_since: Option<String>,
    recent: VecDeque<Entry>,
    updated_at: UnixMs,
    touched: u64,
}

impl Agent {
    pub fn source(&self) -> &str {
        &self.source
    }
    pub fn agent(&self) -> &str {
        &self.agent
    }
    /// Latest `agent.presence` state (`online`, `offline`, `busy`).
    pub fn presence(&self) -> Option<&str> {
        self.presence.as_deref()
    }
    /// Latest `agent.health` status (`ok`, `degraded`, `failing`).
    pub fn health(&self) -> Option<&str> {
        self.health.as_deref()
    }
    pub fn health_detail(&self) -> Option<&str> {
        self.health_detail.as_deref()
    }
    /// `time` of the latest `agent.heartbeat`.
    pub fn last_heartbeat(&self) -> Option<&str> {
        self.last_heartbeat.as_deref()
    }
    /// `time` of the latest `agent.idle`, cleared by a later presence change.
    pub fn idle_since(&self) -> Option<&str> {
        self.idle_since.as_deref()
    }
    /// The most recent agent-scoped events, oldest first.
    pub fn recent(&self) -> impl DoubleEndedIterator<Item = &Entry> + '_ {
        self.recent.iter()
    }
    pub fn updated_at(&self) -> UnixMs {
        self.updated_at
    }
}

/// All known emitters, at most `capacity`, each keeping `per_agent` events.
#[derive(Debug)]
pub(crate) struct Agents {
    map: FastMap<Arc<str>, Agent>,
    capacity: usize,
    per_agent: usize,
    /// Emitters forgotten to stay within the capacity.
    pub(crate) dropped_agents: u64,
    /// Agent-scoped events not kept, or dropped, to stay within `per_agent`.
    pub(crate) dropped_events: u64,
}

impl Agents {
    pub(crate) fn new(capacity: usize, per_agent: usize) -> Agents {
        Agents { map: FastMap::default(), capacity, per_agent, dropped_agents: 0, dropped_events: 0 }
    }

    pub(crate) fn evictions(&self) -> Evictions {
        Evictions { agents: self.dropped_agents, agent_events: self.dropped_events, ..Evictions::default() }
    }

    pub(crate) fn get(&self, source: &str) -> Option<&Agent> {
        self.map.get(source)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Agent> + '_ {
        self.map.values()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Folds one agent-scoped event; returns the emitter's source.
    pub(crate) fn fold(&mut self, entry: Delivery) -> Arc<str> {
        let source = entry.event.source();
        if !self.map.contains_key(source) {
            self.make_room();
            let key: Arc<str> = Arc::from(source);
            let fresh = Agent {
                source: key.clone(),
                agent: entry.event.agent().to_owned(),
                presence: None,
                health: None,
                health_detail: None,
                last_heartbeat: None,
                idle_since: None,
                recent: VecDeque::new(),
                updated_at: entry.received_at,
                touched: entry.arrival,
            };
            self.map.insert(key, fresh);
        }
        let a = self.map.get_mut(source).expect("agent present: inserted above when missing");
        let e = &entry.event;
        let text = |k: &str| e.data_str(k).map(Cow::into_owned);
        match e.kind().core() {
            Some(EventType::AgentPresence) => {
                a.presence = text("state");
                a.idle_since = None;
            }
            Some(EventType::AgentHealth) => {
                a.health = text("status");
                a.health_detail = text("detail");
            }
            Some(EventType::AgentHeartbeat) => a.last_heartbeat = Some(e.time().to_owned()),
            Some(EventType::AgentIdle) => a.idle_since = Some(e.time().to_owned()),
            _ => {}
        }
        a.updated_at = entry.received_at;
        a.touched = entry.arrival;
        let key = a.source.clone();
        if self.per_agent > 0 {
            if a.recent.len() >= self.per_agent {
                a.recent.pop_front();
                self.dropped_events += 1;
            }
            a.recent.push_back(Entry::keep(entry));
        } else {
            self.dropped_events += 1;
        }
        key
    }

    fn make_room(&mut self) {
        if self.map.len() < self.capacity.max(1) {
            return;
        }
        let victim = self.map.values().min_by_key(|a| a.touched).map(|a| a.source.clone());
        if let Some(gone) = victim.and_then(|v| self.map.remove(&v)) {
            self.dropped_agents += 1;
            self.dropped_events += gone.recent.len() as u64;
        }
    }
}
