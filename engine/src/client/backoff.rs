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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Seeded;

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
        let mut j = Seeded::new(7);
        for attempt in 1..=12 {
            for _ in 0..200 {
                let d = b.delay(attempt, j.next_u64());
                let c = b.ceiling(attempt);
                assert!(c / 2 <= d && d <= c, "attempt {attempt}: {d} outside [{}, {c}]", c / 2);
            }
        }
    }
}
