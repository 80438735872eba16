//! The state of the open write transaction: its base commit, its dirty nodes, its allocator
//! and its table of trees. `write_transaction.rs` changes it; `commit.rs` and `spill.rs` write
//! it out, so it sits below all three.
//!
//! Invariants: every dirty node belongs to a tree of `trees` (or, during commit, to the catalog
//! or the free tree); a tree's `version` is bumped by every change that searched from its root,
//! so a leaf cache filled at an older version is never used; once `failed` is set the state
//! can only be aborted.

use std::collections::{BTreeMap, HashMap};

use crate::btree::catalog::TreeRoot;
use crate::btree::node::NodeBuffer;
use crate::free_space::free_pages::{Allocator, PageHashBuilder};
use crate::page_store::meta::CommitState;

/// A tree as this transaction sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TreeSlot {
    pub tree: TreeRoot,
    pub changed: bool,
    pub deleted: bool,
    /// Bumped by every change that searched from the root (see `btree::leaf_cache`).
    pub version: u64,
}

/// Everything the transaction changed so far.
pub(crate) struct WriteState {
    pub base: CommitState,
    pub dirty: HashMap<u64, NodeBuffer, PageHashBuilder>,
    pub allocator: Allocator,
    pub trees: BTreeMap<Vec<u8>, TreeSlot>,
    pub failed: bool,
    pub finished: bool,
    /// Whether changed pages were written early (`spill.rs`): pages this transaction
    /// allocated may then be read from the mapping, and may be rewritten before it ends.
    pub spilled: bool,
    /// While set, a leaf filled by appends at a tree's right edge splits once its cells pass
    /// this many bytes (a repack's fill factor, see `repack.rs`).
    pub append_fill_bytes: Option<usize>,
}
