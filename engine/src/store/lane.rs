//! A deque kept sorted by the caller, stored in chunks.
//!
//! A long session's lane grows to hundreds of thousands of entries. In one
//! contiguous buffer every doubling copies all of them to fresh memory, so
//! each event cost more the longer its session ran. Chunks of at most
//! [`CHUNK`] entries (once the lane outgrows its first) are allocated once
//! and never move; a lane that stays under a chunk is one buffer, as before.

use std::collections::VecDeque;

/// Entries per chunk. A backfill shifts at most a chunk's entries.
pub(crate) const CHUNK: usize = 1_024;

#[derive(Debug)]
pub(crate) struct Lane<T> {
    chunks: VecDeque<VecDeque<T>>,
    len: usize,
    chunk: usize,
}

impl<T> Lane<T> {
    pub(crate) fn new() -> Lane<T> {
        Lane::with_chunk(CHUNK)
    }

    /// A lane with chunks of `chunk` entries (small ones for tests).
    pub(crate) fn with_chunk(chunk: usize) -> Lane<T> {
        Lane { chunks: VecDeque::new(), len: 0, chunk: chunk.max(1) }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Empties the lane, keeping its first chunk's memory.
    pub(crate) fn clear(&mut self) {
        self.chunks.truncate(1);
        if let Some(first) = self.chunks.front_mut() {
            first.clear();
        }
        self.len = 0;
    }

    pub(crate) fn back(&self) -> Option<&T> {
        self.chunks.back()?.back()
    }

    pub(crate) fn get(&self, mut index: usize) -> Option<&T> {
        for chunk in &self.chunks {
            match chunk.get(index) {
                Some(item) => return Some(item),
                None => index -= chunk.len(),
            }
        }
        None
    }

    pub(crate) fn push_back(&mut self, item: T) {
        let full = self.chunks.back().is_none_or(|c| c.len() >= self.chunk);
        if full {
            // The first chunk grows as a small lane needs; later ones are
            // allocated whole, once.
            let capacity = if self.chunks.is_empty() { 0 } else { self.chunk };
            self.chunks.push_back(VecDeque::with_capacity(capacity));
        }
        if let Some(last) = self.chunks.back_mut() {
            last.push_back(item);
            self.len += 1;
        }
    }

    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let first = self.chunks.front_mut()?;
        let item = first.pop_front()?;
        if first.is_empty() && self.chunks.len() > 1 {
            self.chunks.pop_front();
        }
        self.len -= 1;
        Some(item)
    }

    /// The index of the first entry for which `before` is false, the lane
    /// being partitioned by it (all `true` first).
    pub(crate) fn partition_point(&self, before: impl Fn(&T) -> bool) -> usize {
        let whole = self.chunks.partition_point(|c| c.back().is_some_and(&before));
        let skipped: usize = self.chunks.iter().take(whole).map(VecDeque::len).sum();
        skipped + self.chunks.get(whole).map_or(0, |c| c.partition_point(&before))
    }

    /// Inserts `item` at `index` (at most `len`). A chunk grown to twice
    /// the chunk size by inserts is split in two.
    pub(crate) fn insert(&mut self, mut index: usize, item: T) {
        if index >= self.len {
            return self.push_back(item);
        }
        let mut at = 0;
        while index >= self.chunks[at].len() {
            index -= self.chunks[at].len();
            at += 1;
        }
        let chunk = &mut self.chunks[at];
        chunk.insert(index, item);
        self.len += 1;
        if chunk.len() >= 2 * self.chunk {
            let tail = chunk.split_off(self.chunk);
            self.chunks.insert(at + 1, tail);
        }
    }

    /// Entries in order.
    pub(crate) fn iter(&self) -> Iter<'_, T> {
        Iter { inner: self.chunks.iter().flatten(), left: self.len }
    }
}

/// Entries in order, from either end.
pub(crate) struct Iter<'a, T> {
    inner: std::iter::Flatten<std::collections::vec_deque::Iter<'a, VecDeque<T>>>,
    left: usize,
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;
    fn next(&mut self) -> Option<&'a T> {
        let item = self.inner.next()?;
        self.left -= 1;
        Some(item)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T> DoubleEndedIterator for Iter<'_, T> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let item = self.inner.next_back()?;
        self.left -= 1;
        Some(item)
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lane and a plain sorted vector take the same inserts, pushes and
    /// pops, with chunks small enough to split and drop often.
    #[test]
    fn behaves_as_one_sorted_deque() {
        let mut rng = crate::rng::Seeded::new(0x2545_f491_4f6c_dd1d);
        let mut next = move |n: u64| rng.next_u64() % n;
        for chunk in [1, 2, 3, 8] {
            let mut lane = Lane::with_chunk(chunk);
            let mut model: Vec<u64> = Vec::new();
            for step in 0..4_000 {
                match next(10) {
                    0..=4 => {
                        let v = model.last().copied().unwrap_or(0) + next(3);
                        lane.push_back(v);
                        model.push(v);
                    }
                    5..=7 => {
                        let v = next(model.last().copied().unwrap_or(0) + 1);
                        let at = lane.partition_point(|x| *x < v);
                        assert_eq!(at, model.partition_point(|x| *x < v), "step {step}");
                        lane.insert(at, v);
                        model.insert(at, v);
                    }
                    8 => assert_eq!(lane.pop_front(), (!model.is_empty()).then(|| model.remove(0))),
                    _ if next(50) == 0 => {
                        lane.clear();
                        model.clear();
                    }
                    _ => {}
                }
                assert_eq!(lane.len(), model.len());
                assert_eq!(lane.back(), model.last());
                let i = next(model.len() as u64 + 1) as usize;
                assert_eq!(lane.get(i), model.get(i));
            }
            assert!(lane.iter().eq(model.iter()));
            assert!(lane.iter().rev().eq(model.iter().rev()));
            assert_eq!(lane.iter().len(), model.len());
        }
    }
}
