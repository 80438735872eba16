//! Free-page bookkeeping: the in-memory mirror of the free tree's records (reusable now, or
//! waiting for old snapshots), rebuilt at open, and the write transaction's allocator.
//!
//! Invariants: a page freed by transaction `T` is referenced by snapshot `T - 1` and older,
//! so its record stays in `pending` until no reader with a snapshot older than `T` remains;
//! a page allocated and freed within one write transaction was never visible to anyone and
//! is reusable at once; the allocator takes whole records, and an abort gives back exactly
//! the records the transaction took, unchanged (the committed free tree still lists them).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use crate::error::{Error, Result};
use crate::free_space::free_list::RecordKey;
use crate::page_store::pager::Pager;

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

/// Free-page records of the free tree, in memory: each key with its pages.
pub type Records = BTreeMap<RecordKey, Vec<u64>>;

/// Records taken from the free tree at most this many at a time while looking for a run of
/// consecutive pages (an overflow value); past it, the run is taken from the file's end.
const RECORDS_SEARCHED_FOR_RUN_MAX: usize = 4;

/// Free pages shared between transactions: a mirror of the committed free tree's records,
/// split by whether a live snapshot may still read their pages.
#[derive(Debug, Default)]
pub struct FreePages {
    /// Records whose pages the next write transaction may reuse, oldest first.
    pub reusable: Records,
    /// Records waiting for snapshots, by the id of the transaction that freed their pages.
    pub pending: BTreeMap<u64, Records>,
    /// Reusable records whose pages' disk blocks were given back (see `release`); a record
    /// a writer takes leaves the free tree, and leaves this set at the next release.
    pub blocks_released: BTreeSet<RecordKey>,
}

impl FreePages {
    /// Moves to `reusable` the records of pages freed by transactions no live snapshot
    /// needs: those freed by `T <= oldest_snapshot` (or all when no reader is alive).
    pub fn release(&mut self, oldest_snapshot: Option<u64>) {
        let keep = match oldest_snapshot {
            Some(oldest) => self.pending.split_off(&(oldest + 1)),
            None => BTreeMap::new(),
        };
        for (_, records) in std::mem::replace(&mut self.pending, keep) {
            self.reusable.extend(records);
        }
    }
}

/// The write transaction's page allocator: takes whole records from the free tree as it
/// needs pages, and remembers which, so the commit deletes exactly those records.
#[derive(Debug)]
pub struct Allocator {
    /// Released records not taken yet, oldest first.
    records: Records,
    /// Records taken (their pages moved to `reusable`), with their content for an abort.
    pub taken: Records,
    /// Pages in hand: from taken records, or allocated and freed by this transaction.
    pub reusable: BTreeSet<u64>,
    /// Next page past everything allocated.
    pub high_water_pages: u64,
    /// Committed pages this transaction stopped using.
    pub freed: Vec<u64>,
    /// Pages allocated by this transaction and still in use by it.
    pub fresh: HashSet<u64, PageHashBuilder>,
    /// While the commit updates the free tree: pages it allocated and freed again. They
    /// are recorded as free but never allocated again in that update, so its rounds only
    /// ever consume pages and settle (see `transaction::free_tree::update`).
    pub spare: Option<BTreeSet<u64>>,
    /// While set, every allocation takes pages from the file's end, never from those in hand:
    /// a free-tree update that has not settled after a few rounds sets it, so that its later
    /// rounds stop shrinking the set of pages in hand they record (see
    /// `transaction::free_tree::update`).
    pub from_end_only: bool,
    /// Runs of pages (first, count) freed since [`Allocator::take_unused_runs`] last took
    /// them: the transaction no longer reads them, so the mapping need not keep them resident.
    unused_runs: Vec<(u64, u64)>,
    /// Largest file, in bytes.
    maximum_bytes: u64,
}

impl Allocator {
    /// An allocator over the released records of a committed state.
    pub fn new(records: Records, high_water_pages: u64, maximum_bytes: u64) -> Allocator {
        Allocator {
            records,
            taken: BTreeMap::new(),
            reusable: BTreeSet::new(),
            high_water_pages,
            freed: Vec::new(),
            fresh: HashSet::default(),
            spare: None,
            from_end_only: false,
            unused_runs: Vec::new(),
            maximum_bytes,
        }
    }

    /// Allocates `count` consecutive pages; the caller writes them all before commit.
    pub fn allocate(&mut self, pager: &Pager, count: u64) -> Result<u64> {
        let reused = match self.from_end_only {
            true => None,
            false => self.take_reusable(count),
        };
        let first = match reused {
            Some(first) => first,
            None => self.take_from_end(pager, count)?,
        };
        for page in first..first + count {
            self.fresh.insert(page);
        }
        pager.forget_verified(first, count);
        Ok(first)
    }

    /// Moves the oldest untaken record's pages into hand; `false` if none is left.
    fn take_record(&mut self) -> bool {
        let Some((key, pages)) = self.records.pop_first() else {
            return false;
        };
        self.reusable.extend(pages.iter().copied());
        self.taken.insert(key, pages);
        true
    }

    fn take_reusable(&mut self, count: u64) -> Option<u64> {
        if count == 1 {
            if self.reusable.is_empty() {
                self.take_record();
            }
            return self.reusable.pop_first();
        }
        for _ in 0..=RECORDS_SEARCHED_FOR_RUN_MAX {
            if let Some(first) = self.take_run(count) {
                return Some(first);
            }
            if !self.take_record() {
                return None;
            }
        }
        None
    }

    /// Takes `count` consecutive pages from those in hand, if they hold such a run.
    fn take_run(&mut self, count: u64) -> Option<u64> {
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
        self.unused_runs.push((first, count));
        for page in first..first + count {
            if !self.fresh.remove(&page) {
                self.freed.push(page);
            } else if let Some(spare) = &mut self.spare {
                spare.insert(page);
            } else {
                self.reusable.insert(page);
            }
        }
    }

    /// The runs of pages freed since the last call, sorted, neighbours joined.
    pub fn take_unused_runs(&mut self) -> Vec<(u64, u64)> {
        let mut runs = std::mem::take(&mut self.unused_runs);
        runs.sort_unstable();
        let mut joined: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
        for (first, count) in runs {
            match joined.last_mut() {
                Some((last_first, last_count)) if *last_first + *last_count >= first => {
                    *last_count = (*last_count).max(first + count - *last_first);
                }
                _ => joined.push((first, count)),
            }
        }
        joined
    }

    /// The released records not taken yet, as they stand.
    pub fn untaken(&self) -> &Records {
        &self.records
    }

    /// The released records this transaction did not take (after a commit, still reusable).
    pub fn records_untaken(self) -> Records {
        self.records
    }

    /// The records to hand back to the shared reusable set when the transaction aborts:
    /// every released record, taken or not, as the committed free tree still lists it.
    pub fn records_after_abort(self) -> Records {
        let mut records = self.records;
        records.extend(self.taken);
        records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unused_runs_come_back_sorted_with_neighbours_and_overlaps_joined() {
        let mut allocator = Allocator::new(Records::new(), 100, u64::MAX);
        for (first, count) in [(40, 2), (10, 1), (11, 3), (42, 1), (20, 1), (13, 4)] {
            allocator.free(first, count);
        }
        assert_eq!(
            allocator.take_unused_runs(),
            vec![(10, 7), (20, 1), (40, 3)]
        );
        assert!(allocator.take_unused_runs().is_empty());
    }

    #[test]
    fn pages_freed_after_the_oldest_snapshot_stay_pending() {
        let key = |transaction_id| RecordKey {
            transaction_id,
            sequence: 0,
        };
        let mut free = FreePages::default();
        for (transaction_id, page) in [(5, 10), (6, 11), (7, 12)] {
            let records = BTreeMap::from([(key(transaction_id), vec![page])]);
            free.pending.insert(transaction_id, records);
        }
        free.release(Some(6));
        let reusable: Vec<_> = free.reusable.keys().map(|key| key.transaction_id).collect();
        assert_eq!(reusable, vec![5, 6]);
        assert_eq!(free.pending.keys().copied().collect::<Vec<_>>(), vec![7]);
        free.release(None);
        assert_eq!(free.reusable.len(), 3);
        assert!(free.pending.is_empty());
    }

    #[test]
    fn from_the_end_only_allocations_leave_the_pages_in_hand_alone() {
        let records = BTreeMap::from([(
            RecordKey {
                transaction_id: 1,
                sequence: 0,
            },
            vec![5, 6],
        )]);
        let pager = Pager::new(Box::new(crate::io::SimulatedIo::new(1 << 20, 1)), 4096);
        let mut allocator = Allocator::new(records, 20, 1 << 30);
        assert_eq!(
            allocator
                .allocate(&pager, 1)
                .expect("the simulated file grows"),
            5,
            "in hand first"
        );
        allocator.from_end_only = true;
        assert_eq!(
            allocator
                .allocate(&pager, 1)
                .expect("the simulated file grows"),
            20
        );
        assert_eq!(
            allocator
                .allocate(&pager, 2)
                .expect("the simulated file grows"),
            21
        );
        assert_eq!(allocator.reusable, BTreeSet::from([6]), "untouched");
        assert_eq!(allocator.high_water_pages, 23);
        allocator.from_end_only = false;
        assert_eq!(
            allocator
                .allocate(&pager, 1)
                .expect("the simulated file grows"),
            6
        );
    }

    #[test]
    fn an_abort_gives_back_every_record_unchanged() {
        let records = BTreeMap::from([
            (
                RecordKey {
                    transaction_id: 1,
                    sequence: 0,
                },
                vec![5, 6],
            ),
            (
                RecordKey {
                    transaction_id: 2,
                    sequence: 0,
                },
                vec![9],
            ),
        ]);
        let mut allocator = Allocator::new(records.clone(), 20, 1 << 30);
        assert!(allocator.take_record());
        assert_eq!(allocator.reusable.pop_first(), Some(5));
        assert_eq!(allocator.records_after_abort(), records);
    }
}
