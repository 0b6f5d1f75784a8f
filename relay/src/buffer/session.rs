//! One session's replay buffer.
//!
//! Events are kept in `(epoch, seq)` order with their exact bytes, admission
//! is deduplicated on `(source, id)` (AEP-0001 §7.4), and when the buffer is
//! full (in events or in bytes) the oldest event is evicted and its position remembered, so a
//! consumer resuming from before it is told (`replay-exhausted`) instead of
//! silently missing events.

use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::Position;
use crate::held::Held;

/// What happened to an event offered to the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Now held for replay.
    Stored,
    /// Same `(source, id)` as a held event: replay serves one copy.
    Duplicate,
    /// At or before a position already evicted: holding it would put
    /// history back behind a gap consumers were told about.
    BeforeEvicted,
}

/// An event keyed by its identity `(source, id)`, so the dedupe set shares
/// the buffered event instead of copying its strings.
#[derive(Clone)]
struct ByIdentity(Arc<Held>);

impl PartialEq for ByIdentity {
    fn eq(&self, other: &Self) -> bool {
        self.0.source() == other.0.source() && self.0.id() == other.0.id()
    }
}
impl Eq for ByIdentity {}
impl Hash for ByIdentity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.source().hash(state);
        self.0.id().hash(state);
    }
}

/// A bounded, ordered, deduplicated buffer of one session's events.
pub struct SessionBuffer {
    events: VecDeque<Arc<Held>>,
    held: HashSet<ByIdentity>,
    /// The highest position ever evicted; resumes before it lost events.
    last_evicted: Option<Position>,
    depth: usize,
    /// What the held events cost ([`Held::size`]) and the most they may.
    bytes: usize,
    max_bytes: usize,
}

impl SessionBuffer {
    /// An empty buffer holding at most `depth` events and `max_bytes`
    /// bytes (the newest event is always kept). `last_evicted` carries
    /// eviction history over when a session is re-created.
    pub fn new(depth: usize, max_bytes: usize, last_evicted: Option<Position>) -> SessionBuffer {
        SessionBuffer {
            events: VecDeque::new(),
            held: HashSet::new(),
            last_evicted,
            depth: depth.max(1),
            bytes: 0,
            max_bytes,
        }
    }

    /// Offers a positioned event (one with `seq`); returns what was done.
    pub fn admit(&mut self, event: Arc<Held>) -> Admission {
        let Some(position) = event.position() else {
            // Callers only offer positioned events; refusing keeps the
            // ordering invariant if one ever slips through.
            return Admission::BeforeEvicted;
        };
        if self.last_evicted.is_some_and(|evicted| position <= evicted) {
            return Admission::BeforeEvicted;
        }
        let key = ByIdentity(event);
        if self.held.contains(&key) {
            return Admission::Duplicate;
        }
        // Events nearly always arrive in order, so the insertion point is
        // found from the back in O(1); equal positions keep arrival order.
        let mut at = self.events.len();
        while at > 0 && self.events[at - 1].position().is_some_and(|p| p > position) {
            at -= 1;
        }
        self.bytes += key.0.size();
        self.events.insert(at, key.0.clone());
        self.held.insert(key);
        while self.events.len() > self.depth || (self.bytes > self.max_bytes && self.events.len() > 1) {
            self.evict_oldest();
        }
        Admission::Stored
    }

    /// Drops the oldest event, remembering its position. `false` when
    /// there was none.
    pub fn evict_oldest(&mut self) -> bool {
        let Some(gone) = self.events.pop_front() else { return false };
        let position = gone.position();
        self.bytes -= gone.size();
        self.held.remove(&ByIdentity(gone));
        self.last_evicted = self.last_evicted.max(position);
        true
    }

    /// What the held events cost in memory.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Held events strictly after `after`, in order.
    pub fn after(&self, after: Position) -> impl Iterator<Item = &Arc<Held>> {
        let start = self.events.partition_point(|e| e.position().is_some_and(|p| p <= after));
        self.events.range(start..)
    }

    /// Every held event, in order.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Held>> {
        self.events.iter()
    }

    /// The earliest held position, when anything is held.
    pub fn earliest(&self) -> Option<Position> {
        self.events.front().and_then(|e| e.position())
    }

    /// The highest evicted position, when anything was evicted.
    pub fn last_evicted(&self) -> Option<Position> {
        self.last_evicted
    }

    /// Whether a resume from `requested` lost events to eviction, i.e. the
    /// position predates something evicted (never when nothing was).
    pub fn is_exhausted_for(&self, requested: Position) -> bool {
        self.last_evicted.is_some_and(|evicted| requested < evicted)
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The highest held position, or the last evicted one when nothing is
    /// held: what is remembered when the whole session is evicted.
    pub fn high_water(&self) -> Option<Position> {
        self.events.back().and_then(|e| e.position()).max(self.last_evicted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use aep_client::Event;

    fn ev(id: &str, epoch: u64, seq: u64) -> Arc<Held> {
        Arc::new(Held::new(
            &Event::parse(&format!(
                r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":{seq},"epoch":{epoch}}}"#
            ))
            .unwrap(),
        ))
    }

    fn seqs<'a>(it: impl Iterator<Item = &'a Arc<Held>>) -> Vec<u64> {
        it.map(|e| e.position().unwrap().1).collect()
    }

    #[test]
    fn orders_by_position_and_dedupes_on_identity() {
        let mut b = SessionBuffer::new(10, usize::MAX, None);
        assert_eq!(b.admit(ev("a", 0, 2)), Admission::Stored);
        assert_eq!(b.admit(ev("b", 0, 0)), Admission::Stored);
        assert_eq!(b.admit(ev("c", 0, 1)), Admission::Stored);
        assert_eq!(b.admit(ev("a", 0, 2)), Admission::Duplicate);
        assert_eq!(seqs(b.all()), vec![0, 1, 2]);
        assert_eq!(seqs(b.after((0, 0))), vec![1, 2]);
        assert_eq!(b.admit(ev("d", 1, 0)), Admission::Stored);
        assert_eq!(seqs(b.after((0, 5))), vec![0]);
    }

    #[test]
    fn bytes_bound_the_buffer_too() {
        let one = ev("e0", 0, 0).size();
        let mut b = SessionBuffer::new(100, one * 3, None);
        for s in 0..10 {
            b.admit(ev(&format!("e{s}"), 0, s));
        }
        assert_eq!(b.len(), 3);
        assert!(b.bytes() <= one * 3);
        assert!(b.is_exhausted_for((0, 5)));
        let mut tiny = SessionBuffer::new(100, 1, None);
        assert_eq!(tiny.admit(ev("big", 0, 0)), Admission::Stored, "the newest event is always kept");
        assert_eq!(tiny.len(), 1);
    }

    #[test]
    fn evicts_oldest_and_remembers_the_gap() {
        let mut b = SessionBuffer::new(3, usize::MAX, None);
        for s in 0..5 {
            b.admit(ev(&format!("e{s}"), 1, s));
        }
        assert_eq!(b.len(), 3);
        assert_eq!(b.earliest(), Some((1, 2)));
        assert_eq!(b.last_evicted(), Some((1, 1)));
        assert!(b.is_exhausted_for((1, 0)));
        assert!(!b.is_exhausted_for((1, 1)));
        assert!(!b.is_exhausted_for((1, 3)));
        assert_eq!(b.admit(ev("late", 1, 1)), Admission::BeforeEvicted);
        // An evicted id may come back only at a new position.
        assert_eq!(b.admit(ev("e0", 1, 9)), Admission::Stored);
        assert_eq!(b.high_water(), Some((1, 9)));
    }

    #[test]
    fn never_exhausted_without_eviction() {
        let mut b = SessionBuffer::new(3, usize::MAX, None);
        b.admit(ev("a", 0, 5));
        assert!(!b.is_exhausted_for((0, 0)));
    }
}
