//! The process's anonymous memory in base pages, not transparent huge pages.
//!
//! A batch's pending index changes grow to hundreds of MiB per shard and are freed at each
//! write to the trees; the allocator gives freed memory back to the system and maps fresh
//! memory for the next flush. With transparent huge pages, each first touch of that fresh
//! memory makes the kernel zero a whole 2 MiB page: 9-10 % of the server's CPU during a bulk
//! ingest went to `clear_page_erms`. In base pages the kernel zeroes only the 4 KiB pages
//! touched. Three alternating ingests of the 886k PyPI packages measured 13.5 / 12.5 / 11.3 s
//! and 23.0 / 20.9 / 19.1 s of server CPU with huge pages, 11.3 / 11.2 / 10.5 s and
//! 19.4 / 19.3 / 18.1 s without (see `tuning/results/indexing-2026-11-25.md`).
//!
//! The index files are mapped from the page cache and are not affected: the setting covers
//! anonymous memory (the heap, the executors' buffers).
//!
//! Invariant: called once, first thing in `main`; it changes how later page faults are
//! served, not any memory's contents.

use std::io;

/// Turns transparent huge pages off for this process (`PR_SET_THP_DISABLE`, Linux 3.15+).
pub fn disable_transparent_huge_pages() -> io::Result<()> {
    // SAFETY: prctl with PR_SET_THP_DISABLE reads its integer arguments only and changes a
    // flag of this process's memory map.
    let result = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::disable_transparent_huge_pages;

    #[test]
    fn the_process_reads_back_huge_pages_disabled() {
        disable_transparent_huge_pages().expect("prctl accepts PR_SET_THP_DISABLE");
        // SAFETY: PR_GET_THP_DISABLE takes no argument and reads a flag of this process.
        let disabled = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        assert_eq!(disabled, 1);
    }
}
