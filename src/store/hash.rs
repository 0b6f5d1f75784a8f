//! Hashing for the store's maps.
//!
//! Every map the store keeps is bounded (sessions, and per session runs,
//! cards and command chains), so a crafted run of colliding keys can slow
//! one lookup to at most a scan of its bounded map. That makes a fast
//! non-keyed hash safe here, and it is several times cheaper than SipHash
//! on the short ids these maps hold. Dedupe keys, which span the whole
//! stream, stay on SipHash digests (see `seen`).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by stream-supplied strings, within a bounded collection.
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Words>>;
/// A set of stream-supplied strings, within a bounded collection.
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<Words>>;

/// A word-at-a-time multiplicative hash (the FxHash construction).
#[derive(Default)]
pub(crate) struct Words(u64);

impl Words {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for Words {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.mix(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.mix(u64::from_le_bytes(tail) ^ ((rest.len() as u64) << 59));
    }
    fn write_u8(&mut self, n: u8) {
        self.mix(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }
}

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
