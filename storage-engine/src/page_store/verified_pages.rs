//! The pages whose checksum was verified since the file was opened: one bit per page, in
//! chunks allocated on first use, found through a directory that grows with the file.
//!
//! The directory has [`SEGMENTS`] segments; segment `s` holds `2^s` chunks, so chunk `c`
//! lives in segment `ilog2(c + 1)` at `c + 1 - 2^s`. A segment's chunk slots are allocated
//! when the first page it covers is verified. A store of a few pages holds one segment of
//! one chunk, and a store of any length reachable in the address space fits the directory,
//! so the memory follows the file's length, not its maximum size.
//!
//! Invariants: a chunk and a segment, once allocated, are never freed or moved before the
//! bitmap drops (`OnceLock`), so lock-free readers may hold references to them; bits are
//! set and cleared with atomic operations, and only hints: a missing bit costs a checksum.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Words of the bitmap allocated together, on first use: 4 KiB, covering 128 MiB of 4 KiB
/// pages. Small, because a server of thousands of small stores holds one chunk per store
/// (32 KiB chunks were a fifth of an open five-document shard's memory).
const CHUNK_WORDS: usize = 512;
/// Pages one chunk covers.
const CHUNK_PAGES: u64 = CHUNK_WORDS as u64 * 64;
/// Segments of the directory: `2^SEGMENTS - 1` chunks of `CHUNK_PAGES` pages, more pages
/// than the address space holds.
const SEGMENTS: usize = 44;

type Chunk = Box<[AtomicU64]>;
type Segment = Box<[OnceLock<Chunk>]>;

/// One bit per page: set once the page's checksum matched (see the module documentation).
pub struct VerifiedPages {
    segments: [OnceLock<Segment>; SEGMENTS],
}

impl Default for VerifiedPages {
    fn default() -> Self {
        VerifiedPages {
            segments: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl VerifiedPages {
    /// Whether `page` was verified (and not forgotten since).
    pub fn contains(&self, page: u64) -> bool {
        self.word(page, false)
            .is_some_and(|word| word.load(Ordering::Relaxed) & bit(page) != 0)
    }

    /// Remembers that `page` was verified.
    pub fn insert(&self, page: u64) {
        if let Some(word) = self.word(page, true) {
            word.fetch_or(bit(page), Ordering::Relaxed);
        }
    }

    /// Forgets that `page` was verified: it is being rewritten.
    pub fn remove(&self, page: u64) {
        if let Some(word) = self.word(page, false) {
            word.fetch_and(!bit(page), Ordering::Relaxed);
        }
    }

    /// The word holding `page`'s bit, if its chunk exists (or `create` makes it).
    fn word(&self, page: u64, create: bool) -> Option<&AtomicU64> {
        let chunk_number = (page / CHUNK_PAGES).checked_add(1)?;
        let segment_number = chunk_number.ilog2() as usize;
        let within = usize::try_from(chunk_number - (1u64 << segment_number)).ok()?;
        let segment = self.segments.get(segment_number)?;
        let segment = if create {
            segment.get_or_init(|| {
                (0..1usize << segment_number)
                    .map(|_| OnceLock::new())
                    .collect()
            })
        } else {
            segment.get()?
        };
        let chunk = segment.get(within)?;
        let words = if create {
            chunk.get_or_init(|| (0..CHUNK_WORDS).map(|_| AtomicU64::new(0)).collect())
        } else {
            chunk.get()?
        };
        words.get(((page % CHUNK_PAGES) / 64) as usize)
    }
}

fn bit(page: u64) -> u64 {
    1u64 << (page % 64)
}

#[cfg(test)]
mod tests {
    use super::{CHUNK_PAGES, VerifiedPages};

    #[test]
    fn pages_in_every_segment_are_remembered_and_forgotten_alone() {
        let verified = VerifiedPages::default();
        let pages = [
            0,
            63,
            64,
            CHUNK_PAGES - 1,
            CHUNK_PAGES,
            3 * CHUNK_PAGES + 5,
            1_000 * CHUNK_PAGES + 17,
            (1 << 36) + 3,
        ];
        for page in pages {
            assert!(!verified.contains(page));
            verified.insert(page);
            assert!(verified.contains(page), "page {page}");
        }
        for page in pages {
            assert!(!verified.contains(page + 1) || pages.contains(&(page + 1)));
        }
        verified.remove(CHUNK_PAGES);
        assert!(!verified.contains(CHUNK_PAGES));
        assert!(verified.contains(CHUNK_PAGES - 1));
        assert!(verified.contains(3 * CHUNK_PAGES + 5));
    }

    #[test]
    fn an_empty_bitmap_allocates_nothing() {
        let verified = VerifiedPages::default();
        verified.remove(12);
        assert!(!verified.contains(12));
        assert!(
            verified
                .segments
                .iter()
                .all(|segment| segment.get().is_none())
        );
    }
}
