//! Live fan-out: one event to every connection with a matching
//! subscription, forwarded as received (AEP-0003 §5: a byte-identical
//! redelivery must be able to traverse the relay).

use std::collections::HashMap;
use std::sync::Arc;

use aep_engine::protocol::capture::landing_level;
use aep_engine::{Capture, Event};

use crate::held::HeldEvent;

use super::{ConnId, Listener};
use crate::outbox::{Delivery, Outgoing, Pushed};
use crate::socket::Shared;

/// What backpressure did during a fan-out.
#[derive(Default)]
pub(super) struct Tally {
    /// `debug`/`info` events dropped toward slow consumers.
    pub dropped: u64,
    /// Consumers whose queue overflowed: they are now closing.
    pub overflowed: Vec<ConnId>,
}

/// Queues `event` toward every matching connection except `skip`.
///
/// Every subscription's capture ceiling holds for what it receives
/// (AEP-0003 §6.4: down-level, never up-level), and a connection gets each
/// *form* of the event once: subscriptions whose ceilings yield the same
/// bytes (ceilings landing on the same level, or any ceiling at or above
/// the event's own capture) share one delivery; a subscription with a
/// lower ceiling gets its own, down-levelled one. Forms go out widest
/// first, so a consumer that keeps the first copy of an `(source, id)`
/// keeps the most it may see. Delivering only the lowest form would starve
/// the wider subscriptions; only the widest would breach the lower
/// ceilings.
/// `event` is matched; `held` (the same event, as kept) is what is queued.
pub(super) fn fan_out(
    listeners: &HashMap<ConnId, Listener>,
    event: &Event,
    held: &Arc<HeldEvent>,
    skip: Option<ConnId>,
    tally: &mut Tally,
) {
    let stored = held.capture();
    let shared = Shared::new();
    for (id, conn) in listeners {
        if Some(*id) == skip {
            continue;
        }
        let mut matched = conn.subs.iter().filter(|sub| sub.filter.matches(event));
        let Some(first) = matched.next() else { continue };
        let Some(second) = matched.next() else {
            // One matching subscription (the usual case) shares its own
            // list, so a queued event costs no allocation per connection.
            let delivery = Delivery {
                event: held.clone(),
                shared: shared.clone(),
                ceiling: first.ceiling,
                subs: first.as_list.clone(),
            };
            push(conn, *id, delivery, tally);
            continue;
        };
        // The form each subscription receives: `None` as stored, or the
        // lower level it lands on (a `redacted` ceiling cuts a `full`
        // event to `metadata`).
        let form = |ceiling: Option<Capture>| ceiling.filter(|c| *c < stored).map(|c| landing_level(stored, c));
        let mut forms: Vec<(Option<Capture>, Vec<Arc<str>>)> = Vec::new();
        for sub in [first, second].into_iter().chain(matched) {
            let level = form(sub.ceiling);
            match forms.iter_mut().find(|(l, _)| *l == level) {
                Some((_, ids)) => ids.push(sub.id.clone()),
                None => forms.push((level, vec![sub.id.clone()])),
            }
        }
        // Widest first: `None` (as stored), then descending levels.
        forms.sort_by(|(a, _), (b, _)| match (a, b) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(a), Some(b)) => b.cmp(a),
        });
        for (level, ids) in forms {
            let delivery =
                Delivery { event: held.clone(), shared: shared.clone(), ceiling: level, subs: Arc::from(ids) };
            if !push(conn, *id, delivery, tally) {
                break;
            }
        }
    }
}

/// Queues one delivery; `false` once the connection is closing.
fn push(conn: &Listener, id: ConnId, delivery: Delivery, tally: &mut Tally) -> bool {
    match conn.outbox.push(Outgoing::Live(delivery)) {
        Pushed::Queued => true,
        Pushed::Closed => false,
        Pushed::Dropped => {
            tally.dropped += 1;
            true
        }
        Pushed::Overflowed => {
            tally.overflowed.push(id);
            false
        }
    }
}
