//! The commit protocol: encode dirty trees bottom-up, record roots in the catalog, write
//! the free list, write every page, sync, write the commit slot, sync.
//!
//! Invariants: until the commit slot is durable, the previous commit slot names a state
//! none of whose pages this commit touched (every page written was free in it), so a crash
//! at any point reopens to the previous commit or, once the slot is durable, this one. A
//! failed sync poisons the database: after fsync fails, the kernel may have dropped the
//! dirty pages, and only a reopen can tell what is on disk.

use crate::catalog::{self, TreeRoot};
use crate::database::{Shared, SharedState};
use crate::editor::Editor;
use crate::error::Result;
use crate::free_list;
use crate::meta::{self, CommitState};
use crate::page::Pointer;
use crate::page::ValueSlot;
use crate::write_transaction::WriteState;

/// Commits `state`; on success the shared state names the new commit.
pub fn commit(shared: &Shared, state: &mut WriteState) -> Result<()> {
    let mut pages: Vec<(u64, Box<[u8]>)> = Vec::new();
    let (catalog_root, tree_count) = finalize_trees(shared, state, &mut pages)?;
    let old_chain = shared.lock().free_list_chain.clone();
    for page in &old_chain {
        state.allocator.free(*page, 1);
    }
    let pending: Vec<u64> = shared.lock().free.pending_pages().collect();
    let per_page = free_list::entries_per_page(shared.pager.page_bytes());
    let mut chain = Vec::new();
    loop {
        let entries = state.allocator.reusable.len() + state.allocator.freed.len() + pending.len();
        if chain.len() >= entries.div_ceil(per_page) {
            break;
        }
        chain.push(state.allocator.allocate(&shared.pager, 1)?);
    }
    let mut entries: Vec<u64> = state.allocator.reusable.iter().copied().collect();
    entries.extend(&state.allocator.freed);
    entries.extend(&pending);
    entries.sort_unstable();
    let free_list_root = free_list::encode(shared.pager.page_bytes(), &chain, &entries, &mut pages);
    let committed = CommitState {
        transaction_id: state.base.transaction_id + 1,
        catalog: catalog_root,
        free_list: free_list_root,
        high_water_pages: state.allocator.high_water_pages,
        free_pages: entries.len() as u64,
        tree_count,
    };
    write_pages(shared, &mut pages)?;
    durable(shared, || shared.sync())?;
    let slot_bytes = meta::encode(&committed, shared.pager.page_bytes());
    let slot_offset = committed.slot() * shared.pager.page_bytes() as u64;
    shared.pager.io().write(slot_offset, &slot_bytes)?;
    durable(shared, || shared.sync())?;
    publish(&mut shared.lock(), state, committed, chain);
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

/// Writes encoded pages in page order, one `pwrite` per page. Coalescing neighbours into
/// large writes would be fewer system calls, but makes the kernel cache the file in large
/// folios, after which every 4 KiB write and writeback walks the whole folio (measured:
/// most of a commit's CPU time on ext4).
fn write_pages(shared: &Shared, pages: &mut [(u64, Box<[u8]>)]) -> Result<()> {
    pages.sort_unstable_by_key(|(page, _)| *page);
    let page_bytes = shared.pager.page_bytes() as u64;
    for (page, bytes) in pages.iter() {
        shared.pager.io().write(page * page_bytes, bytes)?;
    }
    Ok(())
}

/// Makes the new commit the shared state: new readers see it, freed pages wait for the
/// readers of older snapshots.
fn publish(
    shared: &mut SharedState,
    state: &mut WriteState,
    committed: CommitState,
    chain: Vec<u64>,
) {
    shared.committed = committed;
    shared.free_list_chain = chain;
    shared.free.reusable = std::mem::take(&mut state.allocator.reusable);
    let freed = std::mem::take(&mut state.allocator.freed);
    if !freed.is_empty() {
        shared.free.pending.insert(committed.transaction_id, freed);
    }
    shared.write_open = false;
}
