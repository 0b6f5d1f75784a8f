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
        SeqCounter {
            next: HashMap::new(),
            epoch: Some(epoch),
        }
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
