//! Read transactions: a pinned snapshot, its named trees, lookups and ordered iteration.
//!
//! Invariant: while a `ReadTransaction` lives, its snapshot's transaction id is counted in
//! `SharedState::readers`, so no page reachable from the snapshot is reused, and every
//! slice it hands out stays valid and unchanged for its lifetime.

use std::ops::Bound;
use std::sync::Arc;

use crate::btree::catalog::{self, TreeRoot};
use crate::btree::cursor::Direction;
use crate::btree::cursor::{Cursor, NodeRef, Seek, Source};
use crate::btree::path_lookup::PathLookup;
use crate::btree::tree_fill::{self, TreeFill};
use crate::error::Result;
use crate::page_store::meta::CommitState;
use crate::page_store::page::Pointer;
use crate::transaction::shared::Shared;

/// A consistent snapshot of the database, as of the last commit before it began.
pub struct ReadTransaction {
    shared: Arc<Shared>,
    snapshot: CommitState,
}

/// A named tree seen through a read transaction.
#[derive(Clone, Copy)]
pub struct ReadTree<'t> {
    transaction: &'t ReadTransaction,
    tree: TreeRoot,
}

/// An ordered iteration over a `ReadTree`.
pub struct ReadRange<'t> {
    cursor: Cursor<'t>,
    forward: bool,
    stop: Option<(Vec<u8>, bool)>,
}

impl ReadTransaction {
    pub(crate) fn begin(shared: Arc<Shared>) -> ReadTransaction {
        let snapshot = {
            let mut state = shared.lock();
            let snapshot = state.committed;
            *state.readers.entry(snapshot.transaction_id).or_insert(0) += 1;
            snapshot
        };
        ReadTransaction { shared, snapshot }
    }

    pub(crate) fn commit_state(&self) -> &CommitState {
        &self.snapshot
    }

    fn source(&self) -> Source<'_> {
        Source {
            pager: &self.shared.pager,
            dirty: None,
        }
    }

    /// The page size of the file this snapshot reads.
    pub(crate) fn page_bytes(&self) -> usize {
        self.shared.pager.page_bytes()
    }

    /// Id of the committed transaction this snapshot shows.
    pub fn transaction_id(&self) -> u64 {
        self.snapshot.transaction_id
    }

    /// The tree called `name`, or `None` if it does not exist in this snapshot.
    pub fn open_tree(&self, name: &str) -> Result<Option<ReadTree<'_>>> {
        let name = catalog::check_name(name)?;
        let tree = find_tree(self.source(), self.snapshot.catalog, name)?;
        Ok(tree.map(|tree| ReadTree {
            transaction: self,
            tree,
        }))
    }

    /// Names of all trees, in byte order.
    pub fn tree_names(&self) -> Result<Vec<String>> {
        tree_names(self.source(), self.snapshot.catalog)
    }
}

/// Another read transaction on the same snapshot: the snapshot stays pinned until both end.
impl Clone for ReadTransaction {
    fn clone(&self) -> ReadTransaction {
        let id = self.snapshot.transaction_id;
        *self.shared.lock().readers.entry(id).or_insert(0) += 1;
        ReadTransaction {
            shared: Arc::clone(&self.shared),
            snapshot: self.snapshot,
        }
    }
}

impl Drop for ReadTransaction {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        let id = self.snapshot.transaction_id;
        if let Some(count) = state.readers.get_mut(&id) {
            *count -= 1;
            if *count == 0 {
                state.readers.remove(&id);
            }
        }
    }
}

/// Looks a tree up in the catalog at `catalog`.
pub(crate) fn find_tree(
    source: Source<'_>,
    catalog: Option<Pointer>,
    name: &[u8],
) -> Result<Option<TreeRoot>> {
    let Some((node, index)) = source.find(catalog, name)? else {
        return Ok(None);
    };
    let page = match node {
        NodeRef::Page(view) => view.page(),
        NodeRef::Dirty(_) => 0,
    };
    Ok(Some(catalog::decode(
        source.resolve(node.value(index)?)?,
        page,
    )?))
}

/// All names in the catalog at `catalog`.
pub(crate) fn tree_names(source: Source<'_>, catalog: Option<Pointer>) -> Result<Vec<String>> {
    let mut cursor = Cursor::seek(source, catalog, Seek::End, true)?;
    let mut names = Vec::new();
    while let Some(key) = cursor.current_key()? {
        names.push(String::from_utf8_lossy(key).into_owned());
        cursor.advance(true)?;
    }
    Ok(names)
}

/// The smallest key greater than every key starting with `prefix`, if any: the exclusive
/// end of a prefix range (also for callers that build their own ranges).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Where to seek and where to stop for bounds iterated in `forward` (or backward) order.
pub(crate) fn plan<'k>(
    start: Bound<&'k [u8]>,
    end: Bound<&'k [u8]>,
    forward: bool,
) -> (Seek<'k>, Option<(Vec<u8>, bool)>) {
    let (from, to) = if forward { (start, end) } else { (end, start) };
    let seek = match from {
        Bound::Included(key) => Seek::Inclusive(key),
        Bound::Excluded(key) => Seek::Exclusive(key),
        Bound::Unbounded => Seek::End,
    };
    let stop = match to {
        Bound::Included(key) => Some((key.to_vec(), true)),
        Bound::Excluded(key) => Some((key.to_vec(), false)),
        Bound::Unbounded => None,
    };
    (seek, stop)
}

/// Whether `key` is past the stop bound `(bound, inclusive)` in `forward` (or backward) order.
pub(crate) fn is_past(key: &[u8], stop: &Option<(Vec<u8>, bool)>, forward: bool) -> bool {
    let Some((bound, inclusive)) = stop else {
        return false;
    };
    let ordering = key.cmp(bound.as_slice());
    match (forward, inclusive) {
        (true, true) => ordering.is_gt(),
        (true, false) => ordering.is_ge(),
        (false, true) => ordering.is_lt(),
        (false, false) => ordering.is_le(),
    }
}

impl<'t> ReadTree<'t> {
    fn source(&self) -> Source<'t> {
        self.transaction.source()
    }

    pub(crate) fn pager(&self) -> &'t crate::page_store::pager::Pager {
        &self.transaction.shared.pager
    }

    pub(crate) fn root(&self) -> Option<Pointer> {
        self.tree.root
    }

    /// Number of entries.
    pub fn len(&self) -> u64 {
        self.tree.entry_count
    }

    /// Walks the tree's pages and measures how full they are.
    pub fn fill(&self) -> Result<TreeFill> {
        tree_fill::measure(self.pager(), self.root())
    }

    /// Whether the tree has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<&'t [u8]>> {
        let source = self.source();
        match source.find(self.tree.root, key)? {
            Some((node, index)) => Ok(Some(source.resolve(node.value(index)?)?)),
            None => Ok(None),
        }
    }

    /// Gets that reuse the path of the previous one: cheaper than [`Self::get`] for runs of
    /// nearby keys, such as ascending keys under one prefix.
    pub fn path_lookup(&self) -> PathLookup<'t> {
        PathLookup::new(self.source(), self.tree.root)
    }

    /// Entries with keys within the bounds, in `direction` order.
    pub fn range(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        direction: Direction,
    ) -> Result<ReadRange<'t>> {
        let forward = direction == Direction::Forward;
        let (seek, stop) = plan(start, end, forward);
        let cursor = Cursor::seek(self.source(), self.tree.root, seek, forward)?;
        Ok(ReadRange {
            cursor,
            forward,
            stop,
        })
    }

    /// Entries whose keys start with `prefix`, in `direction` order.
    pub fn prefix(&self, prefix: &[u8], direction: Direction) -> Result<ReadRange<'t>> {
        let end = prefix_end(prefix);
        let end_bound = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        self.range(Bound::Included(prefix), end_bound, direction)
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Result<Option<(&'t [u8], &'t [u8])>> {
        Cursor::seek(self.source(), self.tree.root, Seek::End, true)?.current()
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Result<Option<(&'t [u8], &'t [u8])>> {
        Cursor::seek(self.source(), self.tree.root, Seek::End, false)?.current()
    }
}

impl<'t> ReadRange<'t> {
    fn step(&mut self) -> Result<Option<(&'t [u8], &'t [u8])>> {
        let Some((key, value)) = self.cursor.current()? else {
            return Ok(None);
        };
        if is_past(key, &self.stop, self.forward) {
            self.cursor = Cursor::empty(self.cursor.source());
            return Ok(None);
        }
        self.cursor.advance(self.forward)?;
        Ok(Some((key, value)))
    }
}

impl<'t> Iterator for ReadRange<'t> {
    type Item = Result<(&'t [u8], &'t [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.step() {
            Ok(entry) => entry.map(Ok),
            Err(error) => {
                self.cursor = Cursor::empty(self.cursor.source());
                Some(Err(error))
            }
        }
    }
}
