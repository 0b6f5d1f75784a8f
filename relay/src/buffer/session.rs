//! One session's replay buffer.
//!
//! Events are kept in `(epoch, seq)` order with their exact bytes, admission
//! is deduplicated on `(source, id)` (AEP-0001 §7.4), and when the buffer is
//! full (in events or in bytes) the oldest event is evicted and its position remembered, so a
//! consumer resuming from before it is told (`replay-exhausted`) instead of
//! silently missing events.
//!
//! Forwarded commands and `attention.routed` hops carry no `seq` of their
//! own (AEP-0001 §5.2 foreign-emitter exception) but belong to the session's
//! history (AEP-0004 §4.4). Each is kept right after the positioned event it
//! followed on arrival (the session's high water then), in arrival order
//! among its kind: a resume from position `P` replays the ones that arrived
//! after the event at `P`, and never the ones before it. A consumer that saw
//! such an event live and then resumes from the position of the event
//! before it gets it again; it dedupes on `(source, id)` as for any
//! redelivery. Nothing is lost and a replay never repeats one.

use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::Position;
use crate::held::HeldEvent;

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
    /// Another event already holds this `(epoch, seq)` in the session: one
    /// position names one event, so the second is refused.
    PositionTaken,
}

/// An event keyed by its identity `(source, id)`, so the dedupe set shares
/// the buffered event instead of copying its strings.
#[derive(Clone)]
struct ByIdentity(Arc<HeldEvent>);

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

/// Where an entry sits in a session's replay order: a positioned event at
/// `(Some(position), 0)`; the `n`-th unpositioned event kept after the
/// event at `anchor` at `(anchor, n)` (`None`: before any positioned event).
pub type Slot = (Option<Position>, u64);

/// The slot a resume from `position` has everything up to.
fn resume_slot(position: Position) -> Slot {
    (Some(position), 0)
}

/// A kept event and its place in the replay order.
struct Entry {
    slot: Slot,
    event: Arc<HeldEvent>,
}

/// A bounded, ordered, deduplicated buffer of one session's events.
pub struct SessionBuffer {
    events: VecDeque<Entry>,
    held: HashSet<ByIdentity>,
    /// The highest slot ever evicted; resumes before it lost events.
    last_evicted: Option<Slot>,
    depth: usize,
    /// What the held events cost ([`HeldEvent::size`]) and the most they may.
    bytes: usize,
    max_bytes: usize,
    /// Entries added and evicted since the store last looked, so durable
    /// history can mirror them.
    changes: Vec<Change>,
}

/// One change to the held entries.
pub enum Change {
    Added(Slot, Arc<HeldEvent>),
    Evicted(Slot, Arc<HeldEvent>),
}

impl SessionBuffer {
    /// An empty buffer holding at most `depth` events and `max_bytes`
    /// bytes (the newest event is always kept). `last_evicted` carries
    /// eviction history over when a session is re-created.
    pub fn new(depth: usize, max_bytes: usize, last_evicted: Option<Position>) -> SessionBuffer {
        SessionBuffer {
            events: VecDeque::new(),
            held: HashSet::new(),
            last_evicted: last_evicted.map(resume_slot),
            depth: depth.max(1),
            bytes: 0,
            max_bytes,
            changes: Vec::new(),
        }
    }

    /// A buffer rebuilt from durable history: entries in replay order with
    /// the slots they had. The current bounds apply (anything beyond them
    /// is evicted and reported as a change).
    pub fn restore(
        depth: usize,
        max_bytes: usize,
        last_evicted: Option<Slot>,
        entries: Vec<(Slot, Arc<HeldEvent>)>,
    ) -> SessionBuffer {
        let mut buffer = SessionBuffer::new(depth, max_bytes, None);
        buffer.last_evicted = last_evicted;
        for (slot, event) in entries {
            if buffer.held.contains(&ByIdentity(event.clone())) {
                continue;
            }
            let at = buffer.events.len();
            buffer.insert(at, Entry { slot, event });
        }
        buffer.changes.retain(|c| matches!(c, Change::Evicted(..)));
        buffer
    }

    /// The changes since the last call.
    pub fn take_changes(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.changes)
    }

    /// The last slot evicted from this buffer.
    pub fn last_evicted_slot(&self) -> Option<Slot> {
        self.last_evicted
    }

    /// Offers a positioned event (one with `seq`); returns what was done.
    pub fn admit(&mut self, event: Arc<HeldEvent>) -> Admission {
        let Some(position) = event.position() else {
            // Callers only offer positioned events here; refusing keeps the
            // ordering invariant if one ever slips through.
            return Admission::BeforeEvicted;
        };
        let slot = resume_slot(position);
        if self.last_evicted.is_some_and(|evicted| slot <= evicted) {
            return Admission::BeforeEvicted;
        }
        if self.held.contains(&ByIdentity(event.clone())) {
            return Admission::Duplicate;
        }
        if self.holds_position(position) {
            return Admission::PositionTaken;
        }
        // Events nearly always arrive in order, so the insertion point is
        // found from the back in O(1); equal positions keep arrival order.
        let mut at = self.events.len();
        while at > 0 && self.events[at - 1].slot > slot {
            at -= 1;
        }
        self.insert(at, Entry { slot, event });
        Admission::Stored
    }

    /// Keeps an event without a position of its own (a forwarded command,
    /// an `attention.routed` hop) right after the newest event held or
    /// evicted, after any kept there before it.
    pub fn admit_unpositioned(&mut self, event: Arc<HeldEvent>) -> Admission {
        if self.held.contains(&ByIdentity(event.clone())) {
            return Admission::Duplicate;
        }
        let newest = self.events.back().map(|e| e.slot).max(self.last_evicted);
        let anchor = newest.and_then(|(position, _)| position);
        let rank = match newest {
            Some((a, n)) if a == anchor => n + 1,
            _ => 1,
        };
        let at = self.events.len();
        self.insert(at, Entry { slot: (anchor, rank), event });
        Admission::Stored
    }

    /// Whether a positioned event at `position` is held.
    pub fn holds_position(&self, position: Position) -> bool {
        let slot = resume_slot(position);
        self.events.iter().rev().take_while(|e| e.slot >= slot).any(|e| e.slot == slot)
    }

    /// Whether an event with this identity is held.
    pub fn holds(&self, event: &Arc<HeldEvent>) -> bool {
        self.held.contains(&ByIdentity(event.clone()))
    }

    fn insert(&mut self, at: usize, entry: Entry) {
        self.changes.push(Change::Added(entry.slot, entry.event.clone()));
        self.bytes += entry.event.size();
        self.held.insert(ByIdentity(entry.event.clone()));
        self.events.insert(at, entry);
        while self.events.len() > self.depth || (self.bytes > self.max_bytes && self.events.len() > 1) {
            self.evict_oldest();
        }
    }

    /// Drops the oldest event, remembering its slot. `false` when there
    /// was none.
    pub fn evict_oldest(&mut self) -> bool {
        let Some(gone) = self.events.pop_front() else { return false };
        self.bytes -= gone.event.size();
        self.held.remove(&ByIdentity(gone.event.clone()));
        self.last_evicted = self.last_evicted.max(Some(gone.slot));
        self.changes.push(Change::Evicted(gone.slot, gone.event));
        true
    }

    /// What the held events cost in memory.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Held events after the event at `after` (unpositioned ones that
    /// arrived after it included), in order.
    pub fn after(&self, after: Position) -> impl Iterator<Item = &Arc<HeldEvent>> {
        let slot = resume_slot(after);
        let start = self.events.partition_point(|e| e.slot <= slot);
        self.events.range(start..).map(|e| &e.event)
    }

    /// Every held event, in order.
    pub fn all(&self) -> impl Iterator<Item = &Arc<HeldEvent>> {
        self.events.iter().map(|e| &e.event)
    }

    /// The earliest position delivery resumes at: the first held event's,
    /// or, when that is an unpositioned one, the position right after its
    /// anchor.
    pub fn earliest(&self) -> Option<Position> {
        self.events.front().map(|e| match e.slot {
            (Some(p), 0) => p,
            (Some((epoch, seq)), _) => (epoch, seq.saturating_add(1)),
            (None, _) => (0, 0),
        })
    }

    /// The highest evicted position (or anchor), when anything was evicted.
    pub fn last_evicted(&self) -> Option<Position> {
        self.last_evicted.and_then(|(p, _)| p)
    }

    /// Whether a resume from `requested` cannot be served whole: the
    /// position predates something evicted, or, when nothing ever was,
    /// this buffer's history begins after the position right after it.
    /// Then the session had events here before the buffer's first (the
    /// consumer saw one) that it never held: the relay restarted, or first
    /// saw the session mid-way. Gaps after the first held event are the
    /// emitter's (AEP-0001 §7.2), never reported.
    pub fn is_exhausted_for(&self, requested: Position) -> bool {
        let Some(evicted) = self.last_evicted else {
            let next = (requested.0, requested.1.saturating_add(1));
            return self.events.iter().find_map(|e| e.slot.0).is_some_and(|first| first > next);
        };
        resume_slot(requested) < evicted
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The highest held position (or anchor), or the last evicted one when
    /// nothing is held: what is remembered when the whole session is
    /// evicted.
    pub fn high_water(&self) -> Option<Position> {
        self.events.back().and_then(|e| e.slot.0).max(self.last_evicted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use aep_engine::Event;

    fn ev(id: &str, epoch: u64, seq: u64) -> Arc<HeldEvent> {
        Arc::new(HeldEvent::new(
            &Event::parse(&format!(
                r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a/session/s","agent":"a","session":"s","seq":{seq},"epoch":{epoch}}}"#
            ))
            .unwrap(),
        ))
    }

    fn command(id: &str) -> Arc<HeldEvent> {
        Arc::new(HeldEvent::new(
            &Event::parse(&format!(
                r#"{{"aep":"0.1","id":"{id}","type":"control.pause","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/c","agent":"c","session":"s"}}"#
            ))
            .unwrap(),
        ))
    }

    fn ids<'a>(it: impl Iterator<Item = &'a Arc<HeldEvent>>) -> Vec<String> {
        it.map(|e| e.id().to_owned()).collect()
    }

    #[test]
    fn unpositioned_events_sit_after_the_event_they_followed() {
        let mut b = SessionBuffer::new(10, usize::MAX, None);
        assert_eq!(b.admit_unpositioned(command("c0")), Admission::Stored);
        b.admit(ev("a", 0, 0));
        b.admit_unpositioned(command("c1"));
        b.admit_unpositioned(command("c2"));
        assert_eq!(b.admit_unpositioned(command("c1")), Admission::Duplicate);
        b.admit(ev("b", 0, 1));
        // Another event at a position already held is refused.
        assert_eq!(b.admit(ev("late", 0, 0)), Admission::PositionTaken);
        assert_eq!(ids(b.all()), ["c0", "a", "c1", "c2", "b"]);
        assert_eq!(ids(b.after((0, 0))), ["c1", "c2", "b"]);
        assert_eq!(ids(b.after((0, 1))), Vec::<String>::new());
        assert_eq!(b.high_water(), Some((0, 1)));
    }

    #[test]
    fn an_evicted_command_exhausts_resumes_from_before_it() {
        let mut b = SessionBuffer::new(2, usize::MAX, None);
        b.admit(ev("a", 0, 0));
        b.admit_unpositioned(command("c"));
        b.admit(ev("b", 0, 1));
        assert!(!b.is_exhausted_for((0, 0)));
        b.admit(ev("d", 0, 2));
        assert!(b.is_exhausted_for((0, 0)), "the command after seq 0 is gone");
        assert!(!b.is_exhausted_for((0, 1)));
        assert_eq!(b.earliest(), Some((0, 1)));
    }

    fn seqs<'a>(it: impl Iterator<Item = &'a Arc<HeldEvent>>) -> Vec<u64> {
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
    fn exhausted_without_eviction_only_before_the_first_held_event() {
        let mut b = SessionBuffer::new(3, usize::MAX, None);
        b.admit_unpositioned(command("c"));
        b.admit(ev("a", 0, 5));
        b.admit(ev("b", 0, 9));
        assert!(b.is_exhausted_for((0, 0)), "seq 1 to 4 were never held here");
        assert!(!b.is_exhausted_for((0, 4)));
        assert!(!b.is_exhausted_for((0, 5)));
        assert!(!b.is_exhausted_for((0, 6)), "a gap between held events is the emitter's");
        let mut evicted = SessionBuffer::new(1, usize::MAX, None);
        evicted.admit(ev("a", 0, 0));
        evicted.admit(ev("b", 0, 5));
        assert!(!evicted.is_exhausted_for((0, 0)), "held from its first event: the gap is the emitter's");
    }
}
