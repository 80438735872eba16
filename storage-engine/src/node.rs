//! Decoded tree nodes: the form a page takes while a write transaction changes it.
//!
//! Invariant: `encoded_bytes` is exactly what `encode` writes, so a node whose size is at
//! most the page size always encodes into one page. Child pointers of dirty children carry
//! a stale checksum until the commit encodes the children first (post-order).

use crate::bytes::{write_u16, write_u32, write_u64};
use crate::error::Result;
use crate::layout::*;
use crate::page::{PageView, Pointer, ValueSlot};

/// A value held by a decoded leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredValue {
    /// The value itself, stored in the leaf.
    Inline(Vec<u8>),
    /// A reference to an overflow run.
    Overflow {
        /// First page of the run and its checksum.
        pointer: Pointer,
        /// Value length in bytes.
        length: u64,
    },
}

impl StoredValue {
    /// Bytes of this value's leaf cell, slot included, under a key of `key_bytes`.
    pub fn cell_bytes(&self, key_bytes: usize) -> usize {
        match self {
            StoredValue::Inline(value) => leaf_inline_cell_bytes(key_bytes, value.len()),
            StoredValue::Overflow { .. } => leaf_overflow_cell_bytes(key_bytes),
        }
    }
}

/// One entry of a decoded leaf.
#[derive(Debug, Clone)]
pub struct LeafEntry {
    /// The key.
    pub key: Vec<u8>,
    /// The value or its overflow reference.
    pub value: StoredValue,
}

/// A decoded branch: `children.len() == keys.len() + 1`; child `i + 1` holds keys `>= keys[i]`.
#[derive(Debug, Clone)]
pub struct Branch {
    /// Separator keys, ascending.
    pub keys: Vec<Vec<u8>>,
    /// Children pointers.
    pub children: Vec<Pointer>,
}

/// A decoded tree node.
#[derive(Debug, Clone)]
pub enum Node {
    /// Entries, ascending by key.
    Leaf(Vec<LeafEntry>),
    /// Separators and children.
    Branch(Branch),
}

impl Node {
    /// Decodes a verified page.
    pub fn decode(view: &PageView<'_>) -> Result<Node> {
        if view.is_leaf() {
            let mut entries = Vec::with_capacity(view.count());
            for index in 0..view.count() {
                let value = match view.value(index)? {
                    ValueSlot::Inline(bytes) => StoredValue::Inline(bytes.to_vec()),
                    ValueSlot::Overflow { pointer, length } => {
                        StoredValue::Overflow { pointer, length }
                    }
                };
                entries.push(LeafEntry { key: view.key(index)?.to_vec(), value });
            }
            Ok(Node::Leaf(entries))
        } else {
            let mut keys = Vec::with_capacity(view.count());
            let mut children = Vec::with_capacity(view.count() + 1);
            children.push(view.child(0)?);
            for index in 0..view.count() {
                keys.push(view.key(index)?.to_vec());
                children.push(view.child(index + 1)?);
            }
            Ok(Node::Branch(Branch { keys, children }))
        }
    }

    /// Bytes the node takes once encoded.
    pub fn encoded_bytes(&self) -> usize {
        match self {
            Node::Leaf(entries) => {
                LEAF_SLOTS_OFFSET
                    + entries.iter().map(|entry| entry.value.cell_bytes(entry.key.len())).sum::<usize>()
            }
            Node::Branch(branch) => {
                BRANCH_SLOTS_OFFSET
                    + branch.keys.iter().map(|key| branch_cell_bytes(key.len())).sum::<usize>()
            }
        }
    }

    /// Number of entries (leaf) or separators (branch).
    pub fn count(&self) -> usize {
        match self {
            Node::Leaf(entries) => entries.len(),
            Node::Branch(branch) => branch.keys.len(),
        }
    }

    /// Encodes into `page` (zeroed, page-sized), leaving the checksum field for the caller.
    pub fn encode(&self, page: &mut [u8]) {
        debug_assert!(self.encoded_bytes() <= page.len(), "node larger than a page");
        let count = u16::try_from(self.count()).expect("a node that fits a page has < 2^16 cells");
        write_u16(page, PAGE_COUNT_OFFSET, count);
        let mut cell_end = page.len();
        match self {
            Node::Leaf(entries) => {
                page[PAGE_KIND_OFFSET] = KIND_LEAF;
                for (index, entry) in entries.iter().enumerate() {
                    let cell_bytes = entry.value.cell_bytes(entry.key.len()) - SLOT_BYTES;
                    cell_end -= cell_bytes;
                    encode_leaf_cell(&mut page[cell_end..cell_end + cell_bytes], entry);
                    write_slot(page, LEAF_SLOTS_OFFSET, index, cell_end);
                }
            }
            Node::Branch(branch) => {
                page[PAGE_KIND_OFFSET] = KIND_BRANCH;
                write_pointer(page, BRANCH_FIRST_CHILD_PAGE_OFFSET, branch.children[0]);
                for (index, key) in branch.keys.iter().enumerate() {
                    let cell_bytes = branch_cell_bytes(key.len()) - SLOT_BYTES;
                    cell_end -= cell_bytes;
                    let cell = &mut page[cell_end..cell_end + cell_bytes];
                    write_u16(cell, BRANCH_CELL_KEY_LENGTH_OFFSET, key_length(key));
                    write_pointer(cell, BRANCH_CELL_CHILD_PAGE_OFFSET, branch.children[index + 1]);
                    cell[BRANCH_CELL_HEADER_BYTES..].copy_from_slice(key);
                    write_slot(page, BRANCH_SLOTS_OFFSET, index, cell_end);
                }
            }
        }
    }
}

fn key_length(key: &[u8]) -> u16 {
    u16::try_from(key.len()).expect("keys are at most KEY_BYTES_MAX long")
}

fn write_slot(page: &mut [u8], slots_offset: usize, index: usize, cell_offset: usize) {
    let offset = u16::try_from(cell_offset).expect("cell offsets are below PAGE_BYTES_MAX");
    write_u16(page, slots_offset + index * SLOT_BYTES, offset);
}

/// Writes a page pointer followed by its checksum at `offset`.
pub fn write_pointer(bytes: &mut [u8], offset: usize, pointer: Pointer) {
    write_u64(bytes, offset, pointer.page);
    write_u64(bytes, offset + 8, pointer.checksum);
}

fn encode_leaf_cell(cell: &mut [u8], entry: &LeafEntry) {
    write_u16(cell, LEAF_CELL_KEY_LENGTH_OFFSET, key_length(&entry.key));
    let key_end = LEAF_CELL_HEADER_BYTES + entry.key.len();
    cell[LEAF_CELL_HEADER_BYTES..key_end].copy_from_slice(&entry.key);
    match &entry.value {
        StoredValue::Inline(value) => {
            cell[LEAF_CELL_TAG_OFFSET] = VALUE_TAG_INLINE;
            let length = u32::try_from(value.len()).expect("inline values fit a page");
            write_u32(cell, LEAF_CELL_VALUE_LENGTH_OFFSET, length);
            cell[key_end..].copy_from_slice(value);
        }
        StoredValue::Overflow { pointer, length } => {
            cell[LEAF_CELL_TAG_OFFSET] = VALUE_TAG_OVERFLOW;
            write_u32(cell, LEAF_CELL_VALUE_LENGTH_OFFSET, 0);
            write_pointer(cell, key_end + OVERFLOW_REFERENCE_PAGE_OFFSET, *pointer);
            write_u64(cell, key_end + OVERFLOW_REFERENCE_LENGTH_OFFSET, *length);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_leaf_decodes_to_the_same_entries() {
        let entries = vec![
            LeafEntry { key: b"a".to_vec(), value: StoredValue::Inline(b"one".to_vec()) },
            LeafEntry { key: Vec::new(), value: StoredValue::Inline(Vec::new()) },
            LeafEntry {
                key: b"big".to_vec(),
                value: StoredValue::Overflow {
                    pointer: Pointer { page: 9, checksum: 42 },
                    length: 1 << 30,
                },
            },
        ];
        let node = Node::Leaf(entries.clone());
        let mut page = vec![0u8; 4096];
        node.encode(&mut page);
        let view = PageView::new(5, &page).expect("valid page");
        let Node::Leaf(decoded) = Node::decode(&view).expect("decodes") else {
            panic!("leaf expected");
        };
        assert_eq!(decoded.len(), entries.len());
        for (left, right) in decoded.iter().zip(&entries) {
            assert_eq!(left.key, right.key);
            assert_eq!(left.value, right.value);
        }
    }

    #[test]
    fn encoded_branch_decodes_to_the_same_children() {
        let children: Vec<Pointer> =
            (0..3).map(|page| Pointer { page: page + 10, checksum: page * 7 }).collect();
        let node = Node::Branch(Branch { keys: vec![b"m".to_vec(), b"t".to_vec()], children });
        let mut page = vec![0u8; 4096];
        node.encode(&mut page);
        let view = PageView::new(5, &page).expect("valid page");
        assert_eq!(view.count(), 2);
        assert_eq!(view.key(1).expect("key"), b"t");
        assert_eq!(view.child(2).expect("child"), Pointer { page: 12, checksum: 14 });
        assert_eq!(view.search(b"n").expect("search"), Err(1));
    }
}
