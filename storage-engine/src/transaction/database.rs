//! The database handle: opening a file, starting transactions, statistics, integrity, and
//! giving free pages' disk blocks back.
//!
//! Invariants: one write transaction at a time; any number of read transactions, each
//! pinning the snapshot committed when it began (`SharedState::readers` counts them by
//! transaction id, so freed pages wait for them). The handle and its transactions share
//! one `Shared` through an `Arc`, so transactions are `'static` and may outlive a borrow.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::free_space::release::{self, Released};
use crate::io::{FileIo, PageIo};
use crate::page_store::layout::META_PAGE_COUNT;
use crate::page_store::meta::{self, CommitState, SlotContent};
use crate::page_store::pager::Pager;
use crate::transaction::free_tree;
use crate::transaction::integrity::{self, IntegrityReport};
use crate::transaction::options::{Options, SyncMode};
use crate::transaction::read_transaction::ReadTransaction;
use crate::transaction::shared::Shared;
use crate::transaction::write_transaction::WriteTransaction;

/// A page store file, open.
pub struct Database {
    shared: Arc<Shared>,
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
    /// Pages holding live data (commit slots, trees, overflow runs, the free tree).
    pub used_pages: u64,
    /// Pages free for reuse (some may wait for old snapshots to end).
    pub free_pages: u64,
    /// Id of the last committed transaction.
    pub transaction_id: u64,
    /// Number of named trees.
    pub tree_count: u64,
}

impl Stats {
    /// Bytes of the file that hold no live data: the free pages and the grown tail past the
    /// high-water mark (what `usedDatabaseSize` leaves out).
    pub fn unused_bytes(&self) -> u64 {
        self.file_bytes
            .saturating_sub(self.used_pages.saturating_mul(self.page_bytes))
    }
}

impl Database {
    /// Opens (or creates, with `options.create`) the page store at `path`.
    pub fn open(path: &Path, options: Options) -> Result<Database> {
        options.validate()?;
        let io = FileIo::open(path, options.create, options.maximum_size_bytes)?;
        Database::open_with_io(Box::new(io), options)
    }

    /// Opens a page store over any I/O backend (the simulated one in tests).
    pub fn open_with_io(io: Box<dyn PageIo>, options: Options) -> Result<Database> {
        options.validate()?;
        let pager = Pager::new(io, options.page_bytes);
        let committed = match read_slots(&pager)? {
            Some(state) => state,
            None => initialize(&pager, &options)?,
        };
        if committed.high_water_pages > pager.file_pages()
            || committed.high_water_pages < META_PAGE_COUNT
        {
            return Err(Error::corrupted(
                committed.slot(),
                "high-water mark outside the file",
            ));
        }
        let records = free_tree::read_all(&pager, committed.free_tree, committed.high_water_pages)?;
        let listed: u64 = records.values().map(|pages| pages.len() as u64).sum();
        if listed != committed.free_pages {
            return Err(Error::corrupted(
                committed.slot(),
                "free-page count disagrees",
            ));
        }
        Ok(Database {
            shared: Arc::new(Shared::opened(pager, options, committed, records)),
        })
    }

    /// Whether this handle is the only holder of the open file: no read or write
    /// transaction of it is alive. Closing the handle then closes the file (and lets go of
    /// its lock) at once.
    pub fn is_unshared(&self) -> bool {
        Arc::strong_count(&self.shared) == 1
    }

    /// Starts a read transaction on the last committed snapshot.
    pub fn begin_read(&self) -> ReadTransaction {
        ReadTransaction::begin(Arc::clone(&self.shared))
    }

    /// Starts the write transaction; `Error::WriteInProgress` if one is open.
    pub fn begin_write(&self) -> Result<WriteTransaction> {
        WriteTransaction::begin(Arc::clone(&self.shared))
    }

    /// Statistics as of the last commit.
    pub fn stats(&self) -> Stats {
        let state = self.shared.lock();
        let committed = state.committed;
        Stats {
            page_bytes: self.shared.options.page_bytes as u64,
            file_bytes: self.shared.pager.io().length(),
            allocated_pages: committed.high_water_pages,
            used_pages: committed.high_water_pages - committed.free_pages,
            free_pages: committed.free_pages,
            transaction_id: committed.transaction_id,
            tree_count: committed.tree_count,
        }
    }

    /// Walks every tree and the free tree of the last committed snapshot, verifying every
    /// checksum, key order, and that each page is used, reusable or pending exactly once.
    /// When no write transaction is open, also checks that the in-memory allocator state
    /// (reusable and pending records) lists exactly the free tree's records.
    pub fn check_integrity(&self) -> Result<IntegrityReport> {
        let read = self.begin_read();
        let state = read.commit_state();
        let report = integrity::check(&self.shared.pager, state)?;
        let in_memory = {
            let shared = self.shared.lock();
            let current =
                !shared.write_open && shared.committed.transaction_id == state.transaction_id;
            current.then(|| {
                let mut records = shared.free.reusable.clone();
                for pending in shared.free.pending.values() {
                    records.extend(pending.iter().map(|(key, pages)| (*key, pages.clone())));
                }
                records
            })
        };
        if let Some(in_memory) = in_memory {
            let on_disk =
                free_tree::read_all(&self.shared.pager, state.free_tree, state.high_water_pages)?;
            if in_memory != on_disk {
                return Err(Error::corrupted(
                    state.slot(),
                    "allocator state disagrees with the free tree",
                ));
            }
        }
        Ok(report)
    }

    /// Gives back the disk blocks of every reusable free page not given back yet, when
    /// there are at least `minimum_pages` of them (else gives back nothing), and counts the
    /// free pages a live snapshot still holds (a caller that wants every block back calls
    /// again once they are 0). Fails with
    /// [`crate::Error::WriteInProgress`] while a write transaction is open (call it again
    /// when the writer is done).
    ///
    /// Holding the write transaction for the whole call is what makes it safe: no writer
    /// can take and rewrite a page while its blocks are being given back (see
    /// `free_space::release`).
    pub fn release_free_pages(&self, minimum_pages: u64) -> Result<Released> {
        let transaction = self.begin_write()?;
        let (already, pending_pages) = {
            let state = self.shared.lock();
            let pending_pages = release::pending_pages(&state.free);
            (state.free.blocks_released.clone(), pending_pages)
        };
        let (keys, mut pages) = transaction
            .with_untaken_records(|records| release::unreleased_pages(records, &already));
        if (pages.len() as u64) < minimum_pages.max(1) {
            return Ok(Released {
                held_back_pages: pages.len() as u64,
                pending_pages,
                ..Released::default()
            });
        }
        pages.sort_unstable();
        let runs = release::give_back(&self.shared.pager, &pages)?;
        release::remember_released(&mut self.shared.lock().free.blocks_released, keys);
        transaction.abort();
        Ok(Released {
            pages: pages.len() as u64,
            runs,
            held_back_pages: 0,
            pending_pages,
        })
    }
}

/// The newest valid commit slot, `None` for a blank file, `Corrupted` if no slot is valid.
fn read_slots(pager: &Pager) -> Result<Option<CommitState>> {
    let page_bytes = pager.page_bytes();
    let io = pager.io();
    let mut newest: Option<CommitState> = None;
    let mut blank = true;
    for slot in 0..META_PAGE_COUNT {
        let content = match io.read(slot * page_bytes as u64, page_bytes) {
            Some(bytes) => meta::decode(bytes, page_bytes),
            None if io.length() == 0 => SlotContent::Blank,
            None => SlotContent::Invalid,
        };
        match content {
            SlotContent::Valid(state) => {
                blank = false;
                if newest.is_none_or(|newest| state.transaction_id > newest.transaction_id) {
                    newest = Some(state);
                }
            }
            SlotContent::Blank => {}
            SlotContent::Invalid => blank = false,
            SlotContent::Incompatible(what) => return Err(Error::Incompatible(what)),
        }
    }
    match newest {
        Some(state) => Ok(Some(state)),
        None if blank => Ok(None),
        None => Err(Error::corrupted(0, "no valid commit slot")),
    }
}

/// Writes the first commit slot of a new file.
fn initialize(pager: &Pager, options: &Options) -> Result<CommitState> {
    let page_bytes = options.page_bytes as u64;
    let initial = options.initial_size_bytes.max(META_PAGE_COUNT * page_bytes);
    pager.io().grow(initial.div_ceil(page_bytes) * page_bytes)?;
    let state = CommitState::empty();
    pager.io().write(
        state.slot() * page_bytes,
        &meta::encode(&state, options.page_bytes),
    )?;
    if options.sync_mode == SyncMode::Full {
        pager.io().sync()?;
    }
    Ok(state)
}
