//! The demo's only source of randomness: one seeded generator per agent,
//! so `--demo-seed` replays the same ids (their random part), prompts and
//! delays.

use rand::rngs::StdRng;
use rand::{Rng as _, RngCore, SeedableRng};

#[derive(Clone, Debug)]
pub struct Rng(StdRng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(StdRng::seed_from_u64(seed))
    }

    /// A seed from the OS, for runs without `--demo-seed`.
    pub fn entropy() -> u64 {
        rand::random()
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `lo..=hi` (`lo` when the range is empty).
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        self.0.random_range(lo..=hi)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        self.0.random_range(0..n)
    }

    /// A short lowercase token, for session ids that differ between runs.
    pub fn token(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"0123456789abcdefghjkmnpqrstvwxyz";
        (0..len).map(|_| ALPHABET[self.below(ALPHABET.len())] as char).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_and_ranges_hold() {
        let (mut a, mut b) = (Rng::new(42), Rng::new(42));
        assert_eq!(a.token(6), b.token(6));
        for _ in 0..500 {
            let x = a.between(10, 20);
            assert!((10..=20).contains(&x));
            assert!(a.below(3) < 3);
        }
        assert_eq!(a.between(5, 5), 5);
        assert_eq!(a.below(0), 0);
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }
}
