//! Unions over the words a prefix starts, kept per commit: the documents of every word the
//! prefix starts, and per field or position bucket the documents holding one of them.
//!
//! A prefix term matches every longer word it starts; ranking it reads the bitmaps of all of
//! them (thousands for a two-letter prefix, times the fields and position buckets of each).
//! Meilisearch precomputes such unions at indexing time for frequent prefixes; here they are
//! computed on a prefix's first search after a commit and shared by the later searches of
//! that commit (the commit view owns this cache, so an entry never outlives its commit).
//!
//! Invariants: an entry is the full union over the commit's words (never restricted to one
//! search's candidates); only unions read from at least [`CACHED_WORDS_MIN`] keys are kept
//! (cheaper ones are recomputed); the bitmaps held stay under [`CACHED_BYTES_MAX`] times the
//! commit's [`crate::cache_scale::CacheScale`] (the cache starts over when the next entry would
//! pass it).

use std::collections::BTreeMap;
use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::cache_meter::CacheAccount;
use crate::cache_scale::CacheScale;
use crate::commit_memo::{CommitMemo, WhenFull};
use crate::error::ShardResult;

/// Fewest keys a union must have read to be worth keeping.
pub const CACHED_WORDS_MIN: usize = 32;
/// Most bytes of bitmaps (serialized size) one commit's cache holds, at one step of its
/// [`crate::cache_scale::CacheScale`] (one more step per half million documents).
pub const CACHED_BYTES_MAX: usize = 64 << 20;

/// Which union: of the words' documents, or per slot of one of the slot trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnionKind {
    /// `word_documents`: one slot, 0.
    Documents,
    /// `word_fields`: per field id.
    Fields,
    /// `word_position_buckets`: per position bucket.
    PositionBuckets,
}

/// Slot → the documents of the prefix's words there ([`UnionKind::Documents`]: slot 0 only).
pub type SlotUnion = BTreeMap<u16, RoaringBitmap>;

/// A computed union and the number of keys it was read from.
pub struct ComputedUnion {
    pub union: SlotUnion,
    pub keys_read: usize,
}

/// One commit's prefix unions.
pub struct PrefixUnions {
    memo: CommitMemo<(UnionKind, String), SlotUnion>,
}

impl Default for PrefixUnions {
    /// Outside any cache budget.
    fn default() -> Self {
        PrefixUnions::charging(CacheAccount::unbounded(), CacheScale::ONE)
    }
}

impl PrefixUnions {
    /// An empty memo whose values are charged to `account`, its bound grown by `scale` (see
    /// [`crate::cache_scale`]).
    pub fn charging(account: Arc<CacheAccount>, scale: CacheScale) -> Self {
        PrefixUnions {
            memo: CommitMemo::charging(scale.bound(CACHED_BYTES_MAX), WhenFull::StartOver, account),
        }
    }
}

impl PrefixUnions {
    /// Whether no entry is kept (nothing to carry to the next commit).
    pub fn is_empty(&self) -> bool {
        self.memo.is_empty()
    }

    /// The memo itself (for the carry over a batch, [`super::prefix_carry`]).
    pub(super) fn memo(&self) -> &CommitMemo<(UnionKind, String), SlotUnion> {
        &self.memo
    }

    /// The `kind` union of `prefix`, computed by `compute` unless already known.
    pub fn union(
        &self,
        kind: UnionKind,
        prefix: &str,
        compute: impl FnOnce() -> ShardResult<ComputedUnion>,
    ) -> ShardResult<Arc<SlotUnion>> {
        let key = (kind, prefix.to_owned());
        if let Some(known) = self.memo.get(&key) {
            return Ok(known);
        }
        let computed = compute()?;
        let union = Arc::new(computed.union);
        if computed.keys_read < CACHED_WORDS_MIN {
            return Ok(union);
        }
        let bytes = union.values().map(RoaringBitmap::serialized_size).sum();
        Ok(self.memo.keep(key, union, bytes))
    }
}
