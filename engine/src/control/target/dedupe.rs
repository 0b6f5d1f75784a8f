//! Remembered commands: `(source, id)` → the recorded ack bytes, bounded.
//! A command forgotten by eviction is, per AEP-0004 §3, treated as new.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

type Key = (String, String);

#[derive(Debug)]
pub(super) struct Dedupe {
    capacity: usize,
    acks: HashMap<Key, Arc<str>>,
    order: VecDeque<Key>,
}

impl Dedupe {
    pub(super) fn new(capacity: usize) -> Dedupe {
        Dedupe { capacity: capacity.max(1), acks: HashMap::new(), order: VecDeque::new() }
    }

    pub(super) fn recorded(&self, source: &str, id: &str) -> Option<&Arc<str>> {
        self.acks.get(&(source.to_owned(), id.to_owned()))
    }

    /// Records the one decision for a command, forgetting the oldest
    /// command when full.
    pub(super) fn record(&mut self, source: &str, id: &str, ack: Arc<str>) {
        let key = (source.to_owned(), id.to_owned());
        if self.acks.insert(key.clone(), ack).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.acks.remove(&old);
            }
        }
    }

    pub(super) fn len(&self) -> usize {
        self.acks.len()
    }
}
