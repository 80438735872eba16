//! Read transactions: a pinned snapshot, its named trees, lookups and ordered iteration.
//!
//! Invariant: while a `ReadTransaction` lives, no page reachable from its snapshot is
//! reused, so every slice it hands out stays valid and unchanged for its lifetime.

use std::ops::Bound;

use crate::Direction;
use crate::error::Result;

/// A consistent snapshot of the database, as of the last commit before it began.
pub struct ReadTransaction {
    _private: (),
}

/// A named tree seen through a read transaction.
pub struct ReadTree<'t> {
    transaction: &'t ReadTransaction,
}

/// An ordered iteration over a `ReadTree`.
pub struct ReadRange<'t> {
    tree: ReadTree<'t>,
}

impl ReadTransaction {
    /// Id of the committed transaction this snapshot shows.
    pub fn transaction_id(&self) -> u64 {
        todo!()
    }

    /// The tree called `name`, or `None` if it does not exist in this snapshot.
    pub fn open_tree(&self, name: &str) -> Result<Option<ReadTree<'_>>> {
        let _ = name;
        todo!()
    }

    /// Names of all trees, in byte order.
    pub fn tree_names(&self) -> Result<Vec<String>> {
        todo!()
    }
}

impl<'t> ReadTree<'t> {
    /// Number of entries.
    pub fn len(&self) -> u64 {
        let _ = self.transaction;
        todo!()
    }

    /// Whether the tree has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<&'t [u8]>> {
        let _ = key;
        todo!()
    }

    /// Entries with keys within the bounds, in `direction` order.
    pub fn range(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        direction: Direction,
    ) -> Result<ReadRange<'t>> {
        let _ = (start, end, direction);
        todo!()
    }

    /// Entries whose keys start with `prefix`, in `direction` order.
    pub fn prefix(&self, prefix: &[u8], direction: Direction) -> Result<ReadRange<'t>> {
        let _ = (prefix, direction);
        todo!()
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Result<Option<(&'t [u8], &'t [u8])>> {
        todo!()
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Result<Option<(&'t [u8], &'t [u8])>> {
        todo!()
    }
}

impl<'t> Iterator for ReadRange<'t> {
    type Item = Result<(&'t [u8], &'t [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        let _ = &self.tree;
        todo!()
    }
}
