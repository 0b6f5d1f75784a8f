//! What changed, for drivers that redraw incrementally.
//!
//! Changes name what changed (a key, never a copy of the state); the
//! caller reads the current state through the store's queries. The queue
//! is bounded: when nobody drains it, the oldest changes are dropped and
//! counted, and a caller seeing a non-zero count re-reads everything.

use std::collections::VecDeque;
use std::sync::Arc;

use super::config::ChangeFeed;
use super::key::SessionKey;
use super::rules::StreamViolation;

/// One attention card: its session and the `attention.requested` id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CardRef {
    pub session: SessionKey,
    pub request: Arc<str>,
}

/// One command's audit chain: the session it targets and its id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommandRef {
    pub session: SessionKey,
    pub id: Arc<str>,
}

/// Something the last `apply` changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    SessionUpdated(SessionKey),
    /// Dropped to stay within the session bound.
    SessionEvicted(SessionKey),
    /// A card appeared (from any hop of its lifecycle).
    CardOpened(CardRef),
    CardUpdated(CardRef),
    /// A card reached resolved, timed out or abandoned.
    CardClosed(CardRef),
    /// Dropped to stay within the per-session card bound.
    CardEvicted(CardRef),
    CommandUpdated(CommandRef),
    /// An agent-scoped event arrived for this `source`.
    AgentUpdated(Arc<str>),
    Violation(StreamViolation),
}

/// The bounded change queue.
#[derive(Debug)]
pub(crate) struct Outbox {
    queue: VecDeque<Change>,
    capacity: usize,
    dropped: u64,
    violations: u64,
    recent: VecDeque<StreamViolation>,
    recent_capacity: usize,
    feed: ChangeFeed,
}

impl Outbox {
    pub(crate) fn new(capacity: usize, recent_capacity: usize, feed: ChangeFeed) -> Outbox {
        Outbox {
            queue: VecDeque::new(),
            capacity,
            dropped: 0,
            violations: 0,
            recent: VecDeque::new(),
            recent_capacity,
            feed,
        }
    }

    /// Queues the change `make` builds, unless nobody reads the feed:
    /// then it is never built.
    pub(crate) fn note(&mut self, make: impl FnOnce() -> Change) {
        if self.feed == ChangeFeed::Queued {
            self.push(make());
        }
    }

    /// Queues that `session` changed, unless that is the change at the back
    /// of the queue already: a burst of one session's events is one update,
    /// and then its key is not even copied.
    pub(crate) fn session_updated(&mut self, session: &SessionKey) {
        let repeated = matches!(self.queue.back(), Some(Change::SessionUpdated(last)) if last == session);
        if !repeated {
            self.note(|| Change::SessionUpdated(session.clone()));
        }
    }

    /// Queues `change`, folding it into an identical change at the back of
    /// the queue (a burst of events for one session is one update).
    pub(crate) fn push(&mut self, change: Change) {
        if let Change::Violation(_) = change {
            self.violations += 1;
        } else if self.queue.back() == Some(&change) {
            return;
        }
        if self.feed == ChangeFeed::Off {
            return;
        }
        if self.capacity == 0 {
            self.dropped += 1;
            return;
        }
        if self.queue.len() >= self.capacity {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.queue.push_back(change);
    }

    pub(crate) fn violation(&mut self, v: StreamViolation) {
        if self.recent_capacity > 0 {
            if self.recent.len() >= self.recent_capacity {
                self.recent.pop_front();
            }
            self.recent.push_back(v.clone());
        }
        self.push(Change::Violation(v));
    }

    /// The most recent violations, oldest first.
    pub(crate) fn recent(&self) -> impl DoubleEndedIterator<Item = &StreamViolation> + '_ {
        self.recent.iter()
    }

    pub(crate) fn pop(&mut self) -> Option<Change> {
        self.queue.pop_front()
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    pub(crate) fn violations(&self) -> u64 {
        self.violations
    }

    /// Violations counted but no longer (or never) kept in the recent list.
    pub(crate) fn unlisted_violations(&self) -> u64 {
        self.violations - self.recent.len() as u64
    }
}
