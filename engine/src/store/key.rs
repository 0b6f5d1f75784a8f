//! A session's identity, which everything else in the store is keyed by.

use std::sync::Arc;

/// A session's identity: the owning emitter's `source` and the `session`
/// name, unique only within that emitter (AEP-0001 §5.2).
#[derive(Clone, Debug, Eq, PartialOrd, Ord)]
pub struct SessionKey {
    pub source: Arc<str>,
    pub name: Arc<str>,
}

/// Keys are compared on every change queued; most compare a key with a
/// clone of itself, which the pointers settle without reading the text.
impl PartialEq for SessionKey {
    fn eq(&self, other: &SessionKey) -> bool {
        let same = |a: &Arc<str>, b: &Arc<str>| Arc::ptr_eq(a, b) || a == b;
        same(&self.source, &other.source) && same(&self.name, &other.name)
    }
}

impl std::hash::Hash for SessionKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.source.hash(state);
        self.name.hash(state);
    }
}

impl SessionKey {
    pub fn new(source: &str, name: &str) -> SessionKey {
        SessionKey { source: Arc::from(source), name: Arc::from(name) }
    }
}
