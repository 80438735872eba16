//! Page-sized buffers recycled on the thread that writes them.
//!
//! Why: every leaf a merge rewrites is built in a fresh page buffer, and every buffer is
//! dropped once its page is written (by a spill or a commit), hundreds of thousands of times
//! per large batch. Taking each from the allocator zeroed cost a page fault or a zeroing of
//! fresh memory every few pages (measured: about 3 % of an ingest's CPU, most of it in the
//! kernel clearing pages the allocator had just handed back). Written buffers are kept here
//! instead and handed out again, zeroed.
//!
//! Only spills recycle: a spill writes and drops up to the transaction's whole budget of
//! changed pages, which the rest of the transaction builds again. A commit drops its buffers
//! and empties the pool ([`release`]), so an idle thread holds none.
//!
//! Invariants: a buffer handed out is zeroed (or a copy) and exactly the size asked for; at
//! most [`POOLED_BUFFERS_MAX`] buffers wait per thread, and none once its last transaction
//! committed.

use std::cell::RefCell;

/// Buffers one thread keeps for reuse at most: 32 MiB of 4 KiB pages, a shard transaction's
/// default budget of changed pages (the server's `SHARD_WRITE_MEMORY_BYTES_DEFAULT`).
pub const POOLED_BUFFERS_MAX: usize = 8_192;

thread_local! {
    /// Buffers written and waiting for reuse, of any page size.
    static POOLED: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
}

/// A zeroed buffer of `page_bytes`, recycled when one of that size waits.
pub fn zeroed(page_bytes: usize) -> Box<[u8]> {
    let recycled = POOLED.with_borrow_mut(|pooled| match pooled.last() {
        Some(last) if last.len() == page_bytes => pooled.pop(),
        _ => None,
    });
    match recycled {
        Some(mut buffer) => {
            buffer.fill(0);
            buffer
        }
        None => vec![0u8; page_bytes].into_boxed_slice(),
    }
}

/// A buffer holding a copy of `bytes`, recycled when one of that size waits.
pub fn copied(bytes: &[u8]) -> Box<[u8]> {
    let recycled = POOLED.with_borrow_mut(|pooled| match pooled.last() {
        Some(last) if last.len() == bytes.len() => pooled.pop(),
        _ => None,
    });
    match recycled {
        Some(mut buffer) => {
            buffer.copy_from_slice(bytes);
            buffer
        }
        None => bytes.into(),
    }
}

/// Drops every buffer waiting on this thread.
pub fn release() {
    POOLED.with_borrow_mut(|pooled| *pooled = Vec::new());
}

/// Keeps `buffer` for reuse (it is dropped when the pool is full).
pub fn recycle(buffer: Box<[u8]>) {
    POOLED.with_borrow_mut(|pooled| {
        if pooled.len() < POOLED_BUFFERS_MAX {
            pooled.push(buffer);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycled_buffers_come_back_zeroed_or_copied_and_only_at_their_size() {
        let mut written = zeroed(64);
        written.fill(7);
        let address = written.as_ptr();
        recycle(written);
        let again = zeroed(64);
        assert_eq!(again.as_ptr(), address, "the written buffer is reused");
        assert!(
            again.iter().all(|byte| *byte == 0),
            "a reused buffer is zeroed"
        );
        recycle(again);
        let other = zeroed(128);
        assert_eq!(other.len(), 128);
        assert_ne!(
            other.as_ptr(),
            address,
            "a buffer of another size is not handed out"
        );
        let copy = copied(&[3u8; 64]);
        assert_eq!(copy.as_ptr(), address);
        assert!(copy.iter().all(|byte| *byte == 3));
    }

    #[test]
    fn the_pool_keeps_at_most_its_bound() {
        for _ in 0..POOLED_BUFFERS_MAX + 10 {
            recycle(vec![1u8; 16].into_boxed_slice());
        }
        let held = POOLED.with_borrow(Vec::len);
        assert_eq!(held, POOLED_BUFFERS_MAX);
        release();
        assert_eq!(
            POOLED.with_borrow(Vec::len),
            0,
            "a release empties the pool"
        );
    }
}
