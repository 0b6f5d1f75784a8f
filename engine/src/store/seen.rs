//! Dedupe on `(source, id)` (AEP-0001 §7.4) with a bounded memory.
//!
//! Each remembered key keeps a fingerprint of the event's core context
//! attributes, so a redelivery is told apart from a different event that
//! reuses the id. `data`, `capture` and extension attributes are left out
//! on purpose: a hop may down-level content (AEP-0001 §8.2(b)) and a relay
//! may add extension attributes (§4.2), so two relays can legally deliver
//! the same event with different bytes. Core attributes no hop may alter.
//!
//! A key is remembered as a 128-bit digest of `(source, id)` rather than
//! the strings: a tenth of the memory per id, and two distinct keys
//! sharing a digest (odds around 2^-128 per pair) is far below any other
//! failure rate of the console. The digest is two foldhash hashes under
//! independent seeds drawn for each store: a stream cannot aim at seeds
//! it never sees, and foldhash costs a fraction of SipHash per event.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};

use super::hash::Prehashed;

use crate::protocol::event::Event;

/// What the dedupe memory says about an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sighting {
    First,
    /// The same event again (at-least-once redelivery).
    Again,
    /// The same `(source, id)` naming a different event.
    Collision,
}

/// The last `capacity` keys seen, oldest forgotten first.
pub(crate) struct SeenIds {
    capacity: usize,
    /// Keys forgotten (or never remembered) to stay within the capacity.
    pub(crate) forgotten: u64,
    /// Keys in the order they were seen, for forgetting the oldest; an
    /// unbounded memory never forgets, and keeps no order.
    order: VecDeque<u128>,
    prints: HashMap<u128, u64, BuildHasherDefault<Prehashed>>,
    /// The two halves' seeds.
    seeds: [foldhash::quality::RandomState; 2],
}

impl SeenIds {
    pub(crate) fn new(capacity: usize) -> SeenIds {
        SeenIds {
            capacity,
            forgotten: 0,
            order: VecDeque::new(),
            prints: HashMap::default(),
            seeds: [foldhash::quality::RandomState::default(), foldhash::quality::RandomState::default()],
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.prints.len()
    }

    /// Looks `event` up and remembers it when it is new.
    pub(crate) fn sight(&mut self, event: &Event) -> Sighting {
        let print = fingerprint(event);
        let key = self.digest(event.source(), event.id());
        if let Some(&seen) = self.prints.get(&key) {
            return if seen == print { Sighting::Again } else { Sighting::Collision };
        }
        if self.capacity == 0 {
            self.forgotten += 1;
            return Sighting::First;
        }
        if self.capacity != usize::MAX {
            if self.order.len() >= self.capacity {
                if let Some(oldest) = self.order.pop_front() {
                    self.prints.remove(&oldest);
                    self.forgotten += 1;
                }
            }
            self.order.push_back(key);
        }
        self.prints.insert(key, print);
        Sighting::First
    }
}

impl SeenIds {
    /// Two 64-bit digests of `(source, id)` under independent seeds.
    fn digest(&self, source: &str, id: &str) -> u128 {
        let half = |seed: &foldhash::quality::RandomState| {
            let mut h = seed.build_hasher();
            source.hash(&mut h);
            id.hash(&mut h);
            h.finish()
        };
        (u128::from(half(&self.seeds[0])) << 64) | u128::from(half(&self.seeds[1]))
    }
}

/// Hash of the attributes no hop may change. Only ever compared with the
/// fingerprint of an event already sharing its `(source, id)`, so a fast
/// non-keyed hash is enough.
fn fingerprint(e: &Event) -> u64 {
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    e.aep().hash(&mut h);
    e.ty().hash(&mut h);
    e.subject().hash(&mut h);
    e.time().hash(&mut h);
    e.agent().hash(&mut h);
    e.session().hash(&mut h);
    e.run().hash(&mut h);
    e.step().hash(&mut h);
    e.seq().hash(&mut h);
    e.epoch_declared().hash(&mut h);
    e.cause().hash(&mut h);
    e.traceparent().hash(&mut h);
    e.severity_declared().hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: &str, seq: u64, extra: &str) -> Event {
        Event::parse(&format!(
            r#"{{"aep":"0.1","id":"{id}","type":"progress.status","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","seq":{seq}{extra}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn redelivery_collision_and_hop_changes() {
        let mut seen = SeenIds::new(8);
        assert_eq!(seen.sight(&ev("A", 1, "")), Sighting::First);
        assert_eq!(seen.sight(&ev("A", 1, "")), Sighting::Again);
        assert_eq!(seen.sight(&ev("A", 2, "")), Sighting::Collision);
        // A relay-added extension or a down-levelled payload is the same event.
        assert_eq!(seen.sight(&ev("A", 1, r#","relayhop":"r1""#)), Sighting::Again);
        assert_eq!(seen.sight(&ev("A", 1, r#","capture":"none""#)), Sighting::Again);
        assert_eq!(seen.sight(&ev("A", 1, r#","severity":"error""#)), Sighting::Collision);
    }

    #[test]
    fn forgets_oldest_beyond_capacity() {
        let mut seen = SeenIds::new(3);
        for id in ["A", "B", "C", "D"] {
            assert_eq!(seen.sight(&ev(id, 1, "")), Sighting::First);
        }
        assert_eq!(seen.len(), 3);
        assert_eq!(seen.sight(&ev("D", 1, "")), Sighting::Again);
        assert_eq!(seen.sight(&ev("A", 1, "")), Sighting::First, "A was forgotten");
    }
}
