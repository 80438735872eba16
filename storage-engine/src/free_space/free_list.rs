//! The format of the persisted free list: the free-page records of the free tree, a B+tree
//! rooted in the commit slot (reading and writing that tree is `transaction::free_tree`).
//!
//! Each record lists at most `FREE_RECORD_PAGES_MAX` page numbers under a 12-byte key:
//! the id of the transaction that wrote it (big-endian, so records sort oldest first) and
//! a sequence number within that transaction. A commit deletes the records it took pages
//! from and inserts its own (pages it freed, and the unused rest of the pages it took), so
//! its cost follows the pages it touched, not the size of the free list.
//!
//! Invariants: every listed page lies in `META_PAGE_COUNT..high_water` and appears in one
//! record only; the tree's own pages are reachable, never listed; values are whole
//! multiples of `FREE_RECORD_ENTRY_BYTES`, between one and `FREE_RECORD_PAGES_MAX` pages.

use crate::error::{Error, Result};
use crate::page_store::bytes::read_u64;
use crate::page_store::layout::*;

/// The key of a free-page record: the writing transaction and a sequence number in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordKey {
    /// Id of the transaction that wrote the record.
    pub transaction_id: u64,
    /// Position among that transaction's records.
    pub sequence: u32,
}

impl RecordKey {
    /// The key bytes: both fields big-endian, so byte order is (transaction, sequence) order.
    pub fn encode(&self) -> [u8; FREE_RECORD_KEY_BYTES] {
        let mut bytes = [0u8; FREE_RECORD_KEY_BYTES];
        bytes[FREE_RECORD_KEY_TRANSACTION_OFFSET..FREE_RECORD_KEY_SEQUENCE_OFFSET]
            .copy_from_slice(&self.transaction_id.to_be_bytes());
        bytes[FREE_RECORD_KEY_SEQUENCE_OFFSET..].copy_from_slice(&self.sequence.to_be_bytes());
        bytes
    }

    /// Decodes key bytes; `None` if the length is wrong.
    pub fn decode(bytes: &[u8]) -> Option<RecordKey> {
        if bytes.len() != FREE_RECORD_KEY_BYTES {
            return None;
        }
        let transaction = bytes
            [FREE_RECORD_KEY_TRANSACTION_OFFSET..FREE_RECORD_KEY_SEQUENCE_OFFSET]
            .try_into()
            .ok()?;
        let sequence = bytes[FREE_RECORD_KEY_SEQUENCE_OFFSET..].try_into().ok()?;
        Some(RecordKey {
            transaction_id: u64::from_be_bytes(transaction),
            sequence: u32::from_be_bytes(sequence),
        })
    }
}

/// Encodes a record's page numbers (little-endian u64 each).
pub fn encode_pages(pages: &[u64]) -> Vec<u8> {
    debug_assert!(!pages.is_empty() && pages.len() <= FREE_RECORD_PAGES_MAX);
    pages.iter().flat_map(|page| page.to_le_bytes()).collect()
}

/// Decodes a record's value, checking every page lies in `META_PAGE_COUNT..high_water`.
pub fn decode_pages(value: &[u8], high_water_pages: u64, at_page: u64) -> Result<Vec<u64>> {
    let count = value.len() / FREE_RECORD_ENTRY_BYTES;
    if value.len() % FREE_RECORD_ENTRY_BYTES != 0 || count == 0 || count > FREE_RECORD_PAGES_MAX {
        return Err(Error::corrupted(at_page, "malformed free-page record"));
    }
    (0..count)
        .map(|index| {
            read_u64(value, index * FREE_RECORD_ENTRY_BYTES)
                .filter(|page| (META_PAGE_COUNT..high_water_pages).contains(page))
                .ok_or(Error::corrupted(at_page, "free page outside the file"))
        })
        .collect()
}

/// Splits sorted `pages` into record-sized chunks.
pub fn chunks(pages: &[u64]) -> impl Iterator<Item = &[u64]> {
    pages.chunks(FREE_RECORD_PAGES_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_keys_sort_by_transaction_then_sequence() {
        let keys = [
            RecordKey {
                transaction_id: 1,
                sequence: 300,
            },
            RecordKey {
                transaction_id: 2,
                sequence: 0,
            },
            RecordKey {
                transaction_id: 256,
                sequence: 1,
            },
        ];
        for pair in keys.windows(2) {
            assert!(pair[0].encode() < pair[1].encode());
            assert_eq!(RecordKey::decode(&pair[0].encode()), Some(pair[0]));
        }
    }

    #[test]
    fn record_values_round_trip_and_reject_outside_pages() {
        let pages = vec![2, 9, 40];
        let value = encode_pages(&pages);
        assert_eq!(decode_pages(&value, 41, 0).expect("valid record"), pages);
        assert!(decode_pages(&value, 40, 0).is_err());
        assert!(decode_pages(&value[..7], 41, 0).is_err());
        assert!(decode_pages(&[], 41, 0).is_err());
    }
}
