//! A map from a form's field ids, kept as a list sorted by id. A form has
//! a handful of fields; a `BTreeMap` for each value type the console keeps
//! per field would link the tree's code once per type (several KB of
//! WebAssembly each), where a sorted list needs a binary search and a few
//! `Vec` calls. Iterates in id order, like the map it replaces.

use std::ops::Index;

#[derive(Clone, Debug, PartialEq)]
pub struct ByField<V>(Vec<(String, V)>);

impl<V> Default for ByField<V> {
    fn default() -> Self {
        ByField(Vec::new())
    }
}

impl<V> ByField<V> {
    pub fn new() -> Self {
        ByField::default()
    }

    fn find(&self, id: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(id))
    }

    pub fn get(&self, id: &str) -> Option<&V> {
        self.find(id).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, id: &str) -> bool {
        self.find(id).is_ok()
    }

    /// Sets `id`'s value, returning the one it replaces.
    pub fn insert(&mut self, id: String, value: V) -> Option<V> {
        match self.find(&id) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (id, value));
                None
            }
        }
    }

    pub fn remove(&mut self, id: &str) -> Option<V> {
        self.find(id).ok().map(|i| self.0.remove(i).1)
    }

    /// `id`'s value, inserted as `V::default()` when it has none.
    pub fn or_default(&mut self, id: String) -> &mut V
    where
        V: Default,
    {
        let i = match self.find(&id) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (id, V::default()));
                i
            }
        };
        &mut self.0[i].1
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }
}

impl<V> Index<&str> for ByField<V> {
    type Output = V;

    fn index(&self, id: &str) -> &V {
        self.get(id).expect("no value for this field")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_ids_in_order_and_one_value_each() {
        let mut m = ByField::new();
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
        assert!(ByField::<u8>::new().is_empty());
    }
}
