//! Which session the session bound drops: the least recently updated one
//! with no card waiting on a person, else the least recently updated.
//!
//! Sessions with a waiting card are indexed apart, so finding the victim
//! never walks past them (a full store may hold many).

use std::collections::BTreeSet;

pub(crate) type SessionId = u64;

/// A session's place in the index: last update, and whether a card waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    pub touched: u64,
    pub waiting: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Recency {
    idle: BTreeSet<(u64, SessionId)>,
    waiting: BTreeSet<(u64, SessionId)>,
}

impl Recency {
    fn set(&mut self, waiting: bool) -> &mut BTreeSet<(u64, SessionId)> {
        if waiting {
            &mut self.waiting
        } else {
            &mut self.idle
        }
    }

    pub(crate) fn insert(&mut self, id: SessionId, mark: Mark) {
        self.set(mark.waiting).insert((mark.touched, id));
    }

    pub(crate) fn remove(&mut self, id: SessionId, mark: Mark) {
        self.set(mark.waiting).remove(&(mark.touched, id));
    }

    pub(crate) fn moved(&mut self, id: SessionId, before: Mark, after: Mark) {
        if before != after {
            self.remove(id, before);
            self.insert(id, after);
        }
    }

    /// The session to drop when full, other than `keep` (the one being
    /// folded into), taken out of the index.
    pub(crate) fn pop_victim(&mut self, keep: Option<SessionId>) -> Option<SessionId> {
        for set in [&mut self.idle, &mut self.waiting] {
            if let Some(&entry) = set.iter().find(|(_, id)| Some(*id) != keep) {
                set.remove(&entry);
                return Some(entry.1);
            }
        }
        None
    }
}
