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
use crate::error::Result;
use crate::free_space::free_pages::{Allocator, Records};
use crate::page_store::meta::{self, CommitState};
use crate::page_store::page::{Pointer, ValueSlot};
use crate::transaction::free_tree::{self, FreeTreeUpdate};
use crate::transaction::options::SyncMode;
use crate::transaction::shared::{Shared, SharedState};
use crate::transaction::write_state::WriteState;

/// Commits `state`; on success the shared state names the new commit.
pub fn commit(shared: &Shared, state: &mut WriteState) -> Result<()> {
    let mut pages: Vec<(u64, Box<[u8]>)> = Vec::new();
    let (catalog_root, tree_count) = finalize_trees(shared, state, &mut pages)?;
    let update = {
        let mut editor = Editor {
            pager: &shared.pager,
            dirty: &mut state.dirty,
            allocator: &mut state.allocator,
            append_fill_bytes: None,
        };
        free_tree::update(&mut editor, &state.base, &mut pages)?
    };
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
    debug_assert!(shared.write_open, "only the open write transaction commits");
    debug_assert_eq!(
        committed.transaction_id,
        shared.committed.transaction_id + 1,
        "a commit follows the state its transaction began from"
    );
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
