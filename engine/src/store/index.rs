//! Sessions by key `(source, session)`, found in one probe.
//!
//! Every owner event looks its session up by two strings it carries. A
//! map of maps (by source, then by name) hashed the long source text and
//! probed twice per event, each probe reading a key from another place in
//! memory; this table hashes the pair once and compares it at one slot.

use std::hash::{BuildHasher, Hash, Hasher};

use hashbrown::hash_table::{Entry, HashTable};

use super::key::SessionKey;
use super::recency::SessionId;
use crate::text::same;

#[derive(Default)]
pub(crate) struct SessionIndex {
    table: HashTable<(SessionKey, SessionId)>,
    /// Seeded per store, as the store's other maps are (see `hash`).
    seed: foldhash::fast::RandomState,
}

impl SessionIndex {
    /// The same hash as `SessionKey`'s own, from borrowed parts.
    fn hash(&self, source: &str, name: &str) -> u64 {
        let mut h = self.seed.build_hasher();
        source.hash(&mut h);
        name.hash(&mut h);
        h.finish()
    }

    pub(crate) fn get(&self, source: &str, name: &str) -> Option<SessionId> {
        let hash = self.hash(source, name);
        self.table.find(hash, |(k, _)| same(&k.name, name) && same(&k.source, source)).map(|(_, id)| *id)
    }

    pub(crate) fn insert(&mut self, key: SessionKey, id: SessionId) {
        let hash = self.hash(&key.source, &key.name);
        let seed = &self.seed;
        let rehash = |(k, _): &(SessionKey, SessionId)| seed.hash_one(k);
        match self.table.entry(hash, |(k, _)| *k == key, rehash) {
            Entry::Occupied(mut held) => held.get_mut().1 = id,
            Entry::Vacant(slot) => {
                slot.insert((key, id));
            }
        }
    }

    pub(crate) fn remove(&mut self, key: &SessionKey) {
        let hash = self.hash(&key.source, &key.name);
        if let Ok(held) = self.table.find_entry(hash, |(k, _)| k == key) {
            held.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_both_parts_only() {
        let mut index = SessionIndex::default();
        index.insert(SessionKey::new("aep://a", "s"), 1);
        index.insert(SessionKey::new("aep://b", "s"), 2);
        index.insert(SessionKey::new("aep://a", "t"), 3);
        assert_eq!(index.get("aep://a", "s"), Some(1));
        assert_eq!(index.get("aep://b", "s"), Some(2));
        assert_eq!(index.get("aep://a", "t"), Some(3));
        assert_eq!(index.get("aep://b", "t"), None);
        // A key split differently is another key.
        assert_eq!(index.get("aep://as", ""), None);
        index.remove(&SessionKey::new("aep://a", "s"));
        assert_eq!(index.get("aep://a", "s"), None);
        assert_eq!(index.get("aep://a", "t"), Some(3));
        index.insert(SessionKey::new("aep://a", "t"), 4);
        assert_eq!(index.get("aep://a", "t"), Some(4));
    }
}
