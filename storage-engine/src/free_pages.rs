//! Free-page bookkeeping: pages safe to reuse now, pages waiting for old snapshots, and the
//! write transaction's allocator.
//!
//! Invariants: a page freed by transaction `T` is referenced by snapshot `T - 1` and older,
//! so it stays in `pending` until no reader with a snapshot older than `T` remains; a page
//! allocated and freed within one write transaction was never visible to anyone and is
//! reusable at once; an abort gives back exactly the pages the transaction took.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use crate::error::{Error, Result};
use crate::pager::Pager;

/// Growth step of the file, as a fraction of its length: grow by length / this.
const GROWTH_FRACTION_DIVISOR: u64 = 32;
/// Smallest growth step, in bytes.
const GROWTH_BYTES_MIN: u64 = 1 << 20;
/// Largest growth step, in bytes.
const GROWTH_BYTES_MAX: u64 = 64 << 20;

/// A hasher for page numbers: one multiplication (page numbers are not attacker-chosen
/// hash-flooding input, and the default SipHash showed in write profiles).
#[derive(Default)]
pub struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (value ^ self.0)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(26);
    }
}

/// Hash-map state for maps keyed by page number.
pub type PageHashBuilder = BuildHasherDefault<PageHasher>;

/// Free pages shared between transactions.
#[derive(Debug, Default)]
pub struct FreePages {
    /// Reusable by the next write transaction.
    pub reusable: BTreeSet<u64>,
    /// Freed by transaction id (key), reusable once no older snapshot is alive.
    pub pending: BTreeMap<u64, Vec<u64>>,
}

impl FreePages {
    /// Moves to `reusable` the pages freed by transactions no live snapshot needs:
    /// those freed by `T <= oldest_snapshot` (or all when no reader is alive).
    pub fn release(&mut self, oldest_snapshot: Option<u64>) {
        let keep = match oldest_snapshot {
            Some(oldest) => self.pending.split_off(&(oldest + 1)),
            None => BTreeMap::new(),
        };
        for (_, pages) in std::mem::replace(&mut self.pending, keep) {
            self.reusable.extend(pages);
        }
    }

    /// Pages waiting for snapshots, in no particular order.
    pub fn pending_pages(&self) -> impl Iterator<Item = u64> + '_ {
        self.pending.values().flatten().copied()
    }
}

/// The write transaction's page allocator.
#[derive(Debug)]
pub struct Allocator {
    /// Pages this transaction may write.
    pub reusable: BTreeSet<u64>,
    /// Next page past everything allocated.
    pub high_water_pages: u64,
    /// High-water mark of the committed state.
    pub committed_high_water_pages: u64,
    /// Committed pages this transaction stopped using.
    pub freed: Vec<u64>,
    /// Pages allocated by this transaction and still in use by it.
    pub fresh: HashSet<u64, PageHashBuilder>,
    /// Largest file, in bytes.
    maximum_bytes: u64,
}

impl Allocator {
    /// An allocator over the reusable pages of a committed state.
    pub fn new(reusable: BTreeSet<u64>, high_water_pages: u64, maximum_bytes: u64) -> Allocator {
        Allocator {
            reusable,
            high_water_pages,
            committed_high_water_pages: high_water_pages,
            freed: Vec::new(),
            fresh: HashSet::default(),
            maximum_bytes,
        }
    }

    /// Allocates `count` consecutive pages; the caller writes them all before commit.
    pub fn allocate(&mut self, pager: &Pager, count: u64) -> Result<u64> {
        let first = match self.take_reusable(count) {
            Some(first) => first,
            None => self.take_from_end(pager, count)?,
        };
        for page in first..first + count {
            self.fresh.insert(page);
        }
        pager.forget_verified(first, count);
        Ok(first)
    }

    fn take_reusable(&mut self, count: u64) -> Option<u64> {
        if count == 1 {
            return self.reusable.pop_first();
        }
        let (mut run_start, mut run_length) = (0, 0);
        for &page in &self.reusable {
            if run_length > 0 && page == run_start + run_length {
                run_length += 1;
            } else {
                (run_start, run_length) = (page, 1);
            }
            if run_length == count {
                for taken in run_start..run_start + count {
                    self.reusable.remove(&taken);
                }
                return Some(run_start);
            }
        }
        None
    }

    fn take_from_end(&mut self, pager: &Pager, count: u64) -> Result<u64> {
        let first = self.high_water_pages;
        let end = first.checked_add(count).ok_or(Error::MapFull {
            maximum_bytes: self.maximum_bytes,
        })?;
        let page_bytes = pager.page_bytes() as u64;
        let needed = end
            .checked_mul(page_bytes)
            .filter(|bytes| *bytes <= self.maximum_bytes.min(pager.io().capacity()))
            .ok_or(Error::MapFull {
                maximum_bytes: self.maximum_bytes,
            })?;
        let length = pager.io().length();
        if needed > length {
            let step = (length / GROWTH_FRACTION_DIVISOR).clamp(GROWTH_BYTES_MIN, GROWTH_BYTES_MAX);
            let target = needed.max(length + step).div_ceil(page_bytes) * page_bytes;
            let limit = self.maximum_bytes.min(pager.io().capacity()) / page_bytes * page_bytes;
            pager.io().grow(target.min(limit))?;
        }
        self.high_water_pages = end;
        Ok(first)
    }

    /// Gives back `count` pages from `first`: at once if this transaction allocated them,
    /// else after commit (they belong to the committed state).
    pub fn free(&mut self, first: u64, count: u64) {
        for page in first..first + count {
            if self.fresh.remove(&page) {
                self.reusable.insert(page);
            } else {
                self.freed.push(page);
            }
        }
    }

    /// The pages to hand back to the shared reusable set when the transaction aborts.
    pub fn pages_after_abort(self) -> BTreeSet<u64> {
        let limit = self.committed_high_water_pages;
        let mut pages: BTreeSet<u64> = self
            .reusable
            .into_iter()
            .filter(|page| *page < limit)
            .collect();
        pages.extend(self.fresh.into_iter().filter(|page| *page < limit));
        pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_freed_after_the_oldest_snapshot_stay_pending() {
        let mut free = FreePages::default();
        free.pending.insert(5, vec![10]);
        free.pending.insert(6, vec![11]);
        free.pending.insert(7, vec![12]);
        free.release(Some(6));
        assert_eq!(free.reusable, BTreeSet::from([10, 11]));
        assert_eq!(free.pending.keys().copied().collect::<Vec<_>>(), vec![7]);
        free.release(None);
        assert_eq!(free.reusable.len(), 3);
        assert!(free.pending.is_empty());
    }
}
