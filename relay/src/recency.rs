//! Least-recently-touched ordering for bounded tables (sessions, claims,
//! tombstones): which key to evict when a table is full.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// Keys in the order they were last touched. `touch` and `remove` are
/// O(log n); `oldest` is O(log n).
#[derive(Debug)]
pub struct Recency<K> {
    ticks: HashMap<K, u64>,
    order: BTreeMap<u64, K>,
    clock: u64,
}

impl<K: Clone + Eq + Hash> Default for Recency<K> {
    fn default() -> Self {
        Recency { ticks: HashMap::new(), order: BTreeMap::new(), clock: 0 }
    }
}

impl<K: Clone + Eq + Hash> Recency<K> {
    /// Marks `key` as the most recent.
    pub fn touch(&mut self, key: &K) {
        self.clock += 1;
        if let Some(old) = self.ticks.insert(key.clone(), self.clock) {
            self.order.remove(&old);
        }
        self.order.insert(self.clock, key.clone());
    }

    pub fn remove(&mut self, key: &K) {
        if let Some(tick) = self.ticks.remove(key) {
            self.order.remove(&tick);
        }
    }

    /// The least recently touched key.
    pub fn oldest(&self) -> Option<&K> {
        self.order.values().next()
    }

    pub fn len(&self) -> usize {
        self.ticks.len()
    }

    /// Keys from least to most recently touched.
    pub fn iter_oldest_first(&self) -> impl Iterator<Item = &K> {
        self.order.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_follows_touches() {
        let mut r = Recency::default();
        for k in ["a", "b", "c"] {
            r.touch(&k);
        }
        assert_eq!(r.oldest(), Some(&"a"));
        r.touch(&"a");
        assert_eq!(r.oldest(), Some(&"b"));
        r.remove(&"b");
        assert_eq!(r.oldest(), Some(&"c"));
        assert_eq!(r.len(), 2);
        assert_eq!(r.iter_oldest_first().copied().collect::<Vec<_>>(), vec!["c", "a"]);
    }
}
