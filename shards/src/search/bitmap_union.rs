//! Unions of a term's few bitmaps (its alternatives' documents, a pair's alternatives).
//!
//! roaring's multi-way union turns every container it meets into a bitmap container (8 KiB,
//! zeroed) and, at the end, converts each one holding at most 4,096 ids back into an array
//! by scanning its 65,536 bits. When the union is dense that beats or-ing the inputs one by
//! one (quadratic); when it is sparse the conversions are most of its cost, and of a cheap
//! search (7% of a mixed query load's CPU went to them). So one input is taken as it is, a
//! few are or-ed one by one, more holding few ids in all are or-ed pairwise in a balanced
//! tree (array containers merge as arrays, each id is merged about log2(inputs) times), and
//! only the rest take the multi-way union.
//!
//! Invariant: every function here returns exactly the union of its inputs.

use std::borrow::Borrow;

use roaring::{MultiOps, RoaringBitmap};

/// Most bitmaps or-ed one by one.
pub const PAIRWISE_UNION_MAX: usize = 8;
/// Most ids, summed over the inputs, of a union or-ed as a balanced tree; more take roaring's
/// multi-way union (a union of this size has at most 16 full array containers).
pub const TREE_UNION_IDS_MAX: u64 = 65_536;

/// How a union is computed (see the module documentation).
enum UnionWay {
    OneByOne,
    Tree,
    MultiWay,
}

fn way<B: Borrow<RoaringBitmap>>(bitmaps: &[B]) -> UnionWay {
    if bitmaps.len() <= PAIRWISE_UNION_MAX {
        UnionWay::OneByOne
    } else if bitmaps
        .iter()
        .map(|bitmap| bitmap.borrow().len())
        .sum::<u64>()
        <= TREE_UNION_IDS_MAX
    {
        UnionWay::Tree
    } else {
        UnionWay::MultiWay
    }
}

/// The union of `bitmaps` (owned or borrowed).
pub fn union_of<B: Borrow<RoaringBitmap>>(bitmaps: &[B]) -> RoaringBitmap {
    let or_all = |bitmaps: &[B]| match bitmaps.split_first() {
        Some((first, rest)) => rest.iter().fold(first.borrow().clone(), |union, bitmap| {
            union | bitmap.borrow()
        }),
        None => RoaringBitmap::new(),
    };
    match way(bitmaps) {
        UnionWay::OneByOne => or_all(bitmaps),
        UnionWay::Tree => tree_union(bitmaps.chunks(2).map(or_all).collect()),
        UnionWay::MultiWay => bitmaps.iter().map(Borrow::borrow).union(),
    }
}

/// The union of `bitmaps`, taking them.
pub fn union_of_owned(bitmaps: Vec<RoaringBitmap>) -> RoaringBitmap {
    match way(&bitmaps) {
        UnionWay::OneByOne => bitmaps
            .into_iter()
            .reduce(|union, bitmap| union | bitmap)
            .unwrap_or_default(),
        UnionWay::Tree => tree_union(bitmaps),
        UnionWay::MultiWay => bitmaps.union(),
    }
}

/// Ors `level` pairwise, level after level, down to one bitmap.
fn tree_union(mut level: Vec<RoaringBitmap>) -> RoaringBitmap {
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        let mut bitmaps = level.into_iter();
        while let Some(mut left) = bitmaps.next() {
            if let Some(right) = bitmaps.next() {
                left |= right;
            }
            next.push(left);
        }
        level = next;
    }
    level.pop().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_random::Random;

    /// Random bitmaps per size tried: sparse and dense containers, one or several.
    fn random_bitmap(random: &mut Random, densities: u64) -> RoaringBitmap {
        let containers = random.below(4) + 1;
        let density = random.below(densities);
        let mut bitmap = RoaringBitmap::new();
        for _ in 0..containers {
            let high = random.below(6) << 16;
            let count = match density {
                0 => random.below(20),
                1 => random.below(5_000),
                _ => random.below(40_000),
            };
            for _ in 0..count {
                bitmap.insert(high | random.below(1 << 16));
            }
        }
        bitmap
    }

    #[test]
    fn unions_of_every_size_equal_the_multi_way_union() {
        let mut random = Random(0x0b17_a95e);
        // Every density, then sparse inputs only (the tree path) and dense ones (multi-way).
        let sizes = (0..=PAIRWISE_UNION_MAX + 3).map(|size| (size, 3)).chain([
            (40, 1),
            (41, 1),
            (40, 3),
            (41, 3),
        ]);
        for (size, densities) in sizes {
            for _ in 0..4 {
                let bitmaps: Vec<RoaringBitmap> = (0..size)
                    .map(|_| random_bitmap(&mut random, densities))
                    .collect();
                let expected: RoaringBitmap = bitmaps.iter().union();
                assert_eq!(union_of(&bitmaps), expected, "{size} bitmaps");
                let borrowed: Vec<&RoaringBitmap> = bitmaps.iter().collect();
                assert_eq!(union_of(&borrowed), expected, "{size} bitmaps, borrowed");
                assert_eq!(union_of_owned(bitmaps), expected, "{size} bitmaps, owned");
            }
        }
    }
}
