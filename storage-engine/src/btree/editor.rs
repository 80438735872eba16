//! Copy-on-write changes to one tree: insert, delete, split, merge, drop a whole tree, and
//! the post-order checksumming of dirty nodes at commit.
//!
//! Invariants: a committed page is never changed: `make_dirty` copies it into a new page
//! number and frees the old one for after the commit. Every dirty node is a valid page
//! once an operation returns (a node one cell over splits in two that fit, because a cell
//! is at most a quarter page). A branch always has `count + 1` children.

use std::collections::HashMap;

use crate::btree::cursor::{NodeRef, Source, TREE_DEPTH_MAX};
use crate::btree::leaf_cache::LeafCache;
use crate::btree::node::{NodeBuffer, StoredValue, branch_cell, cell_child, cell_key, leaf_cell};
use crate::error::{Error, Result};
use crate::free_space::free_pages::Allocator;
use crate::page_store::bytes::write_u64;
use crate::page_store::checksum::{page_checksum, streamed_checksum};
use crate::page_store::layout::*;
use crate::page_store::page::{Pointer, ValueSlot};
use crate::page_store::pager::Pager;

/// A node below this many bytes is merged with a sibling when the two fit one page.
fn underfull_bytes(page_bytes: usize) -> usize {
    page_bytes / 4
}

/// Pointer to a dirty page: its checksum is computed at commit.
fn dirty_pointer(page: u64) -> Pointer {
    Pointer { page, checksum: 0 }
}

/// Where an insertion's descent is: its depth, whether every node above took its rightmost
/// child, and the version of the tree (recorded in the leaf cache).
#[derive(Debug, Clone, Copy)]
struct Descent {
    depth: usize,
    rightmost: bool,
    version: u64,
}

/// A branch on a root-to-leaf path and the index of the child the path takes.
#[derive(Debug, Clone, Copy)]
pub struct PathStep {
    /// The branch's dirty page.
    pub page: u64,
    /// The child taken.
    pub index: usize,
}

/// What an insertion below a node hands back up: the replaced value, and the separator
/// and new right page if the node split.
type Inserted = (Option<StoredValue>, Option<(Vec<u8>, u64)>);

/// The write transaction's mutable view: pager, dirty nodes, allocator.
pub struct Editor<'a> {
    /// Reads of committed pages.
    pub pager: &'a Pager,
    /// Nodes changed by this transaction, by their new page number.
    pub dirty: &'a mut HashMap<u64, NodeBuffer, crate::free_space::free_pages::PageHashBuilder>,
    /// Page allocation.
    pub allocator: &'a mut Allocator,
    /// When set, a leaf split by an append at the tree's right edge keeps this many bytes of
    /// cells (and slots) on the left instead of all of them: room for later inserts.
    pub append_fill_bytes: Option<usize>,
}

impl Editor<'_> {
    fn source(&self) -> Source<'_> {
        Source {
            pager: self.pager,
            dirty: Some(self.dirty),
        }
    }

    fn node(&self, page: u64) -> &NodeBuffer {
        &self.dirty[&page]
    }

    fn node_mut(&mut self, page: u64) -> &mut NodeBuffer {
        self.dirty
            .get_mut(&page)
            .expect("callers pass pages they made dirty")
    }

    /// Makes the node at `pointer` dirty; returns its (possibly new) page number.
    fn make_dirty(&mut self, pointer: Pointer) -> Result<u64> {
        if self.dirty.contains_key(&pointer.page) {
            return Ok(pointer.page);
        }
        let node = NodeBuffer::from_view(&self.pager.node(pointer)?, self.pager.page_bytes())?;
        let page = self.allocator.allocate(self.pager, 1)?;
        self.allocator.free(pointer.page, 1);
        self.dirty.insert(page, node);
        Ok(page)
    }

    /// Stores a value: inline when its cell fits a quarter page, else in a new overflow run.
    pub fn store_value<'v>(&mut self, key: &[u8], value: &'v [u8]) -> Result<ValueSlot<'v>> {
        let page_bytes = self.pager.page_bytes();
        if value_is_inline(page_bytes, key.len(), value.len()) {
            return Ok(ValueSlot::Inline(value));
        }
        let length = value.len() as u64;
        let pages = self.pager.overflow_pages(length)?;
        let first = self.allocator.allocate(self.pager, pages)?;
        let mut header = [0u8; OVERFLOW_DATA_OFFSET];
        header[PAGE_KIND_OFFSET] = KIND_OVERFLOW;
        let checksum = streamed_checksum(first, &[&header[PAGE_CHECKSUMMED_OFFSET..], value]);
        write_u64(&mut header, PAGE_CHECKSUM_OFFSET, checksum);
        let offset = first * page_bytes as u64;
        let io = self.pager.io();
        io.write(offset, &header)?;
        io.write(offset + OVERFLOW_DATA_OFFSET as u64, value)?;
        let used = OVERFLOW_DATA_OFFSET as u64 + length;
        let padding = (pages * page_bytes as u64 - used) as usize;
        if padding > 0 {
            io.write(offset + used, &vec![0u8; padding])?;
        }
        Ok(ValueSlot::Overflow {
            pointer: Pointer {
                page: first,
                checksum,
            },
            length,
        })
    }

    /// Frees the overflow run of a value that is no longer stored.
    pub fn release_value(&mut self, value: &StoredValue) -> Result<()> {
        if let StoredValue::Overflow { pointer, length } = value {
            let pages = self.pager.overflow_pages(*length)?;
            self.allocator.free(pointer.page, pages);
        }
        Ok(())
    }

    /// Inserts or replaces; returns the new root and the replaced value.
    pub fn insert(
        &mut self,
        root: Option<Pointer>,
        key: &[u8],
        value: ValueSlot<'_>,
    ) -> Result<(Pointer, Option<StoredValue>)> {
        let cell = leaf_cell(key, value);
        self.insert_cell(root, key, &cell, &mut LeafCache::default(), 0)
    }

    /// Inserts or replaces the leaf `cell` of `key` from the root; returns the new root and
    /// the replaced value. `cache` is left holding the leaf (at tree version `version`) when
    /// the cell fit it, else empty.
    pub fn insert_cell(
        &mut self,
        root: Option<Pointer>,
        key: &[u8],
        cell: &[u8],
        cache: &mut LeafCache,
        version: u64,
    ) -> Result<(Pointer, Option<StoredValue>)> {
        cache.start();
        let page_bytes = self.pager.page_bytes();
        let Some(root) = root else {
            let page = self.allocator.allocate(self.pager, 1)?;
            self.dirty
                .insert(page, NodeBuffer::build(page_bytes, None, &[cell]));
            return Ok((dirty_pointer(page), None));
        };
        let page = self.make_dirty(root)?;
        let descent = Descent {
            depth: 0,
            rightmost: true,
            version,
        };
        let (replaced, split) = self.insert_into(page, key, cell, descent, cache)?;
        let Some((separator, right)) = split else {
            return Ok((dirty_pointer(page), replaced));
        };
        let new_root = self.allocator.allocate(self.pager, 1)?;
        let separator_cell = branch_cell(&separator, dirty_pointer(right));
        let branch = NodeBuffer::build(page_bytes, Some(dirty_pointer(page)), &[&separator_cell]);
        self.dirty.insert(new_root, branch);
        Ok((dirty_pointer(new_root), replaced))
    }

    /// Inserts or replaces `cell` of `key` in the dirty leaf `page` when it fits there;
    /// `None` (and no change) when it does not. The caller knows `page` is the leaf a search
    /// for `key` reaches (see [`LeafCache`]).
    pub fn insert_in_leaf(
        &mut self,
        page: u64,
        key: &[u8],
        cell: &[u8],
    ) -> Result<Option<Option<StoredValue>>> {
        let node = self.node_mut(page);
        debug_assert!(node.is_leaf(), "the leaf cache names leaves");
        match node.view(page)?.search(key)? {
            Ok(index) => {
                let old_bytes = node.cell(index).len();
                if cell.len() > node.room_bytes() + old_bytes {
                    return Ok(None);
                }
                let old = StoredValue::from_slot(node.view(page)?.value(index)?);
                node.remove_cell(index);
                let fits = node.insert_cell(index, cell);
                debug_assert!(fits, "the room was checked");
                Ok(Some(Some(old)))
            }
            Err(index) => Ok(node.insert_cell(index, cell).then_some(None)),
        }
    }

    fn insert_into(
        &mut self,
        page: u64,
        key: &[u8],
        cell: &[u8],
        descent: Descent,
        cache: &mut LeafCache,
    ) -> Result<Inserted> {
        if descent.depth >= TREE_DEPTH_MAX {
            return Err(Error::corrupted(page, "tree deeper than possible"));
        }
        if self.node(page).is_leaf() {
            let node = self.node_mut(page);
            let (index, replaced) = match node.view(page)?.search(key)? {
                Ok(index) => {
                    let old = StoredValue::from_slot(node.view(page)?.value(index)?);
                    node.remove_cell(index);
                    (index, Some(old))
                }
                Err(index) => (index, None),
            };
            if node.insert_cell(index, cell) {
                cache.leaf = Some((page, descent.version));
                return Ok((replaced, None));
            }
            let split = self.split(page, index, cell, descent.rightmost)?;
            return Ok((replaced, Some(split)));
        }
        let node = self.node(page);
        let index = node.view(page)?.child_index_for(key)?;
        let count = node.count();
        let low = (index > 0).then(|| node.key(index - 1));
        let high = (index < count).then(|| node.key(index));
        cache.narrow(low, high);
        let child_is_rightmost = descent.rightmost && index == count;
        let child = self.make_dirty(node.child(index))?;
        self.node_mut(page).set_child(index, dirty_pointer(child));
        let below = Descent {
            depth: descent.depth + 1,
            rightmost: child_is_rightmost,
            version: descent.version,
        };
        let (replaced, split) = self.insert_into(child, key, cell, below, cache)?;
        let Some((separator, right)) = split else {
            return Ok((replaced, None));
        };
        let separator_cell = branch_cell(&separator, dirty_pointer(right));
        if self.node_mut(page).insert_cell(index, &separator_cell) {
            return Ok((replaced, None));
        }
        Ok((
            replaced,
            Some(self.split(page, index, &separator_cell, descent.rightmost)?),
        ))
    }

    /// Splits node `page`, which `new_cell` at `index` overfilled, into two; returns the
    /// separator and the right page. An append at the right edge of the tree leaves the
    /// left node full (sequential loads fill pages); otherwise the bytes are halved.
    fn split(
        &mut self,
        page: u64,
        index: usize,
        new_cell: &[u8],
        rightmost: bool,
    ) -> Result<(Vec<u8>, u64)> {
        let right_page = self.allocator.allocate(self.pager, 1)?;
        let page_bytes = self.pager.page_bytes();
        let node = &self.dirty[&page];
        let leaf = node.is_leaf();
        let mut cells = node.cells();
        cells.insert(index, new_cell);
        let last = cells.len() - 1;
        let at = if rightmost && index == last {
            match self.append_fill_bytes.filter(|_| leaf) {
                Some(fill) => fill_index(&cell_sizes(&cells), fill, last),
                None => last,
            }
        } else {
            let sizes = cell_sizes(&cells);
            if leaf {
                split_index(&sizes, 1, last)
            } else {
                split_index(&sizes, 1, last - 1)
            }
        };
        let (left, right, separator) = if leaf {
            let left = NodeBuffer::build(page_bytes, None, &cells[..at]);
            let right = NodeBuffer::build(page_bytes, None, &cells[at..]);
            (left, right, cell_key(cells[at], true).to_vec())
        } else {
            let left = NodeBuffer::build(page_bytes, Some(node.child(0)), &cells[..at]);
            let right =
                NodeBuffer::build(page_bytes, Some(cell_child(cells[at])), &cells[at + 1..]);
            (left, right, cell_key(cells[at], false).to_vec())
        };
        self.dirty.insert(page, left);
        self.dirty.insert(right_page, right);
        Ok((separator, right_page))
    }

    /// Removes `key`; returns the new root and the removed value.
    pub fn delete(
        &mut self,
        root: Option<Pointer>,
        key: &[u8],
    ) -> Result<(Option<Pointer>, Option<StoredValue>)> {
        let Some(root_pointer) = root else {
            return Ok((None, None));
        };
        if self.source().find(root, key)?.is_none() {
            return Ok((root, None));
        }
        let page = self.make_dirty(root_pointer)?;
        let removed = self.delete_from(page, key, 0)?;
        Ok((self.collapse_root(page), removed))
    }

    /// The root of the tree whose dirty root is `page`, once the root is neither an empty
    /// leaf (the tree is empty: `None`) nor a branch with a single child (the child is the
    /// root); the pages dropped are freed.
    pub fn collapse_root(&mut self, mut page: u64) -> Option<Pointer> {
        loop {
            let node = self.node(page);
            let only_child = match (node.is_leaf(), node.count()) {
                (true, 0) => None,
                (false, 0) => Some(node.child(0)),
                _ => return Some(dirty_pointer(page)),
            };
            self.dirty.remove(&page);
            self.allocator.free(page, 1);
            match only_child {
                None => return None,
                Some(child) if !self.dirty.contains_key(&child.page) => return Some(child),
                Some(child) => page = child.page,
            }
        }
    }

    fn delete_from(&mut self, page: u64, key: &[u8], depth: usize) -> Result<Option<StoredValue>> {
        if depth >= TREE_DEPTH_MAX {
            return Err(Error::corrupted(page, "tree deeper than possible"));
        }
        let node = self.node(page);
        let search = node.view(page)?.search(key)?;
        if node.is_leaf() {
            let Ok(index) = search else {
                return Ok(None);
            };
            let value = StoredValue::from_slot(node.view(page)?.value(index)?);
            self.node_mut(page).remove_cell(index);
            return Ok(Some(value));
        }
        let index = search.map_or_else(|index| index, |index| index + 1);
        let child = self.make_dirty(node.child(index))?;
        self.node_mut(page).set_child(index, dirty_pointer(child));
        let removed = self.delete_from(child, key, depth + 1)?;
        if removed.is_some() {
            self.rebalance(page, index)?;
        }
        Ok(removed)
    }

    /// Makes the branches from `root` down to the leaf whose range holds `key`, which lies
    /// `leaf_depth` branches below the root, dirty, and leaves the leaf as it is. Returns the
    /// root's page (when the root is a branch) and the leaf's pointer; `path` receives each
    /// branch on the way down with the index of the child taken.
    pub fn dirty_branches(
        &mut self,
        root: Pointer,
        key: &[u8],
        leaf_depth: usize,
        path: &mut Vec<PathStep>,
    ) -> Result<(Option<u64>, Pointer)> {
        path.clear();
        if leaf_depth == 0 {
            return Ok((None, root));
        }
        if leaf_depth > TREE_DEPTH_MAX {
            return Err(Error::corrupted(root.page, "tree deeper than possible"));
        }
        let root_page = self.make_dirty(root)?;
        let mut page = root_page;
        loop {
            let node = self.node(page);
            if node.is_leaf() {
                return Err(Error::corrupted(page, "a leaf above the leaves' depth"));
            }
            let index = node.view(page)?.child_index_for(key)?;
            let child = node.child(index);
            path.push(PathStep { page, index });
            if path.len() == leaf_depth {
                return Ok((Some(root_page), child));
            }
            let child = self.make_dirty(child)?;
            self.node_mut(page).set_child(index, dirty_pointer(child));
            page = child;
        }
    }

    /// Puts `node` in place of the node at `old` without reading it: in its page when it is
    /// already dirty, else in a new page (the old one is freed), which `parent` (the branch
    /// step above it, none for the root) then points to. Returns the node's page.
    pub fn replace_node(
        &mut self,
        old: Pointer,
        node: NodeBuffer,
        parent: Option<PathStep>,
    ) -> Result<u64> {
        let page = if self.dirty.contains_key(&old.page) {
            old.page
        } else {
            let page = self.allocator.allocate(self.pager, 1)?;
            self.allocator.free(old.page, 1);
            page
        };
        self.dirty.insert(page, node);
        if let Some(step) = parent {
            self.node_mut(step.page)
                .set_child(step.index, dirty_pointer(page));
        }
        Ok(page)
    }

    /// Merges each node of `path` (bottom-up, the leaf below it first) with a sibling when it
    /// is under-full, as deletions do; `root` is the path's dirty root. Returns the root after
    /// [`Self::collapse_root`].
    pub fn rebalance_path(&mut self, root: u64, path: &[PathStep]) -> Result<Option<Pointer>> {
        for step in path.iter().rev() {
            self.rebalance(step.page, step.index)?;
        }
        Ok(self.collapse_root(root))
    }

    /// Adds the dirty leaf `child`, whose keys start at `separator`, to the tree whose root is
    /// `root` and whose leaves lie `leaf_depth` branches below it: `separator` falls in
    /// the range of an existing leaf whose keys are all below it, and the new leaf takes the
    /// upper part of that range. Branches that overflow split upwards. Returns the root and
    /// the leaves' depth afterwards.
    pub fn insert_child(
        &mut self,
        root: Pointer,
        separator: &[u8],
        child: u64,
        leaf_depth: usize,
    ) -> Result<(u64, usize)> {
        let root = self.make_dirty(root)?;
        let split = if leaf_depth == 0 {
            Some((separator.to_vec(), child))
        } else {
            self.insert_child_below(root, separator, child, 1, leaf_depth, true)?
        };
        let Some((separator, right)) = split else {
            return Ok((root, leaf_depth));
        };
        let new_root = self.allocator.allocate(self.pager, 1)?;
        let separator_cell = branch_cell(&separator, dirty_pointer(right));
        let branch = NodeBuffer::build(
            self.pager.page_bytes(),
            Some(dirty_pointer(root)),
            &[&separator_cell],
        );
        self.dirty.insert(new_root, branch);
        Ok((new_root, leaf_depth + 1))
    }

    /// [`Self::insert_child`] below the dirty branch `page`, `depth` levels below the root
    /// (`rightmost` when every branch above took its last child).
    fn insert_child_below(
        &mut self,
        page: u64,
        separator: &[u8],
        child: u64,
        depth: usize,
        leaf_depth: usize,
        rightmost: bool,
    ) -> Result<Option<(Vec<u8>, u64)>> {
        if depth > TREE_DEPTH_MAX {
            return Err(Error::corrupted(page, "tree deeper than possible"));
        }
        let node = self.node(page);
        if node.is_leaf() {
            return Err(Error::corrupted(page, "a leaf above the leaves' depth"));
        }
        let index = node.view(page)?.child_index_for(separator)?;
        let split = if depth == leaf_depth {
            Some((separator.to_vec(), child))
        } else {
            let below_rightmost = rightmost && index == node.count();
            let below = self.make_dirty(node.child(index))?;
            self.node_mut(page).set_child(index, dirty_pointer(below));
            self.insert_child_below(
                below,
                separator,
                child,
                depth + 1,
                leaf_depth,
                below_rightmost,
            )?
        };
        let Some((separator, right)) = split else {
            return Ok(None);
        };
        let separator_cell = branch_cell(&separator, dirty_pointer(right));
        if self.node_mut(page).insert_cell(index, &separator_cell) {
            return Ok(None);
        }
        Ok(Some(self.split(page, index, &separator_cell, rightmost)?))
    }

    /// Merges dirty child `index` of branch `page` with a sibling when it is under-full and
    /// the two fit one page.
    fn rebalance(&mut self, page: u64, index: usize) -> Result<()> {
        let page_bytes = self.pager.page_bytes();
        let parent = self.node(page);
        let child_pointer = parent.child(index);
        let child = self.node(child_pointer.page);
        if (child.count() > 0 && child.used_bytes() >= underfull_bytes(page_bytes))
            || parent.count() == 0
        {
            return Ok(());
        }
        if child.count() == 0 && self.is_empty_subtree(child_pointer)? {
            return self.unlink_child(page, index);
        }
        let left_index = if index > 0 { index - 1 } else { index };
        let sibling_index = if index > 0 { index - 1 } else { index + 1 };
        let sibling_pointer = parent.child(sibling_index);
        let separator = parent.key(left_index).to_vec();
        let (header, extra) = if child.is_leaf() {
            (LEAF_SLOTS_OFFSET, 0)
        } else {
            (BRANCH_SLOTS_OFFSET, branch_cell_bytes(separator.len()))
        };
        let child_bytes = child.used_bytes();
        let sibling_bytes = match self.source().load(sibling_pointer)? {
            NodeRef::Dirty(view) | NodeRef::Page(view) => view.used_bytes()?,
        };
        if child_bytes + sibling_bytes - header + extra > page_bytes {
            return Ok(());
        }
        let sibling = self.make_dirty(sibling_pointer)?;
        self.node_mut(page)
            .set_child(sibling_index, dirty_pointer(sibling));
        let parent = self.node(page);
        let left_page = parent.child(left_index).page;
        let right_page = parent.child(left_index + 1).page;
        let merged = {
            let left = self.node(left_page);
            let right = self.node(right_page);
            let mut cells = left.cells();
            let separator_cell;
            if !left.is_leaf() {
                separator_cell = branch_cell(&separator, right.child(0));
                cells.push(&separator_cell);
            }
            cells.extend(right.cells());
            let first_child = (!left.is_leaf()).then(|| left.child(0));
            NodeBuffer::build(page_bytes, first_child, &cells)
        };
        self.dirty.insert(left_page, merged);
        self.dirty.remove(&right_page);
        self.allocator.free(right_page, 1);
        self.node_mut(page).remove_cell(left_index);
        Ok(())
    }

    /// Whether the subtree at `pointer` holds no entry: an empty leaf, or branches of one child
    /// each down to one. A branch of one child (what a split at the right edge or merges below
    /// leave) cannot merge its emptied child with a sibling, so the emptiness rises until a
    /// branch with other children unlinks it.
    fn is_empty_subtree(&self, mut pointer: Pointer) -> Result<bool> {
        for _ in 0..TREE_DEPTH_MAX {
            let node = self.source().load(pointer)?;
            if node.is_leaf() {
                return Ok(node.count() == 0);
            }
            if node.count() > 0 {
                return Ok(false);
            }
            pointer = node.child(0)?;
        }
        Err(Error::corrupted(pointer.page, "tree deeper than possible"))
    }

    /// Removes the empty subtree at child `index` of branch `page` (which has another child),
    /// with the separator beside it, and frees its pages.
    fn unlink_child(&mut self, page: u64, index: usize) -> Result<()> {
        let child = self.node(page).child(index);
        self.drop_tree(Some(child))?;
        let node = self.node_mut(page);
        if index == 0 {
            let next = node.child(1);
            node.set_child(0, next);
            node.remove_cell(0);
        } else {
            node.remove_cell(index - 1);
        }
        Ok(())
    }

    /// Frees every page of the tree at `root`, and its overflow runs.
    pub fn drop_tree(&mut self, root: Option<Pointer>) -> Result<()> {
        let mut stack: Vec<(Pointer, usize)> =
            root.into_iter().map(|pointer| (pointer, 0)).collect();
        while let Some((pointer, depth)) = stack.pop() {
            if depth >= TREE_DEPTH_MAX {
                return Err(Error::corrupted(pointer.page, "tree deeper than possible"));
            }
            let mut values = Vec::new();
            {
                let view = match self.source().load(pointer)? {
                    NodeRef::Dirty(view) | NodeRef::Page(view) => view,
                };
                for index in 0..view.count() {
                    if view.is_leaf() {
                        values.push(StoredValue::from_slot(view.value(index)?));
                    } else {
                        stack.push((view.child(index + 1)?, depth + 1));
                    }
                }
                if !view.is_leaf() {
                    stack.push((view.child(0)?, depth + 1));
                }
            }
            for value in &values {
                self.release_value(value)?;
            }
            self.dirty.remove(&pointer.page);
            self.allocator.free(pointer.page, 1);
        }
        Ok(())
    }

    /// Checksums the dirty nodes of the tree at `root` bottom-up (children first, so each
    /// parent records its children's checksums) into `pages`; returns the root's pointer.
    pub fn finalize(
        &mut self,
        root: Pointer,
        pages: &mut Vec<(u64, Box<[u8]>)>,
    ) -> Result<Pointer> {
        let Some(mut node) = self.dirty.remove(&root.page) else {
            return Ok(root);
        };
        if !node.is_leaf() {
            for index in 0..=node.count() {
                let child = self.finalize(node.child(index), pages)?;
                node.set_child(index, child);
            }
        }
        turns::checkpoint();
        let bytes = node.bytes_mut();
        let checksum = page_checksum(root.page, &bytes[PAGE_CHECKSUMMED_OFFSET..]);
        write_u64(bytes, PAGE_CHECKSUM_OFFSET, checksum);
        pages.push((root.page, node.into_bytes()));
        Ok(Pointer {
            page: root.page,
            checksum,
        })
    }
}

/// The index splitting cells of `sizes` into two halves of about equal bytes, within
/// `minimum..=maximum`.
/// Bytes each cell takes in a page, its slot included.
fn cell_sizes(cells: &[&[u8]]) -> Vec<usize> {
    cells.iter().map(|cell| cell.len() + SLOT_BYTES).collect()
}

/// Where to split cells of `sizes` so that the left node keeps at most `fill` bytes (at
/// least one cell, at most `maximum` cells).
fn fill_index(sizes: &[usize], fill: usize, maximum: usize) -> usize {
    let mut running = 0;
    for (index, size) in sizes.iter().enumerate() {
        if running + size > fill {
            return index.clamp(1, maximum.max(1));
        }
        running += size;
    }
    maximum.max(1)
}

fn split_index(sizes: &[usize], minimum: usize, maximum: usize) -> usize {
    let total: usize = sizes.iter().sum();
    let mut running = 0;
    for (index, size) in sizes.iter().enumerate() {
        if running + size > total / 2 {
            return index.clamp(minimum, maximum.max(minimum));
        }
        running += size;
    }
    maximum.max(minimum)
}
