//! Sorting in turns: a sort of millions of elements takes tens of milliseconds, so these call
//! the standard library's sorts with a comparison that counts and checks every
//! [`crate::ELEMENTS_PER_CHECK`] comparisons. Every step of those sorts compares (partitions,
//! merges, insertions), so the work between two comparisons is a few moves at most.
//!
//! Invariant: the result is exactly the standard library's (the comparison answers what
//! `compare` answers; giving the CPU back changes nothing it reads).

use std::cmp::Ordering;

use crate::checkpoint_at;

/// Sorts `items` in ascending order, unstably, in turns.
pub fn sort_unstable<T: Ord>(items: &mut [T]) {
    sort_unstable_by(items, T::cmp);
}

/// Sorts `items` by `compare`, unstably, in turns.
pub fn sort_unstable_by<T>(items: &mut [T], compare: impl FnMut(&T, &T) -> Ordering) {
    items.sort_unstable_by(checking(compare));
}

/// Sorts `items` by `compare`, stably, in turns.
pub fn sort_by<T>(items: &mut [T], compare: impl FnMut(&T, &T) -> Ordering) {
    items.sort_by(checking(compare));
}

/// `compare`, counting its calls and checking every [`crate::ELEMENTS_PER_CHECK`]th.
fn checking<T>(mut compare: impl FnMut(&T, &T) -> Ordering) -> impl FnMut(&T, &T) -> Ordering {
    let mut comparisons = 0_usize;
    move |left, right| {
        checkpoint_at(comparisons);
        comparisons = comparisons.wrapping_add(1);
        compare(left, right)
    }
}

#[cfg(test)]
mod tests {
    use super::{sort_by, sort_unstable, sort_unstable_by};
    use crate::take_turns_on_this_thread;

    /// A small deterministic generator (xorshift), for test data.
    fn numbers(seed: u64, count: usize, below: u64) -> Vec<u64> {
        let mut state = seed | 1;
        (0..count)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % below
            })
            .collect()
    }

    /// Runs `body` on a thread that takes turns.
    fn taking_turns(body: impl FnOnce() + Send + 'static) {
        std::thread::spawn(move || {
            take_turns_on_this_thread();
            body();
        })
        .join()
        .expect("the sorting thread ends");
    }

    #[test]
    fn sorts_in_turns_what_the_standard_sorts_sort() {
        taking_turns(|| {
            for (seed, length) in (1..).zip([0, 1, 1_000, 100_003]) {
                for below in [3, 1_000, u64::MAX] {
                    let mut items = numbers(seed, length, below);
                    let mut expected = items.clone();
                    expected.sort_unstable();
                    sort_unstable(&mut items);
                    assert_eq!(items, expected, "length {length}, values below {below}");
                }
            }
        });
    }

    #[test]
    fn sorts_by_the_comparison_given() {
        taking_turns(|| {
            let mut items = numbers(11, 50_001, 1 << 20);
            sort_unstable_by(&mut items, |left, right| right.cmp(left));
            assert!(items.is_sorted_by(|left, right| left >= right));
        });
    }

    #[test]
    fn the_stable_sort_keeps_equal_elements_in_order() {
        taking_turns(|| {
            let mut items: Vec<(u64, usize)> =
                numbers(5, 60_000, 100).into_iter().zip(0..).collect();
            sort_by(&mut items, |left, right| left.0.cmp(&right.0));
            assert!(items.is_sorted(), "by key, then by original place");
        });
    }
}
