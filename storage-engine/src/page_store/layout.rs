//! The on-disk layout: every offset and size of the file format, as named constants.
//!
//! Invariant: offsets are derived from the previous field's offset and size, and the
//! `const` assertions at the bottom fail the build if two fields overlap or a cell can
//! break the quarter-page rule that splits rely on. All integers are little-endian.
//! `DESIGN.md` draws these layouts.

/// Smallest accepted page size.
pub const PAGE_BYTES_MIN: usize = 4096;
/// Largest accepted page size (slot offsets are `u16`).
pub const PAGE_BYTES_MAX: usize = 65536;

/// The magic bytes at the start of each commit slot page.
pub const MAGIC: [u8; 8] = *b"CSPAGES1";
/// Version of the file format; bumped on any incompatible change. Version 1 kept the free
/// list as a chain of pages rewritten whole at each commit; version 2 keeps it as a tree of
/// free-page records (`free_list.rs`); version 3 adds leaf pages of compact cells
/// (`leaf_cell.rs`). A file of version 2 is read and turns version 3 at its next commit;
/// files of another version are refused at open.
pub const FORMAT_VERSION: u32 = 3;
/// The oldest format version this build reads (a file of it holds only wide leaves).
pub const FORMAT_VERSION_READABLE_MIN: u32 = 2;

/// Page number of commit slot 0; slot 1 is page 1. Page 0 is never a tree page, so 0 is
/// also the "no page" pointer.
pub const META_PAGE_COUNT: u64 = 2;
/// The page number meaning "no page" (an empty tree, the end of a chain).
pub const NO_PAGE: u64 = 0;

// ---- Commit slot (meta page) ----
pub const META_MAGIC_OFFSET: usize = 0;
pub const META_MAGIC_BYTES: usize = 8;
pub const META_VERSION_OFFSET: usize = META_MAGIC_OFFSET + META_MAGIC_BYTES;
pub const META_PAGE_BYTES_OFFSET: usize = META_VERSION_OFFSET + 4;
pub const META_TRANSACTION_OFFSET: usize = META_PAGE_BYTES_OFFSET + 4;
pub const META_CATALOG_PAGE_OFFSET: usize = META_TRANSACTION_OFFSET + 8;
pub const META_CATALOG_CHECKSUM_OFFSET: usize = META_CATALOG_PAGE_OFFSET + 8;
pub const META_FREE_TREE_PAGE_OFFSET: usize = META_CATALOG_CHECKSUM_OFFSET + 8;
pub const META_FREE_TREE_CHECKSUM_OFFSET: usize = META_FREE_TREE_PAGE_OFFSET + 8;
pub const META_HIGH_WATER_OFFSET: usize = META_FREE_TREE_CHECKSUM_OFFSET + 8;
pub const META_FREE_COUNT_OFFSET: usize = META_HIGH_WATER_OFFSET + 8;
pub const META_TREE_COUNT_OFFSET: usize = META_FREE_COUNT_OFFSET + 8;
pub const META_CHECKSUM_OFFSET: usize = META_TREE_COUNT_OFFSET + 8;
/// Bytes of a commit slot: everything before the checksum is covered by it.
pub const META_BYTES: usize = META_CHECKSUM_OFFSET + 8;

// ---- Common page header (tree and overflow pages) ----
pub const PAGE_CHECKSUM_OFFSET: usize = 0;
/// The checksum covers the page from here to its end (and the page number, as seed).
pub const PAGE_CHECKSUMMED_OFFSET: usize = PAGE_CHECKSUM_OFFSET + 8;
pub const PAGE_KIND_OFFSET: usize = PAGE_CHECKSUMMED_OFFSET;
pub const PAGE_RESERVED_OFFSET: usize = PAGE_KIND_OFFSET + 1;
pub const PAGE_COUNT_OFFSET: usize = PAGE_RESERVED_OFFSET + 1;
pub const PAGE_PADDING_OFFSET: usize = PAGE_COUNT_OFFSET + 2;
pub const PAGE_HEADER_BYTES: usize = PAGE_PADDING_OFFSET + 4;

/// Page kinds, stored at `PAGE_KIND_OFFSET`.
pub const KIND_LEAF: u8 = 1;
pub const KIND_BRANCH: u8 = 2;
pub const KIND_OVERFLOW: u8 = 3;
/// A leaf page of compact cells (`leaf_cell.rs`); [`KIND_LEAF`] pages hold wide cells. (Kind
/// 4 was the version-1 free-list page.)
pub const KIND_COMPACT_LEAF: u8 = 5;

/// Each slot is the `u16` offset of a cell within its page.
pub const SLOT_BYTES: usize = 2;

// ---- Leaf page: header, slots, free space, cells growing down from the end ----
pub const LEAF_SLOTS_OFFSET: usize = PAGE_HEADER_BYTES;
pub const LEAF_CELL_KEY_LENGTH_OFFSET: usize = 0;
pub const LEAF_CELL_TAG_OFFSET: usize = LEAF_CELL_KEY_LENGTH_OFFSET + 2;
pub const LEAF_CELL_VALUE_LENGTH_OFFSET: usize = LEAF_CELL_TAG_OFFSET + 1;
pub const LEAF_CELL_HEADER_BYTES: usize = LEAF_CELL_VALUE_LENGTH_OFFSET + 4;
/// Leaf cell tag: the value follows the key.
pub const VALUE_TAG_INLINE: u8 = 0;
/// Leaf cell tag: an overflow reference follows the key.
pub const VALUE_TAG_OVERFLOW: u8 = 1;
pub const OVERFLOW_REFERENCE_PAGE_OFFSET: usize = 0;
pub const OVERFLOW_REFERENCE_CHECKSUM_OFFSET: usize = OVERFLOW_REFERENCE_PAGE_OFFSET + 8;
pub const OVERFLOW_REFERENCE_LENGTH_OFFSET: usize = OVERFLOW_REFERENCE_CHECKSUM_OFFSET + 8;
pub const OVERFLOW_REFERENCE_BYTES: usize = OVERFLOW_REFERENCE_LENGTH_OFFSET + 8;

// ---- Branch page: header, first child, slots, cells (key + the child right of it) ----
pub const BRANCH_FIRST_CHILD_PAGE_OFFSET: usize = PAGE_HEADER_BYTES;
pub const BRANCH_FIRST_CHILD_CHECKSUM_OFFSET: usize = BRANCH_FIRST_CHILD_PAGE_OFFSET + 8;
pub const BRANCH_SLOTS_OFFSET: usize = BRANCH_FIRST_CHILD_CHECKSUM_OFFSET + 8;
pub const BRANCH_CELL_KEY_LENGTH_OFFSET: usize = 0;
pub const BRANCH_CELL_CHILD_PAGE_OFFSET: usize = BRANCH_CELL_KEY_LENGTH_OFFSET + 2;
pub const BRANCH_CELL_CHILD_CHECKSUM_OFFSET: usize = BRANCH_CELL_CHILD_PAGE_OFFSET + 8;
pub const BRANCH_CELL_HEADER_BYTES: usize = BRANCH_CELL_CHILD_CHECKSUM_OFFSET + 8;

// ---- Overflow run: header on its first page, then the value across the run ----
pub const OVERFLOW_DATA_OFFSET: usize = PAGE_HEADER_BYTES;

// ---- Free-tree record: key (writing transaction, sequence), value (page numbers) ----
pub const FREE_RECORD_KEY_TRANSACTION_OFFSET: usize = 0;
pub const FREE_RECORD_KEY_SEQUENCE_OFFSET: usize = FREE_RECORD_KEY_TRANSACTION_OFFSET + 8;
pub const FREE_RECORD_KEY_BYTES: usize = FREE_RECORD_KEY_SEQUENCE_OFFSET + 4;
/// Each page number in a record's value.
pub const FREE_RECORD_ENTRY_BYTES: usize = 8;
/// Page numbers one record holds: its cell stays inline in a 4 KiB page's quarter.
pub const FREE_RECORD_PAGES_MAX: usize = 124;

// ---- Catalog value: where a named tree lives ----
pub const CATALOG_ROOT_PAGE_OFFSET: usize = 0;
pub const CATALOG_ROOT_CHECKSUM_OFFSET: usize = CATALOG_ROOT_PAGE_OFFSET + 8;
pub const CATALOG_ENTRY_COUNT_OFFSET: usize = CATALOG_ROOT_CHECKSUM_OFFSET + 8;
pub const CATALOG_VALUE_BYTES: usize = CATALOG_ENTRY_COUNT_OFFSET + 8;

/// Longest key (and tree name) accepted, for every page size.
pub const KEY_BYTES_MAX: usize = 960;
/// Longest value accepted (values past a quarter page go to overflow runs).
pub const VALUE_BYTES_MAX: u64 = 1 << 36;

/// Largest cell (with its slot) a page of `page_bytes` accepts: a quarter of the space
/// after the largest header, so that a node one cell over capacity splits in two that fit.
pub const fn cell_bytes_max(page_bytes: usize) -> usize {
    (page_bytes - BRANCH_SLOTS_OFFSET) / 4
}

/// The value word of a compact leaf cell that stands for an overflow reference (an inline
/// value's word is its length shifted left by one, so always even).
pub const COMPACT_OVERFLOW_WORD: u64 = 1;
/// Bytes of a compact cell's key length at most (a varint of at most [`KEY_BYTES_MAX`]).
pub const KEY_LENGTH_VARINT_MAX: usize = 2;
/// Bytes of a compact cell's value word at most (an inline value is shorter than a page).
pub const VALUE_WORD_VARINT_MAX: usize = 3;
/// The bits of a LEB128 varint byte that carry the number, their count, and the bit set on
/// every byte but the last.
pub const VARINT_PAYLOAD: u64 = 0x7F;
pub const VARINT_PAYLOAD_BITS: u32 = 7;
pub const VARINT_CONTINUES: u64 = 0x80;

/// Bytes of the LEB128 varint of `value`.
pub const fn varint_bytes(mut value: u64) -> usize {
    let mut bytes = 1;
    while value >= VARINT_CONTINUES {
        value >>= VARINT_PAYLOAD_BITS;
        bytes += 1;
    }
    bytes
}

/// Bytes of a compact leaf cell (without its slot) for a key of `key_bytes` and an inline
/// value of `inline_value_bytes`, or an overflow reference when `None`.
pub const fn compact_cell_bytes(key_bytes: usize, inline_value_bytes: Option<usize>) -> usize {
    let (value_word, value_bytes) = match inline_value_bytes {
        Some(bytes) => ((bytes as u64) << 1, bytes),
        None => (COMPACT_OVERFLOW_WORD, OVERFLOW_REFERENCE_BYTES),
    };
    varint_bytes(key_bytes as u64) + varint_bytes(value_word) + key_bytes + value_bytes
}

/// Bytes a leaf cell takes with its slot, the value inline (cells are written compact).
pub const fn leaf_inline_cell_bytes(key_bytes: usize, value_bytes: usize) -> usize {
    SLOT_BYTES + compact_cell_bytes(key_bytes, Some(value_bytes))
}

/// Bytes a leaf cell takes with its slot, the value in an overflow run.
pub const fn leaf_overflow_cell_bytes(key_bytes: usize) -> usize {
    SLOT_BYTES + compact_cell_bytes(key_bytes, None)
}

/// Whether a value is stored inline in its leaf cell (else in an overflow run).
pub const fn value_is_inline(page_bytes: usize, key_bytes: usize, value_bytes: usize) -> bool {
    leaf_inline_cell_bytes(key_bytes, value_bytes) <= cell_bytes_max(page_bytes)
}

/// Bytes one entry takes in a tree's pages, leaf fill aside: its leaf cell with its slot, plus
/// the whole pages of its value's overflow run when the value is not inline.
pub const fn stored_entry_bytes(page_bytes: usize, key_bytes: usize, value_bytes: usize) -> usize {
    if value_is_inline(page_bytes, key_bytes, value_bytes) {
        return leaf_inline_cell_bytes(key_bytes, value_bytes);
    }
    let run_pages = (OVERFLOW_DATA_OFFSET + value_bytes).div_ceil(page_bytes);
    leaf_overflow_cell_bytes(key_bytes) + run_pages * page_bytes
}

/// Bytes a branch cell takes with its slot.
pub const fn branch_cell_bytes(key_bytes: usize) -> usize {
    SLOT_BYTES + BRANCH_CELL_HEADER_BYTES + key_bytes
}

const _: () = assert!(META_BYTES == 88);
const _: () = assert!(META_BYTES <= 512, "a commit slot must fit one sector");
const _: () = assert!(PAGE_HEADER_BYTES == 16);
const _: () = assert!(BRANCH_SLOTS_OFFSET == 32);
const _: () = assert!(FREE_RECORD_KEY_BYTES == 12);
const _: () = assert!(
    leaf_inline_cell_bytes(
        FREE_RECORD_KEY_BYTES,
        FREE_RECORD_PAGES_MAX * FREE_RECORD_ENTRY_BYTES
    ) <= cell_bytes_max(PAGE_BYTES_MIN),
    "a free-page record is always inline"
);
const _: () = assert!(LEAF_CELL_HEADER_BYTES == 7);
const _: () = assert!(varint_bytes(KEY_BYTES_MAX as u64) <= KEY_LENGTH_VARINT_MAX);
const _: () = assert!(varint_bytes((PAGE_BYTES_MAX as u64) << 1) <= VALUE_WORD_VARINT_MAX);
const _: () = assert!(
    compact_cell_bytes(KEY_BYTES_MAX, None)
        <= LEAF_CELL_HEADER_BYTES + KEY_BYTES_MAX + OVERFLOW_REFERENCE_BYTES,
    "a wide cell converted to a compact one never grows"
);
const _: () = assert!(BRANCH_CELL_HEADER_BYTES == 18);
const _: () = assert!(OVERFLOW_REFERENCE_BYTES == 24);
const _: () = assert!(CATALOG_VALUE_BYTES == 24);
const _: () = assert!(leaf_overflow_cell_bytes(KEY_BYTES_MAX) <= cell_bytes_max(PAGE_BYTES_MIN));
const _: () = assert!(branch_cell_bytes(KEY_BYTES_MAX) <= cell_bytes_max(PAGE_BYTES_MIN));
const _: () = assert!(
    PAGE_BYTES_MAX - 1 <= u16::MAX as usize,
    "slots are u16 offsets"
);
const _: () = assert!(PAGE_BYTES_MIN.is_power_of_two() && PAGE_BYTES_MAX.is_power_of_two());
