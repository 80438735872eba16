//! Copy-on-write changes to one tree: insert, delete, split, merge, drop a whole tree, and
//! the post-order encoding of dirty nodes at commit.
//!
//! Invariants: a committed page is never changed: `make_dirty` decodes it into a new page
//! number and frees the old one for after the commit. Every dirty node is at most a page
//! once an operation returns (a node one cell over splits in two that fit, because a cell
//! is at most a quarter page). A branch always has `keys + 1` children.

use std::collections::HashMap;

use crate::checksum::{page_checksum, streamed_checksum};
use crate::cursor::{Source, TREE_DEPTH_MAX};
use crate::bytes::write_u64;
use crate::error::{Error, Result};
use crate::layout::*;
use crate::node::{Branch, LeafEntry, Node, StoredValue};
use crate::page::Pointer;
use crate::pager::Pager;
use crate::free_pages::Allocator;

/// A node below this many bytes is merged with a sibling when the two fit one page.
fn underfull_bytes(page_bytes: usize) -> usize {
    page_bytes / 4
}

/// Pointer to a dirty page: its checksum is computed at commit.
fn dirty_pointer(page: u64) -> Pointer {
    Pointer { page, checksum: 0 }
}

/// The write transaction's mutable view: pager, dirty nodes, allocator.
pub struct Editor<'a> {
    /// Reads of committed pages.
    pub pager: &'a Pager,
    /// Nodes changed by this transaction, by their new page number.
    pub dirty: &'a mut HashMap<u64, Node>,
    /// Page allocation.
    pub allocator: &'a mut Allocator,
}

impl Editor<'_> {
    fn source(&self) -> Source<'_> {
        Source { pager: self.pager, dirty: Some(self.dirty) }
    }

    fn node_mut(&mut self, page: u64) -> &mut Node {
        self.dirty.get_mut(&page).expect("callers pass pages they made dirty")
    }

    /// Makes the node at `pointer` dirty; returns its (possibly new) page number.
    fn make_dirty(&mut self, pointer: Pointer) -> Result<u64> {
        if self.dirty.contains_key(&pointer.page) {
            return Ok(pointer.page);
        }
        let node = Node::decode(&self.pager.node(pointer)?)?;
        let page = self.allocator.allocate(self.pager, 1)?;
        self.allocator.free(pointer.page, 1);
        self.dirty.insert(page, node);
        Ok(page)
    }

    /// Stores a value: inline when its cell fits a quarter page, else in a new overflow run.
    pub fn store_value(&mut self, key: &[u8], value: &[u8]) -> Result<StoredValue> {
        let page_bytes = self.pager.page_bytes();
        if leaf_inline_cell_bytes(key.len(), value.len()) <= cell_bytes_max(page_bytes) {
            return Ok(StoredValue::Inline(value.to_vec()));
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
        Ok(StoredValue::Overflow { pointer: Pointer { page: first, checksum }, length })
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
        value: StoredValue,
    ) -> Result<(Pointer, Option<StoredValue>)> {
        let Some(root) = root else {
            let page = self.allocator.allocate(self.pager, 1)?;
            let entry = LeafEntry { key: key.to_vec(), value };
            self.dirty.insert(page, Node::Leaf(vec![entry]));
            return Ok((dirty_pointer(page), None));
        };
        let page = self.make_dirty(root)?;
        let (replaced, split) = self.insert_into(page, key, value, 0)?;
        let Some((separator, right)) = split else {
            return Ok((dirty_pointer(page), replaced));
        };
        let new_root = self.allocator.allocate(self.pager, 1)?;
        let branch =
            Branch { keys: vec![separator], children: vec![dirty_pointer(page), dirty_pointer(right)] };
        self.dirty.insert(new_root, Node::Branch(branch));
        Ok((dirty_pointer(new_root), replaced))
    }

    #[allow(clippy::type_complexity)]
    fn insert_into(
        &mut self,
        page: u64,
        key: &[u8],
        value: StoredValue,
        depth: usize,
    ) -> Result<(Option<StoredValue>, Option<(Vec<u8>, u64)>)> {
        if depth >= TREE_DEPTH_MAX {
            return Err(Error::corrupted(page, "tree deeper than possible"));
        }
        let replaced = match self.node_mut(page) {
            Node::Leaf(entries) => {
                match entries.binary_search_by(|entry| entry.key.as_slice().cmp(key)) {
                    Ok(index) => Some(std::mem::replace(&mut entries[index].value, value)),
                    Err(index) => {
                        entries.insert(index, LeafEntry { key: key.to_vec(), value });
                        None
                    }
                }
            }
            Node::Branch(branch) => {
                let index = child_index(&branch.keys, key);
                let child_pointer = branch.children[index];
                let child = self.make_dirty(child_pointer)?;
                self.branch_mut(page).children[index] = dirty_pointer(child);
                let (replaced, split) = self.insert_into(child, key, value, depth + 1)?;
                if let Some((separator, right)) = split {
                    let branch = self.branch_mut(page);
                    branch.keys.insert(index, separator);
                    branch.children.insert(index + 1, dirty_pointer(right));
                }
                replaced
            }
        };
        let split = if self.dirty[&page].encoded_bytes() > self.pager.page_bytes() {
            Some(self.split(page)?)
        } else {
            None
        };
        Ok((replaced, split))
    }

    fn branch_mut(&mut self, page: u64) -> &mut Branch {
        match self.node_mut(page) {
            Node::Branch(branch) => branch,
            Node::Leaf(_) => unreachable!("page {page} was a branch a moment ago"),
        }
    }

    /// Splits an over-full node in two by bytes; returns the separator and the right page.
    fn split(&mut self, page: u64) -> Result<(Vec<u8>, u64)> {
        let right_page = self.allocator.allocate(self.pager, 1)?;
        let (separator, right) = match self.node_mut(page) {
            Node::Leaf(entries) => {
                let sizes: Vec<usize> =
                    entries.iter().map(|entry| entry.value.cell_bytes(entry.key.len())).collect();
                let at = split_index(&sizes, 1, entries.len() - 1);
                let right = entries.split_off(at);
                (right[0].key.clone(), Node::Leaf(right))
            }
            Node::Branch(branch) => {
                let sizes: Vec<usize> = branch.keys.iter().map(|key| branch_cell_bytes(key.len())).collect();
                let at = split_index(&sizes, 1, branch.keys.len() - 2);
                let right_keys = branch.keys.split_off(at + 1);
                let separator = branch.keys.pop().expect("split index leaves a separator");
                let right_children = branch.children.split_off(at + 1);
                (separator, Node::Branch(Branch { keys: right_keys, children: right_children }))
            }
        };
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
        let mut page = self.make_dirty(root_pointer)?;
        let removed = self.delete_from(page, key, 0)?;
        loop {
            let only_child = match &self.dirty[&page] {
                Node::Leaf(entries) if entries.is_empty() => None,
                Node::Branch(branch) if branch.keys.is_empty() => Some(branch.children[0]),
                _ => return Ok((Some(dirty_pointer(page)), removed)),
            };
            self.dirty.remove(&page);
            self.allocator.free(page, 1);
            match only_child {
                None => return Ok((None, removed)),
                Some(child) if !self.dirty.contains_key(&child.page) => {
                    return Ok((Some(child), removed));
                }
                Some(child) => page = child.page,
            }
        }
    }

    fn delete_from(&mut self, page: u64, key: &[u8], depth: usize) -> Result<Option<StoredValue>> {
        if depth >= TREE_DEPTH_MAX {
            return Err(Error::corrupted(page, "tree deeper than possible"));
        }
        match self.node_mut(page) {
            Node::Leaf(entries) => {
                Ok(match entries.binary_search_by(|entry| entry.key.as_slice().cmp(key)) {
                    Ok(index) => Some(entries.remove(index).value),
                    Err(_) => None,
                })
            }
            Node::Branch(branch) => {
                let index = child_index(&branch.keys, key);
                let child_pointer = branch.children[index];
                let child = self.make_dirty(child_pointer)?;
                self.branch_mut(page).children[index] = dirty_pointer(child);
                let removed = self.delete_from(child, key, depth + 1)?;
                if removed.is_some() {
                    self.rebalance(page, index)?;
                }
                Ok(removed)
            }
        }
    }

    /// Merges dirty child `index` of branch `page` with a sibling when it is under-full and
    /// the two fit one page.
    fn rebalance(&mut self, page: u64, index: usize) -> Result<()> {
        let page_bytes = self.pager.page_bytes();
        let child_page = self.branch_mut(page).children[index].page;
        let child = &self.dirty[&child_page];
        if child.count() > 0 && child.encoded_bytes() >= underfull_bytes(page_bytes) {
            return Ok(());
        }
        let branch = self.branch_mut(page);
        if branch.children.len() < 2 {
            return Ok(());
        }
        let left_index = if index > 0 { index - 1 } else { index };
        let sibling_index = if index > 0 { index - 1 } else { index + 1 };
        let sibling_pointer = branch.children[sibling_index];
        let separator_bytes = branch_cell_bytes(branch.keys[left_index].len());
        let sibling_bytes = match self.source().load(sibling_pointer)? {
            crate::cursor::NodeRef::Dirty(node) => node.encoded_bytes(),
            crate::cursor::NodeRef::Page(view) => Node::decode(&view)?.encoded_bytes(),
        };
        let child = &self.dirty[&child_page];
        let header = if matches!(child, Node::Leaf(_)) { LEAF_SLOTS_OFFSET } else { BRANCH_SLOTS_OFFSET };
        let extra = if matches!(child, Node::Leaf(_)) { 0 } else { separator_bytes };
        if child.encoded_bytes() + sibling_bytes - header + extra > page_bytes {
            return Ok(());
        }
        let sibling = self.make_dirty(sibling_pointer)?;
        self.branch_mut(page).children[sibling_index] = dirty_pointer(sibling);
        let branch = self.branch_mut(page);
        let separator = branch.keys.remove(left_index);
        let right = branch.children.remove(left_index + 1);
        let left = branch.children[left_index];
        let right_node = self.dirty.remove(&right.page).expect("both children are dirty");
        match (self.node_mut(left.page), right_node) {
            (Node::Leaf(left_entries), Node::Leaf(right_entries)) => left_entries.extend(right_entries),
            (Node::Branch(left_branch), Node::Branch(right_branch)) => {
                left_branch.keys.push(separator);
                left_branch.keys.extend(right_branch.keys);
                left_branch.children.extend(right_branch.children);
            }
            _ => return Err(Error::corrupted(left.page, "siblings of different kinds")),
        }
        self.allocator.free(right.page, 1);
        Ok(())
    }

    /// Frees every page of the tree at `root`, and its overflow runs.
    pub fn drop_tree(&mut self, root: Option<Pointer>) -> Result<()> {
        let mut stack: Vec<(Pointer, usize)> = root.into_iter().map(|pointer| (pointer, 0)).collect();
        while let Some((pointer, depth)) = stack.pop() {
            if depth >= TREE_DEPTH_MAX {
                return Err(Error::corrupted(pointer.page, "tree deeper than possible"));
            }
            let node = match self.dirty.remove(&pointer.page) {
                Some(node) => node,
                None => Node::decode(&self.pager.node(pointer)?)?,
            };
            match &node {
                Node::Leaf(entries) => {
                    for entry in entries {
                        self.release_value(&entry.value)?;
                    }
                }
                Node::Branch(branch) => {
                    stack.extend(branch.children.iter().map(|child| (*child, depth + 1)));
                }
            }
            self.allocator.free(pointer.page, 1);
        }
        Ok(())
    }

    /// Encodes the dirty nodes of the tree at `root` bottom-up (children first, so each
    /// parent records its children's checksums) into `pages`; returns the root's pointer.
    pub fn finalize(&mut self, root: Pointer, pages: &mut Vec<(u64, Vec<u8>)>) -> Result<Pointer> {
        let Some(mut node) = self.dirty.remove(&root.page) else {
            return Ok(root);
        };
        if let Node::Branch(branch) = &mut node {
            for child in &mut branch.children {
                *child = self.finalize(*child, pages)?;
            }
        }
        let mut bytes = vec![0u8; self.pager.page_bytes()];
        node.encode(&mut bytes);
        let checksum = page_checksum(root.page, &bytes[PAGE_CHECKSUMMED_OFFSET..]);
        write_u64(&mut bytes, PAGE_CHECKSUM_OFFSET, checksum);
        pages.push((root.page, bytes));
        Ok(Pointer { page: root.page, checksum })
    }
}

/// The child of a branch with separators `keys` whose subtree may hold `key`.
fn child_index(keys: &[Vec<u8>], key: &[u8]) -> usize {
    match keys.binary_search_by(|separator| separator.as_slice().cmp(key)) {
        Ok(index) => index + 1,
        Err(index) => index,
    }
}

/// The index splitting cells of `sizes` into two halves of about equal bytes, within
/// `minimum..=maximum`.
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
