//! How full a tree's pages are: the measure that tells whether repacking a tree (see
//! `transaction/repack.rs`) would give pages back. `ReadTree::fill` is its public entry.
//!
//! A B-tree that took its entries in many batches splits full leaves into halves, so its
//! pages settle about two-thirds full; a repacked tree's pages are full. The walk reads
//! every branch and leaf page of the tree once (their headers and slot arrays, never the
//! values), so it costs about one sequential read of the tree.
//!
//! The walk also counts the pages of the leaves' overflow runs (from the value lengths in
//! the leaf cells, never reading the runs), so [`TreeFill::bytes`] is what the tree takes
//! in the file: what `GET /stats?showInternalDatabaseSizes=true` reports per tree.
//!
//! Invariants: overflow runs are not part of the fill (a repack copies them as they are),
//! only of the tree's bytes; a tree with no root has no pages and counts as full.

use crate::btree::cursor::TREE_DEPTH_MAX;
use crate::error::{Error, Result};
use crate::page_store::layout::OVERFLOW_DATA_OFFSET;
use crate::page_store::page::{PageView, Pointer, ValueSlot};
use crate::page_store::pager::Pager;

/// The pages of a tree and the bytes of them its content uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeFill {
    /// Branch and leaf pages.
    pub pages: u64,
    /// Bytes used in those pages: headers, slots and cells.
    pub used_bytes: u64,
    /// Bytes of one page.
    pub page_bytes: u64,
    /// Pages of the overflow runs the leaves refer to.
    pub overflow_pages: u64,
}

impl TreeFill {
    /// The share of the tree's page bytes its content uses, in `0.0..=1.0` (1.0 when empty).
    pub fn fraction(&self) -> f64 {
        let capacity = self.pages * self.page_bytes;
        if capacity == 0 {
            return 1.0;
        }
        self.used_bytes as f64 / capacity as f64
    }

    /// Bytes the tree takes in the file: its branch, leaf and overflow pages.
    pub fn bytes(&self) -> u64 {
        (self.pages + self.overflow_pages) * self.page_bytes
    }

    /// Pages a repack into full pages would spare: the pages beyond those the used bytes
    /// need.
    pub fn spare_pages(&self) -> u64 {
        if self.page_bytes == 0 {
            return 0;
        }
        self.pages
            .saturating_sub(self.used_bytes.div_ceil(self.page_bytes))
    }
}

/// Walks the pages of the tree at `root` and measures how full they are.
pub fn measure(pager: &Pager, root: Option<Pointer>) -> Result<TreeFill> {
    let mut fill = TreeFill {
        page_bytes: pager.page_bytes() as u64,
        ..TreeFill::default()
    };
    if let Some(root) = root {
        add_node(pager, root, 0, &mut fill)?;
    }
    debug_assert!(
        fill.used_bytes <= fill.pages * fill.page_bytes,
        "a page's content fits the page"
    );
    Ok(fill)
}

fn add_node(pager: &Pager, pointer: Pointer, depth: usize, fill: &mut TreeFill) -> Result<()> {
    if depth >= TREE_DEPTH_MAX {
        return Err(Error::corrupted(pointer.page, "tree deeper than possible"));
    }
    let view = pager.node(pointer)?;
    fill.pages += 1;
    fill.used_bytes += view.used_bytes()? as u64;
    if view.is_leaf() {
        fill.overflow_pages += overflow_pages(&view, fill.page_bytes)?;
        return Ok(());
    }
    for index in 0..=view.count() {
        add_node(pager, view.child(index)?, depth + 1, fill)?;
    }
    Ok(())
}

/// Pages of the overflow runs a leaf's values live in: each run holds its value after a
/// page header, in whole pages.
fn overflow_pages(leaf: &PageView<'_>, page_bytes: u64) -> Result<u64> {
    let mut pages = 0;
    for index in 0..leaf.count() {
        if let ValueSlot::Overflow { length, .. } = leaf.value(index)? {
            pages += (OVERFLOW_DATA_OFFSET as u64 + length).div_ceil(page_bytes);
        }
    }
    Ok(pages)
}
