//! One subscription as the client keeps it across reconnects.

use super::config::ResumePolicy;
use super::positions::PositionMap;
use crate::protocol::event::{Capture, Event};
use crate::protocol::filter::Filter;
use crate::protocol::frame::{ResumeFrom, SessionPosition, Subscribe};

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
    /// A catch-up companion was sent on the current socket.
    pub catch_up_sent: bool,
}

/// Marks a catch-up companion's id (see [`Subscription::frames`]).
pub(crate) const CATCH_UP_SUFFIX: &str = "+catch-up";

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
            catch_up_sent: false,
        }
    }

    /// Whether the subscription should be (re)sent on a new socket.
    pub fn wants_sending(&self) -> bool {
        !matches!(self.state, SubState::Refused { .. })
    }

    /// The `subscribe` frames for the current socket: the subscription
    /// itself, and when it resumes from positions on a relay that replays
    /// all, a companion asking for everything the relay holds under the
    /// same filter. Positions alone replay only the sessions already known,
    /// so a session that started during an outage would otherwise be seen
    /// only from its next event on; what the companion delivers twice,
    /// dedupe absorbs, and live events matching both arrive once (a
    /// connection's subscriptions are a disjunction).
    pub fn frames(&mut self, replay_all: bool, policy: ResumePolicy) -> Vec<Subscribe> {
        let all = replay_all && !self.all_refused;
        let only_all = all && (policy == ResumePolicy::AllWhenAdvertised || self.positions.is_empty());
        let from = if only_all {
            Some(ResumeFrom::All)
        } else if !self.positions.is_empty() {
            Some(ResumeFrom::Positions(self.positions.to_vec()))
        } else {
            None
        };
        self.sent_all = only_all;
        self.catch_up_sent = all && !only_all;
        self.state = SubState::Pending;
        let main = Subscribe { id: self.id.clone(), filter: self.filter.clone(), from, capture: self.capture };
        let mut frames = vec![main];
        if self.catch_up_sent {
            frames.push(Subscribe {
                id: self.catch_up_id(),
                filter: self.filter.clone(),
                from: Some(ResumeFrom::All),
                capture: self.capture,
            });
        }
        frames
    }

    /// The companion's id: the subscription's own, marked.
    pub fn catch_up_id(&self) -> String {
        format!("{}{CATCH_UP_SUFFIX}", self.id)
    }

    /// Whether `id` names this subscription (`Some(false)`) or its
    /// catch-up companion (`Some(true)`).
    pub fn answers_to(&self, id: &str) -> Option<bool> {
        match id.strip_prefix(self.id.as_str()) {
            Some("") => Some(false),
            Some(CATCH_UP_SUFFIX) => Some(true),
            _ => None,
        }
    }

    /// Advances this subscription's position if the event is one of its own.
    pub fn observe(&mut self, event: &Event) {
        if let (Some(session), Some(at)) = (event.session(), event.position()) {
            if self.filter.matches(event) {
                self.positions.advance(session, at);
            }
        }
    }

    pub fn record_reported(&mut self, position: &SessionPosition) {
        self.reported.advance(&position.session, position.at());
    }
}
