//! Reconnect delays: capped exponential backoff with jitter.
//!
//! The jitter source is a seeded generator, so the engine draws no entropy
//! of its own and tests can replay a schedule exactly.

/// Capped exponential backoff: the delay before attempt `n` doubles from
/// `initial_ms` until it reaches `max_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub initial_ms: u64,
    pub max_ms: u64,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff { initial_ms: 500, max_ms: 30_000 }
    }
}

impl Backoff {
    /// The delay ceiling for attempt `attempt` (1-based), before jitter:
    /// `initial_ms · 2^(attempt−1)`, capped at `max_ms`.
    pub fn ceiling(&self, attempt: u32) -> u64 {
        let doublings = attempt.saturating_sub(1).min(63);
        self.initial_ms.saturating_mul(1u64 << doublings).min(self.max_ms)
    }

    /// The jittered delay for `attempt`: uniform in `[ceiling/2, ceiling]`.
    /// Half is kept so that many clients dropped together spread out
    /// without any of them hammering the relay with a near-zero delay.
    pub fn delay(&self, attempt: u32, random: u64) -> u64 {
        let ceiling = self.ceiling(attempt);
        let floor = ceiling / 2;
        floor + random % (ceiling - floor + 1)
    }
}

/// A small deterministic generator (SplitMix64) for jitter only.
#[derive(Clone, Debug)]
pub struct Jitter(u64);

impl Jitter {
    pub fn new(seed: u64) -> Jitter {
        Jitter(seed)
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceiling_doubles_then_caps() {
        let b = Backoff { initial_ms: 100, max_ms: 1_000 };
        let ceilings: Vec<u64> = (1..=6).map(|n| b.ceiling(n)).collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1_000, 1_000]);
        assert_eq!(b.ceiling(u32::MAX), 1_000);
    }

    #[test]
    fn delay_stays_within_half_and_full_ceiling() {
        let b = Backoff::default();
        let mut j = Jitter::new(7);
        for attempt in 1..=12 {
            for _ in 0..200 {
                let d = b.delay(attempt, j.next_u64());
                let c = b.ceiling(attempt);
                assert!(c / 2 <= d && d <= c, "attempt {attempt}: {d} outside [{}, {c}]", c / 2);
            }
        }
    }

    #[test]
    fn jitter_is_seeded() {
        let (mut a, mut b, mut c) = (Jitter::new(1), Jitter::new(1), Jitter::new(2));
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }
}
