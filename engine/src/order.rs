//! Ordering that the WebAssembly builds link once.
//!
//! * [`sort_by`]: stable sorting through one shared instantiation. Each
//!   `sort_by` on a new element type or closure links its own copy of the
//!   standard sort (2 to 5 KB of WebAssembly); here only indices are
//!   sorted, by a type-erased comparison that keeps ties in their original
//!   order, so every list the engine and the console sort shares one copy.
//! * [`SortedMap`]: small maps from text keys as sorted lists.

use std::cmp::Ordering;
use std::ops::Index;

/// Sorts `v` by `cmp`, keeping equal elements in their order: the same
/// result as `slice::sort_by`.
pub fn sort_by<T>(v: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    let order = sorted_indices(v.len(), &|a, b| cmp(&v[a], &v[b]));
    let mut slots: Vec<Option<T>> = v.drain(..).map(Some).collect();
    v.extend(order.into_iter().map(|i| slots[i].take().expect("a permutation names each index once")));
}

/// `0..n` ordered by `cmp`, ties by index.
fn sorted_indices(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| cmp(a, b).then(a.cmp(&b)));
    order
}

/// A map from text keys, kept as a list sorted by key. For the small maps
/// of the console and the client (a form's fields, resume positions): a
/// binary search finds a key as fast as a tree at these sizes, and the
/// WebAssembly builds link a few `Vec` calls instead of a `BTreeMap`'s
/// code for each value type. Iterates in key order, like that map.
#[derive(Clone, Debug, PartialEq)]
pub struct SortedMap<V>(Vec<(String, V)>);

impl<V> Default for SortedMap<V> {
    fn default() -> Self {
        SortedMap(Vec::new())
    }
}

impl<V> SortedMap<V> {
    pub fn new() -> Self {
        SortedMap::default()
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&V> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.find(key).ok().map(|i| &mut self.0[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key`'s value, returning the one it replaces.
    pub fn insert(&mut self, key: String, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<V> {
        self.find(key).ok().map(|i| self.0.remove(i).1)
    }

    /// `key`'s value, inserted as `V::default()` when it has none.
    pub fn or_default(&mut self, key: String) -> &mut V
    where
        V: Default,
    {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (key, V::default()));
                i
            }
        };
        &mut self.0[i].1
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Keys and values, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }
}

impl<V> Index<&str> for SortedMap<V> {
    type Output = V;

    fn index(&self, key: &str) -> &V {
        self.get(key).expect("no value for this key")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_the_standard_stable_sort() {
        let words = ["pear", "fig", "apple", "kiwi", "plum", "date", "lime", "", "fig"];
        let mut ours: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        let mut std = ours.clone();
        sort_by(&mut ours, |a, b| a.len().cmp(&b.len()));
        std.sort_by_key(String::len);
        assert_eq!(ours, std);
        assert_eq!(ours, ["", "fig", "fig", "pear", "kiwi", "plum", "date", "lime", "apple"]);
    }

    #[test]
    fn sorts_empty_and_single_lists() {
        let mut none: Vec<u8> = Vec::new();
        sort_by(&mut none, Ord::cmp);
        assert!(none.is_empty());
        let mut one = vec![7];
        sort_by(&mut one, Ord::cmp);
        assert_eq!(one, [7]);
    }

    #[test]
    fn a_sorted_map_keeps_keys_in_order_and_one_value_each() {
        let mut m = SortedMap::new();
        assert_eq!(m.insert("b".to_owned(), 1), None);
        assert_eq!(m.insert("c".to_owned(), 2), None);
        assert_eq!(m.insert("a".to_owned(), 3), None);
        assert_eq!(m.insert("b".to_owned(), 4), Some(1));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(m.values().copied().collect::<Vec<_>>(), [3, 4, 2]);
        assert_eq!(m["b"], 4);
        assert!(m.contains_key("c") && !m.contains_key("d"));
        assert_eq!(m.remove("a"), Some(3));
        assert_eq!(m.remove("a"), None);
        assert_eq!(m.get("a"), None);
        *m.or_default("d".to_owned()) += 5;
        *m.or_default("b".to_owned()) += 5;
        assert_eq!(m.keys().collect::<Vec<_>>(), ["b", "c", "d"]);
        assert_eq!(m.values().copied().collect::<Vec<_>>(), [9, 2, 5]);
        assert!(!m.is_empty());
        assert!(SortedMap::<u8>::new().is_empty());
    }
}
