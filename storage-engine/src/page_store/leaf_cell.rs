//! The two encodings of a leaf cell, and the one place that reads and writes them.
//!
//! - **Wide** cells, in leaf pages of kind [`KIND_LEAF`] (written up to format version 2):
//!   key length (u16), value tag (u8), inline value length (u32), key, then the value or
//!   the overflow reference. Seven header bytes per entry.
//! - **Compact** cells, in leaf pages of kind [`KIND_COMPACT_LEAF`] (written from format
//!   version 3): the key length as a LEB128 varint (1–2 bytes, keys are at most
//!   [`KEY_BYTES_MAX`]), the value word as a LEB128 varint (1–3 bytes: an inline value's
//!   length shifted left by one, or [`COMPACT_OVERFLOW_WORD`] for an overflow reference),
//!   the key, then the value or the 24-byte overflow reference. A key under 128 bytes with a
//!   value under 64 takes two header bytes: the word and pair trees hold millions of such
//!   entries, and five bytes each was a tenth of a shard file.
//!
//! Every page a write transaction changes is written compact (`btree::node` converts a wide
//! leaf when it loads it), so a file of version 2 turns compact leaf by leaf as it is
//! written, and both kinds read alike.
//!
//! Invariants: [`parse`] checks every offset against the bytes it is given and answers
//! `None` rather than panicking; [`append_compact`] and [`compact_cell_bytes`] agree on the
//! length of every cell; a compact cell's varints are minimal (the writer never pads them).

use std::ops::Range;

use crate::page_store::bytes::{read_u16, read_u32, read_u64, write_u64};
use crate::page_store::layout::*;
use crate::page_store::page::{Pointer, ValueSlot};

/// How the cells of a leaf page are encoded (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafFormat {
    Wide,
    Compact,
}

impl LeafFormat {
    /// The format of a leaf page of `kind`, or `None` when `kind` is no leaf kind.
    pub fn of_kind(kind: u8) -> Option<LeafFormat> {
        match kind {
            KIND_LEAF => Some(LeafFormat::Wide),
            KIND_COMPACT_LEAF => Some(LeafFormat::Compact),
            _ => None,
        }
    }
}

/// Where the parts of one leaf cell lie in the page (offsets from the page's start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellParts {
    pub key: Range<usize>,
    pub value: ValuePart,
    /// One past the cell's last byte.
    pub end: usize,
}

/// Where a leaf cell's value lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValuePart {
    /// The value's bytes.
    Inline(Range<usize>),
    /// The 24-byte overflow reference (page, checksum, length).
    Overflow(Range<usize>),
}

impl CellParts {
    /// The value slot the parts describe within `bytes` (the page they were parsed from).
    pub fn value_slot<'a>(&self, bytes: &'a [u8]) -> Option<ValueSlot<'a>> {
        match &self.value {
            ValuePart::Inline(range) => bytes.get(range.clone()).map(ValueSlot::Inline),
            ValuePart::Overflow(range) => {
                let reference = bytes.get(range.clone())?;
                let page = read_u64(reference, OVERFLOW_REFERENCE_PAGE_OFFSET)?;
                let checksum = read_u64(reference, OVERFLOW_REFERENCE_CHECKSUM_OFFSET)?;
                let length = read_u64(reference, OVERFLOW_REFERENCE_LENGTH_OFFSET)?;
                Some(ValueSlot::Overflow {
                    pointer: Pointer { page, checksum },
                    length,
                })
            }
        }
    }
}

/// The parts of the leaf cell starting at `cell` in `bytes`, or `None` when the cell is
/// malformed or runs past `bytes`.
pub fn parse(bytes: &[u8], cell: usize, format: LeafFormat) -> Option<CellParts> {
    let (key_start, key_length, value_word, value_start) = match format {
        LeafFormat::Wide => {
            let key_length = usize::from(read_u16(bytes, cell + LEAF_CELL_KEY_LENGTH_OFFSET)?);
            let tag = *bytes.get(cell + LEAF_CELL_TAG_OFFSET)?;
            let inline_length = read_u32(bytes, cell + LEAF_CELL_VALUE_LENGTH_OFFSET)?;
            let value_word = match tag {
                VALUE_TAG_INLINE => u64::from(inline_length) << 1,
                VALUE_TAG_OVERFLOW => COMPACT_OVERFLOW_WORD,
                _ => return None,
            };
            let key_start = cell + LEAF_CELL_HEADER_BYTES;
            (key_start, key_length, value_word, key_start + key_length)
        }
        LeafFormat::Compact => {
            let (key_length, after_key_length) = read_varint(bytes, cell, KEY_LENGTH_VARINT_MAX)?;
            let (value_word, key_start) =
                read_varint(bytes, after_key_length, VALUE_WORD_VARINT_MAX)?;
            let key_length = usize::try_from(key_length).ok()?;
            (key_start, key_length, value_word, key_start + key_length)
        }
    };
    let value = if value_word == COMPACT_OVERFLOW_WORD {
        ValuePart::Overflow(value_start..value_start + OVERFLOW_REFERENCE_BYTES)
    } else if value_word & 1 == 0 {
        ValuePart::Inline(value_start..value_start + usize::try_from(value_word >> 1).ok()?)
    } else {
        return None;
    };
    let end = match &value {
        ValuePart::Inline(range) | ValuePart::Overflow(range) => range.end,
    };
    (end <= bytes.len()).then_some(CellParts {
        key: key_start..key_start + key_length,
        value,
        end,
    })
}

/// Appends the compact cell of `key` and `value` to `out`.
pub fn append_compact(out: &mut Vec<u8>, key: &[u8], value: ValueSlot<'_>) {
    debug_assert!(key.len() <= KEY_BYTES_MAX, "keys are checked before cells");
    let start = out.len();
    push_varint(out, key.len() as u64);
    match value {
        ValueSlot::Inline(bytes) => {
            push_varint(out, (bytes.len() as u64) << 1);
            out.extend_from_slice(key);
            out.extend_from_slice(bytes);
        }
        ValueSlot::Overflow { pointer, length } => {
            push_varint(out, COMPACT_OVERFLOW_WORD);
            out.extend_from_slice(key);
            // The reference as `CellParts::value_slot` reads it, by the layout's offsets.
            let reference = out.len();
            out.resize(reference + OVERFLOW_REFERENCE_BYTES, 0);
            write_u64(
                out,
                reference + OVERFLOW_REFERENCE_PAGE_OFFSET,
                pointer.page,
            );
            write_u64(
                out,
                reference + OVERFLOW_REFERENCE_CHECKSUM_OFFSET,
                pointer.checksum,
            );
            write_u64(out, reference + OVERFLOW_REFERENCE_LENGTH_OFFSET, length);
        }
    }
    debug_assert_eq!(
        out.len() - start,
        compact_cell_bytes(key.len(), inline_length(&value)),
        "the length every sizing rule uses"
    );
}

/// The value's inline length, or `None` for an overflow reference.
fn inline_length(value: &ValueSlot<'_>) -> Option<usize> {
    match value {
        ValueSlot::Inline(bytes) => Some(bytes.len()),
        ValueSlot::Overflow { .. } => None,
    }
}

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= VARINT_CONTINUES {
        out.push((value & VARINT_PAYLOAD) as u8 | VARINT_CONTINUES as u8);
        value >>= VARINT_PAYLOAD_BITS;
    }
    out.push(value as u8);
}

/// The varint at `offset` (at most `bytes_max` bytes) and the offset after it.
fn read_varint(bytes: &[u8], offset: usize, bytes_max: usize) -> Option<(u64, usize)> {
    let mut value = 0_u64;
    for index in 0..bytes_max {
        let byte = u64::from(*bytes.get(offset + index)?);
        value |= (byte & VARINT_PAYLOAD) << (VARINT_PAYLOAD_BITS * index as u32);
        if byte & VARINT_CONTINUES == 0 {
            return Some((value, offset + index + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overflow() -> ValueSlot<'static> {
        ValueSlot::Overflow {
            pointer: Pointer {
                page: 77,
                checksum: 0xDEAD_BEEF,
            },
            length: 1 << 33,
        }
    }

    #[test]
    fn compact_cells_read_back_with_the_length_the_sizing_gives() {
        let long_key = vec![b'k'; KEY_BYTES_MAX];
        let long_value = vec![9_u8; 20_000];
        let keys: [&[u8]; 4] = [b"", b"a", &[0xFF; 127], &long_key];
        let values = [
            ValueSlot::Inline(b""),
            ValueSlot::Inline(&[1, 2, 3, 4]),
            ValueSlot::Inline(&long_value[..63]),
            ValueSlot::Inline(&long_value[..64]),
            ValueSlot::Inline(&long_value),
            overflow(),
        ];
        for key in keys {
            for value in values {
                let mut page = vec![0xAB_u8; 3];
                append_compact(&mut page, key, value);
                let parts = parse(&page, 3, LeafFormat::Compact).expect("parses");
                assert_eq!(&page[parts.key.clone()], key);
                assert_eq!(parts.end, page.len());
                assert_eq!(
                    parts.end - 3,
                    compact_cell_bytes(key.len(), inline_length(&value))
                );
                let slot = parts.value_slot(&page).expect("in the page");
                assert_eq!(format!("{slot:?}"), format!("{value:?}"));
            }
        }
    }

    #[test]
    fn short_entries_take_two_header_bytes() {
        let mut cell = Vec::new();
        append_compact(&mut cell, b"word\xFFpair", ValueSlot::Inline(&[0, 0, 0, 7]));
        assert_eq!(cell.len(), 2 + 9 + 4);
        assert_eq!(compact_cell_bytes(9, Some(4)), 15);
        assert_eq!(
            LEAF_CELL_HEADER_BYTES + 9 + 4,
            20,
            "the wide cell of the same entry"
        );
    }

    #[test]
    fn wide_cells_read_as_before() {
        let mut page = vec![0_u8; 2];
        page.extend_from_slice(&3_u16.to_le_bytes());
        page.push(VALUE_TAG_INLINE);
        page.extend_from_slice(&2_u32.to_le_bytes());
        page.extend_from_slice(b"keyvv");
        let parts = parse(&page, 2, LeafFormat::Wide).expect("parses");
        assert_eq!(&page[parts.key.clone()], b"key");
        assert_eq!(parts.value, ValuePart::Inline(12..14));
        assert_eq!(parts.end, page.len());
        page[2 + LEAF_CELL_TAG_OFFSET] = 9;
        assert_eq!(parse(&page, 2, LeafFormat::Wide), None, "unknown tag");
    }

    #[test]
    fn malformed_compact_cells_are_refused_without_a_panic() {
        let mut cell = Vec::new();
        append_compact(&mut cell, b"key", ValueSlot::Inline(b"value"));
        for cut in 0..cell.len() {
            assert_eq!(
                parse(&cell[..cut], 0, LeafFormat::Compact),
                None,
                "cut at {cut}"
            );
        }
        // An odd value word other than the overflow word, and varints too long.
        assert_eq!(parse(&[1, 3, b'k'], 0, LeafFormat::Compact), None);
        assert_eq!(parse(&[0x80, 0x80, 0x01, 0], 0, LeafFormat::Compact), None);
        assert_eq!(
            parse(&[0, 0x80, 0x80, 0x80, 0x01], 0, LeafFormat::Compact),
            None
        );
        assert_eq!(parse(&[], 0, LeafFormat::Compact), None);
        assert_eq!(parse(&cell, cell.len() + 5, LeafFormat::Compact), None);
    }
}
