//! Read-only views of tree pages (leaf and branch) as they lie in the mapping.
//!
//! Invariant: every accessor checks its offsets against the page and returns
//! `Error::Corrupted` instead of panicking; a `PageView` is only built over a page whose
//! checksum the pager verified, so these checks guard against our own bugs and hash
//! collisions, never against a silent wrong answer.

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::page_store::bytes::{read_u16, read_u64};
use crate::page_store::layout::*;
use crate::page_store::leaf_cell::{self, CellParts, LeafFormat};

/// A pointer to a page, with the checksum the page must carry (a Merkle link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pointer {
    /// Page number.
    pub page: u64,
    /// Checksum stored in the page's header.
    pub checksum: u64,
}

/// A value as stored in a leaf: inline bytes or a reference to an overflow run.
#[derive(Debug, Clone, Copy)]
pub enum ValueSlot<'a> {
    /// The value's bytes, in the leaf.
    Inline(&'a [u8]),
    /// The value lives in an overflow run starting at `pointer`.
    Overflow {
        /// First page of the run, with its checksum.
        pointer: Pointer,
        /// Length of the value in bytes.
        length: u64,
    },
}

/// A verified leaf or branch page.
#[derive(Clone, Copy)]
pub struct PageView<'a> {
    page: u64,
    bytes: &'a [u8],
    leaf: bool,
    /// How a leaf's cells are encoded (`Compact` for a branch, where it means nothing).
    format: LeafFormat,
    count: usize,
}

impl<'a> PageView<'a> {
    /// Interprets a verified page as a tree node.
    pub fn new(page: u64, bytes: &'a [u8]) -> Result<PageView<'a>> {
        let kind = *bytes
            .get(PAGE_KIND_OFFSET)
            .ok_or(Error::corrupted(page, "short page"))?;
        let (leaf, format) = match (kind, LeafFormat::of_kind(kind)) {
            (_, Some(format)) => (true, format),
            (KIND_BRANCH, None) => (false, LeafFormat::Compact),
            _ => return Err(Error::corrupted(page, "not a tree page")),
        };
        let count = usize::from(
            read_u16(bytes, PAGE_COUNT_OFFSET).ok_or(Error::corrupted(page, "short page"))?,
        );
        let slots_offset = if leaf {
            LEAF_SLOTS_OFFSET
        } else {
            BRANCH_SLOTS_OFFSET
        };
        if slots_offset + count * SLOT_BYTES > bytes.len() {
            return Err(Error::corrupted(page, "entry count exceeds the page"));
        }
        Ok(PageView {
            page,
            bytes,
            leaf,
            format,
            count,
        })
    }

    /// Page number.
    pub fn page(&self) -> u64 {
        self.page
    }

    /// Whether this is a leaf.
    pub fn is_leaf(&self) -> bool {
        self.leaf
    }

    /// How this leaf's cells are encoded.
    pub fn leaf_format(&self) -> LeafFormat {
        self.format
    }

    /// Entries of a leaf, or keys of a branch (which has `count + 1` children).
    pub fn count(&self) -> usize {
        self.count
    }

    fn corrupted(&self, what: &'static str) -> Error {
        Error::corrupted(self.page, what)
    }

    fn cell(&self, index: usize) -> Result<usize> {
        let slots_offset = if self.leaf {
            LEAF_SLOTS_OFFSET
        } else {
            BRANCH_SLOTS_OFFSET
        };
        let offset = read_u16(self.bytes, slots_offset + index * SLOT_BYTES)
            .ok_or(self.corrupted("slot past the page"))?;
        let offset = usize::from(offset);
        if offset < slots_offset + self.count * SLOT_BYTES || offset >= self.bytes.len() {
            return Err(self.corrupted("cell offset outside the cell area"));
        }
        Ok(offset)
    }

    fn slice(&self, start: usize, length: usize) -> Result<&'a [u8]> {
        let end = start
            .checked_add(length)
            .ok_or(self.corrupted("cell length overflows"))?;
        self.bytes
            .get(start..end)
            .ok_or(self.corrupted("cell runs past the page"))
    }

    /// Key of entry (leaf) or separator (branch) `index`.
    pub fn key(&self, index: usize) -> Result<&'a [u8]> {
        if index >= self.count {
            return Err(self.corrupted("key index past the count"));
        }
        let cell = self.cell(index)?;
        if self.leaf {
            let parts = self.leaf_parts(cell)?;
            return Ok(&self.bytes[parts.key]);
        }
        let length = read_u16(self.bytes, cell).ok_or(self.corrupted("cell past the page"))?;
        self.slice(cell + BRANCH_CELL_HEADER_BYTES, usize::from(length))
    }

    /// The parts of the leaf cell at offset `cell`, checked to lie in the page.
    fn leaf_parts(&self, cell: usize) -> Result<CellParts> {
        leaf_cell::parse(self.bytes, cell, self.format).ok_or(self.corrupted("malformed leaf cell"))
    }

    /// Value of leaf entry `index`.
    pub fn value(&self, index: usize) -> Result<ValueSlot<'a>> {
        Ok(self.entry(index)?.1)
    }

    /// Key and value of leaf entry `index`, reading its cell once.
    pub fn entry(&self, index: usize) -> Result<(&'a [u8], ValueSlot<'a>)> {
        if !self.leaf || index >= self.count {
            return Err(self.corrupted("value index past the count"));
        }
        let parts = self.leaf_parts(self.cell(index)?)?;
        let value = parts
            .value_slot(self.bytes)
            .ok_or(self.corrupted("short cell"))?;
        Ok((&self.bytes[parts.key], value))
    }

    /// Appends leaf entry `index` to `out` as a compact cell: its bytes when the page is
    /// compact, else the same entry encoded again.
    pub fn append_compact_cell(&self, index: usize, out: &mut Vec<u8>) -> Result<()> {
        if self.format == LeafFormat::Compact {
            out.extend_from_slice(self.raw_cell(index)?);
            return Ok(());
        }
        let (key, value) = self.entry(index)?;
        leaf_cell::append_compact(out, key, value);
        Ok(())
    }

    /// Child `index` (0..=count) of a branch.
    pub fn child(&self, index: usize) -> Result<Pointer> {
        if self.leaf || index > self.count {
            return Err(self.corrupted("child index past the count"));
        }
        let (page_offset, checksum_offset) = if index == 0 {
            (
                BRANCH_FIRST_CHILD_PAGE_OFFSET,
                BRANCH_FIRST_CHILD_CHECKSUM_OFFSET,
            )
        } else {
            let cell = self.cell(index - 1)?;
            (
                cell + BRANCH_CELL_CHILD_PAGE_OFFSET,
                cell + BRANCH_CELL_CHILD_CHECKSUM_OFFSET,
            )
        };
        let page = read_u64(self.bytes, page_offset).ok_or(self.corrupted("short cell"))?;
        let checksum = read_u64(self.bytes, checksum_offset).ok_or(self.corrupted("short cell"))?;
        Ok(Pointer { page, checksum })
    }

    /// The whole page.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Offset and length of cell `index`, checked to lie within the cell area.
    pub fn raw_cell_extent(&self, index: usize) -> Result<(usize, usize)> {
        let cell = self.raw_cell(index)?;
        let offset = cell.as_ptr() as usize - self.bytes.as_ptr() as usize;
        Ok((offset, cell.len()))
    }

    /// The raw bytes of cell `index` (key, value or child, as stored).
    pub fn raw_cell(&self, index: usize) -> Result<&'a [u8]> {
        if index >= self.count {
            return Err(self.corrupted("cell index past the count"));
        }
        let cell = self.cell(index)?;
        let end = if self.leaf {
            self.leaf_parts(cell)?.end
        } else {
            let key_length =
                usize::from(read_u16(self.bytes, cell).ok_or(self.corrupted("short cell"))?);
            cell + BRANCH_CELL_HEADER_BYTES + key_length
        };
        self.slice(cell, end - cell)
    }

    /// Bytes the page's live content takes: header, slots and cells.
    pub fn used_bytes(&self) -> Result<usize> {
        let mut used = if self.leaf {
            LEAF_SLOTS_OFFSET
        } else {
            BRANCH_SLOTS_OFFSET
        };
        for index in 0..self.count {
            used += SLOT_BYTES + self.raw_cell(index)?.len();
        }
        Ok(used)
    }

    /// The child of a branch whose subtree may hold `key` (a key equal to a separator lies in
    /// the child right of it).
    pub fn child_index_for(&self, key: &[u8]) -> Result<usize> {
        Ok(match self.search(key)? {
            Ok(index) => index + 1,
            Err(index) => index,
        })
    }

    /// Index of the first key not less than `key` (`Ok(index)` when equal, `Err` when not).
    pub fn search(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        let (mut low, mut high) = (0, self.count);
        while low < high {
            let middle = low + (high - low) / 2;
            match self.key(middle)?.cmp(key) {
                Ordering::Less => low = middle + 1,
                Ordering::Greater => high = middle,
                Ordering::Equal => return Ok(Ok(middle)),
            }
        }
        Ok(Err(low))
    }
}
