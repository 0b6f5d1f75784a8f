//! One subscription as the client keeps it across reconnects.

use super::positions::PositionMap;
use crate::protocol::event::{Capture, Event};
use crate::protocol::filter::Filter;
use crate::protocol::frame::{Position, ResumeFrom, Subscribe};

/// Where a subscription stands with the relay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubState {
    /// Not sent on the current socket (not live yet, or reconnecting).
    Waiting,
    /// Sent; no answer yet.
    Pending,
    /// The relay answered `subscribed`.
    Active,
    /// The relay refused it; it is not re-sent on reconnect.
    Refused { code: String, detail: Option<String> },
}

#[derive(Clone, Debug)]
pub(crate) struct Subscription {
    pub id: String,
    pub filter: Filter,
    pub capture: Option<Capture>,
    pub state: SubState,
    /// What this subscription has delivered to the application.
    pub positions: PositionMap,
    /// What the relay said it delivered (`closing`); informative only: a
    /// consumer resumes from what it processed, never from the relay's word.
    pub reported: PositionMap,
    /// `from: "all"` was sent on the current socket.
    pub sent_all: bool,
    /// The relay refused `from: "all"`; fall back to positions.
    pub all_refused: bool,
}

impl Subscription {
    pub fn new(
        id: String,
        filter: Filter,
        capture: Option<Capture>,
        positions: PositionMap,
        max_sessions: usize,
    ) -> Subscription {
        let reported = PositionMap::new(max_sessions);
        Subscription {
            id,
            filter,
            capture,
            state: SubState::Waiting,
            positions,
            reported,
            sent_all: false,
            all_refused: false,
        }
    }

    /// Whether the subscription should be (re)sent on a new socket.
    pub fn wants_sending(&self) -> bool {
        !matches!(self.state, SubState::Refused { .. })
    }

    /// The `subscribe` frame for the current socket.
    pub fn frame(&mut self, replay_all: bool, prefer_all: bool) -> Subscribe {
        let all = replay_all && !self.all_refused;
        let from = if all && (prefer_all || self.positions.is_empty()) {
            Some(ResumeFrom::All)
        } else if !self.positions.is_empty() {
            Some(ResumeFrom::Positions(self.positions.to_vec()))
        } else {
            None
        };
        self.sent_all = from == Some(ResumeFrom::All);
        self.state = SubState::Pending;
        Subscribe { id: self.id.clone(), filter: self.filter.clone(), from, capture: self.capture }
    }

    /// Advances this subscription's position if the event is one of its own.
    pub fn observe(&mut self, event: &Event) {
        if let (Some(session), Some(at)) = (event.session(), event.position()) {
            if self.filter.matches(event) {
                self.positions.advance(session, at);
            }
        }
    }

    pub fn record_reported(&mut self, position: &Position) {
        self.reported.advance(&position.session, position.at());
    }
}
