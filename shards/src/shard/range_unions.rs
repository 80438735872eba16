//! Unions over ranges of facet values, kept per commit: the documents of every value of a
//! field between two bounds (`year > 2020`, `year = 2019`, `genre = horror`).
//!
//! A filter over a frequent value or a range of them decodes and merges one bitmap per value,
//! which costs in proportion to the documents selected: on a few hundred thousand documents a
//! `year > 2020` filter cost more than the search it restricted. The same filters come back
//! query after query (a front end's facet refinements), so the first filter of a commit
//! computes the union and the later ones of that commit reuse it (the commit view owns this
//! cache, so an entry never outlives its commit).
//!
//! Invariants: an entry is exactly the union over the commit's keys between its bounds in its
//! tree (never restricted to a search's candidates); only unions selecting at least
//! [`CACHED_DOCUMENTS_MIN`] documents are kept (smaller ones are cheaper to recompute than to
//! hold); the bitmaps held stay under [`CACHED_BYTES_MAX`] times the
//! commit's [`crate::cache_scale::CacheScale`] (the cache starts over when the
//! next entry would pass it).

use std::ops::Bound;
use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::cache_meter::CacheAccount;
use crate::cache_scale::CacheScale;
use crate::commit_memo::{CommitMemo, WhenFull};
use crate::error::ShardResult;

/// Fewest documents a union must select to be worth keeping.
pub const CACHED_DOCUMENTS_MIN: u64 = 4096;
/// Most bytes of bitmaps (serialized size) one commit's cache holds, at one step of its
/// [`crate::cache_scale::CacheScale`] (one more step per half million documents).
pub const CACHED_BYTES_MAX: usize = 64 << 20;

/// The facet tree a range is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RangeTree {
    Numbers,
    Strings,
}

/// A range of keys of one facet tree (the bounds hold the field id, see `facet_source`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RangeKey {
    pub tree: RangeTree,
    pub lower: Bound<Vec<u8>>,
    pub upper: Bound<Vec<u8>>,
}

/// One commit's range unions.
pub struct RangeUnions {
    memo: CommitMemo<RangeKey, RoaringBitmap>,
}

impl Default for RangeUnions {
    /// Outside any cache budget.
    fn default() -> Self {
        RangeUnions::charging(CacheAccount::unbounded(), CacheScale::ONE)
    }
}

impl RangeUnions {
    /// An empty memo whose values are charged to `account`, its bound grown by `scale` (see
    /// [`crate::cache_scale`]).
    pub fn charging(account: Arc<CacheAccount>, scale: CacheScale) -> Self {
        RangeUnions {
            memo: CommitMemo::charging(scale.bound(CACHED_BYTES_MAX), WhenFull::StartOver, account),
        }
    }
}

impl RangeUnions {
    /// The union of the range `key`, computed by `compute` unless already known.
    pub fn union(
        &self,
        key: RangeKey,
        compute: impl FnOnce() -> ShardResult<RoaringBitmap>,
    ) -> ShardResult<Arc<RoaringBitmap>> {
        if let Some(known) = self.memo.get(&key) {
            return Ok(known);
        }
        let union = Arc::new(compute()?);
        if union.len() < CACHED_DOCUMENTS_MIN {
            return Ok(union);
        }
        let bytes = union.serialized_size();
        Ok(self.memo.keep(key, union, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(lower: u8) -> RangeKey {
        RangeKey {
            tree: RangeTree::Numbers,
            lower: Bound::Included(vec![lower]),
            upper: Bound::Unbounded,
        }
    }

    fn documents(count: u32) -> RoaringBitmap {
        (0..count).map(|document| document * 3).collect()
    }

    #[test]
    fn a_large_union_is_computed_once() {
        let unions = RangeUnions::default();
        let large = u32::try_from(CACHED_DOCUMENTS_MIN).expect("small") + 1;
        let first = unions
            .union(key(1), || Ok(documents(large)))
            .expect("computed");
        let again = unions
            .union(key(1), || panic!("a kept union is not computed again"))
            .expect("kept");
        assert_eq!(*first, documents(large));
        assert!(Arc::ptr_eq(&first, &again));
    }

    #[test]
    fn a_small_union_is_computed_each_time() {
        let unions = RangeUnions::default();
        let mut computed = 0;
        for _ in 0..2 {
            let union = unions
                .union(key(2), || {
                    computed += 1;
                    Ok(documents(10))
                })
                .expect("computed");
            assert_eq!(*union, documents(10));
        }
        assert_eq!(computed, 2);
    }

    #[test]
    fn ranges_of_another_tree_or_bound_are_other_entries() {
        let unions = RangeUnions::default();
        let large = u32::try_from(CACHED_DOCUMENTS_MIN).expect("small");
        unions
            .union(key(1), || Ok(documents(large)))
            .expect("computed");
        let strings = RangeKey {
            tree: RangeTree::Strings,
            ..key(1)
        };
        let other = unions
            .union(strings, || Ok(documents(5)))
            .expect("computed");
        assert_eq!(*other, documents(5));
        let bounded = unions.union(key(7), || Ok(documents(6))).expect("computed");
        assert_eq!(*bounded, documents(6));
    }

    #[test]
    fn an_error_keeps_nothing() {
        let unions = RangeUnions::default();
        let failed = unions.union(key(3), || {
            Err(crate::shard::ShardError::corrupted("planted failure"))
        });
        assert!(failed.is_err());
        let computed = unions.union(key(3), || Ok(documents(1))).expect("computed");
        assert_eq!(*computed, documents(1));
    }
}
