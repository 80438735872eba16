//! A copy of a vector file's committed bytes in anonymous memory on huge pages, kept for
//! graphs opened with `prefetch_memory` so that hot searches read vectors from memory the
//! kernel maps with 2 MiB pages.
//!
//! Why a copy: a search reads a few hundred records at random per query. Through the file
//! mapping those reads land on page-cache folios whose size depends on how the file was
//! written or read back, and mostly on 4 KiB page-table entries: nearly every record read
//! misses the TLB. The copy is one anonymous region advised for transparent huge pages, so the
//! whole file needs a few hundred TLB entries. On a store read back with most of its vector
//! file in small folios, hot searches at 1M x 128 ran 15-20 % faster with the copy and the
//! adjacency on huge pages; right after a build, whose file is written in 2 MiB folios, the
//! copy and the mapping measure the same (`tuning/results/vector-store-2026-11-24b.md`).
//! The cost is the copy's memory beside the
//! page cache's: the page cache's is clean and reclaimable, and the copied pages are dropped
//! from the process's mapping (see `VectorFile::copy_committed`); the copy itself is not
//! reclaimable. A copy that failed to grow (out of memory or mappings) stays as it is: the
//! reads it does not cover go through the file mapping, and it is not tried again.
//!
//! Layout: one reservation of the file's maximum size or the machine's physical memory,
//! whichever is smaller (address space only, `PROT_NONE`, nothing committed: a copy larger
//! than memory could not be held anyway), aligned to a huge page. Its prefix is made readable and writable in
//! whole huge pages as the copy grows.
//!
//! Invariants:
//! - the first `copied` bytes equal the file's first `copied` bytes, and never change again:
//!   only committed records are copied (`extend_to` is given bytes of a committed snapshot),
//!   and committed records are never rewritten (see `vector_file`);
//! - `copied` only grows, is published with release ordering after the bytes are written, and
//!   is read with acquire ordering before they are handed out, so a reader sees whole bytes;
//! - bytes at or past `copied` are written only under `extending`, and no slice handed out
//!   reaches them.

use crate::vector::huge_pages::HUGE_PAGE_BYTES;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, TryLockError};

/// The most a copy holds when the system does not tell its physical memory.
pub const COPY_BYTES_FALLBACK: u64 = 64 << 30;

/// The copy of one file (see the module documentation).
pub struct MemoryCopy {
    /// Start of the reservation, aligned to `HUGE_PAGE_BYTES`.
    start: usize,
    /// Usable bytes from `start` (the file's maximum size).
    capacity: usize,
    /// Where the whole mapping (with its alignment slack) begins, and its length.
    mapping: (usize, usize),
    /// Bytes copied (a prefix of the file).
    copied: AtomicUsize,
    /// Set once growing failed: no extension is tried again.
    failed: AtomicBool,
    /// Serializes extensions; holds the writable prefix's length.
    extending: Mutex<usize>,
}

impl MemoryCopy {
    /// The most a copy may hold on this machine: its physical memory (a copy is anonymous
    /// memory), or [`COPY_BYTES_FALLBACK`] when the system does not say.
    pub fn capacity_for_this_machine() -> u64 {
        // SAFETY: sysconf reads a system setting; it takes no pointers.
        let (pages, page_bytes) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        match (u64::try_from(pages), u64::try_from(page_bytes)) {
            (Ok(pages), Ok(page_bytes)) if pages > 0 && page_bytes > 0 => {
                pages.saturating_mul(page_bytes)
            }
            _ => COPY_BYTES_FALLBACK,
        }
    }

    /// Reserves address space for a copy of up to `capacity` bytes (nothing is committed).
    pub fn reserve(capacity: u64) -> std::io::Result<MemoryCopy> {
        let capacity = usize::try_from(capacity)
            .map_err(|_| std::io::Error::other("memory copy larger than the address space"))?;
        let length = capacity
            .checked_add(HUGE_PAGE_BYTES)
            .ok_or_else(|| std::io::Error::other("memory copy larger than the address space"))?;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing; it
        // aliases nothing. `PROT_NONE` and `MAP_NORESERVE` reserve address space only.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                length,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let base = base as usize;
        Ok(MemoryCopy {
            start: base.next_multiple_of(HUGE_PAGE_BYTES),
            capacity,
            mapping: (base, length),
            copied: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            extending: Mutex::new(0),
        })
    }

    /// The first `length` bytes of the file, if they have been copied.
    #[inline]
    pub fn prefix(&self, length: usize) -> Option<&[u8]> {
        if length > self.copied.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: `start..start + length` lies in the writable prefix (everything copied
        // does) and holds bytes written before `copied` was published (acquire above pairs
        // with the release in `extend_to`); they never change again (module invariants), so
        // a shared slice of them is sound for as long as `self` lives (the mapping is only
        // unmapped in `drop`).
        Some(unsafe { std::slice::from_raw_parts(self.start as *const u8, length) })
    }

    /// Bytes copied so far.
    pub fn copied_bytes(&self) -> usize {
        self.copied.load(Ordering::Acquire)
    }

    /// Copies `committed` (the file's first bytes, all of a committed snapshot's records)
    /// past what is already copied; bytes already copied are not read again. Returns whether
    /// the copy now holds all of `committed`: not when another thread is extending and `wait`
    /// is false, nor once growing has failed (then for good).
    pub fn extend_to(&self, committed: &[u8], wait: bool) -> bool {
        if committed.len() <= self.copied.load(Ordering::Acquire) {
            return true;
        }
        if self.failed.load(Ordering::Relaxed) {
            return false;
        }
        let mut writable = match self.extending.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poison)) => poison.into_inner(),
            Err(TryLockError::WouldBlock) if wait => self
                .extending
                .lock()
                .unwrap_or_else(|poison| poison.into_inner()),
            Err(TryLockError::WouldBlock) => return false,
        };
        match self.extend_locked(committed, &mut writable) {
            Ok(()) => true,
            Err(_) => {
                self.failed.store(true, Ordering::Relaxed);
                false
            }
        }
    }

    /// `extend_to` with the `extending` lock held (`writable` is its value).
    fn extend_locked(&self, committed: &[u8], writable: &mut usize) -> std::io::Result<()> {
        let done = self.copied.load(Ordering::Acquire);
        if committed.len() <= done {
            return Ok(());
        }
        if committed.len() > self.capacity {
            return Err(std::io::Error::other(
                "vector file longer than its memory copy's reservation",
            ));
        }
        if committed.len() > *writable {
            let end = committed
                .len()
                .next_multiple_of(HUGE_PAGE_BYTES)
                .min(self.capacity);
            self.make_writable(*writable, end)?;
            *writable = end;
        }
        let fresh = &committed[done..];
        // SAFETY: `start + done .. start + committed.len()` lies in the writable prefix (made
        // so above) and past `copied`, and `prefix` never hands out a slice past `copied`, so
        // no live reference overlaps it; only this thread writes there (the `extending` lock
        // is held). `fresh` is a shared slice, so it cannot be this private region's unshared
        // tail that we write.
        unsafe {
            std::ptr::copy_nonoverlapping(
                fresh.as_ptr(),
                (self.start + done) as *mut u8,
                fresh.len(),
            );
        }
        self.copied.store(committed.len(), Ordering::Release);
        Ok(())
    }

    /// Makes `from..to` of the reservation readable and writable and asks for huge pages.
    fn make_writable(&self, from: usize, to: usize) -> std::io::Result<()> {
        let address = (self.start + from) as *mut libc::c_void;
        // SAFETY: `from..to` lies inside this object's reservation (`to <= capacity`), which
        // nothing else maps or references; changing its protection from none to read-write
        // affects only bytes no slice refers to yet.
        let outcome =
            unsafe { libc::mprotect(address, to - from, libc::PROT_READ | libc::PROT_WRITE) };
        if outcome != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: advice on the same range; it changes how the kernel backs the memory, never
        // its contents. A refusal (no transparent huge pages) leaves it on small pages.
        unsafe {
            libc::madvise(address, to - from, libc::MADV_HUGEPAGE);
        }
        Ok(())
    }
}

impl Drop for MemoryCopy {
    fn drop(&mut self) {
        let (base, length) = self.mapping;
        // SAFETY: the mapping was created in `reserve` with exactly this base and length, and
        // every slice handed out borrows `self`, so none outlives this call.
        unsafe {
            libc::munmap(base as *mut libc::c_void, length);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_only_what_is_new_and_hands_out_only_what_is_copied() {
        let copy = MemoryCopy::reserve(64 << 20).expect("reserve");
        assert!(copy.prefix(0).is_some());
        assert!(copy.prefix(1).is_none());
        let file: Vec<u8> = (0..5 * HUGE_PAGE_BYTES + 123)
            .map(|index| (index % 251) as u8)
            .collect();
        assert!(copy.extend_to(&file[..1_000], true));
        assert_eq!(copy.prefix(1_000), Some(&file[..1_000]));
        assert!(copy.prefix(1_001).is_none());
        // Bytes already copied are not read again: a source whose prefix differs still
        // leaves the copy's prefix as first copied.
        let mut changed = file.clone();
        changed[..1_000].fill(0);
        assert!(copy.extend_to(&changed, true));
        assert_eq!(copy.copied_bytes(), file.len());
        let whole = copy.prefix(file.len()).expect("copied");
        assert_eq!(&whole[..1_000], &file[..1_000]);
        assert_eq!(&whole[1_000..], &file[1_000..]);
        // A shorter source changes nothing.
        assert!(copy.extend_to(&file[..10], false));
        assert_eq!(copy.copied_bytes(), file.len());
    }

    #[test]
    fn a_file_longer_than_the_reservation_is_refused_and_the_copy_stops_growing() {
        let copy = MemoryCopy::reserve(2 * HUGE_PAGE_BYTES as u64).expect("reserve");
        let file = vec![7_u8; 2 * HUGE_PAGE_BYTES + 1];
        assert!(copy.extend_to(&file[..HUGE_PAGE_BYTES], true));
        assert!(!copy.extend_to(&file, true));
        assert_eq!(copy.copied_bytes(), HUGE_PAGE_BYTES);
        // Failed for good: even a length that would fit is not copied any more, and what
        // was copied is still served.
        assert!(!copy.extend_to(&file[..2 * HUGE_PAGE_BYTES], true));
        assert_eq!(copy.copied_bytes(), HUGE_PAGE_BYTES);
        assert!(copy.extend_to(&file[..10], false));
        assert_eq!(copy.prefix(HUGE_PAGE_BYTES), Some(&file[..HUGE_PAGE_BYTES]));
    }

    #[test]
    fn an_extension_under_way_elsewhere_is_waited_for_only_when_asked() {
        let copy = MemoryCopy::reserve(4 * HUGE_PAGE_BYTES as u64).expect("reserve");
        let file = vec![3_u8; HUGE_PAGE_BYTES];
        let guard = copy.extending.lock().expect("not poisoned");
        assert!(!copy.extend_to(&file, false));
        assert_eq!(copy.copied_bytes(), 0);
        drop(guard);
        assert!(copy.extend_to(&file, false));
        assert_eq!(copy.copied_bytes(), file.len());
    }

    #[test]
    fn readers_on_other_threads_see_whole_prefixes_while_it_grows() {
        let copy = MemoryCopy::reserve(16 << 20).expect("reserve");
        let file: Vec<u8> = (0..8 << 20).map(|index| (index % 253) as u8).collect();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for step in 1..=64 {
                    assert!(copy.extend_to(&file[..step * (file.len() / 64)], true));
                }
            });
            scope.spawn(|| {
                let mut seen = 0;
                while seen < file.len() {
                    seen = copy.copied_bytes();
                    let prefix = copy.prefix(seen).expect("published prefix");
                    assert_eq!(prefix, &file[..seen]);
                }
            });
        });
    }
}
