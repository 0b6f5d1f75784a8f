//! Live fan-out: one event to every connection with a matching
//! subscription, forwarded as received (AEP-0003 §5: a byte-identical
//! redelivery must be able to traverse the relay).

use std::collections::HashMap;
use std::sync::Arc;

use aep_client::{Capture, Event};

use crate::held::Held;

use super::{ConnId, Listener};
use crate::outbox::{Delivery, Outgoing, Pushed};

/// What backpressure did during a fan-out.
#[derive(Default)]
pub(super) struct Tally {
    /// `debug`/`info` events dropped toward slow consumers.
    pub dropped: u64,
    /// Consumers whose queue overflowed: they are now closing.
    pub overflowed: Vec<ConnId>,
}

/// Queues `event` toward every matching connection except `skip`. A
/// connection whose subscriptions overlap gets the event once, at the
/// widest capture ceiling among the matching subscriptions.
/// `event` is matched; `held` (the same event, as kept) is what is queued.
pub(super) fn fan_out(
    listeners: &HashMap<ConnId, Listener>,
    event: &Event,
    held: &Arc<Held>,
    skip: Option<ConnId>,
    tally: &mut Tally,
) {
    for (id, conn) in listeners {
        if Some(*id) == skip {
            continue;
        }
        let mut matched = conn.subs.iter().filter(|sub| sub.filter.matches(event));
        let Some(first) = matched.next() else { continue };
        let mut ceiling = Ceiling::Unset.widen(first.ceiling);
        // One matching subscription (the usual case) shares its own list,
        // so a queued event costs no allocation per connection.
        let subs = match matched.next() {
            None => first.as_list.clone(),
            Some(second) => {
                let mut ids = vec![first.id.clone(), second.id.clone()];
                ceiling = ceiling.widen(second.ceiling);
                for sub in matched {
                    ids.push(sub.id.clone());
                    ceiling = ceiling.widen(sub.ceiling);
                }
                Arc::from(ids)
            }
        };
        let delivery = Delivery { event: held.clone(), ceiling: ceiling.get(), subs };
        match conn.outbox.push(Outgoing::Live(delivery)) {
            Pushed::Queued | Pushed::Closed => {}
            Pushed::Dropped => tally.dropped += 1,
            Pushed::Overflowed => tally.overflowed.push(*id),
        }
    }
}

/// The combined ceiling of several matching subscriptions.
#[derive(Clone, Copy)]
enum Ceiling {
    Unset,
    /// `None`: some subscription takes events as stored.
    Set(Option<Capture>),
}

impl Ceiling {
    fn widen(self, other: Option<Capture>) -> Ceiling {
        match (self, other) {
            (Ceiling::Unset, c) => Ceiling::Set(c),
            (Ceiling::Set(None), _) | (_, None) => Ceiling::Set(None),
            (Ceiling::Set(Some(a)), Some(b)) => Ceiling::Set(Some(a.max(b))),
        }
    }

    fn get(self) -> Option<Capture> {
        match self {
            Ceiling::Unset => None,
            Ceiling::Set(c) => c,
        }
    }
}
