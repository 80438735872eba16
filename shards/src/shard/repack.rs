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
//! Invariants: trees are measured on the last commit and repacked in one write transaction,
//! so readers see either every chosen tree repacked or none; a repack changes no entry; the
//! record of entry counts at the last repack lives in memory only (after a restart every
//! tree may be repacked once more).

use std::collections::HashMap;
use std::sync::Mutex;

use storage_engine::{Database, REPACK_LEAF_FILL_PERCENT, ReadTree};

use super::error::ShardResult;

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

/// Rewrites the trees `which` selects in full pages, in one commit; answers their names.
pub(super) fn repack(
    database: &Database,
    which: Repack,
    record: &RepackRecord,
) -> ShardResult<Vec<String>> {
    let chosen = chosen_trees(database, which, record)?;
    if chosen.is_empty() {
        return Ok(chosen);
    }
    let write = database.begin_write()?;
    let mut entry_counts = Vec::with_capacity(chosen.len());
    for name in &chosen {
        write.repack_tree(name, which.leaf_fill_percent())?;
        let count = write.open_tree(name)?.map_or(Ok(0), |tree| tree.len())?;
        entry_counts.push(count);
    }
    write.commit()?;
    for (name, count) in chosen.iter().zip(entry_counts) {
        record.record(name, count);
    }
    Ok(chosen)
}
