//! History read back at start: state that features derive from what
//! agents said (the requests still open for push, the requests the audit
//! ties answers to) is rebuilt from the replay buffers a data directory
//! restored, the one record of it, instead of being kept a second time.

use aep_engine::protocol::kind::EventKind;
use aep_engine::Event;

use super::Switchboard;
use crate::sync::lock;

impl Switchboard {
    /// The held events of the kinds `wanted` selects, parsed again: each
    /// session's in replay order, least recently written session first.
    /// Empty for a relay that keeps its history in memory only.
    pub fn recall(&self, wanted: impl Fn(EventKind<'_>) -> bool) -> Vec<Event> {
        let held: Vec<_> = lock(&self.state).store.held().filter(|e| wanted(EventKind::of(e.ty()))).cloned().collect();
        held.iter().filter_map(|e| e.parse()).collect()
    }
}
