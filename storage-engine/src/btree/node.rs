//! Dirty tree nodes: page-sized buffers in the on-disk page format, changed in place by
//! the write transaction (as LMDB does), so a commit only checksums and writes them.
//!
//! Invariants: a `NodeBuffer` is always a valid page per `layout.rs` (apart from the
//! checksum, set at commit); `cell_start` is the lowest byte of the cell area and
//! `garbage` counts dead cell bytes below no slot, reclaimed by compaction; child
//! pointers to dirty children carry a stale checksum until the commit fills it in; a dirty
//! leaf is always of compact cells (`leaf_cell.rs`): a wide leaf is converted when loaded.

use crate::error::Result;
use crate::page_store::bytes::{read_u16, read_u64, write_u16, write_u64};
use crate::page_store::layout::*;
use crate::page_store::leaf_cell::{self, LeafFormat};
use crate::page_store::page::{PageView, Pointer, ValueSlot};

/// Where a replaced or removed value lived: all the editor needs to free its pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredValue {
    /// In the leaf itself: nothing else to free.
    Inline,
    /// A reference to an overflow run.
    Overflow {
        /// First page of the run and its checksum.
        pointer: Pointer,
        /// Value length in bytes.
        length: u64,
    },
}

impl StoredValue {
    /// Where the value of a leaf's value slot lives.
    pub fn from_slot(slot: ValueSlot<'_>) -> StoredValue {
        match slot {
            ValueSlot::Inline(_) => StoredValue::Inline,
            ValueSlot::Overflow { pointer, length } => StoredValue::Overflow { pointer, length },
        }
    }
}

/// Encodes a leaf cell for `key` and `value` (compact: dirty leaves are always compact).
pub fn leaf_cell(key: &[u8], value: ValueSlot<'_>) -> Vec<u8> {
    let mut cell = Vec::new();
    append_leaf_cell(&mut cell, key, value);
    cell
}

/// Appends the leaf cell for `key` and `value` to `out`.
pub fn append_leaf_cell(out: &mut Vec<u8>, key: &[u8], value: ValueSlot<'_>) {
    leaf_cell::append_compact(out, key, value);
}

/// Encodes a branch cell: separator `key` and the child right of it.
pub fn branch_cell(key: &[u8], child: Pointer) -> Vec<u8> {
    let mut cell = vec![0u8; BRANCH_CELL_HEADER_BYTES + key.len()];
    write_u16(&mut cell, BRANCH_CELL_KEY_LENGTH_OFFSET, key_length(key));
    write_pointer(&mut cell, BRANCH_CELL_CHILD_PAGE_OFFSET, child);
    cell[BRANCH_CELL_HEADER_BYTES..].copy_from_slice(key);
    cell
}

/// The key of a raw leaf or branch cell (a leaf cell of a dirty node, so compact).
pub fn cell_key(cell: &[u8], leaf: bool) -> &[u8] {
    if leaf {
        let parts = leaf_cell::parse(cell, 0, LeafFormat::Compact)
            .expect("dirty nodes hold well-formed compact cells");
        return &cell[parts.key];
    }
    let length = usize::from(read_u16(cell, 0).expect("cells start with their key length"));
    &cell[BRANCH_CELL_HEADER_BYTES..BRANCH_CELL_HEADER_BYTES + length]
}

/// The child pointer of a raw branch cell.
pub fn cell_child(cell: &[u8]) -> Pointer {
    Pointer {
        page: read_u64(cell, BRANCH_CELL_CHILD_PAGE_OFFSET).expect("branch cells hold a child"),
        checksum: read_u64(cell, BRANCH_CELL_CHILD_CHECKSUM_OFFSET)
            .expect("branch cells hold a child"),
    }
}

fn key_length(key: &[u8]) -> u16 {
    u16::try_from(key.len()).expect("keys are at most KEY_BYTES_MAX long")
}

/// Writes a page pointer followed by its checksum at `offset`.
pub fn write_pointer(bytes: &mut [u8], offset: usize, pointer: Pointer) {
    write_u64(bytes, offset, pointer.page);
    write_u64(bytes, offset + 8, pointer.checksum);
}

/// A dirty node: a page buffer changed in place.
#[derive(Debug, Clone)]
pub struct NodeBuffer {
    bytes: Box<[u8]>,
    cell_start: usize,
    garbage: usize,
}

impl NodeBuffer {
    /// A node of `page_bytes` holding `cells` in order; a branch also gets `first_child`.
    pub fn build(page_bytes: usize, first_child: Option<Pointer>, cells: &[&[u8]]) -> NodeBuffer {
        let mut node = NodeBuffer {
            bytes: crate::page_store::page_buffers::zeroed(page_bytes),
            cell_start: page_bytes,
            garbage: 0,
        };
        match first_child {
            None => node.bytes[PAGE_KIND_OFFSET] = KIND_COMPACT_LEAF,
            Some(child) => {
                node.bytes[PAGE_KIND_OFFSET] = KIND_BRANCH;
                write_pointer(&mut node.bytes, BRANCH_FIRST_CHILD_PAGE_OFFSET, child);
            }
        }
        for (index, cell) in cells.iter().enumerate() {
            let fits = node.insert_cell(index, cell);
            debug_assert!(fits, "cells given to build fit one page");
        }
        node
    }

    /// A copy of a verified page, holes included (they are reclaimed when space is needed).
    /// A leaf of wide cells is encoded again compact, so that a dirty leaf is always compact.
    pub fn from_view(view: &PageView<'_>, page_bytes: usize) -> Result<NodeBuffer> {
        if view.is_leaf() && view.leaf_format() == LeafFormat::Wide {
            return NodeBuffer::compact_from_wide(view, page_bytes);
        }
        let mut cell_start = page_bytes;
        let mut live = 0;
        for index in 0..view.count() {
            let (offset, length) = view.raw_cell_extent(index)?;
            cell_start = cell_start.min(offset);
            live += length;
        }
        let bytes = crate::page_store::page_buffers::copied(view.bytes());
        debug_assert_eq!(bytes.len(), page_bytes, "views of pages span one page");
        let garbage = (page_bytes - cell_start).saturating_sub(live);
        Ok(NodeBuffer {
            bytes,
            cell_start,
            garbage,
        })
    }

    /// The compact leaf holding a wide leaf's entries (never larger: see `layout.rs`).
    fn compact_from_wide(view: &PageView<'_>, page_bytes: usize) -> Result<NodeBuffer> {
        let mut node = NodeBuffer::build(page_bytes, None, &[]);
        let mut cell = Vec::new();
        for index in 0..view.count() {
            cell.clear();
            view.append_compact_cell(index, &mut cell)?;
            let fits = node.insert_cell(index, &cell);
            assert!(fits, "a wide leaf's entries fit compact");
        }
        Ok(node)
    }

    /// A view of this buffer as page `page`.
    pub fn view(&self, page: u64) -> Result<PageView<'_>> {
        PageView::new(page, &self.bytes)
    }

    /// The page bytes (checksum field as last set).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }

    /// The page bytes.
    pub fn into_bytes(self) -> Box<[u8]> {
        self.bytes
    }

    /// Whether this is a leaf (a dirty leaf is always compact).
    pub fn is_leaf(&self) -> bool {
        self.bytes[PAGE_KIND_OFFSET] == KIND_COMPACT_LEAF
    }

    /// Entries of a leaf, separators of a branch.
    pub fn count(&self) -> usize {
        usize::from(read_u16(&self.bytes, PAGE_COUNT_OFFSET).expect("the header is in the page"))
    }

    fn slots_offset(&self) -> usize {
        if self.is_leaf() {
            LEAF_SLOTS_OFFSET
        } else {
            BRANCH_SLOTS_OFFSET
        }
    }

    fn slot(&self, index: usize) -> usize {
        usize::from(
            read_u16(&self.bytes, self.slots_offset() + index * SLOT_BYTES).expect("slot in page"),
        )
    }

    fn cell_length_at(&self, offset: usize) -> usize {
        if self.is_leaf() {
            let parts = leaf_cell::parse(&self.bytes, offset, LeafFormat::Compact)
                .expect("dirty nodes hold well-formed compact cells");
            return parts.end - offset;
        }
        let key_length = usize::from(read_u16(&self.bytes, offset).expect("cell in page"));
        BRANCH_CELL_HEADER_BYTES + key_length
    }

    /// Raw bytes of cell `index`.
    pub fn cell(&self, index: usize) -> &[u8] {
        let offset = self.slot(index);
        &self.bytes[offset..offset + self.cell_length_at(offset)]
    }

    /// All cells, in order.
    pub fn cells(&self) -> Vec<&[u8]> {
        (0..self.count()).map(|index| self.cell(index)).collect()
    }

    fn free_bytes(&self) -> usize {
        self.cell_start - (self.slots_offset() + self.count() * SLOT_BYTES)
    }

    /// Bytes a new cell and its slot may take: the free gap and the dead cells.
    pub fn room_bytes(&self) -> usize {
        self.free_bytes() + self.garbage
    }

    /// Bytes of live content: header, slots and live cells.
    pub fn used_bytes(&self) -> usize {
        self.bytes.len() - self.free_bytes() - self.garbage
    }

    /// Inserts `cell` at `index`; `false` (and no change) if it does not fit the page.
    pub fn insert_cell(&mut self, index: usize, cell: &[u8]) -> bool {
        let needed = cell.len() + SLOT_BYTES;
        if needed > self.free_bytes() + self.garbage {
            return false;
        }
        if needed > self.free_bytes() {
            self.compact();
        }
        let count = self.count();
        self.cell_start -= cell.len();
        self.bytes[self.cell_start..self.cell_start + cell.len()].copy_from_slice(cell);
        let slot = self.slots_offset() + index * SLOT_BYTES;
        let slots_end = self.slots_offset() + count * SLOT_BYTES;
        self.bytes.copy_within(slot..slots_end, slot + SLOT_BYTES);
        let offset = u16::try_from(self.cell_start).expect("cell offsets are below PAGE_BYTES_MAX");
        write_u16(&mut self.bytes, slot, offset);
        let count = u16::try_from(count + 1).expect("a page holds < 2^16 cells");
        write_u16(&mut self.bytes, PAGE_COUNT_OFFSET, count);
        true
    }

    /// Removes cell `index` (and, in a branch, the child right of its separator).
    pub fn remove_cell(&mut self, index: usize) {
        let count = self.count();
        let offset = self.slot(index);
        self.garbage += self.cell_length_at(offset);
        let slot = self.slots_offset() + index * SLOT_BYTES;
        let slots_end = self.slots_offset() + count * SLOT_BYTES;
        self.bytes.copy_within(slot + SLOT_BYTES..slots_end, slot);
        let count = u16::try_from(count - 1).expect("count was positive");
        write_u16(&mut self.bytes, PAGE_COUNT_OFFSET, count);
    }

    fn compact(&mut self) {
        let first_child = (!self.is_leaf()).then(|| self.child(0));
        let rebuilt = {
            let cells = self.cells();
            NodeBuffer::build(self.bytes.len(), first_child, &cells)
        };
        *self = rebuilt;
    }

    /// Child `index` of a branch.
    pub fn child(&self, index: usize) -> Pointer {
        if index == 0 {
            Pointer {
                page: read_u64(&self.bytes, BRANCH_FIRST_CHILD_PAGE_OFFSET)
                    .expect("header in page"),
                checksum: read_u64(&self.bytes, BRANCH_FIRST_CHILD_CHECKSUM_OFFSET)
                    .expect("header in page"),
            }
        } else {
            cell_child(self.cell(index - 1))
        }
    }

    /// Sets child `index` of a branch.
    pub fn set_child(&mut self, index: usize, pointer: Pointer) {
        let offset = if index == 0 {
            BRANCH_FIRST_CHILD_PAGE_OFFSET
        } else {
            self.slot(index - 1) + BRANCH_CELL_CHILD_PAGE_OFFSET
        };
        write_pointer(&mut self.bytes, offset, pointer);
    }

    /// Key of cell `index`.
    pub fn key(&self, index: usize) -> &[u8] {
        cell_key(self.cell(index), self.is_leaf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_leaf_reads_back_through_a_page_view() {
        let pointer = Pointer {
            page: 9,
            checksum: 42,
        };
        let cells = [
            leaf_cell(b"", ValueSlot::Inline(b"")),
            leaf_cell(b"a", ValueSlot::Inline(b"one")),
            leaf_cell(
                b"big",
                ValueSlot::Overflow {
                    pointer,
                    length: 1 << 30,
                },
            ),
        ];
        let cell_slices: Vec<&[u8]> = cells.iter().map(Vec::as_slice).collect();
        let node = NodeBuffer::build(4096, None, &cell_slices);
        let view = node.view(5).expect("valid page");
        assert_eq!(view.count(), 3);
        assert_eq!(view.key(1).expect("key"), b"a");
        let stored = StoredValue::from_slot(view.value(2).expect("value"));
        assert_eq!(
            stored,
            StoredValue::Overflow {
                pointer,
                length: 1 << 30
            }
        );
        assert_eq!(view.used_bytes().expect("used"), node.used_bytes());
    }

    #[test]
    fn removed_cells_are_reclaimed_by_compaction() {
        let cell = leaf_cell(b"key", ValueSlot::Inline(&[7u8; 900]));
        let mut node = NodeBuffer::build(4096, None, &[]);
        let mut inserted = 0;
        while node.insert_cell(inserted, &cell) {
            inserted += 1;
        }
        assert_eq!(inserted, 4);
        node.remove_cell(1);
        assert!(
            node.insert_cell(1, &cell),
            "the removed cell's bytes are reused"
        );
        assert_eq!(node.count(), 4);
    }

    #[test]
    fn branch_children_follow_their_separators() {
        let first = Pointer {
            page: 10,
            checksum: 1,
        };
        let cells = [
            branch_cell(
                b"m",
                Pointer {
                    page: 11,
                    checksum: 2,
                },
            ),
            branch_cell(
                b"t",
                Pointer {
                    page: 12,
                    checksum: 3,
                },
            ),
        ];
        let cell_slices: Vec<&[u8]> = cells.iter().map(Vec::as_slice).collect();
        let mut node = NodeBuffer::build(4096, Some(first), &cell_slices);
        node.set_child(
            2,
            Pointer {
                page: 13,
                checksum: 4,
            },
        );
        let view = node.view(5).expect("valid page");
        assert_eq!(view.child(0).expect("child"), first);
        assert_eq!(
            view.child(2).expect("child"),
            Pointer {
                page: 13,
                checksum: 4
            }
        );
        assert_eq!(view.search(b"n").expect("search"), Err(1));
    }
}
