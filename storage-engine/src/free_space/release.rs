//! Giving the disk blocks of free pages back to the file system.
//!
//! Copy-on-write leaves the pages a commit replaced free in the file, reused by the next
//! write transactions; after a large batch they can be a third of the file. When the
//! database is idle, `Database::release_free_pages` punches holes over the reusable ones,
//! so the file holds disk blocks only for live data (its length does not change). A later
//! writer reuses a released page as it would any free page: it writes the whole page, and
//! the file system allocates a block again.
//!
//! Invariants: only pages of reusable records are released (no snapshot references them,
//! so nothing reads them), and only while this call holds the write transaction (no writer
//! can take and rewrite a page being punched). A record already released is not punched
//! again; the set of released records only ever names records of the free tree.
//!
//! This file holds the free-space half (which pages, which runs, the released set); the
//! method that holds the write transaction while it runs is `Database::release_free_pages`
//! in `transaction/database.rs`, the layer that owns transactions.

use std::collections::BTreeSet;

use crate::error::Result;
use crate::free_space::free_list::RecordKey;
use crate::free_space::free_pages::{FreePages, Records};
use crate::page_store::pager::Pager;

/// What one release gave back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Released {
    /// Free pages whose blocks were given back by this call.
    pub pages: u64,
    /// Consecutive runs they formed (one system call each).
    pub runs: u64,
    /// Reusable free pages not given back because there were fewer than the minimum.
    pub held_back_pages: u64,
    /// Free pages a live snapshot may still read: their blocks stay until it ends, and a
    /// later call gives them back.
    pub pending_pages: u64,
}

/// The free pages waiting for snapshots in `free`: their blocks stay until those end.
pub fn pending_pages(free: &FreePages) -> u64 {
    free.pending
        .values()
        .flat_map(|records| records.values())
        .map(|pages| pages.len() as u64)
        .sum()
}

/// What a release of the reusable `records` covers: the key of every record (the released
/// set once the release is done), and the pages of the records not in `already` (given back
/// before), in record order.
pub fn unreleased_pages(
    records: &Records,
    already: &BTreeSet<RecordKey>,
) -> (BTreeSet<RecordKey>, Vec<u64>) {
    let mut keys = BTreeSet::new();
    let mut pages = Vec::new();
    for (key, record_pages) in records {
        keys.insert(*key);
        if !already.contains(key) {
            pages.extend_from_slice(record_pages);
        }
    }
    (keys, pages)
}

/// Gives back the disk blocks of `pages` (sorted, each once), one call per run of consecutive
/// pages; returns the number of runs.
pub fn give_back(pager: &Pager, pages: &[u64]) -> Result<u64> {
    debug_assert!(
        pages.windows(2).all(|pair| pair[0] < pair[1]),
        "pages to release are sorted and listed once"
    );
    let runs = runs_of(pages);
    let page_bytes = pager.page_bytes() as u64;
    for &(first, count) in &runs {
        pager.io().release(first * page_bytes, count * page_bytes)?;
    }
    Ok(runs.len() as u64)
}

/// Makes `keys` (the records a release covered) the released set `released`: records taken
/// since the last release have left the free tree, so they are forgotten.
pub fn remember_released(released: &mut BTreeSet<RecordKey>, keys: BTreeSet<RecordKey>) {
    released.retain(|key| keys.contains(key));
    released.extend(keys);
}

/// Sorted page numbers as runs of consecutive pages: (first page, page count).
fn runs_of(pages: &[u64]) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &page in pages {
        match runs.last_mut() {
            Some((first, count)) if *first + *count == page => *count += 1,
            _ => runs.push((page, 1)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::runs_of;

    #[test]
    fn consecutive_pages_form_one_run() {
        assert_eq!(
            runs_of(&[3, 4, 5, 9, 11, 12]),
            vec![(3, 3), (9, 1), (11, 2)]
        );
        assert_eq!(runs_of(&[]), Vec::<(u64, u64)>::new());
    }
}
