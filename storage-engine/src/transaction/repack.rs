//! Repacking: rewriting a tree with its entries, in key order, into full pages.
//!
//! A copy-on-write B-tree splits a full leaf into halves, so a tree that took its entries in
//! many batches ends with leaves about two-thirds full. Appending in key order fills the
//! pages instead (an append at the right edge splits off only what passes the left page, see
//! `Editor::split`), so repacking copies the entries, in order, into a new tree under a
//! temporary name, then gives the tree's name the new root and frees every page of the old
//! tree. After the commit, once no snapshot reads them, `Database::release_free_pages` gives
//! their disk blocks back.
//!
//! The caller chooses how full the leaves get. Full pages take the least room, but a full leaf
//! splits in halves at its next insert, so a small batch of scattered inserts after a repack
//! to full pages leaves most leaves half empty again. Leaves filled to
//! [`REPACK_LEAF_FILL_PERCENT`] keep room that absorbs such batches (the reason B-tree
//! databases such as PostgreSQL fill index leaves to 90 %).
//!
//! Invariants: the repacked tree holds exactly the entries it held; an interrupted repack
//! leaves the tree and the transaction's other trees as they were; snapshots taken before
//! the commit keep reading the old pages; a crash before the commit leaves the old tree; the
//! temporary tree never reaches the catalog (its slot is dropped before the commit); the copy
//! is made with ordinary puts, so the transaction's memory budget (spilling) bounds it.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::btree::catalog::{self, TreeRoot};
use crate::btree::cursor::Direction;
use crate::error::{Error, Result};
use crate::transaction::write_state::TreeSlot;
use crate::transaction::write_transaction::{WriteTransaction, WriteTree};

/// A leaf fill, in percent of a page's bytes, that leaves room for later inserts.
pub const REPACK_LEAF_FILL_PERCENT: usize = 90;
/// The fewest percent of a page's bytes a repack fills a leaf with.
const REPACK_LEAF_FILL_PERCENT_MIN: usize = 50;
/// Full pages.
const FULL_PERCENT: usize = 100;

/// Entries a repack copies between two reads of its interrupt flag (a few milliseconds).
pub const INTERRUPT_CHECK_ENTRIES: usize = 4096;

/// What [`WriteTransaction::repack_tree`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repacked {
    /// The tree was rewritten.
    Done,
    /// There is no tree of that name.
    NoSuchTree,
    /// The interrupt flag was set: the tree is unchanged.
    Interrupted,
}

/// Appended to a tree's name for the copy a repack builds.
const REPACK_SUFFIX: &str = "\u{0}repack";

impl WriteTransaction {
    /// Rewrites tree `name` with its entries in order, each leaf filled to about
    /// `leaf_fill_percent` of a page (clamped to 50..=100; branches are always full).
    ///
    /// `interrupt` is read every [`INTERRUPT_CHECK_ENTRIES`] entries: once it is set, the
    /// partial copy is dropped and the tree stays as it was ([`Repacked::Interrupted`]), so
    /// that foreground work waiting for the write transaction does not wait for the copy.
    pub fn repack_tree(
        &self,
        name: &str,
        leaf_fill_percent: usize,
        interrupt: &AtomicBool,
    ) -> Result<Repacked> {
        let Some(source) = self.open_tree(name)? else {
            return Ok(Repacked::NoSuchTree);
        };
        let temporary = format!("{name}{REPACK_SUFFIX}");
        catalog::check_name(&temporary)?;
        if self.open_tree(&temporary)?.is_some() {
            // A tree of that name is not ours to overwrite.
            return Err(Error::InvalidTreeName);
        }
        let copy = self.create_tree(&temporary)?;
        let percent = leaf_fill_percent.clamp(REPACK_LEAF_FILL_PERCENT_MIN, FULL_PERCENT);
        let fill = (percent < FULL_PERCENT)
            .then(|| self.shared.pager.page_bytes() * percent / FULL_PERCENT);
        self.state.borrow_mut().append_fill_bytes = fill;
        let copied = copy_entries(&source, &copy, interrupt);
        self.state.borrow_mut().append_fill_bytes = None;
        drop((source, copy));
        if copied? == Copied::Interrupted {
            self.delete_tree(&temporary)?;
            return Ok(Repacked::Interrupted);
        }
        self.move_tree(temporary.as_bytes(), name.as_bytes())?;
        Ok(Repacked::Done)
    }

    /// Gives tree `to` the root of tree `from` and frees the old tree of `to`; `from`'s slot
    /// is dropped (it was created in this transaction, so the catalog never named it).
    fn move_tree(&self, from: &[u8], to: &[u8]) -> Result<()> {
        self.edit(|editor, trees| {
            let moved = trees
                .remove(from)
                .expect("the copy's slot was created by this transaction");
            let target = trees
                .get_mut(to)
                .expect("the repacked tree's slot is loaded");
            let old_root = target.tree.root;
            *target = TreeSlot {
                tree: TreeRoot {
                    root: moved.tree.root,
                    entry_count: moved.tree.entry_count,
                },
                changed: true,
                deleted: false,
                version: target.version.max(moved.version) + 1,
            };
            editor.drop_tree(old_root)
        })
    }
}

/// How a copy ended.
#[derive(Debug, PartialEq, Eq)]
enum Copied {
    All,
    Interrupted,
}

/// Puts every entry of `source` into `copy`, in key order, unless `interrupt` is set first.
fn copy_entries(
    source: &WriteTree<'_>,
    copy: &WriteTree<'_>,
    interrupt: &AtomicBool,
) -> Result<Copied> {
    let entries = source.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)?;
    for (index, entry) in entries.enumerate() {
        // After each run of entries (never before the first), so a copy always progresses.
        if index > 0 && index % INTERRUPT_CHECK_ENTRIES == 0 && interrupt.load(Ordering::Relaxed) {
            return Ok(Copied::Interrupted);
        }
        let (key, value) = entry?;
        copy.put(&key, &value)?;
    }
    Ok(Copied::All)
}
