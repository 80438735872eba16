//! The write transaction: copy-on-write changes to named trees, then commit or abort.
//!
//! Invariants: nothing this transaction writes is reachable from the committed state until
//! `commit` writes the commit slot; dropping it without `commit` aborts. An operation that
//! fails half-way (a full disk during a split) marks the transaction failed: it can then
//! only be aborted, so a half-applied change never commits.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

use crate::btree::catalog::{self, TreeRoot};
use crate::btree::cursor::Direction;
use crate::btree::cursor::{Cursor, Seek, Source};
use crate::btree::editor::Editor;
use crate::btree::leaf_cache::LeafCache;
use crate::btree::node::leaf_cell;
use crate::error::{Error, Result};
use crate::free_space::free_pages::Allocator;
use crate::page_store::layout::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use crate::page_store::page::{PageView, Pointer, ValueSlot};
use crate::transaction::commit;
use crate::transaction::merge_writer::MergeWriter;
use crate::transaction::read_transaction::{find_tree, is_past, plan, prefix_end, tree_names};
use crate::transaction::shared::Shared;
use crate::transaction::write_state::{TreeSlot, WriteState};

/// The one open write transaction of a database.
pub struct WriteTransaction {
    pub(crate) shared: Arc<Shared>,
    pub(crate) state: RefCell<WriteState>,
}

/// A named tree changed through the write transaction. Several may be open at once.
pub struct WriteTree<'t> {
    transaction: &'t WriteTransaction,
    name: Vec<u8>,
    /// The leaf this handle last inserted into.
    cache: RefCell<LeafCache>,
}

/// An ordered iteration over a `WriteTree`; it sees changes made between its steps.
pub struct WriteRange<'t> {
    tree: WriteTree<'t>,
    forward: bool,
    next_seek: Option<(Vec<u8>, bool)>,
    stop: Option<(Vec<u8>, bool)>,
    done: bool,
}

/// An owned entry, as write-side iteration yields.
type OwnedEntry<'t> = (Vec<u8>, Cow<'t, [u8]>);

impl WriteTransaction {
    pub(crate) fn begin(shared: Arc<Shared>) -> Result<WriteTransaction> {
        let (base, reusable) = {
            let mut state = shared.lock();
            if state.poisoned {
                return Err(Error::Poisoned);
            }
            if state.write_open {
                return Err(Error::WriteInProgress);
            }
            state.write_open = true;
            let oldest = state.readers.keys().next().copied();
            state.free.release(oldest);
            (state.committed, std::mem::take(&mut state.free.reusable))
        };
        let allocator = Allocator::new(
            reusable,
            base.high_water_pages,
            shared.options.maximum_size_bytes,
        );
        let state = WriteState {
            base,
            dirty: HashMap::default(),
            allocator,
            trees: BTreeMap::new(),
            failed: false,
            finished: false,
            spilled: false,
            append_fill_bytes: None,
        };
        Ok(WriteTransaction {
            shared,
            state: RefCell::new(state),
        })
    }

    /// Runs `work` on the released free-page records this transaction has not taken.
    pub(crate) fn with_untaken_records<Output>(
        &self,
        work: impl FnOnce(&crate::free_space::free_pages::Records) -> Output,
    ) -> Output {
        work(self.state.borrow().allocator.untaken())
    }

    /// Id this transaction will have once committed.
    pub fn transaction_id(&self) -> u64 {
        self.state.borrow().base.transaction_id + 1
    }

    /// Loads the slot of tree `name` into the transaction's table; `false` if it does not exist.
    fn load_tree(&self, name: &[u8]) -> Result<bool> {
        let mut state = self.state.borrow_mut();
        if let Some(slot) = state.trees.get(name) {
            return Ok(!slot.deleted);
        }
        let source = Source {
            pager: &self.shared.pager,
            dirty: None,
        };
        let Some(tree) = find_tree(source, state.base.catalog, name)? else {
            return Ok(false);
        };
        state.trees.insert(
            name.to_vec(),
            TreeSlot {
                tree,
                changed: false,
                deleted: false,
                version: 0,
            },
        );
        Ok(true)
    }

    /// The tree called `name`, created empty if missing.
    pub fn create_tree(&self, name: &str) -> Result<WriteTree<'_>> {
        let name = catalog::check_name(name)?;
        if !self.load_tree(name)? {
            let empty = TreeRoot {
                root: None,
                entry_count: 0,
            };
            let slot = TreeSlot {
                tree: empty,
                changed: true,
                deleted: false,
                version: 0,
            };
            self.state.borrow_mut().trees.insert(name.to_vec(), slot);
        }
        Ok(WriteTree {
            transaction: self,
            name: name.to_vec(),
            cache: RefCell::default(),
        })
    }

    /// The tree called `name`, or `None` if it does not exist.
    pub fn open_tree(&self, name: &str) -> Result<Option<WriteTree<'_>>> {
        let name = catalog::check_name(name)?;
        Ok(self.load_tree(name)?.then(|| WriteTree {
            transaction: self,
            name: name.to_vec(),
            cache: RefCell::default(),
        }))
    }

    /// Deletes the tree called `name` and all its entries; `false` if it did not exist.
    /// A `WriteTree` of it still open sees an empty tree, which a `put` creates again.
    pub fn delete_tree(&self, name: &str) -> Result<bool> {
        let name = catalog::check_name(name)?;
        if !self.load_tree(name)? {
            return Ok(false);
        }
        self.edit(|editor, state| {
            let slot = state
                .trees
                .get_mut(name)
                .expect("load_tree inserted the slot");
            let root = slot.tree.root;
            *slot = TreeSlot {
                tree: TreeRoot {
                    root: None,
                    entry_count: 0,
                },
                changed: true,
                deleted: true,
                version: slot.version + 1,
            };
            editor.drop_tree(root)
        })?;
        Ok(true)
    }

    /// Names of all trees, in byte order.
    pub fn tree_names(&self) -> Result<Vec<String>> {
        let state = self.state.borrow();
        let source = Source {
            pager: &self.shared.pager,
            dirty: None,
        };
        let mut names: std::collections::BTreeSet<String> = tree_names(source, state.base.catalog)?
            .into_iter()
            .collect();
        for (name, slot) in &state.trees {
            let name = String::from_utf8_lossy(name).into_owned();
            if slot.deleted {
                names.remove(&name);
            } else {
                names.insert(name);
            }
        }
        Ok(names.into_iter().collect())
    }

    /// Runs a change with an editor; a failure marks the transaction failed.
    pub(crate) fn edit<R>(
        &self,
        change: impl FnOnce(&mut Editor<'_>, &mut TreeTable<'_>) -> Result<R>,
    ) -> Result<R> {
        let mut guard = self.state.borrow_mut();
        let state = &mut *guard;
        if state.failed {
            return Err(Error::TransactionFailed);
        }
        let mut editor = Editor {
            pager: &self.shared.pager,
            dirty: &mut state.dirty,
            allocator: &mut state.allocator,
            append_fill_bytes: state.append_fill_bytes,
        };
        let mut table = TreeTable {
            trees: &mut state.trees,
        };
        let outcome = change(&mut editor, &mut table);
        let spilled = match &outcome {
            Ok(_) if self.outgrew_its_budget(state) => {
                crate::transaction::spill::spill(&self.shared.pager, state)
            }
            _ => Ok(()),
        };
        if outcome.is_err() || spilled.is_err() {
            state.failed = true;
        }
        spilled?;
        outcome
    }

    /// Whether the changed pages in memory exceed [`Options::write_memory_bytes_max`].
    ///
    /// [`Options::write_memory_bytes_max`]: crate::Options::write_memory_bytes_max
    fn outgrew_its_budget(&self, state: &WriteState) -> bool {
        self.shared
            .options
            .write_memory_bytes_max
            .is_some_and(|maximum| {
                state.dirty.len() as u64 * self.shared.pager.page_bytes() as u64 > maximum
            })
    }

    /// Bytes of changed pages this transaction holds in memory.
    pub fn changed_bytes(&self) -> u64 {
        self.state.borrow().dirty.len() as u64 * self.shared.pager.page_bytes() as u64
    }

    /// Makes every change durable (per the sync mode) and visible to new readers.
    pub fn commit(self) -> Result<()> {
        let mut state = self.state.borrow_mut();
        if state.failed {
            drop(state);
            self.abort();
            return Err(Error::TransactionFailed);
        }
        commit::commit(&self.shared, &mut state)?;
        state.finished = true;
        Ok(())
    }

    /// Discards every change.
    pub fn abort(self) {
        // Drop does the work.
    }
}

impl Drop for WriteTransaction {
    fn drop(&mut self) {
        let state = self.state.get_mut();
        if state.finished {
            return;
        }
        let allocator = std::mem::replace(
            &mut state.allocator,
            Allocator::new(Default::default(), 0, 0),
        );
        let mut shared = self.shared.lock();
        shared.free.reusable.extend(allocator.records_after_abort());
        shared.write_open = false;
    }
}

/// Whether a value read from the mapping at leaf `page` (in the overflow run at
/// `overflow_page`, if any) may change before the transaction ends: a page the transaction
/// allocated (a spilled leaf, an overflow run it wrote) may be freed by a later change and
/// written again by a later allocation, so such a value is copied, never borrowed.
fn is_rewritable(state: &WriteState, page: u64, overflow_page: Option<u64>) -> bool {
    let fresh = &state.allocator.fresh;
    (state.spilled && fresh.contains(&page))
        || overflow_page.is_some_and(|run| fresh.contains(&run))
}

/// The transaction's tree table, as an edit closure sees it.
pub(crate) struct TreeTable<'a> {
    trees: &'a mut BTreeMap<Vec<u8>, TreeSlot>,
}

impl std::ops::Deref for TreeTable<'_> {
    type Target = BTreeMap<Vec<u8>, TreeSlot>;
    fn deref(&self) -> &Self::Target {
        self.trees
    }
}

impl std::ops::DerefMut for TreeTable<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.trees
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > KEY_BYTES_MAX {
        return Err(Error::KeyTooLarge {
            length: key.len(),
            maximum: KEY_BYTES_MAX,
        });
    }
    Ok(())
}

impl<'t> WriteTree<'t> {
    fn root(&self) -> Option<Pointer> {
        self.transaction
            .state
            .borrow()
            .trees
            .get(&self.name)
            .and_then(|slot| slot.tree.root)
    }

    /// Number of entries.
    pub fn len(&self) -> Result<u64> {
        let state = self.transaction.state.borrow();
        Ok(state
            .trees
            .get(&self.name)
            .map_or(0, |slot| slot.tree.entry_count))
    }

    /// Whether the tree has no entries.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// The value stored under `key`. Values on pages this transaction did not change are
    /// borrowed from the mapping; the others are copied.
    pub fn get(&self, key: &[u8]) -> Result<Option<Cow<'t, [u8]>>> {
        let pager: &'t crate::page_store::pager::Pager = &self.transaction.shared.pager;
        let state = self.transaction.state.borrow();
        let source = Source {
            pager,
            dirty: Some(&state.dirty),
        };
        let slot = state.trees.get(&self.name);
        let version = slot.map_or(0, |slot| slot.version);
        if let Some(page) = self.cache.borrow().leaf_for(key, version) {
            let node = state.dirty.get(&page).expect("a cached leaf is dirty");
            let view = node.view(page)?;
            return match view.search(key)? {
                Ok(index) => Ok(Some(Cow::Owned(
                    source.resolve(view.value(index)?)?.to_vec(),
                ))),
                Err(_) => Ok(None),
            };
        }
        let root = slot.and_then(|slot| slot.tree.root);
        let Some((node, index)) = source.find(root, key)? else {
            return Ok(None);
        };
        match node {
            crate::btree::cursor::NodeRef::Page(view) => {
                let slot = view.value(index)?;
                let overflow_page = match slot {
                    ValueSlot::Overflow { pointer, .. } => Some(pointer.page),
                    ValueSlot::Inline(_) => None,
                };
                if is_rewritable(&state, view.page(), overflow_page) {
                    return Ok(Some(Cow::Owned(source.resolve(slot)?.to_vec())));
                }
                // The page is committed and stays unchanged for this transaction's life:
                // view it again with the pager's lifetime to borrow from the mapping.
                let page = PageView::new(view.page(), pager.raw_pages(view.page(), 1)?)?;
                let value = match page.value(index)? {
                    ValueSlot::Inline(bytes) => bytes,
                    ValueSlot::Overflow { pointer, length } => pager.overflow(pointer, length)?,
                };
                Ok(Some(Cow::Borrowed(value)))
            }
            crate::btree::cursor::NodeRef::Dirty(_) => Ok(Some(Cow::Owned(
                source.resolve(node.value(index)?)?.to_vec(),
            ))),
        }
    }

    /// Stores `value` under `key`, replacing any previous value.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        turns::checkpoint();
        check_key(key)?;
        if value.len() as u64 > VALUE_BYTES_MAX {
            return Err(Error::ValueTooLarge {
                length: value.len() as u64,
                maximum: VALUE_BYTES_MAX,
            });
        }
        self.transaction.edit(|editor, trees| {
            let stored = editor.store_value(key, value)?;
            let cell = leaf_cell(key, stored);
            let slot = trees
                .get_mut(&self.name)
                .expect("a WriteTree's slot is loaded");
            let mut cache = self.cache.borrow_mut();
            let cached = match cache.leaf_for(key, slot.version) {
                Some(page) => editor.insert_in_leaf(page, key, &cell)?,
                None => None,
            };
            let replaced = match cached {
                Some(replaced) => replaced,
                None => {
                    slot.version += 1;
                    let (root, replaced) =
                        editor.insert_cell(slot.tree.root, key, &cell, &mut cache, slot.version)?;
                    slot.tree.root = Some(root);
                    replaced
                }
            };
            slot.changed = true;
            slot.deleted = false;
            match replaced {
                Some(old) => editor.release_value(&old),
                None => {
                    slot.tree.entry_count += 1;
                    Ok(())
                }
            }
        })
    }

    /// A writer of changes to this tree in ascending key order, each changed leaf rewritten
    /// once (see [`MergeWriter`]). Nothing else may change or read the tree until it finishes.
    pub fn merge_writer(&self) -> MergeWriter<'t> {
        MergeWriter::new(self.transaction, self.name.clone())
    }

    /// Removes `key`; `true` if it was present.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        if key.len() > KEY_BYTES_MAX {
            return Ok(false);
        }
        self.transaction.edit(|editor, trees| {
            let slot = trees
                .get_mut(&self.name)
                .expect("a WriteTree's slot is loaded");
            slot.version += 1;
            let (root, removed) = editor.delete(slot.tree.root, key)?;
            let Some(removed) = removed else {
                return Ok(false);
            };
            slot.tree.root = root;
            slot.tree.entry_count = slot.tree.entry_count.saturating_sub(1);
            slot.changed = true;
            editor.release_value(&removed)?;
            Ok(true)
        })
    }

    /// Entries with keys within the bounds, in `direction` order.
    pub fn range(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        direction: Direction,
    ) -> Result<WriteRange<'t>> {
        let forward = direction == Direction::Forward;
        let (seek, stop) = plan(start, end, forward);
        let next_seek = match seek {
            Seek::End => None,
            Seek::Inclusive(key) => Some((key.to_vec(), true)),
            Seek::Exclusive(key) => Some((key.to_vec(), false)),
        };
        let tree = WriteTree {
            transaction: self.transaction,
            name: self.name.clone(),
            cache: RefCell::default(),
        };
        Ok(WriteRange {
            tree,
            forward,
            next_seek,
            stop,
            done: false,
        })
    }

    /// Entries whose keys start with `prefix`, in `direction` order.
    pub fn prefix(&self, prefix: &[u8], direction: Direction) -> Result<WriteRange<'t>> {
        let end = prefix_end(prefix);
        let end_bound = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        self.range(Bound::Included(prefix), end_bound, direction)
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Result<Option<OwnedEntry<'t>>> {
        self.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)?
            .next()
            .transpose()
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Result<Option<OwnedEntry<'t>>> {
        self.range(Bound::Unbounded, Bound::Unbounded, Direction::Backward)?
            .next()
            .transpose()
    }

    fn entry_at(&self, seek: Seek<'_>, forward: bool) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let root = self.root();
        let state = self.transaction.state.borrow();
        let source = Source {
            pager: &self.transaction.shared.pager,
            dirty: Some(&state.dirty),
        };
        let cursor = Cursor::seek(source, root, seek, forward)?;
        Ok(cursor
            .current()?
            .map(|(key, value)| (key.to_vec(), value.to_vec())))
    }
}

impl<'t> WriteRange<'t> {
    fn step(&mut self) -> Result<Option<OwnedEntry<'t>>> {
        let seek = match &self.next_seek {
            None => Seek::End,
            Some((key, true)) => Seek::Inclusive(key),
            Some((key, false)) => Seek::Exclusive(key),
        };
        let Some((key, value)) = self.tree.entry_at(seek, self.forward)? else {
            return Ok(None);
        };
        if is_past(&key, &self.stop, self.forward) {
            return Ok(None);
        }
        self.next_seek = Some((key.clone(), false));
        Ok(Some((key, Cow::Owned(value))))
    }
}

impl<'t> Iterator for WriteRange<'t> {
    type Item = Result<OwnedEntry<'t>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let outcome = self.step();
        if !matches!(outcome, Ok(Some(_))) {
            self.done = true;
        }
        outcome.transpose()
    }
}
