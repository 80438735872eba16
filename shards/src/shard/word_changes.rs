//! The inverted index's pending changes, gathered per word in memory while documents are
//! applied and written to the word trees once per flush, each tree in its key order:
//! `word_documents` (word), then `word_fields`, `word_position_buckets` and `word_positions`
//! (word ‖ `0xFF` ‖ slot or internal id).
//!
//! Invariants: a word is looked up once per document (one hash of the word, no key built);
//! every change of a (word, document) pair is kept in operation order, so the last one wins,
//! exactly as writing each document's keys at once would; the bytes written are those of
//! [`crate::search::inverted`]'s encodings.

use std::cmp::Ordering;
use std::ops::Range;

use rustc_hash::FxHashMap;
use storage_engine::WriteTransaction;

use super::delta::Delta;
use super::error::ShardResult;
use crate::analysis::Occurrence;
use crate::search::inverted::{
    PositionKeys, WORD_DOCUMENTS_TREE, WORD_FIELDS_TREE, WORD_POSITION_BUCKETS_TREE,
    WORD_POSITIONS_TREE, append_occurrences, write_word_slot_key,
};
use crate::search::ranking::bucketed_position;

/// A `word_positions` change: the document's occurrences (a range of
/// [`WordChanges::occurrence_bytes`]) to store, or `None` to delete the key.
#[derive(Debug)]
struct PositionChange {
    document: u32,
    occurrences: Option<Range<usize>>,
}

/// Everything pending for one word.
#[derive(Debug, Default)]
struct WordEntry {
    documents: Delta,
    /// Field id → documents; a word is in few fields, so a short list beats a map.
    fields: Vec<(u16, Delta)>,
    /// Bucketed position → documents.
    buckets: Vec<(u16, Delta)>,
    /// In operation order.
    positions: Vec<PositionChange>,
}

/// The pending changes of the word trees.
#[derive(Debug, Default)]
pub(super) struct WordChanges {
    words: FxHashMap<Box<str>, WordEntry>,
    /// The encoded occurrences of every pending position change, back to back.
    occurrence_bytes: Vec<u8>,
}

/// The delta of `slot` in a word's short slot list, created when missing.
fn slot_delta(slots: &mut Vec<(u16, Delta)>, slot: u16) -> &mut Delta {
    let index = match slots.iter().position(|(existing, _)| *existing == slot) {
        Some(index) => index,
        None => {
            slots.push((slot, Delta::default()));
            slots.len() - 1
        }
    };
    &mut slots[index].1
}

/// The byte order of `left ‖ 0xFF` and `right ‖ 0xFF`: the order of the word's keys in the
/// trees keyed by word ‖ `0xFF` ‖ suffix (a word sorts after the longer words it starts).
fn terminated_order(left: &str, right: &str) -> Ordering {
    let (left, right) = (left.as_bytes(), right.as_bytes());
    let common = left.len().min(right.len());
    match left[..common].cmp(&right[..common]) {
        Ordering::Equal => right.len().cmp(&left.len()),
        different => different,
    }
}

impl WordChanges {
    /// Adds (`add`) or removes the occurrences of `word` in `document` (sorted by field, then
    /// position).
    pub fn record(&mut self, word: String, document: u32, occurrences: &[Occurrence], add: bool) {
        let entry = match self.words.get_mut(word.as_str()) {
            Some(entry) => entry,
            None => self.words.entry(word.into_boxed_str()).or_default(),
        };
        entry.documents.change(document, add);
        let mut previous_field = None;
        let mut previous_bucket = None;
        for occurrence in occurrences {
            if previous_field != Some(occurrence.field) {
                previous_field = Some(occurrence.field);
                slot_delta(&mut entry.fields, occurrence.field).change(document, add);
            }
            let bucket = bucketed_position(occurrence.position);
            if previous_bucket != Some(bucket) {
                previous_bucket = Some(bucket);
                slot_delta(&mut entry.buckets, bucket).change(document, add);
            }
        }
        let occurrences = add.then(|| {
            let start = self.occurrence_bytes.len();
            append_occurrences(&mut self.occurrence_bytes, occurrences);
            start..self.occurrence_bytes.len()
        });
        entry.positions.push(PositionChange {
            document,
            occurrences,
        });
    }

    /// Writes every pending change into the word trees and empties the changes.
    pub fn write(&mut self, transaction: &WriteTransaction) -> ShardResult<()> {
        if self.words.is_empty() {
            return Ok(());
        }
        let occurrence_bytes = std::mem::take(&mut self.occurrence_bytes);
        let mut entries: Vec<(Box<str>, WordEntry)> =
            std::mem::take(&mut self.words).into_iter().collect();
        let mut buffer = Vec::new();
        entries.sort_unstable_by(|left, right| left.0.cmp(&right.0));
        let tree = transaction.create_tree(WORD_DOCUMENTS_TREE)?;
        for (word, entry) in &entries {
            entry
                .documents
                .merge_into(&tree, word.as_bytes(), &mut buffer)?;
        }
        entries.sort_unstable_by(|left, right| terminated_order(&left.0, &right.0));
        let mut key = Vec::new();
        for (name, slots_of) in [
            (
                WORD_FIELDS_TREE,
                (|entry| &mut entry.fields) as fn(&mut WordEntry) -> &mut Vec<(u16, Delta)>,
            ),
            (WORD_POSITION_BUCKETS_TREE, |entry| &mut entry.buckets),
        ] {
            let tree = transaction.create_tree(name)?;
            for (word, entry) in &mut entries {
                let slots = slots_of(entry);
                slots.sort_unstable_by_key(|(slot, _)| *slot);
                for (slot, delta) in slots.iter() {
                    write_word_slot_key(&mut key, word, *slot);
                    delta.merge_into(&tree, &key, &mut buffer)?;
                }
            }
        }
        let tree = transaction.create_tree(WORD_POSITIONS_TREE)?;
        for (word, entry) in &mut entries {
            let mut keys = PositionKeys::new(word.as_bytes());
            // Stable: a document's changes stay in operation order, the last one wins.
            entry.positions.sort_by_key(|change| change.document);
            let changes = &entry.positions;
            for (index, change) in changes.iter().enumerate() {
                if changes
                    .get(index + 1)
                    .is_some_and(|next| next.document == change.document)
                {
                    continue;
                }
                let key = keys.of(change.document);
                match &change.occurrences {
                    Some(range) => tree.put(key, &occurrence_bytes[range.clone()])?,
                    None => {
                        tree.delete(key)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
