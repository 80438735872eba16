//! The few key/value operations the persisted graph needs, over the page store's named trees
//! (and over an in-memory model used to test the graph logic on its own).
//!
//! Invariant: a `TreeRead` sees one consistent state for its whole life (a read snapshot, or
//! the write transaction including its own changes).

use crate::vector::error::VectorError;
use crate::{Direction, ReadTransaction, ReadTree, WriteTransaction, WriteTree};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Bound;

/// Visits one entry of a scan.
pub type EntryVisitor<'v> = dyn FnMut(&[u8], &[u8]) -> Result<(), VectorError> + 'v;

/// Reading one tree.
pub trait TreeRead {
    /// The value under `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Cow<'_, [u8]>>, VectorError>;
    /// Visits every entry in key order.
    fn for_each(&self, visit: &mut EntryVisitor<'_>) -> Result<(), VectorError>;
}

/// Changing one tree.
pub trait TreeWrite: TreeRead {
    /// Stores `value` under `key`.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), VectorError>;
    /// Removes `key`; whether it was present.
    fn delete(&self, key: &[u8]) -> Result<bool, VectorError>;
}

/// Opening trees of a read snapshot.
pub trait ReadTrees {
    /// The tree called `name`, if it exists.
    fn open_read(&self, name: &str) -> Result<Option<Box<dyn TreeRead + '_>>, VectorError>;
}

/// Opening (creating) trees of a write transaction.
pub trait WriteTrees {
    /// The tree called `name`, created if missing.
    fn open_write(&self, name: &str) -> Result<Box<dyn TreeWrite + '_>, VectorError>;
    /// Deletes the tree called `name`; whether it existed.
    fn drop_tree(&self, name: &str) -> Result<bool, VectorError>;
}

impl TreeRead for ReadTree<'_> {
    #[inline]
    fn get(&self, key: &[u8]) -> Result<Option<Cow<'_, [u8]>>, VectorError> {
        Ok(ReadTree::get(self, key)?.map(Cow::Borrowed))
    }

    fn for_each(&self, visit: &mut EntryVisitor<'_>) -> Result<(), VectorError> {
        for entry in self.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
            let (key, value) = entry?;
            visit(key, value)?;
        }
        Ok(())
    }
}

impl TreeRead for WriteTree<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Cow<'_, [u8]>>, VectorError> {
        Ok(WriteTree::get(self, key)?)
    }

    fn for_each(&self, visit: &mut EntryVisitor<'_>) -> Result<(), VectorError> {
        for entry in self.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)? {
            let (key, value) = entry?;
            visit(&key, &value)?;
        }
        Ok(())
    }
}

impl TreeWrite for WriteTree<'_> {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), VectorError> {
        Ok(WriteTree::put(self, key, value)?)
    }

    fn delete(&self, key: &[u8]) -> Result<bool, VectorError> {
        Ok(WriteTree::delete(self, key)?)
    }
}

impl ReadTrees for ReadTransaction {
    fn open_read(&self, name: &str) -> Result<Option<Box<dyn TreeRead + '_>>, VectorError> {
        Ok(self
            .open_tree(name)?
            .map(|tree| Box::new(tree) as Box<dyn TreeRead + '_>))
    }
}

impl WriteTrees for WriteTransaction {
    fn open_write(&self, name: &str) -> Result<Box<dyn TreeWrite + '_>, VectorError> {
        Ok(Box::new(self.create_tree(name)?))
    }

    fn drop_tree(&self, name: &str) -> Result<bool, VectorError> {
        Ok(self.delete_tree(name)?)
    }
}

/// Trees by name, each a sorted map.
type TreeMap = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// In-memory trees: a model of a page store without snapshots, for tests of the graph logic.
#[derive(Debug, Default, Clone)]
pub struct MemoryTrees {
    trees: RefCell<TreeMap>,
}

/// One tree of `MemoryTrees`.
struct MemoryTree<'a> {
    trees: &'a MemoryTrees,
    name: String,
}

impl MemoryTrees {
    /// No trees.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TreeRead for MemoryTree<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Cow<'_, [u8]>>, VectorError> {
        let trees = self.trees.trees.borrow();
        Ok(trees
            .get(&self.name)
            .and_then(|tree| tree.get(key))
            .map(|value| Cow::Owned(value.clone())))
    }

    fn for_each(&self, visit: &mut EntryVisitor<'_>) -> Result<(), VectorError> {
        let entries: Vec<(Vec<u8>, Vec<u8>)> = self
            .trees
            .trees
            .borrow()
            .get(&self.name)
            .map(|tree| {
                tree.iter()
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect()
            })
            .unwrap_or_default();
        for (key, value) in entries {
            visit(&key, &value)?;
        }
        Ok(())
    }
}

impl TreeWrite for MemoryTree<'_> {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), VectorError> {
        let mut trees = self.trees.trees.borrow_mut();
        trees
            .entry(self.name.clone())
            .or_default()
            .insert(key.to_vec(), value.to_vec());
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<bool, VectorError> {
        let mut trees = self.trees.trees.borrow_mut();
        Ok(trees
            .get_mut(&self.name)
            .is_some_and(|tree| tree.remove(key).is_some()))
    }
}

impl ReadTrees for MemoryTrees {
    fn open_read(&self, name: &str) -> Result<Option<Box<dyn TreeRead + '_>>, VectorError> {
        if !self.trees.borrow().contains_key(name) {
            return Ok(None);
        }
        Ok(Some(Box::new(MemoryTree {
            trees: self,
            name: name.to_owned(),
        })))
    }
}

impl WriteTrees for MemoryTrees {
    fn open_write(&self, name: &str) -> Result<Box<dyn TreeWrite + '_>, VectorError> {
        self.trees.borrow_mut().entry(name.to_owned()).or_default();
        Ok(Box::new(MemoryTree {
            trees: self,
            name: name.to_owned(),
        }))
    }

    fn drop_tree(&self, name: &str) -> Result<bool, VectorError> {
        Ok(self.trees.borrow_mut().remove(name).is_some())
    }
}
