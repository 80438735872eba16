//! Layer 5, transactions: the database handle, read snapshots, the write transaction and the
//! commit protocol, and the operations built on them (merges, repacking, the integrity check).
//!
//! What it does:
//! - `database`: opening a file, starting transactions, statistics, the integrity check and
//!   `release_free_pages`; `options`: how a database is opened;
//! - `shared`: what the handle and its transactions share (pager, options, and behind one
//!   mutex the committed state, the live readers and the free pages);
//! - `read_transaction`: pinned snapshots and their trees, lookups and ranges;
//! - `write_transaction` over `write_state`: copy-on-write changes to named trees;
//!   `merge_writer`: sorted merges leaf by leaf; `repack`: rewriting a tree into full pages;
//! - `commit`: encode trees, update the free tree (`free_tree`), write, sync, write the slot;
//!   `spill`: writing a large transaction's pages before its commit;
//! - `integrity`: the full walk that re-hashes every page and accounts for each one;
//! - `compacted_copy`: a read snapshot written again, in full leaves, into a new file.
//!
//! May import: every layer below (`btree/`, `free_space/`, `page_store/`, `io/`) and
//! `crate::error`. Nothing below imports from here; `vector/` and the crate's users reach it
//! through the re-exports in `lib.rs`.
//!
//! Invariants:
//! - one write transaction at a time; each read transaction pins the snapshot committed when
//!   it began, and the pages that snapshot reaches are not reused while it lives;
//! - nothing a write transaction writes is reachable from the committed state until its commit
//!   slot is written, so a crash reopens to the previous commit or to this one;
//! - a failed sync poisons the database until it is reopened.

pub mod commit;
pub mod compacted_copy;
pub mod database;
pub mod free_tree;
pub mod integrity;
pub mod merge_writer;
pub mod options;
pub mod read_transaction;
pub mod repack;
pub mod shared;
pub mod spill;
pub mod write_state;
pub mod write_transaction;
