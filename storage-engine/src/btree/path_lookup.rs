//! Point lookups that remember the path of the previous one: a run of gets over nearby keys
//! (ascending document ids under one word, say) starts each search from the deepest node
//! whose key range still holds the key, instead of from the root. Besides exact gets, the
//! entry at or below a key (the chunk holding a document, say).
//!
//! Invariants: `path` is a root-to-leaf path of the tree as of the read snapshot; each entry
//! below the root records the child index its parent chose, and the key range that child
//! covers is checked against the parent's separators before the entry is reused. So a lookup
//! gives exactly what a search from the root gives, whatever the order of the keys asked
//! (order only decides how much of the path is reused).

use crate::btree::cursor::{Cursor, NodeRef, Seek, Source, TREE_DEPTH_MAX};
use crate::error::{Error, Result};
use crate::page_store::page::Pointer;

/// One level of the remembered path: a node, and for a branch the child index taken.
struct Level<'t> {
    node: NodeRef<'t>,
    child: usize,
}

/// Gets in one tree, reusing the path of the previous get.
pub struct PathLookup<'t> {
    source: Source<'t>,
    root: Option<Pointer>,
    path: Vec<Level<'t>>,
}

impl<'t> PathLookup<'t> {
    pub(crate) fn new(source: Source<'t>, root: Option<Pointer>) -> PathLookup<'t> {
        PathLookup {
            source,
            root,
            path: Vec::with_capacity(8),
        }
    }

    /// The value stored under `key`.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<&'t [u8]>> {
        let Some(leaf) = self.leaf_for(key)? else {
            return Ok(None);
        };
        match leaf.search(key)? {
            Ok(index) => Ok(Some(self.source.resolve(leaf.value(index)?)?)),
            Err(_) => Ok(None),
        }
    }

    /// The entry with the largest key at or below `key`, if any (where a backward range from
    /// `key` starts). Found in the leaf of `key`'s path; when that leaf holds nothing at or
    /// below `key`, by a backward seek from the root.
    pub fn at_or_below(&mut self, key: &[u8]) -> Result<Option<(&'t [u8], &'t [u8])>> {
        let Some(leaf) = self.leaf_for(key)? else {
            return Ok(None);
        };
        let index = match leaf.search(key)? {
            Ok(index) => Some(index),
            Err(index) => index.checked_sub(1),
        };
        match index {
            Some(index) => {
                let (found, value) = leaf.entry(index)?;
                Ok(Some((found, self.source.resolve(value)?)))
            }
            None => Cursor::seek(self.source, self.root, Seek::Inclusive(key), false)?.current(),
        }
    }

    /// The leaf whose key range holds `key` (`None` for an empty tree), reached from the
    /// deepest remembered level that covers `key`; the path is remembered.
    fn leaf_for(&mut self, key: &[u8]) -> Result<Option<NodeRef<'t>>> {
        let Some(root) = self.root else {
            return Ok(None);
        };
        let kept = self.levels_covering(key)?;
        self.path.truncate(kept);
        if self.path.is_empty() {
            let node = self.source.load(root)?;
            self.path.push(Level { node, child: 0 });
        }
        loop {
            if self.path.len() > TREE_DEPTH_MAX {
                return Err(Error::corrupted(root.page, "tree deeper than possible"));
            }
            let Some(level) = self.path.last_mut() else {
                return Ok(None);
            };
            let node = level.node;
            if node.is_leaf() {
                return Ok(Some(node));
            }
            let child = node.child_index_for(key)?;
            level.child = child;
            let below = self.source.load(node.child(child)?)?;
            self.path.push(Level {
                node: below,
                child: 0,
            });
        }
    }

    /// How many levels of the remembered path (from the root) cover `key`: the root always
    /// does; a level below does when `key` is within the separators its parent's chosen child
    /// lies between.
    fn levels_covering(&self, key: &[u8]) -> Result<usize> {
        if self.path.is_empty() {
            return Ok(0);
        }
        for depth in 1..self.path.len() {
            let parent = &self.path[depth - 1];
            if !child_covers(&parent.node, parent.child, key)? {
                return Ok(depth);
            }
        }
        Ok(self.path.len())
    }
}

/// Whether child `child` of `branch` covers `key`: child `i` holds the keys from separator
/// `i - 1` (included) to separator `i` (excluded).
fn child_covers(branch: &NodeRef<'_>, child: usize, key: &[u8]) -> Result<bool> {
    if child > 0 && key < branch.key(child - 1)? {
        return Ok(false);
    }
    if child < branch.count() && key >= branch.key(child)? {
        return Ok(false);
    }
    Ok(true)
}
