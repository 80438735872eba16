//! The database handle: opening a file, starting transactions, statistics, integrity.
//!
//! Invariant: one write transaction at a time; any number of read transactions, each
//! pinning the snapshot that was committed when it began.

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::io::PageIo;
use crate::options::Options;
use crate::read_transaction::ReadTransaction;
use crate::write_transaction::WriteTransaction;

/// A page store file, open.
pub struct Database {
    shared: Arc<()>,
}

/// File statistics, as of the last commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Page size in bytes.
    pub page_bytes: u64,
    /// Length of the file in bytes.
    pub file_bytes: u64,
    /// Pages below the high-water mark (in use or free).
    pub allocated_pages: u64,
    /// Pages holding live data (commit slots, trees, overflow runs, the free list).
    pub used_pages: u64,
    /// Pages free for reuse (some may wait for old snapshots to end).
    pub free_pages: u64,
    /// Id of the last committed transaction.
    pub transaction_id: u64,
    /// Number of named trees.
    pub tree_count: u64,
}

/// What the integrity check walked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntegrityReport {
    /// Named trees.
    pub trees: u64,
    /// Key/value entries across all trees.
    pub entries: u64,
    /// Branch and leaf pages (including the catalog's).
    pub tree_pages: u64,
    /// Pages in overflow runs.
    pub overflow_pages: u64,
    /// Pages of the persisted free list itself.
    pub free_list_pages: u64,
    /// Pages listed as free.
    pub free_pages: u64,
}

impl Database {
    /// Opens (or creates, with `options.create`) the page store at `path`.
    pub fn open(path: &Path, options: Options) -> Result<Database> {
        let _ = (path, options);
        todo!()
    }

    /// Opens a page store over any I/O backend (the simulated one in tests).
    pub fn open_with_io(io: Box<dyn PageIo>, options: Options) -> Result<Database> {
        let _ = (io, options);
        todo!()
    }

    /// Starts a read transaction on the last committed snapshot.
    pub fn begin_read(&self) -> ReadTransaction {
        let _ = &self.shared;
        todo!()
    }

    /// Starts the write transaction; `Error::WriteInProgress` if one is open.
    pub fn begin_write(&self) -> Result<WriteTransaction> {
        todo!()
    }

    /// Statistics as of the last commit.
    pub fn stats(&self) -> Stats {
        todo!()
    }

    /// Walks every tree and the free list of the last committed snapshot, verifying every
    /// checksum, key order, and that each page is used exactly once.
    pub fn check_integrity(&self) -> Result<IntegrityReport> {
        todo!()
    }
}
