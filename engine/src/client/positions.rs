//! Resume positions: the highest `(epoch, seq)` delivered per session
//! (AEP-0003 §7), bounded in the number of sessions.

use crate::order::SortedMap;
use crate::protocol::frame::SessionPosition;

/// Default bound on sessions tracked per map: also the most `from`
/// positions one subscribe carries, well under what relays accept.
pub const DEFAULT_MAX_SESSIONS: usize = 256;

#[derive(Clone, Debug)]
struct Entry {
    at: (u64, u64),
    /// When this session last advanced, in advances; the stalest session
    /// is forgotten first.
    touched: u64,
}

/// Highest position per session. When full, the session that advanced
/// least recently is forgotten: resuming it then replays from the relay's
/// choice instead of an exact position, which costs redelivery, not order.
#[derive(Clone, Debug)]
pub struct PositionMap {
    max_sessions: usize,
    entries: SortedMap<Entry>,
    clock: u64,
}

impl Default for PositionMap {
    fn default() -> PositionMap {
        PositionMap::new(DEFAULT_MAX_SESSIONS)
    }
}

impl PositionMap {
    pub fn new(max_sessions: usize) -> PositionMap {
        PositionMap { max_sessions: max_sessions.max(1), entries: SortedMap::new(), clock: 0 }
    }

    /// Records `at` for `session` if it is beyond what is held. Returns
    /// whether the position moved.
    pub fn advance(&mut self, session: &str, at: (u64, u64)) -> bool {
        self.clock += 1;
        if let Some(e) = self.entries.get_mut(session) {
            if at <= e.at {
                return false;
            }
            e.at = at;
            e.touched = self.clock;
            return true;
        }
        if self.entries.len() >= self.max_sessions {
            let stalest = self.entries.iter().min_by_key(|(_, e)| e.touched).map(|(k, _)| k.to_owned());
            if let Some(k) = stalest {
                self.entries.remove(&k);
            }
        }
        self.entries.insert(session.to_owned(), Entry { at, touched: self.clock });
        true
    }

    pub fn get(&self, session: &str) -> Option<(u64, u64)> {
        self.entries.get(session).map(|e| e.at)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every position, ordered by session.
    pub fn to_vec(&self) -> Vec<SessionPosition> {
        self.entries.iter().map(|(s, e)| SessionPosition::new(s, e.at.0, e.at.1)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_highest_epoch_then_seq() {
        let mut m = PositionMap::new(4);
        assert!(m.advance("s", (0, 5)));
        assert!(!m.advance("s", (0, 3)), "a redelivery never moves a position back");
        assert!(m.advance("s", (1, 0)), "a new epoch outranks any seq of the old one");
        assert!(!m.advance("s", (0, 99)));
        assert_eq!(m.get("s"), Some((1, 0)));
    }

    #[test]
    fn forgets_the_stalest_session_when_full() {
        let mut m = PositionMap::new(2);
        m.advance("a", (0, 1));
        m.advance("b", (0, 1));
        m.advance("a", (0, 2));
        m.advance("c", (0, 1));
        assert_eq!(m.len(), 2);
        assert_eq!(m.get("b"), None);
        assert_eq!(m.to_vec(), vec![SessionPosition::new("a", 0, 2), SessionPosition::new("c", 0, 1)]);
    }
}
