//! Which relays a session was seen through, most recent first: where a
//! command for that session is sent.
//!
//! Bounded: at most [`MAX_ROUTED_SESSIONS`] session names are remembered;
//! the one seen least recently is forgotten first (a command to it then
//! needs an explicit relay when there are several).

use std::collections::HashMap;

/// Index of a relay, in the order given to [`Hub::new`](super::Hub::new).
pub type RelayId = usize;

/// Session names remembered for routing.
pub const MAX_ROUTED_SESSIONS: usize = 4096;

#[derive(Debug)]
struct Seen {
    /// Relays, most recent sighting first; each at most once.
    relays: Vec<RelayId>,
    stamp: u64,
}

#[derive(Debug)]
pub(super) struct RouteTable {
    sessions: HashMap<String, Seen>,
    capacity: usize,
    clock: u64,
}

impl RouteTable {
    pub(super) fn new(capacity: usize) -> RouteTable {
        RouteTable { sessions: HashMap::new(), capacity: capacity.max(1), clock: 0 }
    }

    /// Records that `session` was seen through `relay` just now.
    pub(super) fn see(&mut self, session: &str, relay: RelayId) {
        self.clock += 1;
        if let Some(seen) = self.sessions.get_mut(session) {
            seen.stamp = self.clock;
            if seen.relays.first() != Some(&relay) {
                seen.relays.retain(|r| *r != relay);
                seen.relays.insert(0, relay);
            }
            return;
        }
        if self.sessions.len() >= self.capacity {
            let stalest = self.sessions.iter().min_by_key(|(_, s)| s.stamp).map(|(k, _)| k.clone());
            if let Some(k) = stalest {
                self.sessions.remove(&k);
            }
        }
        self.sessions.insert(session.to_owned(), Seen { relays: vec![relay], stamp: self.clock });
    }

    /// The relays `session` was seen through, most recent first.
    pub(super) fn relays(&self, session: &str) -> &[RelayId] {
        self.sessions.get(session).map(|s| s.relays.as_slice()).unwrap_or_default()
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_recent_relay_first_and_stalest_session_forgotten() {
        let mut t = RouteTable::new(2);
        t.see("a", 0);
        t.see("a", 1);
        t.see("a", 1);
        assert_eq!(t.relays("a"), &[1, 0]);
        t.see("b", 0);
        t.see("a", 0);
        t.see("c", 1);
        assert_eq!(t.len(), 2);
        assert!(t.relays("b").is_empty(), "b was the stalest");
        assert_eq!(t.relays("a"), &[0, 1]);
        assert_eq!(t.relays("c"), &[1]);
    }
}
