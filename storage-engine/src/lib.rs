//! The mmap page store: a crash-safe copy-on-write B+tree with snapshots, and the on-disk
//! HNSW vector store built on it.
//!
//! A synchronous library: it knows nothing of the runtime, sockets or HTTP.
//!
//! # Page store in brief
//!
//! ```no_run
//! use std::ops::Bound;
//! use storage_engine::{Database, Direction, Options};
//!
//! # fn main() -> storage_engine::Result<()> {
//! let database = Database::open("shard.pages".as_ref(), Options::default())?;
//! let write = database.begin_write()?;
//! {
//!     let documents = write.create_tree("documents")?;
//!     documents.put(b"id:1", b"{\"title\":\"a\"}")?;
//! }
//! write.commit()?;
//!
//! let read = database.begin_read();
//! if let Some(documents) = read.open_tree("documents")? {
//!     assert!(documents.get(b"id:1")?.is_some());
//!     for entry in documents.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
//!         let (_key, _value) = entry?;
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! `DESIGN.md` beside this crate's manifest draws the file format and the commit protocol.

mod bytes;
mod catalog;
mod checksum;
mod commit;
mod cursor;
mod database;
mod editor;
mod error;
mod free_list;
mod free_pages;
mod integrity;
pub mod io;
mod layout;
mod leaf_cache;
mod merge_writer;
mod meta;
mod node;
mod options;
mod page;
mod page_buffers;
mod pager;
mod path_lookup;
mod read_transaction;
mod release;
mod repack;
mod spill;
mod tree_fill;
mod write_transaction;

pub mod vector;

pub use database::{Database, IntegrityReport, Stats};
pub use error::{Error, Result};
pub use layout::{
    KEY_BYTES_MAX, PAGE_BYTES_MAX, PAGE_BYTES_MIN, VALUE_BYTES_MAX, stored_entry_bytes,
};
pub use merge_writer::{MERGE_LEAF_FILL_PERCENT, MergeWriter};
pub use options::{
    INITIAL_SIZE_BYTES_DEFAULT, MAXIMUM_SIZE_BYTES_DEFAULT, Options, PAGE_BYTES_DEFAULT, SyncMode,
};
pub use path_lookup::PathLookup;
pub use read_transaction::{ReadRange, ReadTransaction, ReadTree};
pub use release::Released;
pub use repack::{INTERRUPT_CHECK_ENTRIES, REPACK_LEAF_FILL_PERCENT, Repacked};
pub use tree_fill::TreeFill;
pub use write_transaction::{WriteRange, WriteTransaction, WriteTree};

/// Order of an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Ascending key order.
    Forward,
    /// Descending key order.
    Backward,
}
