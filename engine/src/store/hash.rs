//! Hashing for the store's maps.
//!
//! The store's maps are keyed by stream-supplied strings and, in an
//! unbounded store (`StoreConfig::unbounded`), may grow with the stream,
//! so they use foldhash: fast on the short ids these maps hold, well mixed
//! in every bit (hashbrown picks buckets from the low bits, where a plain
//! multiplicative hash of strings sharing a layout collides), and seeded
//! per process. Dedupe keys stay on SipHash digests (see `seen`).

use std::collections::{HashMap, HashSet};
use std::hash::Hasher;

/// A map keyed by stream-supplied strings.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
/// A set of stream-supplied strings.
pub(crate) type FastSet<K> = HashSet<K, foldhash::fast::RandomState>;

/// The keys are digests already: hashing them again would be wasted work.
#[derive(Default)]
pub(crate) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u128(&mut self, n: u128) {
        self.0 ^= n as u64;
    }
}
