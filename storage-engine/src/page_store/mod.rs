//! Layer 2, pages in a file: the on-disk layout, verified reads of pages, the commit slots.
//!
//! What it does:
//! - `layout`: every offset, size and limit of the file format, as named constants checked by
//!   `const` assertions (`DESIGN.md` draws them);
//! - `bytes`, `checksum`: little-endian fields and the page-number-seeded xxh3 checksums;
//! - `leaf_cell`: the wide and compact encodings of a leaf cell;
//! - `page`: read-only views of leaf and branch pages, and the pointers (page + checksum)
//!   that name them;
//! - `pager`: verified access to pages through the `io::PageIo` mapping;
//! - `verified_pages`: the bitmap of pages already verified, growing with the file;
//! - `meta`: the two commit slots (pages 0 and 1) that name a committed state;
//! - `page_buffers`: the page-sized buffers dirty nodes are built in, recycled per thread.
//!
//! May import: `io/` and `crate::error` only. It knows nothing of free space, trees or
//! transactions: those layers (`free_space/`, `btree/`, `transaction/`) sit above it.
//!
//! Invariants:
//! - a page is handed out only once its content matched its own checksum and that checksum
//!   equals the one its pointer carries (Merkle), so damage is `Error::Corrupted`, never a
//!   wrong answer;
//! - pages 0 and 1 are the commit slots, so page number 0 (`NO_PAGE`) never names a tree page;
//! - every accessor checks its offsets and returns `Error::Corrupted` instead of panicking.

pub mod bytes;
pub mod checksum;
pub mod layout;
pub mod leaf_cell;
pub mod meta;
pub mod page;
pub mod page_buffers;
pub mod pager;
pub mod verified_pages;
