//! Navigation over a tree whose nodes are either verified pages or, inside a write
//! transaction, dirty decoded nodes: point lookups and a stack cursor that walks entries
//! forward or backward.
//!
//! Invariants: the cursor's stack is the path from the root to its position; a branch on
//! the stack stores the index of the child below it (or, on top, the child to descend into
//! next); a leaf on top stores an entry index, valid when below its count. The stack never
//! grows past `TREE_DEPTH_MAX`, so a damaged tree cannot make a walk loop forever.

use std::collections::HashMap;

use crate::btree::node::NodeBuffer;
use crate::error::{Error, Result};
use crate::page_store::page::{PageView, Pointer, ValueSlot};
use crate::page_store::pager::Pager;

/// Deepest tree possible: a fan-out of at least four per branch would need 4^32 entries.
pub const TREE_DEPTH_MAX: usize = 32;

/// Order of an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Ascending key order.
    Forward,
    /// Descending key order.
    Backward,
}

/// A tree node as the cursor sees it: a committed page, or a dirty node of the open
/// write transaction (both in page format).
#[derive(Clone, Copy)]
pub enum NodeRef<'a> {
    /// A committed page.
    Page(PageView<'a>),
    /// A node changed by the open write transaction.
    Dirty(PageView<'a>),
}

impl<'a> std::ops::Deref for NodeRef<'a> {
    type Target = PageView<'a>;

    fn deref(&self) -> &PageView<'a> {
        match self {
            NodeRef::Page(view) | NodeRef::Dirty(view) => view,
        }
    }
}

/// Where nodes come from: the pager, and the write transaction's dirty nodes if any.
#[derive(Clone, Copy)]
pub struct Source<'a> {
    /// Verified committed pages.
    pub pager: &'a Pager,
    /// Dirty nodes of the open write transaction, by page number.
    pub dirty: Option<&'a HashMap<u64, NodeBuffer, crate::free_space::free_pages::PageHashBuilder>>,
}

impl<'a> Source<'a> {
    /// The node `pointer` names.
    pub fn load(&self, pointer: Pointer) -> Result<NodeRef<'a>> {
        if let Some(node) = self.dirty.and_then(|dirty| dirty.get(&pointer.page)) {
            return Ok(NodeRef::Dirty(node.view(pointer.page)?));
        }
        Ok(NodeRef::Page(self.pager.node(pointer)?))
    }

    /// The bytes of a value slot.
    pub fn resolve(&self, value: ValueSlot<'a>) -> Result<&'a [u8]> {
        match value {
            ValueSlot::Inline(bytes) => Ok(bytes),
            ValueSlot::Overflow { pointer, length } => self.pager.overflow(pointer, length),
        }
    }

    /// The leaf holding `key` and its entry index, if the key is present.
    pub fn find(&self, root: Option<Pointer>, key: &[u8]) -> Result<Option<(NodeRef<'a>, usize)>> {
        let Some(root) = root else {
            return Ok(None);
        };
        let mut node = self.load(root)?;
        for _ in 0..TREE_DEPTH_MAX {
            if node.is_leaf() {
                return Ok(node.search(key)?.ok().map(|index| (node, index)));
            }
            node = self.load(node.child(node.child_index_for(key)?)?)?;
        }
        Err(Error::corrupted(root.page, "tree deeper than possible"))
    }
}

impl<'a> Source<'a> {
    /// The leaf whose range holds `key`, the key its range ends before (none for the tree's
    /// last leaf), and its depth (branches above it).
    pub fn leaf_and_high(
        &self,
        root: Pointer,
        key: &[u8],
    ) -> Result<(NodeRef<'a>, Option<&'a [u8]>, usize)> {
        let mut node = self.load(root)?;
        let mut high = None;
        for depth in 0..TREE_DEPTH_MAX {
            if node.is_leaf() {
                return Ok((node, high, depth));
            }
            let index = node.child_index_for(key)?;
            if index < node.count() {
                high = Some(node.key(index)?);
            }
            node = self.load(node.child(index)?)?;
        }
        Err(Error::corrupted(root.page, "tree deeper than possible"))
    }
}

/// Where a seek starts.
#[derive(Clone, Copy)]
pub enum Seek<'k> {
    /// The first entry (forward) or the last entry (backward).
    End,
    /// Forward: the first key `>= key`; backward: the last key `<= key`.
    Inclusive(&'k [u8]),
    /// Forward: the first key `> key`; backward: the last key `< key`.
    Exclusive(&'k [u8]),
}

/// A position in a tree.
pub struct Cursor<'a> {
    source: Source<'a>,
    stack: Vec<(NodeRef<'a>, usize)>,
}

impl<'a> Cursor<'a> {
    /// A cursor positioned by `seek` in direction `forward` (or backward).
    pub fn seek(
        source: Source<'a>,
        root: Option<Pointer>,
        seek: Seek<'_>,
        forward: bool,
    ) -> Result<Cursor<'a>> {
        let mut cursor = Cursor {
            source,
            stack: Vec::with_capacity(8),
        };
        let Some(root) = root else {
            return Ok(cursor);
        };
        let mut node = source.load(root)?;
        loop {
            cursor.check_depth()?;
            if node.is_leaf() {
                let position = leaf_position(&node, seek, forward)?;
                cursor.stack.push((node, position));
                break;
            }
            let index = match seek {
                Seek::End if forward => 0,
                Seek::End => node.count(),
                Seek::Inclusive(key) | Seek::Exclusive(key) => node.child_index_for(key)?,
            };
            cursor.stack.push((node, index));
            node = source.load(node.child(index)?)?;
        }
        cursor.normalize(forward)?;
        Ok(cursor)
    }

    fn check_depth(&self) -> Result<()> {
        if self.stack.len() >= TREE_DEPTH_MAX {
            let page = match self.stack.first() {
                Some((NodeRef::Page(view), _)) => view.page(),
                _ => 0,
            };
            return Err(Error::corrupted(page, "tree deeper than possible"));
        }
        Ok(())
    }

    /// The entry under the cursor, `None` once past either end.
    pub fn current(&self) -> Result<Option<(&'a [u8], &'a [u8])>> {
        let Some((node, position)) = self.stack.last() else {
            return Ok(None);
        };
        let (key, value) = node.entry(*position)?;
        Ok(Some((key, self.source.resolve(value)?)))
    }

    /// The key under the cursor.
    pub fn current_key(&self) -> Result<Option<&'a [u8]>> {
        match self.stack.last() {
            Some((node, position)) => node.key(*position).map(Some),
            None => Ok(None),
        }
    }

    /// Moves to the next entry in `forward` (or backward) order.
    pub fn advance(&mut self, forward: bool) -> Result<()> {
        if let Some((_, position)) = self.stack.last_mut() {
            *position = if forward {
                position.wrapping_add(1)
            } else {
                position.wrapping_sub(1)
            };
        }
        self.normalize(forward)
    }

    /// Moves from an exhausted leaf or a branch awaiting descent to a valid entry (or empties
    /// the stack at the end). Backward positions use `usize::MAX` for "before the first".
    fn normalize(&mut self, forward: bool) -> Result<()> {
        while let Some(&(node, position)) = self.stack.last() {
            let exhausted = if node.is_leaf() {
                if position < node.count() {
                    return Ok(());
                }
                true
            } else {
                position > node.count()
            };
            if exhausted {
                self.stack.pop();
                if let Some((_, parent_position)) = self.stack.last_mut() {
                    *parent_position = if forward {
                        parent_position.wrapping_add(1)
                    } else {
                        parent_position.wrapping_sub(1)
                    };
                }
                continue;
            }
            self.check_depth()?;
            let child = self.source.load(node.child(position)?)?;
            let child_position = match (forward, child.is_leaf()) {
                (true, _) => 0,
                (false, true) => child.count().wrapping_sub(1),
                (false, false) => child.count(),
            };
            self.stack.push((child, child_position));
        }
        Ok(())
    }
}

fn leaf_position(node: &NodeRef<'_>, seek: Seek<'_>, forward: bool) -> Result<usize> {
    Ok(match (seek, forward) {
        (Seek::End, true) => 0,
        (Seek::End, false) => node.count().wrapping_sub(1),
        (Seek::Inclusive(key), true) => node.search(key)?.unwrap_or_else(|index| index),
        (Seek::Exclusive(key), true) => match node.search(key)? {
            Ok(index) => index + 1,
            Err(index) => index,
        },
        (Seek::Inclusive(key), false) => match node.search(key)? {
            Ok(index) => index,
            Err(index) => index.wrapping_sub(1),
        },
        (Seek::Exclusive(key), false) => match node.search(key)? {
            Ok(index) | Err(index) => index.wrapping_sub(1),
        },
    })
}

impl<'a> Cursor<'a> {
    /// A cursor past the end: `current` gives `None`.
    pub fn empty(source: Source<'a>) -> Cursor<'a> {
        Cursor {
            source,
            stack: Vec::new(),
        }
    }

    /// Where this cursor reads nodes from.
    pub fn source(&self) -> Source<'a> {
        self.source
    }
}
