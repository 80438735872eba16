//! The byte encodings of the inverted index's trees (their names are in [`super::trees`]).
//!
//! - `word_documents`: word (UTF-8) → roaring bitmap of the internal ids containing it. Ordered,
//!   so it is also the word dictionary: prefix iteration and Levenshtein automata walk it.
//! - `word_position_chunks`: word ‖ `0xFF` ‖ internal id (u32 big-endian) → a chunk of the
//!   word's documents from that id on, each with its occurrences (field id and position), see
//!   [`super::position_chunks`]. It replaced `word_positions` (one key per word and
//!   document, [`super::trees::LEGACY_WORD_POSITIONS_TREE`]): a shard holding that tree is
//!   re-indexed when opened.
//! - `field_lengths`: internal id (u32 BE) → per searchable field of the document, 4 bytes:
//!   field id (u16 BE) then its number of words (u16 BE), sorted by field id.
//! - `word_fields`: word ‖ `0xFF` ‖ field id (u16 BE) → roaring bitmap of the internal ids
//!   where the word occurs in that field (what the attribute rule splits buckets by).
//! - `word_position_buckets`: word ‖ `0xFF` ‖ bucketed position (u16 BE, see
//!   [`bucketed_position`]) → roaring bitmap of the internal ids where the word
//!   occurs at a position of that bucket in some field (what the word-position rule splits by).
//! - `word_pairs`: word ‖ `0xFF` ‖ following word → roaring bitmap of the internal ids where
//!   the second word stands at the position right after the first in one field (proximity 1:
//!   what two-word phrases and proximity's best sub-bucket are read from).
//! - `field_word_counts`: field id (u16 BE) ‖ number of words (u16 BE) → roaring bitmap of the
//!   internal ids whose field holds that many words, for counts up to
//!   [`FIELD_WORD_COUNT_INDEXED_MAX`] (what tells, without reading each document, which
//!   documents may match a field exactly; `field_lengths` holds every count).
//!
//! Invariants: `0xFF` never occurs in UTF-8, so a word's keys are contiguous and never collide
//! with another word's, and a pair's second word is everything after the separator; the trees
//! describe exactly the stored documents under the stored text settings (kept in the same
//! write transaction as the documents).

use std::cmp::Ordering;
use std::ops::Bound;

use roaring::RoaringBitmap;
use storage_engine::{Direction, ReadRange, ReadTree};

use super::keys::decode_bitmap;
use super::stored_bitmap::intersection_within;
use crate::error::{ShardError, ShardResult};

/// The largest word count `field_word_counts` indexes: a query spanning more words is rare,
/// and its exact matches are found by reading field lengths.
pub const FIELD_WORD_COUNT_INDEXED_MAX: u16 = 30;

/// The `field_word_counts` key of `field` holding `count` words, `None` past
/// [`FIELD_WORD_COUNT_INDEXED_MAX`] (or for an empty field, which nothing matches).
pub fn field_word_count_key(field: u16, count: u16) -> Option<[u8; 4]> {
    if count == 0 || count > FIELD_WORD_COUNT_INDEXED_MAX {
        return None;
    }
    let [field_high, field_low] = field.to_be_bytes();
    let [count_high, count_low] = count.to_be_bytes();
    Some([field_high, field_low, count_high, count_low])
}

/// Separates the word from what follows it in the keys of the trees keyed by word ‖ `0xFF` ‖
/// suffix.
pub const WORD_END_BYTE: u8 = 0xFF;
/// Bytes after the word in a `word_fields` or `word_position_buckets` key: the separator
/// and the slot.
pub const WORD_SLOT_SUFFIX_BYTES: usize = 3;
/// Bytes of one encoded field length.
const PAIR_BYTES: usize = 4;

/// Meilisearch's bucketed word position: exact below 16, then 24, then powers of two. The
/// slot of a `word_position_buckets` key, and what the word-position rule compares.
pub fn bucketed_position(relative: u16) -> u16 {
    if relative < 16 {
        relative
    } else if relative < 24 {
        24
    } else {
        let bits = u16::BITS - (relative - 1).leading_zeros();
        u16::try_from(1u32 << bits).unwrap_or(u16::MAX)
    }
}

/// The smallest key above every key starting with `prefix` (`None`: no such key): the page
/// store's own.
pub use storage_engine::prefix_end;

/// The keys of `tree` above `prefix` itself that start with it, in order: in
/// `word_documents`, every word longer than `prefix` that starts with it; in a tree keyed by
/// word then more bytes, those words' keys and also the keys of `prefix` itself, which the
/// caller tells apart by the word's length.
pub fn keys_extending<'t>(tree: &ReadTree<'t>, prefix: &str) -> ShardResult<ReadRange<'t>> {
    let end = prefix_end(prefix.as_bytes());
    let end_bound = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    Ok(tree.range(
        Bound::Excluded(prefix.as_bytes()),
        end_bound,
        Direction::Forward,
    )?)
}

/// The common start of every key of `word` in the trees keyed by word ‖ `0xFF` ‖ suffix
/// (`word_fields`, `word_position_buckets`, `word_position_chunks`, `word_pairs`).
pub fn position_prefix(word: impl AsRef<[u8]>) -> Vec<u8> {
    let word = word.as_ref();
    let mut key = Vec::with_capacity(word.len() + WORD_SLOT_SUFFIX_BYTES);
    key.extend_from_slice(word);
    key.push(WORD_END_BYTE);
    key
}

/// The byte order of `left ‖ 0xFF` and `right ‖ 0xFF`: the order of the word's keys in the
/// trees keyed by word ‖ `0xFF` ‖ suffix (a word sorts after the longer words it starts).
pub fn terminated_order(left: &str, right: &str) -> Ordering {
    let (left, right) = (left.as_bytes(), right.as_bytes());
    let common = left.len().min(right.len());
    match left[..common].cmp(&right[..common]) {
        Ordering::Equal => right.len().cmp(&left.len()),
        different => different,
    }
}

/// Replaces the content of `key` with the `word_fields` / `word_position_buckets` key of
/// `word` and `slot` (a field id or a position bucket): the word, the separator, then the slot
/// (u16 BE). Reuses `key`'s allocation.
pub fn write_word_slot_key(key: &mut Vec<u8>, word: &str, slot: u16) {
    key.clear();
    key.extend_from_slice(word.as_bytes());
    key.push(WORD_END_BYTE);
    key.extend_from_slice(&slot.to_be_bytes());
}

/// Replaces the content of `key` with the `word_pairs` key of `left` followed by `right`.
pub fn write_pair_key(key: &mut Vec<u8>, left: &str, right: &str) {
    key.clear();
    key.extend_from_slice(left.as_bytes());
    key.push(WORD_END_BYTE);
    key.extend_from_slice(right.as_bytes());
}

/// Splits a `word_fields` or `word_position_buckets` key into its word bytes and its slot.
pub fn split_word_slot_key(key: &[u8]) -> ShardResult<(&[u8], u16)> {
    let corrupted = || ShardError::Corrupted("word slot key".to_owned());
    let word_bytes = key
        .len()
        .checked_sub(WORD_SLOT_SUFFIX_BYTES)
        .ok_or_else(corrupted)?;
    let (word, suffix) = key.split_at(word_bytes);
    match suffix {
        [WORD_END_BYTE, high, low] => Ok((word, u16::from_be_bytes([*high, *low]))),
        _ => Err(corrupted()),
    }
}

fn encode_pairs(pairs: impl Iterator<Item = (u16, u16)>) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (first, second) in pairs {
        bytes.extend_from_slice(&first.to_be_bytes());
        bytes.extend_from_slice(&second.to_be_bytes());
    }
    bytes
}

/// The pairs `bytes` holds, into `pairs` (emptied first).
fn decode_pairs_into(bytes: &[u8], what: &str, pairs: &mut Vec<(u16, u16)>) -> ShardResult<()> {
    pairs.clear();
    if bytes.len() % PAIR_BYTES != 0 {
        return Err(ShardError::Corrupted(what.to_owned()));
    }
    pairs.extend(bytes.chunks_exact(PAIR_BYTES).map(|chunk| {
        (
            u16::from_be_bytes([chunk[0], chunk[1]]),
            u16::from_be_bytes([chunk[2], chunk[3]]),
        )
    }));
    Ok(())
}

pub fn encode_field_lengths(lengths: &std::collections::BTreeMap<u16, u16>) -> Vec<u8> {
    encode_pairs(lengths.iter().map(|(field, count)| (*field, *count)))
}

/// One document's `(field id, number of words)`, sorted by field id.
#[derive(Debug, Clone, Copy)]
pub struct FieldLengths<'a>(pub &'a [(u16, u16)]);

impl FieldLengths<'_> {
    /// The number of words of `field` (0 when the document has none there).
    pub fn get(&self, field: u16) -> u16 {
        self.0
            .binary_search_by_key(&field, |(id, _)| *id)
            .map_or(0, |index| self.0[index].1)
    }
}

/// A document's field lengths into `lengths` (emptied first): `(field id, words)` sorted by
/// field id, as stored.
pub fn decode_field_lengths(bytes: &[u8], lengths: &mut Vec<(u16, u16)>) -> ShardResult<()> {
    decode_pairs_into(bytes, "field lengths", lengths)
}

/// A stored bitmap (see [`super::keys::decode_bitmap`]), empty when absent.
pub fn bitmap_or_empty(bytes: Option<&[u8]>) -> ShardResult<RoaringBitmap> {
    match bytes {
        Some(bytes) => decode_bitmap(bytes),
        None => Ok(RoaringBitmap::new()),
    }
}

/// The ids of a stored bitmap that `within` holds (empty when absent), read in place when
/// `within` is small (see [`super::stored_bitmap`]).
pub fn bitmap_within(bytes: Option<&[u8]>, within: &RoaringBitmap) -> ShardResult<RoaringBitmap> {
    match bytes {
        Some(bytes) => intersection_within(bytes, within),
        None => Ok(RoaringBitmap::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucketed_positions_match_meilisearch() {
        let expected = [
            (0, 0),
            (15, 15),
            (16, 24),
            (23, 24),
            (24, 32),
            (32, 32),
            (33, 64),
        ];
        for (relative, bucket) in expected {
            assert_eq!(bucketed_position(relative), bucket, "{relative}");
        }
        assert_eq!(bucketed_position(u16::MAX), u16::MAX);
    }

    #[test]
    fn terminated_order_is_the_byte_order_of_the_words_keys() {
        let words = ["", "a", "ab", "abc", "abd", "b", "é", "東京"];
        for left in words {
            for right in words {
                let mut left_key = left.as_bytes().to_vec();
                left_key.push(0xFF);
                let mut right_key = right.as_bytes().to_vec();
                right_key.push(0xFF);
                assert_eq!(
                    terminated_order(left, right),
                    left_key.cmp(&right_key),
                    "{left:?} against {right:?}"
                );
            }
        }
    }
}
