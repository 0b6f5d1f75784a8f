//! Cross-event (stream) rules: id uniqueness, position uniqueness and
//! monotonicity, terminal exclusivity, closing attention before the
//! session ends, one ack per command, the AEP-0006 `values` rule.
//!
//! The rules live in one place, the store's fold; this validator folds
//! the events through a [`Store`] configured for an emitter's log
//! ([`StoreConfig::validator`]: events are taken in emission order) and
//! reports what it flags. Rule ids are [`Rule::id`].
//!
//! [`Rule::id`]: super::Rule::id

use super::{Change, Store, StoreConfig};
use crate::protocol::event::Event;
use crate::protocol::violation::Violation;
use crate::time::UnixMs;

/// Checks `events`, in emission order, against the stream rules.
pub fn stream(events: &[Event]) -> Vec<Violation> {
    let mut store = Store::new(StoreConfig::validator());
    let mut found = Vec::new();
    for event in events {
        // The rules never read the clock; receipt time is irrelevant here.
        store.apply(event.clone(), None, UnixMs(0));
        while let Some(change) = store.poll_change() {
            if let Change::Violation(v) = change {
                found.push(v.to_violation());
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: &str, ty: &str, seq: u64) -> Event {
        Event::parse(&format!(
            r#"{{"aep":"0.1","id":"{id}","type":"{ty}","time":"2026-07-03T10:00:00Z","source":"aep://h/agent/a","agent":"a","session":"s","run":"r","seq":{seq}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn clean_stream_has_no_violations() {
        assert!(stream(&[ev("1", "run.started", 0), ev("2", "run.finished", 1)]).is_empty());
    }

    #[test]
    fn reports_rule_ids() {
        let v = stream(&[
            ev("1", "run.finished", 0),
            ev("2", "run.failed", 2),
            ev("3", "progress.status", 1),
            ev("4", "progress.status", 2),
        ]);
        let rules: Vec<&str> = v.iter().map(|v| v.rule).collect();
        assert_eq!(rules, ["stream.run.second-terminal", "stream.position.regression", "stream.position.reused"]);
        assert!(v[0].detail.contains("(event 2)"), "{}", v[0].detail);
    }
}
