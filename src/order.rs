//! Stable sorting through one shared instantiation. Each `sort_by` on a
//! new element type or closure links its own copy of the standard sort
//! (2 to 5 KB of WebAssembly); here only indices are sorted, by a
//! type-erased comparison that keeps ties in their original order, so
//! every list the engine and the console sort shares one copy.

use std::cmp::Ordering;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_the_standard_stable_sort() {
        let words = ["pear", "fig", "apple", "kiwi", "plum", "date", "lime", "", "fig"];
        let mut ours: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        let mut std = ours.clone();
        sort_by(&mut ours, |a, b| a.len().cmp(&b.len()));
        std.sort_by(|a, b| a.len().cmp(&b.len()));
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
}
