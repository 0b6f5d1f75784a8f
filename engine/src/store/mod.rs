//! The correlation fold: every consumer (console, npm package, offline
//! validator) folds the stream through one [`Store`].
//!
//! [`Store::apply`] takes one event (tagged with the relay it came
//! through, when there are several) and:
//!
//! * dedupes on `(source, id)`, reporting a reused id as a violation;
//! * files it under its session `(source, session)`, in `(epoch, seq)`
//!   order, tracking the resume position, runs and their terminals;
//! * rebuilds attention cards from `subject` and command chains from
//!   `cause`, whoever sent the command;
//! * keeps agent-scoped events per emitter;
//! * checks the cross-event rules ([`Rule`]), which [`validate::stream`]
//!   also applies to a whole log.
//!
//! **Foreign-emitter events** (commands, `attention.routed`) carry the
//! sender's `source`, so they cannot name their session by key. They
//! address it by bare `session` name (AEP-0001 §5.2) and are attached to
//! the session of that name whose owner is the target: the only session
//! with that name, or, when several emitters use the name, the one holding
//! the card or command chain the event refers to (its `subject`, `cause`,
//! an ack already received for it) or its `run`. When no session
//! qualifies yet, the event waits unattached and is adopted later: by the
//! first session to claim the name alone, or by the session whose ack,
//! outcome or attention hop refers to it.
//!
//! The store never reads a clock: `now` is the caller's, used for receipt
//! times only. Ordering comes from `(epoch, seq)` and arrival, never `time`.

use std::collections::VecDeque;
use std::sync::Arc;

pub mod agent;
pub mod card;
pub mod changes;
pub mod command;
pub mod config;
pub mod evictions;
mod hash;
mod index;
mod key;
mod lane;
mod recency;
pub mod rules;
pub mod run;
mod seen;
pub mod session;
pub mod timeline;
pub mod validate;

pub use agent::Agent;
pub use card::{
    AttentionKind, Card, CardAnswer, CardStatus, Channel, Close, Closure, Request, Resolution, Routed, ToolEnd,
    ToolOutcome,
};
pub use changes::{CardRef, Change, CommandRef};
pub use command::{AckRecord, CommandChain, CommandStatus, Issued, Outcome, OutcomeLink};
pub use config::{Arrival, ChangeFeed, StoreConfig};
pub use evictions::Evictions;
pub use key::SessionKey;
pub use rules::{Rule, StreamViolation};
pub use run::{Run, RunEnd, RunEnding, RunStatus};
pub use session::{Session, SessionEnd, SessionStart, SessionState};
pub use timeline::{Delivery, Entry, Position, Timeline};

use agent::Agents;
use changes::Outbox;
use hash::{FastMap, FastSet};
use index::SessionIndex;
use recency::{Recency, SessionId};
use seen::{SeenIds, Sighting};
use session::Tables;

use crate::protocol::event::Event;
use crate::protocol::vocabulary::EventType;
use crate::time::UnixMs;

/// Most distinct relay labels shared between entries; past it a label is
/// kept per entry instead of shared.
pub const MAX_INTERNED: usize = 1_024;

/// What [`Store::apply`] did with an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Folded {
    /// Folded.
    New,
    /// Seen before (redelivery); nothing changed.
    Duplicate,
    /// Its `(source, id)` names a different event already folded; it was
    /// not folded and a [`Rule::IdCollision`] violation was queued.
    Collision,
}

/// A resume token for one session (AEP-0001 §7 rule 6, AEP-0003 §7).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResumePosition {
    /// The bare session name the token carries.
    pub session: Arc<str>,
    /// The owner it was observed from (tokens address by name only).
    pub source: Arc<str>,
    pub epoch: u64,
    pub seq: u64,
}

/// Sizes of what the store holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counts {
    pub sessions: usize,
    pub events: usize,
    pub runs: usize,
    pub cards: usize,
    pub pending: usize,
    pub commands: usize,
    pub agents: usize,
    pub unattached: usize,
    pub seen_ids: usize,
    pub violations: u64,
    pub dropped_changes: u64,
}

/// The fold. See the module documentation.
pub struct Store {
    config: StoreConfig,
    seen: SeenIds,
    sessions: FastMap<SessionId, Session>,
    by_key: SessionIndex,
    by_name: FastMap<Arc<str>, Vec<SessionId>>,
    /// Who to drop when full.
    recency: Recency,
    next_session: SessionId,
    agents: Agents,
    unattached: VecDeque<Delivery>,
    /// How many unattached events address each session name: an owner
    /// event looks its name up here instead of scanning the queue.
    unattached_names: FastMap<Arc<str>, usize>,
    /// What went with sessions already dropped, and unattached events
    /// dropped; the live collections count the rest.
    evicted: Evictions,
    interned: FastSet<Arc<str>>,
    /// The last evicted session's tables, emptied, for the next one opened.
    spare: Option<Tables>,
    /// What all sessions hold together, against `max_held`.
    held: usize,
    outbox: Outbox,
    arrival: u64,
    version: u64,
}

impl Default for Store {
    fn default() -> Store {
        Store::new(StoreConfig::default())
    }
}

impl Store {
    pub fn new(config: StoreConfig) -> Store {
        Store {
            seen: SeenIds::new(config.max_seen_ids),
            sessions: FastMap::default(),
            by_key: SessionIndex::default(),
            by_name: FastMap::default(),
            recency: Recency::default(),
            next_session: 0,
            agents: Agents::new(config.max_agents, config.max_agent_events),
            unattached: VecDeque::new(),
            unattached_names: FastMap::default(),
            evicted: Evictions::default(),
            interned: FastSet::default(),
            spare: None,
            held: 0,
            outbox: Outbox::new(config.max_changes, config.max_violations, config.changes),
            arrival: 0,
            version: 0,
            config,
        }
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Folds one event. `relay` labels the connection it came through
    /// (provenance); `now` is the receipt time.
    pub fn apply(&mut self, event: Event, relay: Option<&str>, now: UnixMs) -> Folded {
        match self.seen.sight(&event) {
            Sighting::Again => return Folded::Duplicate,
            Sighting::Collision => {
                self.version += 1;
                let session = event.session().and_then(|name| self.owner_key(event.source(), name));
                self.outbox.violation(StreamViolation {
                    rule: Rule::IdCollision,
                    session,
                    event_id: event.id().to_owned(),
                    detail: format!("`{}` already named a different event from {}", event.id(), event.source()),
                });
                return Folded::Collision;
            }
            Sighting::First => {}
        }
        // An owner event's session is looked up once, before anything moves.
        let owner = match (event.session(), event.is_agent_scoped() || event.is_foreign_emitter()) {
            (Some(name), false) => {
                let id = self.by_key.get(event.source(), name);
                if id.and_then(|id| self.sessions.get(&id)).is_some_and(|s| s.holds(&event)) {
                    return Folded::Duplicate;
                }
                Some(id)
            }
            _ => None,
        };
        self.arrival += 1;
        self.version += 1;
        let relay = relay.map(|r| self.intern(r));
        let entry = Delivery { relay, received_at: now, arrival: self.arrival, event };
        if let Some(known) = owner {
            let id = match known {
                Some(id) => id,
                None => self.open_session(&entry),
            };
            self.adopt_referenced(id, &entry.event);
            let arrival = self.config.arrival;
            self.with_session(id, |s, out| s.fold_owner(entry, arrival, out));
        } else if entry.event.is_agent_scoped() {
            let source = self.agents.fold(entry);
            self.outbox.note(|| Change::AgentUpdated(source));
        } else if entry.event.session().is_none() {
            // Only agent-scoped events may lack a session; kept, never dropped.
            self.park(entry);
        } else {
            self.attach_foreign(entry);
        }
        Folded::New
    }

    /// The next change, oldest first.
    pub fn poll_change(&mut self) -> Option<Change> {
        self.outbox.pop()
    }

    /// Changes queued and not yet polled.
    pub fn pending_changes(&self) -> usize {
        self.outbox.len()
    }

    /// Changes dropped because the queue was full; when this grows, re-read
    /// the state through the queries.
    pub fn dropped_changes(&self) -> u64 {
        self.outbox.dropped()
    }

    /// Grows with every event that changed the state; a duplicate leaves it
    /// alone.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The most recent violations (at most `max_violations`), oldest first.
    pub fn violations(&self) -> impl DoubleEndedIterator<Item = &StreamViolation> + '_ {
        self.outbox.recent()
    }

    pub fn session(&self, source: &str, name: &str) -> Option<&Session> {
        let id = self.by_key.get(source, name)?;
        self.sessions.get(&id)
    }

    pub fn session_by_key(&self, key: &SessionKey) -> Option<&Session> {
        self.session(&key.source, &key.name)
    }

    /// Every session, in no particular order.
    pub fn sessions(&self) -> impl Iterator<Item = &Session> + '_ {
        self.sessions.values()
    }

    /// The sessions carrying one bare name (several emitters may use it).
    pub fn sessions_named<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Session> + 'a {
        self.by_name.get(name).into_iter().flatten().filter_map(|id| self.sessions.get(id))
    }

    pub fn card(&self, card: &CardRef) -> Option<&Card> {
        self.session_by_key(&card.session)?.card(&card.request)
    }

    /// Every card of every session.
    pub fn cards(&self) -> impl Iterator<Item = &Card> + '_ {
        self.sessions.values().flat_map(Session::cards)
    }

    /// Cards waiting on a person: most severe first, then soonest to expire, then oldest.
    pub fn inbox(&self) -> Vec<&Card> {
        let mut cards: Vec<&Card> = self.cards().filter(|c| c.needs_answer()).collect();
        crate::order::sort_by(&mut cards, |a, b| a.inbox_key().cmp(&b.inbox_key()));
        cards
    }

    pub fn command(&self, command: &CommandRef) -> Option<&CommandChain> {
        self.session_by_key(&command.session)?.command(&command.id)
    }

    /// Every command chain, with the session it targets.
    pub fn commands(&self) -> impl Iterator<Item = (&SessionKey, &CommandChain)> + '_ {
        self.sessions.values().flat_map(|s| s.commands().map(move |c| (s.key(), c)))
    }

    pub fn agent(&self, source: &str) -> Option<&Agent> {
        self.agents.get(source)
    }

    pub fn agents(&self) -> impl Iterator<Item = &Agent> + '_ {
        self.agents.iter()
    }

    /// Foreign-emitter events still waiting for the session they address,
    /// in arrival order.
    pub fn unattached(&self) -> impl DoubleEndedIterator<Item = &Delivery> + '_ {
        self.unattached.iter()
    }

    /// One resume token per session that has seen a position.
    pub fn resume_positions(&self) -> Vec<ResumePosition> {
        let mut out: Vec<ResumePosition> = self
            .sessions
            .values()
            .filter_map(|s| {
                let (epoch, seq) = s.position()?;
                Some(ResumePosition { session: s.key().name.clone(), source: s.key().source.clone(), epoch, seq })
            })
            .collect();
        crate::order::sort_by(&mut out, |a, b| (&a.session, &a.source).cmp(&(&b.session, &b.source)));
        out
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            sessions: self.sessions.len(),
            agents: self.agents.len(),
            unattached: self.unattached.len(),
            seen_ids: self.seen.len(),
            violations: self.outbox.violations(),
            dropped_changes: self.outbox.dropped(),
            ..Counts::default()
        };
        for s in self.sessions.values() {
            c.events += s.timeline().len();
            c.runs += s.run_count();
            c.cards += s.card_count();
            c.pending += s.pending_count();
            c.commands += s.command_count();
        }
        c
    }

    /// What the bounds dropped so far, by kind (see [`Evictions`]). All
    /// zero means the store holds every event it folded.
    pub fn evictions(&self) -> Evictions {
        let mut e = self.evicted;
        for s in self.sessions.values() {
            e += s.evictions(false);
        }
        e += self.agents.evictions();
        e.seen_ids = self.seen.forgotten;
        e.changes = self.outbox.dropped();
        e.violations = self.outbox.unlisted_violations();
        e
    }

    fn intern(&mut self, s: &str) -> Arc<str> {
        if let Some(known) = self.interned.get(s) {
            return known.clone();
        }
        let fresh: Arc<str> = Arc::from(s);
        if self.interned.len() < MAX_INTERNED {
            self.interned.insert(fresh.clone());
        }
        fresh
    }

    fn owner_key(&self, source: &str, name: &str) -> Option<SessionKey> {
        self.session(source, name).map(|s| s.key().clone())
    }

    /// Runs `fold` on a session, keeps the recency index and the held
    /// count current, and drops other sessions if it went over `max_held`.
    fn with_session(&mut self, id: SessionId, fold: impl FnOnce(&mut Session, &mut Outbox)) {
        let bounded = self.bounded_sessions();
        let Some(s) = self.sessions.get_mut(&id) else { return };
        let (mark, held) = (s.mark(), s.held());
        fold(s, &mut self.outbox);
        self.held = self.held - held + s.held();
        if bounded {
            self.recency.moved(id, mark, s.mark());
            self.recency.sweep(self.sessions.iter().map(|(id, s)| (*id, s.mark())));
            while self.held > self.config.max_held {
                let Some(victim) = self.recency.pop_victim(Some(id), |id| self.sessions.get(&id).map(Session::mark))
                else {
                    break;
                };
                self.evict(victim);
            }
        }
    }

    /// Creates the session for an owner event's `(source, session)`,
    /// making room first, and adopts what waited for its name.
    fn open_session(&mut self, entry: &Delivery) -> SessionId {
        let e = &entry.event;
        self.make_room_for_session();
        let key = SessionKey::new(e.source(), e.session().unwrap_or_default());
        let id = self.next_session;
        self.next_session += 1;
        self.by_key.insert(key.clone(), id);
        let claimants = self.by_name.entry(key.name.clone()).or_default();
        claimants.push(id);
        let sole = claimants.len() == 1;
        let tables = self.spare.take().unwrap_or_else(|| Tables::new(&self.config));
        let session = Session::new(key.clone(), e.agent(), tables, entry.received_at);
        if self.bounded_sessions() {
            self.recency.insert(id, session.mark());
        }
        self.sessions.insert(id, session);
        if sole && self.unattached_names.contains_key(&key.name) {
            self.adopt(id, |waiting| waiting.event.session() == Some(&key.name));
        }
        id
    }

    /// Attaches a foreign-emitter event to the session it addresses, or
    /// parks it until one qualifies (see the module documentation).
    fn attach_foreign(&mut self, entry: Delivery) {
        let e = &entry.event;
        let name = e.session().unwrap_or_default();
        let claimants = self.by_name.get(name).map(Vec::as_slice).unwrap_or_default();
        let target = match claimants {
            [] => None,
            [only] => Some(*only),
            many => {
                let refers = |s: &Session| {
                    e.subject().is_some_and(|x| s.has_card(x))
                        || e.cause().is_some_and(|x| s.has_card(x) || s.has_chain(x))
                        || s.has_chain(e.id())
                        || e.run().is_some_and(|r| s.run(r).is_some())
                };
                let mut hits = many.iter().filter(|id| self.sessions.get(id).is_some_and(refers));
                match (hits.next(), hits.next()) {
                    (Some(id), None) => Some(*id),
                    _ => None,
                }
            }
        };
        match target.filter(|id| self.sessions.contains_key(id)) {
            Some(id) => self.with_session(id, |s, out| s.fold_foreign(entry, false, out)),
            None => self.park(entry),
        }
    }

    /// Before an owner event folds, adopts the waiting events it refers
    /// to: the command its `cause` names (an ack or outcome), or hops of
    /// the attention request it belongs to.
    fn adopt_referenced(&mut self, id: SessionId, e: &Event) {
        let Some(name) = e.session().filter(|n| self.unattached_names.contains_key(*n)) else { return };
        let card = match e.kind().core() {
            Some(EventType::AttentionRequested) => Some(e.id()),
            Some(EventType::AttentionAnswered | EventType::AttentionResolved | EventType::AttentionTimeout) => {
                e.subject()
            }
            _ => None,
        };
        let cause = e.cause();
        self.adopt(id, |w| {
            let we = &w.event;
            we.session() == Some(name)
                && (cause == Some(we.id()) || card.is_some_and(|c| we.subject() == Some(c) || we.cause() == Some(c)))
        });
    }

    fn adopt(&mut self, id: SessionId, wanted: impl Fn(&Delivery) -> bool) {
        if !self.unattached.iter().any(&wanted) {
            return;
        }
        let (taken, kept): (VecDeque<Delivery>, VecDeque<Delivery>) =
            self.unattached.drain(..).partition(|w| wanted(w));
        self.unattached = kept;
        for entry in &taken {
            self.unpark_name(entry);
        }
        for entry in taken {
            self.with_session(id, |s, out| s.fold_foreign(entry, true, out));
        }
    }

    fn park(&mut self, entry: Delivery) {
        if self.config.max_unattached == 0 {
            self.evicted.unattached += 1;
            return;
        }
        if self.unattached.len() >= self.config.max_unattached {
            if let Some(gone) = self.unattached.pop_front() {
                self.unpark_name(&gone);
            }
            self.evicted.unattached += 1;
        }
        let name = entry.event.session().unwrap_or_default();
        match self.unattached_names.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.unattached_names.insert(Arc::from(name), 1);
            }
        }
        self.unattached.push_back(entry);
    }

    /// Counts out an event leaving the unattached queue.
    fn unpark_name(&mut self, entry: &Delivery) {
        let name = entry.event.session().unwrap_or_default();
        if let Some(n) = self.unattached_names.get_mut(name) {
            *n -= 1;
            if *n == 0 {
                self.unattached_names.remove(name);
            }
        }
    }

    /// Whether a session bound can ever be reached: only then is the
    /// recency index (who to drop) kept.
    fn bounded_sessions(&self) -> bool {
        self.config.max_sessions != usize::MAX || self.config.max_held != usize::MAX
    }

    /// Drops the least recently updated session when full, preferring one
    /// with no card waiting on a person.
    fn make_room_for_session(&mut self) {
        if self.sessions.len() < self.config.max_sessions.max(1) {
            return;
        }
        if let Some(id) = self.recency.pop_victim(None, |id| self.sessions.get(&id).map(Session::mark)) {
            self.evict(id);
        }
    }

    /// Drops a session whole, already taken out of the recency index.
    fn evict(&mut self, id: SessionId) {
        let Some(gone) = self.sessions.remove(&id) else { return };
        self.held -= gone.held();
        self.evicted += gone.evictions(true);
        let key = gone.key().clone();
        self.by_key.remove(&key);
        if let Some(v) = self.by_name.get_mut(&key.name) {
            v.retain(|x| *x != id);
            if v.is_empty() {
                self.by_name.remove(&key.name);
            }
        }
        self.outbox.push(Change::SessionEvicted(key));
        self.spare = Some(gone.into_tables(&self.config));
    }
}
