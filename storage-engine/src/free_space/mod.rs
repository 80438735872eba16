//! Layer 3, free space: which pages are free, who may take them, and giving their disk blocks
//! back to the file system.
//!
//! What it does:
//! - `free_list`: the format of the free tree's records (a key of transaction id and sequence,
//!   a value of up to `FREE_RECORD_PAGES_MAX` page numbers);
//! - `free_pages`: the in-memory mirror of those records (reusable now, or pending until old
//!   snapshots end) and the write transaction's `Allocator`, which takes whole records or
//!   grows the file;
//! - `release`: the choice of pages and runs whose blocks `Database::release_free_pages` gives
//!   back, and the set of records already given back.
//!
//! May import: `page_store/`, `io/` (through the pager) and `crate::error`. Reading and
//! writing the free tree itself needs the B+tree, so it lives above, in
//! `transaction::free_tree`; the B+tree's editor in turn takes its pages from the
//! `Allocator` here.
//!
//! Invariants:
//! - a page freed by transaction `T` stays pending until no snapshot older than `T` is alive;
//!   a page allocated and freed within one write transaction is reusable at once;
//! - a page is listed in one record at most, and every listed page lies in
//!   `META_PAGE_COUNT..high_water`;
//! - an abort gives back exactly the records the transaction took, unchanged;
//! - only reusable pages (no snapshot reads them) have their blocks given back.

pub mod free_list;
pub mod free_pages;
pub mod release;
