//! The engine's one random generator: seeded by the driver (the engine
//! is sans-IO and draws no entropy of its own), and used for everything
//! the engine randomises: the random part of event ids, reconnect jitter,
//! and the shuffles of its own tests and benchmarks.

use crate::protocol::ids::ulid;
use crate::time::UnixMs;

/// A small deterministic generator (SplitMix64): the same seed gives the
/// same draws, so a test or a replayed run is reproducible. Not for
/// secrets.
#[derive(Clone, Debug)]
pub struct Seeded(u64);

impl Seeded {
    pub fn new(seed: u64) -> Seeded {
        Seeded(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// 128 bits, e.g. the random part of an event id.
    pub fn next_u128(&mut self) -> u128 {
        (u128::from(self.next_u64()) << 64) | u128::from(self.next_u64())
    }

    /// A fresh event id made at `now`: every id the engine makes comes
    /// from here, so nothing asks its caller for entropy per event.
    pub fn event_id(&mut self, now: UnixMs) -> String {
        ulid(now, self.next_u128())
    }

    /// An independent generator seeded from this one, for a part that
    /// makes ids of its own.
    pub fn split(&mut self) -> Seeded {
        Seeded::new(self.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_seeded() {
        let (mut a, mut b, mut c) = (Seeded::new(1), Seeded::new(1), Seeded::new(2));
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn splitmix64_reference_values() {
        // The first outputs of SplitMix64 seeded with 0 (Vigna's reference).
        let mut r = Seeded::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }
}
