//! The integrity check: walks the catalog, every tree and the free tree of a committed
//! snapshot, re-hashing every page, and accounts for every page below the high-water mark.
//!
//! Invariants checked: every checksum matches (ignoring the pager's verified cache); keys
//! ascend strictly within each node and stay within the bounds their parents set; all
//! leaves of a tree lie at one depth; entry counts match the catalog; each page is a
//! commit slot, a tree page, an overflow page, a free-tree page or listed free (reusable or
//! pending: records of both kinds live in the free tree), exactly once.

use std::ops::Bound;

use crate::btree::catalog;
use crate::btree::cursor::TREE_DEPTH_MAX;
use crate::error::{Error, Result};
use crate::free_space::free_list::{self, RecordKey};
use crate::page_store::checksum::{page_checksum, streamed_checksum};
use crate::page_store::layout::*;
use crate::page_store::meta::CommitState;
use crate::page_store::page::{PageView, Pointer, ValueSlot};
use crate::page_store::pager::Pager;

/// What the integrity check walked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntegrityReport {
    /// Named trees.
    pub trees: u64,
    /// Key/value entries across all trees.
    pub entries: u64,
    /// Branch and leaf pages (including the catalog's).
    pub tree_pages: u64,
    /// Pages in overflow runs.
    pub overflow_pages: u64,
    /// Pages of the free tree (the persisted free list) itself.
    pub free_list_pages: u64,
    /// Pages listed as free.
    pub free_pages: u64,
}

/// Called with each entry's key, value and leaf page.
type EntryVisitor<'v> = dyn FnMut(&[u8], &[u8], u64) -> Result<()> + 'v;

struct Walker<'a> {
    pager: &'a Pager,
    seen: Vec<u64>,
    high_water_pages: u64,
    report: IntegrityReport,
}

/// Checks the snapshot `state`.
pub fn check(pager: &Pager, state: &CommitState) -> Result<IntegrityReport> {
    let words = usize::try_from(state.high_water_pages.div_ceil(64))
        .map_err(|_| Error::corrupted(state.slot(), "high-water mark too large"))?;
    let mut walker = Walker {
        pager,
        seen: vec![0; words],
        high_water_pages: state.high_water_pages,
        report: IntegrityReport::default(),
    };
    for page in 0..META_PAGE_COUNT {
        walker.mark(page)?;
    }
    let mut trees = Vec::new();
    walker.walk_tree(state.catalog, &mut |key, value, page| {
        trees.push((key.to_vec(), catalog::decode(value, page)?));
        Ok(())
    })?;
    let catalog_entries = walker.report.entries;
    walker.report.entries = 0;
    for (_, tree) in &trees {
        let before = walker.report.entries;
        walker.walk_tree(tree.root, &mut |_, _, _| Ok(()))?;
        if walker.report.entries - before != tree.entry_count {
            let page = tree.root.map_or(0, |root| root.page);
            return Err(Error::corrupted(
                page,
                "entry count disagrees with the catalog",
            ));
        }
    }
    walker.report.trees = trees.len() as u64;
    if catalog_entries != state.tree_count {
        return Err(Error::corrupted(
            state.slot(),
            "tree count disagrees with the catalog",
        ));
    }
    walker.walk_free_tree(state)?;
    walker.check_all_pages_seen()?;
    Ok(walker.report)
}

impl Walker<'_> {
    fn mark(&mut self, page: u64) -> Result<()> {
        if page >= self.high_water_pages {
            return Err(Error::corrupted(page, "page past the high-water mark"));
        }
        let word = &mut self.seen[(page / 64) as usize];
        let bit = 1u64 << (page % 64);
        if *word & bit != 0 {
            return Err(Error::corrupted(page, "page used twice"));
        }
        *word |= bit;
        Ok(())
    }

    fn check_all_pages_seen(&self) -> Result<()> {
        for page in 0..self.high_water_pages {
            if self.seen[(page / 64) as usize] & (1u64 << (page % 64)) == 0 {
                return Err(Error::corrupted(page, "page neither used nor free"));
            }
        }
        Ok(())
    }

    fn walk_tree(&mut self, root: Option<Pointer>, visit: &mut EntryVisitor<'_>) -> Result<()> {
        let Some(root) = root else {
            return Ok(());
        };
        let mut leaf_depth = None;
        self.walk_node(
            root,
            Bound::Unbounded,
            Bound::Unbounded,
            0,
            &mut leaf_depth,
            visit,
        )
    }

    /// Walks the subtree at `pointer`, whose keys must lie within `low..high`, `depth` levels
    /// below the root; every leaf must lie at `leaf_depth` (set by the first leaf met).
    fn walk_node(
        &mut self,
        pointer: Pointer,
        low: Bound<&[u8]>,
        high: Bound<&[u8]>,
        depth: usize,
        leaf_depth: &mut Option<usize>,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<()> {
        if depth >= TREE_DEPTH_MAX {
            return Err(Error::corrupted(pointer.page, "tree deeper than possible"));
        }
        self.mark(pointer.page)?;
        self.report.tree_pages += 1;
        let view = PageView::new(
            pointer.page,
            rehashed_page(self.pager, pointer.page, Some(pointer.checksum))?,
        )?;
        check_keys(&view, low, high)?;
        if view.is_leaf() {
            return self.walk_leaf(&view, depth, leaf_depth, visit);
        }
        self.walk_children(&view, low, high, depth, leaf_depth, visit)
    }

    /// Checks the leaf `view` (not empty, at the tree's leaf depth) and visits its entries,
    /// walking their overflow runs.
    fn walk_leaf(
        &mut self,
        view: &PageView<'_>,
        depth: usize,
        leaf_depth: &mut Option<usize>,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<()> {
        let corrupted = |what| Error::corrupted(view.page(), what);
        if view.count() == 0 {
            return Err(corrupted("empty leaf"));
        }
        if *leaf_depth.get_or_insert(depth) != depth {
            return Err(corrupted("leaves at different depths"));
        }
        let pager = self.pager;
        for index in 0..view.count() {
            let value = match view.value(index)? {
                ValueSlot::Inline(bytes) => bytes,
                ValueSlot::Overflow { pointer, length } => self.overflow(pager, pointer, length)?,
            };
            self.report.entries += 1;
            visit(view.key(index)?, value, view.page())?;
        }
        Ok(())
    }

    /// Walks every child of the branch `view`, each within the separators around it.
    fn walk_children(
        &mut self,
        view: &PageView<'_>,
        low: Bound<&[u8]>,
        high: Bound<&[u8]>,
        depth: usize,
        leaf_depth: &mut Option<usize>,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<()> {
        for index in 0..=view.count() {
            let child_low = if index == 0 {
                low
            } else {
                Bound::Included(view.key(index - 1)?)
            };
            let child_high = if index == view.count() {
                high
            } else {
                Bound::Excluded(view.key(index)?)
            };
            self.walk_node(
                view.child(index)?,
                child_low,
                child_high,
                depth + 1,
                leaf_depth,
                visit,
            )?;
        }
        Ok(())
    }

    fn overflow<'p>(
        &mut self,
        pager: &'p Pager,
        pointer: Pointer,
        length: u64,
    ) -> Result<&'p [u8]> {
        let pages = pager.overflow_pages(length)?;
        for page in pointer.page..pointer.page.saturating_add(pages) {
            self.mark(page)?;
        }
        self.report.overflow_pages += pages;
        let run = pager.raw_pages(pointer.page, pages)?;
        let end = OVERFLOW_DATA_OFFSET + length as usize;
        let stored =
            crate::page_store::bytes::read_u64(run, PAGE_CHECKSUM_OFFSET).unwrap_or_default();
        if run[PAGE_KIND_OFFSET] != KIND_OVERFLOW
            || streamed_checksum(pointer.page, &[&run[PAGE_CHECKSUMMED_OFFSET..end]]) != stored
            || stored != pointer.checksum
        {
            return Err(Error::corrupted(
                pointer.page,
                "overflow run checksum mismatch",
            ));
        }
        Ok(&run[OVERFLOW_DATA_OFFSET..end])
    }

    /// Walks the free tree like any tree (its pages are used), then marks every page its
    /// records list as free: a page both reachable and listed, or listed twice, is
    /// `page used twice`.
    fn walk_free_tree(&mut self, state: &CommitState) -> Result<()> {
        let (tree_pages, entries) = (self.report.tree_pages, self.report.entries);
        let high_water_pages = self.high_water_pages;
        let mut listed = Vec::new();
        self.walk_tree(state.free_tree, &mut |key, value, page| {
            let key =
                RecordKey::decode(key).ok_or(Error::corrupted(page, "malformed free-page key"))?;
            if key.transaction_id > state.transaction_id {
                return Err(Error::corrupted(page, "free-page record from the future"));
            }
            listed.extend(free_list::decode_pages(value, high_water_pages, page)?);
            Ok(())
        })?;
        self.report.free_list_pages = self.report.tree_pages - tree_pages;
        self.report.tree_pages = tree_pages;
        self.report.entries = entries;
        for page in &listed {
            self.mark(*page)?;
        }
        self.report.free_pages = listed.len() as u64;
        if self.report.free_pages != state.free_pages {
            return Err(Error::corrupted(state.slot(), "free-page count disagrees"));
        }
        Ok(())
    }
}

/// Checks that the keys of `view` ascend strictly and lie within `low..high` (the bounds its
/// parent's separators set).
fn check_keys(view: &PageView<'_>, low: Bound<&[u8]>, high: Bound<&[u8]>) -> Result<()> {
    let corrupted = |what| Error::corrupted(view.page(), what);
    let mut previous: Option<&[u8]> = None;
    for index in 0..view.count() {
        let key = view.key(index)?;
        if previous.is_some_and(|previous| previous >= key) {
            return Err(corrupted("keys out of order"));
        }
        if !within(key, low, high) {
            return Err(corrupted("key outside its parent's bounds"));
        }
        previous = Some(key);
    }
    Ok(())
}

/// Re-hashes page `page`, ignoring the verified cache; checks it against `expected` too.
fn rehashed_page(pager: &Pager, page: u64, expected: Option<u64>) -> Result<&[u8]> {
    let bytes = pager.raw_pages(page, 1)?;
    let stored =
        crate::page_store::bytes::read_u64(bytes, PAGE_CHECKSUM_OFFSET).unwrap_or_default();
    if page_checksum(page, &bytes[PAGE_CHECKSUMMED_OFFSET..]) != stored {
        return Err(Error::corrupted(page, "page checksum mismatch"));
    }
    if expected.is_some_and(|expected| expected != stored) {
        return Err(Error::corrupted(
            page,
            "page is not the one its parent wrote",
        ));
    }
    Ok(bytes)
}

fn within(key: &[u8], low: Bound<&[u8]>, high: Bound<&[u8]>) -> bool {
    let above = match low {
        Bound::Included(low) => key >= low,
        Bound::Excluded(low) => key > low,
        Bound::Unbounded => true,
    };
    let below = match high {
        Bound::Included(high) => key <= high,
        Bound::Excluded(high) => key < high,
        Bound::Unbounded => true,
    };
    above && below
}
