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
//!
//! # Vector store in brief
//!
//! [`vector`] is the on-disk HNSW vector store, kept in the page store's named trees and in
//! dense vector files beside the page file. Its entry type is [`vector::Graph`]:
//! `Graph::create` in a write transaction (or `Graph::open` on a read snapshot), then
//! `Graph::writer` in a write transaction ([`vector::GraphWriter`]: `insert`, `merge`,
//! `finish`, then commit the transaction) and `Graph::reader` on a read snapshot
//! ([`vector::GraphReader`]: `search` with a [`vector::SearchRequest`], answering
//! [`vector::Hit`]s). `storage_engine::vector` re-exports every type that path needs:
//! `Graph`, `GraphOptions`, `GraphParameters`, `GraphWriter`, `GraphReader`, `SearchRequest`,
//! `Hit`, `Metric`, `VectorError`, the `ReadTrees`/`WriteTrees` seams that `ReadTransaction`
//! and `WriteTransaction` implement, and the file backends (`VectorBackends`, `FileBackends`,
//! `vector_file_paths`).
//!
//! The `shards` crate calls the vector store (`shards/src/vectors/`), through `vector::Graph`.
//!
//! # Layers
//!
//! One folder per layer, each importing only the layers below it (each folder's `mod.rs`
//! says what it does, what it may import and its invariants):
//!
//! 1. `io/`: the `PageIo` seam to the disk (file and simulated backends);
//! 2. `page_store/`: the file layout, verified pages, checksums and commit slots;
//! 3. `free_space/`: free-page records, the allocator, giving disk blocks back;
//! 4. `btree/`: copy-on-write B+trees, cursors, the catalog's format;
//! 5. `transaction/`: `Database`, read and write transactions, the commit protocol;
//! 6. `vector/`: the HNSW vector store, built on the public API of the layers below.
//!
//! `error` is shared by all of them. This file only re-exports the public names, so every
//! `storage_engine::X` path stays where it was.

mod btree;
mod error;
mod free_space;
pub mod io;
mod page_store;
mod transaction;

pub mod vector;

pub use btree::cursor::Direction;
pub use btree::path_lookup::PathLookup;
pub use btree::tree_fill::TreeFill;
pub use error::{Error, Result};
pub use free_space::release::Released;
pub use page_store::layout::{
    KEY_BYTES_MAX, PAGE_BYTES_MAX, PAGE_BYTES_MIN, VALUE_BYTES_MAX, stored_entry_bytes,
};
pub use transaction::compacted_copy::{COPY_WRITE_MEMORY_BYTES, CompactedCopy};
pub use transaction::database::{Database, Stats};
pub use transaction::integrity::IntegrityReport;
pub use transaction::merge_writer::{MERGE_LEAF_FILL_PERCENT, MergeWriter};
pub use transaction::options::{
    INITIAL_SIZE_BYTES_DEFAULT, MAXIMUM_SIZE_BYTES_DEFAULT, Options, PAGE_BYTES_DEFAULT, SyncMode,
};
pub use transaction::read_transaction::prefix_end;
pub use transaction::read_transaction::{ReadRange, ReadTransaction, ReadTree};
pub use transaction::repack::{INTERRUPT_CHECK_ENTRIES, REPACK_LEAF_FILL_PERCENT, Repacked};
pub use transaction::write_transaction::{WriteRange, WriteTransaction, WriteTree};
