//! The commit protocol: encode dirty trees bottom-up, record roots in the catalog, update
//! the free tree, write every page, sync, write the commit slot, sync.
//!
//! Invariants: until the commit slot is durable, the previous commit slot names a state
//! none of whose pages this commit touched (every page written was free in it), so a crash
//! at any point reopens to the previous commit or, once the slot is durable, this one. A
//! failed sync poisons the database: after fsync fails, the kernel may have dropped the
//! dirty pages, and only a reopen can tell what is on disk.

use crate::btree::catalog::{self, TreeRoot};
use crate::btree::editor::Editor;
use crate::error::{Error, Result};
use crate::free_space::free_list::{self, RecordKey};
use crate::free_space::free_pages::{Allocator, Records};
use crate::page_store::layout::NO_PAGE;
use crate::page_store::meta::{self, CommitState};
use crate::page_store::page::Pointer;
use crate::page_store::page::ValueSlot;
use crate::transaction::database::{Shared, SharedState};
use crate::transaction::options::SyncMode;
use crate::transaction::write_transaction::WriteState;

/// Rounds of the free-tree update before giving up: each round records the pages the
/// previous round's edits allocated or freed; two or three rounds settle in practice.
const FREE_TREE_ROUNDS_MAX: usize = 64;

/// The records a commit adds to the free tree, and the in-memory state they become.
struct FreeTreeUpdate {
    /// Root of the new free tree.
    root: Option<Pointer>,
    /// Pages the new free tree lists.
    free_pages: u64,
    /// Records of pages reusable at once (the unused rest of the pages taken).
    reusable: Records,
    /// Records of pages this transaction freed, waiting for older snapshots.
    pending: Records,
}

/// Commits `state`; on success the shared state names the new commit.
pub fn commit(shared: &Shared, state: &mut WriteState) -> Result<()> {
    let mut pages: Vec<(u64, Box<[u8]>)> = Vec::new();
    let (catalog_root, tree_count) = finalize_trees(shared, state, &mut pages)?;
    let update = update_free_tree(shared, state, &mut pages)?;
    let committed = CommitState {
        transaction_id: state.base.transaction_id + 1,
        catalog: catalog_root,
        free_tree: update.root,
        high_water_pages: state.allocator.high_water_pages,
        free_pages: update.free_pages,
        tree_count,
    };
    crate::transaction::spill::write_pages(&shared.pager, &mut pages)?;
    drop(pages);
    // The transaction is over: the buffers its spills kept go back to the allocator.
    crate::page_store::page_buffers::release();
    durable(shared, || shared.sync())?;
    let slot_bytes = meta::encode(&committed, shared.pager.page_bytes());
    let slot_offset = committed.slot() * shared.pager.page_bytes() as u64;
    match shared.options.sync_mode {
        SyncMode::Full => durable(shared, || {
            shared.pager.io().write_durable(slot_offset, &slot_bytes)
        })?,
        SyncMode::None => shared.pager.io().write(slot_offset, &slot_bytes)?,
    }
    // Only a residency hint: the commit is durable already, and a failure changes nothing.
    crate::transaction::spill::unmap_unused(&shared.pager, &mut state.allocator).ok();
    publish(&mut shared.lock(), state, committed, update);
    Ok(())
}

/// The records transaction `transaction_id` writes: the pages in hand (reusable at once)
/// and the pages it freed, each sorted and cut into record-sized chunks, numbered in turn.
fn records_for(transaction_id: u64, in_hand: &[u64], freed: &[u64]) -> (Records, Records) {
    let mut sequence = 0u32;
    let mut next_key = || {
        let key = RecordKey {
            transaction_id,
            sequence,
        };
        sequence += 1;
        key
    };
    let reusable = free_list::chunks(in_hand)
        .map(|chunk| (next_key(), chunk.to_vec()))
        .collect();
    let pending = free_list::chunks(freed)
        .map(|chunk| (next_key(), chunk.to_vec()))
        .collect();
    (reusable, pending)
}

/// Updates the free tree: deletes the records this transaction took pages from and writes
/// its own records, repeating until the edits of the free tree itself (which allocate and
/// free pages) leave nothing unrecorded; then encodes the tree's dirty pages into `pages`.
/// The work is proportional to the records taken and written, not to the free tree's size.
///
/// Why the rounds settle: pages the update frees go to the allocator's `spare` set, which
/// it lists as free but never allocates from again, so a page cannot shuttle between "in
/// the tree" and "listed free". Each round that changes anything either consumed a page
/// (from hand, a taken record or the file's end) for a new tree node or freed one for
/// good; the tree's node count needed for a fixed number of records is bounded, so the
/// changes stop. `FREE_TREE_ROUNDS_MAX` turns a bug here into an error, not a hang.
fn update_free_tree(
    shared: &Shared,
    state: &mut WriteState,
    pages: &mut Vec<(u64, Box<[u8]>)>,
) -> Result<FreeTreeUpdate> {
    let transaction_id = state.base.transaction_id + 1;
    let mut editor = Editor {
        pager: &shared.pager,
        dirty: &mut state.dirty,
        allocator: &mut state.allocator,
        append_fill_bytes: None,
    };
    let mut root = state.base.free_tree;
    let mut deleted = 0;
    let mut written: Option<(Records, Records)> = None;
    for _ in 0..FREE_TREE_ROUNDS_MAX {
        // Deleting may allocate, which may take more records: loop until all are gone.
        while let Some(key) = editor.allocator.taken.keys().nth(deleted).copied() {
            root = editor.delete(root, &key.encode())?.0;
            deleted += 1;
        }
        let spare = editor.allocator.spare.get_or_insert_default();
        let mut in_hand: Vec<u64> = spare.iter().copied().collect();
        in_hand.extend(editor.allocator.reusable.iter().copied());
        in_hand.sort_unstable();
        let mut freed = editor.allocator.freed.clone();
        freed.sort_unstable();
        let wanted = records_for(transaction_id, &in_hand, &freed);
        if written.as_ref() == Some(&wanted) {
            let root = root.map(|root| editor.finalize(root, pages)).transpose()?;
            let taken_pages: u64 = editor
                .allocator
                .taken
                .values()
                .map(|pages| pages.len() as u64)
                .sum();
            let free_pages = state.base.free_pages.saturating_sub(taken_pages)
                + in_hand.len() as u64
                + freed.len() as u64;
            debug_assert!(editor.dirty.is_empty(), "every dirty node was encoded");
            let (reusable, pending) = wanted;
            return Ok(FreeTreeUpdate {
                root,
                free_pages,
                reusable,
                pending,
            });
        }
        let stale: Vec<RecordKey> = written
            .iter()
            .flat_map(|(reusable, pending)| reusable.keys().chain(pending.keys()))
            .filter(|key| !wanted.0.contains_key(key) && !wanted.1.contains_key(key))
            .copied()
            .collect();
        for key in stale {
            root = editor.delete(root, &key.encode())?.0;
        }
        for (key, record_pages) in wanted.0.iter().chain(wanted.1.iter()) {
            let unchanged = written.as_ref().is_some_and(|(reusable, pending)| {
                reusable.get(key).or_else(|| pending.get(key)) == Some(record_pages)
            });
            if unchanged {
                continue;
            }
            let value = free_list::encode_pages(record_pages);
            root = Some(
                editor
                    .insert(root, &key.encode(), ValueSlot::Inline(&value))?
                    .0,
            );
        }
        written = Some(wanted);
    }
    Err(Error::corrupted(
        root.map_or(NO_PAGE, |root| root.page),
        "free-tree update did not settle",
    ))
}

/// Runs a sync; a failure poisons the database.
fn durable(shared: &Shared, sync: impl FnOnce() -> Result<()>) -> Result<()> {
    let outcome = sync();
    if outcome.is_err() {
        shared.lock().poisoned = true;
    }
    outcome
}

/// Encodes every changed tree and records its root in the catalog; returns the catalog
/// root and the number of trees.
fn finalize_trees(
    shared: &Shared,
    state: &mut WriteState,
    pages: &mut Vec<(u64, Box<[u8]>)>,
) -> Result<(Option<Pointer>, u64)> {
    let trees = std::mem::take(&mut state.trees);
    let mut catalog_root = state.base.catalog;
    let mut tree_count = state.base.tree_count;
    let mut editor = Editor {
        pager: &shared.pager,
        dirty: &mut state.dirty,
        allocator: &mut state.allocator,
        append_fill_bytes: None,
    };
    for (name, slot) in trees.into_iter().filter(|(_, slot)| slot.changed) {
        if slot.deleted {
            let (root, removed) = editor.delete(catalog_root, &name)?;
            catalog_root = root;
            if let Some(value) = removed {
                editor.release_value(&value)?;
                tree_count = tree_count.saturating_sub(1);
            }
            continue;
        }
        let root = slot
            .tree
            .root
            .map(|root| editor.finalize(root, pages))
            .transpose()?;
        let value = catalog::encode(&TreeRoot {
            root,
            entry_count: slot.tree.entry_count,
        });
        let (root, replaced) = editor.insert(catalog_root, &name, ValueSlot::Inline(&value))?;
        catalog_root = Some(root);
        if replaced.is_none() {
            tree_count += 1;
        }
    }
    let catalog_root = catalog_root
        .map(|root| editor.finalize(root, pages))
        .transpose()?;
    debug_assert!(
        state.dirty.is_empty(),
        "every dirty node belongs to a committed tree"
    );
    Ok((catalog_root, tree_count))
}

/// Makes the new commit the shared state: new readers see it, the pages this transaction
/// freed wait for the readers of older snapshots, untaken records stay reusable.
fn publish(
    shared: &mut SharedState,
    state: &mut WriteState,
    committed: CommitState,
    update: FreeTreeUpdate,
) {
    shared.committed = committed;
    let allocator = std::mem::replace(&mut state.allocator, Allocator::new(Records::new(), 0, 0));
    let mut reusable = allocator.records_untaken();
    reusable.extend(update.reusable);
    shared.free.reusable = reusable;
    if !update.pending.is_empty() {
        shared
            .free
            .pending
            .insert(committed.transaction_id, update.pending);
    }
    shared.write_open = false;
}
