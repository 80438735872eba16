//! Sorted merges: changes to one tree given in ascending key order, written leaf by leaf.
//!
//! A put or a get walks from the root (or the leaf cache) and searches its leaf for every key,
//! and a put shifts the leaf's slots to make room. A flush of an inverted index changes
//! hundreds of thousands of keys in key order, most leaves many times over. A [`MergeWriter`]
//! instead reads the leaf the next key falls in once, copies its cells into a new run of cells
//! with the changes merged in as the keys go by, and at the leaf's end writes the run as one or
//! more full-enough leaves in the old leaf's place: each changed leaf is searched once and
//! written once per merge.
//!
//! Invariants:
//! - Keys are sought in strictly ascending order; a key out of order is refused and changes
//!   nothing.
//! - The open leaf's input is a copy of the leaf as it was when opened, so a spill of the
//!   transaction between two steps loses nothing: the leaf is found again from the root when its
//!   run is written.
//! - Until [`MergeWriter::finish`], the tree may lack the open leaf's entries (a long run is
//!   written in parts): the writer is the only user of its tree while it is open, and dropping
//!   it with changes not written marks the transaction failed, so half a merge never commits.
//! - A run is cut into leaves of at most a page each, filled to about
//!   [`MERGE_LEAF_FILL_PERCENT`]; a run that fits one page replaces the leaf, which is merged
//!   with a sibling when it ends under-full, as after a deletion.

use crate::btree::node::{NodeBuffer, StoredValue, append_leaf_cell, cell_key};
use crate::error::{Error, Result};
use crate::page_store::layout::value_is_inline;
use crate::page_store::layout::{KEY_BYTES_MAX, LEAF_SLOTS_OFFSET, SLOT_BYTES, VALUE_BYTES_MAX};
use crate::page_store::page::{PageView, Pointer, ValueSlot};
use crate::transaction::write_transaction::WriteTransaction;

/// How full, in percent of a page's cell room, a run cut into several leaves fills each: room
/// for the next merge's new keys before the leaf splits again.
pub const MERGE_LEAF_FILL_PERCENT: usize = 90;
/// Pages of cells a run may hold before its leading leaves are written (bounds the writer's
/// memory when a merge fills an empty tree, whose one leaf takes every key).
const RUN_PAGES_MAX: usize = 16;
/// Pages of cells a run keeps back when it writes its leading leaves, so that its end is cut
/// into leaves of even sizes.
const RUN_PAGES_KEPT: usize = 2;

/// The leaf a merge is rewriting.
struct OpenLeaf {
    /// The leaf's page as it was when opened (empty for an empty tree).
    input: Vec<u8>,
    /// The page number the input was read from (for corruption reports).
    input_page: u64,
    /// Cells of the input.
    count: usize,
    /// The first input cell not yet moved to the run.
    next: usize,
    /// The leaf's range ends before this key (unbounded when `None`).
    high: Option<Vec<u8>>,
    /// A key within the leaf's range: what finds the leaf again from the root.
    anchor: Vec<u8>,
    /// Branches above the leaf.
    depth: usize,
    /// Whether the run differs from the input.
    changed: bool,
    /// Once part of the run was written: the leaves' depth below the root.
    written_depth: Option<usize>,
}

/// What the last sought key found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sought {
    /// No key sought yet, or the last one was already decided.
    Nothing,
    /// The key is stored, as input cell `index`.
    Stored(usize),
    /// The key is not stored.
    Absent,
}

/// Leaf cells back to back, with where each ends.
#[derive(Default)]
struct Run {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Run {
    /// Appends entry `index` of the input leaf `view`, as a compact cell.
    fn push_entry_of(&mut self, view: &PageView<'_>, index: usize) -> Result<()> {
        view.append_compact_cell(index, &mut self.bytes)?;
        self.ends.push(self.bytes.len());
        Ok(())
    }

    fn cell(&self, index: usize) -> &[u8] {
        let start = if index == 0 { 0 } else { self.ends[index - 1] };
        &self.bytes[start..self.ends[index]]
    }

    /// Bytes the cells take in a leaf, their slots included.
    fn page_bytes(&self) -> usize {
        self.bytes.len() + self.ends.len() * SLOT_BYTES
    }

    /// Bytes the cells `range` take in a leaf, their slots included.
    fn range_page_bytes(&self, range: std::ops::Range<usize>) -> usize {
        let start = if range.start == 0 {
            0
        } else {
            self.ends[range.start - 1]
        };
        let end = if range.end == 0 {
            0
        } else {
            self.ends[range.end - 1]
        };
        end - start + range.len() * SLOT_BYTES
    }

    /// Removes the first `cells` cells.
    fn drain_front(&mut self, cells: usize) {
        if cells == 0 {
            return;
        }
        let bytes = self.ends[cells - 1];
        self.bytes.drain(..bytes);
        self.ends.drain(..cells);
        for end in &mut self.ends {
            *end -= bytes;
        }
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
}

/// Changes to one tree in ascending key order: [`MergeWriter::seek`] a key, read what it
/// holds, then [`MergeWriter::put`] or [`MergeWriter::delete`] (or leave it as it is by
/// seeking the next key); [`MergeWriter::finish`] writes the last leaf.
pub struct MergeWriter<'t> {
    transaction: &'t WriteTransaction,
    name: Vec<u8>,
    leaf: Option<OpenLeaf>,
    run: Run,
    sought: Sought,
    /// The last key sought.
    key: Vec<u8>,
    /// Whether `key` holds a sought key.
    started: bool,
    /// Entries added and removed since the tree's count was last updated.
    added: u64,
    removed: u64,
    /// Reused buffer of the leaves a run is cut into.
    cells: Vec<std::ops::Range<usize>>,
    /// The input buffer of the last leaf closed, reused by the next.
    spare_input: Vec<u8>,
    path: Vec<crate::btree::editor::PathStep>,
}

impl<'t> MergeWriter<'t> {
    pub(crate) fn new(transaction: &'t WriteTransaction, name: Vec<u8>) -> MergeWriter<'t> {
        MergeWriter {
            transaction,
            name,
            leaf: None,
            run: Run::default(),
            sought: Sought::Nothing,
            key: Vec::new(),
            started: false,
            added: 0,
            removed: 0,
            cells: Vec::new(),
            spare_input: Vec::new(),
            path: Vec::new(),
        }
    }

    /// Moves to `key`, which must be above every key sought before, and answers the value the
    /// tree holds under it. Unless a put or delete follows, the entry stays as it is.
    pub fn seek(&mut self, key: &[u8]) -> Result<Option<&[u8]>> {
        turns::checkpoint();
        if self.started && key <= self.key.as_slice() {
            // The key sought before stays as it is; nothing is sought until the next seek.
            self.sought = Sought::Nothing;
            return Err(Error::KeysOutOfOrder);
        }
        self.sought = Sought::Nothing;
        self.key.clear();
        self.key.extend_from_slice(key);
        self.started = true;
        let in_open_leaf = self
            .leaf
            .as_ref()
            .is_some_and(|leaf| leaf.high.as_deref().is_none_or(|high| key < high));
        if !in_open_leaf {
            self.close_leaf()?;
            self.open_leaf(key)?;
        }
        let leaf = self.leaf.as_mut().expect("a leaf was opened for the key");
        let view = PageView::new(leaf.input_page, &leaf.input)?;
        let found = first_at_or_above(&view, leaf.next, key)?;
        for index in leaf.next..found {
            self.run.push_entry_of(&view, index)?;
        }
        leaf.next = found;
        if found < leaf.count && view.key(found)? == key {
            self.sought = Sought::Stored(found);
            let source = crate::btree::cursor::Source {
                pager: &self.transaction.shared.pager,
                dirty: None,
            };
            let value = source.resolve(view.value(found)?)?;
            return Ok(Some(value));
        }
        self.sought = Sought::Absent;
        Ok(None)
    }

    /// Stores `value` under the key last sought.
    pub fn put(&mut self, value: &[u8]) -> Result<()> {
        if self.sought == Sought::Nothing {
            return Err(Error::NothingSought);
        }
        if self.key.len() > KEY_BYTES_MAX {
            return Err(Error::KeyTooLarge {
                length: self.key.len(),
                maximum: KEY_BYTES_MAX,
            });
        }
        if value.len() as u64 > VALUE_BYTES_MAX {
            return Err(Error::ValueTooLarge {
                length: value.len() as u64,
                maximum: VALUE_BYTES_MAX,
            });
        }
        let stored = self.take_sought()?;
        let page_bytes = self.transaction.shared.pager.page_bytes();
        let (key, bytes) = (&self.key, &mut self.run.bytes);
        if value_is_inline(page_bytes, key.len(), value.len()) {
            append_leaf_cell(bytes, key, ValueSlot::Inline(value));
        } else {
            self.transaction.edit(|editor, _| {
                let slot = editor.store_value(key, value)?;
                append_leaf_cell(bytes, key, slot);
                Ok(())
            })?;
        }
        self.run.ends.push(self.run.bytes.len());
        match stored {
            Some(index) => self.release_input_value(index)?,
            None => self.added += 1,
        }
        self.mark_changed();
        self.write_leading_leaves()
    }

    /// Removes the key last sought (nothing when it is not stored).
    pub fn delete(&mut self) -> Result<()> {
        if let Some(index) = self.take_sought()? {
            self.release_input_value(index)?;
            self.removed += 1;
            self.mark_changed();
        }
        Ok(())
    }

    /// Writes the open leaf. Until then the tree may lack its entries.
    pub fn finish(mut self) -> Result<()> {
        self.close_leaf()
    }

    /// The stored input cell of the key last sought, now consumed, if the key is stored.
    fn take_sought(&mut self) -> Result<Option<usize>> {
        let sought = std::mem::replace(&mut self.sought, Sought::Nothing);
        match sought {
            Sought::Nothing => Err(Error::NothingSought),
            Sought::Absent => Ok(None),
            Sought::Stored(index) => {
                let leaf = self.leaf.as_mut().expect("a stored key has an open leaf");
                leaf.next = index + 1;
                Ok(Some(index))
            }
        }
    }

    fn mark_changed(&mut self) {
        if let Some(leaf) = self.leaf.as_mut() {
            leaf.changed = true;
        }
    }

    /// Frees the overflow run of input cell `index`, whose entry was replaced or removed.
    fn release_input_value(&mut self, index: usize) -> Result<()> {
        let leaf = self.leaf.as_ref().expect("a stored key has an open leaf");
        let view = PageView::new(leaf.input_page, &leaf.input)?;
        let stored = StoredValue::from_slot(view.value(index)?);
        if stored == StoredValue::Inline {
            return Ok(());
        }
        self.transaction
            .edit(|editor, _| editor.release_value(&stored))
    }

    /// Reads the leaf whose range holds `key` as the open leaf.
    fn open_leaf(&mut self, key: &[u8]) -> Result<()> {
        let transaction = self.transaction;
        let state = transaction.state.borrow();
        let root = state
            .trees
            .get(&self.name)
            .expect("a merge writer's tree slot is loaded")
            .tree
            .root;
        let mut input = std::mem::take(&mut self.spare_input);
        input.clear();
        let mut leaf = OpenLeaf {
            input,
            input_page: 0,
            count: 0,
            next: 0,
            high: None,
            anchor: key.to_vec(),
            depth: 0,
            changed: false,
            written_depth: None,
        };
        match root {
            None => {
                let page_bytes = transaction.shared.pager.page_bytes();
                let empty = NodeBuffer::build(page_bytes, None, &[]);
                leaf.input.extend_from_slice(&empty.into_bytes());
            }
            Some(root) => {
                let source = crate::btree::cursor::Source {
                    pager: &transaction.shared.pager,
                    dirty: Some(&state.dirty),
                };
                let (view, high, depth) = source.leaf_and_high(root, key)?;
                leaf.depth = depth;
                leaf.input.extend_from_slice(view.bytes());
                leaf.input_page = view.page();
                leaf.count = view.count();
                leaf.high = high.map(<[u8]>::to_vec);
            }
        }
        drop(state);
        self.run.clear();
        self.leaf = Some(leaf);
        Ok(())
    }

    /// Moves the open leaf's remaining input to the run and writes the run; no leaf is open
    /// afterwards.
    fn close_leaf(&mut self) -> Result<()> {
        let Some(mut leaf) = self.leaf.take() else {
            return Ok(());
        };
        self.sought = Sought::Nothing;
        if !leaf.changed {
            self.spare_input = leaf.input;
            return Ok(());
        }
        if leaf.count > leaf.next {
            let view = PageView::new(leaf.input_page, &leaf.input)?;
            for index in leaf.next..leaf.count {
                self.run.push_entry_of(&view, index)?;
            }
            leaf.next = leaf.count;
        }
        let room = leaf_room(self.transaction.shared.pager.page_bytes());
        cut_leaves(&self.run, room, true, &mut self.cells);
        self.write_run(&mut leaf, true)?;
        self.run.clear();
        self.spare_input = leaf.input;
        Ok(())
    }

    /// Writes the leading leaves of a run that outgrew [`RUN_PAGES_MAX`] pages, each filled to
    /// [`MERGE_LEAF_FILL_PERCENT`], keeping at least [`RUN_PAGES_KEPT`] pages of cells back.
    fn write_leading_leaves(&mut self) -> Result<()> {
        let room = leaf_room(self.transaction.shared.pager.page_bytes());
        let mut remaining = self.run.page_bytes();
        if remaining <= RUN_PAGES_MAX * room {
            return Ok(());
        }
        cut_leaves(&self.run, room, false, &mut self.cells);
        let mut written = 0;
        for piece in &self.cells {
            let bytes = self.run.range_page_bytes(piece.clone());
            if remaining - bytes < RUN_PAGES_KEPT * room {
                break;
            }
            remaining -= bytes;
            written += 1;
        }
        if written == 0 {
            return Ok(());
        }
        self.cells.truncate(written);
        let cells = self.cells.last().map_or(0, |piece| piece.end);
        let mut leaf = self.leaf.take().expect("a put has an open leaf");
        let outcome = self.write_run(&mut leaf, false);
        self.run.drain_front(cells);
        self.leaf = Some(leaf);
        outcome
    }

    /// Writes the run's cells, cut as `self.cells` says, as leaves in the tree: the first leaf
    /// the open leaf ever writes takes the old leaf's place, the others are added after it. At
    /// the run's `end`, a lone leaf that ends under-full is merged with a sibling.
    fn write_run(&mut self, leaf: &mut OpenLeaf, end: bool) -> Result<()> {
        let page_bytes = self.transaction.shared.pager.page_bytes();
        let (added, removed) = (self.added, self.removed);
        self.added = 0;
        self.removed = 0;
        let run = &self.run;
        let pieces = &self.cells;
        let path = &mut self.path;
        let name = &self.name;
        self.transaction.edit(|editor, trees| {
            let slot = trees
                .get_mut(name)
                .expect("a merge writer's tree slot is loaded");
            let mut root = slot.tree.root;
            let mut pieces = pieces.iter();
            let mut depth = match leaf.written_depth {
                Some(depth) => depth,
                None => {
                    let first = pieces.next().cloned().unwrap_or(0..0);
                    let node = build_leaf(page_bytes, run, first);
                    let (root_page, depth) = match root {
                        None => {
                            let page = editor.allocator.allocate(editor.pager, 1)?;
                            editor.dirty.insert(page, node);
                            path.clear();
                            (page, 0)
                        }
                        Some(old_root) => {
                            let (root_page, old_leaf) =
                                editor.dirty_branches(old_root, &leaf.anchor, leaf.depth, path)?;
                            let page = editor.replace_node(old_leaf, node, path.last().copied())?;
                            (root_page.unwrap_or(page), leaf.depth)
                        }
                    };
                    root = Some(Pointer {
                        page: root_page,
                        checksum: 0,
                    });
                    if end && pieces.len() == 0 {
                        root = editor.rebalance_path(root_page, path)?;
                    }
                    depth
                }
            };
            for piece in pieces {
                let separator = cell_key(run.cell(piece.start), true).to_vec();
                let node = build_leaf(page_bytes, run, piece.clone());
                let page = editor.allocator.allocate(editor.pager, 1)?;
                editor.dirty.insert(page, node);
                let old_root = root.expect("a written leaf gives the tree a root");
                let (new_root, new_depth) =
                    editor.insert_child(old_root, &separator, page, depth)?;
                root = Some(Pointer {
                    page: new_root,
                    checksum: 0,
                });
                depth = new_depth;
            }
            leaf.written_depth = Some(depth);
            slot.tree.root = root;
            slot.tree.entry_count = (slot.tree.entry_count + added).saturating_sub(removed);
            slot.version += 1;
            slot.changed = true;
            slot.deleted = false;
            Ok(())
        })
    }
}

impl Drop for MergeWriter<'_> {
    /// A writer dropped with changes it has not written leaves its tree missing entries or
    /// changes: the transaction can then only be aborted.
    fn drop(&mut self) {
        let unwritten = self
            .leaf
            .as_ref()
            .is_some_and(|leaf| leaf.changed || leaf.written_depth.is_some());
        if unwritten {
            self.transaction.state.borrow_mut().failed = true;
        }
    }
}

/// Bytes of cells and slots one leaf holds.
fn leaf_room(page_bytes: usize) -> usize {
    page_bytes - LEAF_SLOTS_OFFSET
}

/// The first input cell at or after `from` whose key is not below `key`.
fn first_at_or_above(view: &PageView<'_>, from: usize, key: &[u8]) -> Result<usize> {
    let (mut low, mut high) = (from, view.count());
    while low < high {
        let middle = low + (high - low) / 2;
        if view.key(middle)? < key {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    Ok(low)
}

/// Cuts the run into leaves of at most `room` bytes each, into `pieces` (ranges of cell
/// indexes). `even`: into the fewest leaves filled to at most [`MERGE_LEAF_FILL_PERCENT`], with
/// the bytes spread evenly (one leaf when the run fits one); else each filled in turn to that
/// fill. An empty run gives one empty leaf.
fn cut_leaves(run: &Run, room: usize, even: bool, pieces: &mut Vec<std::ops::Range<usize>>) {
    pieces.clear();
    let total = run.page_bytes();
    let fill = room * MERGE_LEAF_FILL_PERCENT / 100;
    let target = match (even, total > room) {
        (true, true) => total.div_ceil(total.div_ceil(fill)),
        (true, false) => room,
        (false, _) => fill,
    };
    let mut start = 0;
    let mut bytes = 0;
    for index in 0..run.ends.len() {
        let cell = run.cell(index).len() + SLOT_BYTES;
        let full = bytes + cell > room || (index > start && bytes + cell / 2 > target);
        if full {
            pieces.push(start..index);
            start = index;
            bytes = 0;
        }
        bytes += cell;
    }
    pieces.push(start..run.ends.len());
}

/// A leaf holding the run's cells `range`.
fn build_leaf(page_bytes: usize, run: &Run, range: std::ops::Range<usize>) -> NodeBuffer {
    let cells: Vec<&[u8]> = range.map(|index| run.cell(index)).collect();
    NodeBuffer::build(page_bytes, None, &cells)
}
