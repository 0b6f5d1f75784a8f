//! Where the target's events get their place in the session order.
//!
//! Acks and outcomes are ordinary sequenced session events of the agent,
//! so their `seq` must come from the agent's own counter for that session.
//! The target asks a [`Sequencer`] only when it actually builds an event,
//! so a duplicate (answered with recorded bytes) never burns a number.

use std::collections::HashMap;

/// The agent's per-session sequence.
pub trait Sequencer {
    /// Takes the next `seq` in `session`.
    fn next_seq(&mut self, session: &str) -> u64;
    /// The session's `epoch` to stamp, if the agent declares one.
    fn epoch(&self, _session: &str) -> Option<u64> {
        None
    }
}

/// Any `FnMut(session) -> seq` is a sequencer (no epoch stamped).
impl<F: FnMut(&str) -> u64> Sequencer for F {
    fn next_seq(&mut self, session: &str) -> u64 {
        self(session)
    }
}

/// A plain counter per session, for agents that keep nothing else.
#[derive(Clone, Debug, Default)]
pub struct SeqCounter {
    next: HashMap<String, u64>,
    epoch: Option<u64>,
}

impl SeqCounter {
    pub fn new() -> SeqCounter {
        SeqCounter::default()
    }

    /// Stamps `epoch` on every event (after a restart, AEP-0001 §7).
    pub fn with_epoch(epoch: u64) -> SeqCounter {
        SeqCounter { next: HashMap::new(), epoch: Some(epoch) }
    }

    /// The seq the next event of `session` will take.
    pub fn peek(&self, session: &str) -> u64 {
        self.next.get(session).copied().unwrap_or(0)
    }

    /// Continues `session` from `seq` (e.g. after the agent emitted events
    /// itself).
    pub fn set_next(&mut self, session: &str, seq: u64) {
        self.next.insert(session.to_owned(), seq);
    }

    /// Takes `seq` when the caller names one (the counter then continues
    /// after it), else the session's next. Within an epoch a `seq` at or
    /// below one already assigned is refused (AEP-0001 §7 rule 2).
    pub fn take(&mut self, session: &str, seq: Option<u64>) -> Result<u64, SeqRegression> {
        let Some(seq) = seq else { return Ok(self.next_seq(session)) };
        let next = self.peek(session);
        if seq < next {
            return Err(SeqRegression { seq, next });
        }
        self.set_next(session, seq.saturating_add(1));
        Ok(seq)
    }
}

/// A `seq` that would repeat or go below one already assigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("seq {seq} is at or below one already assigned in this epoch (next free: {next})")]
pub struct SeqRegression {
    pub seq: u64,
    /// The lowest `seq` still free.
    pub next: u64,
}

impl Sequencer for SeqCounter {
    fn next_seq(&mut self, session: &str) -> u64 {
        let n = self.next.entry(session.to_owned()).or_insert(0);
        let seq = *n;
        *n += 1;
        seq
    }

    fn epoch(&self, _session: &str) -> Option<u64> {
        self.epoch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_seq_moves_the_counter_past_it_and_never_back() {
        let mut seqs = SeqCounter::with_epoch(7);
        assert_eq!(seqs.take("s", None), Ok(0));
        assert_eq!(seqs.take("s", Some(10)), Ok(10));
        assert_eq!(seqs.take("s", None), Ok(11), "continues after the named seq");
        assert_eq!(seqs.take("s", Some(11)), Err(SeqRegression { seq: 11, next: 12 }));
        assert_eq!(seqs.take("s", Some(3)), Err(SeqRegression { seq: 3, next: 12 }));
        assert_eq!(seqs.take("other", Some(0)), Ok(0), "per session");
        assert_eq!(seqs.epoch("s"), Some(7));
    }
}
