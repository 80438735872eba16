//! The write transaction: copy-on-write changes to named trees, then commit or abort.
//!
//! Invariant: nothing this transaction writes is reachable from the committed state until
//! `commit` writes the commit slot; dropping it without `commit` aborts.

use std::borrow::Cow;
use std::ops::Bound;

use crate::Direction;
use crate::error::Result;

/// The one open write transaction of a database.
pub struct WriteTransaction {
    _private: (),
}

/// A named tree changed through the write transaction. Several may be open at once.
pub struct WriteTree<'t> {
    transaction: &'t WriteTransaction,
}

/// An ordered iteration over a `WriteTree`; it sees changes made between its steps.
pub struct WriteRange<'t> {
    tree: WriteTree<'t>,
}

impl WriteTransaction {
    /// Id this transaction will have once committed.
    pub fn transaction_id(&self) -> u64 {
        todo!()
    }

    /// The tree called `name`, created empty if missing.
    pub fn create_tree(&self, name: &str) -> Result<WriteTree<'_>> {
        let _ = name;
        todo!()
    }

    /// The tree called `name`, or `None` if it does not exist.
    pub fn open_tree(&self, name: &str) -> Result<Option<WriteTree<'_>>> {
        let _ = name;
        todo!()
    }

    /// Deletes the tree called `name` and all its entries; `false` if it did not exist.
    pub fn delete_tree(&self, name: &str) -> Result<bool> {
        let _ = name;
        todo!()
    }

    /// Names of all trees, in byte order.
    pub fn tree_names(&self) -> Result<Vec<String>> {
        todo!()
    }

    /// Makes every change durable (per the sync mode) and visible to new readers.
    pub fn commit(self) -> Result<()> {
        todo!()
    }

    /// Discards every change.
    pub fn abort(self) {
        todo!()
    }
}

impl<'t> WriteTree<'t> {
    /// Number of entries.
    pub fn len(&self) -> Result<u64> {
        let _ = self.transaction;
        todo!()
    }

    /// Whether the tree has no entries.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Cow<'t, [u8]>>> {
        let _ = key;
        todo!()
    }

    /// Stores `value` under `key`, replacing any previous value.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let _ = (key, value);
        todo!()
    }

    /// Removes `key`; `true` if it was present.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        let _ = key;
        todo!()
    }

    /// Entries with keys within the bounds, in `direction` order.
    pub fn range(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        direction: Direction,
    ) -> Result<WriteRange<'t>> {
        let _ = (start, end, direction);
        todo!()
    }

    /// Entries whose keys start with `prefix`, in `direction` order.
    pub fn prefix(&self, prefix: &[u8], direction: Direction) -> Result<WriteRange<'t>> {
        let _ = (prefix, direction);
        todo!()
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Result<Option<(Vec<u8>, Cow<'t, [u8]>)>> {
        todo!()
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Result<Option<(Vec<u8>, Cow<'t, [u8]>)>> {
        todo!()
    }
}

impl<'t> Iterator for WriteRange<'t> {
    type Item = Result<(Vec<u8>, Cow<'t, [u8]>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let _ = &self.tree;
        todo!()
    }
}
