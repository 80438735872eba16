//! Which trees of a shard are rewritten in full pages (see
//! `storage_engine::WriteTransaction::repack_tree`): all of them for a compaction, and, once
//! the task queue is idle, those whose pages have become sparse.
//!
//! Batches insert keys all over the word trees, and a full leaf splits into halves, so a tree
//! written in many batches settles with its pages about two-thirds full (0.69 measured on the
//! PyPI shards). A compaction repacks into full pages; the idle policy leaves 10 % of each
//! leaf free, so that the next small batch fills that room instead of splitting every leaf. The idle policy repacks a tree only when
//! its pages are used below [`IDLE_REPACK_FILL_BELOW`], a repack would spare at least
//! [`IDLE_REPACK_SPARE_PAGES_MIN`] pages, and, if this process repacked it before, it has
//! since grown by [`IDLE_REPACK_GROWTH_PERCENT_MIN`] percent of its entries: the repacks of a
//! growing tree form a geometric series, so their total copying stays within a constant
//! factor of the tree's final size, however small the batches.
//!
//! A repack is background work: each tree is rewritten in its own write transaction, and an
//! interrupt flag (set when a task arrives) stops it between two runs of entries, dropping
//! only the tree being copied, so the task waits milliseconds, not the whole copy.
//!
//! Invariants: trees are measured on the last commit; each tree is repacked whole in one
//! commit or not at all; a repack changes no entry; the
//! record of entry counts at the last repack lives in memory only (after a restart every
//! tree may be repacked once more).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use storage_engine::{Database, REPACK_LEAF_FILL_PERCENT, ReadTree, Repacked};

use crate::error::ShardResult;

/// A tree is repacked when idle once the share of its page bytes in use is below this.
pub const IDLE_REPACK_FILL_BELOW: f64 = 0.75;

/// A tree is repacked when idle only if that spares at least this many pages (1 MiB of
/// 4 KiB pages): small trees are not worth a copy.
pub const IDLE_REPACK_SPARE_PAGES_MIN: u64 = 256;

/// Leaves filled to the brim.
const FULL_PAGE_PERCENT: usize = 100;

/// A tree repacked before is repacked when idle again only once its entries have grown by
/// this many percent.
pub const IDLE_REPACK_GROWTH_PERCENT_MIN: u64 = 25;

/// Which trees a repack rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repack {
    /// None: only free pages are given back.
    Nothing,
    /// The trees whose pages have become sparse (the idle policy above).
    Sparse,
    /// Every tree (an index compaction).
    Everything,
}

impl Repack {
    /// How full the repacked leaves get: room for later inserts when idle (see
    /// [`REPACK_LEAF_FILL_PERCENT`]), full pages for a compaction, which a user asks for to
    /// take the least room.
    fn leaf_fill_percent(self) -> usize {
        match self {
            Repack::Nothing | Repack::Everything => FULL_PAGE_PERCENT,
            Repack::Sparse => REPACK_LEAF_FILL_PERCENT,
        }
    }
}

/// Tree name → its entry count when this process last repacked it.
#[derive(Debug, Default)]
pub(super) struct RepackRecord {
    entries: Mutex<HashMap<String, u64>>,
}

impl RepackRecord {
    /// Whether `tree`, named `name`, has grown enough since its last repack (or was never
    /// repacked) for the idle policy.
    fn grew_since_repacked(&self, name: &str, tree: &ReadTree<'_>) -> bool {
        let entries = self
            .entries
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        entries.get(name).is_none_or(|&at_repack| {
            tree.len().saturating_mul(100)
                >= at_repack.saturating_mul(100 + IDLE_REPACK_GROWTH_PERCENT_MIN)
        })
    }

    fn record(&self, name: &str, entry_count: u64) {
        self.entries
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .insert(name.to_owned(), entry_count);
    }
}

/// Whether the idle policy repacks `tree` (named `name`).
fn is_sparse(name: &str, tree: &ReadTree<'_>, record: &RepackRecord) -> ShardResult<bool> {
    if !record.grew_since_repacked(name, tree) {
        return Ok(false);
    }
    let fill = tree.fill()?;
    Ok(fill.fraction() < IDLE_REPACK_FILL_BELOW
        && fill.spare_pages() >= IDLE_REPACK_SPARE_PAGES_MIN)
}

/// The trees `which` selects in the last commit of `database`.
fn chosen_trees(
    database: &Database,
    which: Repack,
    record: &RepackRecord,
) -> ShardResult<Vec<String>> {
    let read = database.begin_read();
    let names = read.tree_names()?;
    match which {
        Repack::Nothing => Ok(Vec::new()),
        Repack::Everything => Ok(names),
        Repack::Sparse => {
            let mut sparse = Vec::new();
            for name in names {
                let Some(tree) = read.open_tree(&name)? else {
                    continue;
                };
                if is_sparse(&name, &tree, record)? {
                    sparse.push(name);
                }
            }
            Ok(sparse)
        }
    }
}

/// What a repack did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepackOutcome {
    /// The trees rewritten, in name order.
    pub repacked: Vec<String>,
    /// Whether the interrupt flag stopped it before every chosen tree was rewritten.
    pub interrupted: bool,
}

/// Rewrites the trees `which` selects, each in its own commit, until `interrupt` is set
/// (see `WriteTransaction::repack_tree`).
pub(super) fn repack(
    database: &Database,
    which: Repack,
    record: &RepackRecord,
    interrupt: &AtomicBool,
) -> ShardResult<RepackOutcome> {
    let mut outcome = RepackOutcome::default();
    for name in chosen_trees(database, which, record)? {
        let write = database.begin_write()?;
        match write.repack_tree(&name, which.leaf_fill_percent(), interrupt)? {
            Repacked::Done => {}
            Repacked::NoSuchTree => continue,
            Repacked::Interrupted => {
                outcome.interrupted = true;
                return Ok(outcome);
            }
        }
        let count = write.open_tree(&name)?.map_or(Ok(0), |tree| tree.len())?;
        write.commit()?;
        record.record(&name, count);
        outcome.repacked.push(name);
    }
    Ok(outcome)
}
