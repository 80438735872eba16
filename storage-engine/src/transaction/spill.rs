//! Spilling: a write transaction whose changed pages outgrow its memory budget writes them to
//! their places in the file before it commits, and drops them from memory.
//!
//! Every changed tree is encoded bottom-up as a commit would encode it (each parent records its
//! children's checksums), its pages are written, and its root becomes a checksummed pointer to
//! a page this transaction allocated. A later change to a spilled page copies it again like a
//! committed page, and its spilled copy goes straight back to the allocator (this transaction
//! allocated it, so no snapshot can read it).
//!
//! Invariants: only pages this transaction allocated are written, and the committed state
//! names none of them, so a crash before the commit slot is durable reopens to the previous
//! commit exactly as before (the commit's sync covers the spilled writes too); every tree's
//! version is bumped, so no leaf cache names a page that is no longer in memory; the free tree
//! and the catalog are only ever changed during commit, so nothing of theirs is in memory here.

use crate::btree::editor::Editor;
use crate::error::Result;
use crate::free_space::free_pages::Allocator;
use crate::page_store::pager::Pager;
use crate::transaction::write_state::WriteState;

/// Writes every changed page of `state`'s trees to the file and drops it from memory.
pub(crate) fn spill(pager: &Pager, state: &mut WriteState) -> Result<()> {
    let mut pages: Vec<(u64, Box<[u8]>)> = Vec::with_capacity(state.dirty.len());
    let mut editor = Editor {
        pager,
        dirty: &mut state.dirty,
        allocator: &mut state.allocator,
        append_fill_bytes: None,
    };
    for slot in state.trees.values_mut() {
        slot.version += 1;
        if let Some(root) = slot.tree.root {
            slot.tree.root = Some(editor.finalize(root, &mut pages)?);
        }
    }
    debug_assert!(
        state.dirty.is_empty(),
        "every changed page belongs to a tree of the transaction"
    );
    write_pages(pager, &mut pages)?;
    // Written: their buffers serve the pages the transaction builds next on this thread.
    for (_, bytes) in pages {
        crate::page_store::page_buffers::recycle(bytes);
    }
    state.spilled = true;
    unmap_unused(pager, &mut state.allocator)
}

/// Lets the mapping drop the pages freed since the last call: the committed pages the
/// transaction copied and the spilled pages it changed again. Without this, a long
/// transaction would keep every page it ever read resident.
pub(crate) fn unmap_unused(pager: &Pager, allocator: &mut Allocator) -> Result<()> {
    let page_bytes = pager.page_bytes() as u64;
    for (first, count) in allocator.take_unused_runs() {
        turns::checkpoint();
        pager
            .io()
            .unmap_resident(first * page_bytes, count * page_bytes)?;
    }
    Ok(())
}

/// Writes `pages` (number and encoded bytes) in page order, one `pwrite` per page. Coalescing
/// neighbours into large writes would be fewer system calls, but makes the kernel cache the
/// file in large folios, after which every 4 KiB write and writeback walks the whole folio
/// (measured: most of a commit's CPU time on ext4).
///
/// Each [`WRITEBACK_PAGES`] pages written, their writeback starts (see
/// [`start_writeback`]): the file system's share of the work (allocating blocks, building
/// the disk requests) then runs in pieces between two of the indexing thread's turns
/// (`turns`), not in one stretch of tens of milliseconds in the sync.
pub(crate) fn write_pages(pager: &Pager, pages: &mut [(u64, Box<[u8]>)]) -> Result<()> {
    pages.sort_unstable_by_key(|(page, _)| *page);
    let page_bytes = pager.page_bytes() as u64;
    for run in pages.chunks(WRITEBACK_PAGES) {
        for (page, bytes) in run {
            turns::checkpoint();
            pager.io().write(page * page_bytes, bytes)?;
        }
        start_writeback(pager, run);
    }
    Ok(())
}

/// Pages written between two starts of their writeback (256 KiB of 4 KiB pages).
pub const WRITEBACK_PAGES: usize = 64;

/// Starts the writeback of the span of `run` (pages in ascending order). Only a hint (the
/// commit's sync makes the pages durable): a failure changes nothing.
fn start_writeback(pager: &Pager, run: &[(u64, Box<[u8]>)]) {
    let (Some((first, _)), Some((last, _))) = (run.first(), run.last()) else {
        return;
    };
    let page_bytes = pager.page_bytes() as u64;
    let span = (last - first + 1) * page_bytes;
    pager.io().start_writeback(first * page_bytes, span).ok();
    turns::checkpoint();
}
