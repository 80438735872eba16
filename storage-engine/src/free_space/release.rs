//! Giving the disk blocks of free pages back to the file system.
//!
//! Copy-on-write leaves the pages a commit replaced free in the file, reused by the next
//! write transactions; after a large batch they can be a third of the file. When the
//! database is idle, [`Database::release_free_pages`] punches holes over the reusable ones,
//! so the file holds disk blocks only for live data (its length does not change). A later
//! writer reuses a released page as it would any free page: it writes the whole page, and
//! the file system allocates a block again.
//!
//! Invariants: only pages of reusable records are released (no snapshot references them,
//! so nothing reads them), and only while this call holds the write transaction (no writer
//! can take and rewrite a page being punched). A record already released is not punched
//! again; the set of released records only ever names records of the free tree.

use std::collections::BTreeSet;

use crate::error::Result;
use crate::free_space::free_list::RecordKey;
use crate::transaction::database::Database;

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

impl Database {
    /// Gives back the disk blocks of every reusable free page not given back yet, when
    /// there are at least `minimum_pages` of them (else gives back nothing), and counts the
    /// free pages a live snapshot still holds (a caller that wants every block back calls
    /// again once they are 0). Fails with
    /// [`crate::Error::WriteInProgress`] while a write transaction is open (call it again
    /// when the writer is done).
    pub fn release_free_pages(&self, minimum_pages: u64) -> Result<Released> {
        let transaction = self.begin_write()?;
        let (already, pending_pages) = {
            let state = self.shared().lock();
            let pending_pages = state
                .free
                .pending
                .values()
                .flat_map(|records| records.values())
                .map(|pages| pages.len() as u64)
                .sum();
            (state.free.blocks_released.clone(), pending_pages)
        };
        let (keys, mut pages) = transaction.with_untaken_records(|records| {
            let mut keys = BTreeSet::new();
            let mut pages = Vec::new();
            for (key, record_pages) in records {
                keys.insert(*key);
                if !already.contains(key) {
                    pages.extend_from_slice(record_pages);
                }
            }
            (keys, pages)
        });
        if (pages.len() as u64) < minimum_pages.max(1) {
            return Ok(Released {
                held_back_pages: pages.len() as u64,
                pending_pages,
                ..Released::default()
            });
        }
        pages.sort_unstable();
        let runs = runs_of(&pages);
        let page_bytes = self.shared().pager.page_bytes() as u64;
        for &(first, count) in &runs {
            self.shared()
                .pager
                .io()
                .release(first * page_bytes, count * page_bytes)?;
        }
        let mut state = self.shared().lock();
        let released: &mut BTreeSet<RecordKey> = &mut state.free.blocks_released;
        // Records taken since the last release have left the free tree: forget them.
        released.retain(|key| keys.contains(key));
        released.extend(keys);
        drop(state);
        transaction.abort();
        Ok(Released {
            pages: pages.len() as u64,
            runs: runs.len() as u64,
            held_back_pages: 0,
            pending_pages,
        })
    }
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
