//! What a burst of hub changes touched (cards, commands, sessions, relay
//! status, notices), tallied until the next flush, and which views of a
//! session that flush redraws: only those of sessions the changes name,
//! so a view re-reads the engine when its own session changed and not on
//! every change anywhere.

use std::collections::HashSet;
use std::sync::Arc;

use aep_engine::client::hub::{Hub, HubChange};
use aep_engine::client::State;
use aep_engine::protocol::vocabulary::EventType;
use aep_engine::store::{self, CardRef, SessionKey};

use super::notice;

/// What the hub's changes touched since the last flush.
#[derive(Default)]
pub struct Touched {
    pub cards: HashSet<CardRef>,
    pub commands: HashSet<Arc<str>>,
    /// Sessions whose events, cards or command chains changed.
    pub sessions: HashSet<SessionKey>,
    /// Sessions addressed by name alone: this console's commands, which
    /// a relay routes by session name, moved on (sent, acknowledged,
    /// refused, timed out) with nothing in the store to say so.
    pub session_names: HashSet<Arc<str>>,
    pub store: bool,
    pub status: bool,
    pub rosters: bool,
    /// A session event (started, ended, compacted): what the session
    /// accepts may have changed.
    pub session_events: bool,
    pub notices: Vec<notice::Said>,
    /// Relays whose connection left `live`.
    pub away: Vec<usize>,
}

impl Touched {
    /// Notes what one change touched.
    pub fn note(&mut self, hub: &Hub, change: HubChange) {
        let label = |r: usize| hub.label(r).unwrap_or("?").to_owned();
        self.notices.extend(notice::of(&change, label));
        match change {
            HubChange::Status { relay, state } => {
                self.status = true;
                if state != State::Live {
                    self.away.push(relay);
                }
            }
            HubChange::Disconnected { relay, .. } => {
                self.status = true;
                self.away.push(relay);
            }
            HubChange::Roster { .. } => self.rosters = true,
            HubChange::Event { event, .. } => {
                self.store = true;
                if matches!(
                    event.kind().core(),
                    Some(EventType::SessionStarted | EventType::SessionEnded | EventType::SessionCompacted)
                ) {
                    self.session_events = true;
                }
            }
            HubChange::Store(c) => {
                self.store = true;
                self.note_store(hub, c);
            }
            HubChange::Command(u) => {
                if let Some(name) = hub.sender().get(&u.id).and_then(|c| c.command().session()) {
                    self.session_names.insert(Arc::from(name));
                }
                self.commands.insert(Arc::from(u.id.as_str()));
            }
            HubChange::Closing { .. } => self.status = true,
            HubChange::ReplayExhausted { .. } | HubChange::RelayError { .. } | HubChange::Violation { .. } => {}
        }
    }

    fn note_store(&mut self, hub: &Hub, c: store::Change) {
        match c {
            store::Change::SessionUpdated(key) | store::Change::SessionEvicted(key) => {
                self.sessions.insert(key);
            }
            store::Change::CardOpened(r)
            | store::Change::CardUpdated(r)
            | store::Change::CardClosed(r)
            | store::Change::CardEvicted(r) => {
                self.sessions.insert(r.session.clone());
                self.cards.insert(r);
            }
            store::Change::CommandUpdated(r) => {
                // Someone's command on a card: redraw the card.
                let subject = hub.store().command(&r).and_then(|c| c.issued()).and_then(|i| i.subject.clone());
                if let Some(request) = subject {
                    self.cards.insert(CardRef { session: r.session.clone(), request: Arc::from(request) });
                }
                self.sessions.insert(r.session);
                self.commands.insert(r.id);
            }
            store::Change::AgentUpdated(_) | store::Change::Violation(_) => {}
        }
    }

    /// Whether anything was noted that a flush has to apply.
    pub fn any(&self) -> bool {
        self.store || self.status || self.rosters || !self.commands.is_empty() || !self.notices.is_empty()
    }

    /// Whether the flush of these changes redraws the view of session
    /// `key`: when they name it, or may have changed what its agent takes
    /// (a roster, a connection). `everything`: the whole picture is read
    /// again (the first flush, changes the hub had to drop).
    pub fn redraws(&self, key: &SessionKey, everything: bool) -> bool {
        everything
            || self.rosters
            || self.status
            || self.sessions.contains(key)
            || self.session_names.contains(&key.name)
    }
}
