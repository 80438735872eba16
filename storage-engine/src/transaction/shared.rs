//! What the database handle and its transactions share: the pager, the options, and behind
//! one mutex the last committed state, the live readers and the free pages.
//!
//! Invariants: `readers` counts every live read transaction under the transaction id of its
//! snapshot, and holds no zero count; `write_open` is true exactly while a write transaction
//! lives (at most one); `poisoned`, once set by a failed sync, stays set until the file is
//! reopened; `free` lists exactly the pages the free tree of `committed` lists (minus the
//! records an open write transaction took), reusable now or waiting for `readers`.
//!
//! Each transaction holds the `Shared` through an `Arc`, so transactions are `'static`, and
//! this file sits below `database.rs` and both transactions: none of them imports another to
//! reach it.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use crate::error::Result;
use crate::free_space::free_pages::{FreePages, Records};
use crate::page_store::meta::CommitState;
use crate::page_store::pager::Pager;
use crate::transaction::options::{Options, SyncMode};

/// What the database handle and its transactions share.
pub(crate) struct Shared {
    pub pager: Pager,
    pub options: Options,
    state: Mutex<SharedState>,
}

/// The mutable part of `Shared`.
pub(crate) struct SharedState {
    /// The last committed state.
    pub committed: CommitState,
    /// Live read transactions by snapshot transaction id.
    pub readers: BTreeMap<u64, usize>,
    /// Free pages, reusable or waiting for readers.
    pub free: FreePages,
    /// Whether a write transaction is open.
    pub write_open: bool,
    /// Whether a sync failed (the disk state is unknown until reopened).
    pub poisoned: bool,
}

impl Shared {
    /// The shared part of a database just opened at `committed`, whose free tree lists
    /// `records`.
    pub fn opened(
        pager: Pager,
        options: Options,
        committed: CommitState,
        records: Records,
    ) -> Shared {
        let state = SharedState {
            committed,
            readers: BTreeMap::new(),
            // No reader is alive after opening: every record is reusable at once.
            free: FreePages {
                reusable: records,
                pending: BTreeMap::new(),
                blocks_released: Default::default(),
            },
            write_open: false,
            poisoned: false,
        };
        Shared {
            pager,
            options,
            state: Mutex::new(state),
        }
    }

    /// The shared state; a panic elsewhere never leaves it half-changed, so a poisoned
    /// lock is taken over.
    pub fn lock(&self) -> MutexGuard<'_, SharedState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Syncs unless the sync mode says not to.
    pub fn sync(&self) -> Result<()> {
        match self.options.sync_mode {
            SyncMode::Full => self.pager.io().sync(),
            SyncMode::None => Ok(()),
        }
    }
}
