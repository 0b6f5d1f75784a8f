//! A session's ordered lane of events, bounded.
//!
//! The owner's events sort by `(epoch, seq)` (AEP-0001 §7.3), so backfill
//! lands where it belongs rather than where it arrived. Seq-less
//! foreign-emitter events (commands, `attention.routed`) have no position;
//! each is anchored right after the highest position the session had seen
//! when it arrived, which keeps arrival order between them and the
//! sequenced events that were already there.
//!
//! The lane holds [`Entry`]s: the exact bytes plus the few facts the fold
//! looks up again. A parsed event weighs about ten times its bytes, so
//! holding parsed events would cost most of the memory budget; a caller
//! that needs one parses the entry again ([`Entry::event`]).

use std::hash::BuildHasher;
use std::sync::Arc;

use super::hash::FastSet;
use super::lane::Lane;

use crate::protocol::event::{Event, EventError, Kept, Text};
use crate::protocol::kind::EventKind;
use crate::protocol::vocabulary::EventType;
use crate::time::UnixMs;

pub use crate::protocol::event::Position;

/// One event as it reaches the store, parsed, with its provenance.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub event: Event,
    /// The relay label the event arrived through, when tagged.
    pub relay: Option<Arc<str>>,
    /// When the store received it (the caller's clock).
    pub received_at: UnixMs,
    /// Store-wide arrival number; later arrivals have larger numbers.
    pub arrival: u64,
}

/// One event as the store keeps it: exact bytes and lookup facts.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The text the event's bytes are the span `own` of.
    raw: Arc<str>,
    own: Text,
    /// Texts `id` or `cause` had escaped on the wire (usually empty).
    unescaped: Box<str>,
    /// Spans of `raw` (or `unescaped`): no copy per entry.
    id: Text,
    ty: Text,
    /// `ty` looked up in the registry (see [`Entry::kind`]).
    core: Option<EventType>,
    cause: Option<Text>,
    /// Where the entry sorts in its lane (see [`LaneKey`]): the lane holds
    /// entries alone, as a separate key beside each would make every
    /// entry a third larger to write, copy and move.
    place: LaneKey,
    /// The event carried no `seq`: `place` is then the anchor it was filed
    /// after, not its position.
    seqless: bool,
    at: Option<UnixMs>,
    /// The relay label the event first arrived through, when tagged.
    pub relay: Option<Arc<str>>,
    /// When the store received it (the caller's clock).
    pub received_at: UnixMs,
    /// Store-wide arrival number.
    pub arrival: u64,
}

impl Entry {
    /// Keeps `d`'s bytes and facts.
    pub(crate) fn keep(d: Delivery) -> Entry {
        let (position, at) = (d.event.position(), d.event.at());
        let Kept { raw, own, unescaped, id, ty, core, cause } = d.event.into_kept();
        Entry {
            raw,
            own,
            unescaped,
            id,
            ty,
            core,
            cause,
            place: LaneKey { anchor: position, tie: 0 },
            seqless: position.is_none(),
            at,
            relay: d.relay,
            received_at: d.received_at,
            arrival: d.arrival,
        }
    }

    /// The exact bytes received.
    pub fn raw(&self) -> &str {
        self.own.slice(&self.raw, "")
    }
    pub fn id(&self) -> &str {
        self.id.slice(&self.raw, &self.unescaped)
    }
    pub fn ty(&self) -> &str {
        self.ty.slice(&self.raw, &self.unescaped)
    }
    /// The event type as a closed set (see [`Event::kind`]).
    pub fn kind(&self) -> EventKind<'_> {
        EventKind::from_parsed(self.core, self.ty())
    }
    pub fn cause(&self) -> Option<&str> {
        self.cause.map(|c| c.slice(&self.raw, &self.unescaped))
    }
    pub fn position(&self) -> Option<Position> {
        if self.seqless {
            None
        } else {
            self.place.anchor
        }
    }
    /// The event's `time`, when it parses (display only, never ordering).
    pub fn at(&self) -> Option<UnixMs> {
        self.at
    }
    /// The event, parsed again from its exact bytes.
    pub fn event(&self) -> Result<Event, EventError> {
        Event::parse(self.raw())
    }
    pub fn is_command(&self) -> bool {
        self.kind().is_command()
    }
    /// An owner's domain event: not an ack, not another party's seq-less
    /// event, not agent-scoped. Only these can be a command's outcome.
    pub fn is_domain(&self) -> bool {
        self.kind().is_domain()
    }
}

/// Sort key in the lane. A sequenced event sits at `(Some(position), 0)`;
/// anything without its own position sits at `(anchor, arrival)`, after
/// the anchor and after earlier arrivals with the same anchor. `None`
/// sorts before every position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct LaneKey {
    anchor: Option<Position>,
    tie: u64,
}

/// The bounded lane, sorted by key. Events nearly always arrive at the
/// end, so a sorted deque beats a tree here: appends and drops of the
/// oldest are O(1), a late event costs one shift within its chunk.
#[derive(Debug)]
pub struct Timeline {
    lane: Lane<Entry>,
    /// The key at the back of the lane, kept here: nearly every event
    /// lands after it, and the lane's back is rarely in cache when a
    /// session's next event comes.
    last: Option<LaneKey>,
    capacity: usize,
    dropped: u64,
    /// Digests of the `cause`s in the lane (and of some dropped since).
    /// Every command asks whether an event it caused arrived before it;
    /// nearly always none did, and this answers that without a walk over
    /// the lane, which made a long session quadratic in its commands.
    causes: FastSet<u64>,
}

impl Timeline {
    pub(crate) fn new(capacity: usize) -> Timeline {
        Timeline { lane: Lane::new(), last: None, capacity, dropped: 0, causes: FastSet::default() }
    }

    /// A new, empty timeline in this one's memory.
    pub(crate) fn emptied(mut self, capacity: usize) -> Timeline {
        self.lane.clear();
        self.causes.clear();
        Timeline { lane: self.lane, causes: self.causes, ..Timeline::new(capacity) }
    }

    fn digest(&self, cause: &str) -> u64 {
        self.causes.hasher().hash_one(cause)
    }

    /// Events in lane order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Entry> + ExactSizeIterator + '_ {
        self.lane.iter()
    }

    pub fn len(&self) -> usize {
        self.lane.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lane.len() == 0
    }

    /// How many entries were dropped to stay within the capacity.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The event holding `position`, while it is retained.
    pub fn at(&self, position: Position) -> Option<&Entry> {
        let key = LaneKey { anchor: Some(position), tie: 0 };
        let at = self.lane.partition_point(|e| e.place < key);
        self.lane.get(at).filter(|e| e.place == key)
    }

    /// Inserts an event that has its own position. A second event claiming
    /// an occupied position goes right after the first (the fault is
    /// reported by the caller, never hidden by reordering).
    pub(crate) fn insert_at(&mut self, position: Position, entry: Entry) {
        let mut key = LaneKey { anchor: Some(position), tie: 0 };
        let beyond_last = self.last.is_none_or(|last| last < key);
        if !beyond_last && self.at(position).is_some() {
            key.tie = entry.arrival.max(1);
        }
        self.insert(key, entry);
    }

    /// Inserts an event without a position after `anchor`.
    pub(crate) fn insert_after(&mut self, anchor: Option<Position>, entry: Entry) {
        debug_assert!(entry.seqless, "only an event without a position is anchored");
        let key = LaneKey { anchor, tie: entry.arrival.max(1) };
        self.insert(key, entry);
    }

    /// The highest position among entries that arrived before `arrival`:
    /// the anchor an event arriving then would have had.
    pub(crate) fn anchor_at_arrival(&self, arrival: u64) -> Option<Position> {
        self.iter().filter(|e| e.arrival < arrival).filter_map(Entry::position).max()
    }

    /// Entries whose `cause` is `id`, in lane order.
    pub(crate) fn caused_by<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        let maybe = self.causes.contains(&self.digest(id));
        self.iter().take_while(move |_| maybe).filter(move |e| e.cause() == Some(id))
    }

    fn insert(&mut self, key: LaneKey, mut entry: Entry) {
        entry.place = key;
        if let Some(cause) = entry.cause() {
            self.causes.insert(self.digest(cause));
        }
        match self.last {
            Some(last) if last > key => {
                let at = self.lane.partition_point(|e| e.place < key);
                self.lane.insert(at, entry);
            }
            _ => self.lane.push_back(entry),
        }
        while self.lane.len() > self.capacity {
            self.lane.pop_front();
            self.dropped += 1;
        }
        self.last = self.lane.back().map(|e| e.place);
        // Digests of dropped entries only cost a needless walk; once they
        // outnumber the lane, start again from what it holds.
        if self.causes.len() > 2 * self.lane.len() + 64 {
            let digests: Vec<u64> = self.iter().filter_map(Entry::cause).map(|c| self.digest(c)).collect();
            self.causes.clear();
            self.causes.extend(digests);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, seq: Option<u64>, arrival: u64) -> Entry {
        let (ty, seq) = match seq {
            Some(s) => ("progress.status", format!(r#","seq":{s}"#)),
            None => ("control.pause", String::new()),
        };
        let raw = format!(
            r#"{{"aep":"0.1","id":"{id}","type":"{ty}","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s"{seq}}}"#
        );
        let d = Delivery { event: Event::parse(&raw).unwrap(), relay: None, received_at: UnixMs(0), arrival };
        Entry::keep(d)
    }

    fn ids(t: &Timeline) -> Vec<&str> {
        t.iter().map(|e| e.id()).collect()
    }

    #[test]
    fn backfill_sorts_and_seqless_keeps_arrival() {
        let mut t = Timeline::new(16);
        t.insert_at((0, 1), entry("s1", Some(1), 1));
        t.insert_at((0, 5), entry("s5", Some(5), 2));
        t.insert_after(Some((0, 5)), entry("c1", None, 3));
        t.insert_after(Some((0, 5)), entry("c2", None, 4));
        t.insert_at((0, 3), entry("s3", Some(3), 5));
        t.insert_at((0, 6), entry("s6", Some(6), 6));
        assert_eq!(ids(&t), ["s1", "s3", "s5", "c1", "c2", "s6"]);
        assert_eq!(t.anchor_at_arrival(3), Some((0, 5)));
        assert_eq!(t.anchor_at_arrival(1), None);
        assert_eq!(t.at((0, 3)).unwrap().id(), "s3");
        assert!(t.at((0, 4)).is_none());
    }

    #[test]
    fn seqless_before_any_position_stays_first() {
        let mut t = Timeline::new(16);
        t.insert_after(None, entry("c1", None, 1));
        t.insert_at((0, 0), entry("s0", Some(0), 2));
        assert_eq!(ids(&t), ["c1", "s0"]);
    }

    #[test]
    fn reused_position_is_kept_after_the_first() {
        let mut t = Timeline::new(16);
        t.insert_at((0, 2), entry("a", Some(2), 1));
        t.insert_at((0, 3), entry("c", Some(3), 2));
        t.insert_at((0, 2), entry("b", Some(2), 3));
        assert_eq!(ids(&t), ["a", "b", "c"]);
        assert_eq!(t.at((0, 2)).unwrap().id(), "a");
    }

    #[test]
    fn drops_oldest_beyond_capacity() {
        let mut t = Timeline::new(3);
        for s in 0..5 {
            t.insert_at((0, s), entry(&format!("s{s}"), Some(s), s + 1));
        }
        assert_eq!(ids(&t), ["s2", "s3", "s4"]);
        assert_eq!(t.dropped(), 2);
        // Backfill older than everything retained is dropped at once.
        t.insert_at((0, 0), entry("old", Some(0), 9));
        assert_eq!(ids(&t), ["s2", "s3", "s4"]);
    }

    fn caused(id: &str, seq: u64, cause: &str) -> Entry {
        let raw = format!(
            r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":{seq},"cause":"{cause}"}}"#
        );
        let d = Delivery { event: Event::parse(&raw).unwrap(), relay: None, received_at: UnixMs(0), arrival: seq + 1 };
        Entry::keep(d)
    }

    #[test]
    fn events_are_found_by_cause_while_retained() {
        let mut t = Timeline::new(100);
        for s in 0..1_000 {
            t.insert_at((0, s), caused(&format!("e{s}"), s, &format!("c{}", s % 400)));
        }
        let by = |t: &Timeline, c: &str| t.caused_by(c).map(|e| e.id().to_owned()).collect::<Vec<_>>();
        // The lane holds e900..=e999, caused by c100..=c199.
        assert_eq!(by(&t, "c199"), ["e999"]);
        assert_eq!(by(&t, "c100"), ["e900"]);
        assert!(by(&t, "c300").is_empty(), "e300 and e700 were dropped");
        assert!(by(&t, "nobody").is_empty());
        assert!(t.causes.len() <= 2 * t.len() + 64, "the digests stay bounded by the lane: {}", t.causes.len());
    }

    #[test]
    fn an_entry_keeps_bytes_and_parses_back() {
        let e = entry("x", Some(7), 1);
        assert!(e.raw().contains(r#""id":"x""#));
        assert_eq!(e.event().unwrap().seq(), Some(7));
        assert_eq!(e.at(), UnixMs::parse_rfc3339("2026-07-03T10:00:00Z"));
        assert!(e.is_domain() && !e.is_command());
    }
}
