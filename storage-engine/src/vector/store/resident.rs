//! A memo of the pages of one vector file seen resident, so that hot re-scoring does not ask
//! the kernel (`mincore`, one system call per record) again for pages it already found in
//! memory.
//!
//! Invariant: a set bit only means "was resident when checked". The memo is a hint: a page
//! evicted since is still read correctly through the mapping (a page fault instead of a batched
//! io_uring read), so it can change how fast a record is read, never what is read.

use super::uring::{is_resident, page_bytes};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Pages per memo word.
const PAGES_PER_WORD: usize = 64;

/// The memo of one file.
#[derive(Debug, Default)]
pub struct ResidentPages {
    words: RwLock<Vec<AtomicU64>>,
}

impl ResidentPages {
    /// Nothing seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the bytes `bytes` of the mapping, at file offset `offset`, are resident: from
    /// the memo when every page under them was seen resident, else from `mincore` (and a
    /// resident answer is remembered).
    pub fn check(&self, offset: u64, bytes: &[u8]) -> bool {
        let page = page_bytes() as u64;
        let first = (offset / page) as usize;
        let last = ((offset + bytes.len().max(1) as u64 - 1) / page) as usize;
        if let Ok(words) = self.words.read()
            && (first..=last).all(|page| is_set(&words, page))
        {
            return true;
        }
        if !is_resident(bytes) {
            return false;
        }
        if let Ok(mut words) = self.words.write() {
            let needed = last / PAGES_PER_WORD + 1;
            if words.len() < needed {
                words.resize_with(needed, || AtomicU64::new(0));
            }
            for page in first..=last {
                words[page / PAGES_PER_WORD]
                    .fetch_or(1 << (page % PAGES_PER_WORD), Ordering::Relaxed);
            }
        }
        true
    }
}

fn is_set(words: &[AtomicU64], page: usize) -> bool {
    words
        .get(page / PAGES_PER_WORD)
        .is_some_and(|word| word.load(Ordering::Relaxed) >> (page % PAGES_PER_WORD) & 1 == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_remembered_and_answers_alike() {
        // Heap memory is resident once written.
        let bytes = vec![7_u8; 3 * page_bytes()];
        let memo = ResidentPages::new();
        let offset = page_bytes() as u64 + 100;
        let slice = &bytes[100..100 + page_bytes()];
        assert!(memo.check(offset, slice));
        let words = memo.words.read().expect("not poisoned");
        assert!(is_set(&words, 1) && is_set(&words, 2) && !is_set(&words, 0));
        drop(words);
        assert!(memo.check(offset, slice));
    }
}
