//! Which session the session bounds drop: the least recently updated one
//! with no card waiting on a person, else the least recently updated.
//!
//! Sessions with a waiting card are indexed apart, so finding the victim
//! never walks past them (a full store may hold many). An update pushes
//! the session's new mark and leaves the old one behind: it is skipped
//! when found, and swept out once such marks outnumber the sessions, so
//! the update every event makes costs a push rather than a search.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub(crate) type SessionId = u64;

/// A session's place in the index: last update, and whether a card waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    pub touched: u64,
    pub waiting: bool,
}

/// Marks, oldest first.
type Queue = BinaryHeap<Reverse<(u64, SessionId)>>;

#[derive(Debug, Default)]
pub(crate) struct Recency {
    idle: Queue,
    waiting: Queue,
}

impl Recency {
    fn queue(&mut self, waiting: bool) -> &mut Queue {
        if waiting {
            &mut self.waiting
        } else {
            &mut self.idle
        }
    }

    pub(crate) fn insert(&mut self, id: SessionId, mark: Mark) {
        self.queue(mark.waiting).push(Reverse((mark.touched, id)));
    }

    pub(crate) fn moved(&mut self, id: SessionId, before: Mark, after: Mark) {
        if before != after {
            self.insert(id, after);
        }
    }

    /// Rebuilds the index from every session's current mark once the
    /// marks left behind outnumber them.
    pub(crate) fn sweep(&mut self, live: impl ExactSizeIterator<Item = (SessionId, Mark)>) {
        if self.idle.len() + self.waiting.len() <= 2 * live.len() + 64 {
            return;
        }
        self.idle.clear();
        self.waiting.clear();
        for (id, mark) in live {
            self.insert(id, mark);
        }
    }

    /// The session to drop, other than `keep` (the one being folded into),
    /// taken out of the index. `current` is a session's mark now, or
    /// `None` once it is gone.
    pub(crate) fn pop_victim(
        &mut self,
        keep: Option<SessionId>,
        current: impl Fn(SessionId) -> Option<Mark>,
    ) -> Option<SessionId> {
        for waiting in [false, true] {
            let queue = self.queue(waiting);
            let mut kept = None;
            let found = loop {
                let Some(Reverse((touched, id))) = queue.pop() else { break None };
                if current(id) != Some(Mark { touched, waiting }) {
                    continue; // left behind
                }
                if Some(id) == keep {
                    kept = Some((touched, id));
                    continue;
                }
                break Some(id);
            };
            if let Some(k) = kept {
                queue.push(Reverse(k));
            }
            if found.is_some() {
                return found;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The rule itself, by search: the oldest idle session, else the
    /// oldest waiting one, never `keep`.
    fn oldest(marks: &BTreeMap<SessionId, Mark>, keep: Option<SessionId>) -> Option<SessionId> {
        let pick = |waiting: bool| {
            marks
                .iter()
                .filter(|(id, m)| m.waiting == waiting && Some(**id) != keep)
                .min_by_key(|(id, m)| (m.touched, **id))
                .map(|(id, _)| *id)
        };
        pick(false).or_else(|| pick(true))
    }

    #[test]
    fn picks_the_session_a_search_would_pick() {
        // A deterministic walk of updates, evictions and sweeps.
        let mut rng = crate::rng::Seeded::new(0x9e37_79b9_7f4a_7c15);
        let mut next = move |n: u64| rng.next_u64() % n;
        let mut index = Recency::default();
        let mut marks: BTreeMap<SessionId, Mark> = BTreeMap::new();
        for (step, clock) in (0..20_000).zip(1..) {
            let id = next(40);
            match (next(10), marks.get(&id).copied()) {
                (0, _) => {
                    let keep = (next(2) == 0).then(|| next(40));
                    let want = oldest(&marks, keep);
                    let got = index.pop_victim(keep, |id| marks.get(&id).copied());
                    assert_eq!(got, want, "step {step}");
                    if let Some(gone) = got {
                        marks.remove(&gone);
                    }
                }
                (_, None) => {
                    let mark = Mark { touched: clock, waiting: next(3) == 0 };
                    marks.insert(id, mark);
                    index.insert(id, mark);
                }
                (k, Some(before)) => {
                    // Sometimes a late event: the waiting flag moves, the time does not.
                    let touched = if k == 1 { before.touched } else { clock };
                    let after = Mark { touched, waiting: next(3) == 0 };
                    marks.insert(id, after);
                    index.moved(id, before, after);
                }
            }
            index.sweep(marks.iter().map(|(id, m)| (*id, *m)));
        }
    }
}
