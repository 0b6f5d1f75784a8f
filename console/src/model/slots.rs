//! The inbox list as drawn: waiting cards in the inbox order, and, where a
//! card was when it settled, a one-line row saying what happened to it.
//! The confirmation stays where the person acted instead of appearing in
//! a list at the top, out of view; rows leave after a while.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// One line of the inbox list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot<K> {
    Waiting(K),
    /// Settled at the given time (milliseconds); shown until it is old.
    Settled(K, u64),
}

/// How long a settled row stays in the list.
pub const ROW_MS: u64 = 30_000;

/// The next list: `before` as drawn, `waiting` the inbox order now, `now`
/// the clock. A card that stopped waiting becomes a row in its place when
/// `keep(card)` says it is worth confirming (answered here, or seen); rows
/// stay just above the waiting card that followed them; old rows go.
pub fn arrange<K: Clone + Eq + Hash>(
    before: &[Slot<K>],
    waiting: &[K],
    now: u64,
    mut keep: impl FnMut(&K) -> bool,
) -> Vec<Slot<K>> {
    let still: HashSet<&K> = waiting.iter().collect();
    // Rows by the waiting card they sit above; those above none go last.
    let mut above: HashMap<&K, Vec<(K, u64)>> = HashMap::new();
    let mut unplaced: Vec<(K, u64)> = Vec::new();
    for slot in before {
        match slot {
            Slot::Waiting(k) if still.contains(k) => {
                if !unplaced.is_empty() {
                    above.entry(k).or_default().append(&mut unplaced);
                }
            }
            Slot::Waiting(k) => {
                if keep(k) {
                    unplaced.push((k.clone(), now));
                }
            }
            Slot::Settled(k, at) => {
                if now.saturating_sub(*at) < ROW_MS && !still.contains(k) {
                    unplaced.push((k.clone(), *at));
                }
            }
        }
    }
    let mut out = Vec::with_capacity(waiting.len() + unplaced.len());
    for w in waiting {
        if let Some(rows) = above.remove(w) {
            out.extend(rows.into_iter().map(|(k, at)| Slot::Settled(k, at)));
        }
        out.push(Slot::Waiting(w.clone()));
    }
    out.extend(unplaced.into_iter().map(|(k, at)| Slot::Settled(k, at)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(k: &'static str) -> Slot<&'static str> {
        Slot::Waiting(k)
    }

    #[test]
    fn an_answered_card_becomes_a_row_in_its_own_place() {
        let before = [w("a"), w("b"), w("c")];
        let after = arrange(&before, &["a", "c"], 1_000, |_| true);
        assert_eq!(after, [w("a"), Slot::Settled("b", 1_000), w("c")]);
    }

    #[test]
    fn rows_stay_above_their_successor_while_others_arrive_and_leave() {
        let before = [w("a"), Slot::Settled("b", 1_000), w("c")];
        // A more severe request arrives on top; "a" is settled elsewhere
        // and not worth a row.
        let after = arrange(&before, &["z", "c"], 2_000, |k| *k != "a");
        assert_eq!(after, [w("z"), Slot::Settled("b", 1_000), w("c")]);
        // The last card settles too: its row goes to the end, after b's.
        let after = arrange(&after, &["z"], 3_000, |_| true);
        assert_eq!(after, [w("z"), Slot::Settled("b", 1_000), Slot::Settled("c", 3_000)]);
    }

    #[test]
    fn rows_leave_after_a_while_and_a_card_seen_only_briefly_leaves_no_row() {
        let before = [Slot::Settled("b", 1_000), w("c"), w("d")];
        let after = arrange(&before, &["d"], 1_000 + ROW_MS, |k| *k != "c");
        assert_eq!(after, [w("d")]);
    }
}
